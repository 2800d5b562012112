use super::*;

/// A module with a global table of 8 words, a constant one of 4 and a string, and a kernel that
/// reads the global table at an index it is given.
const MODULE: &str = ".version 8.8\n.target sm_90\n.address_size 64\n\n\
.global .align 4 .b8 table[32] = {0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 5, 0, 0, 0, 6, 0, 0, 0, 7, 0, 0, 0};\n\
.const .align 4 .b8 constants[16] = {0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0};\n\
.global .align 1 .b8 $str[3] = {104, 105, 0};\n\n\
.visible .entry k(\n\t.param .u64 k_param_0,\n\t.param .u32 k_param_1\n)\n{\n\
\t.reg .b32 \t%r<9>;\n\t.reg .b64 \t%rd<9>;\n\n\
\tld.param.u64 \t%rd1, [k_param_0];\n\tld.param.u32 \t%r1, [k_param_1];\n\
\tmul.wide.u32 \t%rd2, %r1, 4;\n\
\tmov.u64 \t%rd3, table;\n\tcvta.global.u64 \t%rd4, %rd3;\n\tadd.s64 \t%rd5, %rd4, %rd2;\n\
\tld.global.nc.u32 \t%r2, [%rd5];\n\
\tld.global.u32 \t%r3, [table+4];\n\
\tcvta.to.global.u64 \t%rd6, %rd1;\n\tst.global.u32 \t[%rd6], %r2;\n\
\tret;\n\n}\n";

/// The kernel's place among `MODULE`'s bodies (after its tables' initializers).
const KERNEL: usize = 3;

/// `MODULE` with `lines` before its `ret`.
fn with(lines: &str) -> String {
    MODULE.replace("\tret;", &format!("{lines}\tret;"))
}

#[test]
fn a_generic_access_made_from_one_variable_is_held_inside_it() {
    let generic = kept_text(&with("\tld.u32 \t%r4, [%rd5+4];\n"));
    assert!(
        generic.contains(
            "\t{ .reg .b64 %bcm_at; .reg .b64 %bcm_base; mov.u64 %bcm_base, table; \
             cvta.global.u64 %bcm_base, %bcm_base; add.s64 %bcm_at, %rd5, 4; sub.u64 %bcm_at, %bcm_at, %bcm_base; \
             min.u64 %bcm_at, %bcm_at, 28; add.u64 %bcm_at, %bcm_base, %bcm_at; ld.u32 \t%r4, [%bcm_at]; }"
        ),
        "{generic}"
    );
    // A read that names its space is held inside the table too: past it lies any memory of the
    // space (`__ldg`'s `ld.global.nc` of a generic address). The table's own address plus a
    // constant inside it, and the kernel's output, are left as they are.
    let read_in_its_space = kept_text(MODULE);
    assert!(
        read_in_its_space.contains(
            "min.u64 %bcm_at, %bcm_at, 28; add.u64 %bcm_at, %bcm_base, %bcm_at; ld.global.nc.u32 \t%r2, [%bcm_at]; }"
        ),
        "{read_in_its_space}"
    );
    assert!(read_in_its_space.contains("\tld.global.u32 \t%r3, [table+4];\n"));
    assert!(read_in_its_space.contains("\tst.global.u32 \t[%rd6], %r2;\n"));
    let constant_past = kept_text(&with("\tld.global.u32 \t%r4, [table+40000];\n"));
    assert!(constant_past.contains("min.u64 %bcm_at, %bcm_at, 28;"), "{constant_past}");
    // Far past the table, as a constant, read as generic memory: held inside it.
    let far = kept_text(&with("\tld.u32 \t%r4, [table+40000];\n"));
    assert!(far.contains("mov.u64 %bcm_base, table; add.s64 %bcm_at, %bcm_base, 40000;"), "{far}");
    // A generic address of a constant: its base is the constant's generic address.
    let generic_constant =
        kept_text(&with("\tmov.u64 \t%rd7, constants;\n\tcvta.const.u64 \t%rd8, %rd7;\n\tld.u32 \t%r5, [%rd8+8];\n"));
    assert!(
        generic_constant.contains("cvta.const.u64 %bcm_base, %bcm_base; add.s64 %bcm_at, %rd8, 8;"),
        "{generic_constant}"
    );
    assert!(generic_constant.contains("min.u64 %bcm_at, %bcm_at, 12;"), "{generic_constant}");
    // `ld.const` is held inside the table, in its bank.
    let in_its_bank =
        with("\tmov.u64 \t%rd7, constants;\n\tadd.s64 \t%rd8, %rd7, %rd2;\n\tld.const.u32 \t%r5, [%rd8];\n");
    let held = kept_text(&in_its_bank);
    assert!(
        held.contains(
            "mov.u64 %bcm_base, constants; add.s64 %bcm_at, %rd8, 0; sub.u64 %bcm_at, %bcm_at, %bcm_base; \
             min.u64 %bcm_at, %bcm_at, 12; add.u64 %bcm_at, %bcm_base, %bcm_at; ld.const.u32 \t%r5, [%bcm_at]; }"
        ),
        "{held}"
    );
    // A copy from a table (`cp.async`, which holds two addresses) or a cache hint there is refused.
    for other in ["cp.async.ca.shared.global [%rd1], [%rd5], 4;", "prefetch.global.L2 [%rd5];"] {
        let at_a_table = with(&format!("\t{other}\n"));
        assert_eq!(kept(&at_a_table, &at_a_table), Err(Unkept::Unbounded { line: other.into(), body: KERNEL }));
    }
    // A loop's back edge carries the table's address to an earlier instruction.
    let looped = with("$L__BB0_1:\n\tld.u32 \t%r6, [%rd8];\n\tadd.s64 \t%rd8, %rd4, %rd2;\n\tbra.uni \t$L__BB0_1;\n");
    assert!(kept_text(&looped).contains("ld.u32 \t%r6, [%bcm_at]"));
}

