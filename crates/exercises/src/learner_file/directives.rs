//! The directives a part may hold: `#define` and `#undef` of its own names, `#pragma`, and
//! `#include` of the course's headers by bare name.

use std::collections::BTreeSet;

use super::{
    course_headers, header_tokens,
    region::{Found, Outside, problem},
    syntax::{self, KEYWORDS, binary_operator, operators_spelled},
    words,
};
use crate::{
    declared,
    tokens::{self, Kind, Token},
};

/// Whether the directive that starts at `tokens[index]` may be in a part.
pub(super) fn directive_problem(tokens: &[Token], index: usize, outside: &Outside) -> Found {
    let line = tokens[index].line;
    let directive = tokens::directive_tokens(tokens, index);
    let name = directive.get(1).filter(|t| t.kind == Kind::Identifier).map_or("", |t| t.text.as_str());
    match name {
        "" if directive.len() == 1 => {}
        "define" | "undef" => {
            let Some(defined) = directive.get(2) else { return Ok(()) };
            // The checks read the part's words as C++ reads them: `#define struct` or
            // `#define if` would make them read another program than the compiler.
            // (And the words that the checks drop with their parentheses, as attributes.)
            let attribute = matches!(
                defined.text.as_str(),
                "__attribute__" | "__attribute" | "__align__" | "alignas" | "__declspec" | "_Pragma" | "__pragma"
            );
            // (And the calls whose string literals the checks let through.)
            let trusted = matches!(defined.text.as_str(), "printf" | "assert");
            if KEYWORDS.contains(&defined.text.as_str()) || attribute || trusted {
                return problem(
                    line,
                    format!("`#{name} {}` changes a word of C++ itself: choose another name", defined.text),
                );
            }
            if outside.used.contains(&defined.text) {
                // (A name the starter's part defines as a function is the one the code after calls,
                // through the grader's wrapper where places are checked: it must stay one.)
                let defined_above = tokens::directives(&outside.before).any(|(start, directive)| {
                    directive == "define" && outside.before.get(start + 2).is_some_and(|t| t.text == defined.text)
                });
                let fix = match (defined_above, outside.starter_has(&defined.text)) {
                    (true, _) => format!("`{}` is already defined above your part: delete this line", defined.text),
                    (false, true) => format!("keep `{}` as the starter's part defines it, not a macro", defined.text),
                    (false, false) => "choose another name".to_owned(),
                };
                return problem(
                    line,
                    format!("`#{name} {}` changes a name the code outside your part uses: {fix}", defined.text),
                );
            }
            // Names beginning with `__`, or `_` and a capital, are the compiler's and CUDA's
            // (`__forceinline__`, `__device__`), which the grader's lines after the part use too.
            let reserved = defined.text.starts_with("__")
                || defined.text.starts_with('_') && defined.text[1..].starts_with(|c: char| c.is_ascii_uppercase());
            if reserved {
                return problem(
                    line,
                    format!(
                        "`#{name} {}`: names beginning with `__`, or `_` and a capital letter, are the compiler's and \
                         CUDA's: choose another name",
                        defined.text
                    ),
                );
            }
            let body = tokens::definition(directive).map(|d| d.body).unwrap_or_default();
            if let Some(why) = tokens::macro_body_problem(body).filter(|_| name == "define") {
                // (`#define PITCH 36u;`: a statement's `;` out of habit, the one problem.)
                let fix = match body.split_last() {
                    Some((last, rest)) if last.text == ";" && tokens::macro_body_problem(rest).is_none() => {
                        "remove the `;` at its end"
                    }
                    _ => "write a `__device__` function",
                };
                return problem(
                    line,
                    format!(
                        "`#define {}` {why}: a macro in your part may stand only for an expression or a \
                         type, which cannot reach beyond where it is used; {fix}",
                        defined.text
                    ),
                );
            }
        }
        // The checks read every line of the part, the compiler only those whose
        // condition holds: a `{` or a `struct` under `#if 1` would hide what is compiled.
        // (`#if 0` groups are gone by now: see `without_if_0_groups`.)
        "if" | "ifdef" | "ifndef" | "elif" | "else" | "elifdef" | "elifndef" | "endif" => {
            return problem(
                line,
                format!(
                    "`#{name}` is not accepted in your part: the checks read all of its lines, the \
                     compiler only those whose condition holds; keep the one version you mean (an old \
                     one may stay between `#if 0` and its `#endif`, with no `#else` or `#elif`)"
                ),
            );
        }
        "pragma" => {
            let words: Vec<&str> = directive[2..].iter().map(|t| t.text.as_str()).collect();
            if let Some(why) = pragma_problem(&words) {
                return problem(line, why);
            }
        }
        "error" | "warning" => {}
        "include" => {
            let headers = course_headers();
            let named = match &directive[2..] {
                [one] if one.kind == Kind::Literal && one.text.starts_with('"') => {
                    Some(one.text.trim_matches('"').to_owned())
                }
                _ => None,
            };
            match named {
                Some(header) if headers.contains(&header.as_str()) => {
                    if let Some((name, why)) = statement_macro(&header) {
                        return problem(
                            line,
                            format!(
                                "`#include \"{header}\"`: its macro `{name}` {why}, code that no check \
                                 of your part would see: include the headers the starter includes"
                            ),
                        );
                    }
                }
                _ => {
                    let spelled = spelled(&directive[2..]);
                    return problem(
                        line,
                        format!(
                            "`#include {spelled}`: only the course's headers may be included, by bare name in \
                             quotes ({})",
                            headers
                                .iter()
                                .filter(|h| statement_macro(h).is_none())
                                .map(|h| format!("#include \"{h}\""))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    );
                }
            }
        }
        "line" => {
            return problem(line, "`#line` changes the file and line that messages name: remove it".into());
        }
        other => {
            return problem(
                line,
                format!(
                    "`#{other}` is not accepted here: your part may use #define, #undef, #pragma and \
                     #include of the course's headers"
                ),
            );
        }
    }
    Ok(())
}

/// Why a pragma (its words after `#pragma`, or in `_Pragma("...")`) may not be in a part, or
/// `None`: a part may unroll its loops and choose which warnings show. Any other (`pack(1)`, GCC's
/// `optimize`, `push_macro`) goes on changing how the code after the part is compiled (`pack(1)`
/// moved the kernel's parameters).
fn pragma_problem(words: &[&str]) -> Option<String> {
    let name = words.first().copied().unwrap_or("");
    // (GCC's and MSVC's own warning pragmas too, which NVRTC reads or ignores.)
    let warnings = name.starts_with("nv_diag")
        || name.starts_with("diag_")
        || matches!(name, "message" | "warning")
        || name == "GCC" && words.get(1) == Some(&"diagnostic");
    (!(warnings || matches!(name, "unroll" | "nounroll" | "once" | ""))).then(|| {
        format!(
            "`#pragma {name}` would go on changing how the code after your part is compiled: a part may use \
             `#pragma unroll` and the pragmas that choose which warnings show (`nv_diag_suppress`, \
             `nv_diagnostic push` and `pop`)"
        )
    })
}

/// Each `_Pragma("...")` in `code` (the part's tokens, and what runs of its macros) as `#pragma`
/// would be: see [`pragma_problem`].
pub(super) fn pragma_operators(code: &[Token]) -> Found {
    for window in code.windows(3) {
        let [pragma, open, text] = window else { continue };
        if pragma.text != "_Pragma" || open.text != "(" {
            continue;
        }
        if text.kind != Kind::Literal {
            return problem(
                pragma.line,
                "`_Pragma` here takes a string that a macro makes: write the string out (`_Pragma(\"unroll\")`)".into(),
            );
        }
        let inside = text.text.trim_start_matches(|c: char| c.is_ascii_alphanumeric()).trim_matches('"');
        let words: Vec<&str> =
            inside.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|w| !w.is_empty()).collect();
        if let Some(why) = pragma_problem(&words) {
            return problem(pragma.line, why);
        }
        // (The compiler reads the string's words as code: `_Pragma("unroll (__TIME__[7] - '0')")`.)
        if let Some(word) = words.iter().find(|word| words::OF_ITS_PLACE.contains(word)) {
            return words::of_its_place(pragma.line, word);
        }
    }
    Ok(())
}

