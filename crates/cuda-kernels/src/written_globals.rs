//! Which of a module's own `.global` variables its code writes, read from its PTX. Such a
//! variable lasts from one launch to the next, whatever C++ spelled it (a `__device__` or
//! `static` variable, a `constexpr` object written through a cast, a string literal): the PTX is
//! where every spelling ends up.
//!
//! The address of a variable is followed through the instructions that compute with it (`mov`,
//! `cvta`, `add`, ...), not through loads: a value read from a table is data, and storing it is
//! not writing the table (but a load from a variable that starts out holding another's address
//! gives that address). A store, atomic or reduction to global or generic memory at such an
//! address writes the variable; storing the address itself anywhere (to memory, or as a call's
//! argument) lets it escape where it cannot be followed, and counts as a write too.

use std::collections::{BTreeMap, BTreeSet};

use crate::{
    address_origins::{Names, declared, variables_in},
    calls::{Body, Module, Passed, Passing},
    low_bits,
    ptx_text::{Statement, declared_variable, one_64_bit_word, words},
};

/// The names of the `.global` variables of `ptx` that its code writes or lets escape, but for
/// `exempt` (the grader's own), in the order they are first written.
pub fn written_globals(ptx: &str, exempt: &[&str]) -> Vec<String> {
    writes(ptx, exempt).into_iter().map(|(name, ..)| name).collect()
}

/// The first variable [`written_globals`] finds, the instruction of `ptx` that first writes it or
/// lets its address escape, and the body it is in (its place among the module's, as
/// `ptx_text::bodies` counts them).
pub fn first_write(ptx: &str, exempt: &[&str]) -> Option<(String, String, usize)> {
    writes(ptx, exempt).into_iter().next()
}

/// Each variable [`written_globals`] finds, with the first instruction that writes it and its body.
fn writes<'p>(ptx: &'p str, exempt: &[&str]) -> Vec<(String, String, usize)> {
    // (`.const` data, `__constant__` in C++, too: a store to an address made from its own,
    // `cvta.const` then `st.global`, lands in the device memory behind the constant bank, and its
    // address passed to a function, `p + (table - p)` there, could be written the same way.)
    let globals: BTreeSet<&str> = module_variables(ptx).into_iter().filter(|name| !exempt.contains(name)).collect();
    // Variables (`.global` or `.const`) that start out holding a variable's address
    // (`.u64 p = generic(table)+4`): what a load from them gives derives from that variable.
    let pointers: BTreeMap<&str, BTreeSet<&str>> = ptx
        .lines()
        .filter_map(|line| {
            let (declaration, initial) = line.trim().strip_suffix(';')?.split_once('=')?;
            let name = declared_name(declaration, &[".global", ".const"])?;
            let targets: BTreeSet<&str> = words(initial).filter(|w| globals.contains(w)).collect();
            (!targets.is_empty()).then_some((name, targets))
        })
        .collect();
    // A load reads an address only where [`crate::address_origins`] takes it to: a 64-bit word
    // of the variable that may hold one (of a table of pointers and numbers, one its address's
    // low bits allow); a number it reads is no address, and an access at it is refused there.
    let names = declared(ptx);
    let module = Module::of(ptx);
    let derived_in = |body: &Body, passed: &Passed<&'p str>| derived(body, &names, &globals, &pointers, passed);
    let all =
        module.followed(BTreeSet::new(), derived_in, |derived, value| from_global(value, &globals, &pointers, derived));
    let mut written: Vec<(String, String, usize)> = Vec::new();
    for (body, (function, derived)) in module.bodies.iter().zip(&all).enumerate() {
        let statements = &function.statements;
        // A function's result goes back to its callers where it is followed.
        let returns_followed = function.name.is_some_and(|name| module.follows(name));
        for (statement, passing) in statements.iter().zip(&function.passing) {
            let (op, operands) = (statement.op.as_str(), &statement.operands);
            let from = |operand: &str| from_global(operand, &globals, &pointers, derived);
            // (Passed to a function that is followed, or returned to its callers, it is followed there.)
            let followed = match passing {
                Some(Passing::Argument { callee: Some(callee), .. }) => module.follows(callee),
                Some(Passing::Returned(_)) => returns_followed,
                _ => false,
            };
            let found: BTreeSet<&str> = if let Some(at) = address_at(statement).filter(|_| writes_at(statement)) {
                let (address, values) = (&operands[at], operands.get(at + 1..).unwrap_or(&[]));
                // (The space of what it writes: a copy's first, `cp.async.bulk.global.shared::cta`.)
                let lasting = !matches!(statement.space(), "shared" | "local" | "param");
                let target = if lasting { from(address) } else { BTreeSet::new() };
                // Its address stored anywhere but local memory escapes where it cannot be followed;
                // but for a string the compiler made, passed to a function declared elsewhere
                // (`printf`'s format, which `vprintf` only reads; `assert`'s message, file and
                // function names) or followed. (The course's check of the source lets a string
                // literal be nothing but such an argument; a function's result is no argument.)
                let passed = matches!(passing, Some(Passing::Argument { callee: Some(callee), .. })
                    if !module.defines(callee) || module.follows(callee));
                let escaped =
                    values.iter().flat_map(|value| from(value)).filter(|name| !(passed && compilers_string(name)));
                // (Stored in local memory, it is followed back out of it.)
                let escaped = escaped.filter(|_| statement.space() != "local" && !followed);
                target.into_iter().chain(escaped).collect()
            } else if statement.kind() == "call" {
                operands.iter().skip(1).flat_map(|operand| from(operand)).collect()
            } else {
                BTreeSet::new()
            };
            for name in found {
                if !written.iter().any(|(seen, ..)| seen == name) {
                    written.push((name.to_owned(), format!("{op} {};", operands.join(", ")), body));
                }
            }
        }
    }
    written
}

