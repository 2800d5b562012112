//! Generic loads and stores at a module variable's address kept inside that variable. An index far
//! past a table (`table[0x123456789]`) makes an address that no instruction shows, and a generic
//! one may land in the thread's local memory, where an earlier launch left its words (an access
//! that names its space stays in it: `ld.const` in the constant bank, `ld.global` in global
//! memory, where every buffer a launch is given is zeroed or compared after it). [`kept`] holds
//! every generic access whose
//! address is made from one `.global` or `.const` variable inside that variable, and refuses what
//! it cannot hold: an address that may be made from several variables,
//! or one handed on (stored in memory other than the function's local memory, returned, passed to
//! a function other than `printf`'s and `assert`'s), where no instruction shows where it is used.
//! An address stored in local memory (a string `printf` prints with `%s`) may come back from it:
//! a 64-bit word loaded from local memory may be any address the function stored there. One a
//! variable holds from the start (`constexpr Ref refs[2] = {{table}, {other}};` is declared
//! `.u64 refs[2] = {generic(table), generic(other)}`) comes back from a 64-bit load at its address.

use std::{
    collections::{BTreeMap, BTreeSet},
    fmt,
};

use crate::ptx_text::{
    Statement, Variable, access_bytes, address_parts, bodies, closes_a_body, declared_variable, handed_on, held_inside,
    instructions, statements, words,
};

/// Why an access at a module variable's address cannot be held inside it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unkept {
    /// An access whose address may be made from more than one variable, or from one of unknown
    /// size (the PTX line).
    Unbounded(String),
    /// A variable's address stored in memory other than local memory, returned, or passed to a
    /// function other than `vprintf` and `__assertfail`.
    HandedOn,
}

impl fmt::Display for Unkept {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Unkept::Unbounded(line) => write!(
                f,
                "reads or writes at an address that may lie in any of several tables (`{line}`): index each \
                 table by itself"
            ),
            Unkept::HandedOn => write!(
                f,
                "uses a table's address as a value (stores it in memory, returns it, or passes it to a function \
                 that does not inline): index the table where it is declared"
            ),
        }
    }
}

/// A module variable: its state space (`global` or `const`), size in bytes, if known, and the
/// addresses its initializer holds.
struct Declared<'p> {
    space: &'static str,
    bytes: Option<u64>,
    holds: Origins<'p>,
}

/// Where a register's address may come from: a variable's name, and whether the address is
/// generic (`cvta.global` or `cvta.const` made it) or the variable's own space's.
type Origins<'p> = BTreeSet<(&'p str, bool)>;

/// `ptx` with every generic load, store and atomic whose address is made from one module variable
/// held inside it, or why not.
pub fn kept(ptx: &str) -> Result<String, Unkept> {
    let variables = declared(ptx);
    let mut out = String::with_capacity(ptx.len() + ptx.len() / 4);
    let bodies = bodies(ptx);
    let after_the_last = &ptx[bodies.iter().map(|body| body.len()).sum::<usize>()..];
    for body in bodies {
        keep_in_body(body, &variables, &mut out)?;
    }
    out.push_str(after_the_last);
    Ok(out)
}

/// The module's `.global` and `.const` variables, by name (declared at its own level).
fn declared(ptx: &str) -> BTreeMap<&str, Declared<'_>> {
    let mut found = BTreeMap::new();
    let mut initializers = Vec::new();
    let mut depth = 0usize;
    for line in ptx.lines() {
        // (Its initializer, `= {0, 16, ...}`, is not part of its declaration.)
        let (declaration, initializer) = line.trim().trim_end_matches(';').split_once('=').unwrap_or((line, ""));
        if depth == 0
            && let Some((space, name, rest)) = declared_variable(declaration, &[".global", ".const"])
        {
            let bytes = Variable::parse(rest).filter(|v| v.name == name).map(|v| v.bytes);
            found.insert(name, Declared { space: space.trim_start_matches('.'), bytes, holds: Origins::new() });
            initializers.push((name, initializer));
        }
        closes_a_body(line, &mut depth);
    }
    for (name, initializer) in initializers {
        let holds = held_addresses(initializer, &found);
        found.entry(name).and_modify(|variable| variable.holds = holds);
    }
    found
}

/// The variables whose addresses an `initializer` holds: `generic(table)` a generic one, `table`
/// one of the variable's own space.
fn held_addresses<'p>(initializer: &'p str, variables: &BTreeMap<&'p str, Declared<'p>>) -> Origins<'p> {
    let mut words = words(initializer).peekable();
    let mut held = Origins::new();
    while let Some(word) = words.next() {
        let generic = word == "generic";
        let name = if generic { words.next().unwrap_or_default() } else { word };
        if let Some((name, _)) = variables.get_key_value(name) {
            held.insert((name, generic));
        }
    }
    held
}