fn kept_text(ptx: &str) -> String {
    kept(ptx, ptx).unwrap_or_else(|unkept| panic!("{unkept}: {ptx}"))
}

#[test]
fn what_cannot_be_held_inside_one_variable_is_refused() {
    let either = with(
        "\tmov.u64 \t%rd7, constants;\n\tcvta.const.u64 \t%rd8, %rd7;\n\tselp.b64 \t%rd8, %rd8, %rd4, %p1;\n\
         \tld.u32 \t%r5, [%rd8];\n",
    );
    let wider = either.replace("ld.u32", "ld.v4.u64");
    assert_eq!(
        kept(&wider, &wider),
        Err(Unkept::Unbounded { line: "ld.v4.u64 \t%r5, [%rd8];".into(), body: KERNEL }),
        "wider than one"
    );
    // A write at either of two tables.
    let written = with("\tmov.u64 \t%rd7, $str;\n\tselp.b64 \t%rd8, %rd7, %rd3, %p1;\n\tst.u8 \t[%rd8], %r1;\n");
    assert_eq!(kept(&written, &written), Err(Unkept::Unbounded { line: "st.u8 \t[%rd8], %r1;".into(), body: KERNEL }));
    // A constant's own address read as generic memory, not as its bank.
    let not_generic = with("\tmov.u64 \t%rd7, constants;\n\tld.u32 \t%r5, [%rd7];\n");
    assert_eq!(
        kept(&not_generic, &not_generic),
        Err(Unkept::Unbounded { line: "ld.u32 \t%r5, [%rd7];".into(), body: KERNEL })
    );
    // Stored, passed to a function of its own or returned, it is read where no instruction shows.
    let stored = with("\tst.global.u64 \t[%rd6], %rd5;\n");
    assert_eq!(kept(&stored, &stored), Err(Unkept::HandedOn));
    let passed = with(
        "\t{\n\t.param .b64 param0;\n\tst.param.b64 \t[param0], %rd5;\n\tcall.uni \n\thelper, \n\t(\n\tparam0\n\t);\n\t}\n",
    );
    assert_eq!(kept(&passed, &passed), Err(Unkept::HandedOn));
    // `printf`'s format string is one, and `assert` is given its message's.
    for reader in ["vprintf", "__assertfail"] {
        assert!(kept(&passed.replace("\thelper, ", &format!("\t{reader}, ")), &passed).is_ok(), "{reader}");
    }
}

