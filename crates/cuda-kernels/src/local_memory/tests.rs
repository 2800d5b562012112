use super::*;

/// A kernel as NVRTC 13.0 writes one with a local table of 16 words indexed where it cannot
/// follow, and a `printf` whose arguments' buffer is the table's last 8 bytes.
const KERNEL: &str = "\
.extern .func  (.param .b32 func_retval0) vprintf
(
\t.param .b64 vprintf_param_0,
\t.param .b64 vprintf_param_1
)
;
.global .align 1 .b8 $str[4] = {37, 117, 10};

.visible .entry k(
\t.param .u64 k_param_0
)
{
\t.local .align 16 .b8 \t__local_depot0[64];
\t.reg .b64 \t%SP;
\t.reg .b64 \t%SPL;
\t.reg .pred \t%p<3>;
\t.reg .b16 \t%rs<2>;
\t.reg .b32 \t%r<9>;
\t.reg .b64 \t%rd<12>;
\t.loc\t1 3 0

\tmov.u64 \t%SPL, __local_depot0;
\tcvta.local.u64 \t%SP, %SPL;
\tld.param.u64 \t%rd1, [k_param_0];
\tmov.u32 \t%r1, %tid.x;
\tmul.wide.u32 \t%rd2, %r1, 4;
\tadd.s64 \t%rd3, %SPL, %rd2;
\t.loc\t1 5 3
\tst.local.u32 \t[%rd3], %r1;
$L__BB0_1:
\t@%p1 ld.local.u32 \t%r2, [%rd3+-4];
\tst.local.v4.u32 \t[%SPL+16], {%r1, %r1, %r1, %r2};
\tadd.u64 \t%rd4, %SP, 56;
\tadd.u64 \t%rd5, %SPL, 56;
\tst.local.u32 \t[%rd5], %r2;
\tld.local.u16 \t%rs1, [__local_depot0+8];
\tmov.u64 \t%rd6, $str;
\tcvta.global.u64 \t%rd7, %rd6;
\t{ // callseq 0, 0
\t.param .b64 param0;
\tst.param.b64 \t[param0], %rd7;
\t.param .b64 param1;
\tst.param.b64 \t[param1], %rd4;
\t.param .b32 retval0;
\tcall.uni (retval0), 
\tvprintf, 
\t(
\tparam0, 
\tparam1
\t);
\t} // callseq 0
\tcvta.to.global.u64 \t%rd8, %rd1;
\tst.global.u32 \t[%rd8], %r2;
\tret;

}
";

#[test]
fn the_depot_is_zeroed_where_the_function_starts_and_each_access_held_inside_it() {
    let confined = confined(KERNEL).expect("confined");
    let zeroing = "\t.local .align 16 .b8 \t__local_depot0[64];\n\t{\n\t.reg .b32 \t%bcm_zero;\n\tmov.b32 \t%bcm_zero, 0;\n\
                   \tst.local.v4.b32 \t[__local_depot0+0], {%bcm_zero, %bcm_zero, %bcm_zero, %bcm_zero};\n\
                   \tst.local.v4.b32 \t[__local_depot0+16], {%bcm_zero, %bcm_zero, %bcm_zero, %bcm_zero};\n\
                   \tst.local.v4.b32 \t[__local_depot0+32], {%bcm_zero, %bcm_zero, %bcm_zero, %bcm_zero};\n\
                   \tst.local.v4.b32 \t[__local_depot0+48], {%bcm_zero, %bcm_zero, %bcm_zero, %bcm_zero};\n\
                   \t}\n\t.reg .b64 \t%SP;\n";
    assert!(confined.contains(zeroing), "{confined}");
    let held = |base: &str, offset: i64, last: u64, access: &str| {
        format!(
            "\t{{ .reg .b64 %bcm_at; .reg .b64 %bcm_depot; mov.u64 %bcm_depot, __local_depot0; \
             add.s64 %bcm_at, {base}, {offset}; sub.u64 %bcm_at, %bcm_at, %bcm_depot; \
             min.u64 %bcm_at, %bcm_at, {last}; add.u64 %bcm_at, %bcm_depot, %bcm_at; {access} }}\n"
        )
    };
    for expected in [
        held("%rd3", 0, 60, "st.local.u32 \t[%bcm_at], %r1;"),
        held("%rd3", -4, 60, "@%p1 ld.local.u32 \t%r2, [%bcm_at];"),
        held("%rd5", 0, 60, "st.local.u32 \t[%bcm_at], %r2;"),
    ] {
        assert!(confined.contains(&expected), "{expected} in {confined}");
    }
    // Everything else is as it was: only the depot's line gained lines, and each access but the
    // two the straight start fixed inside the depot became one.
    let fixed = ["\tst.local.v4.u32 \t[%SPL+16], {%r1, %r1, %r1, %r2};", "\tld.local.u16 \t%rs1, [__local_depot0+8];"];
    let bounded = |l: &str| accesses_local_memory(l, Statement::parse(l).as_ref()) && !fixed.contains(&l);
    let kept: Vec<&str> = KERNEL.lines().filter(|l| !bounded(l)).collect();
    let left: Vec<&str> =
        confined.lines().filter(|l| !l.contains("bcm_")).filter(|l| *l != "\t{" && *l != "\t}").collect();
    assert_eq!(left, kept);
}

