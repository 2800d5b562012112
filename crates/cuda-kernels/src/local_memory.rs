//! Local memory (the arrays a function keeps in memory rather than in registers, its "depot" in
//! the PTX) kept to one launch. Local memory is not cleared between launches: a local array read
//! before it is written, or past its end, returns what an earlier launch left there, so a kernel
//! could count its launches and act otherwise in the one a profiler watches. [`confined`] makes
//! each function's depot zero when the function starts and keeps every local load and store
//! inside it; what it cannot keep there (a local array's address used as a pointer the compiler
//! could not follow, a local variable of inline assembly's own) is refused.

use std::{
    collections::{BTreeMap, BTreeSet},
    fmt,
};

use crate::calls;
use crate::ptx_text::{
    Made, Statement, Variable, access_bytes, address_parts, bodies, closes_a_body, handed_on, held_inside,
    instructions, statements, widest_store, words, zero_stores,
};

/// Why a module's local memory cannot be kept to one launch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unconfined {
    /// A `.local` variable other than a function's depot (declared by inline assembly).
    Declared(String),
    /// A local load or store whose function has no depot, or whose address is not one this
    /// module knows how to keep inside it (the PTX line).
    Unbounded(String),
    /// A local array's generic address (`cvta.local`) used otherwise than as `printf`'s buffer:
    /// stored in memory, passed to another call, or the address of a load or store that is not
    /// `.local` (a generic one, or one of another space).
    Pointer,
    /// Memory allocated on the stack at run time (`alloca`).
    Allocated,
}

impl fmt::Display for Unconfined {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Unconfined::Declared(name) => write!(f, "declares local memory of its own (`{name}`)"),
            Unconfined::Unbounded(line) => write!(
                f,
                "reaches local memory outside a function's own local arrays (`{line}`), as a function that \
                 does not inline does when it indexes a struct passed to it by value: pass it by its \
                 fields, or let the function inline"
            ),
            Unconfined::Pointer => write!(
                f,
                "uses a local array's address as a value (stores it, prints it with `%p`, reads or writes \
                 through it where the compiler could not follow or as global memory, as `__ldcs` and `__stcs` \
                 do, or passes it to a function that does not \
                 inline: a local array, a struct by value or by reference, a lambda capturing by reference, \
                 `this` of a local object): index the array where it is declared, or let the function inline"
            ),
            Unconfined::Allocated => write!(f, "allocates memory on the stack as it runs (`alloca`)"),
        }
    }
}

/// `ptx` with each function's depot zeroed where the function starts and every `ld.local` and
/// `st.local` held inside the depot of its function (an access past the array's end, undefined
/// in C++, stays in the array), or why that does not keep its local memory to one launch.
pub fn confined(ptx: &str) -> Result<String, Unconfined> {
    reached_through_pointers(ptx)?;
    let mut out = String::with_capacity(ptx.len() * 2);
    let bodies = bodies(ptx);
    let after_the_last = &ptx[bodies.iter().map(|body| body.len()).sum::<usize>()..];
    for text in bodies.into_iter().chain([after_the_last]) {
        confine_body(text, &mut out)?;
    }
    Ok(out)
}

/// [`confined`] for one function's `body`, written to `out`. An access whose address the
/// function's straight start fixed inside the depot ([`DepotAddresses`]) is kept as it is: its
/// bounds would only cost time (a local table's constant stores ran 11 times slower bounded).
fn confine_body(body: &str, out: &mut String) -> Result<(), Unconfined> {
    let mut depot: Option<Depot> = None;
    let mut addresses = DepotAddresses::new(body);
    let mut depth = 0usize;
    for line in body.split_inclusive('\n') {
        let text = line.trim_end_matches(['\n', '\r']);
        let statement = Statement::parse(text);
        let found = instructions(text);
        // (A vector's braces are balanced on its line; a block's start or end begins one.)
        let own_level = depth == 1 && !text.trim_start().starts_with(['{', '}']) && text.matches(';').count() <= 1;
        addresses.straight &= !ends_straight_code(text, &found);
        if let Some(declared) = local_declaration(text) {
            let found = Depot::parse(declared).ok_or_else(|| Unconfined::Declared(declared.to_owned()))?;
            out.push_str(line);
            out.push_str(&found.zeroing());
            depot = Some(found);
        } else if accesses_local_memory(text, statement.as_ref()) {
            let width = statement.as_ref().and_then(|s| access_bytes(&s.op));
            let bounded = depot.as_ref().zip(width).and_then(|(depot, width)| {
                let inside = own_level && addresses.inside(depot, text, width);
                if inside { Some(text.to_owned()) } else { depot.bounded(text, width) }
            });
            out.push_str(&bounded.ok_or_else(|| Unconfined::Unbounded(text.trim().to_owned()))?);
            out.push('\n');
        } else if statement.as_ref().is_some_and(|s| ["alloca", "stacksave"].contains(&s.kind())) {
            return Err(Unconfined::Allocated);
        } else {
            out.push_str(line);
        }
        if let Some(depot) = &depot {
            addresses.follow(depot, &found, text.trim_start().starts_with('@'), own_level);
        }
        closes_a_body(text, &mut depth);
    }
    Ok(())
}

