//! The directives a part may hold: `#define` and `#undef` of its own names, `#pragma`, and
//! `#include` of the course's headers by bare name.

use super::{
    course_headers,
    region::{Found, Outside, problem},
    syntax::KEYWORDS,
};
use crate::tokens::{self, Kind};

/// Whether the directive that starts at `tokens[index]` may be in a part.
pub(super) fn directive_problem(tokens: &[tokens::Token], index: usize, outside: &Outside) -> Found {
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
        "pragma" | "error" | "warning" => {}
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
                    // (Spaced as written: `<swizzle.cuh>`, not `< swizzle . cuh >`.)
                    let spelled: String = directive[2..]
                        .iter()
                        .enumerate()
                        .map(|(i, t)| match i > 0 && t.after_space {
                            true => format!(" {}", t.text),
                            false => t.text.clone(),
                        })
                        .collect();
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
