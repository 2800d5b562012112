use super::lasting::lasting_variable;
use super::*;
use crate::manifest::{Harness, Input};

const STARTER: &str = "// top\n#define N 32\n// ---- EDIT BELOW ----\nint f() { return 0; }\n// ---- EDIT ABOVE ----\nextern \"C\" __global__ void k(unsigned* out, unsigned n) {\n    out[0] = f();\n}\n";

fn exercise() -> Exercise {
    Exercise {
        id: "x".into(),
        lesson: 1,
        title: "t".into(),
        task: "do".into(),
        starter: "a.cu".into(),
        solution: "b.cu".into(),
        entry: "k".into(),
        signature: "unsigned* out, unsigned n".into(),
        harness: Harness::Transpose { block: [32, 8], check_n: 64, timed_n: 64 },
        inputs: vec![Input::Index],
        tolerance: 0.0,
        correct_points: 100,
        fallback_time_vs_reference: 1.5,
        hints: vec![],
        requirements: vec![],
        within: None,
    }
}

fn check(text: &str) -> Result<LearnerFile, Invalid> {
    validate(&exercise(), STARTER, text.as_bytes())
}

#[test]
fn the_starter_and_edits_inside_the_region_pass() {
    let file = check(STARTER).unwrap();
    assert_eq!(file.region, (4, 4));
    assert_eq!(file.region_text(), "int f() { return 0; }");
    let edited = STARTER.replace("int f() { return 0; }", "// mine\nint f() {\n    return 1;\n}");
    let file = check(&edited).unwrap();
    assert_eq!(file.region, (4, 7));
    let windows = edited.replace('\n', "  \r\n") + "\r\n\r\n";
    assert_eq!(check(&windows).unwrap().region, (4, 7), "line endings and trailing blanks are not changes");
    // Functions whose declarations read unlike a plain one's: no variable is kept.
    for part in [
        "__device__ decltype(auto) f() { return 0; }",
        "template <unsigned K> __device__ int swz(unsigned x) { return x ^ K; }\n\
         template <> __device__ int swz<32u>(unsigned x) { return x; }\nint f() { return swz<32u>(0); }",
        "template <class T> __device__ int g(T v);\ntemplate <> __device__ int g<uint3>(uint3 v) { return v.x; }\n\
         int f() { return g(uint3{}); }",
        "template <unsigned K> __device__ unsigned mask();\n\
         template <> __device__ unsigned mask<32u>() { return 31u; }\nint f() { return mask<32u>(); }",
        "__device__ unsigned code_of(char16_t), wide(wchar_t);\nint f() { return 0; }",
        "__constant__ const unsigned lut[2] = {1u, 0u};\nstatic __constant__ constexpr unsigned other = 1;\n\
         int f() { return lut[0] + other; }",
        "__device__ unsigned bias(unsigned b = 0u);\nint f() { return 0; }",
        "template <typename U> __device__ U same(U);\nint f() { return 0; }",
        "__device__ unsigned pick(unsigned v, const unsigned*) { return v; }\n__device__ void put(unsigned&);\n\
         int f() { return 0; }",
        "static_assert(sizeof(void*) == 8, \"64-bit\");\nint f() { return 0; }",
        "int f() { const unsigned row = 1; const decltype(row * 2u) c = row & 1u;\n\
         static_assert(sizeof(decltype(row)) == 4, \"words\"); return c; }",
        "__device__ unsigned g(unsigned x) { return x; }\n__device__ unsigned g(int) = delete;\nint f() { return 0; }",
        "int f() { const unsigned global = 1, free = 2; return global + free; }",
        "int f() { assert(1 < 2 && \"in order\"); if (2 < 1) assert(!\"unreachable\"); return 0; }",
        "int f() { unsigned k = 3; printf(\"%s %u\\n\", k % 2u == 1 ? \"odd\" : \"even\", k); return 0; }",
        // A debugging print left in, by block: it changes no value.
        "int f() { unsigned k = 3;\n if (blockIdx.x == 0 && threadIdx.x == 0) printf(\"size %zu\\n\", sizeof(k));\n\
         if (blockIdx.x == gridDim.x - 1) { printf(\"last\\n\"); printf(\"%u %u\", blockIdx.x, (unsigned)sizeof k); }\n\
         printf(\"block %u\\n\", blockIdx.y);\n\
         if (blockIdx.x == 0) printf(\"%u %u\", static_cast<unsigned>(sizeof(k)), unsigned(sizeof k * 33u)); return k; }",
        // A print's choice of words, its conversions, and a printing `if` as a loop's or a case's body.
        "int f() {\n if (blockIdx.x == 0 && threadIdx.x == 0) printf(\"%s %d %u\\n\", N % 2 ? \"odd\" : \"even\", \
         static_cast<int>(N), unsigned(N * N));\n\
         for (int i = 0; i < 1; ++i) if (blockIdx.x == 0) printf(\"x\");\n\
         switch (threadIdx.x) { case 0: if (blockIdx.x == 0) printf(\"y\"); break; }\n return 0; }",
        // The starter's numbers (`N`) and their arithmetic, a condition with bit operators, an `if`
        // in a printing `if`.
        "int f() {\n if ((blockIdx.x | threadIdx.x) == 0) { if (threadIdx.y == 0) printf(\"%u %u\\n\", N, (N * N) >> 1); }\n\
         if (blockIdx.x == 0) printf(\"%u\\n\", (unsigned)(blockIdx.y * N + 1u)); return 0; }",
        "int f() { unsigned k = 3; const char* parity = k % 2u ? \"odd\" : \"even\"; printf(\"%s\", parity); return 0; }",
        "int f() { const unsigned t[2] = {1, 2}; unsigned k = 1, m = 4; return t[k] - t[0] - k + m * m - m; }",
        "__device__ unsigned dec(unsigned& c) { return c - 1u; }\n__device__ unsigned neg(const unsigned& x) { return -x; }\n\
         int f() { unsigned v = 2; return dec(v) + neg(v); }",
        "__device__ unsigned last(const unsigned* p, const unsigned* end) { return *(end - 1) - *p - 1u; }\n\
         int f() { const unsigned t[2] = {1, 2}; return last(t, t + 2) + sizeof t / sizeof *t - 1; }",
        "int f() { unsigned r = 5, m = 3; const unsigned base = (r % 4) * m; unsigned b = (r >> 1) & m; return base + b - 1u; }",
        "struct W { unsigned v; __device__ W& operator+=(W o) { v += o.v; return *this; }\n\
         __device__ W operator+(W o) const { W r = *this; r += o; return r; }\n\
         __device__ bool operator==(W o) const { return v == o.v; }\n\
         __device__ bool operator!=(W o) const { return !(*this == o); }\n\
         __device__ unsigned gap(W o) const { return o.v - this->v; } };\nint f() { return (W{1} + W{2}).v; }",
        "struct S { unsigned v; __device__ unsigned get() const { return this->v; } };\nint f() { return S{1}.get(); }",
        "int f() { char const* const name = \"f\"; printf(\"%s\", name); return 0; }",
        "int f() { for (int i = 0; i < 2; ++i) printf(\"%d\", i); while (false) printf(\"x\");\n\
         do printf(\"y\"); while (false); switch (N) { case 32: printf(\"z\"); break; } if (N) printf(\"a\"); else printf(\"b\");\n\
         return 0; }",
        "int f() { const unsigned t[2] = {1, 2}; printf(\"%p %p\", (void*)t, (const void*)t); return 0; }",
        "template <typename U> __device__ auto same(U v) -> U { return v; }\nint f() { return same(0); }",
        "[[deprecated(\"use f\")]] __device__ unsigned old_f() { return 0; }\nint f() { return 0; }",
        "#pragma nv_diag_suppress 177\nint f() { return 0; }\n#pragma nv_diag_default 177",
        "__device__ unsigned twice(unsigned), thrice(unsigned x);\n\
         __device__ unsigned twice(unsigned x) { return 2 * x; }\nint f() { return twice(1); }",
        "__device__ unsigned around(uint3 v) { return v.x; }\nint f() { return around(uint3{}); }",
        "__device__ auto (load)(unsigned i) -> unsigned { return i; }\nint f() { return load(1); }",
        "__device__ unsigned __rot(unsigned x, unsigned r);\n\
         __device__ unsigned __rot(unsigned x, unsigned r) { return x >> r | x << (32u - r); }\nint f() { return __rot(1, 1); }",
        // `auto` from numbers (an element, a value read, a size), a group of numbers made 64-bit.
        "int f() { return __builtin_popcount(5u) + int(__builtin_expect(1, 1)); }",
        "int f() { unsigned t[2] = {1, 2}; const unsigned* p = t; auto s = t[0]; auto v = *p;\n\
         auto n = sizeof(t) / sizeof(t[0]); unsigned row = 1;\n\
         return s < 3u && v - s < n ? int((size_t)(row * 2u + 1u) + (long long)-1 + (unsigned long long)N) : 0; }",
        // What compares or widens no address: a size measured, what a call returns, a template's
        // value against a number, a number of the part's made 64-bit.
        "int f() { const unsigned t[4] = {1, 2, 3, 4}; static_assert(sizeof(t) <= 16u, \"small\");\n\
         unsigned s = 0; for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); ++i) s += t[i]; return s; }",
        "__device__ unsigned get(const unsigned* t, unsigned i) { return t[i]; }\n\
         template <typename T> __device__ bool positive(T v) { return v > 0; }\n\
         int f() { const unsigned t[2] = {1, 2}; unsigned row = 1; printf(\"%llu\", (unsigned long long)row);\n\
         return get(t, 1) < 16u && positive(row) ? int(size_t(row) * 2) : 0; }",
        // `const` numbers and tables are constants, as `constexpr` ones are.
        "static const unsigned mask = 31u;\n__device__ const unsigned lut[2] = {1u, 0u};\n\
         int f() { static const unsigned k = 1; return k + mask + lut[0]; }",
        "struct Coord { unsigned r; };\n__device__ unsigned of(const Coord& c);\n\
         __device__ unsigned of(const Coord& c) { return c.r; }\nint f() { return of(Coord{}); }",
        "struct Coord { unsigned r; };\nusing Index = unsigned;\n__device__ unsigned of(Coord), at(Index);\n\
         __device__ unsigned of(Coord c) { return c.r; }\nint f() { return of(Coord{}); }",
    ] {
        let checked = check(&STARTER.replace("int f() { return 0; }", part));
        assert!(checked.is_ok(), "{part}: {checked:?}");
    }
}

