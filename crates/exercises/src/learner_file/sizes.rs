//! Every launch is checked, Nsight Compute counts at the check size and the clock runs at the
//! timed size: a part that could tell them apart could be conflict-free only where it is counted.

use std::collections::BTreeSet;

use super::{
    region::{Found, problem},
    syntax::{NUMBER_OPERATORS, is_type_word, opener, statement_start},
};
use crate::{
    declared,
    tokens::{Kind, Token},
};

/// A use of the grid's size or the block's place (but in a debugging print). `numbers` are the
/// starter's macros before the part that stand for a number (`TILE`), which a print may show.
pub(super) fn same_at_every_size(expanded: &[Token], numbers: &BTreeSet<String>) -> Found {
    // Every launch is checked, Nsight Compute counts at the check size and the clock runs at the
    // timed size: a part that could tell them apart could be conflict-free only where it is counted.
    // (Hopper's cluster built-ins are the grid's and the block's too, in clusters of one block.)
    // (But for a debugging print left in, `if (blockIdx.x == 0 && threadIdx.x == 0) printf(...);`,
    // which changes no value.)
    let printed = only_printed(expanded, numbers);
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
                 if it shows only literals, `sizeof`s, and numbers, built-in indices and the starter's numbers \
                 with operators, no name of yours, which could be a class whose copy runs code; a print of \
                 your own variables may stand under `if (threadIdx.x == 0)`, in every block)"
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

/// A `printf` whose value is used: what it returns (the characters printed, or a negative number
/// when its buffer is full) depends on what earlier launches printed.
pub(super) fn no_value_of_a_print(expanded: &[Token]) -> Found {
    let text = |i: usize| expanded.get(i).map_or("", |t| t.text.as_str());
    let used = expanded.iter().enumerate().find(|&(at, t)| {
        t.text == "printf"
            && text(at + 1) == "("
            && (!starts_a_statement(expanded, at) || text(declared::matching(expanded, at + 1) + 1) != ";")
    });
    match used {
        Some((_, print)) => problem(
            print.line,
            "the value of `printf` depends on what earlier launches printed (a negative number once its buffer \
             is full): call it as a statement of its own, `printf(...);`"
                .into(),
        ),
        None => Ok(()),
    }
}

/// Whether a statement starts at `at`: after `;`, a brace, `else`, `do`, a label's `:`, or the `)`
/// of an `if`, `for`, `while` or `switch` (not a cast's).
fn starts_a_statement(code: &[Token], at: usize) -> bool {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    // (A `:` ends a label only after `case ...`, `default` or a name alone, not a `?`'s.)
    let label = |colon: usize| {
        let start = statement_start(code, colon);
        matches!(text(start), "case" | "default") || colon == start + 1 && code[start].kind == Kind::Identifier
    };
    at == 0
        || matches!(text(at - 1), ";" | "{" | "}" | "else" | "do")
        || text(at - 1) == ":" && label(at - 1)
        || text(at - 1) == ")"
            && opener(code, at - 1)
                .is_some_and(|open| open > 0 && matches!(text(open - 1), "if" | "for" | "while" | "switch"))
}

/// The places of `code` that only decide or make what a `printf` prints: each `printf(...);`
/// statement whose arguments are plain values, and each `if` whose condition is plain and whose
/// body, with no `else`, is such statements (and such `if`s) alone. A plain condition or value is
/// an expression of numbers, the built-in indices (`blockIdx.x`), the starter's `numbers` (`TILE`)
/// and the operators of numbers, perhaps cast to a built-in type; a value may also be a literal or
/// a `sizeof`. Nothing in them runs code of the part's (a call, a constructor, a conversion, an
/// operator of a class, a class copied through printf's `...`, which a name of the part's could
/// be): what they read changes no value the kernel computes.
fn only_printed(code: &[Token], numbers: &BTreeSet<String>) -> BTreeSet<usize> {
    let printed = Printed { code, numbers };
    let mut places = BTreeSet::new();
    // A `printf` of the part's own (`auto (printf) = [&](const char*) { ... };`) is no print:
    // every `printf` must be a call, after no type or name.
    let text = |i: usize| printed.text(i);
    let declares_printf = (0..code.len()).any(|at| {
        text(at) == "printf"
            && (text(at + 1) != "("
                || at > 0
                    && (code[at - 1].kind == Kind::Identifier && !matches!(text(at - 1), "return" | "else")
                        || matches!(text(at - 1), "*" | "&" | "&&" | "::" | "." | "->" | ">")))
    });
    if declares_printf {
        return places;
    }
    for at in (0..code.len()).filter(|&at| starts_a_statement(code, at)) {
        if let Some(end) = printed.statement(at) {
            places.extend(at..=end);
        }
    }
    places
}

/// The part's code, read for debugging prints ([`only_printed`]).
struct Printed<'c> {
    code: &'c [Token],
    numbers: &'c BTreeSet<String>,
}

