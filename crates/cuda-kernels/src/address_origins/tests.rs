use super::*;
use crate::low_bits::OddRemainder;
use crate::ptx_text::bodies;

/// A module with a table, a table holding its address, one holding a null pointer, a pointer the
/// host sets, a shared tile, and a kernel that writes its second parameter to its first at that index.
const MODULE: &str = ".version 8.8\n.target sm_90\n.address_size 64\n\n\
.global .align 4 .b8 table[16] = {0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0};\n\
.global .align 8 .u64 refs[1] = {generic(table)};\n\
.const .align 8 .b8 nowhere[16];\n\
.global .align 8 .u64 record_at;\n\
.shared .align 128 .b8 tile[4096];\n\n\
.visible .entry k(\n\t.param .u64 k_param_0,\n\t.param .u32 k_param_1\n)\n{\n\
\t.reg .pred \t%p<2>;\n\t.reg .b32 \t%r<9>;\n\t.reg .b64 \t%rd<12>;\n\n\
\tld.param.u64 \t%rd1, [k_param_0];\n\tld.param.u32 \t%r1, [k_param_1];\n\
\tmul.wide.u32 \t%rd2, %r1, 4;\n\tcvta.to.global.u64 \t%rd3, %rd1;\n\tadd.s64 \t%rd4, %rd3, %rd2;\n\
\tst.global.u32 \t[%rd4], %r1;\n\
\tret;\n\n}\n";

/// `MODULE` with `lines` before its `ret`.
fn with(lines: &str) -> String {
    MODULE.replace("\tret;", &format!("{lines}\tret;"))
}

fn refused_at(ptx: &str) -> Option<String> {
    given(ptx, &[]).err().map(|ungiven| ungiven.line)
}

#[test]
fn a_pointer_a_loop_makes_after_its_first_use_is_a_number_there() {
    // `unsigned* p; for (...) { use(p); p = &table[1]; }`: on the first turn `p` holds the 0 the
    // grader's build gives it, plus the offset.
    let looped = with(
        "\tmov.u32 \t%r2, 0;\n\tmov.u64 \t%rd6, table;\n$L__BB0_1:\n\tld.global.u32 \t%r3, [%rd7+1221591040];\n\
         \tadd.s64 \t%rd7, %rd6, 4;\n\tadd.s32 \t%r2, %r2, 1;\n\tsetp.lt.u32 \t%p1, %r2, 2;\n\t@%p1 bra \t$L__BB0_1;\n",
    );
    assert_eq!(refused_at(&looped).as_deref(), Some("ld.global.u32 %r3, [%rd7+1221591040];"));
    // Made before the loop as well, it is the table's address on every turn.
    let made_first = looped.replace("$L__BB0_1:", "\tadd.s64 \t%rd7, %rd6, 4;\n$L__BB0_1:");
    assert_eq!(refused_at(&made_first), None);
}

#[test]
fn an_access_whose_reach_the_checks_do_not_follow_is_refused_wherever_it_is() {
    // `__hmma_m16n16k16_st_c_f32` at a table's address: the matrix's rows lie `%r2` elements apart.
    let store = with(
        "\tmov.u64 \t%rd5, table;\n\twmma.store.d.sync.aligned.row.m16n16k16.global.f32 \t[%rd5], \
         {%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8}, %r2;\n",
    );
    let line =
        "wmma.store.d.sync.aligned.row.m16n16k16.global.f32 [%rd5], {%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8}, %r2;";
    let why = |ptx: &str| given(ptx, &[]).map_err(|ungiven| (ungiven.why, ungiven.line, ungiven.body));
    // (Told by the body it is in, among the module's `bodies`.)
    let kernel = bodies(&store).iter().position(|body| body.contains("wmma")).unwrap();
    assert_eq!(why(&store), Err((Why::Unfollowed, line.into(), kernel)));
    assert_eq!(
        why(&store.replace(".global.f32", ".shared.f32")),
        Err((Why::Unfollowed, line.replace(".global", ".shared"), kernel))
    );
    // Shared memory's matrix loads and barriers are followed; a barrier at a generic address made
    // from a number is refused as any access there is.
    let shared = with(
        "\tldmatrix.sync.aligned.m8n8.x4.shared.b16 \t{%r1, %r2, %r3, %r4}, [%r5];\n\
                       \tmbarrier.init.shared::cta.b64 \t[%r6], %r7;\n",
    );
    assert_eq!(given(&shared, &[]), Ok(()));
    let generic = with("\tmbarrier.init.b64 \t[%rd9], %r7;\n");
    assert_eq!(why(&generic), Err((Why::MadeFromANumber, "mbarrier.init.b64 [%rd9], %r7;".into(), kernel)));
}