/// A macro the starter's part defines and the code outside reads beside an operator
/// (`static_assert(TILE_BYTES == 4096)`), as the part defines it, must stand for one value there:
/// what it expands to (`outside`, each macro's expansion) may hold no operator of lower precedence
/// than a postfix expression's at its top level (outside brackets and a template's arguments).
/// Else the code outside reads it otherwise than the part means: `#define TILE_BYTES 4096 | 4096`
/// makes `static_assert(TILE_BYTES == 4096)` read `4096 | (4096 == 4096)`, true for any tile. A
/// name, a number, a call, a cast, `(...)` are one value.
pub(super) fn macros_read_beside_operators_are_one_value(
    tokens: &[Token],
    expanded_outside: &[ExpandedOutside],
    outside: &Outside,
) -> Found {
    let templates = syntax::template_names(tokens);
    for read in expanded_outside.iter().filter(|read| outside.macros_read_beside_an_operator.contains(&read.name)) {
        let value = &read.tokens[..read.tokens.len().saturating_sub(1)];
        if let Some(operator) = top_level_operator(value, &templates) {
            return problem(
                read.line,
                format!(
                    "the code outside your part reads `{name}` beside an operator, and what it stands for, \
                     `{spelled}`, holds a `{operator}` that would bind to that operator first: put it in \
                     parentheses (`#define {name} ({spelled})`)",
                    name = read.name,
                    spelled = spelled(value)
                ),
            );
        }
    }
    Ok(())
}

