//! Writes to what lasts from one launch to the next (a constant, a string literal) through
//! something the part makes writable: casts of pointers, unions, addresses made numbers, literals
//! outside `printf`.

use std::collections::BTreeSet;

use super::{
    lasting::declared_types,
    region::{Found, Outside, problem},
    syntax::{
        NUMBER_OPERATORS, binary_operator, enclosing, in_attribute, is_type_word, opener, operators_spelled,
        statement_start, template_angle,
    },
};
use crate::{
    declared,
    tokens::{self, Kind, Token},
};

/// A write through to a constant or a string literal.
pub(super) fn no_write_to_what_lasts(expanded: &[Token], outside: &Outside) -> Found {
    // What turns data that lasts from one launch to the next (a constant, a string literal) into
    // something the part can write: casts of pointers, unions, literals outside `printf`.
    let operators = operators_spelled(expanded);
    // The starter's own constants (`#define TILE 32u`): numbers a cast to 64 bits may take.
    let starter_constants: BTreeSet<&str> = [&outside.before, &outside.after]
        .into_iter()
        .flat_map(|part| {
            tokens::directives(part)
                .filter(|&(_, name)| name == "define")
                .filter_map(|(at, _)| tokens::definition(tokens::directive_tokens(part, at)))
                .filter(|definition| !definition.function_like)
                .map(|definition| definition.name.text.as_str())
        })
        .collect();
    if let Some((token, what, fix)) = write_through(&operators, &starter_constants) {
        return problem(
            token.line,
            format!(
                "{what} can write to a constant or a string literal, data that lasts from one launch to the next: \
                 {fix}"
            ),
        );
    }
    Ok(())
}

/// What to do instead of writing through a pointer, mostly.
const KEEP_IN_LOCALS: &str = "keep values in locals and index with numbers";

/// What to do instead of reading a value's bits through a pointer or a union.
const BITS_BY_FUNCTION: &str = "keep values in locals and index with numbers (a float's bits are `__float_as_uint(x)`, and back `__uint_as_float`)";

/// What to do instead of making an address a number.
const ADDRESSES_OUTSIDE: &str = "index arrays with numbers, and leave addresses to the code outside your part";

/// What to do instead of comparing or subtracting values of a template's type.
const OF_A_NAMED_TYPE: &str = "take values of a type you name (`unsigned`), or use `min` and `max`";

/// What to do instead of a cast to a 64-bit integer.
const WIDE_NUMBERS: &str = "convert with `static_cast<unsigned long long>(...)`, which cannot make an address a number \
     (or `unsigned long long wide = row;`)";

/// The compiler's built-in functions of numbers a part may call.
const NUMBER_BUILTINS: [&str; 12] = [
    "__builtin_expect",
    "__builtin_popcount",
    "__builtin_popcountll",
    "__builtin_clz",
    "__builtin_clzll",
    "__builtin_ctz",
    "__builtin_ctzll",
    "__builtin_ffs",
    "__builtin_abs",
    "__builtin_offsetof",
    "__builtin_constant_p",
    "__builtin_bswap32",
];

/// The words that take a type from an expression.
const TYPE_OF: [&str; 3] = ["decltype", "__typeof__", "typeof"];

/// CUDA's functions that return numbers, which a cast to 64 bits may take.
const NUMBER_FUNCTIONS: [&str; 10] =
    ["clock", "clock64", "__popc", "__popcll", "__clz", "__ffs", "__brev", "min", "max", "abs"];

/// The names of integer types wide enough to hold an address.
const WIDE_INTEGER_WORDS: [&str; 20] = [
    "long",
    "size_t",
    "ssize_t",
    "uintptr_t",
    "intptr_t",
    "ptrdiff_t",
    "uint64_t",
    "int64_t",
    "uint_fast64_t",
    "int_fast64_t",
    "uint_least64_t",
    "int_least64_t",
    "uintmax_t",
    "intmax_t",
    "__int64",
    "__int128",
    "__int128_t",
    "__uint128_t",
    "longlong",
    "ulonglong",
];

