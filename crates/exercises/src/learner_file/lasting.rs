//! State kept from one launch to the next, which would let a kernel tell the profiled launch, the
//! first in its process, from the checked ones: `static`, `__device__` and `__managed__`
//! variables, constant memory that is not `const`, `mutable` members.

use std::collections::BTreeSet;

use super::{
    region::{Found, problem},
    syntax::{is_type_word, statement_start},
};
use crate::{
    declared,
    tokens::{Kind, Token},
};

/// A variable that lasts (`plain`: the expanded part without attributes).
pub(super) fn no_lasting_variable(plain: &[Token]) -> Found {
    // State kept from one launch to the next would let a kernel tell the profiled launch, the first
    // in its process, from the checked ones, which come after others.
    if let Some(state) = lasting_variable(plain) {
        let kept = "from one launch to the next, which the code after your part could read to act differently when \
                    it is profiled: keep values in locals or `constexpr` constants, and a table in `__constant__ const` memory \
                    (a table of pointers `constexpr`)";
        return problem(
            state.keyword.line,
            match state.unnamed_parameter {
                Some((name, first)) => format!(
                    "`{name}({first})` declares a variable `{name}` made from `{first}` where `{first}` is a value, \
                     and a function where it is a type, which this check cannot tell: if it declares a function, \
                     name its parameters (`{name}({first} value)`); a `{}` variable lasts {kept}",
                    state.keyword.text,
                    name = name.text,
                    first = first.text
                ),
                None => format!("`{}` here keeps a variable {kept}", state.keyword.text),
            },
        );
    }
    Ok(())
}

/// Constant memory a pointer could write.
pub(super) fn no_writable_constant(plain: &[Token]) -> Found {
    // `__constant__ unsigned lut[32]` is no `const` in C++: a pointer to it (`lut` itself) can
    // store there (`__stcg(lut, v)`), and that lasts from one launch to the next.
    if let Some(constant) = writable_constant(plain) {
        return problem(
            constant.line,
            "`__constant__` data that is not `const` can be written through a pointer to it, and what is written \
             lasts from one launch to the next: declare it `__constant__ const` (a table of pointers `constexpr`)"
                .into(),
        );
    }
    Ok(())
}

/// A `mutable` member.
pub(super) fn no_mutable_member(expanded: &[Token]) -> Found {
    // A `mutable` member is written through a `const` object, which would then last between
    // launches. (After a lambda's parameters, `mutable` is the lambda's: its copies last one call.)
    if let Some(mutable) = expanded
        .iter()
        .enumerate()
        .find(|&(at, t)| t.text == "mutable" && !(at > 0 && expanded[at - 1].text == ")"))
        .map(|(_, t)| t)
    {
        return problem(
            mutable.line,
            "a `mutable` member can be written through a `const` object, which lasts from one launch to the next: \
             keep values in locals"
                .into(),
        );
    }
    Ok(())
}

/// A variable that lasts from one launch to the next.
pub(super) struct Lasting<'t> {
    /// Its `static`, `__device__` or `__managed__`.
    pub(super) keyword: &'t Token,
    /// Its name and the one name in its parentheses, where those might be a function's unnamed
    /// parameter of a type the part does not declare (`rotate(size_t)`).
    unnamed_parameter: Option<(&'t Token, &'t Token)>,
}

