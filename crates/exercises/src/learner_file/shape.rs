//! What a part's form reaches: its characters, brackets and directives, where it returns, what
//! it runs at the kernel's end, and how it ends.

use super::{
    EDIT_ABOVE, MAX_PART_TOKENS, MAX_TOKEN_CHARS, Parts, directives, lex_line,
    region::{Found, Outside, problem},
    syntax::KEYWORDS,
    words,
};
use crate::tokens::{self, Kind, LexError, Token};

/// The part's tokens, or the first problem of its text: an `#include` that is no directive, a
/// comment or literal not closed, a trigraph, too many tokens or one too long.
pub(super) fn lexed(yours: &Parts) -> Result<Vec<Token>, (usize, String)> {
    let first_line = yours.region_start + 1;
    if let Some(line) = tokens::include_not_a_directive(&yours.region, first_line) {
        return problem(
            line,
            "this `#include` line is in a comment or continued from the line before: the course's headers are \
             included by a directive on a line of its own, and a header pasted here would be code no check read"
                .into(),
        );
    }
    let region_text = match yours.region.strip_suffix("\\\n") {
        Some(cut) => format!("{cut}\\"),
        None => yours.region.clone(),
    };
    let tokens = match tokens::tokenize(&region_text, first_line) {
        Ok(tokens) => tokens,
        Err(error) => {
            let reason = match error {
                LexError::UnterminatedComment { .. } => {
                    format!("a `/*` comment is not closed within your part: close it with `*/` before `{EDIT_ABOVE}`")
                }
                LexError::UnterminatedLiteral { .. } => {
                    "a string or character literal is not closed on its line".into()
                }
                LexError::RawString { .. } => {
                    "raw string literals (`R\"(...)\"`) are not accepted here: use an ordinary string".into()
                }
                LexError::TrailingSplice { .. } => {
                    format!("your last line ends with `\\`, which joins it to `{EDIT_ABOVE}`: remove the backslash")
                }
            };
            return problem(lex_line(&error), reason);
        }
    };
    if let Some((line, trigraph)) = tokens::trigraph(&tokens) {
        return problem(
            line,
            format!("`{trigraph}` is a trigraph, which some compilers read as another character: write it another way"),
        );
    }
    if tokens.len() > MAX_PART_TOKENS {
        return problem(
            first_line,
            format!(
                "your part has {} tokens, more than the {MAX_PART_TOKENS} a part may hold (the exercises' parts need \
                 a few hundred): write it shorter",
                tokens.len()
            ),
        );
    }
    if let Some(long) = tokens.iter().find(|t| t.text.chars().count() > MAX_TOKEN_CHARS) {
        return problem(
            long.line,
            format!(
                "a name, number or literal of {} characters, more than the {MAX_TOKEN_CHARS} a part's may have: \
                 write it shorter",
                long.text.chars().count()
            ),
        );
    }
    Ok(tokens)
}