/// The first cast of a pointer or reference (`const_cast`, `reinterpret_cast`, `(unsigned*)x`),
/// union, or string literal outside `printf(...)`, `static_assert(...)`, `_Pragma(...)` and
/// `extern "C"` in `code`, and what it is.
fn write_through<'c>(
    code: &'c [Token],
    starter_constants: &BTreeSet<&str>,
) -> Option<(&'c Token, &'static str, &'static str)> {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    // Names the part declares as pointers (`unsigned* z`, `Coord* z`, `auto* z`, `decltype(x)* z`,
    // `auto z = &x`) or arrays (`t[1]`); not `m * m`.
    let part_types = declared_types(code);
    let a_type = |i: usize| {
        is_type_word(text(i))
            || part_types.contains(text(i))
            || matches!(text(i), "const" | "volatile" | "auto" | ">" | "__restrict__")
    };
    // (Through qualifiers after the `*`, and a reference to a pointer: `unsigned* volatile z`,
    // `const unsigned* const& z`.)
    let star_before = |at: usize| {
        // (And a declarator in parentheses: `unsigned* (z) = &x;`.)
        let star = (0..at)
            .rev()
            .find(|&i| !matches!(text(i), "const" | "volatile" | "__restrict__" | "__restrict" | "&" | "&&" | "("));
        // (`unsigned a = 1, *p = &a;`: a later declarator's `*` follows a comma; `T (*f)()`, a
        // pointer to a function, a `(`; `decltype(t)* f`, a type from `decltype`.)
        let of_decltype =
            |close: usize| opener(code, close).is_some_and(|open| open > 0 && TYPE_OF.contains(&text(open - 1)));
        star.filter(|&i| {
            i > 0
                && text(i) == "*"
                && (a_type(i - 1) || matches!(text(i - 1), "," | "(") || text(i - 1) == ")" && of_decltype(i - 1))
        })
        .is_some()
    };
    let pointers_and_arrays: BTreeSet<&str> = (0..code.len())
        .filter(|&at| code[at].kind == Kind::Identifier)
        .filter(|&at| {
            star_before(at) && matches!(text(at + 1), "=" | ";" | "," | ")" | "{" | "(")
                || text(at + 1) == "=" && text(at + 2) == "&"
                // A reference to an array, which becomes a pointer: `unsigned (&w)[1] = t;`.
                || at > 1 && text(at - 1) == "&" && text(at - 2) == "(" && text(at + 1) == ")" && text(at + 2) == "["
                || text(at + 1) == "[" && at > 0 && (a_type(at - 1) || code[at - 1].kind == Kind::Identifier)
        })
        .map(text)
        .collect();
    // `auto z = t;` of a pointer or an array (which becomes a pointer).
    // Aliases of 64-bit integer types (`using U = unsigned long long;`, `typedef size_t U;`),
    // through aliases of aliases.
    let mut wide_aliases: BTreeSet<&str> = BTreeSet::new();
    loop {
        let wide = |i: usize| WIDE_INTEGER_WORDS.contains(&text(i)) || wide_aliases.contains(text(i));
        let found: Vec<&str> = (0..code.len())
            .filter_map(|at| match text(at) {
                "using" if text(at + 2) == "=" => {
                    (at + 3..code.len()).take_while(|&i| text(i) != ";").any(wide).then(|| text(at + 1))
                }
                "typedef" => {
                    let end = (at..code.len()).find(|&i| text(i) == ";")?;
                    (at + 1..end).any(wide).then(|| text(end - 1))
                }
                _ => None,
            })
            .filter(|name| !wide_aliases.contains(name))
            .collect();
        if found.is_empty() {
            break;
        }
        wide_aliases.extend(found);
    }
    // A template's type parameters: `typename U`, `class... Us` (a pack), `template <class> class W`.
    let template_types: BTreeSet<&str> = (0..code.len())
        .filter(|&at| matches!(text(at), "typename" | "class") && at > 0 && matches!(text(at - 1), "<" | "," | ">"))
        .map(|at| if text(at + 1) == "..." { at + 2 } else { at + 1 })
        .filter(|&name| matches!(text(name + 1), "," | ">" | "="))
        .map(text)
        .collect();
    // A value of a template's type, an `auto` parameter, a lambda's result or a function's of a
    // deduced type may be a pointer: in a difference or a comparison it counts as one (`template
    // <class P> long long gap(P a, P b) { return a - b; }`, `auto far = [] { return t; };`,
    // `__device__ auto there() { return t; }`).
    let maybe_pointers: BTreeSet<&str> = (1..code.len())
        .filter(|&at| code[at].kind == Kind::Identifier)
        .filter(|&at| {
            let typed = (0..at).rev().find(|&i| !matches!(text(i), "const" | "volatile" | "&" | "&&"));
            typed.is_some_and(|i| {
                template_types.contains(text(i))
                    // A type from `decltype` may be a pointer's: `decltype(there()) a = there();`.
                    || text(i) == ")" && opener(code, i).is_some_and(|open| open > 0 && TYPE_OF.contains(&text(open - 1)))
                    || text(i) == "auto" && matches!(text(at + 1), "," | ")" | "(")
                    || text(i) == "auto" && text(at + 1) == "=" && text(at + 2) == "["
            }) || text(at + 1) == "(" && (at >= 4 && (at - 4..at).map(text).eq(["decltype", "(", "auto", ")"]))
        })
        .map(text)
        .chain(pointers_and_arrays.iter().copied())
        .collect();
    // A name declared with `auto` holds whatever its value is (`auto b{&x};`, `auto f{there};`,
    // `auto a = t + 0;`): a pointer where its initializer holds one, an address or a call of a
    // function that may return one; through copies of copies.
    let mut maybe_pointers = maybe_pointers;
    loop {
        let found: Vec<&str> = (1..code.len())
            .filter(|&at| {
                let typed = (0..at).rev().find(|&i| !matches!(text(i), "const" | "volatile" | "&" | "&&" | "*"));
                code[at].kind == Kind::Identifier
                    && typed.is_some_and(|i| text(i) == "auto")
                    && matches!(text(at + 1), "=" | "{" | "(")
                    && !maybe_pointers.contains(text(at))
            })
            .filter(|&at| {
                let end = (at + 1..code.len()).find(|&i| matches!(text(i), ";" | ",")).unwrap_or(code.len());
                (at + 2..end).any(|i| names_a_pointer(code, i, &maybe_pointers))
            })
            .map(text)
            .collect();
        if found.is_empty() {
            break;
        }
        maybe_pointers.extend(found);
    }
    // Names the part gives numbers (`unsigned row`, `const int k = 2`) and functions that return
    // one (`unsigned at(...)`): a cast of one to 64 bits makes no address a number. (A name also
    // given to a pointer anywhere in the part is none.)
    let numbers: BTreeSet<&str> = (1..code.len())
        .filter(|&at| code[at].kind == Kind::Identifier && !maybe_pointers.contains(text(at)))
        .filter(|&at| {
            let typed =
                (0..at).rev().find(|&i| !matches!(text(i), "const" | "volatile" | "__forceinline__" | "inline"));
            typed.is_some_and(|i| is_type_word(text(i)) && text(i) != "void")
                && matches!(text(at + 1), "," | ")" | "=" | ";" | "(" | "{")
        })
        .map(text)
        .chain(starter_constants.iter().copied().filter(|name| !maybe_pointers.contains(name)))
        // CUDA's functions of numbers, where the part declares none of that name.
        .chain(NUMBER_FUNCTIONS.into_iter().filter(|name| {
            !(1..code.len()).any(|i| {
                text(i) == *name
                    && (is_type_word(text(i - 1))
                        || matches!(text(i - 1), "*" | "&" | "&&" | "auto" | ">" | "::" | "}" | ";" | "#")
                        || part_types.contains(text(i - 1)))
            })
        }))
        .collect();
    let at_close = |open: usize| declared::matching(code, open);
    // Where each literal stands: inside the parentheses of which call, if any.
    let mut calls: Vec<&str> = Vec::new();
    for (at, token) in code.iter().enumerate() {
        match token.text.as_str() {
            // An address made a number: two such numbers subtracted move a pointer onto any data,
            // as a difference of pointers would. Only a 64-bit integer holds an address (a cast of
            // one to a narrower number does not compile): `(unsigned long long)t`, `size_t(&x)`.
            "(" if casts_to_a_wide_integer(code, at, &wide_aliases) && !a_number(code, at_close(at) + 1, &numbers) => {
                return Some((token, "a cast to a 64-bit integer (which can make an address a number)", WIDE_NUMBERS));
            }
            "(" => calls.push(if at > 0 { text(at - 1) } else { "" }),
            // What `*pp`, `pa[0]` or `s.*m` reads is a pointer no name shows.
            "*" if at > 0
                && a_type(at - 1)
                && (at + 1..code.len())
                    .find(|&i| !matches!(text(i), "const" | "volatile" | "__restrict__" | "__restrict"))
                    .is_some_and(|i| text(i) == "*") =>
            {
                return Some((token, "a pointer to a pointer", "keep one array of values and index it with numbers"));
            }
            "::" if text(at + 1) == "*" => {
                return Some((token, "a pointer to a member", "keep values in locals and index with numbers"));
            }
            _ if token.kind == Kind::Identifier
                && at > 1
                && text(at - 1) == "*"
                && text(at - 2) == "("
                && text(at + 1) == ")"
                && text(at + 2) == "[" =>
            {
                return Some((token, "a pointer to an array", "index the array itself with numbers"));
            }
            // A function that returns a reference or pointer to an array returns what becomes a
            // pointer: `const unsigned (&there())[1] { return t; }`.
            _ if token.kind == Kind::Identifier
                && at > 1
                && matches!(text(at - 1), "&" | "&&" | "*")
                && text(at - 2) == "("
                && text(at + 1) == "("
                && text(declared::matching(code, at + 1) + 1) == ")"
                && text(declared::matching(code, at + 1) + 2) == "[" =>
            {
                return Some((
                    token,
                    "a function that returns an array",
                    "return a value, and index the array with numbers",
                ));
            }
            // A row of an array of arrays is a pointer no name shows (`t[0] - u[0]`); but for the
            // tiles in shared memory the exercises are about, whose rows are nothing of another's,
            // and for a type whose size is taken (`sizeof(unsigned char[64][64])`).
            _ if token.kind == Kind::Identifier
                && at > 0
                && a_type(at - 1)
                && text(at + 1) == "["
                && text(declared::matching(code, at + 1) + 1) == "["
                && !(statement_start(code, at)..at).any(|i| text(i) == "__shared__")
                && !in_unevaluated(code, at) =>
            {
                return Some((
                    token,
                    "an array of arrays (each row of which, used alone, is a pointer that no name shows)",
                    "keep one array and index it with `row * width + column`",
                ));
            }
            // An element of an array of pointers is a pointer no name shows (`ps[0] - ps[1]`).
            _ if token.kind == Kind::Identifier && text(at + 1) == "[" && star_before(at) => {
                return Some((
                    token,
                    "an array of pointers (whose elements the checks cannot follow)",
                    "keep such pointers in a table of structs (`struct Ref { const unsigned* at; }; constexpr Ref \
                     refs[2] = {{a}, {b}};`), or one array of values indexed with numbers",
                ));
            }
            // `auto [p, q] = pair;` names values that may be pointers, with no type shown.
            "auto" if text(at + 1) == "[" || matches!(text(at + 1), "&" | "&&") && text(at + 2) == "[" => {
                return Some((
                    token,
                    "a structured binding, whose names may be pointers,",
                    "declare each value with its type",
                ));
            }
            ")" => {
                calls.pop();
            }
            "const_cast" => return Some((token, "`const_cast`", KEEP_IN_LOCALS)),
            // (`= delete` deletes a function.)
            "delete" if at > 0 && text(at - 1) == "=" => {}
            // (`free` keeps nothing: a local named `free` is a name.)
            "memcpy" | "memmove" | "memset" | "__builtin_bit_cast" | "new" | "delete" | "malloc" => {
                return Some((token, "copying bytes, or memory from the device's heap,", KEEP_IN_LOCALS));
            }
            word if word.starts_with("__cvta_") => {
                return Some((
                    token,
                    "converting an address to a number, which arithmetic can move,",
                    ADDRESSES_OUTSIDE,
                ));
            }
            // A pointer or reference type by another name makes a cast no `*)` shows: `P(seen)`; and
            // `decltype(t)` may be a pointer's type: `using P = decltype(t); P(address)`.
            "using" | "typedef" if text(at + 2) == "=" || token.text == "typedef" => {
                let mut alias = (at + 1..code.len()).take_while(|&i| text(i) != ";").map(text);
                if alias.clone().any(|word| matches!(word, "*" | "&" | "&&")) {
                    return Some((token, "an alias of a pointer or reference type", KEEP_IN_LOCALS));
                }
                if alias.any(|word| matches!(word, "decltype" | "__typeof__" | "typeof")) {
                    return Some((
                        token,
                        "an alias of a type from `decltype` (which may be a pointer's)",
                        "write the type itself",
                    ));
                }
            }
            // A template's type may be a pointer (deduced from one): a cast to it, `(U)s` or
            // `U(s)`, could drop a `const` or make an address of a number.
            // (Not a trailing return type: `-> U {`.)
            name if template_types.contains(name)
                && !(at > 0 && text(at - 1) == "->")
                // (`T()`, `T{}`: a value of its own, no conversion.)
                && (matches!(text(at + 1), "(" | "{") && !matches!(text(at + 2), ")" | "}")
                    || in_a_cast(code, at, &part_types)
                    // (`using P = U;`, `typedef U P;`, `operator U()`: the same type by other names.)
                    || (statement_start(code, at)..at).any(|i| {
                        matches!(text(i), "using" | "typedef" | "operator") && (i + 1..at).all(|j| text(j) != "(")
                    })) =>
            {
                return Some((
                    token,
                    "a cast to a template's type, which may be a pointer,",
                    "convert with `static_cast<T>(...)`, which cannot drop a `const` or make an address of a number",
                ));
            }
            "decltype" if text(at + 1) == "(" => {
                let close = declared::matching(code, at + 1);
                // `&x`, `*p`, `declval<T&>()`: a pointer or reference. Between two operands
                // (`row * 2u`, `row & 31u`) the operator makes a number.
                let operand_end = |i: usize| {
                    code.get(i).is_some_and(|t| matches!(t.kind, Kind::Identifier | Kind::Number) || t.text == ")")
                };
                let operand_start = |i: usize| {
                    code.get(i).is_some_and(|t| matches!(t.kind, Kind::Identifier | Kind::Number) || t.text == "(")
                };
                if (at + 2..close)
                    .any(|i| matches!(text(i), "*" | "&" | "&&") && !(operand_end(i - 1) && operand_start(i + 1)))
                {
                    return Some((token, "a pointer or reference type from `decltype`", KEEP_IN_LOCALS));
                }
                // A type from `decltype` used as a cast: `decltype(p)(x)`, `(decltype(p))x`; not
                // `sizeof(decltype(p))`.
                // (Through qualifiers too: `(decltype(z) const)t`.)
                let after =
                    (close + 1..code.len()).find(|&i| !matches!(text(i), "const" | "volatile")).unwrap_or(close + 1);
                if text(after) == "(" || text(after) == ")" && !in_unevaluated(code, at) {
                    return Some((token, "a cast to a type from `decltype`", KEEP_IN_LOCALS));
                }
            }
            word if word.starts_with("__add_") => {
                return Some((token, "a pointer or reference type from a type trait", KEEP_IN_LOCALS));
            }
            "reinterpret_cast" => return Some((token, "`reinterpret_cast`", BITS_BY_FUNCTION)),
            // A `void*` converts to any pointer, and `__builtin_assume_aligned` makes one of a
            // `const` pointer.
            "__builtin_assume_aligned" => return Some((token, "`__builtin_assume_aligned`", KEEP_IN_LOCALS)),
            // A compiler's built-in function may take or make an address no check reads
            // (`__builtin_addressof(x)`); those of numbers are fine.
            word if word.starts_with("__builtin_") && !NUMBER_BUILTINS.contains(&word) || word == "addressof" => {
                return Some((token, "a compiler's built-in function other than those of numbers", KEEP_IN_LOCALS));
            }
            "void"
                if text(at + 1) == "*"
                    && at > 0
                    && text(at - 1) != "const"
                    && text(at + 2) != "const"
                    && !in_unevaluated(code, at)
                    && !printed_pointer(code, at) =>
            {
                return Some((token, "a pointer to `void` that is not `const`", KEEP_IN_LOCALS));
            }
            // `this` kept (`self(this)`, `S& me = *this`) makes a constant object writable through
            // itself; `this->v` and `return *this` keep nothing.
            "this" if text(at + 1) != "->" && !(at > 0 && text(at - 1) == "*" && !binds_a_reference(code, at)) => {
                return Some((
                    token,
                    "`this` kept or handed on",
                    "use `this->` for members and copy `*this` by value; capture with `[=]`",
                ));
            }
            // (The same as a function's: `size_t(&x)`, `U{t}`.)
            word if (WIDE_INTEGER_WORDS.contains(&word) || wide_aliases.contains(word))
                && matches!(text(at + 1), "(" | "{")
                && !(at > 0 && matches!(text(at - 1), "sizeof" | "alignof" | "__alignof__"))
                && !a_number(code, at + 2, &numbers) =>
            {
                return Some((token, "a cast to a 64-bit integer (which can make an address a number)", WIDE_NUMBERS));
            }
            // `z + k < t`, halved step by step, finds how far another's data lies from a writable
            // pointer with no cast and no difference of pointers.
            "<" | ">" | "<=" | ">=" if compares_pointers(code, at, &pointers_and_arrays) => {
                return Some((token, "a comparison of pointers (which finds where other data lies)", KEEP_IN_LOCALS));
            }
            "<" | ">" | "<=" | ">=" if compares_pointers(code, at, &maybe_pointers) => {
                return Some((
                    token,
                    "a comparison of values that may be pointers (of a template's type, or from `auto` or `decltype`),",
                    OF_A_NAMED_TYPE,
                ));
            }
            // `z + (t - z)` moves a writable pointer onto any data, `const` or not: a difference
            // of pointers (one of the part's pointers or arrays, or an address taken with `&`).
            "-" if !pointer_operand(code, at, &pointers_and_arrays) && pointer_operand(code, at, &maybe_pointers) => {
                return Some((
                    token,
                    "a difference of values that may be pointers (of a template's type, or from `auto` or `decltype`),",
                    OF_A_NAMED_TYPE,
                ));
            }
            "-" if pointer_operand(code, at, &pointers_and_arrays) => {
                return Some((
                    token,
                    "a difference of pointers (which moves one onto the other's data)",
                    KEEP_IN_LOCALS,
                ));
            }
            // `z + (t - z)` moves a null pointer onto any data, `const` or not, with no cast.
            "nullptr" | "NULL" => {
                return Some((token, "a null pointer (which arithmetic can move onto any data)", KEEP_IN_LOCALS));
            }
            "*" if matches!(text(at + 2), "=" | "{")
                && code.get(at + 1).is_some_and(|t| t.kind == Kind::Identifier)
                && matches!(text(at + 3), "0" | "}" | "0u" | "0l" | "0ul" | "0ull")
                && (text(at + 2) == "{" || matches!(text(at + 4), ";" | ",")) =>
            {
                return Some((token, "a null pointer (which arithmetic can move onto any data)", KEEP_IN_LOCALS));
            }
            "union" => return Some((token, "a union", BITS_BY_FUNCTION)),
            // `*` or `&` then `)`, perhaps through `const` or a template's `>`: a type in
            // parentheses, a cast (`(unsigned*)x`, `(Id<unsigned*>)x`); or then `>(`, a cast
            // through a template (`Id<unsigned*>(x)`, `ref<bool&>(x)`).
            "*" | "&" | "&&" => {
                let skipped = |i: &usize| matches!(text(*i), "const" | "volatile" | "__restrict__" | "__restrict");
                let next = (at + 1..code.len()).find(|i| !skipped(i));
                let after_angles = next.map(|i| (i..code.len()).find(|&j| !matches!(text(j), ">" | ">>")).unwrap_or(i));
                let through_angles = next.is_some_and(|i| matches!(text(i), ">" | ">>"));
                // (Not a parameter's type, `pick(unsigned v, const unsigned*)`, nor one `sizeof`
                // measures.)
                let closes_a_type = next.is_some_and(|i| text(i) == ")")
                    && !in_unevaluated(code, at)
                    && !closes_parameters(code, next.unwrap_or(at), &part_types);
                if closes_a_type && !printed_pointer(code, at)
                    || through_angles && after_angles.is_some_and(|j| matches!(text(j), ")" | "("))
                {
                    return Some((token, "a cast to a pointer or a reference", KEEP_IN_LOCALS));
                }
                // A template given a pointer or reference type can cast to it by another name:
                // `rm<unsigned*>::type(&k)`, `template <class U = unsigned*> ... U(&k)`.
                if through_angles {
                    return Some((token, "a pointer or reference type as a template's argument", KEEP_IN_LOCALS));
                }
            }
            // Those calls are CUDA's own: a function of the part's by their name (`int printf(char*
            // s)`) could write to the literal it is given.
            "printf" | "assert"
                if at > 0
                    && !matches!(
                        text(at - 1),
                        ";" | "{"
                            | "}"
                            | "("
                            | ")"
                            | ","
                            | "?"
                            | ":"
                            | "="
                            | "&&"
                            | "||"
                            | "!"
                            | "return"
                            | "else"
                            | "do"
                    ) =>
            {
                return Some((token, "a function of your own named `printf` or `assert`", KEEP_IN_LOCALS));
            }
            literal if token.kind == Kind::Literal && literal.ends_with('"') => {
                let linkage = at > 0 && text(at - 1) == "extern";
                // (Given to the call itself, as a whole argument: `assert(f("x"))` gives it to `f`,
                // `assert(s = "x")` to `s`.)
                let before = at.checked_sub(1).and_then(|i| code.get(i));
                // Or a choice between strings that is the whole argument, `k ? "odd" : "even"`,
                // nothing assigned in it.
                // (An expression alone: no lambda's body or braces, `[&] { char* t{k ? "a" : "b"}; }`.)
                let chosen = before.is_some_and(|t| matches!(t.text.as_str(), "?" | ":"))
                    && matches!(text(at + 1), ")" | "," | ":")
                    && !argument_of_the_call(code, at).any(|t| {
                        t.text.ends_with('=') && !matches!(t.text.as_str(), "==" | "!=" | "<=" | ">=")
                            || matches!(t.text.as_str(), "{" | "}" | "[" | "]" | ";" | "++" | "--")
                    });
                let whole = before.is_some_and(|t| matches!(t.text.as_str(), "(" | "," | "&&" | "!"))
                    && matches!(text(at + 1), ")" | "," | "&&")
                    || chosen
                    || before.is_some_and(|t| t.kind == Kind::Literal)
                    || code.get(at + 1).is_some_and(|t| t.kind == Kind::Literal);
                let said = whole
                    && calls
                        .last()
                        .is_some_and(|call| matches!(*call, "printf" | "assert" | "static_assert" | "_Pragma"));
                // (A `char` table given a string, `char kName[] = "xor";`: its characters in braces
                // are a table like any other.)
                let fills_a_table = at >= 2 && text(at - 1) == "=" && text(at - 2) == "]";
                if fills_a_table {
                    return Some((
                        token,
                        "a string literal",
                        "write a `char` table's characters in braces, `{'x', 'o', 'r', 0}`, as a table of numbers is \
                         written; a string literal may be only a whole argument of `printf`, `assert` or \
                         `static_assert`",
                    ));
                }
                if !linkage && !said && !in_attribute(code, at) && !names_a_constant_string(code, at) {
                    return Some((
                        token,
                        "a string literal",
                        "give a string only as a whole argument of `printf`, `assert` (`assert(k < 32 && \"why\")`, \
                         `assert(!\"unreachable\")`) or `static_assert`, and choose between two strings with `if`",
                    ));
                }
            }
            _ => {}
        }
    }
    None
}

