//! The directives a part may hold: `#define` and `#undef` of its own names, `#pragma`, and
//! `#include` of the course's headers by bare name.

use std::collections::BTreeSet;

use super::{
    course_headers,
    region::{Found, Outside, problem},
    syntax::{KEYWORDS, binary_operator, operators_spelled, template_angle},
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
                return problem(
                    line,
                    format!(
                        "`#{name} {}` changes a name the code outside your part uses: choose another name",
                        defined.text
                    ),
                );
            }
            let body = tokens::definition(directive).map(|d| d.body).unwrap_or_default();
            if let Some(why) = tokens::macro_body_problem(body).filter(|_| name == "define") {
                return problem(
                    line,
                    format!(
                        "`#define {}` {why}: a macro in your part may stand only for an expression or a \
                         type, which cannot reach beyond where it is used; write a `__device__` function",
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
    let warnings = name.starts_with("nv_diag") || name.starts_with("diag_") || name == "message";
    (!(warnings || matches!(name, "unroll" | "nounroll" | "once" | ""))).then(|| {
        format!(
            "`#pragma {name}` would go on changing how the code after your part is compiled: a part may use \
             `#pragma unroll` and the pragmas that choose which warnings show"
        )
    })
}

/// Each `_Pragma("...")` in `code` (the part's tokens, and what runs of its macros) as `#pragma`
/// would be: see [`pragma_problem`].
pub(super) fn pragma_operators(code: &[Token]) -> Found {
    for window in code.windows(3) {
        if let [pragma, open, text] = window
            && pragma.text == "_Pragma"
            && open.text == "("
            && text.kind == Kind::Literal
        {
            let inside = text.text.trim_start_matches(|c: char| c.is_ascii_alphanumeric()).trim_matches('"');
            let words: Vec<&str> =
                inside.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|w| !w.is_empty()).collect();
            if let Some(why) = pragma_problem(&words) {
                return problem(pragma.line, why);
            }
        }
    }
    Ok(())
}

/// A macro the starter's part defines and the code outside reads (`TILE_WORDS`), as the part
/// defines it, must stand for one value wherever it is read: no operator of lower precedence than
/// a postfix expression's may stand at its body's top level (outside brackets and a template's
/// arguments). Else the code outside reads it otherwise than the part means: `#define TILE_WORDS
/// 1024 | 0` makes a starter's `static_assert(TILE_WORDS == 1024)` read `1024 | (0 == 1024)`, true
/// for any tile. A name, a number, a call, a cast, `(...)` are one value; a macro whose body is one
/// name stands for what that name does, which is checked in turn.
pub(super) fn macros_read_outside_are_one_value(tokens: &[Token], outside: &Outside) -> Found {
    let definitions: Vec<tokens::Definition<'_>> = tokens::directives(tokens)
        .filter(|&(_, name)| name == "define")
        .filter_map(|(start, _)| tokens::definition(tokens::directive_tokens(tokens, start)))
        .collect();
    let mut waiting: Vec<(&str, &str)> =
        outside.macros_read_beside_an_operator.iter().map(|name| (name.as_str(), name.as_str())).collect();
    let mut seen = BTreeSet::new();
    while let Some((name, read)) = waiting.pop() {
        if !seen.insert(name) {
            continue;
        }
        for definition in definitions.iter().filter(|d| d.name.text == name && !d.function_like) {
            if let [one] = definition.body
                && one.kind == Kind::Identifier
            {
                waiting.push((&one.text, read));
            }
            if let Some(operator) = top_level_operator(definition.body) {
                let stands_for = if name == read { String::new() } else { format!(" (which `{read}` stands for)") };
                return problem(
                    definition.name.line,
                    format!(
                        "the code outside your part reads `{read}`, so `{name}`{stands_for} must stand for one \
                         value, whatever operators are around it there, and its `{operator}` would bind to them: \
                         write `#define {name} ({})`",
                        spelled(definition.body)
                    ),
                );
            }
        }
    }
    Ok(())
}

/// What the code outside the part runs of the part's own: the expansion of each macro the part
/// defines that the code outside reads (`TILE_BYTES`), as if used after the part's code, on the
/// line of its last `#define`. The checks of what a part's code may do read these too: a macro's
/// body is code, wherever it is used.
pub(super) fn expanded_outside(
    tokens: &[Token],
    expanded: &[Token],
    outside: &Outside,
) -> Result<Vec<Token>, (usize, String)> {
    let mut used = tokens.to_vec();
    for name in &outside.macros_read {
        let defined = tokens::directives(tokens)
            .filter(|&(start, directive)| {
                directive == "define" && tokens.get(start + 2).is_some_and(|t| &t.text == name)
            })
            .last();
        if let Some((start, _)) = defined {
            let line = tokens[start].line;
            used.push(Token { kind: Kind::Identifier, text: name.clone(), line, after_space: true });
            used.push(Token { kind: Kind::Punct, text: ";".into(), line, after_space: false });
        }
    }
    match tokens::expanded(&used) {
        Ok(all) => Ok(all[expanded.len().min(all.len())..].to_vec()),
        Err(_) => problem(
            used.last().map_or(1, |t| t.line),
            format!(
                "your part's macros take more than {} steps to expand where the code outside your part uses \
                 them: write the code out",
                tokens::EXPANSION_LIMIT
            ),
        ),
    }
}

/// A macro the code outside reads (`expanded_outside`) stands for code that runs there, where
/// the kernel's parameters and what the code after the part declares (its tile, its locals) mean
/// theirs, and, where it is read before the kernel (a `static_assert`), a name of the part's:
/// such a macro may not name them.
pub(super) fn names_nothing_of_theirs(expanded_outside: &[Token], outside: &Outside) -> Found {
    let theirs: BTreeSet<&str> =
        declared::by_the_code_itself(&outside.after).into_iter().chain(outside.parameters.iter().copied()).collect();
    let member = |at: usize| at > 0 && matches!(expanded_outside[at - 1].text.as_str(), "." | "->" | "::");
    let named = expanded_outside
        .iter()
        .enumerate()
        .find(|&(at, t)| t.kind == Kind::Identifier && theirs.contains(t.text.as_str()) && !member(at));
    if let Some((_, name)) = named {
        return problem(
            name.line,
            format!(
                "this macro, which the code outside your part reads, names `{}`, that code's own (the kernel's \
                 parameter, or a name it declares), which means otherwise where the macro is read outside the \
                 kernel: a macro the code outside reads may use your part's names, numbers and the starter's \
                 constants",
                name.text
            ),
        );
    }
    Ok(())
}

/// The first operator at the top level of `body` (outside brackets and a template's arguments)
/// that binds less tightly than a postfix expression: a binary or conditional operator, an
/// assignment or a comma. (A sign, `!`, `~` or a cast before one value binds to it alone.)
fn top_level_operator(body: &[Token]) -> Option<String> {
    let body = operators_spelled(body);
    let (mut brackets, mut angles) = (0i64, 0i64);
    for (at, token) in body.iter().enumerate() {
        match token.text.as_str() {
            "(" | "[" | "{" => brackets += 1,
            ")" | "]" | "}" => brackets -= 1,
            _ if brackets > 0 || token.kind != Kind::Punct => {}
            "<" if template_angle(&body, at) => angles += 1,
            ">" if template_angle(&body, at) => angles -= 1,
            ">>" if angles > 0 && template_angle(&body, at) => angles -= 2,
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
    let tokens = tokens::tokenize(cuda_kernels::source::embedded(header).unwrap_or_default(), 1).ok()?;
    tokens::directives(&tokens).filter(|(_, name)| *name == "define").find_map(|(start, _)| {
        let definition = tokens::definition(tokens::directive_tokens(&tokens, start))?;
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