/// The first bracket the part does not close or that closes one outside it, character outside
/// ASCII, directive not on a line of its own, pasted token, name a part may not use or
/// directive it may not hold (see [`words::refused_name`] and [`directives::directive_problem`]).
pub(super) fn balanced(tokens: &[Token], outside: &Outside) -> Found {
    let mut open: Vec<&Token> = Vec::new();
    // A directive's brackets are its own: a macro must close what it opens (see `#define`).
    let mut in_directive = false;
    for (index, token) in tokens.iter().enumerate() {
        let line = token.line;
        match token.kind {
            Kind::Directive => in_directive = true,
            Kind::EndOfDirective => in_directive = false,
            _ => {}
        }
        match (token.kind, token.text.as_str()) {
            (Kind::Other, c) => {
                let character = c.chars().next().unwrap_or('\0');
                let code = u32::from(character);
                // (A control or formatting character is shown by its code alone: printed, it would
                // act, a right-to-left override turning the message around.)
                let invisible = character.is_control()
                    || matches!(code, 0x00AD | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x2069 | 0xFEFF);
                return problem(
                    line,
                    match invisible {
                        true => format!(
                            "the invisible character U+{code:04X} is outside a comment or string: delete it (an \
                             editor may show it as a box, or not at all)"
                        ),
                        false => format!(
                            "the character U+{code:04X} (`{c}`) is outside a comment or string: retype that part in ASCII"
                        ),
                    },
                );
            }
            // Outside a literal, `\` starts only a universal character name: `\u005f_syncthreads`
            // spells `__syncthreads` where a tokenizer of ASCII names would not see it.
            (Kind::Punct, "\\") => {
                return problem(
                    line,
                    "a `\\` outside a string (a universal character name such as `\\u005f`?): write names in ASCII"
                        .into(),
                );
            }
            // A `#` in code is a directive the checks did not read as one (the compiler's idea of
            // a line's start differs): `#` and `##` belong in a `#define`'s body only.
            (Kind::Punct, "#") if !in_directive => {
                return problem(
                    line,
                    "a `#` that does not begin its line: put each directive on a line of its own, with nothing \
                     (not even a comment) before it"
                        .into(),
                );
            }
            // Pasted tokens are made after every check here has read the region: `re ## turn`
            // is an early `return`, `as ## m` inline assembly.
            (Kind::Punct, "##") => {
                return problem(
                    line,
                    "`##` pastes tokens into names and keywords that no check can see: write them out".into(),
                );
            }
            (Kind::Punct, "{" | "(" | "[" | "}" | ")" | "]") if in_directive => {}
            (Kind::Punct, "{" | "(" | "[") => open.push(token),
            (Kind::Punct, close @ ("}" | ")" | "]")) => {
                let opener = match close {
                    "}" => "{",
                    ")" => "(",
                    _ => "[",
                };
                match open.pop() {
                    Some(o) if o.text == opener => {}
                    Some(o) => {
                        return problem(
                            line,
                            format!("`{close}` closes the `{}` of line {}: balance them", o.text, o.line),
                        );
                    }
                    None => {
                        return problem(
                            line,
                            format!(
                                "`{close}` closes a `{opener}` opened outside your part: what your part opens it closes, and it closes nothing else"
                            ),
                        );
                    }
                }
            }
            (Kind::Identifier, _) => words::refused_name(token, outside)?,
            // which expand the code between directives, would see the call unexpanded.
            (Kind::Directive, _) if open.iter().any(|o| o.text != "{") => {
                let unclosed = open.iter().rev().find(|o| o.text != "{").expect("one");
                return problem(
                    line,
                    format!(
                        "a directive inside the `{}` of line {}: close the brackets before it, or put it before them",
                        unclosed.text, unclosed.line
                    ),
                );
            }
            (Kind::Directive, _) => directives::directive_problem(tokens, index, outside)?,
            _ => {}
        }
    }
    if let Some(unclosed) = open.first() {
        return problem(
            unclosed.line,
            format!("this `{}` is not closed within your part: close it before `{EDIT_ABOVE}`", unclosed.text),
        );
    }
    Ok(())
}

/// The part's tokens with its own macros expanded, as the compiler reads them.
pub(super) fn expanded(tokens: &[Token], first_line: usize) -> Result<Vec<Token>, (usize, String)> {
    // The code as the compiler reads it, the region's own macros expanded: what it declares, where
    // it returns and how it ends are read there too.
    let Ok(expanded) = tokens::expanded(tokens) else {
        return problem(
            first_line,
            format!(
                "your part's macros take more than {} steps to expand (each token made, and more for calls \
                 nested in calls and macros chained to macros): write the code out",
                tokens::EXPANSION_LIMIT
            ),
        );
    };
    Ok(expanded)
}