/// Whether the `(` at `open` starts a C-style cast to a 64-bit integer type (`(unsigned long
/// long)t`, `(const size_t)t`, `(U)t` of an alias in `wide_aliases`): its parentheses hold only
/// integer words and qualifiers, one of them wide, and it is neither a call's nor a declaration's
/// parameter list (`f(long)`) nor `sizeof`'s.
fn casts_to_a_wide_integer(code: &[Token], open: usize, wide_aliases: &BTreeSet<&str>) -> bool {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    let wide = |i: usize| WIDE_INTEGER_WORDS.contains(&text(i)) || wide_aliases.contains(text(i));
    let close = declared::matching(code, open);
    let words = open + 1..close.min(code.len());
    let integer_words = words.clone().all(|i| {
        wide(i)
            || matches!(text(i), "unsigned" | "signed" | "int" | "short" | "char" | "const" | "volatile" | "std" | "::")
    });
    let before = open.checked_sub(1).map(|i| (&code[i], text(i)));
    let parameters = before.is_some_and(|(token, word)| {
        token.kind == Kind::Identifier && !declared::EXPRESSION_WORDS.contains(&word)
            || matches!(word, "]" | ")" | ">" | "sizeof" | "alignof" | "__alignof__" | "operator")
    });
    !words.is_empty() && integer_words && words.clone().any(wide) && !parameters
}

