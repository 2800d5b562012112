//! Shared memory holds what the last block on its multiprocessor left there: a part may declare
//! its starter's tile, which the code after it fills, and use it only where nothing is read.

use std::collections::BTreeSet;

use super::{
    region::{Found, Outside, problem},
    syntax::{brace_step, statement_start},
};
use crate::{
    declared,
    tokens::{self, Kind, Token},
};

/// A read of the tile before the code after the part fills it, or shared memory of the part's own
/// (`plain`: the expanded part without attributes).
pub(super) fn no_tile_read_or_own_shared(plain: &[Token], outside: &Outside) -> Found {
    // Shared memory holds what the last block on its multiprocessor left there, from this launch
    // or an earlier one (the reference's, another file's): a `__shared__` variable that only the
    // part reads would hand it leftovers. A kernel's tile, declared at the part's own level, is
    // filled by the code after it.
    // The tiles the starter's part declares, at its own level in the kernel.
    let starter_code = tokens::without_attributes(&outside.starter_part);
    let tiles: BTreeSet<&str> = (0..starter_code.len())
        .filter(|&at| outside.inside_function && starter_code[at].text == "__shared__")
        .filter_map(|at| {
            let (bound, _) = shared_declaration(&starter_code, at);
            (bound > at + 1).then(|| starter_code[bound - 1].text.as_str())
        })
        .collect();
    if let Some(read) = tile_read(plain, &tiles) {
        return problem(
            read.line,
            format!(
                "your part uses `{}`, which the code after it fills: until then it holds what the last block on that \
                 multiprocessor left there, from this launch or an earlier one: declare it, and leave its use to that code",
                read.text
            ),
        );
    }
    if let Some(at) = own_shared_variable(plain, outside.inside_function, &tiles) {
        let shared = &plain[at];
        if at > 0 && plain[at - 1].text == "extern" {
            return problem(
                shared.line,
                "`extern __shared__` declares shared memory of the size a launch gives, and the grader's launches \
                 give none: declare the tile with its size, as the starter does"
                    .into(),
            );
        }
        // (`tile[32][33] = {}`: the tile's own declarator, up to its `,` or `;`, holds an `=`.)
        let (_, end) = shared_declaration(plain, at);
        let declaration = plain[at..end].iter().map(|token| token.text.as_str());
        let mut tiles_declarator = declaration.skip_while(|text| !tiles.contains(text)).take_while(|text| *text != ",");
        if tiles_declarator.any(|text| text == "=") {
            return problem(
                shared.line,
                "a `__shared__` variable takes no initializer (CUDA gives shared memory none, and the code after your \
                 part fills the tile): remove the `=` and what follows it"
                    .into(),
            );
        }
        if outside.inside_function && tile_declaration(plain, at, &tiles) == Some(TypeWritten::Otherwise) {
            return problem(
                shared.line,
                "`__shared__` here declares the tile with its element type written in a way the checks do not \
                 read (`decltype(...)`, `__typeof__(...)`, a template's arguments): write the type by name, as the \
                 starter does"
                    .into(),
            );
        }
        return problem(
            shared.line,
            "`__shared__` here declares shared memory that only your part reads, which holds whatever the last \
             block on that multiprocessor left there, from this launch or an earlier one: compute from the \
             arguments, keep values in locals or `constexpr` constants, and a table in `__constant__ const` memory"
                .into(),
        );
    }
    Ok(())
}

/// Where the first `__shared__` is in `code` (a part's tokens, without attributes) that declares a variable
/// of the part's own: anywhere in a part outside a function (`inside_function` false); in a part
/// within a kernel, inside a body of the part's (a function's, a lambda's, a block's), or at the
/// part's own level anything but one plain declaration of a name the starter's part declares
/// there (`tiles`: `__shared__ unsigned tile[32][33];`), a declarator in parentheses, a second
/// one, or another name, however the code after names its own.
fn own_shared_variable(code: &[Token], inside_function: bool, tiles: &BTreeSet<&str>) -> Option<usize> {
    let mut open = 0;
    code.iter().enumerate().find_map(|(at, t)| {
        let one_tile = || tile_declaration(code, at, tiles) == Some(TypeWritten::Plainly);
        let own = t.text == "__shared__" && (!inside_function || open > 0 || !one_tile());
        open += brace_step(t);
        own.then_some(at)
    })
}

/// How a tile's declaration writes its element type.
#[derive(Debug, PartialEq, Eq)]
enum TypeWritten {
    /// By names alone: `unsigned`, `uint8_t`, `Row` of `using Row = unsigned[33];`, with `static`,
    /// `volatile`, `const`, `::`.
    Plainly,
    /// Otherwise: `decltype(0u)`, `__typeof__(x)`, `Box<unsigned>`.
    Otherwise,
}

/// How the declaration whose `__shared__` is at `at` writes its type, where it declares one of
/// `tiles` alone (one declarator, not in parentheses, without an initializer, not `extern`).
fn tile_declaration(code: &[Token], at: usize, tiles: &BTreeSet<&str>) -> Option<TypeWritten> {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    let (bound, end) = shared_declaration(code, at);
    // (Outside the bounds' brackets: `[32 + (PAD)]` is a bound.)
    let mut depth = 0i64;
    let mut outside_bounds = (bound..end).filter(|&i| {
        depth += i64::from(text(i) == "[") - i64::from(text(i) == "]");
        depth == 0 && text(i) != "]"
    });
    // (`extern __shared__ unsigned tile[][33];` is memory the launch does not give.)
    let dynamic = (statement_start(code, at)..at).any(|i| text(i) == "extern");
    let alone = !dynamic
        && bound > at + 1
        && tiles.contains(text(bound - 1))
        && !outside_bounds.any(|i| matches!(text(i), "(" | "," | "{" | "="));
    let plainly = (at + 1..bound - 1)
        .all(|i| code[i].kind == Kind::Identifier || matches!(text(i), "static" | "volatile" | "const" | "::"));
    alone.then_some(if plainly { TypeWritten::Plainly } else { TypeWritten::Otherwise })
}

/// The declaration whose `__shared__` is at `at`: where its first `[` is (the declarator's name
/// just before it), or its end if it has none, and where it ends (its `;`).
fn shared_declaration(code: &[Token], at: usize) -> (usize, usize) {
    let end = (at..code.len()).find(|&i| code[i].text == ";").unwrap_or(code.len());
    let bound = (at + 1..end).find(|&i| code[i].text == "[").unwrap_or(end);
    (bound, end)
}

/// The first place where a part within a kernel uses its tile (`tiles`, the starter's part's
/// shared names), which the code after fills: before that it holds what the last block left
/// there, and a pointer to it could read that. (Its own declaration, and `sizeof`, `alignof` or
/// `decltype` of it, read nothing.)
fn tile_read<'c>(code: &'c [Token], tiles: &BTreeSet<&str>) -> Option<&'c Token> {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    let mut unevaluated_until = 0;
    let mut declaring = false;
    code.iter().enumerate().find_map(|(at, t)| {
        if matches!(text(at), "sizeof" | "alignof" | "__alignof__" | "decltype" | "__typeof__") {
            unevaluated_until = unevaluated_until.max(match text(at + 1) {
                "(" => declared::matching(code, at + 1),
                _ => at + 1,
            });
        }
        match text(at) {
            "__shared__" => declaring = true,
            ";" => declaring = false,
            _ => {}
        }
        (tiles.contains(t.text.as_str()) && !declaring && at > unevaluated_until).then_some(t)
    })
}