/// Each register of a function's `body` that may hold an address derived from a `globals`
/// variable's (or from one a variable of `pointers` holds from the start), and the variables,
/// followed until nothing new is found: a loop's pointer is made after the store at it. An address
/// stored in local memory (`printf`'s arguments' buffer) may come back from a 64-bit load there,
/// as [`crate::address_origins`] follows it, and one a call `passed` from a function's parameter
/// or a call's result.
fn derived<'p>(
    body: &Body,
    names: &Names<'p>,
    globals: &BTreeSet<&'p str>,
    pointers: &BTreeMap<&'p str, BTreeSet<&'p str>>,
    passed: &Passed<&'p str>,
) -> BTreeMap<String, BTreeSet<&'p str>> {
    let is_address = |name: &str| names.is_address(name);
    let bits = low_bits::of_registers(&body.statements, &is_address);
    // A load reads an address only where [`crate::address_origins`] takes it to: a 64-bit word
    // of the variable that may hold one (of a table of pointers and numbers, one its address's
    // low bits allow); a number it reads is no address, and an access at it is refused there.
    let reads_an_address = |op: &str, address: &str, from: &str| {
        let offset = low_bits::of_operand(address, &bits, &is_address);
        one_64_bit_word(op)
            && names.variables.get(from).is_none_or(|v| variables_in(&v.read_at(offset)).next().is_some())
    };
    let mut derived: BTreeMap<String, BTreeSet<&'p str>> = BTreeMap::new();
    let mut stored_locally: BTreeSet<&str> = BTreeSet::new();
    loop {
        let mut grew = false;
        for (statement, passing) in body.statements.iter().zip(&body.passing) {
            let (op, operands) = (statement.op.as_str(), &statement.operands);
            let from = |operand: &str| from_global(operand, globals, pointers, &derived);
            if statement.kind() == "st" && statement.space() == "local" {
                let before = stored_locally.len();
                stored_locally.extend(operands.iter().skip(1).flat_map(|value| from(value)));
                grew |= stored_locally.len() > before;
            }
            // (Each register of a vector, `mov.b64 {%r1, %r2}, %rd5`.)
            let Some(destination) = operands.first().filter(|d| d.starts_with(['%', '{']) && !writes_at(statement))
            else {
                continue;
            };
            // A computed value derives from a variable's address if an operand does; a load's
            // value does not (it is data), but from a variable that holds another's address, and
            // a parameter's or a call's result from what calls pass.
            let origin: BTreeSet<&str> = match reads_only(op) {
                true if statement.kind() == "ld" && statement.space() == "param" => {
                    passed.read(body.name, passing.as_ref())
                }
                true if statement.kind() == "ld" && statement.space() == "local" && one_64_bit_word(op) => {
                    stored_locally.clone()
                }
                true => operands
                    .get(1)
                    .map(|address| {
                        let read = from(address);
                        read.into_iter()
                            .filter(|variable| reads_an_address(op, address, variable))
                            .flat_map(|variable| pointers.get(variable).into_iter().flatten().copied())
                            .collect()
                    })
                    .unwrap_or_default(),
                false => operands.iter().skip(1).flat_map(|operand| from(operand)).collect(),
            };
            for register in words(destination).filter(|word| word.starts_with('%')) {
                let known = derived.entry(register.to_owned()).or_default();
                let before = known.len();
                known.extend(origin.iter().copied());
                grew |= known.len() > before;
            }
        }
        if !grew {
            return derived;
        }
    }
}

