//! The checks of a learner's part, in the order they run (the first problem found is the one
//! shown). This file reads the part and the starter's code around it once; each family of checks
//! is a file of its own: [`shape`] (what the part's brackets, directives and statements reach),
//! [`words`] (names a part may not use or define), [`lasting`] (state kept from one launch to the
//! next), [`writes`] (writes through pointers to what lasts), [`sizes`] (acting otherwise at the
//! profiled and the timed size) and [`tile`] (shared memory a part reads before it is filled).

use std::collections::BTreeSet;

use super::{
    Invalid, Parts, course_headers, directives, header_tokens, lasting, prints, shape, sizes, syntax::depth, tile,
    words, writes,
};
use crate::tokens::{self, Kind, Token};

/// The first problem of a part a check finds: its line, and what is wrong, with the fix.
pub(super) type Found = Result<(), (usize, String)>;

/// A problem at `line`, as every check returns it.
pub(super) fn problem<T>(line: usize, problem: String) -> Result<T, (usize, String)> {
    Err((line, problem))
}

/// The starter's code around the part, which the part may not reach or change.
pub(super) struct Outside<'s> {
    /// The starter's own part.
    pub starter_part: Vec<Token>,
    /// The starter's lines before the part (its `EDIT BELOW` marker last) and from its end on.
    pub before: Vec<Token>,
    pub after: Vec<Token>,
    /// Whether the part is inside a function (the kernel).
    pub inside_function: bool,
    /// The names of the kernel's parameters.
    pub parameters: Vec<&'s str>,
    /// Names the code outside the part and the headers the part includes use, which the part may
    /// not redefine, less those the starter's part defines for it.
    pub used: BTreeSet<String>,
    /// The names the starter's part defines, as macros or `constexpr` variables, that the code
    /// outside reads (`TILE_WORDS`, `read_whole_particle`).
    pub macros_read: BTreeSet<String>,
    /// Of those, the ones it reads beside an operator (`static_assert(TILE_WORDS == 1024)`, not
    /// `tile[TILE_WORDS]`).
    pub macros_read_beside_an_operator: BTreeSet<String>,
    /// Whether the file includes `shared_load.cuh`, before the part or in it.
    pub includes_shared_load: bool,
    /// The starter's macros before the part that stand for a number (`TILE`).
    pub numbers: BTreeSet<String>,
}

impl Outside<'_> {
    /// Whether the starter's part uses `word` (a part may use what its starter's does).
    pub fn starter_has(&self, word: &str) -> bool {
        self.starter_part.iter().any(|t| t.kind == Kind::Identifier && t.text == word)
    }
}

/// What the region holds that would reach beyond it, as the first such problem; else the
/// region's lines (1-based, inclusive) and what the code after it reads of it as values.
/// `signature` is the kernel's parameter list.
pub(super) fn region_problems(
    yours: &Parts,
    theirs: &Parts,
    signature: &str,
) -> Result<((usize, usize), Vec<String>), Invalid> {
    let first_line = yours.region_start + 1;
    let as_invalid = |(line, problem)| Invalid::Region { line, problem };
    let tokens = shape::lexed(yours).map_err(as_invalid)?;
    let outside = outside(yours, theirs, signature, &tokens);
    checks(&tokens, &outside, first_line).map_err(as_invalid)?;
    Ok(((first_line, yours.after_start), outside.macros_read.iter().cloned().collect()))
}

