//! The grader's lines after a learner's part, in the text that is compiled. The compiler checks
//! that each value the code after the part reads of it (`TILE_WORDS`) is an integer or an enum's,
//! and the code after reads it as a number made once there: a value of a type of the part's own
//! could convert or compare one way in the starter's `static_assert` and another in the kernel (a
//! class whose explicit conversion gave a cast 2^31 - 1 and whose implicit one gave the tile's
//! length 1024; an `operator>=` that made a `static_assert` always hold). Where the exercise has a
//! place recorder, its wrapper follows ([`crate::within`]), its tile's size that same number.
//! Whatever the part defines as a macro is undefined before those lines, and `#line` keeps the
//! file's line numbers.

use std::borrow::Cow;

use crate::{
    learner_file::LearnerFile,
    within::{RECORD, RECORD_AT, Within},
};

/// Every word the grader's code after the part uses that a part could define as a macro: each is
/// undefined before that code.
const GRADERS_WORDS: [&str; 44] = [
    "bcm_A",
    "bcm_a",
    "bcm_place",
    "bcm_args",
    "bcm_tile_size",
    "bcm_number",
    "bcm_record",
    "bcm_wait",
    "bcm_opaque",
    "bcm_checked",
    "bcm_v",
    RECORD,
    RECORD_AT,
    "bcm_T",
    "bcm_bare",
    "bcm_integer",
    "type",
    "value",
    "template",
    "class",
    "struct",
    "using",
    "typename",
    "static",
    "static_assert",
    "auto",
    "decltype",
    "constexpr",
    "const",
    "volatile",
    "bool",
    "true",
    "false",
    "char",
    "signed",
    "unsigned",
    "short",
    "int",
    "long",
    "sizeof",
    "if",
    "return",
    "for",
    "__builtin_is_constant_evaluated",
];

/// CUDA's functions the grader's lines call (the place recorder's): undefined before them too, and
/// a part may not declare them again ([`crate::learner_file`]).
pub const GRADERS_CALLS: [&str; 3] = ["atomicAdd", "__threadfence_system", "__trap"];

/// The integer types: a place may have one, and a value the code after the part reads.
const INTEGERS: [&str; 12] = [
    "bool",
    "char",
    "signed char",
    "unsigned char",
    "short",
    "unsigned short",
    "int",
    "unsigned",
    "long",
    "unsigned long",
    "long long",
    "unsigned long long",
];

/// `bcm_bare<T>::type`: `T` without references, `const` or `volatile`; `bcm_integer<T>::value`:
/// whether `T` is one of [`INTEGERS`] (specialized after this).
const BARE_AND_INTEGER: &str = "\
template <class bcm_T> struct bcm_bare { using type = bcm_T; };
template <class bcm_T> struct bcm_bare<bcm_T&> : bcm_bare<bcm_T> {};
template <class bcm_T> struct bcm_bare<bcm_T&&> : bcm_bare<bcm_T> {};
template <class bcm_T> struct bcm_bare<const bcm_T> : bcm_bare<bcm_T> {};
template <class bcm_T> struct bcm_bare<volatile bcm_T> : bcm_bare<bcm_T> {};
template <class bcm_T> struct bcm_bare<const volatile bcm_T> : bcm_bare<bcm_T> {};
template <class bcm_T> struct bcm_integer { static constexpr bool value = false; };
";

/// The text of `file` that is compiled: as it is where the grader adds nothing, else with the
/// grader's lines after the part (and the recorder's wrapper, recording if `record`).
pub fn compiled_text<'f>(within: Option<&Within>, file: &'f LearnerFile, record: bool) -> Cow<'f, str> {
    let (first, last) = file.region;
    let values = values_checked(&file.read_after, last + 1);
    if within.is_none() && values.is_empty() {
        return Cow::Borrowed(&file.text);
    }
    let lines: Vec<&str> = file.text.lines().collect();
    let join = |lines: &[&str]| lines.iter().map(|line| format!("{line}\n")).collect::<String>();
    let (before, rest) = lines.split_at((first - 1).min(lines.len()));
    let (part, after) = rest.split_at((last + 1 - first).min(rest.len()));
    let (before_part, code) = within.map(|within| (within.before_part(), within.code(record))).unwrap_or_default();
    let undefined: String = GRADERS_WORDS.iter().chain(&GRADERS_CALLS).map(|name| format!("#undef {name}\n")).collect();
    let integers: String = INTEGERS
        .iter()
        .map(|integer| {
            format!("template <> struct bcm_integer<{integer}> {{ static constexpr bool value = true; }};\n")
        })
        .collect();
    Cow::Owned(format!(
        "{before}{before_part}#line {first}\n{part}#line {after_line}\n\
         // The grader's lines.\n\
         {undefined}{BARE_AND_INTEGER}{integers}{values}{code}\
         #line {after_line}\n{after}",
        before = join(before),
        part = join(part),
        after = join(after),
        after_line = last + 1,
    ))
}