impl Printed<'_> {
    fn text(&self, i: usize) -> &str {
        self.code.get(i).map_or("", |t| t.text.as_str())
    }

    /// The end (its `;` or `}`) of a print or a printing `if` at `at`.
    fn statement(&self, at: usize) -> Option<usize> {
        self.print(at).or_else(|| self.printing_if(at))
    }

    /// The end (its `;`) of a `printf(...);` statement at `at` whose arguments are plain values.
    fn print(&self, at: usize) -> Option<usize> {
        let close = declared::matching(self.code, at + 1);
        if self.text(at) != "printf" || self.text(at + 1) != "(" || self.text(close + 1) != ";" {
            return None;
        }
        let inside: Vec<&Token> = self.code[at + 2..=close].iter().collect();
        declared::arguments(&inside).iter().all(|argument| self.plain_value(argument)).then_some(close + 1)
    }

    /// The end of an `if` at `at` whose condition is plain and whose body, with no `else`, is a
    /// print or such an `if`, or statements of those in braces.
    fn printing_if(&self, at: usize) -> Option<usize> {
        if self.text(at) != "if" || self.text(at + 1) != "(" {
            return None;
        }
        let close = declared::matching(self.code, at + 1);
        let plain: Vec<&Token> = self.code.get(at + 2..close)?.iter().collect();
        if !self.plain_expression(&plain) {
            return None;
        }
        let end = match self.text(close + 1) {
            "{" => {
                let shut = declared::matching(self.code, close + 1);
                let mut next = close + 2;
                while let Some(end) = self.statement(next).filter(|&end| end < shut) {
                    next = end + 1;
                }
                (next == shut && next > close + 2).then_some(shut)?
            }
            _ => self.statement(close + 1)?,
        };
        (self.text(end + 1) != "else").then_some(end)
    }

    /// An argument: a literal or adjacent literals, a `sizeof`, or a plain expression, perhaps
    /// cast to built-in types.
    fn plain_value(&self, argument: &[&Token]) -> bool {
        let word = |i: usize| argument.get(i).map_or("", |t| t.text.as_str());
        let mut from = 0;
        if word(0) == "(" {
            let close = declared::matching(argument, 0);
            if close < argument.len() && (1..close).all(|i| is_type_word(word(i)) || word(i) == "const") {
                from = close + 1;
            }
        }
        match &argument[from..] {
            // `sizeof name` or `sizeof(...)`, nothing after.
            [size, name] if size.text == "sizeof" => name.kind == Kind::Identifier,
            [size, open, ..] if size.text == "sizeof" => {
                open.text == "(" && declared::matching(&argument[from..], 1) == argument.len() - from - 1
            }
            // Adjacent string literals.
            value @ [first, ..] if first.kind == Kind::Literal => value.iter().all(|t| t.kind == Kind::Literal),
            value => self.plain_expression(value),
        }
    }

    /// Numbers, literals, `sizeof`s, built-in indices and the starter's `numbers`, with the
    /// operators of numbers, parentheses and conversions to built-in types: no call, assignment,
    /// comma or name of the part's.
    fn plain_expression(&self, expression: &[&Token]) -> bool {
        let text = |i: usize| expression.get(i).map_or("", |t| t.text.as_str());
        let mut at = 0;
        while at < expression.len() {
            if matches!(text(at), "blockIdx" | "gridDim" | "threadIdx" | "blockDim")
                && text(at + 1) == "."
                && matches!(text(at + 2), "x" | "y" | "z")
            {
                at += 3;
                continue;
            }
            // A `sizeof` is a number too, whatever it measures (nothing in it runs).
            if text(at) == "sizeof" {
                match text(at + 1) {
                    "(" => at = declared::matching(expression, at + 1) + 1,
                    _ if expression.get(at + 1).is_some_and(|t| t.kind == Kind::Identifier) => at += 2,
                    _ => return false,
                }
                continue;
            }
            let token = expression[at];
            let operator = NUMBER_OPERATORS.contains(&token.text.as_str());
            // (A literal is a value too, `TILE % 2 ? "odd" : "even"`; a built-in type's name or
            // `static_cast` only converts one: `unsigned(TILE)`, `static_cast<int>(ROWS)`.)
            let number = matches!(token.kind, Kind::Number | Kind::Literal)
                || token.kind == Kind::Identifier && self.numbers.contains(&token.text)
                || is_type_word(&token.text)
                || matches!(token.text.as_str(), "static_cast" | "const");
            if !number && !operator {
                return false;
            }
            at += 1;
        }
        !expression.is_empty()
    }
}