#[test]
fn an_access_the_straight_start_fixed_inside_the_depot_is_kept_and_any_other_bounded() {
    let kept = |kernel: &str, access: &str| confined(kernel).expect("confined").lines().any(|l| l == access);
    let fixed = "\tst.local.v4.u32 \t[%SPL+16], {%r1, %r1, %r1, %r2};";
    assert!(kept(KERNEL, fixed));
    // Through an `add` of a constant, up to the last place the access fits.
    let added = KERNEL.replace("[%SPL+16]", "[%rd11+-8]").replace(
        "\tmov.u32 \t%r1, %tid.x;\n",
        "\tmov.u32 \t%r1, %tid.x;\n\tadd.u64 \t%rd10, %SPL, 16;\n\tadd.s64 \t%rd11, 24, %rd10;\n",
    );
    assert!(kept(&added, &fixed.replace("[%SPL+16]", "[%rd11+-8]")));
    let past_the_end = added.replace("%rd10, %SPL, 16", "%rd10, %SPL, 33");
    assert!(!kept(&past_the_end, &fixed.replace("[%SPL+16]", "[%rd11+-8]")));
    // An index masked with a constant lies between 0 and the mask, whatever it was.
    let masked = KERNEL.replace("[%SPL+16]", "[%rd11]").replace(
        "\tmov.u32 \t%r1, %tid.x;\n",
        "\tmov.u32 \t%r1, %tid.x;\n\tand.b64 \t%rd10, %rd1, 48;\n\tadd.s64 \t%rd11, %SPL, %rd10;\n",
    );
    assert!(kept(&masked, &fixed.replace("[%SPL+16]", "[%rd11]")));
    for wider in [masked.replace("%rd1, 48", "%rd1, 49"), masked.replace("%rd1, 48", "%rd1, -16")] {
        assert!(!kept(&wider, &fixed.replace("[%SPL+16]", "[%rd11]")));
    }
    // PTX reads `016` as octal 14: only decimal constants are followed.
    let octal = added.replace("%rd10, %SPL, 16", "%rd10, %SPL, 016");
    assert!(!kept(&octal, &fixed.replace("[%SPL+16]", "[%rd11+-8]")));
    // A vector's halves hold no address: an access through the high half is not kept (and, not
    // a 64-bit register, cannot be bounded either).
    let halves = KERNEL
        .replace("[%SPL+16]", "[%r6]")
        .replace("\tmov.u32 \t%r1, %tid.x;\n", "\tmov.u32 \t%r1, %tid.x;\n\tmov.b64 \t{%r5, %r6}, %SPL;\n");
    assert_eq!(confined(&halves), Err(Unconfined::Unbounded("st.local.v4.u32 \t[%r6], {%r1, %r1, %r1, %r2};".into())));
    let two_addresses = masked.replace("%SPL, %rd10", "%SPL, %SPL");
    assert!(!kept(&two_addresses, &fixed.replace("[%SPL+16]", "[%rd11]")));
    let before_the_start = KERNEL.replace("[%SPL+16]", "[%SPL+-16]");
    assert!(!kept(&before_the_start, &fixed.replace("+16", "+-16")));
    // Set again after the straight start (a loop could bring either value), after a branch
    // (which could skip it), in a block (which may declare a register of its own of that name).
    let set_later = KERNEL.replace("\tret;", "\tadd.u64 \t%SPL, %SPL, 64;\n\tret;");
    assert!(!kept(&set_later, fixed));
    let after_a_branch = KERNEL
        .replace("\tmov.u64 \t%SPL, __local_depot0;", "\t@%p2 bra \t$L__BB0_1;\n\tmov.u64 \t%SPL, __local_depot0;");
    assert!(!kept(&after_a_branch, fixed));
    let in_a_block = KERNEL.replace(
        "\tmov.u64 \t%SPL, __local_depot0;",
        "\tmov.b64 \t%SPL, 0;\n\t{ .reg .b64 %SPL; mov.u64 \t%SPL, __local_depot0; }",
    );
    assert!(!kept(&in_a_block, fixed));
    // Set in the straight start once more, to what is not followed.
    let overwritten =
        KERNEL.replace("\tcvta.local.u64 \t%SP, %SPL;", "\tcvta.local.u64 \t%SP, %SPL;\n\tmov.u64 \t%SPL, %rd2;");
    assert!(!kept(&overwritten, fixed));
    let guarded = KERNEL
        .replace("\tmov.u64 \t%SPL, __local_depot0;", "\tmov.b64 \t%SPL, 0;\n\t@%p2 mov.u64 \t%SPL, __local_depot0;");
    assert!(!kept(&guarded, fixed));
}

