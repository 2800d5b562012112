//! Loads and stores at a module variable's address kept inside that variable. An index far past a
//! table (`table[0x123456789]`) makes an address that no instruction shows: a generic one may land
//! in the thread's local memory, where an earlier launch left its words, and one of a space any
//! memory of it (`ld.global` the grader's own variables and buffers). [`kept`] holds every generic
//! access, and every load that names global or constant memory, whose address is made from one
//! `.global` or `.const` variable inside that variable, a read at one of several variables inside
//! one of them, and refuses what it cannot hold: a write at an address that may be made from
//! several variables, an instruction that reaches past its address (`wmma.load`) or holds two
//! (`cp.async` from a table), an address that may be a variable's or one the launch gives, or an
//! address handed on (stored in memory other than the function's local memory, returned from or
//! passed to a function [`crate::calls`] does not follow, but for `printf`'s and `assert`'s), where
//! no instruction shows where it is used. (A store at a variable's address is refused by
//! [`crate::written_globals`].) A variable's address stored in local memory, `printf`'s
//! arguments' buffer, is held inside the variable too: `%s` reads from where it points.
//! An address stored in local memory (a string `printf` prints with `%s`) may come back from it:
//! a 64-bit word loaded from local memory may be any address the function stored there. One a
//! variable holds from the start (`constexpr Ref refs[2] = {{table}, {other}};` is declared
//! `.u64 refs[2] = {generic(table), generic(other)}`) comes back from a 64-bit load at its address,
//! which is held inside that table in whatever space it names: past its end lies another
//! variable's word, a number ([`crate::address_origins`]).

use std::{
    collections::{BTreeMap, BTreeSet},
    fmt,
};

use crate::{
    address_origins::{Names, Origin, Origins, declared, module_origins, origins_of, variables_in},
    calls::{Body, Module},
    low_bits::{self, LowBits},
    ptx_text::{
        Every, Made, Statement, Table, access_bytes, address_parts, bodies, handed_on, held_in_one, held_inside,
        instructions, one_64_bit_word, statements, values_held_in_one, words,
    },
};

/// Why an access at a module variable's address cannot be held inside it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unkept {
    /// An access whose address may be made from more than one variable (a write), from one of
    /// unknown size, or one that reaches past its address: its PTX line, and the body it is in
    /// (its place among the module's, as `ptx_text::bodies` counts them).
    Unbounded { line: String, body: usize },
    /// An access whose address may be a variable's or one the launch gives (a pointer the kernel
    /// is given, its shared memory): its PTX line, and the body it is in.
    Mixed { line: String, body: usize },
    /// A variable's address stored for `printf` where the variable holds no byte known to be 0:
    /// `%s` would read past its end. Its PTX line, and the body it is in.
    Unterminated { line: String, body: usize },
    /// A variable's address stored in memory other than local memory, or returned from or passed to
    /// a function not followed into (but `vprintf` and `__assertfail`, which read strings).
    HandedOn,
}

impl fmt::Display for Unkept {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Unkept::Unbounded { line, .. } => write!(
                f,
                "reads or writes at a table's address where no bound holds it (`{line}`): a write at an address \
                 that may lie in any of several tables, or an instruction that reaches past its address; index \
                 each table by itself"
            ),
            Unkept::Mixed { line, .. } => write!(
                f,
                "reads or writes at an address that may lie in a table or in memory the kernel is given (`{line}`): \
                 a pointer that may point at either cannot be kept inside the table; keep them apart"
            ),
            Unkept::Unterminated { line, .. } => write!(
                f,
                "stores a table's address for `printf` where the table holds no byte known to be 0 (`{line}`): `%s` \
                 reads a string up to its 0, which would lie past the table; end a table printed with `%s` with \
                 a 0, or print its words by number"
            ),
            Unkept::HandedOn => write!(
                f,
                "uses a table's address as a value (stores it in memory, or passes it to or returns it from a \
                 function the grader does not follow, one whose address the code takes): index the table where \
                 it is declared"
            ),
        }
    }
}

/// `ptx` with every generic load, store and atomic whose address is made from one module variable
/// held inside it, or why not. `compiled` is the code `ptx` was made from, NVRTC's, whose
/// registers' [`low_bits`] [`crate::address_origins::given`] read (the grader's writes of 0 where
/// a function starts, in `ptx`, are no value the code gave a register).
pub fn kept(ptx: &str, compiled: &str) -> Result<String, Unkept> {
    let names = declared(ptx);
    let is_address = |name: &str| names.is_address(name);
    let low_bits: Vec<_> =
        bodies(compiled).iter().map(|body| low_bits::of_registers(&statements(body), &is_address)).collect();
    let mut out = String::with_capacity(ptx.len() + ptx.len() / 4);
    let module = Module::of(ptx);
    let origins = module_origins(&module, &names, &[]);
    let after_the_last = &ptx[module.bodies.iter().map(|body| body.text.len()).sum::<usize>()..];
    for (index, (body, origins)) in module.bodies.iter().zip(&origins).enumerate() {
        keep_in_body(body, index, &names, origins, &module, low_bits.get(index), &mut out)?;
    }
    out.push_str(after_the_last);
    Ok(out)
}