#[test]
fn an_address_made_from_a_kernels_pointer_or_a_tables_is_given() {
    assert_eq!(given(MODULE, &[]), Ok(()));
    // A pointer a table holds from the start, read through generic memory.
    assert_eq!(
        refused_at(&with("\tmov.u64 \t%rd5, refs;\n\tld.global.nc.u64 \t%rd6, [%rd5];\n\tld.u32 \t%r2, [%rd6+4];\n")),
        None
    );
    // A loop's pointer, moved on by a number each time round.
    let looped = "\tmov.u64 \t%rd7, %rd3;\n$L__BB0_1:\n\tst.global.u32 \t[%rd7], %r1;\n\tadd.s64 \t%rd7, %rd7, 4;\n\
                  \t@%p1 bra.uni \t$L__BB0_1;\n";
    assert_eq!(refused_at(&with(looped)), None);
    // A tensor map, a kernel parameter's own address: its coordinates are numbers.
    let tensor = "\tmov.u64 \t%rd10, tile;\n\tcvt.u32.u64 \t%r2, %rd10;\n\tadd.s32 \t%r4, %r2, 4096;\n\
                  \tmov.b64 \t%rd8, k_param_0;\n\tcvta.param.u64 \t%rd9, %rd8;\n\tmov.u32 \t%r3, 0;\n\
                  \tcp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r2], [%rd9, {%r3, %r1}], [%r4];\n";
    assert_eq!(refused_at(&with(tensor)), None);
    // Shared memory's addresses are not followed: they stay in the block's shared memory.
    assert_eq!(refused_at(&with("\tst.shared.u32 \t[%r1], %r1;\n")), None);
}

#[test]
fn an_address_made_from_a_number_is_refused() {
    let null = with("\tmov.u64 \t%rd5, 0;\n\tadd.s64 \t%rd6, %rd5, %rd2;\n\tst.u32 \t[%rd6], %r1;\n");
    assert_eq!(refused_at(&null).as_deref(), Some("st.u32 [%rd6], %r1;"));
    // A pointer a table holds as null (`struct Ref { unsigned* at; }; __constant__ const Ref nowhere[2] = {};`).
    let held_null =
        with("\tld.const.u64 \t%rd5, [nowhere+8];\n\tadd.s64 \t%rd6, %rd5, %rd2;\n\tst.global.u32 \t[%rd6], %r1;\n");
    assert_eq!(refused_at(&held_null).as_deref(), Some("st.global.u32 [%rd6], %r1;"));
    // The kernel's pointer or a null one.
    let either = "\tmov.u64 \t%rd7, %rd3;\n$L__BB0_1:\n\tst.global.u32 \t[%rd7], %r1;\n\tselp.b64 \t%rd7, %rd7, 0, %p1;\n\
                  \t@%p1 bra.uni \t$L__BB0_1;\n";
    assert_eq!(refused_at(&with(either)).as_deref(), Some("st.global.u32 [%rd7], %r1;"));
    // A name that is no variable of the module is a number (`warpSize` is `WARP_SZ`), and so is a
    // sum of two addresses.
    let warp_size = "\tld.const.u64 \t%rd5, [nowhere];\n\tmov.u32 \t%r2, WARP_SZ;\n\tcvt.u64.u32 \t%rd6, %r2;\n\
                     \tadd.s64 \t%rd7, %rd5, %rd6;\n\tst.global.u8 \t[%rd7], %r1;\n";
    assert_eq!(refused_at(&with(warp_size)).as_deref(), Some("st.global.u8 [%rd7], %r1;"));
    let two = "\tmov.u64 \t%rd5, table;\n\tadd.s64 \t%rd6, %rd5, %rd3;\n\tst.global.u32 \t[%rd6], %r1;\n";
    assert_eq!(refused_at(&with(two)).as_deref(), Some("st.global.u32 [%rd6], %r1;"));
    // A table's address cut to 32 bits and back, made a float and back, or multiplied.
    for made in [
        "\tmov.u64 \t%rd5, table;\n\tcvt.u32.u64 \t%r2, %rd5;\n\tcvt.u64.u32 \t%rd6, %r2;\n",
        "\tmov.u64 \t%rd5, table;\n\tcvt.rn.f64.u64 \t%fd1, %rd5;\n\tcvt.rzi.u64.f64 \t%rd6, %fd1;\n",
        "\tmov.u64 \t%rd5, table;\n\tmad.lo.s64 \t%rd6, %rd5, 2, %rd3;\n",
    ] {
        let made = with(&format!("{made}\tld.global.u32 \t%r3, [%rd6];\n"));
        assert_eq!(refused_at(&made).as_deref(), Some("ld.global.u32 %r3, [%rd6];"), "{made}");
    }
    // Every instruction that names an address in global memory.
    for access in ["ldu.global.u32 \t%r2, [%rd5];", "discard.global.L2 \t[%rd5], 128;", "prefetch.global.L2 \t[%rd5];"]
    {
        let made = with(&format!("\tmov.u64 \t%rd5, 4096;\n\t{access}\n"));
        assert!(refused_at(&made).is_some(), "{access}");
    }
    // A register nothing writes holds 0; data loaded from the kernel's input is a number.
    assert!(refused_at(&with("\tld.global.u32 \t%r2, [%rd11];\n")).is_some());
    assert!(refused_at(&with("\tld.global.u64 \t%rd5, [%rd4];\n\tld.global.u32 \t%r2, [%rd5];\n")).is_some());
    // A parameter of a function that does not inline, which no call here passes anything to.
    let function = MODULE.replace(
        ".visible .entry",
        ".func f(\n\t.param .b64 f_param_0\n)\n{\n\t.reg .b64 \t%rd<2>;\n\n\tld.param.u64 \t%rd1, [f_param_0];\n\
         \tst.u32 \t[%rd1], 0;\n\tret;\n\n}\n\n.visible .entry",
    );
    assert_eq!(refused_at(&function).as_deref(), Some("st.u32 [%rd1], 0;"));
}