/// Registers that hold the depot's address plus an offset known to lie in a range wherever they
/// are read, and the numbers in a known range such offsets are made of: each set only in the
/// straight code a function starts with (before its first label or branch, so every launch runs
/// all of it, in order), at the body's own level (not in a block that could declare a register of
/// the same name), by a `mov` of the depot's address, an `add` of such values, or an `and` with a
/// constant (`and.b64 %rd7, %rd6, 124` is 0 to 124, whatever `%rd6` holds), and never set after
/// that code.
struct DepotAddresses {
    /// Registers some instruction sets after the straight start: what they hold is not followed.
    set_later: BTreeSet<String>,
    /// Each followed register's value, as the instructions so far left it.
    values: BTreeMap<String, Value>,
    /// Whether the lines so far are all of the straight start.
    straight: bool,
}

/// What a followed register holds: the depot's address plus an offset, or a number, each between
/// two bounds (inclusive).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Value {
    Address(i64, i64),
    Number(i64, i64),
}

impl Value {
    /// `self + other`, if it is followed: an address plus a number, or two numbers.
    fn plus(self, other: Value) -> Option<Value> {
        let add = |(a, b): (i64, i64), (c, d): (i64, i64)| Some((a.checked_add(c)?, b.checked_add(d)?));
        match (self, other) {
            (Value::Address(a, b), Value::Number(c, d)) | (Value::Number(c, d), Value::Address(a, b)) => {
                add((a, b), (c, d)).map(|(low, high)| Value::Address(low, high))
            }
            (Value::Number(a, b), Value::Number(c, d)) => {
                add((a, b), (c, d)).map(|(low, high)| Value::Number(low, high))
            }
            (Value::Address(..), Value::Address(..)) => None,
        }
    }
}

impl DepotAddresses {
    fn new(body: &str) -> DepotAddresses {
        let mut set_later = BTreeSet::new();
        let mut straight = true;
        for line in body.lines() {
            let found = instructions(line);
            straight &= !ends_straight_code(line, &found);
            if !straight {
                set_later.extend(found.iter().flat_map(set_registers).map(str::to_owned));
            }
        }
        DepotAddresses { set_later, values: BTreeMap::new(), straight: true }
    }

    /// Follows what a line's `instructions` set (at the body's own level if `own_level`; a
    /// `guarded` one may not run, and what it sets is not followed).
    fn follow(&mut self, depot: &Depot, instructions: &[Statement], guarded: bool, own_level: bool) {
        for instruction in instructions {
            let op = instruction.op.as_str();
            let moved = ["mov.u64", "mov.b64", "mov.s64"].contains(&op);
            // (A vector's halves, `mov.b64 {%r2, %r3}, %rd1`, hold no address.)
            let followed = self.straight && own_level && !guarded;
            let value = match (followed, instruction.operands.as_slice()) {
                (_, [destination, ..]) if destination.starts_with('{') => None,
                (true, [_, source]) if moved && source == &depot.name => Some(Value::Address(0, 0)),
                (true, [_, source]) if moved => self.value(source),
                (true, [_, a, b]) if ["add.u64", "add.s64"].contains(&op) => {
                    self.value(a).zip(self.value(b)).and_then(|(a, b)| a.plus(b))
                }
                (true, [_, a, b]) if op == "and.b64" => {
                    let mask = |m: &str| decimal(m).filter(|m| *m >= 0);
                    mask(a).or_else(|| mask(b)).map(|mask| Value::Number(0, mask))
                }
                _ => None,
            };
            for register in set_registers(instruction) {
                match value.filter(|_| !self.set_later.contains(register)) {
                    Some(value) => self.values.insert(register.to_owned(), value),
                    None => self.values.remove(register),
                };
            }
        }
    }

