//! How the checks read a part's tokens: C++'s keywords and type words, where a statement starts,
//! which brackets enclose a token, how deep in braces code is, which operators are binary and
//! which `<` opens a template's arguments.

use std::collections::BTreeSet;

use crate::{
    declared,
    tokens::{Kind, Token},
};

/// The operators of numbers, and the brackets that group them: an expression of numbers, literals
/// and names written with these alone assigns nothing and calls nothing.
pub(super) const NUMBER_OPERATORS: [&str; 24] = [
    "+", "-", "*", "/", "%", "&", "|", "^", "~", "<<", ">>", "==", "!=", "<", ">", "<=", ">=", "&&", "||", "!", "?",
    ":", "(", ")",
];

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

/// `code` with C++'s alternative tokens as the operators they are (`bitand x` is `&x`), for the
/// checks that read operators.
pub(super) fn operators_spelled(code: &[Token]) -> Vec<Token> {
    code.iter()
        .map(|token| {
            let operator = match (token.kind, token.text.as_str()) {
                (Kind::Identifier, "and") => "&&",
                (Kind::Identifier, "bitand") => "&",
                (Kind::Identifier, "bitor") => "|",
                (Kind::Identifier, "compl") => "~",
                (Kind::Identifier, "not") => "!",
                (Kind::Identifier, "not_eq") => "!=",
                (Kind::Identifier, "or") => "||",
                (Kind::Identifier, "xor") => "^",
                (Kind::Identifier, "and_eq") => "&=",
                (Kind::Identifier, "or_eq") => "|=",
                (Kind::Identifier, "xor_eq") => "^=",
                _ => return token.clone(),
            };
            Token { kind: Kind::Punct, text: operator.to_owned(), ..token.clone() }
        })
        .collect()
}

/// Whether the `<` or `>` at `at` opens or closes a template's arguments (`load<uint4>(tile, i)`,
/// `Pair<unsigned> p`): the `<` follows a name, and its `>` comes before the expression's end and
/// is followed by `(`, `{`, `::` or a name.
pub(super) fn template_angle(code: &[Token], at: usize) -> bool {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    let stops = |word: &str| matches!(word, ";" | "{" | "}" | "&&" | "||" | "?" | "=");
    let closes_arguments = |close: usize| {
        matches!(text(close + 1), "(" | "{" | "::") || code.get(close + 1).is_some_and(|t| t.kind == Kind::Identifier)
    };
    let (mut depth, mut nesting) = (0i64, 0i64);
    match text(at) {
        "<" => {
            for i in at + 1..code.len() {
                match text(i) {
                    "(" | "[" => depth += 1,
                    ")" | "]" if depth == 0 => return false,
                    ")" | "]" => depth -= 1,
                    "<" if depth == 0 => nesting += 1,
                    ">" if depth == 0 && nesting > 0 => nesting -= 1,
                    ">" if depth == 0 => return closes_arguments(i),
                    // (`>>` closes two: `unbox<Box<unsigned>>(boxes)`.)
                    ">>" if depth == 0 && nesting == 1 => return closes_arguments(i),
                    ">>" if depth == 0 && nesting > 1 => nesting -= 2,
                    word if stops(word) => return false,
                    _ => {}
                }
            }
            false
        }
        ">" => {
            for i in (0..at).rev() {
                match text(i) {
                    ")" | "]" => depth += 1,
                    "(" | "[" if depth == 0 => return false,
                    "(" | "[" => depth -= 1,
                    ">" if depth == 0 => nesting += 1,
                    "<" if depth == 0 && nesting > 0 => nesting -= 1,
                    "<" if depth == 0 => {
                        return i > 0 && code[i - 1].kind == Kind::Identifier && closes_arguments(at);
                    }
                    word if stops(word) => return false,
                    _ => {}
                }
            }
            false
        }
        _ => false,
    }
}

/// Whether the operator at `at` is binary: an operand ends before it (a number, a name that is no
/// keyword of an expression, `)` or `]`).
pub(super) fn binary_operator(code: &[Token], at: usize) -> bool {
    at > 0
        && (code[at - 1].kind == Kind::Number
            || code[at - 1].kind == Kind::Identifier
                && !declared::EXPRESSION_WORDS.contains(&code[at - 1].text.as_str())
            || matches!(code[at - 1].text.as_str(), ")" | "]"))
}

/// The templates `tokens` (a part's) and the course's headers declare, and C++'s casts: a `<`
/// after one of these names opens its arguments.
pub(super) fn template_names(tokens: &[Token]) -> BTreeSet<String> {
    let mut names: BTreeSet<String> =
        ["static_cast", "const_cast", "reinterpret_cast", "dynamic_cast"].map(str::to_owned).into();
    names.extend(declared_templates(tokens));
    for header in super::course_headers() {
        names.extend(declared_templates(super::header_tokens(header)));
    }
    names
}

/// The name each `template <...>` in `code` declares: the last name before its `=`, `(`, `{`, `;`
/// or `:` (`template <unsigned n> constexpr unsigned tile_bytes = ...` declares `tile_bytes`).
fn declared_templates(code: &[Token]) -> Vec<String> {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    let mut names = Vec::new();
    for at in (0..code.len()).filter(|&at| text(at) == "template" && text(at + 1) == "<") {
        let mut depth = 0i64;
        let Some(header_end) = (at + 1..code.len()).find(|&i| {
            depth += match text(i) {
                "<" => 1,
                ">" => -1,
                ">>" => -2,
                _ => 0,
            };
            depth <= 0
        }) else {
            continue;
        };
        let declaration = &code[header_end + 1..];
        let end = declaration.iter().position(|t| matches!(t.text.as_str(), "=" | "(" | "{" | ";" | ":"));
        let name = declaration[..end.unwrap_or(declaration.len())].iter().rev().find(|t| t.kind == Kind::Identifier);
        names.extend(name.map(|name| name.text.clone()));
    }
    names
}