/// Whether the operand at `at` is a number: a literal, `sizeof`, CUDA's built-in indices
/// (`(unsigned long long)blockIdx.x * n`), or one of `numbers` (a name the part gives a number,
/// a function that returns one, CUDA's clocks), alone or in parentheses (`(size_t)(row)`).
fn a_number(code: &[Token], at: usize, numbers: &BTreeSet<&str>) -> bool {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    // A sign before a number, `(long long)-1`; a cast to a narrower number, `(ull)(unsigned)v`.
    if matches!(text(at), "-" | "+" | "~") {
        return a_number(code, at + 1, numbers);
    }
    if text(at) == "(" {
        let close = declared::matching(code, at).min(code.len());
        if close > at + 1 && (at + 1..close).all(|i| is_type_word(text(i)) && !WIDE_INTEGER_WORDS.contains(&text(i))) {
            return true;
        }
    }
    // A group of numbers and operators: `(size_t)(row + k)`, `(long long)(-1)`.
    if text(at) == "(" {
        let close = declared::matching(code, at).min(code.len());
        return close > at + 1
            && (at + 1..close).all(|i| match code[i].kind {
                Kind::Identifier => a_number(code, i, numbers) || i > 0 && matches!(text(i - 1), "." | "->"),
                Kind::Number => true,
                Kind::Punct => {
                    !matches!(text(i), "&" | "&&" | "*" | "[" | "]" | "{" | "}" | "," | ";" | "->")
                        || matches!(text(i), "&" | "*") && binary_operator(code, i)
                }
                _ => false,
            });
    }
    code.get(at).is_some_and(|t| {
        t.kind == Kind::Number
            || matches!(
                t.text.as_str(),
                "sizeof" | "alignof" | "__alignof__" | "threadIdx" | "blockIdx" | "blockDim" | "gridDim" | "warpSize"
            )
            || numbers.contains(t.text.as_str()) && !matches!(text(at + 1), "[" | "." | "->")
    })
}

