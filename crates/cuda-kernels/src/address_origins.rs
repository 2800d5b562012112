//! Where each address a function's code makes may come from: a module variable's address, an
//! address the launch gives (a kernel's pointer parameter, the function's own local or shared
//! memory, a pointer the grader sets), or a number. An address passed to a function that does not
//! inline is followed into it, and one it returns back out ([`crate::calls`]). [`given`] refuses a
//! module whose global, constant or generic access may be at a number: a pointer a table holds from
//! the start as null (`struct Ref { unsigned* at; }; __constant__ const Ref none[1] = {};`), made
//! from `0`, or passed to a function whose address the code takes, plus any 64-bit offset, reaches
//! any address of the process.

use std::{
    collections::{BTreeMap, BTreeSet},
    fmt,
};

use crate::{
    calls::{Body, Module, Passed},
    low_bits::{self, LowBits},
    ptx_text::{Statement, Variable, closes_a_body, declared_variable, of_a_float, one_64_bit_word, words},
    read_before_written, special_registers,
};

/// Where an address may come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Origin<'p> {
    /// A module variable's address: generic (made by `cvta`) or of the variable's own space.
    Variable(&'p str, bool),
    /// An address the launch gives: a kernel's pointer parameter, the function's local or shared
    /// memory, a pointer the grader sets.
    Given,
    /// A number: a constant, data loaded from memory, a parameter of a function whose address the
    /// code takes, what a call through a pointer returns, an argument or a result left unwritten.
    Number,
}

pub(crate) type Origins<'p> = BTreeSet<Origin<'p>>;

/// The module variables in `origins`, by name, and whether each address is generic.
pub(crate) fn variables_in<'a, 'p>(origins: &'a Origins<'p>) -> impl Iterator<Item = (&'p str, bool)> + 'a {
    origins.iter().filter_map(|origin| match origin {
        Origin::Variable(name, generic) => Some((*name, *generic)),
        _ => None,
    })
}

/// A module variable: its state space (`global` or `const`), size in bytes, if known, and what a
/// 64-bit word of it may hold: the addresses its initializer holds, and a number unless every word
/// of it is one of those (`.u64 refs[2] = {generic(table), generic(other)}`); for a table of
/// 64-bit words, what each word holds (`{generic(table), 7}`: an address, then a number).
pub(crate) struct Declared<'p> {
    pub(crate) space: &'static str,
    pub(crate) bytes: Option<u64>,
    pub(crate) holds: Origins<'p>,
    words: Vec<Origins<'p>>,
    /// The offset of its last byte known to hold 0: where a string `printf` prints with `%s` from
    /// inside it ends at the latest.
    pub(crate) last_zero: Option<u64>,
}

impl<'p> Declared<'p> {
    /// The words a 64-bit read at `offset` past the variable's address may read, by index: those
    /// its known low bits and remainder allow (`None` where they allow none of its words, or do
    /// not tell words apart). [`crate::module_variables`] holds such a read to them.
    pub(crate) fn words_read(&self, offset: LowBits) -> Option<Vec<usize>> {
        let read: Vec<usize> = (0..self.words.len()).filter(|i| offset.allows(*i as u64 * 8)).collect();
        (!read.is_empty() && read.len() < self.words.len()).then_some(read)
    }

    /// What a 64-bit read at `offset` past the variable's address may read.
    pub(crate) fn read_at(&self, offset: Option<LowBits>) -> Origins<'p> {
        match offset.and_then(|offset| self.words_read(offset)) {
            Some(read) => read.into_iter().flat_map(|i| self.words[i].iter().copied()).collect(),
            None => self.holds.clone(),
        }
    }

    /// Whether some 64-bit word holds a number, and some an address.
    pub(crate) fn holds_addresses_and_numbers(&self) -> bool {
        self.holds.contains(&Origin::Number) && variables_in(&self.holds).next().is_some()
    }
}

/// What a module declares: its `.global` and `.const` variables (at its own level), by name, and
/// the names whose addresses a launch gives: shared, local and parameter variables (a kernel's
/// parameters, a function's local depot). Any other name (`WARP_SZ`, 32) is a number.
pub(crate) struct Names<'p> {
    pub(crate) variables: BTreeMap<&'p str, Declared<'p>>,
    symbols: BTreeSet<&'p str>,
}

impl Names<'_> {
    /// Whether `name` is an address: a variable's or a symbol's.
    pub(crate) fn is_address(&self, name: &str) -> bool {
        self.variables.contains_key(name) || self.symbols.contains(name)
    }
}