#[test]
fn each_depot_is_zeroed_as_wide_as_its_alignment_and_size_allow() {
    // Each zeroing store: the depot's stores written out, or a loop's store and step.
    let zeroed = |declaration: &str| {
        let bytes = KERNEL.replace("local.v4.u32", "local.u8").replace("local.u32", "local.u8");
        let kernel = bytes.replace(".align 16 .b8 \t__local_depot0[64]", declaration);
        let confined = confined(&kernel).expect("confined");
        let zeroing =
            |l: &&str| l.contains("st.local") && l.contains("%bcm_zero") || l.contains("add.u64 \t%bcm_at, %bcm_at");
        confined.lines().filter(zeroing).map(|l| l.trim().to_owned()).collect::<Vec<_>>()
    };
    assert_eq!(
        zeroed(".align 8 .b8 \t__local_depot0[24]"),
        [
            "st.local.b64 \t[__local_depot0+0], %bcm_zero;",
            "st.local.b64 \t[__local_depot0+8], %bcm_zero;",
            "st.local.b64 \t[__local_depot0+16], %bcm_zero;"
        ]
    );
    assert_eq!(
        zeroed(".align 16 .b8 \t__local_depot0[12]"),
        [
            "st.local.b32 \t[__local_depot0+0], %bcm_zero;",
            "st.local.b32 \t[__local_depot0+4], %bcm_zero;",
            "st.local.b32 \t[__local_depot0+8], %bcm_zero;"
        ]
    );
    assert_eq!(zeroed(".align 2 .b8 \t__local_depot0[2]"), ["st.local.b16 \t[__local_depot0+0], %bcm_zero;"]);
    let bytes: Vec<String> = (0..3).map(|i| format!("st.local.b8 \t[__local_depot0+{i}], %bcm_zero;")).collect();
    assert_eq!(zeroed(".align 1 .b8 \t__local_depot0[3]"), bytes);
    // Past 64 stores, a loop.
    assert_eq!(
        zeroed(".align 16 .b8 \t__local_depot0[1040]"),
        [
            "st.local.v4.b32 \t[%bcm_at], {%bcm_zero, %bcm_zero, %bcm_zero, %bcm_zero};",
            "add.u64 \t%bcm_at, %bcm_at, 16;"
        ]
    );
    assert_eq!(
        zeroed(".align 1 .b8 \t__local_depot0[65]"),
        ["st.local.b8 \t[%bcm_at], %bcm_zero;", "add.u64 \t%bcm_at, %bcm_at, 1;"]
    );
}

#[test]
fn what_cannot_be_held_inside_a_depot_is_refused() {
    let wider = KERNEL.replace("__local_depot0[64]", "__local_depot0[8]");
    assert_eq!(
        confined(&wider),
        Err(Unconfined::Unbounded("st.local.v4.u32 \t[%SPL+16], {%r1, %r1, %r1, %r2};".into()))
    );
    let no_depot = KERNEL.replace("\t.local .align 16 .b8 \t__local_depot0[64];\n", "");
    assert_eq!(confined(&no_depot), Err(Unconfined::Unbounded("st.local.u32 \t[%rd3], %r1;".into())));
    let own =
        KERNEL.replace("\t.reg .b64 \t%SP;\n", "\t{ .local .b32 t; ld.local.b32 %r3, [t]; }\n\t.reg .b64 \t%SP;\n");
    assert_eq!(confined(&own), Err(Unconfined::Declared(".local .b32 t; ld.local.b32 %r3, [t]; }".into())));
    let a_32_bit_address = KERNEL.replace("[%rd5]", "[%r5]");
    assert_eq!(confined(&a_32_bit_address), Err(Unconfined::Unbounded("st.local.u32 \t[%r5], %r2;".into())));
    let allocated = KERNEL.replace("\tret;", "\talloca.u64 \t%rd9, %rd2;\n\tret;");
    assert_eq!(confined(&allocated), Err(Unconfined::Allocated));
}