/// Whether `code[at]` is in `(void*)` or `(const void*)` given whole to `printf` with one name
/// (`printf("%p", (void*)tile)`): an address printed, through which nothing is written.
fn printed_pointer(code: &[Token], at: usize) -> bool {
    let Some(open) = enclosing(code, at).next().filter(|&open| code[open].text == "(") else { return false };
    let close = declared::matching(code, open).min(code.len());
    let inside: Vec<&str> = code[open + 1..close].iter().map(|t| t.text.as_str()).collect();
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    let call = enclosing(code, open).next();
    matches!(inside.as_slice(), ["void", "*"] | ["const", "void", "*"] | ["void", "const", "*"])
        && call.is_some_and(|call| call > 0 && text(call - 1) == "printf")
        && open > 0
        && text(open - 1) == ","
        && code.get(close + 1).is_some_and(|t| t.kind == Kind::Identifier)
        && matches!(text(close + 2), "," | ")")
}

/// Whether the relational operator at `at` compares a pointer: one of `pointers` (not indexed), an
/// address taken with `&`, or `this`, anywhere in either operand (`z + k < t + 1`).
fn compares_pointers(code: &[Token], at: usize, pointers: &BTreeSet<&str>) -> bool {
    if !binary_operator(code, at) || template_angle(code, at) {
        return false;
    }
    let pointer_at = |i: usize| names_a_pointer(code, i, pointers);
    let (left, right) = operands(code, at, false);
    // Compared with a number alone (`v > 0`), a pointer tells no distance: against 0 it is tested
    // for null, and `p > 5` does not compile.
    if a_literal_alone(code, &left) || a_literal_alone(code, &right) {
        return false;
    }
    left.into_iter().chain(right).any(pointer_at)
}