/// The names `ptx` declares.
pub(crate) fn declared(ptx: &str) -> Names<'_> {
    let symbols = ptx
        .lines()
        .filter_map(|line| {
            declared_variable(line.trim().trim_end_matches([';', ',', ')']), &[".shared", ".local", ".param"])
        })
        .map(|(_, name, _)| name)
        .collect();
    Names { variables: declared_variables(ptx), symbols }
}

/// The module's `.global` and `.const` variables, by name (declared at its own level).
fn declared_variables(ptx: &str) -> BTreeMap<&str, Declared<'_>> {
    let mut found = BTreeMap::new();
    let mut initializers = Vec::new();
    let mut depth = 0usize;
    for line in ptx.lines() {
        // (Its initializer, `= {0, 16, ...}`, is not part of its declaration.)
        let statement = line.trim().trim_end_matches(';');
        let (declaration, initializer) = statement.split_once('=').unwrap_or((statement, ""));
        if depth == 0
            && let Some((space, name, rest)) = declared_variable(declaration, &[".global", ".const"])
        {
            let variable = Variable::parse(rest).filter(|v| v.name == name);
            let bytes = variable.as_ref().map(|v| v.bytes);
            let last_zero = variable.as_ref().and_then(|v| last_zero_byte(v, initializer));
            let space = space.trim_start_matches('.');
            found.insert(name, Declared { space, bytes, holds: Origins::new(), words: Vec::new(), last_zero });
            let words = variable.filter(|v| v.bits == 64).map(|v| v.bytes / 8);
            initializers.push((name, initializer, words));
        }
        closes_a_body(line, &mut depth);
    }
    for (name, initializer, words) in initializers {
        let (holds, words) = held_addresses(initializer, words, &found);
        found.entry(name).and_modify(|variable| {
            variable.holds = holds;
            variable.words = words;
        });
    }
    found
}

/// The offset of the last byte of `variable` that its `initializer` (`{97, 98, 0}`, or none) leaves
/// 0: each element's bytes, lowest first, and 0 past the elements it gives. An element that is no
/// number (an address, `generic(table)`; a float) is taken to hold no 0 byte.
fn last_zero_byte(variable: &Variable, initializer: &str) -> Option<u64> {
    let element = (variable.bits / 8).max(1);
    let given: Vec<&str> =
        initializer.trim().trim_start_matches('{').trim_end_matches('}').split(',').map(str::trim).collect();
    let given: Vec<&str> = given.into_iter().filter(|e| !e.is_empty()).collect();
    if (given.len() as u64) * element < variable.bytes {
        return variable.bytes.checked_sub(1);
    }
    (0..variable.bytes).rev().find(|at| {
        let number = given.get((at / element) as usize).and_then(|e| e.parse::<u64>().ok());
        number.is_some_and(|number| (number >> (8 * (at % element))) & 0xff == 0)
    })
}

/// What a 64-bit word of a variable with `initializer` (of `words_in_it` 64-bit words, if it is made
/// of them) may hold, and what each of its words holds (none where it is not made of them):
/// `generic(table)` a generic address, `table` one of the variable's own space, anything else
/// (`7`, `0`, a word past the initializer's end) a number.
fn held_addresses<'p>(
    initializer: &'p str,
    words_in_it: Option<u64>,
    variables: &BTreeMap<&'p str, Declared<'p>>,
) -> (Origins<'p>, Vec<Origins<'p>>) {
    let entries = initializer.trim().trim_start_matches('{').trim_end_matches('}').split(',');
    let mut held: Vec<Origins<'p>> = entries
        .filter(|entry| !entry.trim().is_empty())
        .map(|entry| {
            let mut names = words(entry).peekable();
            let generic = names.next_if_eq(&"generic").is_some();
            match names.next().and_then(|name| variables.get_key_value(name)) {
                Some((name, _)) => Origins::from([Origin::Variable(name, generic)]),
                None => Origins::from([Origin::Number]),
            }
        })
        .collect();
    let mut any: Origins<'p> = held.iter().flatten().copied().collect();
    match words_in_it.and_then(|words| usize::try_from(words).ok()) {
        Some(words) if held.len() <= words => {
            if held.len() < words {
                any.insert(Origin::Number);
            }
            held.resize(words, Origins::from([Origin::Number]));
        }
        _ => {
            any.insert(Origin::Number);
            held.clear();
        }
    }
    (any, held)
}