#[test]
fn a_local_arrays_address_may_be_printfs_buffer_and_nothing_else() {
    assert!(confined(KERNEL).is_ok());
    let dereferenced = KERNEL.replace("\tret;", "\tadd.s64 \t%rd9, %rd4, %rd2;\n\tld.u32 \t%r5, [%rd9];\n\tret;");
    assert_eq!(confined(&dereferenced), Err(Unconfined::Pointer));
    // A pointer computed at a loop's end reaches its start through the back edge.
    let in_a_loop = KERNEL
        .replace("$L__BB0_1:\n", "$L__BB0_1:\n\tst.volatile.u32 \t[%rd10+8], %r1;\n")
        .replace("\tret;", "\tmov.b64 \t%rd10, %rd9;\n\tadd.s64 \t%rd9, %rd4, 8;\n\tbra.uni \t$L__BB0_1;\n\tret;");
    assert_eq!(confined(&in_a_loop), Err(Unconfined::Pointer));
    assert!(confined(&in_a_loop.replace("%rd4, 8", "%rd2, 8")).is_ok());
    // Stored, it could be read back where no instruction shows it: printing it with `%p` stores it.
    let printed = KERNEL.replace("st.local.u32 \t[%rd5], %r2;", "st.local.u64 \t[%rd5], %rd4;");
    assert_eq!(confined(&printed), Err(Unconfined::Pointer));
    // A space named at a generic local address (`__ldcs(&local[0])`, `__stcs`) reaches it as well.
    for access in
        ["ld.global.cs.u32 \t%r5, [%rd4];", "st.global.cs.u32 \t[%rd4+4], %r1;", "ld.shared.u32 \t%r5, [%rd4];"]
    {
        let named = KERNEL.replace("\tret;", &format!("\t{access}\n\tret;"));
        assert_eq!(confined(&named), Err(Unconfined::Pointer), "{access}");
    }
    let atomic = KERNEL.replace("\tret;", "\tatom.global.exch.b64 \t%rd9, [%rd8], %rd4;\n\tret;");
    assert_eq!(confined(&atomic), Err(Unconfined::Pointer));
    let returned = KERNEL.replace("\tret;", "\tst.param.b64 \t[func_retval0], %rd4;\n\tret;");
    assert_eq!(confined(&returned), Err(Unconfined::Pointer));
    // Only CUDA's `vprintf`, declared, reads the buffer: not a function of the module's own by that
    // name (`extern "C"`), which could index it anywhere.
    let own = KERNEL.replace(
        ".extern .func  (.param .b32 func_retval0) vprintf\n(\n\t.param .b64 vprintf_param_0,\n\t.param .b64 vprintf_param_1\n)\n;",
        ".func  (.param .b32 func_retval0) vprintf(\n\t.param .b64 vprintf_param_0,\n\t.param .b64 vprintf_param_1\n)\n{\n\tret;\n}",
    );
    assert_ne!(own, KERNEL);
    assert_eq!(confined(&own), Err(Unconfined::Pointer));
    // A register's name means one register in one function: the helper's `%r2` holds a pointer's
    // bits, the kernel's (which it stores) does not.
    let helper = ".func _Z6helperv()\n{\n\t.reg .b32 \t%r<3>;\n\t.reg .b64 \t%rd<10>;\n\t\
                  cvta.local.u64 \t%rd9, %rd1;\n\tcvt.u32.u64 \t%r2, %rd9;\n\tret;\n}\n";
    assert!(confined(&format!("{helper}{KERNEL}")).is_ok());
    let storing = helper.replace("\tret;", "\tst.global.u32 \t[%rd1], %r2;\n\tret;");
    assert_eq!(confined(&format!("{storing}{KERNEL}")), Err(Unconfined::Pointer));
    let other_call = KERNEL.replace("\tvprintf, ", "\t_Z6helperPj, ");
    assert_eq!(confined(&other_call), Err(Unconfined::Pointer));
    assert!(confined(&other_call.replace("[param1], %rd4", "[param1], %rd7")).is_ok());
}

#[test]
fn a_call_spans_lines_and_directives_end_where_their_line_does() {
    let found = statements(KERNEL);
    let targets: Vec<&str> = found.iter().filter_map(Statement::call_target).collect();
    assert_eq!(targets, ["vprintf"]);
    let ops: Vec<&str> = found.iter().map(|s| s.op.as_str()).take(3).collect();
    assert_eq!(ops, ["mov.u64", "cvta.local.u64", "ld.param.u64"]);
    let guarded = found.iter().find(|s| s.op == "ld.local.u32").expect("the guarded load");
    assert_eq!(guarded.operands, ["%r2", "[%rd3+-4]"]);
    let vector = found.iter().find(|s| s.op == "st.local.v4.u32").expect("the vector store");
    assert_eq!(vector.operands, ["[%SPL+16]", "{%r1, %r1, %r1, %r2}"]);
}