/// The variables `operand` names, or holds an address derived from: of `globals`, of the
/// `pointers` (variables that hold another's address from the start), and `derived` registers'.
fn from_global<'p>(
    operand: &str,
    globals: &BTreeSet<&'p str>,
    pointers: &BTreeMap<&'p str, BTreeSet<&'p str>>,
    derived: &BTreeMap<String, BTreeSet<&'p str>>,
) -> BTreeSet<&'p str> {
    let mut found = BTreeSet::new();
    for word in words(operand) {
        if let Some(name) = globals.get(word).or_else(|| pointers.get_key_value(word).map(|(name, _)| name)) {
            found.insert(*name);
        }
        found.extend(derived.get(word).into_iter().flatten().copied());
    }
    found
}

/// Where `statement`'s first address is among its operands.
fn address_at(statement: &Statement) -> Option<usize> {
    statement.operands.iter().position(|o| o.starts_with('['))
}

/// Whether an instruction of `op` only reads at its address (a load, a prefetch).
fn reads_only(op: &str) -> bool {
    READERS.contains(&op.split('.').next().unwrap_or_default()) || op.starts_with("wmma.load")
}

/// Whether `statement` writes memory at its first address: whatever has an address and does more
/// than read there (a store, an atomic, a copy's destination, `wmma.store`, `discard`).
fn writes_at(statement: &Statement) -> bool {
    !reads_only(&statement.op) && address_at(statement).is_some()
}

/// The kinds of instruction that only read at their address.
const READERS: [&str; 6] = ["ld", "ldu", "ldmatrix", "prefetch", "prefetchu", "applypriority"];

/// The module-scope variables of `ptx`, `.global` and `.const`, in the order it declares them:
/// the memory a launch may leave for the next.
pub fn module_variables(ptx: &str) -> Vec<&str> {
    ptx.lines()
        .filter_map(|line| declared_name(line.trim().strip_suffix(';')?.split('=').next()?, &[".global", ".const"]))
        .collect()
}

/// Whether a `.global` variable's name is one the compiler gives a string literal (`$str$1`,
/// `__unnamed_1`).
pub fn compilers_string(name: &str) -> bool {
    name.starts_with("$str") || name.starts_with("__unnamed_")
}

/// Whether a `.global` variable of `ptx` is a temporary the compiler made for a reference to bind
/// (`constexpr unsigned&& r = 0u;` declares `.global .align 4 .u32 __unnamed_1;`), not a string
/// (an array of bytes).
pub fn compilers_temporary(ptx: &str, name: &str) -> bool {
    let declaration = |line: &str| {
        let declared = line.trim().strip_suffix(';')?.split('=').next()?;
        (declared_name(declared, &[".global"])? == name).then(|| declared.contains(".b8 "))
    };
    name.starts_with("__unnamed_") && ptx.lines().find_map(declaration) == Some(false)
}