#[test]
fn an_address_stored_in_local_memory_is_followed_back_out_of_it() {
    // (A string `printf` prints with `%s` is stored in its arguments' buffer, in local memory.)
    let stored = "	st.local.u64 \t[%rd7], %rd5;\n\tld.local.u64 \t%rd8, [%rd7];\n";
    let reloaded = with(&format!("{stored}\tld.u32 \t%r5, [%rd8+40000];\n"));
    assert!(
        kept_text(&reloaded).contains(
            "add.s64 %bcm_at, %rd8, 40000; sub.u64 %bcm_at, %bcm_at, %bcm_base; min.u64 %bcm_at, %bcm_at, 28;"
        )
    );
    // Two tables' addresses in one local array: the word loaded back may be either, and a read at
    // it is held inside one of them (the string's 3 bytes hold no 4-byte read).
    let either =
        with(&format!("\tmov.u64 \t%rd9, $str;\n\tst.local.u64 \t[%rd7+8], %rd9;\n{stored}\tld.u8 \t%r5, [%rd8];\n"));
    assert!(kept_text(&either).contains("mov.u64 %bcm_base, $str; sub.u64 %bcm_past, %bcm_at, %bcm_base;"));
    let wider = either.replace("ld.u8", "ld.u32");
    assert_eq!(kept(&wider, &wider), Err(Unkept::Unbounded { line: "ld.u32 \t%r5, [%rd8];".into(), body: KERNEL }));
    // Stored there, it is held inside its table: `printf("%s", table + i)` reads where it points.
    let printed = kept_text(&reloaded);
    assert!(
        printed.contains(
            "\t{ .reg .b64 %bcm_base; .reg .b64 %bcm_past; .reg .pred %bcm_inside; .reg .b64 %bcm_value0; \
             mov.u64 %bcm_base, table; cvta.global.u64 %bcm_base, %bcm_base; sub.u64 %bcm_past, %rd5, %bcm_base; \
             min.u64 %bcm_past, %bcm_past, 31; add.u64 %bcm_value0, %bcm_base, %bcm_past; \
             st.local.u64 \t[%rd7+0], %bcm_value0; }"
        ),
        "{printed}"
    );
    // A table with no 0 byte: `%s` would read on past its end.
    let unterminated = format!(
        ".global .align 1 .b8 name[3] = {{97, 98, 99}};\n{}",
        with("\tmov.u64 \t%rd9, name;\n\tst.local.u64 \t[%rd7], %rd9;\n")
    );
    assert_eq!(
        kept(&unterminated, &unterminated),
        Err(Unkept::Unterminated { line: "st.local.u64 \t[%rd7], %rd9;".into(), body: KERNEL + 1 })
    );
    let vector = with("\tst.local.v2.u64 \t[%rd7], {%rd1, %rd5};\n");
    assert!(kept_text(&vector).contains("st.local.v2.u64 \t[%rd7+0], {%rd1, %bcm_value1}; }"));
    // A 32-bit word of local memory is a number.
    let number = with(
        "\tst.local.u64 \t[%rd7], %rd5;\n\tld.local.u32 \t%r6, [%rd7];\n\tcvt.u64.u32 \t%rd8, %r6;\n\tld.u32 \t%r5, [%rd8];\n",
    );
    assert!(kept_text(&number).contains("\tld.u32 \t%r5, [%rd8];\n"));
}

#[test]
fn only_variables_at_the_modules_level_are_followed() {
    let variables = declared(MODULE).variables;
    assert_eq!(variables.keys().copied().collect::<Vec<_>>(), ["$str", "constants", "table"]);
    assert_eq!(variables["table"].bytes, Some(32));
    assert_eq!(variables["constants"].space, "const");
    assert_eq!(variables["$str"].bytes, Some(3));
}