    /// What `operand` holds, if it is followed: a register's value, or a constant.
    fn value(&self, operand: &str) -> Option<Value> {
        match decimal(operand) {
            Some(constant) => Some(Value::Number(constant, constant)),
            None => self.values.get(operand).copied(),
        }
    }

    /// Whether `line`, a local access `width` bytes wide, stays inside `depot` wherever it runs:
    /// its address is a followed address, or the depot's name, plus a constant.
    fn inside(&self, depot: &Depot, line: &str, width: u64) -> bool {
        let Some((_, base, added, _)) = address_parts(line) else { return false };
        let added = decimal(added);
        let base = if base == depot.name { Some(Value::Address(0, 0)) } else { self.value(base) };
        let start = base.zip(added.map(|a| Value::Number(a, a))).and_then(|(base, added)| base.plus(added));
        let last = depot.bytes.checked_sub(width).and_then(|last| i64::try_from(last).ok());
        let fits = match (start, last) {
            (Some(Value::Address(low, high)), Some(last)) => low >= 0 && high <= last,
            _ => false,
        };
        fits && line.matches(';').count() == 1
    }
}

/// `text` as a decimal integer constant of PTX: `0`, `24`, `-8` (not `010`, which PTX reads as
/// octal, nor hexadecimal or binary).
fn decimal(text: &str) -> Option<i64> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let plain = digits == "0" || digits.starts_with(|c: char| ('1'..='9').contains(&c));
    plain.then(|| text.parse().ok()).flatten()
}

/// Whether `line`, holding `instructions`, holds a label (where a branch may arrive) or a
/// branch, a return or an exit: where the code a function starts with stops running straight.
fn ends_straight_code(line: &str, instructions: &[Statement]) -> bool {
    let code = line.split("//").next().unwrap_or_default();
    code.replace("::", "").contains(':')
        || instructions.iter().any(|s| ["bra", "brx", "ret", "exit"].contains(&s.kind()))
}

/// The registers `instruction` sets: the words of its first operand, but for a store, a
/// reduction or a call, which set none (a call's results are loaded from their parameters).
fn set_registers(instruction: &Statement) -> impl Iterator<Item = &str> {
    let sets = !["st", "red", "call"].contains(&instruction.kind());
    instruction
        .operands
        .first()
        .filter(|_| sets)
        .into_iter()
        .flat_map(|first| words(first))
        .filter(|w| w.starts_with('%'))
}

/// The most stores [`Depot::zeroing`] writes out one by one.
const UNROLLED_STORES: u64 = 64;

/// A function's depot: `.local .align 16 .b8 __local_depot0[64];`.
struct Depot {
    name: String,
    align: u64,
    bytes: u64,
}

impl Depot {
    fn parse(declaration: &str) -> Option<Depot> {
        let variable = Variable::parse(declaration.strip_prefix(".local")?)?;
        let numbered = variable.name.strip_prefix("__local_depot")?;
        (variable.kind == ".b8" && !numbered.is_empty() && numbered.bytes().all(|b| b.is_ascii_digit()))
            .then_some(())?;
        Some(Depot { align: variable.align?, bytes: variable.bytes, name: variable.name })
    }

    /// Stores of zeros over the depot, as wide as its alignment and size allow: each at its own
    /// offset from the depot, up to [`UNROLLED_STORES`] of them, which lets the assembler keep a
    /// small array in registers as it does NVRTC's (behind a loop's address it cannot, and a
    /// local table made a correct transpose 11 times slower); a loop over a larger depot.
    fn zeroing(&self) -> String {
        let width = widest_store(&[16, 8, 4, 2, 1], self.align, self.bytes);
        let (register, store) = match width {
            16 => (".b32", "st.local.v4.b32 \t[ADDRESS], {%bcm_zero, %bcm_zero, %bcm_zero, %bcm_zero};"),
            8 => (".b64", "st.local.b64 \t[ADDRESS], %bcm_zero;"),
            4 => (".b32", "st.local.b32 \t[ADDRESS], %bcm_zero;"),
            2 => (".b16", "st.local.b16 \t[ADDRESS], %bcm_zero;"),
            _ => (".b16", "st.local.b8 \t[ADDRESS], %bcm_zero;"),
        };
        let (name, bytes) = (&self.name, self.bytes);
        if bytes / width <= UNROLLED_STORES {
            let stores: String = (0..bytes / width)
                .map(|i| format!("\t{}\n", store.replace("ADDRESS", &format!("{name}+{}", i * width))))
                .collect();
            return zero_stores(register, &stores);
        }
        let store = store.replace("ADDRESS", "%bcm_at");
        let label = format!("$bcm_zero_{}", name.trim_start_matches("__local_depot"));
        format!(
            "\t{{\n\t.reg .b64 \t%bcm_at;\n\t.reg .b64 \t%bcm_end;\n\t.reg .pred \t%bcm_more;\n\t.reg {register} \t%bcm_zero;\n\
             \tmov.u64 \t%bcm_at, {name};\n\tadd.u64 \t%bcm_end, %bcm_at, {bytes};\n\tmov{register} \t%bcm_zero, 0;\n\
             {label}:\n\t{store}\n\tadd.u64 \t%bcm_at, %bcm_at, {width};\n\tsetp.lt.u64 \t%bcm_more, %bcm_at, %bcm_end;\n\
             \t@%bcm_more bra \t{label};\n\t}}\n"
        )
    }