/// Every check of the part's `tokens`, in order.
fn checks(tokens: &[Token], outside: &Outside, first_line: usize) -> Found {
    shape::balanced(tokens, outside)?;
    // The code as the compiler reads it, the region's own macros expanded: what it declares, where
    // it returns and how it ends are read there too.
    let expanded = shape::expanded(tokens, first_line)?;
    let plain = tokens::without_attributes(&expanded);
    // What runs of the part's: its code, and its macros that the code outside reads.
    let expanded_outside = directives::expanded_outside(tokens, &expanded, outside)?;
    directives::macros_read_beside_operators_are_one_value(tokens, &expanded_outside, outside)?;
    directives::names_nothing_of_theirs(tokens, &expanded_outside, outside)?;
    let runs: Vec<Token> =
        expanded.iter().chain(expanded_outside.iter().flat_map(|read| &read.tokens)).cloned().collect();
    directives::pragma_operators(tokens)?;
    directives::pragma_operators(&runs)?;
    shape::stays_in_the_kernel(&expanded, &plain, outside)?;
    words::no_assumption(&runs)?;
    lasting::no_lasting_variable(&plain)?;
    shape::no_operator_of_its_own(&expanded, outside)?;
    words::no_word_of_its_place(tokens)?;
    words::no_spelled_out_space(&runs)?;
    words::no_packed_layout(&runs)?;
    writes::no_write_to_what_lasts(&runs, outside)?;
    prints::prints_only_its_values(&runs)?;
    lasting::no_writable_constant(&plain)?;
    lasting::no_mutable_member(&expanded)?;
    words::no_spelled_out_kernel(&runs, outside)?;
    words::no_name_of_the_code_outside(tokens, &expanded, outside)?;
    words::no_refused_word(&runs, outside)?;
    shape::ends_whole(tokens, &expanded)?;
    sizes::same_at_every_size(&runs, &outside.numbers)?;
    sizes::no_value_of_a_print(&runs)?;
    tile::no_tile_read_or_own_shared(&plain, outside)
}

/// The starter's code around the part, read once for every check.
fn outside<'s>(yours: &Parts, theirs: &Parts, signature: &'s str, tokens: &[Token]) -> Outside<'s> {
    let lex = |text: &str, first: usize| tokens::tokenize(text, first).expect("the starter tokenizes");
    let starter_part = lex(&theirs.region, theirs.region_start + 1);
    let (before, after) = (lex(&theirs.before, 1), lex(&theirs.after, 1));
    let parameters = signature
        .split(',')
        .filter_map(|p| p.split(|c: char| !(c.is_alphanumeric() || c == '_')).rfind(|w| !w.is_empty()))
        .collect();
    let includes_shared_load = [&yours.before, &yours.region].iter().any(|text| text.contains("shared_load.cuh"));
    let used = names_used_outside(&before, &after, tokens, &starter_part);
    let defined_by_the_starter = starter_defines(&starter_part);
    let names = |read: &dyn Fn(&[Token], &str) -> bool| -> BTreeSet<String> {
        defined_by_the_starter
            .iter()
            .filter(|defined| read(&before, &defined.text) || read(&after, &defined.text))
            .map(|defined| defined.text.clone())
            .collect()
    };
    let macros_read = names(&|code, name| code.iter().any(|t| t.kind == Kind::Identifier && t.text == name));
    let macros_read_beside_an_operator = names(&read_beside_an_operator);
    let numbers = starter_numbers(&before);
    Outside {
        inside_function: depth(&before) > 0,
        starter_part,
        before,
        after,
        parameters,
        used,
        macros_read,
        macros_read_beside_an_operator,
        includes_shared_load,
        numbers,
    }
}