#[test]
fn an_address_a_variable_holds_from_the_start_is_followed_out_of_it() {
    // `constexpr const unsigned* via = table;` and a table of two such pointers.
    let holding = MODULE.replace(
        ".global .align 1 .b8 $str",
        ".global .align 8 .u64 via = generic(table);\n\
         .global .align 8 .u64 refs[2] = {generic(table), generic(constants)};\n.global .align 1 .b8 $str",
    );
    let through = |pointer: &str, access: &str| {
        holding.replace(
            "\tret;",
            &format!("\tmov.u64 \t%rd7, {pointer};\n\tld.global.nc.u64 \t%rd8, [%rd7];\n{access}\tret;"),
        )
    };
    let far = kept_text(&through("via", "\tld.u32 \t%r5, [%rd8+40000];\n"));
    assert!(
        far.contains(
            "mov.u64 %bcm_base, table; cvta.global.u64 %bcm_base, %bcm_base; add.s64 %bcm_at, %rd8, 40000; \
             sub.u64 %bcm_at, %bcm_at, %bcm_base; min.u64 %bcm_at, %bcm_at, 28;"
        ),
        "{far}"
    );
    // Either of two tables (at an index it is given): held inside one of them. Made a global
    // address, it stays in global memory.
    let either =
        through("refs", "\tld.u32 \t%r5, [%rd8+40000];\n").replace("[%rd7];", "[%rd7];\n\tadd.s64 \t%rd7, %rd7, %rd2;");
    let held = kept_text(&either);
    assert!(
        held.contains("selp.b64 %bcm_held, %bcm_at, %bcm_held, %bcm_inside; ld.u32 \t%r5, [%bcm_held]; }"),
        "{held}"
    );
    // The word read from the table is held inside it, whatever space the load names: past its end
    // lies what another variable holds, a number. Made a global address, what it points to is held
    // inside that table there.
    let global = through("refs", "\tcvta.to.global.u64 \t%rd9, %rd8;\n\tld.global.nc.u32 \t%r5, [%rd9+40000];\n");
    let word_held = "mov.u64 %bcm_base, refs; add.s64 %bcm_at, %rd7, 0; sub.u64 %bcm_at, %bcm_at, %bcm_base; \
                     min.u64 %bcm_at, %bcm_at, 8; add.u64 %bcm_at, %bcm_base, %bcm_at; ld.global.nc.u64 \t%rd8, [%bcm_at]; }";
    let kept_global = kept_text(&global);
    assert!(kept_global.contains(word_held), "{kept_global}");
    assert!(
        kept_global.contains("min.u64 %bcm_at, %bcm_at, 28; add.u64 %bcm_at, %bcm_base, %bcm_at; ld.global.nc.u32")
    );
    // A constant's generic address made global is its copy in global memory (`ld.global` of it).
    let second = global.replace("ld.global.nc.u64 \t%rd8, [%rd7];", "ld.global.nc.u64 \t%rd8, [%rd7+8];");
    let constant_copy = kept_text(&second);
    assert!(
        constant_copy.contains(
            "mov.u64 %bcm_base, constants; cvta.const.u64 %bcm_base, %bcm_base; cvta.to.global.u64 %bcm_base, \
             %bcm_base; add.s64 %bcm_at, %rd9, 40000;"
        ),
        "{constant_copy}"
    );
    let in_its_bank = global.replace(".global .align 8 .u64 refs", ".const .align 8 .u64 refs");
    let in_its_bank = in_its_bank.replace("ld.global.nc.u64", "ld.const.u64");
    assert!(
        kept_text(&in_its_bank)
            .contains("min.u64 %bcm_at, %bcm_at, 8; add.u64 %bcm_at, %bcm_base, %bcm_at; ld.const.u64")
    );
    // A 32-bit word of it is a number.
    let number = through("via", "").replace("ld.global.nc.u64 \t%rd8", "ld.global.nc.u32 \t%r6");
    let number = number.replace("\tret;", "\tcvt.u64.u32 \t%rd8, %r6;\n\tld.u32 \t%r5, [%rd8];\n\tret;");
    assert!(kept_text(&number).contains("\tld.u32 \t%r5, [%rd8];\n"));
    let holds: Vec<_> = variables_in(&declared(&holding).variables["refs"].holds).collect();
    assert_eq!(holds, [("constants", true), ("table", true)]);
}