/// For each value the code after the part reads: a `static_assert` that it is an integer or an
/// enum's (a failure's line is `line`, the part's next), then the value as a number, under the
/// name the code after reads. An enum's value is cast to the enum's underlying type, which no
/// operator function of the part's can apply to (one of `>=` once made the starter's
/// `static_assert(TILE_BYTES >= ...)` always hold, and deleting its overload for temporaries hid
/// it from any check that asked whether it applied).
fn values_checked(read_after: &[String], line: usize) -> String {
    if read_after.is_empty() {
        return String::new();
    }
    let passed_on: String = read_after
        .iter()
        .map(|name| {
            let bare = format!("typename bcm_bare<decltype({name})>::type");
            let number = format!("typename bcm_number<{bare}>::type");
            format!(
                "static_assert(bcm_integer<{bare}>::value || __is_enum({bare}), \"{name}, which the code after your \
                 part reads, must be an integer or an enum's (a #define of a number, a constexpr unsigned): a type \
                 of your own could convert or compare one way in a static_assert and another in the kernel\");\n\
                 constexpr {number} bcm_value_{name} = static_cast<{number}>({name});\n\
                 #undef {name}\n\
                 #define {name} bcm_value_{name}\n"
            )
        })
        .collect();
    format!("{NUMBER}#line {line}\n{passed_on}")
}

/// `bcm_number<T>::type`: `T`, or an enum's underlying type.
const NUMBER: &str = "\
template <class bcm_T, bool = __is_enum(bcm_T)> struct bcm_number { using type = bcm_T; };
template <class bcm_T> struct bcm_number<bcm_T, true> { using type = __underlying_type(bcm_T); };
";

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "#define T 32u\n// ---- EDIT BELOW ----\n#define TILE_BYTES (T * 4u)\n// ---- EDIT ABOVE ----\n\
                        static_assert(TILE_BYTES >= 128u, \"\");\n";

    fn file(names: &[&str]) -> LearnerFile {
        let names = names.iter().map(|name| name.to_string()).collect();
        LearnerFile { text: TEXT.into(), region: (3, 3), read_after: names }
    }

    #[test]
    fn a_file_the_grader_adds_nothing_to_is_compiled_as_it_is() {
        assert!(matches!(compiled_text(None, &file(&[]), false), Cow::Borrowed(TEXT)));
    }

    #[test]
    fn each_value_read_after_the_part_is_checked_and_passed_on_as_a_number_keeping_the_line_numbers() {
        let text = compiled_text(None, &file(&["TILE_BYTES"]), false).into_owned();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[..5],
            ["#define T 32u", "// ---- EDIT BELOW ----", "#line 3", "#define TILE_BYTES (T * 4u)", "#line 4"]
        );
        let check = lines.iter().position(|l| l.starts_with("static_assert(bcm_integer<")).expect("checked");
        assert!(lines[..check].contains(&"#undef static_assert"), "the part's macros undone first");
        assert!(
            lines[check].starts_with(
                "static_assert(bcm_integer<typename bcm_bare<decltype(TILE_BYTES)>::type>::value || \
                 __is_enum(typename bcm_bare<decltype(TILE_BYTES)>::type), \"TILE_BYTES, which the code after your part \
                 reads"
            ),
            "{}",
            lines[check]
        );
        assert_eq!(
            lines[lines.len() - 3..],
            ["#line 4", "// ---- EDIT ABOVE ----", "static_assert(TILE_BYTES >= 128u, \"\");"]
        );
        // Its line is the part's next (the grader's lines say where a failure is in the learner's file).
        assert_eq!(lines[check - 1], "#line 4");
        // The code after reads the value as a number: an enum's through its underlying type, which
        // no operator of the part's applies to.
        assert_eq!(
            lines[check + 1..check + 4],
            [
                "constexpr typename bcm_number<typename bcm_bare<decltype(TILE_BYTES)>::type>::type bcm_value_TILE_BYTES = \
                 static_cast<typename bcm_number<typename bcm_bare<decltype(TILE_BYTES)>::type>::type>(TILE_BYTES);",
                "#undef TILE_BYTES",
                "#define TILE_BYTES bcm_value_TILE_BYTES",
            ]
        );
    }
}
