//! The names a learner's region declares where the code after it can see them: at the region's
//! top level. A name the rest of the file uses, declared there, changes what that code means
//! without a line of it changing: `const uint3 threadIdx = ...;` in a kernel's body gives every
//! later `threadIdx.x` another thread's index, and a function `load(const unsigned*, unsigned)`
//! before the kernel is called in place of the header's.
//!
//! Read from tokens, statement by statement. A statement that opens a scope of its own (`if`,
//! `for`, `while`, `switch`, `do`, a block) declares nothing the code after it sees. Any other is
//! a declaration when only specifiers and a type (names, `*`, `&`, `::`, template arguments,
//! `__align__(16)`) come before a name that a declarator goes on from (`=`, `;`, `,`, `[`, `(`,
//! `{`, `<`); it declares that name and the first after each top-level comma. A structured binding
//! declares every name in its brackets, `struct S { ... } a;` the names after the body, `using
//! A = ...;` the alias; a leading `::` or label changes nothing, and a namespace's names count
//! wherever it is (an alias or `using namespace` can bring them out). Macros the region defines
//! are read too: their replacement lists, and the arguments given to a parameter that a
//! replacement list declares.

use std::collections::{BTreeMap, BTreeSet};

use crate::tokens::{self, Kind, Token};

/// Identifiers that start or continue an expression: a name after one of them is used, not declared.
pub(crate) const EXPRESSION_WORDS: [&str; 26] = [
    "return",
    "case",
    "sizeof",
    "alignof",
    "throw",
    "else",
    "do",
    "new",
    "delete",
    "co_return",
    "co_yield",
    "co_await",
    "typeid",
    "goto",
    "not",
    "and",
    "or",
    "xor",
    "bitand",
    "bitor",
    "compl",
    "not_eq",
    "and_eq",
    "or_eq",
    "xor_eq",
    "operator",
];

/// What may follow a declared name.
const DECLARATOR_NEXT: [&str; 7] = ["=", ";", ",", "[", "(", "{", "<"];

/// A name the tokens declare, with the token that declares it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Declared<'t> {
    pub name: &'t str,
    pub token: &'t Token,
}

/// The names `tokens` (a region) declare at their top level, code and macros alike, in order.
pub fn top_level(tokens: &[Token]) -> Vec<Declared<'_>> {
    let (code, macros) = split_directives(tokens);
    let declaring = declaring_parameters(&macros);
    let mut declared: Vec<Declared<'_>> = in_code(&code, &macros, &declaring);
    for definition in macros.values() {
        // A parameter's own name counts too: it needs no outside name.
        declared.extend(in_code(&definition.body, &macros, &declaring));
    }
    // (A type's word is no name: `unsigned char (*rows)[132]` declares `rows`, not `char`.)
    declared.retain(|d| !cpp_type_word(d.name));
    declared.sort_by_key(|d| d.token.line);
    declared
}

/// Names the tokens (the starter's code outside the region) declare for themselves anywhere, as
/// parameters or locals: a name after a type's name (an identifier that starts no expression),
/// before `=`, `;`, `,`, `)`, `[` or `{`. A region's declaration of one changes nothing
/// outside, where the outside's own declaration is nearer (or, in the same block, does not
/// compile). Only an identifier counts as the type, so `a * load(x)` declares no `load`. A
/// function (a name before `(`) is not one: a region's overload of it, a better match for a
/// call, would be called instead.
pub fn by_the_code_itself(tokens: &[Token]) -> BTreeSet<&str> {
    tokens
        .windows(3)
        .filter(|w| {
            w[0].kind == Kind::Identifier
                && !EXPRESSION_WORDS.contains(&w[0].text.as_str())
                && w[1].kind == Kind::Identifier
                && matches!(w[2].text.as_str(), "=" | ";" | "," | ")" | "[" | "{")
        })
        .map(|w| w[1].text.as_str())
        .collect()
}

/// A function-like or object-like macro the region defines.
struct Macro<'t> {
    parameters: Vec<&'t str>,
    body: Vec<&'t Token>,
}

/// The region's code outside directives, and the macros its `#define`s make, by name.
fn split_directives(tokens: &[Token]) -> (Vec<&Token>, BTreeMap<&str, Macro<'_>>) {
    let macros = tokens::directives(tokens)
        .filter(|(_, name)| *name == "define")
        .filter_map(|(start, _)| defined_macro(tokens::directive_tokens(tokens, start)))
        .collect();
    (tokens::code(tokens).collect(), macros)
}