#[test]
fn a_read_of_a_tables_address_word_is_held_to_the_words_its_low_bits_allow() {
    // `{{table, 7u}, {table, 3u}}`: the read of a member's pointer lands on a pointer, wherever its index points.
    let choices = with(
        "\tand.b32 \t%r9, %r1, 1;\n\tmul.wide.u32 \t%rd7, %r9, 16;\n\tmov.u64 \t%rd8, choices;\n\
         \tadd.s64 \t%rd9, %rd8, %rd7;\n\tld.const.u64 \t%rd10, [%rd9];\n",
    )
    .replace(
        ".const .align 4 .b8 constants[16]",
        ".const .align 8 .u64 choices[4] = {generic(table), 7, generic(table), 3};\n.const .align 4 .b8 constants[16]",
    );
    let kept = kept_text(&choices);
    assert!(
        kept.contains(
            "min.u64 %bcm_at, %bcm_at, 16; mul.lo.u64 %bcm_at, %bcm_at, 32; shr.u64 %bcm_at, %bcm_at, 9; \
             mul.lo.u64 %bcm_at, %bcm_at, 16; add.u64 %bcm_at, %bcm_at, 0; add.u64 %bcm_at, %bcm_base, %bcm_at; ld.const.u64"
        ),
        "{kept}"
    );
    // A table of addresses alone is held inside it as before; one whose words the bits do not tell
    // apart too (the load reads a number to [`crate::address_origins`]).
    let addresses = choices.replace("{generic(table), 7, generic(table), 3}", "{generic(table), generic(table), 0, 0}");
    assert!(
        kept_text(&addresses.replace("0, 0}", "generic(table), generic(table)}"))
            .contains("min.u64 %bcm_at, %bcm_at, 24; add.u64")
    );
    assert!(kept_text(&choices.replace("%r9, 16;", "%r9, 8;")).contains("min.u64 %bcm_at, %bcm_at, 24; add.u64"));
    // Members of 24 bytes, `{7u, table, 3u}`: 8 bytes into one, at 8 or 32; at 8 alone where one
    // member is the table's whole.
    let of_three = choices
        .replace("{generic(table), 7, generic(table), 3}", "{7, generic(table), 3, 7, generic(table), 3}")
        .replace("choices[4]", "choices[6]")
        .replace("%r9, 16;", "%r9, 24;")
        .replace("[%rd9]", "[%rd9+8]");
    let held = "min.u64 %bcm_at, %bcm_at, 32; mul.lo.u64 %bcm_at, %bcm_at, 86; shr.u64 %bcm_at, %bcm_at, 11; \
                mul.lo.u64 %bcm_at, %bcm_at, 24; add.u64 %bcm_at, %bcm_at, 8; add.u64";
    assert!(kept_text(&of_three).contains(held), "{}", kept_text(&of_three));
    let one = of_three
        .replace("{7, generic(table), 3, 7, generic(table), 3}", "{7, generic(table), 3}")
        .replace("choices[6]", "choices[3]");
    assert!(kept_text(&one).contains(
        "min.u64 %bcm_at, %bcm_at, 8; mul.lo.u64 %bcm_at, %bcm_at, 16; shr.u64 %bcm_at, %bcm_at, 8; \
         mul.lo.u64 %bcm_at, %bcm_at, 16; add.u64 %bcm_at, %bcm_at, 8;"
    ));
}

#[test]
fn a_quotient_by_multiplying_is_the_quotient_up_to_the_last_place() {
    let exact = |step: u64, last: u64| {
        let (multiplier, shift) = Every { first: 0, step }.quotient_by_multiplying(last).unwrap();
        (0..=last).all(|x| (x * multiplier) >> shift == x / step)
    };
    assert!((1..=200).all(|step| [0, 7, 8, 100, 1000, 4095, 4096].iter().all(|&last| exact(step, last))));
    // The widest a table may be, at its last places, and steps of every size.
    for step in [8, 24, 40, 56, 72, 1 << 20, (1 << 31) - 1] {
        let (multiplier, shift) = Every { first: 0, step }.quotient_by_multiplying((1 << 31) - 1).unwrap();
        let top = ((1u64 << 31) - 2048..1 << 31).chain((0..2048).map(|k| k * step)).filter(|x| *x < 1 << 31);
        assert!(top.into_iter().all(|x| (x * multiplier) >> shift == x / step), "{step}");
    }
    assert_eq!(Every { first: 0, step: 8 }.quotient_by_multiplying(1 << 31), None, "a table past 2^31 bytes");
}

