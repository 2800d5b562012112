//! Every launch is checked, Nsight Compute counts at the check size and the clock runs at the
//! timed size: a part that could tell them apart could be conflict-free only where it is counted.

use std::collections::BTreeSet;

use super::{
    region::{Found, problem},
    syntax::is_type_word,
};
use crate::{
    declared,
    tokens::{Kind, Token},
};

/// A use of the grid's size or the block's place (but in a debugging print).
pub(super) fn same_at_every_size(expanded: &[Token]) -> Found {
    // Every launch is checked, Nsight Compute counts at the check size and the clock runs at the
    // timed size: a part that could tell them apart could be conflict-free only where it is counted.
    // (Hopper's cluster built-ins are the grid's and the block's too, in clusters of one block.)
    // (But for a debugging print left in, `if (blockIdx.x == 0 && threadIdx.x == 0) printf(...);`,
    // which changes no value.)
    let printed = only_printed(expanded);
    if let Some((_, grid)) = expanded.iter().enumerate().find(|&(at, t)| {
        (matches!(t.text.as_str(), "gridDim" | "blockIdx")
            || t.text.starts_with("__cluster")
            || t.text.starts_with("__nv_"))
            && !printed.contains(&at)
    }) {
        // (A print that is no debugging print as the exception reads one is the likely cause.)
        let print = match expanded.iter().any(|t| t.text == "printf") {
            true => {
                " (a debugging print may read it under `if (blockIdx.x == 0 && threadIdx.x == 0)`, with no `else`, \
                 if it shows only literals, numbers, built-in indices and `sizeof`s)"
            }
            false => "",
        };
        return problem(
            grid.line,
            format!(
                "`{}` would let your part act otherwise at the size that is profiled and the size that is timed: \
                 index by the thread and the element alone{print}",
                grid.text
            ),
        );
    }
    Ok(())
}

/// The places of `code` that only decide or make what a `printf` prints: each `printf(...);`
/// statement whose arguments are plain values, and each `if` whose condition is plain and whose
/// body, with no `else`, is such statements alone. A plain condition holds the built-in indices
/// (`blockIdx.x`), numbers and operators; a plain value is a literal, a number, a built-in index
/// or a `sizeof`, perhaps cast to a built-in type. Nothing in them runs code of the part's (a
/// call, a constructor, a conversion, an operator of a class, a class copied through printf's
/// `...`, which a name of the part's could be): what they read changes no value the kernel computes.
fn only_printed(code: &[Token]) -> BTreeSet<usize> {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    // `blockIdx.x`: three tokens.
    let index = |i: usize| {
        matches!(text(i), "blockIdx" | "gridDim" | "threadIdx" | "blockDim")
            && text(i + 1) == "."
            && matches!(text(i + 2), "x" | "y" | "z")
    };
    let plain_condition = |mut at: usize, end: usize| {
        while at < end {
            if index(at) {
                at += 3;
                continue;
            }
            let operator = matches!(
                text(at),
                "==" | "!=" | "<" | ">" | "<=" | ">=" | "&&" | "||" | "!" | "+" | "-" | "*" | "/" | "%" | "(" | ")"
            );
            if code[at].kind != Kind::Number && !operator {
                return false;
            }
            at += 1;
        }
        true
    };
    // One argument: a cast to built-in types, perhaps, then a plain value.
    let plain_value = |argument: &[&Token]| {
        let word = |i: usize| argument.get(i).map_or("", |t| t.text.as_str());
        let mut from = 0;
        if word(0) == "(" {
            let close = declared::matching(argument, 0);
            if close >= argument.len() || !(1..close).all(|i| is_type_word(word(i)) || word(i) == "const") {
                return false;
            }
            from = close + 1;
        }
        match &argument[from..] {
            [one] => matches!(one.kind, Kind::Number | Kind::Literal),
            [name, dot, axis] if matches!(name.text.as_str(), "blockIdx" | "gridDim" | "threadIdx" | "blockDim") => {
                dot.text == "." && matches!(axis.text.as_str(), "x" | "y" | "z")
            }
            // `sizeof name` or `sizeof(...)`, nothing after.
            [size, name] if size.text == "sizeof" => name.kind == Kind::Identifier,
            [size, open, ..] if size.text == "sizeof" => {
                open.text == "(" && declared::matching(&argument[from..], 1) == argument.len() - from - 1
            }
            // Adjacent string literals.
            [_, ..] => argument[from..].iter().all(|t| t.kind == Kind::Literal),
            [] => false,
        }
    };
    // The end (its `;`) of a `printf(...);` statement at `at` whose arguments are plain values.
    let print = |at: usize| {
        let close = declared::matching(code, at + 1);
        if text(at) != "printf" || text(at + 1) != "(" || text(close + 1) != ";" {
            return None;
        }
        let inside: Vec<&Token> = code[at + 2..=close].iter().collect();
        declared::arguments(&inside).iter().all(|argument| plain_value(argument)).then_some(close + 1)
    };
    let statement_start = |at: usize| at == 0 || matches!(text(at - 1), ";" | "{" | "}");
    let mut printed = BTreeSet::new();
    // A `printf` of the part's own (`auto (printf) = [&](const char*) { ... };`) is no print:
    // every `printf` must be a call, after no type or name.
    let declares_printf = (0..code.len()).any(|at| {
        text(at) == "printf"
            && (text(at + 1) != "("
                || at > 0
                    && (code[at - 1].kind == Kind::Identifier && !matches!(text(at - 1), "return" | "else")
                        || matches!(text(at - 1), "*" | "&" | "&&" | "::" | "." | "->" | ">")))
    });
    if declares_printf {
        return printed;
    }
    for at in 0..code.len() {
        if let Some(end) = print(at).filter(|_| statement_start(at)) {
            printed.extend(at..=end);
        }
        if text(at) != "if" || text(at + 1) != "(" || !statement_start(at) {
            continue;
        }
        let close = declared::matching(code, at + 1);
        let body_end = match text(close + 1) {
            "{" => {
                let shut = declared::matching(code, close + 1);
                let mut next = close + 2;
                while let Some(end) = print(next).filter(|&end| end < shut) {
                    next = end + 1;
                }
                (next == shut && next > close + 2).then_some(shut)
            }
            _ => print(close + 1),
        };
        if let Some(end) = body_end.filter(|&end| text(end + 1) != "else" && plain_condition(at + 2, close)) {
            printed.extend(at..=end);
        }
    }
    printed
}