#[test]
fn the_graders_own_pointer_is_given_only_by_name() {
    let record = with("\tld.global.u64 \t%rd5, [record_at];\n\tst.volatile.u32 \t[%rd5+4], %r1;\n");
    assert_eq!(given(&record, &["record_at"]), Ok(()));
    assert_eq!(refused_at(&record).as_deref(), Some("st.volatile.u32 [%rd5+4], %r1;"));
}

#[test]
fn a_tables_words_hold_its_addresses_and_a_number_unless_every_word_is_one() {
    let variables = declared(MODULE).variables;
    assert_eq!(variables["refs"].holds, Origins::from([Origin::Variable("table", true)]));
    assert_eq!(variables["nowhere"].holds, Origins::from([Origin::Number]));
    assert_eq!(variables["record_at"].holds, Origins::from([Origin::Number]));
    let two = MODULE.replace("{generic(table)}", "{generic(table), 0}");
    let two = two.replace("refs[1]", "refs[2]");
    assert!(declared(&two).variables["refs"].holds.contains(&Origin::Number));
}

/// `MODULE` with a table of structs of a pointer and a number (`{{table, 7u}, {table, 3u}}`) and `lines`.
fn with_choices(lines: &str) -> String {
    with(lines).replace(
        ".const .align 8 .b8 nowhere[16];",
        ".const .align 8 .b8 nowhere[16];\n.const .align 8 .u64 choices[4] = {generic(table), 7, generic(table), 3};",
    )
}