/// The first variable in `code` that lasts from one launch to the next. Functions, which keep
/// nothing, `__constant__` data, which a kernel cannot write, and `constexpr` constants do not.
pub(super) fn lasting_variable(code: &[Token]) -> Option<Lasting<'_>> {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    let types = declared_types(code);
    (0..code.len()).filter(|&at| matches!(text(at), "static" | "__device__" | "__managed__")).find_map(|at| {
        // The declaration up to its declarator's end: a function's parameters, an initializer,
        // an array's bound, a body, or the next declarator (template arguments, `A<(1 > 2)>`,
        // are the type's).
        let (mut end, mut angles, mut parentheses) = (at + 1, 0usize, 0);
        // Where a name's template arguments close (`swz<32u>`, an explicit specialization).
        let mut arguments_closed = None;
        while end < code.len() {
            // A type in parentheses (`__remove_cv(unsigned) seen`, `decltype(auto) f()`,
            // `__align__(16)`) is the type's, whatever follows it (`decltype(0u) (seen)`); not a
            // function named `__rot` whose parameters a body or a `;` follows.
            if (text(end) == "decltype" || text(end).starts_with("__")) && text(end + 1) == "(" {
                let close = declared::matching(code, end + 1);
                if text(end) == "decltype" || !matches!(text(close + 1), "{" | ";" | "->" | "noexcept" | ",") {
                    end = close + 1;
                    continue;
                }
            }
            match text(end) {
                "<" if parentheses == 0 && code[end - 1].kind == Kind::Identifier => angles += 1,
                // (`>>` closes two: `Box<Box<unsigned>> seen`.)
                close @ (">" | ">>") if parentheses == 0 && angles > 0 => {
                    angles = angles.saturating_sub(close.len());
                    if angles == 0 {
                        arguments_closed = Some(end);
                    }
                }
                "(" | "[" if angles > 0 => parentheses += 1,
                ")" | "]" if angles > 0 => parentheses -= 1,
                // An operator's name (`operator[]`, `operator()`, `operator=`) runs to its `(`.
                "operator" => {
                    end += if text(end + 1) == "(" { 2 } else { 1 };
                    while end < code.len() && text(end + 1) != "(" {
                        end += 1;
                    }
                }
                "(" | "=" | ";" | "{" | "[" | "," if angles == 0 => break,
                _ => {}
            }
            end += 1;
        }
        let named = code[end - 1].kind == Kind::Identifier
            || arguments_closed == Some(end - 1)
            || (at..end).any(|i| text(i) == "operator");
        // `name(...)` declares a function only where what the parentheses hold reads as parameters,
        // a body follows them, or they hold the declarator (`auto (load)(...)`): else it is a
        // variable and its initializer (`seen(0)`, `v<3>(5)`, `seen(unsigned(5))`, `(seen)`).
        let close = declared::matching(code, end);
        let inside = &code[(end + 1).min(code.len())..close.min(code.len())];
        // `(seen)`, `((seen))`: the declarator in parentheses, then parameters or an initializer.
        // With `*` or `&` in them (`(*hook)(unsigned)`) it is a pointer or a reference, a variable.
        let declarator = !inside.is_empty()
            && inside.iter().filter(|t| t.kind == Kind::Identifier).count() == 1
            && inside.iter().all(|t| t.kind == Kind::Identifier || matches!(t.text.as_str(), "(" | ")"))
            && !inside.iter().any(|t| is_type_word(&t.text) || types.contains(t.text.as_str()));
        let (parameters, after) = match declarator {
            true if text(close + 1) == "(" => {
                let second = declared::matching(code, close + 1);
                (&code[(close + 2).min(code.len())..second.min(code.len())], second + 1)
            }
            true => (&code[0..0], usize::MAX),
            false => (inside, close + 1),
        };
        let function = text(end) == "("
            && named
            && after != usize::MAX
            && (matches!(text(after), "{" | "->" | "noexcept") && !declarator || parameters_follow(parameters, &types))
            && further_functions(code, after, &types);
        // (Even `const` data there is memory a pointer can reach and write, by a cast through a
        // template; `__constant__ const` memory a kernel cannot write (`writable_constant` sees to
        // the `const`), and the compiler reads a `constexpr` value where it is used.)
        let declares = end < code.len();
        // A `const` number or table (`static const unsigned mask = 31u;`) is a constant as a
        // `constexpr` one is: no check lets a pointer reach it, as none lets one reach a
        // `constexpr` table. Not a pointer (its `const` may be what it points to), `volatile`
        // data, nor `__managed__` memory, which the host writes: a built-in type's, named by
        // `static`, `__device__`, `const` and `inline` alone.
        let mut angles = 0usize;
        let const_number = code[at].text != "__managed__"
            && (at..end).any(|i| {
                match text(i) {
                    "<" => angles += 1,
                    ">" => angles = angles.saturating_sub(1),
                    ">>" => angles = angles.saturating_sub(2),
                    _ => {}
                }
                angles == 0 && text(i) == "const"
            })
            // (Of a built-in type: a template's type or a struct may hold a pointer.)
            // (The name last, not in parentheses: `const T (seen)` is of a template's type.)
            && (at..end).all(|i| {
                is_type_word(text(i))
                    || matches!(text(i), "static" | "__device__" | "const" | "inline")
                    || i == end - 1 && text(end) != "("
            });
        let constant = (at..end).any(|i| matches!(text(i), "__constant__" | "constexpr")) || const_number;
        // `rotate(size_t);`: a function where the name in the parentheses is a type, which only the
        // headers may say.
        let unnamed_parameter = match inside {
            [first]
                if end - 1 > at + 1
                    && !matches!(text(end - 2), "const" | "volatile")
                    && code[end - 1].kind == Kind::Identifier
                    && first.kind == Kind::Identifier
                    && !is_type_word(&code[end - 1].text)
                    && !parameters_follow(inside, &types)
                    && matches!(text(close + 1), ";" | ",") =>
            {
                Some((&code[end - 1], first))
            }
            _ => None,
        };
        // Shared memory lasts one block, `static` or not (`static __shared__ unsigned tile[32][33];`):
        // `__shared__` among the declaration's words, not in a group (`decltype(sizeof(__shared__ unsigned))`).
        let mut depth = 0i64;
        let shared = (statement_start(code, at)..end).any(|i| {
            depth += i64::from(text(i) == "(") - i64::from(text(i) == ")");
            depth == 0 && text(i) == "__shared__"
        });
        (declares && !function && !constant && !shared).then_some(Lasting { keyword: &code[at], unnamed_parameter })
    })
}