/// [`kept`] for one function's `body` (where a register's name means one register), written to `out`.
fn keep_in_body<'p>(
    body: &'p str,
    variables: &BTreeMap<&'p str, Declared<'p>>,
    out: &mut String,
) -> Result<(), Unkept> {
    let statements = statements(body);
    let origins = origins(&statements, variables);
    let of = |operand: &str| origins_of(operand, variables, &origins);
    // Stored in local memory, it is followed back out of it ([`origins`]).
    let in_local_memory = |statement: &Statement| statement.space() == "local";
    if handed_on(&statements, &|value| !of(value).is_empty(), &in_local_memory, &READERS_OF_STRINGS) {
        return Err(Unkept::HandedOn);
    }
    for line in body.split_inclusive('\n') {
        let text = line.trim_end_matches(['\n', '\r']);
        let found = instructions(text);
        let generic_access = |s: &&Statement| s.space().is_empty() && s.address().is_some_and(|a| !of(a).is_empty());
        let access = found.iter().find(generic_access);
        let Some(access) = access else {
            out.push_str(line);
            continue;
        };
        let from = of(access.address().unwrap_or_default());
        let unbounded = || Unkept::Unbounded(text.trim().to_owned());
        let names: BTreeSet<&str> = from.iter().map(|(name, _)| *name).collect();
        let [name] = names.into_iter().collect::<Vec<_>>()[..] else { return Err(unbounded()) };
        let variable = &variables[name];
        let all_generic = from.iter().all(|(_, generic)| *generic);
        // A global variable's generic address is its global one: the base is of the kind the
        // address was made from. A constant's is not: only its generic address is one.
        let generic = match variable.space {
            "global" => all_generic,
            _ if all_generic => true,
            _ => return Err(unbounded()),
        };
        let (Some(bytes), Some(width)) = (variable.bytes, access_bytes(&access.op)) else { return Err(unbounded()) };
        if found.len() != 1 {
            return Err(unbounded());
        }
        out.push_str(&bounded(text, name, variable.space, generic, bytes, width).ok_or_else(unbounded)?);
        out.push('\n');
    }
    Ok(())
}

/// Where each register's address may come from, followed through every instruction until nothing
/// new is found (a loop's later instructions feed its earlier ones). What a load reads is data, but
/// for a 64-bit word of local memory, which may be any address the function stored there (a
/// variable's address is stored nowhere else: see [`handed_on`]), and one of a variable, which may
/// be any address its initializer holds.
fn origins<'p>(statements: &[Statement], variables: &BTreeMap<&'p str, Declared<'p>>) -> BTreeMap<String, Origins<'p>> {
    let mut origins: BTreeMap<String, Origins<'p>> = BTreeMap::new();
    let of = |operand: &str, origins: &BTreeMap<String, Origins<'p>>| origins_of(operand, variables, origins);
    let mut stored_locally = Origins::new();
    loop {
        let mut grew = false;
        for statement in statements.iter().filter(|s| s.writes_memory() && s.space() == "local") {
            let before = stored_locally.len();
            for value in statement.stored_values() {
                stored_locally.extend(of(value, &origins));
            }
            grew |= stored_locally.len() > before;
        }
        for statement in statements.iter().filter(|s| !s.writes_memory()) {
            let Some((destination, sources)) = statement.operands.split_first() else { continue };
            let mut from = Origins::new();
            for source in sources.iter().filter(|s| !s.starts_with('[')) {
                from.extend(of(source, &origins));
            }
            let an_address_word = access_bytes(&statement.op) == Some(8) && !statement.op.contains(".v");
            if statement.kind() == "ld" && an_address_word {
                if statement.space() == "local" {
                    from.extend(stored_locally.iter().copied());
                }
                for (name, _) in statement.address().map(|a| of(a, &origins)).unwrap_or_default() {
                    from.extend(variables[name].holds.iter().copied());
                }
            }
            if from.is_empty() {
                continue;
            }
            let generic = if statement.op.starts_with("cvta.to.") {
                Some(false)
            } else {
                statement.op.starts_with("cvta.").then_some(true)
            };
            let from: Origins<'p> = from.into_iter().map(|(name, was)| (name, generic.unwrap_or(was))).collect();
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

/// Where `operand`'s address may come from: the variables it names, and the registers' `origins`.
fn origins_of<'p>(
    operand: &str,
    variables: &BTreeMap<&'p str, Declared<'p>>,
    origins: &BTreeMap<String, Origins<'p>>,
) -> Origins<'p> {
    let mut from = Origins::new();
    for word in words(operand) {
        if let Some((name, _)) = variables.get_key_value(word) {
            from.insert((name, false));
        } else if let Some(known) = origins.get(word) {
            from.extend(known.iter().copied());
        }
    }
    from
}

/// The functions a variable's address may be passed to: `printf`'s, whose format string is one,
/// and `assert`'s, given its message, file and function names. They read strings, and keep nothing.
const READERS_OF_STRINGS: [&str; 2] = ["vprintf", "__assertfail"];

/// `line`, one access `width` bytes wide at an address made from variable `name` of `space` and
/// `bytes` (a `generic` address, or its space's), with the address held inside the variable.
fn bounded(line: &str, name: &str, space: &str, generic: bool, bytes: u64, width: u64) -> Option<String> {
    let last = bytes.checked_sub(width)?;
    let (_, base, offset, after) = address_parts(line)?;
    if after.contains('[') {
        return None;
    }
    // Left as it is where the address is the variable's own plus a constant that fits.
    if base == name && offset.parse::<u64>().is_ok_and(|offset| offset <= last) {
        return Some(line.to_owned());
    }
    held_inside(line, name, "%bcm_base", generic.then_some(space), last)
}

#[cfg(test)]
mod tests;