/// [`kept`] for one function's `body` of `module` (where a register's name means one register),
/// with its registers' `origins`, written to `out`.
fn keep_in_body<'p>(
    body: &Body<'p>,
    index: usize,
    names: &Names<'p>,
    origins: &BTreeMap<String, Origins<'p>>,
    module: &Module,
    low_bits: Option<&BTreeMap<String, LowBits>>,
    out: &mut String,
) -> Result<(), Unkept> {
    let statements = &body.statements;
    let is_address = |name: &str| names.is_address(name);
    // (Only a variable's address is held inside it: [`crate::address_origins::given`] refuses a number's.)
    let of = |operand: &str| variables_in(&origins_of(operand, names, origins)).collect::<BTreeSet<_>>();
    let variables = &names.variables;
    // A 64-bit word of a table of addresses is one of them only inside the table
    // ([`crate::address_origins`] follows it so), whatever space the load names.
    let holds_addresses = |(name, _): &(&str, bool)| variables_in(&variables[name].holds).next().is_some();
    let address_word = |s: &Statement| {
        s.kind() == "ld"
            && one_64_bit_word(&s.op)
            && matches!(s.space(), "global" | "const")
            && s.address().is_some_and(|a| of(a).iter().any(holds_addresses))
    };
    // Stored in local memory, it is followed back out of it, as it is into a function that does not
    // inline and back out of one ([`crate::address_origins`]).
    let in_local_memory = |statement: &Statement| statement.space() == "local";
    let followed =
        |callee: &str| READERS_OF_STRINGS.contains(&callee) && !module.defines(callee) || module.follows(callee);
    let returns_followed = body.name.is_some_and(|name| module.follows(name));
    if handed_on(statements, &|value| !of(value).is_empty(), &in_local_memory, &followed, returns_followed) {
        return Err(Unkept::HandedOn);
    }
    for line in body.text.split_inclusive('\n') {
        let text = line.trim_end_matches(['\n', '\r']);
        let found = instructions(text);
        let unbounded = || Unkept::Unbounded { line: text.trim().to_owned(), body: index };
        // A table's address stored in local memory (`printf`'s arguments' buffer) is held inside
        // the table, at or before its last 0 byte: `printf("%s")` reads from where it points up
        // to a 0.
        let stores_a_table = |s: &&Statement| {
            s.kind() == "st" && s.space() == "local" && s.stored_values().any(|value| !of(value).is_empty())
        };
        if let Some(store) = found.iter().find(stores_a_table) {
            // (The store may be one [`crate::local_memory`] keeps inside its array, in a block.)
            if found.iter().filter(|s| s.writes_memory()).count() != 1 {
                return Err(unbounded());
            }
            let mut values = Vec::new();
            for register in store.stored_values().flat_map(words) {
                if origins_of(register, names, origins).contains(&Origin::Given) && !of(register).is_empty() {
                    return Err(Unkept::Mixed { line: text.trim().to_owned(), body: index });
                }
                let tables: Option<Vec<Table>> = of(register)
                    .into_iter()
                    .map(|(name, generic)| {
                        let variable = &variables[name];
                        let made = if generic { Made::Generic(variable.space) } else { Made::Own };
                        Some((name, variable.last_zero?, made))
                    })
                    .collect();
                let unterminated = || Unkept::Unterminated { line: text.trim().to_owned(), body: index };
                values.push((register, tables.ok_or_else(unterminated)?));
            }
            out.push_str(&values_held_in_one(text, &values).ok_or_else(unbounded)?);
            out.push('\n');
            continue;
        }
        // A generic access, and a read of global or constant memory: an index far past a table
        // reaches any memory of the space, the grader's own variables and buffers too.
        let held_access = |s: &&Statement| {
            let read_in_a_space = matches!(s.space(), "global" | "const") && matches!(s.kind(), "ld" | "ldu");
            (s.space().is_empty() || read_in_a_space) && s.address().is_some_and(|a| !of(a).is_empty())
        };
        // Any other instruction at a table's address is refused: a copy (`cp.async`, which holds
        // two addresses), a cache hint far past it.
        let other = |s: &Statement| {
            !matches!(s.kind(), "ld" | "ldu" | "st" | "atom" | "red")
                && s.operands.iter().any(|o| o.starts_with('[') && !of(o).is_empty())
        };
        if found.iter().any(other) {
            return Err(Unkept::Unbounded { line: text.trim().to_owned(), body: index });
        }
        let access = found.iter().find(|s| held_access(s) || address_word(s));
        let Some(access) = access else {
            out.push_str(line);
            continue;
        };
        let from = of(access.address().unwrap_or_default());
        // (Held inside a table, an address the launch gives would be wrong.)
        if origins_of(access.address().unwrap_or_default(), names, origins).contains(&Origin::Given) {
            return Err(Unkept::Mixed { line: text.trim().to_owned(), body: index });
        }
        let named: BTreeSet<&str> = from.iter().map(|(name, _)| *name).collect();
        let all_generic = from.iter().all(|(_, generic)| *generic);
        // How the access's address is made from a variable's, by its space: a global variable's
        // generic address is its global one, so the base is of the kind the address was made
        // from. A constant's is not: its generic address, or that made global (`ld.global` of
        // what `cvta.to.global` makes of it; held there, an address made otherwise stays inside).
        let made = |space| match (access.space(), space) {
            ("" | "global", "global") if all_generic => Some(Made::Generic(space)),
            ("" | "global", "global") => Some(Made::Own),
            ("", _) if all_generic => Some(Made::Generic(space)),
            ("const", "const") if from.iter().all(|(_, generic)| !generic) => Some(Made::Own),
            ("global", "const") if from.iter().all(|(_, generic)| !generic) => Some(Made::Global(space)),
            // (`__ldg` of a constant: `ld.global.nc` at its generic address, which is its global one.)
            ("global", "const") if all_generic => Some(Made::Generic(space)),
            _ => None,
        };
        let width = access_bytes(&access.op).ok_or_else(unbounded)?;
        if found.len() != 1 {
            return Err(unbounded());
        }
        let [name] = named.iter().copied().collect::<Vec<_>>()[..] else {
            // A read at one of several tables (`refs[row & 1].at[i]` of `{{a}, {b}}`) is held
            // inside one of them, whose words it reads as numbers ([`crate::address_origins`]).
            let held: Option<Vec<Table>> = named
                .iter()
                .map(|name| {
                    let variable = &variables[name];
                    Some((*name, variable.bytes?.checked_sub(width)?, made(variable.space)?))
                })
                .collect();
            let (Some(held), "ld") = (held, access.kind()) else { return Err(unbounded()) };
            out.push_str(&held_in_one(text, &held).ok_or_else(unbounded)?);
            out.push('\n');
            continue;
        };
        let variable = &variables[name];
        let (Some(made), Some(bytes)) = (made(variable.space), variable.bytes) else { return Err(unbounded()) };
        // A 64-bit read of a table of addresses and numbers reads the words its address's low bits
        // allow, where they tell words apart ([`crate::address_origins`] takes it to read those).
        let word_read = access.kind() == "ld" && one_64_bit_word(&access.op);
        let words_read = match (word_read && variable.holds_addresses_and_numbers(), low_bits) {
            (false, _) => None,
            // (Without NVRTC's bits of this body, it cannot be held to the words `given` took it to read.)
            (true, None) => return Err(unbounded()),
            (true, Some(bits)) => low_bits::of_operand(access.address().unwrap_or_default(), bits, &is_address)
                .and_then(|offset| variable.words_read(offset)),
        };
        let (last, places) = match words_read.as_deref() {
            // The words read are every few from the first: the ones its low bits and remainder allow.
            Some([first, rest @ ..]) => {
                let (first, last) = (*first as u64 * 8, rest.last().map_or(*first, |last| *last) as u64 * 8);
                let step = rest.first().map_or(last + 8, |second| *second as u64 * 8 - first);
                (last, Some(Every { first, step }))
            }
            _ => (bytes.checked_sub(width).ok_or_else(unbounded)?, None),
        };
        out.push_str(&bounded(text, name, made, last, places).ok_or_else(unbounded)?);
        out.push('\n');
    }
    Ok(())
}

/// The functions a variable's address may be passed to: `printf`'s, whose format string is one,
/// and `assert`'s, given its message, file and function names. They read strings, and keep nothing.
/// (CUDA's, declared: a function of the module's own may have such a name, `extern "C"`.)
const READERS_OF_STRINGS: [&str; 2] = ["vprintf", "__assertfail"];

/// `line`, one access at an address `made` from variable `name`'s, with the address held at most
/// `last` bytes past the variable's, at one of `places` where given.
fn bounded(line: &str, name: &str, made: Made, last: u64, places: Option<Every>) -> Option<String> {
    let (_, base, offset, after) = address_parts(line)?;
    if after.contains('[') {
        return None;
    }
    // Left as it is where the address is the variable's own plus a constant that fits.
    if base == name && offset.parse::<u64>().is_ok_and(|offset| offset <= last) {
        return Some(line.to_owned());
    }
    held_inside(line, name, "%bcm_base", made, last, places)
}

#[cfg(test)]
mod tests;