/// Whether every declarator after a function's, from `at` (`, flip(unsigned x)`), declares a
/// function too: `helper(unsigned), seen;` declares a variable `seen`.
fn further_functions(code: &[Token], mut at: usize, types: &BTreeSet<&str>) -> bool {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    while text(at) == "," {
        let mut name = at + 1;
        while matches!(text(name), "*" | "&" | "&&") {
            name += 1;
        }
        let named = code.get(name).is_some_and(|t| t.kind == Kind::Identifier);
        if !named || text(name + 1) != "(" {
            return false;
        }
        let close = declared::matching(code, name + 1);
        if !parameters_follow(&code[name + 2..close.min(code.len())], types) {
            return false;
        }
        at = close + 1;
    }
    true
}

/// The names `code` declares as types: `struct Coord`, `enum class Mode`, `using Index = ...`,
/// `typedef ... Index;`.
pub(super) fn declared_types(code: &[Token]) -> BTreeSet<&str> {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    let mut types = BTreeSet::new();
    for (at, token) in code.iter().enumerate() {
        let name = match token.text.as_str() {
            "struct" | "class" | "enum" if text(at + 1) != "class" => Some(at + 1),
            // A template's type parameter: `template <typename U>`.
            "typename" if matches!(text(at + 2), "," | ">" | "=") => Some(at + 1),
            "typename" | "class" if text(at + 1) == "..." => Some(at + 2),
            "using" if text(at + 2) == "=" => Some(at + 1),
            "typedef" => (at + 1..code.len()).find(|&i| text(i) == ";").map(|end| end - 1),
            _ => None,
        };
        if let Some(name) = name.filter(|&i| code.get(i).is_some_and(|t| t.kind == Kind::Identifier)) {
            types.insert(code[name].text.as_str());
        }
    }
    // A name the part also gives a variable, function or enumerator may hide the type where it
    // is used (`constexpr unsigned zz = 0;` after `template <typename zz>`): it is no type here.
    let mut hidden = BTreeSet::new();
    for (at, token) in code.iter().enumerate().filter(|(_, t)| t.kind == Kind::Identifier) {
        let before = at.checked_sub(1).map(|i| &code[i]);
        let declarator = before.is_some_and(|b| {
            (b.kind == Kind::Identifier
                && !declared::EXPRESSION_WORDS.contains(&b.text.as_str())
                && !matches!(
                    b.text.as_str(),
                    "struct" | "class" | "enum" | "union" | "typename" | "using" | "namespace"
                ))
                || matches!(b.text.as_str(), "*" | "&" | "&&" | ">")
        }) && matches!(text(at + 1), "=" | ";" | "," | "(" | "[" | "{" | ")" | ":");
        let enumerator = matches!(before.map(|b| b.text.as_str()), Some("{" | ","))
            && matches!(text(at + 1), "," | "=" | "}")
            && (0..at)
                .rev()
                .find(|&i| text(i) == "{")
                .is_some_and(|open| (open.saturating_sub(6)..open).any(|i| text(i) == "enum"));
        if declarator || enumerator {
            hidden.insert(token.text.as_str());
        }
    }
    types.retain(|name| !hidden.contains(name));
    types
}