#[test]
fn a_tables_word_read_where_its_low_bits_allow_only_addresses_is_one() {
    let module = with_choices("");
    let choices = &declared(&module).variables["choices"];
    assert_eq!(choices.words_read(LowBits::exactly(16)), Some(vec![2]));
    let low = |known, value| LowBits { known, value, odd: OddRemainder::UNKNOWN };
    assert_eq!(choices.words_read(low(4, 8)), Some(vec![1, 3]));
    assert_eq!(choices.words_read(low(3, 0)), None, "bits that do not tell words apart");
    assert_eq!(choices.words_read(LowBits::exactly(32)), None, "past the table");
    // `choices[row & 1].at[k]`: a member's first word, 16 bytes apart.
    let pointer = "\tand.b32 \t%r2, %r1, 1;\n\tmul.wide.u32 \t%rd5, %r2, 16;\n\tmov.u64 \t%rd6, choices;\n\
                   \tadd.s64 \t%rd7, %rd6, %rd5;\n\tld.const.u64 \t%rd8, [%rd7];\n\tadd.s64 \t%rd9, %rd8, %rd2;\n\
                   \tld.u32 \t%r3, [%rd9];\n";
    assert_eq!(refused_at(&with_choices(pointer)), None);
    // Its second word, a number, or a word of either kind.
    let number = pointer.replace("[%rd7]", "[%rd7+8]");
    assert_eq!(refused_at(&with_choices(&number)).as_deref(), Some("ld.u32 %r3, [%rd9];"));
    let either = pointer.replace("16;", "8;");
    assert_eq!(refused_at(&with_choices(&either)).as_deref(), Some("ld.u32 %r3, [%rd9];"));
    // A word read at either of two tables, held inside one of them, at a word of either.
    let two = pointer.replace("\tadd.s64 \t%rd7, %rd6, %rd5;", "\tselp.b64 \t%rd7, %rd6, refs, %p1;");
    assert_eq!(refused_at(&with_choices(&two)).as_deref(), Some("ld.u32 %r3, [%rd9];"));
    // Members of 24 bytes, `{7u, table, 3u}`: the word 8 bytes into one is 2 modulo 3.
    let of_three = |lines: &str| {
        with_choices(lines).replace(
            "choices[4] = {generic(table), 7, generic(table), 3}",
            "choices[6] = {7, generic(table), 3, 7, generic(table), 3}",
        )
    };
    let middle = pointer.replace("%r2, 16;", "%r2, 24;").replace("[%rd7]", "[%rd7+8]");
    assert_eq!(of_three("").matches("choices[6]").count(), 1);
    assert_eq!(refused_at(&of_three(&middle)), None);
    assert_eq!(refused_at(&of_three(&middle.replace("[%rd7+8]", "[%rd7+16]"))).as_deref(), Some("ld.u32 %r3, [%rd9];"));
}

#[test]
fn an_address_passed_to_a_function_that_does_not_inline_is_followed_into_it() {
    // `lookup(table, i)` reads through its parameter: a table's address, from each call.
    let called = crate::calls::tests::MODULE.replace("ld.const.u32 \t%r2, [%rd4]", "ld.u32 \t%r2, [%rd4]");
    let generic = called.replace("cvta.to.const.u64 \t%rd2, %rd1;", "mov.u64 \t%rd2, %rd1;");
    assert_eq!(refused_at(&generic), None);
    // A call that leaves the pointer unwritten passes the grader's 0.
    let unwritten = generic.replacen("\tst.param.b64 \t[param0+0], %rd7;\n", "", 1);
    assert_eq!(refused_at(&unwritten).as_deref(), Some("ld.u32 %r2, [%rd4];"));
    // A function whose address the code takes may be called with any number.
    let taken = generic.replace("\tret;\n\n}\n.visible", "\tmov.u64 \t%rd4, _Z6lookupPKjj;\n\tret;\n\n}\n.visible");
    assert_eq!(refused_at(&taken).as_deref(), Some("ld.u32 %r2, [%rd4];"));
    // A pointer the function returns is followed back out of it.
    let returning = generic
        .replace("(.param .b32 func_retval0) _Z6lookupPKjj", "(.param .b64 func_retval0) _Z6lookupPKjj")
        .replace("st.param.b32 \t[func_retval0+0], %r2;", "st.param.b64 \t[func_retval0+0], %rd4;")
        .replace("ld.param.b32 \t%r3, [retval0+0];", "ld.param.b64 \t%rd5, [retval0+0];\n\tld.u32 \t%r4, [%rd5];");
    assert_eq!(refused_at(&returning), None);
    let unreturned = returning.replace("\tld.u32 \t%r2", "\t@%p1 ret;\n\tld.u32 \t%r2");
    assert_eq!(refused_at(&unreturned).as_deref(), Some("ld.u32 %r4, [%rd5];"), "0 on a path that returns early");
}

#[test]
fn a_variables_last_zero_byte_is_read_from_its_initializer() {
    let last_zero =
        |declared: &str, initializer: &str| last_zero_byte(&Variable::parse(declared).unwrap(), initializer);
    assert_eq!(last_zero(".b8 s[4]", "{97, 98, 0, 99}"), Some(2));
    assert_eq!(last_zero(".b8 s[3]", "{97, 98, 99}"), None, "a string without its 0");
    assert_eq!(last_zero(".b8 s[4]", "{97, 98}"), Some(3), "0 past the elements given");
    assert_eq!(last_zero(".b8 s[4]", ""), Some(3), "no initializer: all 0");
    assert_eq!(last_zero(".u32 t[2]", "{1, 258}"), Some(7), "the high bytes of 258");
    assert_eq!(last_zero(".u32 t[1]", "{4294967295}"), None);
    assert_eq!(last_zero(".u64 p[1]", "{generic(table)}"), None, "an address's bytes are unknown");
}