/// Where each register of each function of `module` may come from ([`origins`]), an address
/// passed to a function that does not inline followed into it, and one it returns out of it.
pub(crate) fn module_origins<'p>(
    module: &Module,
    names: &Names<'p>,
    host_set: &[&str],
) -> Vec<BTreeMap<String, Origins<'p>>> {
    let number = Origins::from([Origin::Number]);
    module.followed(
        number,
        |body, passed| origins(body, names, host_set, passed),
        |found, value| held(value, names, found),
    )
}

/// Where each register of a function's `body` may come from, followed through every instruction
/// until nothing new is found (a loop's later instructions feed its earlier ones). A register no
/// instruction writes holds 0. What a load reads is a number, but for a kernel's 64-bit parameter,
/// what calls `passed` (a parameter of a function that does not inline, a call's result), a
/// 64-bit word of a variable (what the words its address's [`low_bits`] allow hold: the grader's
/// `host_set` ones hold a given address), and one of local memory, which may be any address the
/// function stored there, or a number (a word it did not store, which is 0; the words are not
/// told apart).
fn origins<'p>(
    body: &Body,
    names: &Names<'p>,
    host_set: &[&str],
    passed: &Passed<Origin<'p>>,
) -> BTreeMap<String, Origins<'p>> {
    let statements = &body.statements[..];
    let kernel_parameters = kernel_parameters(body.text);
    let written: BTreeSet<&str> = statements
        .iter()
        .filter(|s| !s.writes_memory())
        .filter_map(|s| s.operands.first())
        .flat_map(|destination| words(destination))
        .collect();
    let low_bits = low_bits::of_registers(statements, &|name| names.is_address(name));
    // A register some path reads before it is written holds 0 there, in the grader's build.
    let mut origins: BTreeMap<String, Origins<'p>> = read_before_written::registers(body.text)
        .into_iter()
        .map(|register| (register, Origins::from([Origin::Number])))
        .collect();
    let mut stored_locally = Origins::new();
    loop {
        let of = |operand: &str, origins: &BTreeMap<String, Origins<'p>>| {
            let mut from = origins_of(operand, names, origins);
            let zero = words(operand).any(|w| w.starts_with('%') && !written.contains(w));
            if zero || words(operand).next().is_none() {
                from.insert(Origin::Number);
            }
            from
        };
        let mut grew = false;
        for statement in statements.iter().filter(|s| s.writes_memory() && s.space() == "local") {
            let before = stored_locally.len();
            for value in statement.stored_values() {
                stored_locally.extend(of(value, &origins));
            }
            grew |= stored_locally.len() > before;
        }
        for (statement, passing) in statements.iter().zip(&body.passing).filter(|(s, _)| !s.writes_memory()) {
            let Some((destination, sources)) = statement.operands.split_first() else { continue };
            let values: Vec<Origins<'p>> =
                sources.iter().filter(|s| !s.starts_with('[')).map(|source| of(source, &origins)).collect();
            let from = match statement.kind() {
                // (A function's parameter or a call's result: what calls pass.)
                "ld" if statement.space() == "param"
                    && !words(statement.address().unwrap_or_default()).any(|w| kernel_parameters.contains(w)) =>
                {
                    passed.read(body.name, passing.as_ref())
                }
                "ld" => loaded(statement, &origins, &low_bits, names, host_set, &stored_locally),
                "add" => added(values.first(), values.get(1)),
                "sub" => less(values.first(), values.get(1)),
                // `a * b + c`: `c` plus a number, unless `a` or `b` is an address (then a number).
                "mad" => {
                    let mut sum = values.get(2).cloned().unwrap_or_default();
                    if addresses(values.first()).chain(addresses(values.get(1))).next().is_some() {
                        sum.insert(Origin::Number);
                    }
                    sum
                }
                // `cvta.global` makes a variable's address generic, `cvta.to.global` its space's.
                "cvta" => {
                    let generic = !statement.op.starts_with("cvta.to.");
                    let retyped = |origin| match origin {
                        Origin::Variable(name, _) => Origin::Variable(name, generic),
                        other => other,
                    };
                    values.into_iter().flatten().map(retyped).collect()
                }
                // An address made a float is a number, and so is a variable's cut to fewer bits than
                // it has (a shared one fits in 32).
                "cvt" if of_a_float(&statement.op) => Origins::from([Origin::Number]),
                "cvt" if !statement.op.starts_with("cvt.u64") && !statement.op.starts_with("cvt.s64") => values
                    .into_iter()
                    .flatten()
                    .map(|origin| match origin {
                        Origin::Variable(..) => Origin::Number,
                        other => other,
                    })
                    .collect(),
                "mov" | "cvt" => values.into_iter().flatten().collect(),
                "selp" => values.into_iter().take(2).flatten().collect(),
                _ => Origins::from([Origin::Number]),
            };
            for register in words(destination).filter(|w| w.starts_with('%')) {
                let known = origins.entry(register.to_owned()).or_default();
                let before = known.len();
                known.extend(from.iter().copied());
                grew |= known.len() > before;
            }
        }
        if !grew {
            return origins;
        }
    }
}