/// The name and the macro a `#define` directive (from its `#`) makes, if it names one.
fn defined_macro(directive: &[Token]) -> Option<(&str, Macro<'_>)> {
    let tokens::Definition { name, parameters, body, .. } = tokens::definition(directive)?;
    Some((name.text.as_str(), Macro { parameters, body: body.iter().collect() }))
}

/// For each function-like macro, the indices of the parameters its expansion declares (directly,
/// or by passing them to another such parameter).
fn declaring_parameters<'t>(macros: &BTreeMap<&'t str, Macro<'t>>) -> BTreeMap<&'t str, BTreeSet<usize>> {
    let mut declaring: BTreeMap<&str, BTreeSet<usize>> = BTreeMap::new();
    // Each round can only add; a chain of macros is at most as long as their number.
    for _ in 0..=macros.len() {
        let mut changed = false;
        for (name, definition) in macros {
            let names: BTreeSet<&str> = in_code(&definition.body, macros, &declaring).iter().map(|d| d.name).collect();
            for (index, parameter) in definition.parameters.iter().enumerate() {
                if names.contains(parameter) && declaring.entry(name).or_default().insert(index) {
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    declaring
}

/// The names `code` declares at its top level, statement by statement. Statements that open a
/// scope of their own (`if`, `for`, `while`, `switch`, `do`, a block) declare nothing outside it.
fn in_code<'t>(
    code: &[&'t Token],
    macros: &BTreeMap<&str, Macro<'_>>,
    declaring: &BTreeMap<&str, BTreeSet<usize>>,
) -> Vec<Declared<'t>> {
    let code = &tokens::without_attributes(code)[..];
    let mut statements = Vec::new();
    let mut start = 0;
    while start < code.len() {
        let end = statement_end(code, start).max(start + 1);
        statements.push(&code[start..end]);
        start = end;
    }
    // What a block's names become where they are seen from outside it: an `extern "C" { }`
    // block's at once, and a namespace's, any namespace's, since `using namespace`, an alias or a
    // nested name can bring them out later.
    let body = |statement: &[&'t Token]| -> Option<Vec<Declared<'t>>> {
        let open = statement.iter().position(|t| t.text == "{")?;
        let close = matching(statement, open);
        Some(in_code(&statement[open + 1..close], macros, declaring))
    };
    let words = |statement: &[&'t Token]| -> Vec<&'t str> { statement.iter().map(|t| t.text.as_str()).collect() };
    let mut declared = Vec::new();
    for statement in &statements {
        let spelled = words(statement);
        match spelled.as_slice() {
            ["namespace", ..] | ["inline", "namespace", ..] | ["extern", _, "{", ..] => {
                declared.extend(body(statement).unwrap_or_default());
            }
            ["using", .., _, ";"] if !spelled.contains(&"=") && !spelled.contains(&"namespace") => {
                let token = statement[spelled.len() - 2];
                if token.kind == Kind::Identifier {
                    declared.push(Declared { name: token.text.as_str(), token });
                }
            }
            _ => declared.extend(in_statement(statement, macros, declaring)),
        }
    }
    declared
}

/// Whether `word` is one of C++'s own words for an arithmetic type, or `void`.
pub(crate) fn cpp_type_word(word: &str) -> bool {
    matches!(
        word,
        "unsigned"
            | "signed"
            | "int"
            | "short"
            | "long"
            | "char"
            | "wchar_t"
            | "char8_t"
            | "char16_t"
            | "char32_t"
            | "float"
            | "double"
            | "bool"
            | "void"
    )
}

/// The name in the parentheses opened at `open`, and their `)`, where they hold a declarator:
/// one name with only `*`, `&`, `&&` and more parentheses about it, and either one of those
/// or a `(`, `[`, `=`, `{`, `;` or `,` after them.
fn parenthesized_declarator(statement: &[&Token], open: usize) -> Option<(usize, usize)> {
    let close = matching(statement, open);
    let inside = statement.get(open + 1..close)?;
    let mut names = (open + 1..close).filter(|&j| statement[j].kind == Kind::Identifier);
    let (name, None) = (names.next()?, names.next()) else { return None };
    // `f(unsigned)`: a parameter's type, never a declared name.
    if cpp_type_word(&statement[name].text) || matches!(statement[name].text.as_str(), "auto" | "const") {
        return None;
    }
    if !inside.iter().all(|t| t.kind == Kind::Identifier || matches!(t.text.as_str(), "(" | ")" | "*" | "&" | "&&")) {
        return None;
    }
    let marked = inside.iter().any(|t| t.text != "(" && t.text != ")" && t.kind != Kind::Identifier);
    let nested = inside.first().is_some_and(|t| t.text == "(");
    let after = statement.get(close + 1).map_or("", |t| t.text.as_str());
    // `uint3 (threadIdx);` declares, as `f(threadIdx);` would where `f` names a type: a name
    // alone in parentheses after another is read as declared, whatever `f` is.
    (marked || nested || matches!(after, "(" | "[" | "=" | "{" | ";" | ",")).then_some((name, close))
}

/// The index after the statement that starts at `start`.
fn statement_end(code: &[&Token], start: usize) -> usize {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    match text(start) {
        "{" => (matching(code, start) + 1).min(code.len()),
        "if" | "for" | "while" | "switch" => {
            let mut end = start + 1;
            if text(end) == "(" {
                end = (matching(code, end) + 1).min(code.len());
            }
            end = statement_end(code, end);
            if text(start) == "if" && text(end) == "else" {
                end = statement_end(code, end + 1);
            }
            end
        }
        "else" => statement_end(code, start + 1),
        "do" => {
            let end = statement_end(code, start + 1);
            (end..code.len()).find(|&i| text(i) == ";").map_or(code.len(), |i| i + 1)
        }
        _ => {
            // A template's head (`template <class T>`) names no class of the statement.
            let head = match (text(start), text(start + 1)) {
                ("template", "<") => (angle_end(code, start + 1) + 1).min(code.len()),
                _ => start,
            };
            let aggregate =
                |upto: usize| code[head.min(upto)..upto].iter().any(|t| AGGREGATES.contains(&t.text.as_str()));
            let mut i = start;
            while i < code.len() {
                match text(i) {
                    ";" => return i + 1,
                    "(" | "[" => i = matching(code, i),
                    // A function's body, a namespace's or an `extern "C"` block's ends the
                    // statement; a class's body or a braced initializer does not.
                    "{" => {
                        let close = matching(code, i);
                        // `T a{}, b{}`: a braced initializer after a declarator's name; a
                        // function's body follows its `)` (and qualifiers, or `-> type`), a
                        // namespace's its name.
                        let after_name = i > start
                            && code[i - 1].kind == Kind::Identifier
                            && !matches!(text(start), "namespace" | "inline" | "extern")
                            && !code[declarator_start(code, start, i)..i]
                                .iter()
                                .any(|t| matches!(t.text.as_str(), ")" | "->"));
                        let initializer = i > start && matches!(text(i - 1), "=" | "," | "(") || after_name;
                        if !aggregate(i) && !initializer && (i == start || text(i - 1) != "]") {
                            return (close + 1).min(code.len());
                        }
                        i = close;
                    }
                    _ => {}
                }
                i += 1;
            }
            code.len()
        }
    }
}

/// Where the declarator that the `{` at `brace` belongs to starts: after the last comma before
/// it outside brackets (`a = f(x), b{}`), else at `start`.
fn declarator_start(code: &[&Token], start: usize, brace: usize) -> usize {
    let mut depth = 0;
    (start..brace)
        .rev()
        .find(|&j| {
            depth += i32::from(matches!(code[j].text.as_str(), ")" | "]" | "}"))
                - i32::from(matches!(code[j].text.as_str(), "(" | "[" | "{"));
            depth == 0 && code[j].text == ","
        })
        .map_or(start, |comma| comma + 1)
}

/// Keywords after which a brace opens a class's body, which declarators may follow.
const AGGREGATES: [&str; 4] = ["struct", "class", "union", "enum"];

/// Specifiers that take a parenthesized argument before the declarator.
const SPECIFIERS_WITH_ARGUMENTS: [&str; 8] = [
    "__align__",
    "alignas",
    "__launch_bounds__",
    "__attribute__",
    "__attribute",
    "decltype",
    "__declspec",
    "__maxnreg__",
];

/// Words that may follow a function's parameters: after `name(...)`, one of these leaves `name`
/// the declarator.
const QUALIFIERS: [&str; 14] = [
    "const",
    "volatile",
    "noexcept",
    "throw",
    "override",
    "final",
    "mutable",
    "try",
    "__attribute__",
    "__attribute",
    "__launch_bounds__",
    "__maxnreg__",
    "__restrict__",
    "__restrict",
];

/// Where a type written with parentheses, a compiler's type trait (`__remove_cv(unsigned)`) or
/// `decltype(...)` at `at` in `code`, ends (its `)`): the word and its argument, then the
/// declarator (through `const`, `volatile`, `*` and `&`, which qualify the type), not a qualifier
/// of a function's.
pub(crate) fn type_trait_end<T: std::borrow::Borrow<Token>>(code: &[T], at: usize) -> Option<usize> {
    let text = |i: usize| code.get(i).map_or("", |t| t.borrow().text.as_str());
    if !(text(at).starts_with("__") || text(at) == "decltype") || text(at + 1) != "(" {
        return None;
    }
    let close = matching(code, at + 1);
    let after = code
        .get(close + 1..)?
        .iter()
        .map(|t| t.borrow())
        .find(|t| !matches!(t.text.as_str(), "const" | "volatile" | "*" | "&" | "&&"));
    after.is_some_and(|t| t.kind == Kind::Identifier && !QUALIFIERS.contains(&t.text.as_str())).then_some(close)
}

/// Statements that are not declarations.
const NOT_DECLARATIONS: [&str; 9] = ["if", "for", "while", "switch", "do", "else", "namespace", "static_assert", "{"];

/// The index of the bracket that closes the one at `open`, or `code.len()` where none does (a
/// macro's replacement list may hold half a pair).
pub(crate) fn matching<T: std::borrow::Borrow<Token>>(code: &[T], open: usize) -> usize {
    let mut depth = 0i64;
    for (i, token) in code.iter().enumerate().skip(open) {
        match token.borrow().text.as_str() {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    code.len()
}

/// The names one top-level statement declares.
fn in_statement<'t>(
    statement: &[&'t Token],
    macros: &BTreeMap<&str, Macro<'_>>,
    declaring: &BTreeMap<&str, BTreeSet<usize>>,
) -> Vec<Declared<'t>> {
    let mut declared = Vec::new();
    let Some(first) = statement.first() else { return declared };
    let text = |i: usize| statement.get(i).map_or("", |t| t.text.as_str());
    let name_at = |i: usize, declared: &mut Vec<Declared<'t>>| {
        if let Some(token) =
            statement.get(i).filter(|t| t.kind == Kind::Identifier && !macros.contains_key(t.text.as_str()))
        {
            declared.push(Declared { name: token.text.as_str(), token });
        }
    };
    // A macro call: the arguments it declares.
    if let Some(indices) = declaring.get(first.text.as_str())
        && text(1) == "("
    {
        for (index, argument) in arguments(&statement[2..]).into_iter().enumerate() {
            if let ([one], true) = (argument, indices.contains(&index)) {
                declared.push(Declared { name: one.text.as_str(), token: one });
            }
        }
        return declared;
    }
    if first.text == "[" && text(1) == "[" {
        let close = matching(statement, 0);
        return in_statement(statement.get(close + 1..).unwrap_or_default(), macros, declaring);
    }
    // `::uint3 threadIdx = ...;` names its type from the global namespace, and `swap: const uint3
    // threadIdx = ...;` is a declaration with a label: what follows declares as it would alone.
    if first.text == "::" {
        return in_statement(&statement[1..], macros, declaring);
    }
    if first.kind == Kind::Identifier
        && text(1) == ":"
        && !EXPRESSION_WORDS.contains(&first.text.as_str())
        && !AGGREGATES.contains(&first.text.as_str())
    {
        return in_statement(&statement[2..], macros, declaring);
    }
    if first.kind != Kind::Identifier
        || EXPRESSION_WORDS.contains(&first.text.as_str())
        || NOT_DECLARATIONS.contains(&first.text.as_str())
    {
        return declared;
    }
    if first.text == "using" {
        if text(2) == "=" {
            name_at(1, &mut declared);
        }
        return declared;
    }
    // An unscoped enumeration's enumerators are names of the scope it is in.
    if first.text == "enum"
        && !matches!(text(1), "class" | "struct")
        && let Some(open) = statement.iter().position(|t| t.text == "{")
    {
        let close = matching(statement, open);
        let mut depth = 0;
        for j in open + 1..close {
            depth += i32::from(matches!(text(j), "(" | "{" | "[")) - i32::from(matches!(text(j), ")" | "}" | "]"));
            if depth == 0 && matches!(text(j - 1), "{" | ",") {
                name_at(j, &mut declared);
            }
        }
    }
    // The specifiers, then the first declarator: the name before what a declarator continues with.
    let mut i = 0;
    let mut aggregate_body = None;
    // Where a template's head ends: its `class T` names no class of the statement.
    let mut after_template = 0;
    while i < statement.len() {
        let token = statement[i];
        if let Some(close) = type_trait_end(statement, i) {
            i = close + 1;
            continue;
        }
        match token.text.as_str() {
            "template" if text(i + 1) == "<" => {
                i = angle_end(statement, i + 1);
                after_template = i + 1;
            }
            word if SPECIFIERS_WITH_ARGUMENTS.contains(&word) && text(i + 1) == "(" => i = matching(statement, i + 1),
            "[" if i > 0
                && matches!(text(i - 1), "auto" | "&" | "&&" | "const" | "volatile")
                && statement[..i].iter().any(|t| t.text == "auto") =>
            {
                // A structured binding: every name in the brackets.
                let close = matching(statement, i);
                for j in i + 1..close {
                    name_at(j, &mut declared);
                }
                return declared;
            }
            "{" if statement[after_template.min(i)..i].iter().any(|t| AGGREGATES.contains(&t.text.as_str())) => {
                let close = matching(statement, i);
                friends(&statement[i + 1..close], macros, declaring, &mut declared);
                // `union { uint3 threadIdx; };`: an anonymous union's members are names of the
                // scope it is in.
                if i > 0 && AGGREGATES.contains(&text(i - 1)) && text(close + 1) == ";" {
                    declared.extend(in_code(&statement[i + 1..close], macros, declaring));
                }
                aggregate_body = Some(close);
                break;
            }
            "<" if i > 0 && statement[i - 1].kind == Kind::Identifier && is_template_name(statement, i - 1) => {
                let close = angle_end(statement, i);
                if DECLARATOR_NEXT.contains(&text(close + 1)) && i >= 2 {
                    name_at(i - 1, &mut declared);
                    return declared;
                }
                i = close;
            }
            // A declarator in parentheses, after a type: `unsigned (*load)(const unsigned*, unsigned)`,
            // `const uint3 ((threadIdx)) = ...`, or a function's name alone in them: `auto
            // (load)(unsigned* t, unsigned i) -> unsigned`. (`use(tile);` stays a call.)
            "(" if i > 0
                && statement[i - 1].kind == Kind::Identifier
                && !EXPRESSION_WORDS.contains(&text(i - 1))
                && parenthesized_declarator(statement, i).is_some() =>
            {
                let (name, close) = parenthesized_declarator(statement, i).expect("matched");
                name_at(name, &mut declared);
                further_declarators(statement, close, &mut declared);
                return declared;
            }
            next if i > 0
                && (DECLARATOR_NEXT.contains(&next) || macros.contains_key(next))
                && statement[i - 1].kind == Kind::Identifier =>
            {
                // Something before the name: a type.
                if i >= 2 {
                    name_at(i - 1, &mut declared);
                    // A region macro in a declarator's place: its lone-name arguments too.
                    if next == "(" && macros.contains_key(text(i - 1)) {
                        for argument in arguments(&statement[i + 1..]) {
                            if let [one] = argument {
                                name_at_token(one, &mut declared);
                            }
                        }
                    }
                    further_declarators(statement, i, &mut declared);
                }
                return declared;
            }
            // Specifiers, a type's name and its `*` or `&` come before a declarator.
            word if token.kind == Kind::Identifier && !EXPRESSION_WORDS.contains(&word) => {}
            "*" | "&" | "&&" | "::" => {}
            // `extern "C"`'s linkage.
            _ if token.kind == Kind::Literal && i > 0 && text(i - 1) == "extern" => {}
            // Anything else (`+=`, `.`, `->`, ...) makes the statement an expression.
            _ => return declared,
        }
        i += 1;
    }
    // `struct S { ... } a, *b;`: the declarators after the body, not what initializes them.
    if let Some(close) = aggregate_body
        && let Some(first) =
            (close + 1..statement.len()).find(|&j| !matches!(text(j), "*" | "&" | "&&" | "const" | "volatile"))
    {
        match parenthesized_declarator(statement, first).filter(|_| text(first) == "(") {
            Some((name, after)) => {
                name_at(name, &mut declared);
                further_declarators(statement, after, &mut declared);
            }
            None => {
                name_at(first, &mut declared);
                further_declarators(statement, first + 1, &mut declared);
            }
        }
    }
    declared
}

/// The functions a class's body (`body`, between its braces, nested classes' included) declares
/// as friends: a friend defined there is found by argument-dependent lookup wherever the class's
/// values go, as a function of the enclosing scope would be. Each is read as a declaration of
/// its own, from `friend` to its body or its `;`.
fn friends<'t>(
    body: &[&'t Token],
    macros: &BTreeMap<&str, Macro<'_>>,
    declaring: &BTreeMap<&str, BTreeSet<usize>>,
    declared: &mut Vec<Declared<'t>>,
) {
    for at in (0..body.len()).filter(|&at| body[at].text == "friend") {
        let mut depth = 0;
        let end = (at + 1..body.len())
            .find(|&j| {
                depth += i32::from(matches!(body[j].text.as_str(), "(" | "["))
                    - i32::from(matches!(body[j].text.as_str(), ")" | "]"));
                depth == 0 && matches!(body[j].text.as_str(), ";" | "{")
            })
            .unwrap_or(body.len());
        declared.extend(in_statement(&body[at + 1..end], macros, declaring));
    }
}

fn name_at_token<'t>(token: &'t Token, declared: &mut Vec<Declared<'t>>) {
    if token.kind == Kind::Identifier {
        declared.push(Declared { name: token.text.as_str(), token });
    }
}

/// The declarators after the first, each after a top-level comma: `unsigned a = 1, b = 2;`.
fn further_declarators<'t>(statement: &[&'t Token], from: usize, declared: &mut Vec<Declared<'t>>) {
    let mut i = from;
    while i < statement.len() {
        match statement[i].text.as_str() {
            "(" | "[" | "{" => i = matching(statement, i),
            "," => {
                let next = (i + 1..statement.len())
                    .find(|&j| !matches!(statement[j].text.as_str(), "*" | "&" | "&&" | "const" | "volatile"));
                match next.map(|j| (j, statement[j].text.as_str())) {
                    // `, (*load)(...) = ...`: the name in the parentheses.
                    Some((j, "(")) => {
                        if let Some((name, _)) = parenthesized_declarator(statement, j) {
                            name_at_token(statement[name], declared);
                        }
                    }
                    Some((j, _)) => name_at_token(statement[j], declared),
                    None => {}
                }
            }
            _ => {}
        }
        i += 1;
    }
}

/// Whether the `<` after the identifier at `at` opens template arguments (`A<1 + 1>`,
/// `A<(1 > 2)>`): a `>` closes it before the statement's end, with no `;` or brace between.
fn is_template_name(statement: &[&Token], at: usize) -> bool {
    let close = angle_end(statement, at + 1);
    close < statement.len() && !statement[at + 2..close].iter().any(|t| matches!(t.text.as_str(), ";" | "{" | "}"))
}

/// The index of the `>` that closes the `<` at `open` (one inside parentheses closes nothing),
/// or `statement.len()` where none does.
fn angle_end(statement: &[&Token], open: usize) -> usize {
    let mut depth = 0i64;
    let mut parentheses = 0i64;
    for (i, token) in statement.iter().enumerate().skip(open) {
        match token.text.as_str() {
            "(" | "[" => parentheses += 1,
            ")" | "]" => parentheses -= 1,
            _ if parentheses > 0 => {}
            "<" => depth += 1,
            ">" => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            ">>" => {
                depth -= 2;
                if depth <= 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    statement.len()
}

/// The top-level, comma-separated arguments of a call whose `(` was just before `tokens`.
pub(crate) fn arguments<'a, 't>(tokens: &'a [&'t Token]) -> Vec<&'a [&'t Token]> {
    let (mut arguments, mut start, mut depth) = (Vec::new(), 0, 0i64);
    for (i, token) in tokens.iter().enumerate() {
        match token.text.as_str() {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" if depth > 0 => depth -= 1,
            ")" => {
                arguments.push(&tokens[start..i]);
                break;
            }
            "," if depth == 0 => {
                arguments.push(&tokens[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    arguments
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::tokenize;

    fn names(region: &str) -> Vec<String> {
        let tokens = tokenize(region, 1).unwrap();
        top_level(&tokens).into_iter().map(|d| d.name.to_owned()).collect()
    }

    #[test]
    fn declarations_at_the_top_level_are_found_in_every_form() {
        assert_eq!(names("const uint3 threadIdx = make_uint3(0, 0, 0);"), ["threadIdx"]);
        assert_eq!(names("const dim3 blockDim(4096);"), ["blockDim"]);
        // A type's word in a declarator in parentheses is no name of its own.
        assert!(!names("unsigned char (*const rows)[132] = bytes;").contains(&"char".to_owned()));
        assert_eq!(names("unsigned a = 1, lane = 2;"), ["a", "lane"]);
        assert_eq!(names("uint3& threadIdx = other;"), ["threadIdx"]);
        assert_eq!(names("auto [threadIdx, y] = pair;"), ["threadIdx", "y"]);
        assert_eq!(names("auto load = [&](unsigned k) { unsigned inner = k; };"), ["load"]);
        assert_eq!(names("__device__ unsigned load(const unsigned* t, unsigned i) { return t[i]; }"), ["load"]);
        assert_eq!(names("template <> __device__ unsigned load<unsigned>(const unsigned*, unsigned);"), ["load"]);
        assert_eq!(names("__shared__ unsigned char tile[32][129];"), ["tile"]);
        assert_eq!(names("__shared__ __align__(16) unsigned tile[32][33];"), ["tile"]);
        assert_eq!(names("[[maybe_unused]] const uint3 threadIdx = x;"), ["threadIdx"]);
        assert_eq!(names("struct S { unsigned x; } threadIdx, *p;"), ["threadIdx", "p"]);
        assert_eq!(names("using uint3 = int;"), ["uint3"]);
        assert_eq!(names("unsigned (*load)(const unsigned char*, unsigned) = nullptr;"), ["load"]);
        assert_eq!(names("const uint3 (&threadIdx) = other;"), ["threadIdx"]);
        assert_eq!(names("::uint3 threadIdx = make_uint3(0, 0, 0);"), ["threadIdx"]);
        assert_eq!(names("swap: const uint3 threadIdx = x;"), ["threadIdx"]);
        assert_eq!(
            names("typedef unsigned U;\n::U __device__ load(unsigned* t, unsigned i) { return t[i]; }"),
            ["U", "load"]
        );
        assert_eq!(names("__device__ auto (load)(unsigned* t, unsigned i) -> unsigned { return t[i]; }"), ["load"]);
        assert_eq!(names("const uint3 ((threadIdx)) = make_uint3(0, 0, 0);"), ["threadIdx"]);
        assert_eq!(names("enum : unsigned { threadIdx = 3u, lane };"), ["threadIdx", "lane"]);
        assert_eq!(names("const uint3 unused{}, threadIdx{0, 0, 0};"), ["unused", "threadIdx"]);
        assert_eq!(names("union { uint3 threadIdx = {5, 0, 0}; };"), ["threadIdx"]);
        assert_eq!(names("uint3 (threadIdx);"), ["threadIdx"], "as `f(threadIdx);` is where `f` names a type");
        assert_eq!(names("_Pragma(\"unroll\") uint3 threadIdx{};"), ["threadIdx"]);
        assert_eq!(names("const uint3 a = f(0), b{}, threadIdx = x;"), ["a", "b", "threadIdx"]);
        assert_eq!(
            names(
                "struct Y { struct Z { friend __device__ auto (load)(const unsigned* t, Z i) -> unsigned { return 0; } }; };"
            ),
            ["load"]
        );
        assert_eq!(names("struct Z { friend __device__ decltype(1u) load(const unsigned* t, Z i); };"), ["load"]);
        assert_eq!(names("const uint3 threadIdx __attribute__((unused)) = x;"), ["threadIdx"]);
        assert_eq!(names("const uint3 threadIdx __align__(16) = x;"), ["threadIdx"]);
        assert_eq!(names("__device__ typename A<1 + 1>::type load(const unsigned* t, unsigned i);"), ["load"]);
        assert_eq!(names("__device__ A<(1 > 2)> load(const unsigned* t, unsigned i);"), ["load"]);
        assert_eq!(
            names(
                "struct Index { unsigned k; friend __device__ unsigned load(const unsigned* t, Index i) { return t[i.k]; } };"
            ),
            ["load"]
        );
        assert_eq!(names("unsigned pad{0}, (*load)(const unsigned*, unsigned) = f;"), ["pad", "load"]);
        assert_eq!(names("auto volatile [threadIdx] = s;\nauto const& [lane] = s;"), ["threadIdx", "lane"]);
        assert_eq!(names("struct F { unsigned* o; } finish{reinterpret_cast<unsigned*>(w)}, *p;"), ["finish", "p"]);
        assert_eq!(names("[[]] {}\nconst uint3 threadIdx = x;"), ["threadIdx"]);
        assert_eq!(
            names("template <typename E> [[nodiscard]] __device__ unsigned load(E* t, unsigned i) { return t[i]; }"),
            ["load"]
        );
        assert_eq!(
            names(
                "template <class T> __device__ T helper() { return T(); }\n__device__ unsigned load(unsigned* t, unsigned i) { return t[i]; };"
            ),
            ["helper", "load"]
        );
        assert_eq!(names("__device__ unsigned int ((load))(unsigned* t, unsigned i) { return t[i]; }"), ["load"]);
        assert_eq!(names("template <typename E> __device__ auto (load)(E* t, unsigned i) -> unsigned;"), ["load"]);
        let load = "__device__ unsigned load(const unsigned* t, unsigned i) { return t[i]; }";
        for hidden in [
            format!("namespace {{ {load} }}"),
            format!("inline namespace m {{ {load} }}"),
            format!("extern \"C\" {{ {load} }}"),
            format!("namespace m {{ {load} }}\nusing namespace m;"),
            format!("namespace m {{ {load} }}\nusing m::load;"),
            format!("namespace m {{ {load} }}\nnamespace q = m;\nusing namespace q;"),
            format!("namespace a {{ namespace b {{ {load} }} }}\nusing namespace a::b;"),
            format!("namespace a::b {{ {load} }}\nusing namespace a::b;"),
            format!("namespace mine {{ {load} }}"),
            format!("extern \"C\" {load}"),
        ] {
            let mut found = names(&hidden);
            found.dedup();
            assert_eq!(found, ["load"], "{hidden}");
        }
        assert_eq!(names("static unsigned launches;\n__shared__ unsigned profiled;"), ["launches", "profiled"]);
        assert_eq!(names("#define T const uint3\nT threadIdx = x;"), ["threadIdx"]);
        assert_eq!(names("#define SHADOW const uint3 threadIdx = x\nSHADOW;"), ["threadIdx"]);
        assert_eq!(names("#define EQ =\nuint3 threadIdx EQ {0, 0, 0};"), ["threadIdx"]);
        assert_eq!(names("#define DECL(n) const uint3 n = x\nDECL(threadIdx);"), ["n", "threadIdx"]);
        assert_eq!(
            names("#define INNER(n) uint3 n = x\n#define OUTER(a, b) INNER(b)\nOUTER(q, threadIdx);"),
            ["n", "b", "threadIdx"],
            "through another macro"
        );
        assert_eq!(names("#define D (threadIdx); const uint3 threadIdx = x\nD;"), ["threadIdx"], "object-like");
    }

    #[test]
    fn what_the_code_outside_declares_for_itself() {
        let outside = tokenize(
            "extern \"C\" __global__ void k(const unsigned* __restrict__ in, unsigned n) {\n\
             const unsigned lane = threadIdx.x % 32;\n\
             unsigned sum = 0;\n\
             for (unsigned i = 0; i < n; ++i) sum += x * load(in, lane);\n\
             return sum;\n}",
            1,
        )
        .unwrap();
        let declared = by_the_code_itself(&outside);
        for own in ["in", "n", "lane", "sum", "i"] {
            assert!(declared.contains(own), "{own}: {declared:?}");
        }
        // The kernel, a function, is not: the region could overload it.
        for used in ["load", "threadIdx", "x", "k"] {
            assert!(!declared.contains(used), "{used} is only used: {declared:?}");
        }
    }

    #[test]
    fn any_arrangement_of_tokens_is_read_without_a_panic() {
        const WORDS: [&str; 17] = [
            "namespace",
            "auto",
            "using",
            "extern",
            "\"C\"",
            "struct",
            "template",
            "if",
            "else",
            "do",
            "while",
            "unsigned",
            "x",
            "load",
            "__align__",
            "\n#define M(a) a x {\n",
            "\n#define N namespace {\n",
        ];
        let mut tokens_read = 0;
        for text in crate::tokens::soups(&WORDS, 100_000) {
            if let Ok(tokens) = tokenize(&text, 1) {
                tokens_read += tokens.len();
                let _ = top_level(&tokens);
            }
        }
        assert!(tokens_read > 500_000, "the soups hold tokens: {tokens_read}");
    }

    #[test]
    fn uses_and_nested_declarations_are_not_declarations() {
        for region in [
            "__shared__ unsigned char tile[ROWS][COLUMNS + 4u];",
            "use(lane, n);",
            "__device__ unsigned slot(unsigned row, unsigned n) { unsigned threadIdx = 0; return row ^ n; }",
            "if (n > 4) { const uint3 threadIdx = x; }",
            "x = a * threadIdx.x; y = lane; f(threadIdx, blockDim);",
            "#define PAD(c) ((c) + 4u)\n__shared__ unsigned tile[32][PAD(COLUMNS)];",
            "static_assert(sizeof(unsigned) == 4, \"words\");",
            "sum += load(&tile[lane][0], warp); lane = n; a.load = 1; p->lane = 2; (void)n;",
            "if (threadIdx.x == 0) profiled = atomicAdd(&launches, 1u) == 0u && words[1] != 7u;",
            "for (unsigned n = 0; n < 4; ++n) load(tile, n); while (lane) lane--; do { unsigned n = 1; } while (0);",
            "auto f = [&](unsigned k) { return load(tile, k); };",
        ] {
            let found = names(region);
            assert!(
                !found
                    .iter()
                    .any(|n| ["threadIdx", "blockDim", "load", "lane", "COLUMNS", "n", "words"].contains(&n.as_str())),
                "{region}: {found:?}"
            );
        }
    }
}