    /// `line`, a local load or store, with its address held between the depot's first byte and
    /// the last place an access of its width fits (its offset into the depot, as an unsigned
    /// number, at most that place's: an address before the depot lands there too); `None` if its
    /// address is not a 64-bit register or the depot, plus a constant, or the access is wider
    /// than the depot.
    fn bounded(&self, line: &str, width: u64) -> Option<String> {
        let (_, base, _, _) = address_parts(line)?;
        let is_register = base.starts_with("%rd") || base == "%SPL";
        if !is_register && base != self.name || line.matches(';').count() != 1 {
            return None;
        }
        held_inside(line, &self.name, "%bcm_depot", Made::Own, self.bytes.checked_sub(width)?, None)
    }
}

/// The declaration of a `.local` variable on `line`, if it holds one.
fn local_declaration(line: &str) -> Option<&str> {
    let statement = line.trim().trim_start_matches('{').trim_start();
    statement.starts_with(".local").then_some(statement)
}

/// Whether `line`, parsed as `statement`, loads or stores local memory by name: `ld.local`,
/// `st.volatile.local` (or holds several statements, one naming `.local`).
fn accesses_local_memory(line: &str, statement: Option<&Statement>) -> bool {
    statement.is_some_and(|s| ["ld", "st"].contains(&s.kind()) && s.space() == "local")
        || line.contains(".local") && line.matches(';').count() > 1
}

/// Checks that a generic address of local memory (what `cvta.local` makes, and whatever is
/// computed from it) is used only as `printf`'s arguments' buffer, passed to `vprintf`: stored in
/// memory it could be read back where no instruction shows it, and through it a load or store
/// reaches any of the thread's local memory. (CUDA's `vprintf`, declared: a function of the
/// module's own may have that name, `extern "C"`.)
fn reached_through_pointers(ptx: &str) -> Result<(), Unconfined> {
    let defined = calls::defined(ptx);
    let cudas_vprintf = |callee: &str| callee == "vprintf" && !defined.contains(callee);
    bodies(ptx).into_iter().try_for_each(|body| body_reached_through_pointers(body, &cudas_vprintf))
}

/// [`reached_through_pointers`] in one function's body, where a register's name means one register.
fn body_reached_through_pointers(body: &str, cudas_vprintf: &dyn Fn(&str) -> bool) -> Result<(), Unconfined> {
    let statements = statements(body);
    let mut pointers: BTreeSet<&str> = BTreeSet::new();
    // Until nothing new is found: a loop's later instructions feed its earlier ones.
    loop {
        let before = pointers.len();
        for statement in statements.iter().filter(|s| !s.writes_memory()) {
            let Some((destination, sources)) = statement.operands.split_first() else { continue };
            // A load's address is not its value: what it reads is data (a pointer is never stored).
            let mut values = sources.iter().filter(|s| !s.starts_with('['));
            if statement.op.starts_with("cvta.local") || values.any(|s| words(s).any(|w| pointers.contains(w))) {
                pointers.extend(words(destination).filter(|w| w.starts_with('%')));
            }
        }
        if pointers.len() == before {
            break;
        }
    }
    let holds_a_pointer = |operand: &str| words(operand).any(|w| pointers.contains(w));
    // Through any space but local: a generic access, or one that names another space (a
    // `.global` access at a local array's generic address, as `__ldcs(&local[i])` makes).
    let through = statements.iter().any(|statement| {
        let mut addresses = statement.operands.iter().filter(|operand| operand.starts_with('['));
        statement.space() != "local" && addresses.any(|address| holds_a_pointer(address))
    });
    if through || handed_on(&statements, &holds_a_pointer, &|_| false, cudas_vprintf, false) {
        return Err(Unconfined::Pointer);
    }
    Ok(())
}

#[cfg(test)]
mod tests;