/// The names of a kernel's parameters, from its `body`'s header (none for a `.func`).
fn kernel_parameters(body: &str) -> BTreeSet<&str> {
    let Some(header) = body.split('{').next().filter(|h| h.contains(".entry")) else { return BTreeSet::new() };
    let parameters = header.lines().filter(|line| line.trim_start().starts_with(".param"));
    parameters
        .filter_map(|line| line.trim().trim_end_matches([',', ')']).split_whitespace().last())
        .map(|name| name.split('[').next().unwrap_or(name))
        .collect()
}

/// What a load may read (see [`origins`]).
fn loaded<'p>(
    load: &Statement,
    origins: &BTreeMap<String, Origins<'p>>,
    low_bits: &BTreeMap<String, LowBits>,
    names: &Names<'p>,
    host_set: &[&str],
    stored_locally: &Origins<'p>,
) -> Origins<'p> {
    let number = Origins::from([Origin::Number]);
    let address = load.address().unwrap_or_default();
    if !one_64_bit_word(&load.op) {
        return number;
    }
    match load.space() {
        // (A kernel's parameter: a function's, and a call's result, hold what calls pass.)
        "param" => Origins::from([Origin::Given]),
        "local" => stored_locally.iter().copied().chain([Origin::Number]).collect(),
        _ => {
            let from = origins_of(address, names, origins);
            let offset = low_bits::of_operand(address, low_bits, &|name| names.is_address(name));
            let mut read: Origins<'p> = variables_in(&from)
                .flat_map(|(name, _)| match host_set.contains(&name) {
                    true => Origins::from([Origin::Given]),
                    false => names.variables[name].read_at(offset),
                })
                .collect();
            // (A read at one of several tables is held inside one of them, at a word of either.)
            let tables: BTreeSet<&str> = variables_in(&from).map(|(name, _)| name).collect();
            if from.iter().any(|origin| !matches!(origin, Origin::Variable(..))) || tables.len() > 1 {
                read.insert(Origin::Number);
            }
            read
        }
    }
}

/// Where the value `operand` holds may come from: [`origins_of`], and a number where it is one,
/// or names a register no instruction writes (which holds 0).
fn held<'p>(operand: &str, names: &Names<'p>, origins: &BTreeMap<String, Origins<'p>>) -> Origins<'p> {
    let mut from = origins_of(operand, names, origins);
    if words(operand).all(|w| w.starts_with('%') && !origins.contains_key(w)) {
        from.insert(Origin::Number);
    }
    from
}

/// An address's origins, without the numbers that may be added to it.
fn addresses<'a, 'p>(origins: Option<&'a Origins<'p>>) -> impl Iterator<Item = Origin<'p>> + 'a {
    origins.into_iter().flatten().copied().filter(|origin| *origin != Origin::Number)
}

fn may_be_a_number(origins: Option<&Origins>) -> bool {
    origins.is_some_and(|o| o.contains(&Origin::Number))
}

/// `a + b`: an address plus a number is that address; two numbers, or two addresses, make a number.
fn added<'p>(a: Option<&Origins<'p>>, b: Option<&Origins<'p>>) -> Origins<'p> {
    let mut sum: Origins<'p> = addresses(a).chain(addresses(b)).collect();
    let both_addresses = addresses(a).next().is_some() && addresses(b).next().is_some();
    if may_be_a_number(a) && may_be_a_number(b) || both_addresses {
        sum.insert(Origin::Number);
    }
    sum
}

/// `a - b`: an address less a number is that address; less an address, a number.
fn less<'p>(a: Option<&Origins<'p>>, b: Option<&Origins<'p>>) -> Origins<'p> {
    let mut difference: Origins<'p> = addresses(a).collect();
    if may_be_a_number(a) || addresses(b).next().is_some() {
        difference.insert(Origin::Number);
    }
    difference
}