#[test]
fn a_part_in_a_kernel_declares_its_tile_and_leaves_its_use_to_the_code_after() {
    let starter = "extern \"C\" __global__ void k(unsigned* out, unsigned n) {\n// ---- EDIT BELOW ----\n\
                   __shared__ unsigned tile[32][32];\n// ---- EDIT ABOVE ----\n    tile[threadIdx.x][0] = n;\n\
                   __syncthreads();\n    out[threadIdx.x] = tile[0][threadIdx.x];\n}\n";
    let part = "__shared__ unsigned tile[32][32];";
    let with = |mine: &str| validate(&exercise(), starter, starter.replace(part, mine).as_bytes());
    for honest in [
        "__shared__ unsigned tile[32][33];",
        "static __shared__ unsigned tile[32][32 + (1)];",
        "__shared__ static volatile unsigned tile[32][33];",
        "__shared__ __align__(16) unsigned tile[32][33];",
        "typedef unsigned word;\n__shared__ word tile[32][33];",
        "constexpr unsigned PAD = 1;\n__shared__ unsigned tile[32][32 + PAD];\nstatic_assert(sizeof(tile) == 32 * 33 * 4, \"33 words a row\");",
        "__shared__ unsigned tile[32][33];\n__syncthreads();",
    ] {
        assert!(with(honest).is_ok(), "{honest}: {:?}", with(honest));
    }
    for (attack, expected) in [
        ("__shared__ unsigned tile[32][33], (stash)[32];", "shared memory that only your part reads"),
        ("__shared__ unsigned tile[32][33], stash[32];", "shared memory that only your part reads"),
        (
            "__shared__ unsigned tile[32][33];\n__shared__ volatile unsigned i __attribute__((unused));",
            "only your part reads",
        ),
        ("__shared__ unsigned (tile)[32][33];", "shared memory that only your part reads"),
        ("extern __shared__ unsigned tile[];", "the grader's launches give none"),
        ("__shared__ unsigned tile[32][33] = {};", "a `__shared__` variable takes no initializer"),
        ("__shared__ decltype(0u) tile[32][33];", "declares the tile with its element type written in a way"),
        ("__shared__ __typeof__(0u) tile[32][33];", "declares the tile with its element type written in a way"),
        ("__shared__ unsigned tile[32][33], stash[4] = {};", "shared memory that only your part reads"),
        ("__shared__ unsigned tile[32][33];\nunsigned seen = tile[0][32];", "your part uses `tile`"),
        ("__shared__ unsigned tile[32][33];\nunsigned* flat = &tile[0][0];", "your part uses `tile`"),
        ("__shared__ unsigned tile[32][33];\nif (threadIdx.x < 16) __syncthreads();", "`__syncthreads` is a barrier"),
        ("__shared__ unsigned tile[32][33];\n{ __syncthreads(); }", "`__syncthreads` is a barrier"),
        ("__shared__ unsigned tile[32][33];\nbool all = __syncthreads_and(1);", "`__syncthreads_and` is a barrier"),
    ] {
        let refused = with(attack);
        assert!(
            matches!(&refused, Err(Invalid::Region { problem, .. }) if problem.contains(expected)),
            "{attack}: {refused:?}"
        );
    }
}

#[test]
fn shared_memory_lasts_one_block_static_or_not() {
    let lasting = |code: &str| lasting_variable(&tokens::tokenize(code, 1).unwrap()).map(|l| l.keyword.text.clone());
    for shared in [
        "static __shared__ unsigned tile[32][33];",
        "__shared__ static unsigned tile[32][33];",
        "__device__ __shared__ unsigned tile[4];",
        "void k() { static __shared__ unsigned char tile[32][132]; }",
    ] {
        assert_eq!(lasting(shared), None, "{shared}");
    }
    assert_eq!(lasting("static unsigned seen[4];").as_deref(), Some("static"));
    assert_eq!(lasting("__shared__ unsigned t[4]; static unsigned seen;").as_deref(), Some("static"));
}

#[test]
fn each_problem_is_named_with_its_fix() {
    assert_eq!(check(" \n").unwrap_err(), Invalid::Empty);
    assert_eq!(check("%PDF-1.4\0binary").unwrap_err(), Invalid::NotText);
    assert_eq!(validate(&exercise(), STARTER, &[0xff, 0xfe, 0x41]).unwrap_err(), Invalid::NotText);
    assert_eq!(check("import numpy as np\nprint(np.zeros(3))\n").unwrap_err(), Invalid::NotCuda);
    assert_eq!(check(&"x".repeat(MAX_FILE_BYTES + 1)).unwrap_err(), Invalid::TooLarge(MAX_FILE_BYTES + 1));

    let renamed = check(&STARTER.replace("void k(", "void my_kernel(")).unwrap_err();
    assert_eq!(
        renamed.to_string(),
        "there is no kernel `k` (it defines `my_kernel`); keep the starter's `extern \"C\" __global__ void k(unsigned* out, unsigned n)`"
    );
    let retyped = check(&STARTER.replace("unsigned n)", "int n)")).unwrap_err();
    assert_eq!(
        retyped.to_string(),
        "kernel `k` takes (unsigned* out, int n); it must take (unsigned* out, unsigned n) as in the starter"
    );
    let respaced = check(&STARTER.replace("unsigned* out,", "unsigned*   out,\n   "));
    assert!(respaced.is_ok(), "the same tokens laid out otherwise: {respaced:?}");

    assert_eq!(check(&STARTER.replace("// ---- EDIT ABOVE ----\n", "")).unwrap_err(), Invalid::Markers);
    let twice = STARTER.replace("// top\n", "// top\n// ---- EDIT BELOW ----\n");
    assert_eq!(check(&twice).unwrap_err(), Invalid::Markers);
    let swapped = STARTER.replace("EDIT BELOW", "TMP").replace("EDIT ABOVE", "EDIT BELOW").replace("TMP", "EDIT ABOVE");
    assert_eq!(check(&swapped).unwrap_err(), Invalid::Markers);

    let outside = check(&STARTER.replace("out[0] = f();", "out[0] = f() + 1;")).unwrap_err();
    assert_eq!(
        outside.to_string(),
        "line 7 is outside the editable part and differs from the starter (at `+`):\n  yours:   out[0] = f() + 1;\n  starter: out[0] = f();\n\
         Only the lines between the markers may change: restore that line from the starter"
    );
    let above = check(&STARTER.replace("#define N 32\n", "#define N 64\n")).unwrap_err();
    assert!(matches!(above, Invalid::ChangedOutside { line: 2, .. }), "{above}");
    let added = check(&format!("{STARTER}int extra;\n")).unwrap_err();
    assert!(matches!(added, Invalid::ChangedOutside { line: 9, ref starter, .. } if starter == "(no line)"), "{added}");
}