#[test]
fn a_read_at_either_of_two_tables_is_held_inside_one_of_them() {
    // `refs[row & 1].at[i]` of `{{table}, {other}}`: where it lies inside one, else inside the first.
    let either = with(
        "\tmov.u64 \t%rd7, $str;\n\tselp.b64 \t%rd8, %rd7, %rd3, %p1;\n\tadd.s64 \t%rd8, %rd8, %rd2;\n\tld.u8 \t%r5, [%rd8+1];\n",
    );
    let held = kept_text(&either);
    assert!(
        held.contains(
            "add.s64 %bcm_at, %rd8, 1; mov.u64 %bcm_base, $str; sub.u64 %bcm_past, %bcm_at, %bcm_base; \
             min.u64 %bcm_past, %bcm_past, 2; add.u64 %bcm_held, %bcm_base, %bcm_past; \
             mov.u64 %bcm_base, table; sub.u64 %bcm_past, %bcm_at, %bcm_base; setp.le.u64 %bcm_inside, %bcm_past, 31; \
             selp.b64 %bcm_held, %bcm_at, %bcm_held, %bcm_inside; ld.u8 \t%r5, [%bcm_held]; }"
        ),
        "{held}"
    );
    // Tables of two spaces, each made generic by its own `cvta`; a write at either is refused.
    let spaces = either
        .replace("mov.u64 \t%rd7, $str;", "mov.u64 \t%rd0, constants;\n\tcvta.const.u64 \t%rd7, %rd0;")
        .replace("%rd7, %rd3, %p1;", "%rd7, %rd4, %p1;");
    let held = kept_text(&spaces);
    assert!(held.contains("mov.u64 %bcm_base, constants; cvta.const.u64 %bcm_base, %bcm_base;"), "{held}");
    assert!(held.contains("mov.u64 %bcm_base, table; cvta.global.u64 %bcm_base, %bcm_base;"), "{held}");
    let write = either.replace("ld.u8 \t%r5, [%rd8+1];", "st.u8 \t[%rd8+1], %r5;");
    assert_eq!(kept(&write, &write), Err(Unkept::Unbounded { line: "st.u8 \t[%rd8+1], %r5;".into(), body: KERNEL }));
}

#[test]
fn a_read_through_a_functions_parameter_is_held_inside_the_tables_its_calls_pass() {
    // `lookup(table, i)`, called with `kLow`'s address and `kHigh`'s, reads generic memory there.
    let called = crate::calls::tests::MODULE
        .replace("ld.const.u32 \t%r2, [%rd4]", "ld.u32 \t%r2, [%rd4]")
        .replace("cvta.to.const.u64 \t%rd2, %rd1;", "mov.u64 \t%rd2, %rd1;");
    let held = kept_text(&called);
    assert!(held.contains("mov.u64 %bcm_base, kLow; cvta.const.u64 %bcm_base, %bcm_base;"), "{held}");
    assert!(held.contains("mov.u64 %bcm_base, kHigh; cvta.const.u64 %bcm_base, %bcm_base;"), "{held}");
    // A call that passes the kernel's own pointer instead: no table holds what it reads.
    let given = called.replacen(
        "\tst.param.b64 \t[param0+0], %rd7;",
        "\tld.param.u64 \t%rd5, [k_param_0];\n\tst.param.b64 \t[param0+0], %rd5;",
        1,
    );
    let body = crate::ptx_text::bodies(&given).iter().position(|b| b.contains("_Z6lookupPKjj_param_0")).unwrap();
    assert_eq!(kept(&given, &given), Err(Unkept::Mixed { line: "ld.u32 \t%r2, [%rd4];".into(), body }));
    // A table's address passed to a function whose address the code takes is handed on.
    let taken = called.replace("\tret;\n\n}\n.visible", "\tmov.u64 \t%rd4, _Z6lookupPKjj;\n\tret;\n\n}\n.visible");
    assert_eq!(kept(&taken, &taken), Err(Unkept::HandedOn));
}