/// Where `operand`'s address may come from: the variables and other symbols (local, shared or
/// parameter space) it names, and the registers' `origins`.
pub(crate) fn origins_of<'p>(operand: &str, names: &Names<'p>, origins: &BTreeMap<String, Origins<'p>>) -> Origins<'p> {
    let mut from = Origins::new();
    for word in words(operand) {
        if let Some((name, _)) = names.variables.get_key_value(word) {
            from.insert(Origin::Variable(name, false));
        } else if let Some(known) = origins.get(word) {
            from.extend(known.iter().copied());
        } else if names.symbols.contains(word) {
            from.insert(Origin::Given);
        } else if !word.starts_with('%') {
            from.insert(Origin::Number);
        }
    }
    from
}

/// An access [`given`] refuses: why, its PTX line, and the body it is in (its place among the
/// module's, as `ptx_text::bodies` counts them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ungiven {
    pub why: Why,
    pub line: String,
    pub body: usize,
}

/// Why [`given`] refuses an access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    /// A global, constant or generic access at an address that may be a number.
    MadeFromANumber,
    /// An instruction with an address whose memory the checks do not follow (`wmma.store`, a
    /// matrix's rows a register's stride apart).
    Unfollowed,
}

impl fmt::Display for Ungiven {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let line = &self.line;
        match self.why {
            Why::MadeFromANumber => write!(
                f,
                "reads or writes at an address that may be made from a number, not from a pointer the kernel is \
                 given or a table's address (`{line}`): a pointer that is null, kept in a local array, left \
                 unwritten on some path, or passed to or returned from a function whose address the code takes, \
                 or a word of a table that holds numbers beside pointers where the index does not tell which it \
                 reads, reaches any address of the process; declare a table of pointers `constexpr` (NVRTC \
                 compiles a `__constant__` one read at a fixed index to null pointers), keep its numbers in a \
                 table of their own, and call functions by name"
            ),
            Why::Unfollowed => write!(
                f,
                "reads or writes memory with an instruction whose reach the grader does not follow (`{line}`; a \
                 tensor-core matrix load or store reaches rows a stride apart): read and write with plain loads and \
                 stores, and the tile with the course's `load` and `store`"
            ),
        }
    }
}

/// The kinds of instruction with an address whose memory the checks follow: an element or a
/// vector of them (`ld`, `st`, an atomic), a copy, a cache hint, and shared memory's matrix loads
/// and stores and barriers (their state space named, or their address a given one).
const FOLLOWED: [&str; 13] = [
    "ld",
    "ldu",
    "st",
    "atom",
    "red",
    "cp",
    "prefetch",
    "prefetchu",
    "discard",
    "applypriority",
    "ldmatrix",
    "stmatrix",
    "mbarrier",
];

/// Whether every global, constant and generic access of `ptx` is at an address made from a module
/// variable's or one the launch gives (the variables named in `host_set` hold one, set by the host),
/// and of a kind whose memory the checks follow.
pub fn given(ptx: &str, host_set: &[&str]) -> Result<(), Ungiven> {
    let names = declared(ptx);
    let module = Module::of(ptx);
    let all = module_origins(&module, &names, host_set);
    for (index, (body, origins)) in module.bodies.iter().zip(&all).enumerate() {
        let statements = &body.statements;
        let refused = |why, access: &Statement| {
            Err(Ungiven { why, line: format!("{} {};", access.op, access.operands.join(", ")), body: index })
        };
        // (A texture or surface, reached by a handle, is refused by `special_registers`.)
        let by_handle = |s: &Statement| special_registers::BY_HANDLE.contains(&s.kind());
        for access in statements.iter().filter(|s| s.address().is_some() && !by_handle(s)) {
            if !FOLLOWED.contains(&access.kind()) {
                return refused(Why::Unfollowed, access);
            }
            if !(matches!(access.space(), "" | "global" | "const") || access.op.contains(".global")) {
                continue;
            }
            for operand in access.operands.iter().filter(|o| o.starts_with('[')) {
                // (A tensor's coordinates follow its map's address: `[%rd5, {%r1, %r2}]`.)
                let address = operand.split([',', '{']).next().unwrap_or_default();
                let from = origins_of(address, &names, origins);
                if from.is_empty() || from.contains(&Origin::Number) {
                    return refused(Why::MadeFromANumber, access);
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