/// The name `declaration` (up to its `=`, if any) declares in one of `spaces`.
fn declared_name<'a>(declaration: &'a str, spaces: &[&'static str]) -> Option<&'a str> {
    declared_variable(declaration, spaces).map(|(_, name, _)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    const COUNTER: &str = "\
.global .align 4 .u32 seen;
.global .align 4 .b8 table[16] = {1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0};
.global .align 4 .b8 bcm_places_outside[32];
.visible .entry k(
\t.param .u64 k_param_0
)
{
\t.reg .b32 \t%r<9>;
\t.reg .b64 \t%rd<9>;
\tld.param.u64 \t%rd1, [k_param_0];
\tcvta.to.global.u64 \t%rd2, %rd1;
\tmov.u64 \t%rd3, table;
\tld.global.u32 \t%r1, [%rd3+4];
\tst.global.u32 \t[%rd2], %r1;
\tmov.u64 \t%rd4, bcm_places_outside;
\tatom.global.add.u32 \t%r2, [%rd4], 1;
\tret;
}
";

    #[test]
    fn reading_a_table_and_writing_through_a_parameter_write_nothing_of_the_modules() {
        assert_eq!(written_globals(COUNTER, &["bcm_places_outside"]), Vec::<String>::new());
        assert_eq!(written_globals(COUNTER, &[]), ["bcm_places_outside"], "the grader's own, unless exempt");
    }

    #[test]
    fn a_counter_a_constant_written_through_a_cast_and_an_escaping_address_are_found() {
        let counter =
            COUNTER.replace("\tret;", "\tmov.u64 \t%rd5, seen;\n\tatom.global.add.u32 \t%r3, [%rd5], 1;\n\tret;");
        assert_eq!(written_globals(&counter, &["bcm_places_outside"]), ["seen"]);
        let direct = COUNTER.replace("\tret;", "@%p1 st.global.u8 \t[table+2], %rs1;\n\tret;");
        assert_eq!(written_globals(&direct, &["bcm_places_outside"]), ["table"]);
        let generic = COUNTER.replace(
            "\tret;",
            "\tmov.u64 \t%rd6, table;\n\tcvta.global.u64 \t%rd7, %rd6;\n\tadd.s64 \t%rd8, %rd7, 8;\n\tst.u32 \t[%rd8], %r1;\n\tret;",
        );
        assert_eq!(written_globals(&generic, &["bcm_places_outside"]), ["table"]);
        let format = ".global .align 1 .b8 $str[3] = {37, 100, 0};\n".to_owned()
            + &COUNTER.replace(
                "\tret;",
                "\tmov.u64 \t%rd6, $str;\n\tst.param.b64 \t[param0+0], %rd6;\n\tcall.uni (retval0), vprintf, (param0);\n\tret;",
            );
        assert_eq!(written_globals(&format, &["bcm_places_outside"]), Vec::<String>::new(), "printf's format");
        // A function of the module's own named `vprintf` (`extern "C"`) is no reader of strings.
        let own = ".func (.param .b32 func_retval0) vprintf(\n\t.param .b64 vprintf_param_0\n)\n{\n\tret;\n}\n";
        let taken = format.replace("\tcall.uni", "\tmov.u64 \t%rd9, vprintf;\n\tcall.uni");
        assert_eq!(written_globals(&format!("{own}{taken}"), &["bcm_places_outside"]), ["$str"], "its own vprintf");
        let argument = ".global .align 1 .b8 $str$1[5] = {110, 97, 109, 101};\n".to_owned()
            + &COUNTER.replace("\tret;", "\tmov.u64 \t%rd6, $str$1;\n\tst.local.u64 \t[%rd9], %rd6;\n\tret;");
        assert_eq!(written_globals(&argument, &["bcm_places_outside"]), Vec::<String>::new(), "printf's argument");
        let constant = ".const .align 4 .b8 lut[16];\n".to_owned()
            + &COUNTER.replace(
                "\tret;",
                "\tmov.u64 \t%rd6, lut;\n\tcvta.const.u64 \t%rd7, %rd6;\n\tst.param.b64 \t[param0+0], %rd7;\n\t\
                 st.global.cg.u32 \t[%rd7], %r1;\n\tret;",
            );
        assert_eq!(written_globals(&constant, &["bcm_places_outside"]), ["lut"], "a store into constant memory");
        let read = ".const .align 4 .b8 lut[16];\n".to_owned()
            + &COUNTER.replace("\tret;", "\tld.const.u32 \t%r7, [lut+4];\n\tst.global.u32 \t[%rd2], %r7;\n\tret;");
        assert_eq!(written_globals(&read, &["bcm_places_outside"]), Vec::<String>::new(), "a table read");
        let passed = constant.replace("\tst.global.cg.u32 \t[%rd7], %r1;\n", "");
        assert_eq!(written_globals(&passed, &["bcm_places_outside"]), ["lut"], "its address passed to a function");
        let escaped = COUNTER.replace("\tret;", "\tmov.u64 \t%rd6, table;\n\tst.shared.u64 \t[%rd9], %rd6;\n\tret;");
        assert_eq!(written_globals(&escaped, &["bcm_places_outside"]), ["table"], "its address stored away");
        // Stored in local memory (`printf("%p", table)`'s buffer), it is followed back out of it.
        let printed = escaped.replace("st.shared.u64", "st.local.u64");
        assert_eq!(written_globals(&printed, &["bcm_places_outside"]), Vec::<String>::new(), "a table printed");
        let reloaded =
            printed.replace("\tret;", "\tld.local.u64 \t%rd7, [%rd9];\n\tst.global.u32 \t[%rd7+4], %r1;\n\tret;");
        assert_eq!(
            written_globals(&reloaded, &["bcm_places_outside"]),
            ["table"],
            "written through what local memory kept"
        );
        let pointer = ".const .align 8 .u64 p = generic(table)+4;\n".to_owned()
            + &COUNTER.replace("\tret;", "\tld.const.u64 \t%rd6, [p];\n\tatom.add.u32 \t%r5, [%rd6], 1;\n\tret;");
        assert_eq!(written_globals(&pointer, &["bcm_places_outside"]), ["table"], "through a pointer it holds");
        // A table of two variables' addresses: a load from it may give either.
        let two = pointer.replace("p = generic(table)+4;", "p[2] = {generic(table), generic(seen)};");
        assert_eq!(written_globals(&two, &["bcm_places_outside"]), ["seen", "table"], "through either pointer");
        let matrix = counter.replace(
            "atom.global.add.u32 \t%r3, [%rd5], 1;",
            "wmma.store.d.sync.aligned.row.m8n8k32.global.s32 \t[%rd5], {%r2, %r2}, %r1;",
        );
        assert_eq!(written_globals(&matrix, &["bcm_places_outside"]), ["seen"], "a matrix's store");
        // A loop's pointer, made from `seen` after the store at it in the text.
        let looped = COUNTER.replace(
            "\tret;",
            "$L__BB0_1:\n\tst.global.u32 \t[%rd6+4], %r1;\n\tmov.u64 \t%rd7, seen;\n\tadd.s64 \t%rd6, %rd7, 8;\n\t\
             @%p1 bra \t$L__BB0_1;\n\tret;",
        );
        assert_eq!(written_globals(&looped, &["bcm_places_outside"]), ["seen"], "a loop's pointer");
        // Its halves unpacked and packed again, and a bulk copy from shared memory into it.
        let halves = COUNTER.replace(
            "\tret;",
            "\tmov.u64 \t%rd5, seen;\n\tmov.b64 \t{%r5, %r6}, %rd5;\n\tmov.b64 \t%rd6, {%r5, %r6};\n\t\
             st.global.u32 \t[%rd6], %r1;\n\tret;",
        );
        assert_eq!(written_globals(&halves, &["bcm_places_outside"]), ["seen"], "through its halves");
        let copied = COUNTER.replace(
            "\tret;",
            "\tmov.u64 \t%rd5, seen;\n\tcp.async.bulk.global.shared::cta.bulk_group \t[%rd5], [%r7], 16;\n\tret;",
        );
        assert_eq!(written_globals(&copied, &["bcm_places_outside"]), ["seen"], "a bulk copy into it");
        let first = first_write(&looped, &[]).map(|(_, line, _)| line);
        assert_eq!(first.as_deref(), Some("atom.global.add.u32 %r2, [%rd4], 1;"));
        // A temporary a reference binds, and a string, both named by the compiler.
        let temporary = ".global .align 4 .u32 __unnamed_1;\n.global .align 1 .b8 __unnamed_2[3] = {102, 40, 41};\n";
        assert!(compilers_temporary(temporary, "__unnamed_1"));
        assert!(!compilers_temporary(temporary, "__unnamed_2") && !compilers_temporary(temporary, "seen"));
        // A number a table holds beside a pointer (`{{table, 7u}}`) is no address: storing it stores data.
        let choices = ".const .align 8 .u64 choices[2] = {generic(table), 7};
"
        .to_owned()
            + &COUNTER.replace(
                "	ret;",
                "	ld.const.u32 	%r6, [choices+8];
	st.global.u32 	[%rd2], %r6;
	ret;",
            );
        assert_eq!(written_globals(&choices, &["bcm_places_outside"]), Vec::<String>::new(), "a number beside it");
        let its_pointer = choices.replace("ld.const.u32 \t%r6, [choices+8]", "ld.const.u64 \t%rd6, [choices]");
        let its_pointer = its_pointer.replace("st.global.u32 \t[%rd2], %r6", "st.global.u64 \t[%rd2], %rd6");
        assert_eq!(
            written_globals(&its_pointer, &["bcm_places_outside"]),
            ["table"],
            "the pointer beside it, stored away"
        );
        let shared = COUNTER.replace(
            "\tret;",
            "\tmov.u64 \t%rd6, table;\n\tld.global.u32 \t%r4, [%rd6];\n\tst.shared.u32 \t[%r4], %r1;\n\tret;",
        );
        assert_eq!(
            written_globals(&shared, &["bcm_places_outside"]),
            Vec::<String>::new(),
            "a table's value indexes the tile"
        );
    }

    #[test]
    fn a_registers_name_means_one_register_in_one_function() {
        // A helper that does not inline holds a string's address in its `%rd5`; the kernel's `%rd5`
        // is its parameter, written through.
        let helper = ".global .align 1 .b8 $str[2] = {120, 0};\n.func f()\n{\n\t.reg .b64 \t%rd<6>;\n\t\
                      mov.u64 \t%rd5, $str;\n\tret;\n}\n";
        let kernel = COUNTER.replace("\tret;", "\tld.param.u64 \t%rd5, [k_param_0];\n\tst.u32 \t[%rd5], %r1;\n\tret;");
        assert_eq!(written_globals(&format!("{helper}{kernel}"), &["bcm_places_outside"]), Vec::<String>::new());
        let in_the_helper = helper.replace("\tret;", "\tst.u32 \t[%rd5], %r1;\n\tret;");
        assert_eq!(written_globals(&format!("{in_the_helper}{kernel}"), &["bcm_places_outside"]), ["$str"]);
        // A string's address returned to a call, followed back out of it: the caller writes it.
        let returning = ".global .align 1 .b8 $str[2] = {120, 0};\n.func (.param .b64 func_retval0) f()\n{\n\t\
                         .reg .b64 \t%rd<6>;\n\tmov.u64 \t%rd5, $str;\n\tst.param.b64 \t[func_retval0+0], %rd5;\n\tret;\n}\n";
        let called = COUNTER.replace(
            "\tret;",
            "\t{\n\t.param .b64 retval0;\n\tcall.uni (retval0), \n\tf, \n\t(\n\t);\n\tld.param.b64 \t%rd7, \
             [retval0+0];\n\t}\n\tld.u32 \t%r5, [%rd7];\n\tret;",
        );
        let module = format!("{returning}{called}");
        assert_eq!(written_globals(&module, &["bcm_places_outside"]), Vec::<String>::new(), "only read");
        let write = module.replace("ld.u32 \t%r5, [%rd7];", "st.u32 \t[%rd7], %r1;");
        assert_eq!(written_globals(&write, &["bcm_places_outside"]), ["$str"], "written where it is returned");
        // A function whose address the code takes may be called with anything, and return anywhere.
        let taken = module.replace("\tld.u32 \t%r5, [%rd7];", "\tmov.u64 \t%rd8, f;");
        assert_eq!(written_globals(&taken, &["bcm_places_outside"]), ["$str"], "returned where it is not followed");
    }

    #[test]
    fn declarations_are_read_in_every_form() {
        let ptx = ".global .align 4 .u32 seen;
.visible .global .align 1 .u8 read_whole_particle;
.global .align 1 .b8 $str$1[4] = {97, 98, 99, 0};
.shared .align 4 .b8 tile[4096];
.const .align 4 .b8 lut[64];
.visible .const .align 8 .u64 p = generic(lut)+4;
\tst.global.u32 \t[%rd2], %r1;
";
        assert_eq!(module_variables(ptx), ["seen", "read_whole_particle", "$str$1", "lut", "p"]);
    }
}
