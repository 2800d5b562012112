use super::*;
use crate::ptx_text::statements;

/// The low bits of each register of `body`, where `table` is the one name of an address.
fn of(body: &str) -> BTreeMap<String, LowBits> {
    of_registers(&statements(body), &|name| name == "table")
}

/// Low bits alone, with no remainder known.
fn bits(known: u32, value: u64) -> LowBits {
    LowBits { known, value, odd: OddRemainder::UNKNOWN }
}

fn odd(divisor: u64, remainder: i128) -> OddRemainder {
    OddRemainder { divisor, remainder }
}

#[test]
fn an_index_times_a_members_size_keeps_its_low_bits_known() {
    // `kChoices[(row >> 3) & 3]` of 16-byte members, as NVRTC writes it, and a member 8 bytes in.
    let registers = of("mov.u32 %r8, %tid.y;\nshl.b32 %r13, %r8, 1;\ncvt.u64.u32 %rd6, %r13;\n\
                        and.b64 %rd7, %rd6, 48;\nmov.u64 %rd8, table;\nadd.s64 %rd9, %rd8, %rd7;\n\
                        mul.wide.u32 %rd10, %r8, 24;\nmad.lo.s32 %r14, %r8, 32, 8;\n");
    assert_eq!(registers["%r8"], LowBits::UNKNOWN);
    assert_eq!(registers["%r13"], bits(1, 0));
    assert_eq!(registers["%rd7"], bits(4, 0));
    assert_eq!(registers["%rd9"], bits(4, 0));
    assert_eq!(of_operand("[%rd9+8]", &registers, &|_| false), Some(bits(4, 8)));
    assert_eq!(of_operand("[table+40]", &registers, &|name| name == "table"), Some(LowBits::exactly(40)));
    assert_eq!(registers["%rd10"], LowBits { odd: odd(3, 0), ..bits(3, 0) });
    assert_eq!(registers["%r14"], bits(5, 8));
}

#[test]
fn an_index_times_a_size_that_is_not_a_power_of_two_keeps_its_remainder_by_the_odd_factor() {
    // `kChoices[(row >> 3) & 3]` of 24-byte members `{shift, phases, mask}`, as NVRTC writes it.
    let registers = of("mov.u32 %r8, %tid.y;\nshr.u32 %r12, %r8, 3;\nand.b32 %r13, %r12, 3;\n\
                        mul.wide.u32 %rd6, %r13, 24;\nmov.u64 %rd7, table;\nadd.s64 %rd8, %rd7, %rd6;\n\
                        mul.lo.s32 %r14, %r8, 12;\nshl.b32 %r15, %r14, 1;\nadd.s32 %r16, %r15, -40;\n\
                        sub.s64 %rd9, %rd8, 9;\n");
    assert_eq!(registers["%r13"], LowBits::UNKNOWN);
    assert_eq!(registers["%rd8"], LowBits { odd: odd(3, 0), ..bits(3, 0) });
    let pointer = of_operand("[%rd8+8]", &registers, &|_| false).unwrap();
    assert_eq!(pointer, LowBits { odd: odd(3, 2), ..bits(3, 0) });
    assert!(pointer.allows(8) && pointer.allows(32) && !pointer.allows(16) && !pointer.allows(24));
    // `12 * 2 * row - 40` is 24 * row - 40, 2 modulo 3 and 0 modulo 8; 9 less is 0 modulo 3.
    assert_eq!(registers["%r16"], LowBits { odd: odd(3, 2), ..bits(3, 0) });
    assert_eq!(registers["%rd9"].odd, odd(3, 0));
    // Either of two places 24 bytes apart, or 16 (which leaves no odd factor); a remainder is lost
    // by a shift right, an `and`, or a divisor past 64 bits.
    assert_eq!(of("selp.b64 %rd1, 8, 32, %p1;\n")["%rd1"], LowBits { odd: odd(3, 2), ..bits(3, 0) });
    assert_eq!(of("selp.b64 %rd1, 8, 24, %p1;\n")["%rd1"], bits(4, 8));
    let lost = of("mul.wide.u32 %rd1, %r1, 24;\nshr.u64 %rd2, %rd1, 1;\nand.b64 %rd3, %rd1, -1;\n\
                   mul.lo.s64 %rd4, %rd1, 0x7fffffffffffffff;\n");
    assert_eq!((lost["%rd2"].odd, lost["%rd3"].odd), (OddRemainder::UNKNOWN, OddRemainder::UNKNOWN));
    assert_eq!(lost["%rd4"].odd, OddRemainder::UNKNOWN, "3 (2^63 - 1) is past 64 bits");
    // A 32-bit sum that overflowed: its exact remainder is dropped, its low bits stay exact.
    let wrapped = of("mov.u32 %r1, 0xffffffff;\nadd.s32 %r2, %r1, 9;\n")["%r2"];
    assert_eq!(wrapped, bits(32, 8));
}