/// A macro of the part's that the code outside reads, as it expands there.
pub(super) struct ExpandedOutside {
    pub name: String,
    /// The line of its last `#define` in the part.
    pub line: usize,
    /// What it expands to, then a `;`.
    pub tokens: Vec<Token>,
}

/// What the code outside the part runs of the part's own: the expansion of each macro the part
/// defines that the code outside reads (`TILE_BYTES`), as if used after the part's code. The
/// checks of what a part's code may do read these too: a macro's body is code, wherever it is used.
pub(super) fn expanded_outside(
    tokens: &[Token],
    expanded: &[Token],
    outside: &Outside,
) -> Result<Vec<ExpandedOutside>, (usize, String)> {
    let mut found = Vec::new();
    for name in &outside.macros_read {
        let defined = tokens::directives(tokens)
            .filter(|&(start, directive)| {
                directive == "define" && tokens.get(start + 2).is_some_and(|t| &t.text == name)
            })
            .last();
        let Some((start, _)) = defined else { continue };
        let line = tokens[start].line;
        let mut used = tokens.to_vec();
        used.push(Token { kind: Kind::Identifier, text: name.clone(), line, after_space: true });
        used.push(Token { kind: Kind::Punct, text: ";".into(), line, after_space: false });
        let Ok(all) = tokens::expanded(&used) else {
            return problem(
                line,
                format!(
                    "your part's macros take more than {} steps to expand where the code outside your part uses \
                     `{name}`: write the code out",
                    tokens::EXPANSION_LIMIT
                ),
            );
        };
        let tokens = all[expanded.len().min(all.len())..].to_vec();
        found.push(ExpandedOutside { name: name.clone(), line, tokens });
    }
    Ok(found)
}

