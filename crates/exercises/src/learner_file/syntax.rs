//! How the checks read a part's tokens: C++'s keywords and type words, where a statement starts,
//! which brackets enclose a token, and how deep in braces code is.

use crate::{
    declared,
    tokens::{Kind, Token},
};

/// C++'s keywords and alternative tokens (C++20), which no macro of a learner's part may name.
pub(super) const KEYWORDS: [&str; 95] = [
    "alignas",
    "alignof",
    "and",
    "and_eq",
    "asm",
    "auto",
    "bitand",
    "bitor",
    "bool",
    "break",
    "case",
    "catch",
    "char",
    "char8_t",
    "char16_t",
    "char32_t",
    "class",
    "compl",
    "concept",
    "const",
    "consteval",
    "constexpr",
    "constinit",
    "const_cast",
    "continue",
    "co_await",
    "co_return",
    "co_yield",
    "decltype",
    "default",
    "delete",
    "do",
    "double",
    "dynamic_cast",
    "else",
    "enum",
    "explicit",
    "export",
    "extern",
    "false",
    "float",
    "for",
    "friend",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "not_eq",
    "nullptr",
    "operator",
    "or",
    "or_eq",
    "private",
    "protected",
    "public",
    "register",
    "reinterpret_cast",
    "requires",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "static_assert",
    "static_cast",
    "struct",
    "switch",
    "template",
    "this",
    "thread_local",
    "throw",
    "true",
    "try",
    "typedef",
    "typeid",
    "typename",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
    "volatile",
    "wchar_t",
    "while",
    "xor",
    "xor_eq",
    "defined",
    "final",
    "override",
];

/// Whether `word` names a type: C++'s own, or CUDA's vector types (`uint3`, `float4`, `dim3`).
pub(super) fn is_type_word(word: &str) -> bool {
    let base = word.trim_end_matches(|c: char| c.is_ascii_digit());
    declared::cpp_type_word(word)
        || word == "dim3"
        || (matches!(&word[base.len()..], "1" | "2" | "3" | "4")
            && matches!(
                base,
                "char"
                    | "uchar"
                    | "short"
                    | "ushort"
                    | "int"
                    | "uint"
                    | "long"
                    | "ulong"
                    | "longlong"
                    | "ulonglong"
                    | "float"
                    | "double"
            ))
}

/// Where the statement that `code[at]` is in begins: after the last `;`, `{` or `}` before it.
pub(super) fn statement_start(code: &[Token], at: usize) -> usize {
    (0..at).rev().find(|&i| matches!(code[i].text.as_str(), ";" | "{" | "}")).map_or(0, |i| i + 1)
}

/// The openers of the parentheses and brackets about `code[at]`, innermost first.
pub(super) fn enclosing(code: &[Token], at: usize) -> impl Iterator<Item = usize> + '_ {
    let mut depth = 0usize;
    (0..at).rev().filter(move |&i| match code[i].text.as_str() {
        ")" | "]" => {
            depth += 1;
            false
        }
        "(" | "[" if depth > 0 => {
            depth -= 1;
            false
        }
        "(" | "[" => true,
        _ => false,
    })
}

/// The `(` or `[` that the `)` or `]` at `close` closes.
pub(super) fn opener(code: &[Token], close: usize) -> Option<usize> {
    let mut depth = 0i64;
    (0..=close).rev().find(|&i| {
        match code[i].text.as_str() {
            ")" | "]" => depth += 1,
            "(" | "[" => depth -= 1,
            _ => {}
        }
        depth == 0
    })
}

/// Whether `code[at]` is inside an attribute, `[[...]]`, which runs nothing.
pub(super) fn in_attribute(code: &[Token], at: usize) -> bool {
    let openers: Vec<usize> = enclosing(code, at).collect();
    openers
        .iter()
        .any(|&open| code[open].text == "[" && open > 0 && code[open - 1].text == "[" && openers.contains(&(open - 1)))
}

/// Open braces at the end of `tokens`.
pub(super) fn depth(tokens: &[Token]) -> i64 {
    tokens.iter().map(brace_step).sum()
}

/// What `token` does to the count of open braces.
pub(super) fn brace_step(token: &Token) -> i64 {
    match (token.kind, token.text.as_str()) {
        (Kind::Punct, "{") => 1,
        (Kind::Punct, "}") => -1,
        _ => 0,
    }
}