/// Whether `code[at]` is inside `sizeof(...)`, `alignof(...)` or `__alignof__(...)`, which
/// evaluate nothing.
fn in_unevaluated(code: &[Token], at: usize) -> bool {
    enclosing(code, at)
        .any(|open| open > 0 && matches!(code[open - 1].text.as_str(), "sizeof" | "alignof" | "__alignof__"))
}

/// Whether the `)` at `close` ends a function's parameters: its `(` follows a name of the part's
/// (`pick(...)`), not a word of C++'s or a reserved name (`return (...)`, `__typeof__(...)`), so
/// it begins no cast.
fn closes_parameters(code: &[Token], close: usize, types: &BTreeSet<&str>) -> bool {
    let Some(open) = enclosing(code, close).next() else { return false };
    let name = open.checked_sub(1).map(|i| &code[i]);
    // (`(*)`, `(&)`, `(*const)`: a declarator with no name, of a pointer cast `(C (*)[1])s`.)
    let names_a_type = code[open + 1..close].iter().any(|t| {
        t.kind == Kind::Identifier && !matches!(t.text.as_str(), "const" | "volatile" | "__restrict__" | "__restrict")
    });
    code[open].text == "("
        && names_a_type
        && name.is_some_and(|name| !types.contains(name.text.as_str()))
        && name.is_some_and(|name| {
            name.kind == Kind::Identifier
                && !name.text.starts_with('_')
                && !is_type_word(&name.text)
                && !declared::EXPRESSION_WORDS.contains(&name.text.as_str())
                && !matches!(
                    name.text.as_str(),
                    "decltype"
                        | "typeof"
                        | "if"
                        | "while"
                        | "for"
                        | "switch"
                        | "catch"
                        | "noexcept"
                        | "alignas"
                        | "static_assert"
                        | "requires"
                )
        })
}