/// A macro the code outside reads ([`expanded_outside`]) stands for code that runs there, where
/// the kernel's parameters and what the code after the part declares (its tile, its locals) are
/// that code's, and where it is read before the kernel (a `static_assert`), a name of the part's
/// may mean them instead: such a macro may name none of those, nor any other name that only the
/// code after the part uses (but the part's own, the course's headers' and C++'s and CUDA's words).
pub(super) fn names_nothing_of_theirs(
    tokens: &[Token],
    expanded_outside: &[ExpandedOutside],
    outside: &Outside,
) -> Found {
    let declared_after = declared::by_the_code_itself(&outside.after);
    let mut known: BTreeSet<&str> =
        outside.before.iter().filter(|t| t.kind == Kind::Identifier).map(|t| t.text.as_str()).collect();
    // (The part's function that the code after calls may size the tile: the grader's wrapper is
    // that function to whatever asks.)
    known.extend(declared::top_level(tokens).into_iter().map(|declared| declared.name));
    let headers = course_headers().into_iter().flat_map(header_tokens);
    known.extend(headers.filter(|t| t.kind == Kind::Identifier).map(|t| t.text.as_str()));
    let theirs = |name: &str| {
        outside.parameters.contains(&name)
            || declared_after.contains(name)
            || outside.after.iter().any(|t| t.kind == Kind::Identifier && t.text == name)
                && !known.contains(name)
                && !KEYWORDS.contains(&name)
                && !syntax::is_type_word(name)
    };
    for read in expanded_outside {
        let code = &read.tokens;
        let member = |at: usize| at > 0 && matches!(code[at - 1].text.as_str(), "." | "->" | "::");
        let named =
            code.iter().enumerate().find(|&(at, t)| t.kind == Kind::Identifier && !member(at) && theirs(&t.text));
        if let Some((_, name)) = named {
            return problem(
                read.line,
                format!(
                    "`{}`, which the code outside your part reads, stands for code that names `{}`, a name of that \
                     code (the kernel's parameter, or one it declares), which means otherwise where the macro is \
                     read before the kernel: a macro the code outside reads may use numbers, your part's names and \
                     the names the code before your part gives",
                    read.name, name.text
                ),
            );
        }
    }
    Ok(())
}

/// The first operator at the top level of `body` (outside brackets and the arguments of one of
/// `templates`) that binds less tightly than a postfix expression: a binary or conditional
/// operator, an assignment or a comma. (A sign, `!`, `~` or a cast before one value binds to it
/// alone.)
fn top_level_operator(body: &[Token], templates: &BTreeSet<String>) -> Option<String> {
    let body = operators_spelled(body);
    let (mut brackets, mut angles) = (0i64, 0i64);
    for (at, token) in body.iter().enumerate() {
        let after_a_template = at > 0 && templates.contains(&body[at - 1].text);
        match token.text.as_str() {
            "(" | "[" | "{" => brackets += 1,
            ")" | "]" | "}" => brackets -= 1,
            _ if brackets > 0 || token.kind != Kind::Punct => {}
            "<" if after_a_template || angles > 0 => angles += 1,
            ">" if angles > 0 => angles -= 1,
            ">>" if angles > 0 => angles = (angles - 2).max(0),
            _ if angles > 0 => {}
            "+" | "-" | "*" | "&" if !binary_operator(&body, at) => {}
            "!" | "~" | "++" | "--" | "." | "->" | "::" | "#" => {}
            operator => return Some(operator.to_owned()),
        }
    }
    None
}

/// A macro of the course's header `header` that stands for statements (the probe's, which
/// splice any assembly into a kernel or define one), with why; such a header is not for a
/// learner's part, where its macros would carry code the region's own checks never see.
fn statement_macro(header: &str) -> Option<(String, String)> {
    let tokens = header_tokens(header);
    tokens::directives(tokens).filter(|(_, name)| *name == "define").find_map(|(start, _)| {
        let definition = tokens::definition(tokens::directive_tokens(tokens, start))?;
        Some((definition.name.text.clone(), tokens::macro_body_problem(definition.body)?))
    })
}

/// `tokens` spaced as written: `<swizzle.cuh>`, not `< swizzle . cuh >`.
fn spelled(tokens: &[Token]) -> String {
    let mut spelled = String::new();
    for (i, token) in tokens.iter().enumerate() {
        if i > 0 && token.after_space {
            spelled.push(' ');
        }
        spelled.push_str(&token.text);
    }
    spelled
}