#[test]
fn what_editors_do_outside_the_region_is_no_change() {
    let bom = format!("\u{feff}{STARTER}");
    let crlf = STARTER.replace('\n', "\r\n");
    let tabs = STARTER.replace("    out[0]", "\t\tout[0]").replace("// top", "// top   ");
    let reindented_marker = STARTER.replace("// ---- EDIT ABOVE ----", "        // ---- EDIT ABOVE ----");
    let commented = STARTER.replace("out[0] = f();", "out[0] = f(); // the answer");
    // A long string broken in two by a formatter is the same string.
    let split = STARTER.replace("extern \"C\"", "extern \"\"\n    \"C\"");
    for text in [bom, crlf, tabs, reindented_marker, commented, split] {
        assert_eq!(check(&text).map(|f| f.region), Ok((4, 4)), "{text:?}");
    }
    let changed = STARTER.replace("extern \"C\"", "extern \"C\" \"\" \"x\"");
    assert!(matches!(check(&changed), Err(Invalid::ChangedOutside { .. })), "a string that changed");
    // Windows editors' "Unicode": UTF-16 with its byte-order mark, CRLF line ends.
    let unicode: Vec<u8> = [0xff, 0xfe]
        .into_iter()
        .chain(STARTER.replace('\n', "\r\n").encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    assert_eq!(validate(&exercise(), STARTER, &unicode).map(|f| f.text), Ok(STARTER.to_owned()));
    let mut latin1 = STARTER.replace("int f()", "// caf\u{e9}\nint f()").into_bytes();
    let at = latin1.windows(2).position(|w| w == "\u{e9}".as_bytes()).unwrap();
    latin1.splice(at..at + 2, [0xe9]);
    let file = validate(&exercise(), STARTER, &latin1).unwrap();
    assert!(file.text.contains("// caf\u{e9}\n"), "Latin-1 read as Latin-1: {:?}", file.text);
    assert!(!check(&format!("\u{feff}{STARTER}")).unwrap().text.starts_with('\u{feff}'), "what is compiled has no BOM");
}

#[test]
fn a_difference_that_cannot_be_seen_is_shown() {
    let nbsp = check(&STARTER.replace("out[0] = f();", "out[0] = f\u{200b}();")).unwrap_err();
    let Invalid::ChangedOutside { yours, starter, .. } = &nbsp else { panic!("{nbsp:?}") };
    assert_eq!((yours.as_str(), starter.as_str()), ("out[0] = f\\u{200b}();", "out[0] = f();"));
    assert_eq!(visible("\tx\u{a0}=\t1;"), "x\\u{00a0}=\\t1;");
}

fn region_error(region: &str) -> (usize, String) {
    match check(&STARTER.replace("int f() { return 0; }", region)) {
        Err(Invalid::Region { line, problem }) => (line, problem),
        other => panic!("{region:?} gave {other:?}"),
    }
}

#[test]
fn a_part_holds_a_bounded_number_of_tokens_each_of_bounded_length() {
    let at_most = format!("int f() {{ return 0{}; }}", " + 1".repeat((MAX_PART_TOKENS - 10) / 2));
    assert!(check(&STARTER.replace("int f() { return 0; }", &at_most)).is_ok());
    let (_, problem) = region_error(&format!("int f() {{ return 0{}; }}", " + 1".repeat(MAX_PART_TOKENS / 2)));
    assert!(problem.starts_with("your part has 10009 tokens, more than the 10000"), "{problem}");
    let name = "n".repeat(MAX_TOKEN_CHARS);
    assert!(check(&STARTER.replace("int f() { return 0; }", &format!("int {name}() {{ return 0; }}"))).is_ok());
    let (_, problem) = region_error(&format!("int {name}x() {{ return 0; }}"));
    assert!(problem.starts_with("a name, number or literal of 1025 characters"), "{problem}");
}

#[test]
fn an_old_version_under_if_0_is_no_code_for_the_checks_or_the_compiler() {
    // What the preprocessor skips with the group, its directives too, is not in the text compiled.
    let kept = "#if 0\n#define TILE_WORDS 1\n#pragma unroll\n#include \"/etc/passwd\"\n#if 1\n#else\n#endif\n#endif\n\
                int f() { return 0; }";
    let file = check(&STARTER.replace("int f() { return 0; }", kept)).unwrap();
    assert!(!file.text.contains("passwd") && !file.text.contains("TILE_WORDS"), "{}", file.text);
    let old = "#if 0 // the first try\nint f() { return 1; } }\n#endif\nint f() { return 0; }\n#if 0\n/* } */ int g();\n#endif";
    let file = check(&STARTER.replace("int f() { return 0; }", old)).unwrap();
    assert_eq!(file.region, (4, 10));
    assert_eq!(file.region_text(), "\n\n\nint f() { return 0; }\n\n\n", "the groups' lines, emptied");
    assert_eq!(file.text.lines().count(), STARTER.lines().count() + 6, "every line keeps its number");
    assert!(file.text.ends_with("}\n"));
    // `#if false`, `#if (0)` say the same; `#if 0 + 1` or `#if (0) || (1)` does not.
    for never in ["false", "(0)", "((false))"] {
        let old = format!("#if {never}\nint f() {{ return 1; }} }}\n#endif\nint f() {{ return 0; }}");
        assert!(check(&STARTER.replace("int f() { return 0; }", &old)).is_ok(), "{never}");
    }
    for maybe in ["0 + 1", "(0) || (1)", "false || true"] {
        let old = format!("#if {maybe}\nint g();\n#endif\nint f() {{ return 0; }}");
        let refused = check(&STARTER.replace("int f() { return 0; }", &old));
        assert!(matches!(&refused, Err(Invalid::Region { problem, .. }) if problem.contains("`#if`")), "{maybe}");
    }
    // An old note's unclosed quote inside a group is emptied with it (the text compiled is the
    // emptied one); one outside every group is still refused.
    let quote = STARTER.replace("int f() { return 0; }", "#if 0\nit's\n\"so\n#endif\nint f() { return 0; }");
    assert_eq!(check(&quote).map(|file| file.region_text()), Ok("\n\n\n\nint f() { return 0; }".to_owned()));
    for outside_the_group in
        ["#if 0\n#endif\nit's\nint f() { return 0; }", "#if 0\nit's\n#else\n#endif\nint f() { return 0; }"]
    {
        let quote = STARTER.replace("int f() { return 0; }", outside_the_group);
        assert!(
            matches!(check(&quote), Err(Invalid::Region { problem, .. }) if problem.contains("literal is not closed")),
            "{outside_the_group}"
        );
    }
    // Outside the region, `#if 0` is the starter's text or a change to it.
    let outside = STARTER.replace("// top\n", "#if 0\n#endif\n");
    assert!(matches!(check(&outside), Err(Invalid::ChangedOutside { .. })));
}

#[test]
fn the_region_cannot_reach_beyond_itself() {
    for (region, expected) in [
        ("}\nint g() {", "`}` closes a `{` opened outside your part"),
        ("int f() { return (0; }", "`}` closes the `(` of line 4"),
        ("int f() {", "this `{` is not closed within your part"),
        ("/* int f() { return 0; }", "a `/*` comment is not closed"),
        ("int f() { return 0; } \\", "joins it to `// ---- EDIT ABOVE ----`"),
        ("#include \"/etc/passwd\"", "only the course's headers may be included"),
        ("#include \"../kernels/shared_load.cuh\"", "only the course's headers"),
        ("#include </dev/zero>", "`#include </dev/zero>`"),
        ("#define P \"/etc/passwd\"\n#include P", "`#include P`"),
        ("%:include \"/etc/passwd\"", "only the course's headers"),
        ("#\\\ninclude \"/etc/passwd\"", "only the course's headers"),
        ("# /* x */ include \"/etc/passwd\"", "only the course's headers"),
        ("\u{a0}#include \"/etc/passwd\"", "only the course's headers"),
        ("??=include \"/etc/passwd\"", "`??=` is a trigraph"),
        ("#define unsigned int", "`#define unsigned` changes a word of C++"),
        ("#define f g\nint g() { return 0; }", "`#define f` changes a name"),
        ("#undef N", "`#undef N` changes a name"),
        ("#define load(a, b) 0\n#include \"shared_load.cuh\"", "`#define load` changes a name"),
        ("#if 0", "`#if` is not accepted in your part"),
        ("#endif", "`#endif` is not accepted in your part"),
        ("#if 1\nint f() { return 0; }\n#endif", "`#if` is not accepted in your part"),
        ("#if 0\nint g();\n#else\nint f() { return 0; }\n#endif", "`#if` is not accepted in your part"),
        (
            "#if 0\nint g();\n#else\n#include \"/etc/passwd\"\n#endif\nint f() { return 0; }",
            "`#if` is not accepted in your part",
        ),
        ("#if 0\n#if 0\n#endif\nint f() { return 0; }", "`#if` is not accepted in your part"),
        ("#if 0\n#elif 1\nint f() { return 0; }\n#endif", "`#if` is not accepted in your part"),
        ("#if 0\n{\n#endif\n}\nint f() { return 0; }", "`}` closes a `{` opened outside your part"),
        ("#define struct", "`#define struct` changes a word of C++"),
        ("#define if", "`#define if` changes a word of C++"),
        ("#line 1 \"/etc/passwd\"", "`#line` changes"),
        ("#include_next <x>", "`#include_next` is not accepted"),
        ("static_assert(__has_include(\"/etc/passwd\"), \"\");", "`__has_include` asks about files"),
        ("const char* s = R\"(x)\";", "raw string literals"),
        ("int f\u{200b}() { return 0; }", "U+200B"),
        ("__global__ void k2() {}", "may not define a kernel"),
        ("int f() { asm(\"exit;\"); return 0; }", "inline assembly"),
        ("int f() { __syncthreads(); return 0; }", "`__syncthreads` is a barrier"),
        ("int f() { return __pm0(); }", "`__pm0` reads or signals the multiprocessor's performance monitors"),
        ("int f() { return __prof_trigger(1), 0; }", "`__prof_trigger` reads or signals"),
        ("#pragma pack(1)\nint f() { return 0; }", "`#pragma pack` would go on changing how the code after"),
        ("struct __attribute__((packed)) P { char c; const int* p; };", "`packed` lays a struct's members out"),
        ("constexpr char kName[] = \"xor\";", "write a `char` table's characters in braces"),
        ("struct __attribute__((__packed__)) P { char c; const int* p; };", "`__packed__` lays a struct's"),
        ("struct [[gnu::packed]] P { char c; const int* p; };", "`packed` lays a struct's members out"),
        ("#define PACKED _Pragma(\"pack(1)\")\nint f() { return 0; }", "`#pragma pack` would go on"),
        ("_Pragma(\"GCC optimize(\\\"O0\\\")\") int f() { return 0; }", "`#pragma GCC` would go on"),
        ("#define DO(x) _Pragma(#x)\nDO(pack(1))\nint f() { return 0; }", "`_Pragma` here takes a string that a macro"),
        ("#define STR(x) #x\n_Pragma(STR(pack(1)))\nint f() { return 0; }", "`_Pragma` here takes a string"),
        (
            "int f() { int x = 0; _Pragma(\"unroll (__TIME__[7] - '0' + 1)\") for (int i = 0; i < 9; ++i) x += i; return x; }",
            "`__TIME__` takes its value from where it is used",
        ),
        ("int f() { return syncthreads_or(1); }", "`syncthreads_or` is a barrier"),
        ("#define bcm_part_f f\nint f() { return 0; }", "names beginning with `bcm_` are the grader's"),
        ("#define __forceinline__ __noinline__\nint f() { return 0; }", "`#define __forceinline__`: names beginning"),
        (
            "#define _Tile 32\nint f() { return _Tile; }",
            "`#define _Tile`: names beginning with `__`, or `_` and a capital",
        ),
        (
            "template <int n> struct mark { friend __device__ constexpr bool seen(mark<n>); };",
            "`friend` declares a friend",
        ),
        ("__device__ unsigned f() { volatile unsigned kept[4]; return kept[1]; }", "`volatile` keeps reads"),
        ("#define WAIT __syncwarp\nint f() { WAIT(); return 0; }", "`__syncwarp` is a barrier"),
        ("int f() { return __barrier_sync_count(1, 64), 0; }", "`__barrier_sync_count` is a barrier"),
        ("int f() { __nvvm_bar_sync_all(0); return 0; }", "`__nvvm_bar_sync_all` is one of"),
        (
            "int f() { float c[8] = {}; __hmma_m16n16k16_st_c_f32(nullptr, c, 8u, 0); return 0; }",
            "`__hmma_m16n16k16_st_c_f32` is one of the compiler's tensor-core matrix loads and stores",
        ),
        ("int f() { int c[2] = {}; __imma_m8n8k32_st_c_i32(nullptr, c, 0u, 0); return 0; }", "`__imma_m8n8k32_st"),
        ("int f() { float d[8]; __mma_tf32_m16n16k8_ld_c(d, nullptr, 8u, 0); return 0; }", "`__mma_tf32_m16n16k8"),
        ("int f() { return __cudaGet_blockIdx().x; }", "`__cudaGet_blockIdx` is a macro of NVRTC's own headers"),
        ("#define B __cudaGet_gridDim\nint f() { return 0; }", "`__cudaGet_gridDim` is a macro of NVRTC's"),
        ("int f() { auto (__pragma) = [](unsigned v) { return v; }; return __pragma(1); }", "`__pragma` is MSVC's"),
        ("int f() { __declspec(1); return 0; }", "`__declspec` is MSVC's"),
        (
            "__device__ __no_return__ void stop() { while (true) {} }\nint f() { return 0; }",
            "`__no_return__` is a macro of NVRTC's own headers",
        ),
        ("int f() { __specialization_static unsigned n = 0; return n; }", "`__specialization_static` is a macro"),
        ("int f() { return __NV_ATOMIC_ADDRESSOF(f) != 0; }", "`__NV_ATOMIC_ADDRESSOF` is a macro"),
        (
            "#include \"shared_load.cuh\"\nint f() { unsigned probe[1] = {}; return load(probe, 5u); }",
            "`load` of shared_load.cuh reaches shared memory through any pointer",
        ),
        ("int f() { unsigned p[1] = {}; return __isShared(p); }", "`__isShared` asks which memory"),
        ("int f() { return clock64() > 5 ? 1 : 0; }", "`clock64` reads the time"),
        ("#define NOW clock()\nint f() { return NOW > 5 ? 1 : 0; }", "`clock` reads the time"),
        (
            "#include \"tensor_core.cuh\"\nint f() { unsigned r[4] = {}; stmatrix_x4(0u, r); return 0; }",
            "`stmatrix_x4` reaches shared memory at an address given as a number",
        ),
        (
            "#define AT shared_address\nunsigned f(const void* p) { return AT(p); }",
            "`shared_address` makes a shared-memory address a number",
        ),
        ("#define \\u005f_syncthreads() (void)0", "universal character name"),
        ("int f() { return N\\U00000030; }", "write names in ASCII"),
        ("#define CAT(a, b) a##b\nint f() { CAT(re, turn) 0; }", "`##` pastes tokens"),
        ("#define CAT(a, b) a %:%: b", "`##` pastes tokens"),
        ("int f() { return 0; }\nstatic", "ends with `static`, which runs on"),
        ("int f() { return 0; }\n#define X 1\n__launch_bounds__(32)", "ends with `)`"),
        ("int x = 1,", "ends with `,`"),
        ("int f() { return 0; }\n#pragma unroll 1", "`#pragma` after the last of your code"),
        ("#define OPEN_ [\n#define CLOSE_ ]", "`#define OPEN_` opens a `[` it does not close"),
        ("#define O_ {\n#define C_ }", "`#define O_` holds `{`"),
        ("#define SKIP(n) n; return", "holds `;`"),
        (
            "#define SKIP(n) n;\nint f() { return 0; }",
            "holds `;`, so it stands for statements: a macro in your part may stand only for an expression or a type, which cannot reach beyond where it is used; remove the `;` at its end",
        ),
        ("#define PAIR(n) n; n;\nint f() { return 0; }", "write a `__device__` function"),
        ("#define N2 (N + 1))", "closes a `(` it does not open"),
        ("#include \"probe.cuh\"", "its macro `PROBE_KERNEL` holds `__global__`"),
        ("#define shared", "`#define shared` changes a name"),
        ("#define Z (;;)\nint f() { for Z break; return 0; }", "`#define Z` holds `;`"),
        ("int f() { __builtin_unreachable(); return 0; }", "`__builtin_unreachable` tells the compiler"),
        ("int f() { __builtin_assume(N == 1); return 0; }", "`__builtin_assume` tells the compiler"),
        ("[[noreturn]] int g();\nint f() { return 0; }", "`noreturn` tells the compiler"),
        ("int g() __attribute__((__noreturn__));\nint f() { return 0; }", "`__noreturn__` tells the compiler"),
        ("int f() { return 0; } /*\n*/ #include \"/etc/passwd\"", "only the course's headers may be included"),
        ("int f() { return 0; } # define X 1", "a `#` that does not begin its line"),
        ("__device__ unsigned seen;\nint f() { return 0; }", "`__device__` here keeps a variable"),
        ("__device__ const unsigned* seen = nullptr;\nint f() { return 0; }", "`__device__` here keeps a variable"),
        ("int f() { static const volatile unsigned k = 1; return k; }", "`static` here keeps a variable"),
        ("__managed__ const unsigned seen = 0;\nint f() { return 0; }", "`__managed__` here keeps a variable"),
        ("__device__ unsigned __seen(5);\nint f() { return __seen; }", "`__device__` here keeps a variable"),
        ("int f() { volatile __shared__ unsigned left; return left; }", "`__shared__` here declares"),
        ("__shared__ unsigned left[2];\nint f() { return left[1]; }", "`__shared__` here declares"),
        (
            "extern __shared__ unsigned left[];\nint f() { return left[0]; }",
            "`extern __shared__` declares shared memory of the size a launch gives",
        ),
        ("#define KEPT __shared__\nint f() { KEPT unsigned left; return left; }", "`__shared__` here declares"),
        ("int f() { unsigned* p = new unsigned; return *p; }", "memory from the device's heap"),
        ("int f(const unsigned* a) { unsigned* b; memcpy(&b, &a, 8); return *b; }", "copying bytes"),
        ("int f(unsigned* a) { return __cvta_generic_to_global(a) != 0; }", "converting an address to a number"),
        ("__device__ const unsigned* seen;\nint f() { return 0; }", "`__device__` here keeps a variable"),
        ("__managed__ int seen = 0;\nint f() { return 0; }", "`__managed__` here keeps a variable"),
        ("int f() { static int calls; return calls++; }", "`static` here keeps a variable"),
        ("struct S { static __device__ int n; };\nint f() { return 0; }", "`static` here keeps a variable"),
        ("#define MODE (__LINE__ > 30)\nint f() { return 0; }", "`__LINE__` takes its value from where it is used"),
        (
            "int f() { return __TIME__[7] - '0'; }",
            "`__TIME__` takes its value from where it is used (its line, function or file, or whether the compiler evaluates it) or when it is compiled",
        ),
        ("int f() { return __DATE__[5] == '1'; }", "`__DATE__` takes its value"),
        // A string the check does not see as one: `char* p = __FILE__;` writes a module's string.
        ("int f() { char* p = __FILE__; p[0] = 1; return 0; }", "`__FILE__` takes its value"),
        ("int f() { return __BASE_FILE__[0x100000]; }", "`__BASE_FILE__` takes its value"),
        ("int f() { return gridDim.x > 8 ? 1 : 0; }", "`gridDim` would let your part act otherwise"),
        ("int f() { return printf(\"x\") < 0 ? 1 : 0; }", "the value of `printf` depends on what earlier launches"),
        ("int f() { int n = (int)printf(\"x\"); return n; }", "the value of `printf` depends"),
        ("int f() { const int n = threadIdx.x != 0u ? 1 : printf(\"x\"); return n; }", "the value of `printf` depends"),
        ("int f() { unsigned m = 2; m += 1, printf(\"x\"); return m; }", "the value of `printf` depends"),
        (
            "int f() { unsigned m = 2; if (blockIdx.x == 0) printf(\"%u\", N * m); return m; }",
            "`blockIdx` would let your part act otherwise",
        ),
        (
            "int f() { unsigned m = 2; if (blockIdx.x == 0) { if (m) printf(\"x\"); } return m; }",
            "`blockIdx` would let your part act otherwise",
        ),
        (
            "int f() { unsigned m = 2; if (blockIdx.x == 0) printf(\"%u\", (m = N)); return m; }",
            "`blockIdx` would let your part act otherwise",
        ),
        (
            "int f() { unsigned m = 0; if (blockIdx.x > 8) printf(\"%u\", m = 1); return m; }",
            "`blockIdx` would let your part act otherwise",
        ),
        (
            "int f() { unsigned m = 0; if (blockIdx.x > 8) printf(\"big\"); else m = 1; return m; }",
            "`blockIdx` would let your part act otherwise",
        ),
        (
            "int f() { unsigned m = 0; if (blockIdx.x > 8 && (m = 1)) printf(\"big\"); return m; }",
            "`blockIdx` would let your part act otherwise",
        ),
        (
            "int g(unsigned& m) { m = 1; return 0; }\nint f() { unsigned m = 0; if (blockIdx.x > 8) printf(\"%d\", g(m)); return m; }",
            "`blockIdx` would let your part act otherwise",
        ),
        (
            "int f() { unsigned m = 0; if (blockIdx.x > 8) { printf(\"big\"); m = 1; } return m; }",
            "`blockIdx` would let your part act otherwise",
        ),
        (
            "int mark(unsigned& m) { m = 1; return 0; }\n\
             int f() { unsigned m = 0; if (gridDim.x > 2u && (mark)(m)) printf(\"\"); return m; }",
            "`gridDim` would let your part act otherwise",
        ),
        (
            "struct M { unsigned* f; __device__ M(const M& o) : f(o.f) { *f = 1; } };\n\
             int f(M m) { if (blockIdx.x > 2) printf(\"%p\", m); return 0; }",
            "`blockIdx` would let your part act otherwise",
        ),
        ("int f() { const int n = printf(\"%u\", gridDim.x); return n; }", "`gridDim` would let your part"),
        (
            "int f() { unsigned m = 0; printf(\"%llu\", sizeof m + (m = gridDim.x)); return m; }",
            "`gridDim` would let your part act otherwise",
        ),
        (
            "int f() { unsigned big = 0; auto (printf) = [&](const char* s) { big = 1; return 0; };\n\
             if (gridDim.x > 100) printf(\"\"); return big; }",
            "`gridDim` would let your part act otherwise",
        ),
        (
            "int f() { unsigned k = 3; if (blockIdx.x == 0) printf(\"%u\", k); return k; }",
            "`blockIdx` would let your part act otherwise",
        ),
        (
            "int f() { unsigned m = 0; printf(\"%u\", (copy)(m, gridDim.x)); return m; }",
            "`gridDim` would let your part act otherwise",
        ),
        ("int f() { return __clusterGridDimInClusters().x > 8; }", "`__clusterGridDimInClusters` would let"),
        ("#define __pragma(a, b) a b\nint f() { return 0; }", "`#define __pragma` changes a word of C++"),
        (
            "constexpr unsigned line(unsigned l = __builtin_LINE()) { return l; }\nint f() { return 0; }",
            "`__builtin_LINE` takes its value from where it is used",
        ),
        ("__attribute__((device)) unsigned seen;\nint f() { return 0; }", "`__attribute__` spells out a CUDA keyword"),
        ("__location__(device) unsigned seen;\nint f() { return 0; }", "`__location__` spells out a CUDA keyword"),
        ("struct S { mutable unsigned n; };\nint f() { return 0; }", "a `mutable` member"),
        ("int f() { return *const_cast<char*>(\"ab\") = 1; }", "`const_cast` can write to a constant"),
        ("int f() { return atomicAdd((unsigned*)(\"ab\"), 1u); }", "a cast to a pointer or a reference can write"),
        ("int f() { char* s = \"ab\"; return s[0]++; }", "a string literal can write"),
        ("int f() { union U { const char* c; char* m; } u{}; return 0; }", "a union can write"),
        ("int f() { return reinterpret_cast<unsigned long long>(&N); }", "`reinterpret_cast` can write"),
        (
            "constexpr unsigned seen[1] = {0u};\nusing P = unsigned*;\nint f() { return atomicAdd(P(seen), 1u); }",
            "an alias of a pointer or reference type can write",
        ),
        (
            "constexpr unsigned seen[1] = {0u};\ntemplate <class T> using Ptr = T*;\n\
             int f() { return atomicAdd(Ptr<unsigned>(seen), 1u); }",
            "an alias of a pointer or reference type can write",
        ),
        ("typedef unsigned& R;\nint f() { return 0; }", "an alias of a pointer or reference type can write"),
        (
            "constexpr unsigned seen[1] = {0u};\ntemplate <class X> using Id = X;\n\
             int f() { return atomicAdd(Id<unsigned*>(seen), 1u); }",
            "a cast to a template's type, which may be a pointer, can write",
        ),
        (
            "constexpr bool flag = false;\ntemplate <class R, class V> __device__ R ref(V& v) { return (R)v; }\n\
             int f() { ref<bool&>(flag) = true; return 0; }",
            "a cast to a template's type, which may be a pointer, can write",
        ),
        (
            "constexpr unsigned seen[1] = {0u};\nint f() { return atomicAdd((unsigned* __restrict)seen, 1u); }",
            "a cast to a pointer or a reference can write",
        ),
        (
            "int f() { char c = 0; char* cp = &c; printf(\"%d\", ++*decltype(cp)(\"abc\")); return 0; }",
            "a cast to a type from `decltype` can write",
        ),
        ("CUDART_DEVICE unsigned seen;\nint f() { return 0; }", "`CUDART_DEVICE` is a macro of NVRTC's own headers"),
        (
            "constexpr unsigned seen[1] = {0u};\nint f() { unsigned x = 0; return atomicAdd(decltype(&x)(seen), 1u); }",
            "a pointer or reference type from `decltype` can write",
        ),
        ("__device__ __remove_cv(unsigned) seen;\nint f() { return 0; }", "`__device__` here keeps a variable"),
        ("__device__ unsigned (seen);\nint f() { return 0; }", "`__device__` here keeps a variable"),
        ("int f() { static unsigned ((calls)); return calls++; }", "`static` here keeps a variable"),
        ("template <class T> __device__ T (seen);\nint f() { return 0; }", "`__device__` here keeps a variable"),
        ("template <class T> __device__ const T (seen);\nint f() { return 0; }", "`__device__` here keeps a variable"),
        ("__device__ decltype(N) seen;\nint f() { return 0; }", "`__device__` here keeps a variable"),
        ("int f() { unsigned x = 0; return *(__typeof__(unsigned*))&x; }", "a cast to a pointer"),
        ("int f() { unsigned x = 0; decltype(*&x) r = x; return r; }", "a pointer or reference type from `decltype`"),
        ("int f() { return sizeof(int) + *(unsigned*)0; }", "a cast to a pointer"),
        ("__device__ unsigned* at(unsigned* p) { return (unsigned*)p; }\nint f() { return 0; }", "a cast to a pointer"),
        ("int f() { return (\"x\")[0]; }", "a string literal"),
        (
            "__constant__ unsigned seen[1];\nint f() { unsigned old = __ldcg(seen); __stcg(seen, old + 1); return 0; }",
            "declare it `__constant__ const`",
        ),
        ("__constant__ const unsigned* table;\nint f() { return 0; }", "declare it `__constant__ const`"),
        ("int f() { char c = 0; char* s = &c; assert(s = \"abcd\"); return s[0]++; }", "a string literal"),
        ("int f() { char* s = k ? \"a\" : \"b\"; return s[0]++; }", "a string literal"),
        (
            "int f() { static constexpr unsigned t[1] = {0}; unsigned x = 0; unsigned* z = &x;\n\
             return atomicAdd(z + (t - z), 1u); }",
            "a difference of pointers",
        ),
        (
            "constexpr unsigned t[1] = {0};\nint f() { unsigned x = 0; return atomicAdd(&x + (t - &x), 1u); }",
            "a difference of pointers",
        ),
        (
            "constexpr unsigned t[1] = {0};\nint f() { unsigned x = 0; auto z = &x; return atomicAdd(z + (t - z), 1u); }",
            "a difference of pointers",
        ),
        (
            "constexpr unsigned t[1] = {0};\nint f() { unsigned x = 0; unsigned* z = &x; return *(decltype(z) const)t; }",
            "a cast to a type from `decltype`",
        ),
        (
            "constexpr unsigned t[1] = {0};\nint f() { auto v = __builtin_assume_aligned(t, 4); return v != t; }",
            "`__builtin_assume_aligned`",
        ),
        ("int f() { unsigned x = 0; void* v = &x; return 0; }", "a pointer to `void`"),
        (
            "struct S { unsigned v; S* self; __device__ constexpr S() : v(0), self(this) {} };\nint f() { return 0; }",
            "`this` kept",
        ),
        (
            "struct S { unsigned v; S& me; __device__ constexpr S() : v(0), me(*this) {} };\nint f() { return 0; }",
            "`this` kept",
        ),
        (
            "struct S { unsigned v; __device__ void f() { S& me = *this; me.v = 1; } };\nint f() { return 0; }",
            "`this` kept",
        ),
        (
            "constexpr unsigned t[1] = {0};\nint f() { unsigned x = 0; unsigned* z = &x; return atomicAdd(z + (t - (z + 0)), 1u); }",
            "a difference of pointers",
        ),
        (
            "__device__ unsigned bump(unsigned* p) { static constexpr unsigned t[1] = {0};\n\
             return atomicAdd(p + ((unsigned long long)t - (unsigned long long)p) / 4, 1u); }\nint f() { return 0; }",
            "a cast to a 64-bit integer",
        ),
        // Addresses made numbers in locals, a difference of those moving a writable pointer.
        (
            "constexpr unsigned t[1] = {0u};\nint f() { unsigned x = 0; unsigned* volatile h = &x; unsigned* z = h;\n\
             unsigned long long a = size_t(t), b = (const unsigned long long)z; return atomicAdd(z + (a - b) / 4, 1u); }",
            "a cast to a 64-bit integer",
        ),
        (
            "using Wide = unsigned long long;\ntypedef Wide Address;\nconstexpr unsigned t[1] = {0u};\n\
             int f() { return (Address)t != 0; }",
            "a cast to a 64-bit integer",
        ),
        ("int f() { return 0\u{202e}; }", "the invisible character U+202E is outside"),
        ("int f() { return 0\u{1b}; }", "the invisible character U+001B is outside"),
        ("int f() { return 0\u{e9}; }", "the character U+00E9 (`\u{e9}`) is outside"),
        // Pointers no name shows: an array's elements, a structured binding, a function of a
        // deduced type, an alternative token's address.
        (
            "constexpr unsigned t[1] = {0u};\nint f() { unsigned x = 0; const unsigned* ps[2] = {t, &x}; return ps[0] < ps[1]; }",
            "an array of pointers",
        ),
        (
            "struct Pq { const unsigned* p; const unsigned* q; };\n\
             int f() { unsigned x = 0; Pq pq{&x, &x}; auto [p, q] = pq; return 0; }",
            "a structured binding",
        ),
        (
            "constexpr unsigned t[1] = {0u};\n__device__ auto there() { return t; }\n\
             __device__ auto here(long long m) { return t + m; }\nint f() { return here(3) <= there(); }",
            "a comparison of values that may be pointers",
        ),
        (
            "constexpr unsigned t[1] = {0u};\nint f() { unsigned x = 0; long long d = t + 0 - bitand x; return int(d); }",
            "a difference of pointers",
        ),
        // A pointer read through another, an array's, a member's; a unary `+` before a pointer.
        (
            "constexpr unsigned t[1] = {0u};\nint f() { const unsigned* a = t; const unsigned** pp = &a; return 0; }",
            "a pointer to a pointer",
        ),
        (
            "constexpr unsigned t[1] = {0u};\nint f() { const unsigned (*pa)[1] = &t; return 0; }",
            "a pointer to an array",
        ),
        ("struct S { unsigned* p; };\nint f() { unsigned* S::* m = &S::p; return 0; }", "a pointer to a member"),
        (
            "constexpr unsigned t[1] = {0u};\nint f() { const unsigned* a = t; unsigned x = 0; unsigned* z = &x;\n\
             return int(*(&a) - *(&z)); }",
            "a difference of pointers",
        ),
        ("int f() { unsigned x = 0; return __builtin_addressof(x) != 0; }", "a compiler's built-in function"),
        ("constexpr unsigned t[1][1] = {{0u}};\nint f() { return int(t[0][0]); }", "an array of arrays"),
        (
            "constexpr unsigned t[1] = {0u};\n__device__ const unsigned (&there())[1] { return t; }\nint f() { return 0; }",
            "a function that returns an array",
        ),
        (
            "constexpr unsigned t[1] = {0u};\nint f() { unsigned x = 0; unsigned* z = &x; long long d = t + 0 - +z; return int(d); }",
            "a difference of pointers",
        ),
        // The same through a template's values, which may be pointers.
        (
            "template <class P, class Q> __device__ bool le(P a, Q b) { return a <= b; }\n\
             template <class P, class Q> __device__ long long gap(P a, const Q& b) { return a - b; }\nint f() { return 0; }",
            "a comparison of values that may be pointers",
        ),
        (
            "template <class P, class Q> __device__ long long gap(P a, const Q& b) { return a - b; }\nint f() { return 0; }",
            "a difference of values that may be pointers",
        ),
        (
            "__device__ bool le(const unsigned* const& a, const unsigned* const& b) { return a <= b; }\nint f() { return 0; }",
            "a comparison of pointers",
        ),
        // How far another's data lies, found by comparing pointers, halving the distance.
        (
            "constexpr unsigned t[1] = {0u};\nint f() { unsigned x = 0; unsigned* z = &x; long long lo = 0, hi = 1ll << 46;\n\
             while (hi - lo > 1) { long long mid = lo + (hi - lo) / 2; if (z + mid <= t + 1) lo = mid; else hi = mid; }\n\
             return atomicAdd(z + lo, 1u); }",
            "a comparison of pointers",
        ),
        (
            "constexpr unsigned t[2] = {0u, 0u};\nint f() { unsigned x = 0; auto z = &x; auto u = t; long long k = 5;\n\
             return t + 1 >= k + z ? 1 : (u > z); }",
            "a comparison of pointers",
        ),
        ("int f() { const char* s = g(\"a\"); return 0; }", "a string literal"),
        ("int f() { const char* s = 1 ? \"a\" : \"b\", *t = \"c\"; return 0; }", "a string literal"),
        ("int f() { const char* s = \"a\" + 0; return 0; }", "a string literal"),
        ("int f() { char c = 0; char* s = &c; printf(\"%p\", s = \"abcd\"); return s[0]++; }", "a string literal"),
        ("int f() { printf(\"%n\", \"abcd\"); return 0; }", "printf's `%n`"),
        ("int f() { int c = 0; printf(\"ab%hhn\", &c); return c; }", "printf's `%n`"),
        ("int f() { const char* s = \"\"; printf(\"%p\", s = 1 ? \"ab\" : \"cd\"); return s[0]; }", "a string literal"),
        (
            "int f() { char c = 0; char* s = &c; printf(\"%p\", (s = &c) ? \"ab\" : \"cd\"); return 0; }",
            "a string literal",
        ),
        (
            "int f() { printf(\"%d\", [&] { char* t{1 ? \"a\" : \"b\"}; return t[0]++; }()); return 0; }",
            "a string literal",
        ),
        (
            "struct C { char c; };\nint f() { const C k[1] = {}; return ((C (*)[1])k)[0][0].c++; }",
            "a cast to a pointer",
        ),
        (
            "template <typename zz> __device__ zz id(zz v) { return v; }\nconstexpr unsigned zz = 0;\n\
             __device__ unsigned seen(zz);\nint f() { return 0; }",
            "`seen(zz)` declares a variable",
        ),
        ("__attribute((global)) void k2(unsigned* o) { *o = 1; }\nint f() { return 0; }", "may not define a kernel"),
        ("#define ONE _Pragma(\"unroll 1\")\nint f() { return 0; }\n#pragma message ONE", "`#pragma` after the last"),
        ("int f() { return 0; }\n#pragma message(\"x\") _Pragma(\"unroll 1\")", "`#pragma` after the last"),
        (
            "int f() { unsigned x = 1; unsigned* t = &x; using P = decltype(t); return *P(0ull); }",
            "an alias of a type from `decltype`",
        ),
        (
            "template <typename U> __device__ U to(U, const char* s) { return (U)s; }\nint f() { return 0; }",
            "a cast to a template's type",
        ),
        (
            "template <typename U> __device__ U to(U, const unsigned* s) { return (U const)s; }\nint f() { return 0; }",
            "a cast to a template's type",
        ),
        (
            "template <typename U> __device__ U to(U, const unsigned* s) { using P = U; return P(s); }\n\
             int f() { return 0; }",
            "a cast to a template's type",
        ),
        (
            "template <typename U> struct As { const unsigned* p; __device__ operator U() const { return 0; } };\n\
             int f() { return 0; }",
            "a cast to a template's type",
        ),
        (
            "__constant__ const unsigned k = 1;\ntemplate <typename X = const unsigned> __constant__ unsigned seen[1];\n\
             int f() { return 0; }",
            "declare it `__constant__ const`",
        ),
        (
            "template <class T> struct Box { T v; };\n__constant__ Box<const unsigned> seen;\nint f() { return 0; }",
            "declare it `__constant__ const`",
        ),
        ("[[gnu::const]] __constant__ unsigned seen[1];\nint f() { return 0; }", "declare it `__constant__ const`"),
        (
            "template <bool B = (1 > 0), class X = const unsigned> __constant__ unsigned seen[1];\nint f() { return 0; }",
            "declare it `__constant__ const`",
        ),
        (
            "template <typename... U> __device__ void to(const unsigned* s, U&... z) { ((z = (U)s), ...); }\n\
             int f() { return 0; }",
            "a cast to a template's type",
        ),
        (
            "constexpr unsigned t[1] = {0};\nint f() { unsigned* z = nullptr; return atomicAdd(z + (t - z), 1u); }",
            "a null pointer",
        ),
        (
            "constexpr unsigned t[1] = {0};\nint f() { unsigned* z = 0; return atomicAdd(z + (t - z), 1u); }",
            "a null pointer",
        ),
        (
            "constexpr unsigned t[1] = {0};\nint f() { unsigned* z{}; return atomicAdd(z + (t - z), 1u); }",
            "a null pointer",
        ),
        (
            "template <typename U> __device__ U to(U, unsigned long long a) { return U(a); }\nint f() { return 0; }",
            "a cast to a template's type, which may be a pointer, can write to a constant or a string literal, \
             data that lasts from one launch to the next: convert with `static_cast<T>(...)`",
        ),
        (
            "template <class T> struct Same { using type = T; };\nconstexpr unsigned k = 1;\n\
             int f() { return *Same<unsigned*>::type(&k) = 2; }",
            "a cast to a template's type",
        ),
        (
            "constexpr unsigned k = 1;\ntemplate <class U = unsigned*> __device__ unsigned g() { return *U(&k) = 2; }\n\
             int f() { return g(); }",
            "a pointer or reference type as a template's argument",
        ),
        ("__device__ int g(char* s) { return s[0]++; }\nint f() { assert(g(\"x\")); return 0; }", "a string literal"),
        ("__device__ int printf(char* s, int) { return s[0]++; }\nint f() { return 0; }", "named `printf` or `assert`"),
        ("int f() { int assert(char*); return 0; }", "named `printf` or `assert`"),
        ("#undef assert\nint f() { return 0; }", "`#undef assert` changes"),
        ("__attribute__((global)) void k2() {}\nint f() { return 0; }", "may not define a kernel"),
        ("[[gnu::global]] void k2() {}\nint f() { return 0; }", "may not define a kernel"),
        (
            "template <int K> __device__ unsigned v = K;\ntemplate <> __device__ unsigned v<3>(5);\nint f() { return 0; }",
            "`__device__` here keeps a variable",
        ),
        (
            "template <int K> __device__ unsigned v = K;\ntemplate <> __device__ unsigned v<3>(N);\nint f() { return 0; }",
            "`__device__` here keeps a variable",
        ),
        (
            "template <int K> __device__ unsigned v = K;\n\
             template <> __device__ unsigned v<3>(unsigned(5));\nint f() { return 0; }",
            "`__device__` here keeps a variable",
        ),
        ("__device__ unsigned seen(0);\nint f() { return 0; }", "`__device__` here keeps a variable"),
        ("__device__ unsigned helper(unsigned), seen;\nint f() { return 0; }", "`__device__` here keeps a variable"),
        (
            "constexpr unsigned zero = 0;\n__device__ unsigned seen(zero bitand zero);\nint f() { return 0; }",
            "`__device__` here keeps a variable",
        ),
        (
            "constexpr unsigned zero = 0, one = 1;\n__device__ unsigned seen(zero * one);\nint f() { return 0; }",
            "`__device__` here keeps a variable",
        ),
        (
            "constexpr unsigned uint7 = 0;\n__device__ unsigned seen(uint7);\nint f() { return 0; }",
            "`seen(uint7)` declares a variable `seen` made from `uint7` where `uint7` is a value",
        ),
        (
            "__device__ unsigned rotate(size_t), turn(size_t steps);\nint f() { return 0; }",
            "if it declares a function, name its parameters (`rotate(size_t value)`); a `__device__` variable \
             lasts from one launch to the next",
        ),
        ("__device__ unsigned (seen)(0);\nint f() { return 0; }", "`__device__` here keeps a variable"),
        ("__device__ unsigned (seen){0};\nint f() { return 0; }", "`__device__` here keeps a variable"),
        (
            "__device__ unsigned (*hook)(unsigned) = nullptr;\nint f() { return 0; }",
            "`__device__` here keeps a variable",
        ),
        (
            "template <class T> struct Box { T v; };\n__device__ Box<Box<unsigned>> seen;\nint f() { return 0; }",
            "`__device__` here keeps a variable",
        ),
        ("__managed__ unsigned seen(0u + 0u);\nint f() { return 0; }", "`__managed__` here keeps a variable"),
        ("int f() { static unsigned calls(0); return calls++; }", "`static` here keeps a variable"),
        ("__device__ decltype(0u) (seen);\nint f() { return 0; }", "`__device__` here keeps a variable"),
        (
            "struct S { static constexpr unsigned value = 1; };\ntemplate <int K> __device__ unsigned v = K;\n\
             template <> __device__ unsigned v<3>(S::value);\nint f() { return 0; }",
            "`__device__` here keeps a variable",
        ),
        (
            "constexpr unsigned zero = 0;\ntemplate <int K> __device__ unsigned v = K;\n\
             template <> __device__ unsigned v<3>(sizeof zero);\nint f() { return 0; }",
            "`__device__` here keeps a variable",
        ),
        ("#define F(...) __VA_ARGS__\nF(\n#\nint g();)\nint f() { return 0; }", "a directive inside the `(`"),
        ("__device__ const volatile unsigned seen = 0;\nint f() { return 0; }", "`__device__` here keeps a variable"),
        ("// note \\\n#include \"probe.cuh\"\nint f() { return 0; }", "this `#include` line is in a comment"),
        ("int f() { return 0; }\n#define NOTHING\n#pragma unroll 1\nNOTHING", "`#pragma` after the last of your code"),
    ] {
        let (line, problem) = region_error(region);
        assert!(problem.contains(expected), "{region:?}: {problem}");
        assert!(line >= 4, "{region:?}: line {line}");
    }
    // Inside a kernel's body, an early `return` leaves the kernel.
    let kernel_region = "extern \"C\" __global__ void k(unsigned* out, unsigned n) {\n// ---- EDIT BELOW ----\nunsigned v = 1;\n// ---- EDIT ABOVE ----\n    out[0] = v + threadIdx.x;\n}\n";
    let early = validate(
        &exercise(),
        kernel_region,
        kernel_region.replace("unsigned v = 1;", "unsigned v = 1; if (n > 4) return;").as_bytes(),
    );
    assert!(
        matches!(&early, Err(Invalid::Region { line: 3, problem }) if problem.contains("`return` here leaves the kernel")),
        "{early:?}"
    );
    assert!(validate(&exercise(), kernel_region, kernel_region.as_bytes()).is_ok());
    // Operators of the part's types would run within the code after it; state would let that
    // code act otherwise in the profiled launch; a macro's arguments are expanded as the
    // compiler expands them.
    for (helper, expected) in [
        ("struct T { __device__ unsigned operator[](unsigned i) const { return i; } };", "an operator of yours"),
        ("struct T { __device__ operator unsigned() const { return 1; } };", "an operator of yours"),
        ("static unsigned seen;", "`static` here keeps a variable"),
        ("auto left = [] { volatile __shared__ unsigned w; return w; };", "`__shared__` here declares"),
        ("{ __shared__ unsigned w[2]; v = w[1]; }", "`__shared__` here declares"),
        ("#define SAME(x) x\nSAME(SAME(const uint3 threadIdx = {};))", "this declares `threadIdx`"),
        ("const uint3 __attribute((unused)) threadIdx = {};", "this declares `threadIdx`"),
    ] {
        let with = kernel_region.replace("unsigned v = 1;", &format!("{helper}\nunsigned v = 1;"));
        assert!(
            matches!(validate(&exercise(), kernel_region, with.as_bytes()), Err(Invalid::Region { problem, .. }) if problem.contains(expected)),
            "{helper}"
        );
    }
    for redirect in ["out[0] = 7; out = nullptr;", "unsigned*& o = out; o = nullptr;", "n = 0;"] {
        let with = kernel_region.replace("unsigned v = 1;", &format!("unsigned v = 1; {redirect}"));
        assert!(
            matches!(validate(&exercise(), kernel_region, with.as_bytes()), Err(Invalid::Region { problem, .. }) if problem.contains("the kernel's parameter")),
            "{redirect}: the code after the part works through the parameters"
        );
    }
    // A name of the part's own spelled as a parameter's says so, and how to mend it.
    for shadow in ["auto odd = [](unsigned n) { return n | 1u; };", "{ constexpr unsigned out = 2; v = out; }"] {
        let with = kernel_region.replace("unsigned v = 1;", &format!("unsigned v = 1; {shadow}"));
        assert!(
            matches!(validate(&exercise(), kernel_region, with.as_bytes()), Err(Invalid::Region { problem, .. }) if problem.contains("nor give the name to anything of its own, a member or an enumerator too (rename yours)")),
            "{shadow}"
        );
    }
    for destructor in [
        "struct Finish { unsigned* o; __device__ ~Finish() { o[0] = 1; } } finish{nullptr};",
        "struct Finish { unsigned* o; __device__ inline ~Finish() { o[0] = 1; } } finish{nullptr};",
        "struct Finish { unsigned* o; __device__ [[maybe_unused]] ~Finish() { o[0] = 1; } } finish{nullptr};",
    ] {
        let with = kernel_region.replace("unsigned v = 1;", &format!("unsigned v = 1; {destructor}"));
        assert!(
            matches!(validate(&exercise(), kernel_region, with.as_bytes()), Err(Invalid::Region { problem, .. }) if problem.contains("destructor")),
            "a destructor runs after the code outside: {destructor}"
        );
    }
    let negation = kernel_region.replace("unsigned v = 1;", "unsigned v = ~f(1u);");
    assert!(validate(&exercise(), kernel_region, negation.as_bytes()).is_ok(), "`~f(x)` is an expression");
    for kernels_own in [
        "if (n > 4) { v = 2; return; }",
        "unsigned a[1] { ({ if (n > 4) return; 0u; }) };",
        "if (sizeof(struct S { int x; })) { return; }",
        "unsigned w = out[0] > n ? ({ return; 0u; }) : 1u;",
        "[[likely]] { return; }",
        "switch (n) { case 1: default: { if (n != 5) return; } }",
        "struct P { unsigned v; };\nstruct Tab { P p; __device__ constexpr const P* operator[](unsigned) const { return &p; } };\nswitch (n) { case Tab{}[0]->v: default: { if (n != 5) return; } }",
    ] {
        let with = kernel_region.replace("unsigned v = 1;", &format!("unsigned v = 1; {kernels_own}"));
        assert!(
            matches!(validate(&exercise(), kernel_region, with.as_bytes()), Err(Invalid::Region { .. })),
            "{kernels_own}: this `return` is the kernel's"
        );
    }
    // A lambda's or a local class's `return` leaves only its own body.
    for helper in [
        "auto next = [](unsigned c) { return c + 1; };",
        "auto next = [&](unsigned c) mutable -> unsigned { return c + v; };",
        "auto next = [] { return 1u; };",
        "struct Next { __device__ unsigned operator()(unsigned c) const { return c + 1; } } next;",
        "auto next = [](unsigned c) noexcept(true) { return c + 1; };",
        "auto next = [](unsigned c) -> decltype(c) { return c + 1; };",
        "struct Base {};\nstruct Next : Base { __device__ unsigned g(unsigned c) const { return c + 1; } } next;",
        "struct alignas(8) Next final { __device__ unsigned g(unsigned c) const { return c + 1; } } next;",
        "template <int K> struct Base {};\nstruct Next : Base<1> { __device__ unsigned g(unsigned c) const { return c + 1; } } next;",
        "constexpr unsigned table[2] = {1, 2};\nconstexpr unsigned K = 3;",
        "struct Swizzle { static constexpr unsigned bits = 3; };\nstatic constexpr unsigned mask = 7;",
        "struct Next { static __device__ unsigned g(unsigned c) { return c + 1; } };",
        "auto next = [c = 0u]() mutable { return ++c; };",
        "unsigned (*pick)(unsigned) = {}; unsigned w = 2 * 3;",
        "static_assert(1 + 1 == 2, \"arithmetic\");",
        "static __device__ unsigned twice(uint3);",
        "if (v > 2) printf(\"v is %u\\n\", v);",
    ] {
        let with = kernel_region.replace("unsigned v = 1;", &format!("{helper}\nunsigned v = 1;"));
        assert!(validate(&exercise(), kernel_region, with.as_bytes()).is_ok(), "{helper}");
    }
    // Shared memory at the part's own level that the code after does not read holds what the
    // last block left there.
    let staged = kernel_region.replace("unsigned v = 1;", "__shared__ unsigned staged[32];\nunsigned v = staged[0];");
    assert!(matches!(validate(&exercise(), kernel_region, staged.as_bytes()),
            Err(Invalid::Region { problem, .. }) if problem.contains("shared memory that only your part reads")),);
    let shadowed = validate(
        &exercise(),
        kernel_region,
        kernel_region.replace("unsigned v = 1;", "unsigned v = 1;\nconst uint3 threadIdx = {};").as_bytes(),
    );
    assert!(
        matches!(&shadowed, Err(Invalid::Region { line: 4, problem }) if problem.contains("this declares `threadIdx`")),
        "a name the code after uses, declared again, changes what that code means: {shadowed:?}"
    );
    let nested =
        kernel_region.replace("unsigned v = 1;", "unsigned v = 1;\n{ const uint3 threadIdx = {}; v += threadIdx.x; }");
    assert!(validate(&exercise(), kernel_region, nested.as_bytes()).is_ok(), "a block's names stay in it");
    let dangling = validate(
        &exercise(),
        kernel_region,
        kernel_region.replace("unsigned v = 1;", "unsigned v = 1;\nif (v > 4)").as_bytes(),
    );
    assert!(
        matches!(&dangling, Err(Invalid::Region { line: 4, problem }) if problem.contains("ends with `)`")),
        "an `if` without its body takes the next statement outside: {dangling:?}"
    );
    // What the region may do: its own helpers, macros and the course's headers, comments with
    // anything in them.
    let fine = "#include \"shared_load.cuh\"\n#define MINE 3 // ??? #include \"/etc/passwd\"\n/* caf\u{e9} */\n#pragma once\nint f() { return MINE; }";
    assert_eq!(check(&STARTER.replace("int f() { return 0; }", fine)).map(|f| f.region), Ok((4, 8)));
}

#[test]
fn any_region_is_judged_without_a_panic() {
    const WORDS: [&str; 28] = [
        "[",
        "]",
        "{",
        ")",
        "->",
        "##",
        "\\",
        "\\\n",
        "return",
        "f",
        "n",
        "out",
        "auto",
        "namespace",
        "using",
        "\"s\"",
        "'c'",
        "/*",
        "*/",
        "//",
        "\n#define",
        "\n#include",
        "\n#if",
        "\n#endif",
        "\n#pragma",
        "\n#if 0",
        "\n#",
        "\n",
    ];
    let mut judged = 0;
    for region in crate::tokens::soups(&WORDS, 20_000) {
        judged += check(&STARTER.replace("int f() { return 0; }", &region)).is_err() as usize;
    }
    assert!(judged > 10_000, "most soups are refused: {judged}");
}

#[test]
fn a_region_may_not_declare_a_name_the_code_outside_uses_unless_that_code_declares_its_own() {
    let starter = "#include \"shared_load.cuh\"\n// ---- EDIT BELOW ----\nint f() { return 0; }\n// ---- EDIT ABOVE ----\n\
         extern \"C\" __global__ void k(unsigned* out, unsigned n) {\n    const unsigned lane = threadIdx.x;\n    \
         out[lane] = f() + load(out, n);\n}\n";
    let exercise = exercise();
    let region = |text: &str| validate(&exercise, starter, starter.replace("int f() { return 0; }", text).as_bytes());
    for (text, name) in [
        ("int f() { return 0; }\n__device__ unsigned load(unsigned* t, unsigned i) { return t[i]; }", "load"),
        (
            "int f() { return 0; }\nnamespace { __device__ unsigned load(unsigned* t, unsigned i) { return 0; } }",
            "load",
        ),
        ("int f() { return 0; }\nconst int a = 1, threadIdx = 2;", "threadIdx"),
        ("::uint3 threadIdx = {};\nint f() { return 0; }", "threadIdx"),
        ("#define T (threadIdx)\nconst uint3 T = {};\nint f() { return 0; }", "threadIdx"),
        ("int f() { return 0; }\n__device__ auto (load)(unsigned* t, unsigned i) -> unsigned { return t[i]; }", "load"),
        ("int f() { return 0; }\nnamespace a::b { __device__ unsigned load(unsigned* t, unsigned i); }", "load"),
    ] {
        let refused = region(text);
        assert!(
            matches!(&refused, Err(Invalid::Region { problem, .. }) if problem.contains(&format!("this declares `{name}`"))),
            "{text}: {refused:?}"
        );
    }
    // The kernel's own `n`, `out` and `lane` are nearer than any the region declares: no change.
    assert!(region("constexpr unsigned n = 32, lane = 1;\nint f() { return n + lane; }").is_ok());
    assert!(region("constexpr int out = 5;\nint f() { return out; }").is_ok(), "a pointer parameter");
}

#[test]
fn a_macro_may_share_a_name_with_a_header_read_before_the_region() {
    let starter = format!("#include \"shared_load.cuh\"\n{STARTER}");
    let edited = starter.replace("int f() { return 0; }", "#define load 3\nint f() { return load; }");
    assert!(validate(&exercise(), &starter, edited.as_bytes()).is_ok(), "the header was read before the macro");
}

#[test]
fn a_name_the_starter_region_defines_may_be_defined_again() {
    let starter = STARTER
        .replace("int f() { return 0; }", "#define PAD 1\nint f() { return PAD; }")
        .replace("out[0] = f();", "out[0] = f() + PAD;");
    let edited = starter.replace("#define PAD 1", "#define PAD 2");
    assert!(validate(&exercise(), &starter, edited.as_bytes()).is_ok());
}

#[test]
fn a_macro_the_code_outside_reads_stands_for_one_value() {
    // The code after reads `PAD` where an operator of lower precedence would bind otherwise.
    let starter = STARTER
        .replace("int f() { return 0; }", "#define PAD (1)\nint f() { return 0; }")
        .replace("out[0] = f();", "static_assert(PAD == 1 || PAD == 33, \"\"); out[0] = f() * PAD;");
    let part = |lines: &str| starter.replace("#define PAD (1)", lines);
    let verdict = |lines: &str| validate(&exercise(), &starter, part(lines).as_bytes());
    let refused = |cheat: &str, expected: &str| match verdict(cheat) {
        Err(Invalid::Region { problem, .. }) => assert!(problem.contains(expected), "{cheat}: {problem}"),
        other => panic!("{cheat}: {other:?}"),
    };
    for honest in [
        "#define PAD 33",
        "#define PAD (32 + 1)",
        "#define PAD (N + 1)",
        "#define WIDE (32 + 1)\n#define PAD WIDE",
        "#define PAD ((32) + (1))",
        "#define EXTRA 32 + 1\n#define PAD (EXTRA)",
        "#define ROW 32\n#define PAD ROW",
        "#define PAD static_cast<unsigned>(33)",
        "#define PAD (unsigned)33",
        "#define PAD -1",
        "__host__ __device__ constexpr unsigned pad(unsigned n) { return n + 1; }\n#define PAD pad(N)",
        "template <unsigned n> struct Up { static constexpr unsigned value = n + 1; };\n#define PAD Up<N + 0>::value",
        "#define PAD sizeof(unsigned)",
        "template <unsigned n> constexpr unsigned up = n + 1;\n#define PAD up<32>",
        "#define PAD sizeof(unsigned char[3][11])",
    ] {
        assert!(verdict(honest).is_ok(), "{honest}: {:?}", verdict(honest));
    }
    for (cheat, expected) in [
        ("#define PAD 2 | 0", "reads `PAD` beside an operator, and what it stands for, `2 | 0`, holds a `|`"),
        ("#define PAD (2) | (0)", "(`#define PAD ((2) | (0))`)"),
        ("#define PAD 32 + 1", "(`#define PAD (32 + 1)`)"),
        ("#define WIDE 2 | 0\n#define PAD WIDE", "reads `PAD` beside an operator, and what it stands for, `2 | 0`"),
        ("#define A 2 | 0\n#define B A\n#define PAD B", "`2 | 0`, holds a `|`"),
        ("#define PAD 1\n#undef PAD\n#define PAD 2 | 0", "holds a `|`"),
        ("#define PAD 2 bitor 0", "holds a `|`"),
        ("#define PAD N ? 33 : 1", "holds a `?`"),
        ("#define PAD 0, 33", "holds a `,`"),
        ("#define PAD (unsigned)33 - 32", "holds a `-`"),
        ("#define PAD sizeof(unsigned) >> 2", "holds a `>>`"),
        ("#define SAME(x) x\n#define PAD SAME(1 ? 33 : 1)", "`1 ? 33 : 1`, holds a `?`"),
        ("#define PAD N < 1 | 1 > N", "holds a `<`"),
    ] {
        refused(cheat, expected);
    }
    // What a macro the code outside reads stands for runs there: it is checked as the part's code
    // is, and names nothing of that code's own (the kernel's parameter `n` means otherwise in a
    // `static_assert` before the kernel, where a part's `n` would be read).
    for (cheat, expected) in [
        ("#define PAD (n + 0)", "stands for code that names `n`, a name of that code"),
        ("constexpr unsigned n = 1;\n#define PAD (n)", "stands for code that names `n`"),
        ("#define PAD (out == nullptr)", "stands for code that names `out`"),
        ("#define PAD (clock() & 1u)", "`clock` reads the time"),
        ("#define PAD (gridDim.x)", "`gridDim` would let your part act otherwise"),
        ("#define PAD (__pm0() + 1u)", "`__pm0` reads or signals"),
        ("#define PAD (__builtin_assume(N == 32), 1)", "`__builtin_assume` tells the compiler"),
        ("#define ONE (gridDim.x)\n#define PAD ONE", "`gridDim` would let your part act otherwise"),
    ] {
        refused(cheat, expected);
    }
    // A macro of the part's own that the code outside does not read may be any expression.
    assert!(check(&STARTER.replace("int f() { return 0; }", "#define MINE 32 + 1\nint f() { return MINE; }")).is_ok());
}

#[test]
fn a_comment_that_names_the_kernel_hides_nothing() {
    let commented = STARTER.replace("// top", "// k(out, n) is __global__ void k(out, n) below");
    assert!(check(&commented).is_ok(), "{:?}", check(&commented));
}

#[test]
fn kernels_are_found_with_launch_bounds_and_in_any_layout() {
    let text =
        "extern \"C\" __global__ void __launch_bounds__(256)\nfast(float* a) {}\n__global__ void\nslow ( int n ) {}";
    assert_eq!(kernels(text), vec![("fast", "float* a"), ("slow", " int n ")]);
}

#[test]
fn a_print_may_show_the_starters_macros_made_of_numbers_and_no_other() {
    let starter = STARTER.replace("#define N 32\n", "#define N 32\n#define HALF (N / 2)\n#define NAME f\n");
    let print = |shown: &str| {
        let text = starter.replace(
            "int f() { return 0; }",
            &format!("int f() {{ if (blockIdx.x == 0) printf(\"%u\", {shown}); return 0; }}"),
        );
        validate(&exercise(), &starter, text.as_bytes())
    };
    assert!(print("HALF + 1u").is_ok(), "{:?}", print("HALF + 1u"));
    let refused = print("NAME").unwrap_err().to_string();
    assert!(refused.contains("`blockIdx` would let your part act otherwise"), "{refused}");
}