/// Inside the kernel: a `return` that leaves it, a destructor that runs at its end, a use of its
/// parameters (`plain` is `expanded` without attributes).
pub(super) fn stays_in_the_kernel(expanded: &[Token], plain: &[Token], outside: &Outside) -> Found {
    if outside.inside_function
        && !outside.starter_has("return")
        && let Some(line) = kernel_return(plain)
    {
        return problem(
            line,
            "`return` here leaves the kernel early, which the starter's part never does: remove it".into(),
        );
    }
    // A destructor of a class declared in the kernel runs at the kernel's end, after the code
    // outside: it could write the answer that code skipped.
    // (`~f(x)` after an operator, `(`, `,` or `return` is a negation.)
    if outside.inside_function
        && let Some(destructor) = expanded.windows(4).find(|w| {
            matches!(w[1].text.as_str(), "~" | "compl")
                && w[2].kind == Kind::Identifier
                && w[3].text == "("
                && (matches!(w[0].text.as_str(), "{" | ";" | "}" | ":" | "]")
                    || w[0].kind == Kind::Identifier
                        && !matches!(
                            w[0].text.as_str(),
                            "return" | "case" | "throw" | "co_return" | "co_yield" | "sizeof"
                        ))
        })
    {
        return problem(
            destructor[1].line,
            "a destructor here would run at the kernel's end, after the code outside your part: remove it".into(),
        );
    }
    // Inside the kernel, a part that reads or writes its parameters could write the answer and
    // point `out` elsewhere, or hand the code after it other input: they are that code's.
    if outside.inside_function
        && let Some(parameter) = expanded.iter().enumerate().find_map(|(at, t)| {
            let member = at > 0 && matches!(expanded[at - 1].text.as_str(), "." | "->" | "::");
            (t.kind == Kind::Identifier && !member && outside.parameters.contains(&t.text.as_str())).then_some(t)
        })
    {
        return problem(
            parameter.line,
            format!(
                "`{}` is the kernel's parameter, which the code after your part reads and writes through: \
                 your part may not use it, nor give the name to anything of its own, a member or an enumerator too \
                 (rename yours)",
                parameter.text
            ),
        );
    }
    Ok(())
}

/// Inside the kernel, an operator the part defines.
pub(super) fn no_operator_of_its_own(expanded: &[Token], outside: &Outside) -> Found {
    // Inside the kernel, an operator of a type of yours (`tile[r][c] = v`, `&tile[r][0]`) would
    // run your code within the code after your part.
    if outside.inside_function
        && let Some(operator) = own_operator(expanded)
    {
        return problem(
            operator.line,
            "an operator of yours would run within the code after your part when it uses your names: \
             declare `tile` and the rest as plain arrays and values"
                .into(),
        );
    }
    Ok(())
}

/// The first operator the part defines, a conversion too, but for a call operator (the code after
/// the part calls nothing of the part's).
fn own_operator(expanded: &[Token]) -> Option<&Token> {
    let call = |at: usize| {
        expanded.get(at + 1).is_some_and(|t| t.text == "(") && expanded.get(at + 2).is_some_and(|t| t.text == ")")
    };
    expanded.iter().enumerate().find(|&(at, t)| t.text == "operator" && !call(at)).map(|(_, t)| t)
}

/// A part that stops mid-statement, or ends with a `#pragma` for the code after it.
pub(super) fn ends_whole(tokens: &[Token], expanded: &[Token]) -> Found {
    // Code that stops mid-statement runs on into the code after the region: `if (c)` takes the next
    // statement as its body, `__launch_bounds__(..)` attaches to the kernel.
    if let Some(last) = expanded.last().filter(|t| !matches!(t.text.as_str(), ";" | "}")) {
        return problem(
            last.line,
            format!(
                "your part ends with `{}`, which runs on into the code after it: end it with a whole statement or \
                 definition (`;` or `}}`)",
                last.text
            ),
        );
    }
    // `#pragma unroll` applies to the loop that follows: after the region's code, one outside it.
    // (What follows it counts as it expands, each expanded token on its use's line, which no
    // directive shares: a macro that stands for nothing is no code.)
    let code_after = |line: usize| expanded.last().is_some_and(|last| last.line > line);
    // (Those that only say which warnings to show change no code.)
    // (Numbers after them, or one string after `message`: nothing a macro could make another
    // pragma of.)
    let about_warnings = |start: usize| {
        let directive = tokens::directive_tokens(tokens, start);
        let rest: Vec<&Token> = directive.iter().skip(3).collect();
        match directive.get(2).map(|word| word.text.as_str()) {
            Some(
                "nv_diag_suppress" | "nv_diag_warning" | "nv_diag_default" | "nv_diag_once" | "diag_suppress"
                | "diag_warning" | "diag_default",
            ) => !rest.is_empty() && rest.iter().all(|t| t.kind == Kind::Number || t.text == ","),
            Some("nv_diagnostic") => matches!(rest[..], [word] if matches!(word.text.as_str(), "push" | "pop")),
            Some("message") => match rest[..] {
                [string] => string.kind == Kind::Literal,
                [open, string, close] => open.text == "(" && string.kind == Kind::Literal && close.text == ")",
                _ => false,
            },
            _ => false,
        }
    };
    if let Some((start, _)) = tokens::directives(tokens)
        .filter(|(start, name)| *name == "pragma" && !code_after(tokens[*start].line) && !about_warnings(*start))
        .last()
    {
        return problem(
            tokens[start].line,
            "a `#pragma` after the last of your code applies to the code after your part: put it before the code it is for"
                .into(),
        );
    }
    Ok(())
}