/// Whether `inside` (what a declarator's parentheses hold) reads as a parameter list: empty, or a
/// first parameter that is a type and a name (`unsigned x`, `const uint3& v`, `Row<32u> r`), or a
/// type alone that is one of C++'s words or of `types`, the part's own (`unsigned`, `Coord`).
/// Another name alone might be a type or a variable, so is not taken for one; nor is an
/// expression (`0`, `S::value`, `sizeof zero`).
fn parameters_follow(inside: &[Token], types: &BTreeSet<&str>) -> bool {
    let is_type = |word: &str| is_type_word(word) || types.contains(word);
    // (Up to its default argument, if any: `unsigned b = 0u`.)
    let first: Vec<&Token> = inside.iter().take_while(|t| t.text != "," && t.text != "=").collect();
    let (mut depth, mut plain) = (0i32, true);
    for (at, token) in first.iter().enumerate() {
        match token.text.as_str() {
            "<" | "[" if at > 0 => depth += 1,
            ">" | "]" if depth > 0 => depth -= 1,
            "*" | "&" | "&&" | "::" => {}
            _ if token.kind == Kind::Identifier => {}
            _ if token.kind == Kind::Literal && depth > 0 => {}
            _ => plain = false,
        }
    }
    // Words that make an expression of names: `sizeof zero`, `zero bitand zero`.
    let expression_word = first.iter().any(|t| {
        matches!(
            t.text.as_str(),
            "sizeof"
                | "alignof"
                | "__alignof__"
                | "noexcept"
                | "new"
                | "delete"
                | "throw"
                | "typeid"
                | "co_await"
                | "and"
                | "or"
                | "not"
                | "xor"
                | "bitand"
                | "bitor"
                | "compl"
                | "and_eq"
                | "or_eq"
                | "xor_eq"
                | "not_eq"
        ) || t.text.ends_with("_cast")
    });
    // A type, then a name: the type begins with a word of C++ (`const Coord& c`, `unsigned x`), or
    // is one name (`Coord c`) or a template's (`Row<32u> r`). `zero * one` might be either.
    let typed = first.first().is_some_and(|t| {
        is_type(&t.text) || matches!(t.text.as_str(), "const" | "volatile" | "struct" | "class" | "typename")
    });
    let one_name = first.len() == 2 && first[0].kind == Kind::Identifier;
    let template_type = first.len() >= 4 && first[1].text == "<";
    let named = first.len() >= 2
        && first.last().is_some_and(|t| t.kind == Kind::Identifier && !is_type_word(&t.text))
        && (typed || one_name || template_type);
    let builtin_type = !first.is_empty()
        && first.iter().all(|t| is_type(&t.text) || matches!(t.text.as_str(), "const" | "volatile" | "*" | "&" | "&&"));
    inside.is_empty() || plain && !expression_word && (named || builtin_type)
}

/// The `__constant__` of the first declaration in `code` of constant memory that is not `const`
/// (or `constexpr`) data, or holds a pointer.
fn writable_constant(code: &[Token]) -> Option<&Token> {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    (0..code.len()).filter(|&at| text(at) == "__constant__").find_map(|at| {
        let start = statement_start(code, at);
        let end = (at..code.len()).find(|&i| matches!(text(i), "=" | ";" | "{" | "(" | "[")).unwrap_or(code.len());
        let declaration = start..end;
        // The declaration's own `const`: not one inside `<...>` or `(...)` (`Box<const unsigned>`,
        // `template <typename X = const unsigned>`).
        let mut depth = 0i32;
        let mut constant = false;
        for i in declaration.clone() {
            match text(i) {
                "<" | "(" => depth += 1,
                ">" | ")" => depth -= 1,
                ">>" => depth -= 2,
                "const" | "constexpr" if depth == 0 => constant = true,
                _ => {}
            }
        }
        // (A template's `const` could be anyone's: `template <bool B = (1 > 0), class X = const unsigned>`.)
        let pointer = declaration.clone().any(|i| matches!(text(i), "*" | "&" | "&&" | "template"));
        (!constant || pointer).then_some(&code[at])
    })
}
