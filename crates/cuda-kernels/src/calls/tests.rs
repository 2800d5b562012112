use super::*;

/// A helper that reads a table through its first parameter and returns the word, and a kernel that
/// calls it twice: with `kLow`'s address, then `kHigh`'s (as NVRTC compiles
/// `lookup(row < 16 ? kLow : kHigh, row % 16)`, here split in two calls).
pub(crate) const MODULE: &str = ".version 9.0\n.target sm_90\n.address_size 64\n\n\
.const .align 4 .b8 kLow[64];\n.const .align 4 .b8 kHigh[64];\n\n\
.func  (.param .b32 func_retval0) _Z6lookupPKjj(\n\t.param .b64 _Z6lookupPKjj_param_0,\n\t.param .b32 _Z6lookupPKjj_param_1\n)\n{\n\
\t.reg .b32 \t%r<3>;\n\t.reg .b64 \t%rd<5>;\n\n\
\tld.param.u64 \t%rd1, [_Z6lookupPKjj_param_0];\n\tld.param.u32 \t%r1, [_Z6lookupPKjj_param_1];\n\
\tcvta.to.const.u64 \t%rd2, %rd1;\n\tmul.wide.u32 \t%rd3, %r1, 4;\n\tadd.s64 \t%rd4, %rd2, %rd3;\n\
\tld.const.u32 \t%r2, [%rd4];\n\tst.param.b32 \t[func_retval0+0], %r2;\n\tret;\n\n}\n\
.visible .entry k(\n\t.param .u64 k_param_0\n)\n{\n\
\t.reg .b32 \t%r<9>;\n\t.reg .b64 \t%rd<9>;\n\n\
\tmov.u64 \t%rd6, kLow;\n\tcvta.const.u64 \t%rd7, %rd6;\n\
\t{ // callseq 0, 0\n\t.param .b64 param0;\n\tst.param.b64 \t[param0+0], %rd7;\n\t.param .b32 param1;\n\
\tst.param.b32 \t[param1+0], %r1;\n\t.param .b32 retval0;\n\tcall.uni (retval0), \n\t_Z6lookupPKjj, \n\t(\n\tparam0, \n\
\tparam1\n\t);\n\tld.param.b32 \t%r2, [retval0+0];\n\t} // callseq 0\n\
\tmov.u64 \t%rd1, kHigh;\n\tcvta.const.u64 \t%rd8, %rd1;\n\
\t{ // callseq 1, 0\n\t.param .b64 param0;\n\tst.param.b64 \t[param0+0], %rd8;\n\t.param .b32 param1;\n\
\tst.param.b32 \t[param1+0], %r1;\n\t.param .b32 retval0;\n\tcall.uni (retval0), \n\t_Z6lookupPKjj, \n\t(\n\tparam0, \n\
\tparam1\n\t);\n\tld.param.b32 \t%r3, [retval0+0];\n\t} // callseq 1\n\
\tret;\n\n}\n";

/// What each register of each body of `ptx` holds, by name: the names `mov` and `cvta` take (a
/// register no instruction writes holds its own name), and what a `.param` load reads of what
/// calls pass ("unknown" where nothing is known).
fn held(ptx: &str) -> Vec<BTreeMap<String, BTreeSet<String>>> {
    let module = Module::of(ptx);
    let value = |held: &BTreeMap<String, BTreeSet<String>>, operand: &str| {
        held.get(operand).cloned().unwrap_or_else(|| BTreeSet::from([operand.to_owned()]))
    };
    module.followed(
        BTreeSet::from(["unknown".to_owned()]),
        |body, passed| {
            let mut held = BTreeMap::new();
            for (statement, passing) in body.statements.iter().zip(&body.passing) {
                let found = match (statement.kind(), statement.space()) {
                    ("ld", "param") => passed.read(body.name, passing.as_ref()),
                    ("mov" | "cvta", _) => value(&held, &statement.operands[1]),
                    _ => continue,
                };
                held.insert(statement.operands[0].clone(), found);
            }
            held
        },
        value,
    )
}

fn names(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|name| (*name).to_owned()).collect()
}

#[test]
fn a_function_is_read_from_its_header() {
    let bodies = bodies(MODULE);
    assert_eq!(header(bodies[0]), Some(("_Z6lookupPKjj", vec!["_Z6lookupPKjj_param_0", "_Z6lookupPKjj_param_1"])));
    assert_eq!(header(bodies[1]), Some(("k", vec!["k_param_0"])));
    assert_eq!(header(".func _Z3onev()\n{\n\tret;\n}\n"), Some(("_Z3onev", vec![])));
    // A declaration is no definition, before a variable's initializer or another function.
    let declared = ".extern .func  (.param .b32 func_retval0) vprintf\n(\n\t.param .b64 vprintf_param_0\n)\n;\n";
    assert_eq!(header(&format!("{declared}.global .align 1 .b8 $str[2] = {{37, 0}};\n")), None);
    assert_eq!(header(&format!("{declared}.visible .entry k(\n)\n{{\n\tret;\n}}\n")), Some(("k", vec![])));
}

#[test]
fn each_param_access_plays_its_part() {
    let module = Module::of(MODULE);
    let parts = |body: usize| -> Vec<Passing> { module.bodies[body].passing.iter().flatten().cloned().collect() };
    assert_eq!(
        parts(0),
        [
            Passing::Parameter("_Z6lookupPKjj_param_0+0:8".into()),
            Passing::Parameter("_Z6lookupPKjj_param_1+0:4".into()),
            Passing::Returned((0, 4)),
        ]
    );
    let kernel = parts(1);
    let lookup = Some("_Z6lookupPKjj".to_owned());
    let argument = |call, key: &str| Passing::Argument { call, callee: lookup.clone(), key: key.into(), sure: true };
    assert_eq!(kernel[0], argument(4, "_Z6lookupPKjj_param_0+0:8"));
    assert_eq!(kernel[1], argument(4, "_Z6lookupPKjj_param_1+0:4"));
    assert_eq!(kernel[2], Passing::Result { callee: lookup.clone(), place: (0, 4) });
    assert_eq!(kernel[3], argument(10, "_Z6lookupPKjj_param_0+0:8"));
    assert!(module.follows("_Z6lookupPKjj"));
    assert!(!module.follows("k"), "a kernel is launched, not called");
}