/// Whether the binary `-` at `at` subtracts a pointer (a name of `pointers` not indexed, an
/// address taken with `&`, or `this`, alone or in parentheses: `t - z`, `t - &x`, `t - (z + 0)`),
/// or takes anything but a number from one (`(ull)t - (ull)p`). A pointer less a number
/// (`*(p - 1)`) moves within its own data.
fn pointer_operand(code: &[Token], at: usize, pointers: &BTreeSet<&str>) -> bool {
    if !binary_operator(code, at) {
        return false;
    }
    let (left, right) = operands(code, at, true);
    let pointer_in = |side: &[usize]| side.iter().any(|&i| names_a_pointer(code, i, pointers));
    // A pointer less a number moves within its own data (`end - 1`); less anything else, or
    // anything less a pointer, is a distance (`t + 0 - +z`, `(ull)t - (ull)p`).
    pointer_in(&right) || pointer_in(&left) && !a_literal_alone(code, &right)
}

/// Whether `code[i]` stands for a pointer: one of `pointers` not indexed, called or a member's
/// object, an address taken with `&`, or `this` (not `this->`).
fn names_a_pointer(code: &[Token], i: usize, pointers: &BTreeSet<&str>) -> bool {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    let after_an_operand =
        i > 0 && (matches!(text(i - 1), ")" | "]") || matches!(code[i - 1].kind, Kind::Identifier | Kind::Number));
    let pointer = matches!(text(i), "&" | "&&") && i > 0 && !after_an_operand
        || text(i) == "this" && text(i + 1) != "->"
        // (Called, a function of the part that returns a pointer: `there() - mine(x)`.)
        || pointers.contains(text(i))
            && code[i].kind == Kind::Identifier
            && !matches!(text(i + 1), "[" | "." | "->")
            && !(i > 0 && text(i - 1) == "*");
    // (`sizeof(tile) <= limit` measures an array; it compares no address.)
    pointer && !in_unevaluated(code, i)
}