#[test]
fn a_register_written_twice_keeps_only_the_bits_both_values_share() {
    // A loop's pointer: from the table's second word on, 16 bytes at a time.
    let looped = of("mov.u64 %rd1, table;\nadd.s64 %rd2, %rd1, 8;\n$L__BB0_1:\nld.const.u64 %rd3, [%rd2];\n\
                     add.s64 %rd2, %rd2, 16;\n@%p1 bra $L__BB0_1;\n");
    assert_eq!(looped["%rd2"], bits(4, 8));
    assert_eq!(looped["%rd3"], LowBits::UNKNOWN);
    // Either of two members, or a number nothing tells.
    assert_eq!(of("selp.b64 %rd1, 8, 24, %p1;\n")["%rd1"], bits(4, 8));
    assert_eq!(of("mov.u32 %r1, WARP_SZ;\nshl.b32 %r2, %r1, 4;\n")["%r2"], bits(4, 0));
    assert_eq!(of("mov.u32 %r1, %clock;\n")["%r1"], LowBits::UNKNOWN);
    // An index of 0 or 1 (`mov` in each branch) tells no member apart; one nothing writes is not known.
    let either = of("mov.u32 %r1, 0;\n@%p1 mov.u32 %r1, 1;\nmul.wide.u32 %rd1, %r1, 16;\nadd.s64 %rd2, %rd1, %r9;\n");
    assert_eq!(either["%rd1"], bits(4, 0));
    assert_eq!(either["%rd2"], LowBits::UNKNOWN);
}

#[test]
fn bits_past_a_registers_width_or_out_of_a_shift_are_not_known() {
    let registers = of("mov.u32 %r1, 8;\nshr.u32 %r2, %r1, 2;\nshl.b32 %r3, %r1, 30;\nshl.b32 %r4, %r1, %r9;\n\
                        mul.hi.u32 %r5, %r1, 3;\nadd.f32 %f1, %f2, %f3;\n");
    assert_eq!(registers["%r1"], LowBits { odd: OddRemainder::exactly(8), ..bits(32, 8) });
    assert_eq!(registers["%r2"], bits(30, 2));
    assert_eq!(registers["%r3"], bits(32, 0), "2^33 does not fit");
    assert_eq!(registers["%r4"], LowBits::UNKNOWN);
    assert_eq!(registers["%r5"], LowBits::UNKNOWN);
    assert_eq!(registers["%f1"], LowBits::UNKNOWN);
    // Halves added apart (`__vadd2`), and a saturated sum.
    let packed = of("mov.u32 %r1, 65535;\nadd.u16x2 %r2, %r1, 1;\nadd.sat.s32 %r3, %r1, 1;\nadd.s32 %r4, %r1, 1;\n");
    assert_eq!(packed["%r2"], LowBits::UNKNOWN);
    assert_eq!(packed["%r3"], LowBits::UNKNOWN);
    assert_eq!(packed["%r4"], LowBits { odd: OddRemainder::exactly(65536), ..bits(32, 65536) });
}