#[test]
fn what_calls_pass_is_followed_into_the_function_and_back() {
    let [lookup, kernel] = &held(MODULE)[..] else { panic!("two bodies") };
    assert_eq!(lookup["%rd2"], names(&["kLow", "kHigh"]), "either table, from the two calls");
    assert_eq!(lookup["%r1"], names(&["%r1"]));
    assert_eq!(kernel["%r2"], names(&["%r2"]), "what the function returns");
    assert_eq!(kernel["%r3"], names(&["%r2"]));
    // A call that leaves an argument unwritten passes the grader's 0 there.
    let unwritten = MODULE.replacen("\tst.param.b32 \t[param1+0], %r1;\n", "", 1);
    assert_eq!(held(&unwritten)[0]["%r1"], names(&["%r1", "unknown"]));
    // So does a function that returns on a path without writing its result.
    let early = MODULE.replace("\tld.const.u32", "\t@%p1 ret;\n\tld.const.u32");
    assert_eq!(held(&early)[1]["%r2"], names(&["%r2", "unknown"]));
    // An argument stored under a guard, or with a label before the call, may be left unwritten.
    let guarded = MODULE.replacen("\tst.param.b64 \t[param0+0], %rd7;", "\t@%p1 st.param.b64 \t[param0+0], %rd7;", 1);
    assert_eq!(held(&guarded)[0]["%rd2"], names(&["kLow", "kHigh", "unknown"]));
    let labelled = MODULE.replacen("\t.param .b32 param1;\n", "$L__BB1_1:\n\t.param .b32 param1;\n", 1);
    assert_eq!(held(&labelled)[0]["%rd2"], names(&["kLow", "kHigh", "unknown"]));
    // A value is read back only as wide as it was stored, and not as a vector's element.
    let halves = MODULE
        .replace("\tld.param.u64 \t%rd1, [_Z6lookupPKjj_param_0];", "\tld.param.u32 \t%rd1, [_Z6lookupPKjj_param_0];");
    assert_eq!(held(&halves)[0]["%rd2"], names(&["unknown"]));
    let vector = MODULE.replace(
        "\tld.param.u64 \t%rd1, [_Z6lookupPKjj_param_0];",
        "\tld.param.v2.u64 \t{%rd1, %rd3}, [_Z6lookupPKjj_param_0];",
    );
    assert_eq!(Module::of(&vector).bodies[0].passing[0], None);
    // A result read as wide as it was written only: as a pair of halves, it is unknown.
    let halves = MODULE.replace(
        "\tst.param.b32 \t[func_retval0+0], %r2;",
        "\tst.param.v2.b16 \t[func_retval0+0], {%rs1, %rs2};\n\tst.param.b32 \t[func_retval0+4], %r2;",
    );
    assert_eq!(held(&halves)[1]["%r2"], names(&["unknown"]));
    // A function whose address the code takes may be called with anything.
    let taken = MODULE.replace("\tret;\n\n}\n.visible", "\tmov.u64 \t%rd4, _Z6lookupPKjj;\n\tret;\n\n}\n.visible");
    assert!(!Module::of(&taken).follows("_Z6lookupPKjj"));
    assert_eq!(held(&taken)[0]["%rd2"], names(&["unknown"]));
    // A call through a register returns what nothing knows.
    let through = MODULE.replacen("\t_Z6lookupPKjj, \n", "\t%rd5, \n", 1);
    assert_eq!(held(&through)[1]["%r2"], names(&["unknown"]));
    assert_eq!(held(&through)[0]["%rd2"], names(&["kHigh"]), "only the direct call passes to it");
}

#[test]
fn a_value_going_round_a_cycle_of_calls_holds_only_what_enters_it() {
    // `f(p)` calls `g(p)`, which calls `f(p)`; the kernel calls `f(table)`.
    let passing_on = |name: &str, to: &str| {
        format!(
            ".func {name}(\n\t.param .b64 {name}_param_0\n)\n{{\n\t.reg .b64 \t%rd<2>;\n\tld.param.u64 \t%rd1, \
             [{name}_param_0];\n\t{{\n\t.param .b64 param0;\n\tst.param.b64 \t[param0+0], %rd1;\n\tcall.uni \
             {to}, (param0);\n\t}}\n\tret;\n}}\n"
        )
    };
    let kernel = ".visible .entry k(\n)\n{\n\t.reg .b64 \t%rd<2>;\n\tmov.u64 \t%rd1, table;\n\t{\n\t.param .b64 param0;\n\t\
                  st.param.b64 \t[param0+0], %rd1;\n\tcall.uni f, (param0);\n\t}\n\tret;\n}\n";
    let module = format!(".global .align 4 .b8 table[16];\n{}{}{kernel}", passing_on("f", "g"), passing_on("g", "f"));
    let held = held(&module);
    let functions: Vec<&BTreeMap<String, BTreeSet<String>>> = held.iter().filter(|h| h.contains_key("%rd1")).collect();
    assert_eq!(functions.len(), 3);
    for registers in functions {
        assert_eq!(registers["%rd1"], names(&["table"]));
    }
}