/// The names the code around the part (`before` and `after`) uses, and every header the part's
/// `tokens` include, which the part may not redefine, less those the starter's part defines.
fn names_used_outside(before: &[Token], after: &[Token], tokens: &[Token], starter_part: &[Token]) -> BTreeSet<String> {
    let mut used: BTreeSet<String> = BTreeSet::new();
    for token in before.iter().chain(after) {
        if token.kind == Kind::Identifier {
            used.insert(token.text.clone());
        }
    }
    // CUDA's own macros that the code outside uses expand to these (`__shared__` to
    // `__attribute__((shared))`): a `#define shared` would change that code as surely.
    used.extend(words::CUDA_EXPANSION_WORDS.map(str::to_owned));
    // CUDA's functions that the grader's lines after the part call (the place recorder's).
    used.extend(crate::after_part::GRADERS_CALLS.map(str::to_owned));
    // A header the region includes, and every header that one includes, is read after the
    // region's macros: their names count as used. (One included before the region was read
    // before them.)
    let included_by = |tokens: &[Token]| -> Vec<String> {
        tokens::directives(tokens)
            .filter(|(_, name)| *name == "include")
            .filter_map(|(start, _)| tokens.get(start + 2))
            .map(|t| t.text.trim_matches('"').to_owned())
            .collect()
    };
    let (mut waiting, mut read) = (included_by(tokens), BTreeSet::new());
    while let Some(header) = waiting.pop() {
        if !course_headers().contains(&header.as_str()) || !read.insert(header.clone()) {
            continue;
        }
        let header_tokens = header_tokens(&header);
        waiting.extend(included_by(header_tokens));
        used.extend(header_tokens.iter().filter(|t| t.kind == Kind::Identifier).map(|t| t.text.clone()));
    }
    for defined in starter_defines(starter_part) {
        used.remove(&defined.text);
    }
    used
}

/// The starter's object-like macros in `before` that stand for a number, or for numbers and
/// such macros with operators and parentheses (`#define TILE 32u`, `#define THREADS (WORDS / 2)`).
fn starter_numbers(before: &[Token]) -> BTreeSet<String> {
    let defines: Vec<&[Token]> = tokens::directives(before)
        .filter(|&(_, name)| name == "define")
        .map(|(start, _)| tokens::directive_tokens(before, start))
        // (Object-like: no `(` right after the name.)
        .filter(|directive| directive.len() > 3 && (directive[3].text != "(" || directive[3].after_space))
        .collect();
    let mut numbers = BTreeSet::new();
    // Each round adds a macro made of numbers and those found before.
    loop {
        let found = defines.iter().filter(|directive| !numbers.contains(&directive[2].text)).find(|directive| {
            directive[3..].iter().all(|t| {
                t.kind == Kind::Number
                    || numbers.contains(&t.text)
                    || matches!(
                        t.text.as_str(),
                        "(" | ")" | "+" | "-" | "*" | "/" | "%" | "<<" | ">>" | "&" | "|" | "^"
                    )
            })
        });
        match found {
            Some(directive) => numbers.insert(directive[2].text.clone()),
            None => return numbers,
        };
    }
}

/// The names the starter's part defines for the code after it: its macros (`TILE_WORDS`) and its
/// `constexpr` variables (`read_whole_particle`, the last name before its `=`), which a part may
/// define either way.
fn starter_defines(starter_part: &[Token]) -> Vec<&Token> {
    let macros = tokens::directives(starter_part)
        .filter(|&(_, name)| name == "define")
        .filter_map(|(start, _)| starter_part.get(start + 2));
    let constants = starter_part.iter().enumerate().filter(|(_, t)| t.text == "constexpr").filter_map(|(at, _)| {
        let assigned = starter_part[at..].iter().position(|t| matches!(t.text.as_str(), "=" | "(" | ";"))? + at;
        (starter_part[assigned].text == "=").then(|| &starter_part[assigned - 1])
    });
    macros.chain(constants).collect()
}

/// Whether `code` reads the name `name` beside an operator, where the precedence of what the name
/// stands for would count: not alone in brackets, an argument, or a statement.
fn read_beside_an_operator(code: &[Token], name: &str) -> bool {
    let alone = |token: Option<&Token>| {
        token.is_none_or(|t| {
            t.kind != Kind::Punct || matches!(t.text.as_str(), "(" | ")" | "[" | "]" | "{" | "}" | ";" | ",")
        })
    };
    code.iter().enumerate().any(|(at, token)| {
        token.kind == Kind::Identifier
            && token.text == name
            && !(alone(at.checked_sub(1).and_then(|before| code.get(before))) && alone(code.get(at + 1)))
    })
}