/// The line of the first `return` in `code` that leaves the function the code is in: one that
/// is not inside a body of its own, a lambda's or a local class's.
fn kernel_return(code: &[Token]) -> Option<usize> {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    let opening = |close: usize, [open, shut]: [&str; 2]| {
        let mut depth = 0;
        (0..=close).rev().find(|&i| {
            depth += i32::from(text(i) == shut) - i32::from(text(i) == open);
            depth == 0
        })
    };
    // Back from `at` over what precedes it in its statement, a parenthesised group as one step.
    let back = |at: usize| {
        std::iter::successors(at.checked_sub(1), move |&i| match text(i) {
            ")" => opening(i, ["(", ")"]).and_then(|open| open.checked_sub(1)),
            _ => i.checked_sub(1),
        })
        .take_while(move |&i| !matches!(text(i), ";" | "{" | "}"))
    };
    // Before a group, the word it belongs to (`noexcept(true)`, `alignas(8)`).
    let group_of = |close: usize| opening(close, ["(", ")"]).and_then(|open| open.checked_sub(1)).map(text);
    // A `]` that ends a lambda's introducer: its `[` starts an expression, where a subscript's
    // or an array bound's follows a name, a `]`, a `)` or a `}` (`Tab{}[0]`).
    let introducer = |close: usize| {
        opening(close, ["[", "]"]).is_some_and(|open| {
            open == 0 || matches!(text(open - 1), "(" | "=" | "," | "{" | ";" | "return" | "?" | "&&" | "||" | "!")
        })
    };
    // What a trailing return type is made of (a parenthesised group is one step of `back`).
    let in_a_type = |i: usize| {
        matches!(code[i].kind, Kind::Identifier | Kind::Number)
            || matches!(text(i), "::" | "<" | ">" | "," | "*" | "&" | "&&" | ")")
    };
    let opens_own_body = |at: usize| {
        // Before a lambda's body: `]`, or its parameters after `]`, then perhaps `mutable`,
        // `constexpr`, `noexcept(...)` and, after the parameters, a trailing return type
        // (`-> decltype(c)`).
        let arrow = back(at).find(|&i| !in_a_type(i)).filter(|&i| text(i) == "->");
        let mut before = arrow.unwrap_or(at);
        loop {
            match before.checked_sub(1).map(text) {
                Some("mutable" | "constexpr" | "consteval" | "noexcept") => before -= 1,
                Some(")") if group_of(before - 1) == Some("noexcept") => {
                    before = opening(before - 1, ["(", ")"]).unwrap_or(1) - 1;
                }
                _ => break,
            }
        }
        let lambda = match before.checked_sub(1).map(text) {
            Some("]") => arrow.is_none() && introducer(before - 1),
            Some(")") => opening(before - 1, ["(", ")"])
                .is_some_and(|open| open > 0 && text(open - 1) == "]" && introducer(open - 1)),
            _ => false,
        };
        // A class's head: `struct`, then only names, `final`, bases (`: public B<T>`) and
        // `alignas(8)` before its body, where member functions return.
        let mut head = back(at).skip_while(|&i| {
            let word = code[i].kind == Kind::Identifier && !KEYWORDS.contains(&text(i)) || code[i].kind == Kind::Number;
            word || matches!(
                text(i),
                "::" | ":" | "," | "<" | ">" | "final" | "public" | "protected" | "private" | "virtual" | "alignas"
            ) || text(i) == ")"
                && matches!(group_of(i), Some("alignas" | "__align__" | "__attribute__" | "__attribute" | "__declspec"))
        });
        let class = head.next().is_some_and(|i| matches!(text(i), "struct" | "class" | "union"));
        lambda || class
    };
    // For each open `{`, whether it opens a body of its own.
    let mut open: Vec<bool> = Vec::new();
    for (at, token) in code.iter().enumerate() {
        match token.text.as_str() {
            "{" => open.push(opens_own_body(at)),
            "}" => {
                open.pop();
            }
            "return" if !open.contains(&true) => return Some(token.line),
            _ => {}
        }
    }
    None
}