/// The tokens of the operands of the binary operator at `at`, left and right, to where an
/// expression's part ends (a bracket not its own, a separator, an assignment, a logical or
/// conditional operator, a comparison; for a difference, `+` and `-` end the right operand too).
/// A call's arguments, and what a dereferenced group holds (`*(end - 1)`), are passed over: what
/// a call returns is a pointer only where its name says so, and what `*` reads is a value.
fn operands(code: &[Token], at: usize, difference: bool) -> (Vec<usize>, Vec<usize>) {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    let ends = |word: &str| {
        matches!(
            word,
            ";" | "," | "{" | "}" | "?" | ":" | "=" | "&&" | "||" | "<" | ">" | "<=" | ">=" | "==" | "!=" | "return"
        )
    };
    // (A dereferenced group that takes an address reads the pointer itself: `*(&p)` is `p`.)
    let takes_an_address = |open: usize| {
        (open + 1..declared::matching(code, open).min(code.len()))
            .any(|i| matches!(text(i), "&" | "&&") && !binary_operator(code, i))
    };
    let passed_over = |open: usize| {
        open > 0
            && (code[open - 1].kind == Kind::Identifier && !declared::EXPRESSION_WORDS.contains(&text(open - 1))
                || matches!(text(open - 1), ">" | ">>")
                || text(open - 1) == "*" && !binary_operator(code, open - 1) && !takes_an_address(open))
    };
    // (Backwards, a group is known to be a call's at its opener: what it held is dropped then.
    // One pass, whatever the nesting.)
    let mut left = Vec::new();
    let mut groups: Vec<usize> = Vec::new();
    let mut i = at;
    while i > 0 {
        i -= 1;
        match text(i) {
            ")" | "]" => {
                groups.push(left.len());
                left.push(i);
            }
            "(" | "[" => match groups.pop() {
                None => break,
                Some(held) if text(i) == "(" && passed_over(i) => left.truncate(held),
                Some(_) => left.push(i),
            },
            word if groups.is_empty() && ends(word) => break,
            _ => left.push(i),
        }
    }
    let mut right = Vec::new();
    let (mut depth, mut i) = (0i64, at + 1);
    while i < code.len() {
        match text(i) {
            "(" if passed_over(i) => {
                i = declared::matching(code, i) + 1;
                continue;
            }
            "(" | "[" => depth += 1,
            ")" | "]" if depth == 0 => break,
            ")" | "]" => depth -= 1,
            "+" | "-" if difference && depth == 0 && !right.is_empty() && binary_operator(code, i) => break,
            word if depth == 0 && ends(word) => break,
            _ => {}
        }
        right.push(i);
        i += 1;
    }
    (left, right)
}

/// Whether an operand (its tokens, as [`operands`] gives them) is one number literal.
fn a_literal_alone(code: &[Token], side: &[usize]) -> bool {
    matches!(side, [only] if code[*only].kind == Kind::Number)
}

/// Whether the `*this` at `at` is bound to a reference or kept in a member initializer:
/// `S& me = *this;`, `me(*this)` after a constructor's `:`.
fn binds_a_reference(code: &[Token], at: usize) -> bool {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    let start = statement_start(code, at);
    let statement: Vec<&str> = (start..at).map(text).collect();
    let reference = statement.windows(3).any(|w| matches!(w[0], "&" | "&&") && matches!(w[2], "=" | "{" | "("));
    let initializer = statement.windows(2).any(|w| w == [")", ":"]);
    reference || initializer
}

/// Whether `code[at]` is in the parentheses of a C-style cast: `(U)s`, `(U const)s`,
/// `(const volatile U)s`, not a function's parameters, nor `sizeof(U)`.
fn in_a_cast(code: &[Token], at: usize, types: &BTreeSet<&str>) -> bool {
    let Some(open) = enclosing(code, at).next().filter(|&open| code[open].text == "(") else { return false };
    let close = declared::matching(code, open);
    let qualified = code[open + 1..close.min(code.len())]
        .iter()
        .enumerate()
        .all(|(i, t)| open + 1 + i == at || matches!(t.text.as_str(), "const" | "volatile" | "typename"));
    qualified && !in_unevaluated(code, at) && !closes_parameters(code, close, types)
}

/// Whether the literal at `at` is all or a branch of the value a `const char*` is declared with,
/// the whole of it: `const char* parity = s % 2u ? "odd" : "even";` (a `const char*` cannot write).
fn names_a_constant_string(code: &[Token], at: usize) -> bool {
    let text = |i: usize| code.get(i).map_or("", |t| t.text.as_str());
    let start = statement_start(code, at);
    let end = (at..code.len()).find(|&i| text(i) == ";").unwrap_or(code.len());
    let Some(equals) = (start..at).find(|&i| text(i) == "=") else { return false };
    let declared: Vec<&str> = (start..equals).map(text).collect();
    let constant_pointer = matches!(
        declared[..],
        ["const", "char", "*", name] | ["char", "const", "*", name] | ["const", "char", "*", "const", name]
            | ["char", "const", "*", "const", name] if code[equals - 1].kind == Kind::Identifier && !name.is_empty()
    );
    // The value: literals, and conditions of names, numbers and operators that assign nothing.
    let plain_value = (equals + 1..end).all(|i| {
        let t = &code[i];
        matches!(t.kind, Kind::Identifier | Kind::Number | Kind::Literal) || NUMBER_OPERATORS.contains(&t.text.as_str())
    }) && (equals + 1..end)
        .all(|i| code[i].kind != Kind::Identifier || !matches!(text(i + 1), "(" | "["));
    let branch = matches!(text(at - 1), "=" | "?" | ":") && matches!(text(at + 1), ";" | ":");
    constant_pointer && plain_value && branch
}

/// The tokens of the argument `code[at]` is in, from the `(` or `,` before it to the `)` or `,`
/// after it, at the depth of the innermost parentheses about it.
fn argument_of_the_call(code: &[Token], at: usize) -> impl Iterator<Item = &Token> {
    let open = enclosing(code, at).next().unwrap_or(0);
    let close = declared::matching(code, open).min(code.len());
    // (One pass: the commas that no `(` or `[` inside the call encloses.)
    let mut depth = 0usize;
    let mut top_level_commas = Vec::new();
    for (i, token) in code.iter().enumerate().take(close).skip(open + 1) {
        match token.text.as_str() {
            "(" | "[" => depth += 1,
            ")" | "]" => depth = depth.saturating_sub(1),
            "," if depth == 0 => top_level_commas.push(i),
            _ => {}
        }
    }
    let start = top_level_commas.iter().rev().find(|&&i| i < at).map_or(open + 1, |i| i + 1);
    let end = top_level_commas.iter().find(|&&i| i > at).copied().unwrap_or(close);
    code[start..end].iter()
}
