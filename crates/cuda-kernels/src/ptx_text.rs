//! Reading PTX text: an instruction's operation and operands, line by line or whole (a `call`
//! spans lines), the names in an operand.

use std::collections::BTreeMap;

/// An instruction's operation and its operands (a predicate guard dropped); `None` for a
/// directive, a label or anything else.
pub(crate) fn instruction(line: &str) -> Option<(&str, Vec<&str>)> {
    let mut line = line.trim();
    if let Some(guarded) = line.strip_prefix('@') {
        line = guarded.split_once(char::is_whitespace)?.1.trim_start();
    }
    let body = line.strip_suffix(';')?;
    if body.starts_with('.') || body.starts_with("//") || body.ends_with(':') {
        return None;
    }
    let (op, rest) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
    let operands = rest.split(',').map(str::trim).filter(|o| !o.is_empty()).collect();
    Some((op, operands))
}

/// Follows `line`'s braces from `depth` (0 at module scope); true if a function's body closed on it.
pub(crate) fn closes_a_body(line: &str, depth: &mut usize) -> bool {
    let mut closed = false;
    for c in line.chars() {
        match c {
            '{' => *depth += 1,
            '}' => {
                *depth = depth.saturating_sub(1);
                closed |= *depth == 0;
            }
            _ => {}
        }
    }
    closed
}

/// The text of each function's body in `ptx` (its header's last lines too): a register's name
/// means one register within one body.
pub(crate) fn bodies(ptx: &str) -> Vec<&str> {
    let (mut found, mut from, mut at, mut depth) = (Vec::new(), 0, 0, 0usize);
    for line in ptx.split_inclusive('\n') {
        at += line.len();
        if closes_a_body(line, &mut depth) {
            found.push(&ptx[from..at]);
            from = at;
        }
    }
    found
}

/// A variable's declaration after its state space: `.align 16 .b8 __local_depot0[64];`,
/// `.b32 param0`, `.align 4 .b8 f_param_0[8],`.
pub(crate) struct Variable {
    pub(crate) name: String,
    /// Its type's word: `.b8`.
    pub(crate) kind: String,
    pub(crate) bits: u64,
    pub(crate) align: Option<u64>,
    pub(crate) bytes: u64,
}

impl Variable {
    pub(crate) fn parse(declared: &str) -> Option<Variable> {
        let tokens: Vec<&str> = declared.trim().trim_end_matches([';', ',']).split_whitespace().collect();
        let kind = tokens.iter().find(|t| t.starts_with('.') && **t != ".align")?;
        let bits: u64 = kind.get(2..)?.parse().ok()?;
        let (name, count) = match tokens.last()?.split_once('[') {
            Some((name, count)) => (name, count.strip_suffix(']')?.parse::<u64>().ok()?),
            None => (*tokens.last()?, 1),
        };
        let align = match tokens.iter().position(|t| *t == ".align") {
            Some(i) => Some(tokens.get(i + 1)?.parse().ok()?),
            None => None,
        };
        Some(Variable { name: name.to_owned(), kind: (*kind).to_owned(), bits, align, bytes: count * bits / 8 })
    }
}

/// The widest of `widths` (widest first) that divides both `align` and `bytes`: how wide the
/// stores that fill such a variable may be.
pub(crate) fn widest_store(widths: &[u64], align: u64, bytes: u64) -> u64 {
    widths.iter().copied().find(|w| align.is_multiple_of(*w) && bytes.is_multiple_of(*w)).unwrap_or(1)
}

/// `stores` (whole lines) in a block of their own, after a register of type `register` (`.b32`),
/// `%bcm_zero`, is given 0 for them to store.
pub(crate) fn zero_stores(register: &str, stores: &str) -> String {
    format!("\t{{\n\t.reg {register} \t%bcm_zero;\n\tmov{register} \t%bcm_zero, 0;\n{stores}\t}}\n")
}

/// The names in an operand: registers and symbols (`[%rd6+4]` holds `%rd6`, `%tid.x` holds `%tid`).
pub(crate) fn words(operand: &str) -> impl Iterator<Item = &str> {
    operand
        .split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '%')))
        .filter(|w| !w.is_empty() && !w.starts_with(|c: char| c.is_ascii_digit()))
}

/// One PTX instruction: its operation (guard dropped) and operands (a vector's `{...}` is one),
/// and whether a predicate guards it (`@%p1 bra $L__BB0_2;`).
pub(crate) struct Statement {
    pub(crate) op: String,
    pub(crate) operands: Vec<String>,
    pub(crate) guarded: bool,
}

impl Statement {
    /// `text`, one instruction with any braces, labels or guard before it, or `None` for a directive.
    pub(crate) fn parse(text: &str) -> Option<Statement> {
        let (_, mut text) = labels(text);
        let guarded = text.starts_with('@');
        if guarded {
            text = text[1..].split_once(char::is_whitespace)?.1.trim_start();
        }
        let text = text.trim_end_matches(';').trim();
        let (op, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
        op.starts_with(|c: char| c.is_ascii_lowercase()).then(|| Statement {
            op: op.to_owned(),
            operands: operands(rest).into_iter().map(str::to_owned).collect(),
            guarded,
        })
    }

    pub(crate) fn kind(&self) -> &str {
        self.op.split('.').next().unwrap_or_default()
    }

    /// Whether it writes memory, not a register: an atomic, or any instruction whose first
    /// operand is an address (`st`, `red`, `cp`'s destination, `wmma.store`, `prefetch`'s hint).
    pub(crate) fn writes_memory(&self) -> bool {
        self.kind() == "atom" || self.operands.first().is_some_and(|o| o.starts_with('['))
    }

    /// The values a store or an atomic writes to memory (an atomic's first operand is the old value it returns).
    pub(crate) fn stored_values(&self) -> impl Iterator<Item = &str> {
        let written = if self.writes_memory() { &self.operands[..] } else { &[] };
        let values = if self.kind() == "atom" { written.get(1..).unwrap_or_default() } else { written };
        values.iter().map(String::as_str).filter(|o| !o.starts_with('['))
    }

    /// A load's or store's address: the operand in brackets.
    pub(crate) fn address(&self) -> Option<&str> {
        self.operands.iter().map(String::as_str).find(|o| o.starts_with('['))
    }

    /// The state space the operation names (`shared` for `shared::cta` too), or "" for none: a
    /// generic access (`ld.u32`, `st.volatile.u64`, `atom.add.u32`), or no access at all.
    pub(crate) fn space(&self) -> &str {
        const SPACES: &[&str] = &["local", "shared", "global", "param", "const", "tex"];
        let named = self.op.split('.').map(|part| part.split("::").next().unwrap_or(part));
        named.into_iter().find(|part| SPACES.contains(part)).unwrap_or("")
    }

    /// The function a `call` calls: `vprintf` of `call.uni (retval0), vprintf, (param0, param1);`.
    pub(crate) fn call_target(&self) -> Option<&str> {
        (self.kind() == "call").then_some(())?;
        self.operands.iter().map(String::as_str).find(|o| !o.starts_with('('))
    }
}

/// The labels at the start of `text` (after any braces), and what follows them.
fn labels(text: &str) -> (Vec<&str>, &str) {
    let (mut found, mut text) = (Vec::new(), text.trim());
    loop {
        text = text.trim_start_matches(['{', '}']).trim_start();
        match text.split_once(':') {
            Some((label, rest))
                if !label.is_empty() && !label.contains(char::is_whitespace) && !rest.starts_with(':') =>
            {
                found.push(label);
                text = rest.trim_start();
            }
            _ => return (found, text),
        }
    }
}

/// A step of a function's code: a label a branch may go to, or an instruction.
pub(crate) enum Step {
    Label(String),
    Do(Statement),
}

/// The instructions of `ptx`, each whole however many lines it takes (a `call` spans several) and
/// however many share a line (inline assembly's `{ .reg .b32 t; mov.b32 t, 1; }`); comments,
/// directives and labels left out.
pub(crate) fn statements(ptx: &str) -> Vec<Statement> {
    steps(ptx)
        .into_iter()
        .filter_map(|step| match step {
            Step::Do(statement) => Some(statement),
            Step::Label(_) => None,
        })
        .collect()
}

/// [`statements`] with the labels between them, in order.
pub(crate) fn steps(ptx: &str) -> Vec<Step> {
    let (mut found, mut pending) = (Vec::new(), String::new());
    for line in ptx.lines() {
        let code = line.split("//").next().unwrap_or_default();
        for piece in code.split_inclusive(';') {
            pending.push_str(piece);
            pending.push(' ');
            if piece.trim_end().ends_with(';') {
                found.extend(labels(&pending).0.into_iter().map(|label| Step::Label(label.to_owned())));
                found.extend(Statement::parse(&pending).map(Step::Do));
                pending.clear();
            }
        }
        // What a line leaves unfinished continues on the next only if it is an instruction's start
        // (`call.uni (retval0),`): a directive without `;` (`.loc 1 35 5`), a label or a brace ends there.
        let (labelled, unfinished) = labels(&pending);
        if Statement::parse(unfinished).is_none() {
            found.extend(labelled.into_iter().map(|label| Step::Label(label.to_owned())));
            pending.clear();
        }
    }
    found
}

/// `rest`'s operands split at commas outside braces and brackets.
fn operands(rest: &str) -> Vec<&str> {
    let (mut found, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in rest.char_indices() {
        match c {
            '{' | '[' | '(' => depth += 1,
            '}' | ']' | ')' => depth -= 1,
            ',' if depth == 0 => {
                found.push(rest[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    found.push(rest[start..].trim());
    found.into_iter().filter(|o| !o.is_empty()).collect()
}

/// An access's `line` split around its address, `[base+offset]`: what comes before the `[`,
/// the base, the offset as written (`0` where none is) and what follows the `]`.
pub(crate) fn address_parts(line: &str) -> Option<(&str, &str, &str, &str)> {
    let (open, close) = (line.find('[')?, line.find(']')?);
    let (before, address, after) = (&line[..open], &line[open + 1..close], &line[close + 1..]);
    let (base, offset) = address.split_once('+').unwrap_or((address, "0"));
    Some((before, base.trim(), offset.trim(), after))
}

/// The instructions on `line` (a `call` that goes on to the next lines only by its start).
pub(crate) fn instructions(line: &str) -> Vec<Statement> {
    let code = line.split("//").next().unwrap_or_default();
    code.split(';').filter_map(Statement::parse).collect()
}

/// The bytes a load, store or atomic of `op` reads or writes: `ld.local.v4.u32` reads 16. `None`
/// for other instructions, whose type is not their footprint (`wmma.load...f32` reads a matrix's
/// rows, a register's stride apart).
pub(crate) fn access_bytes(op: &str) -> Option<u64> {
    let parts: Vec<&str> = op.split('.').collect();
    if !ELEMENT_ACCESSES.contains(parts.first()?) {
        return None;
    }
    let lanes = parts.iter().find_map(|p| p.strip_prefix('v')?.parse::<u64>().ok()).unwrap_or(1);
    let bits: u64 = parts.last()?.get(1..)?.parse().ok()?;
    Some(lanes * bits / 8)
}

/// The bytes a load or store of `op` moves where it moves one element, not a vector of them.
pub(crate) fn scalar_bytes(op: &str) -> Option<u64> {
    let vector = op.split('.').any(|part| part.strip_prefix('v').is_some_and(|lanes| lanes.parse::<u8>().is_ok()));
    access_bytes(op).filter(|_| !vector)
}

/// The kinds of instruction that read or write one element, or a vector of them, at their address.
const ELEMENT_ACCESSES: [&str; 5] = ["ld", "ldu", "st", "atom", "red"];

/// Whether an access of `op` moves one 64-bit word, as wide as an address (not a vector of them).
pub(crate) fn one_64_bit_word(op: &str) -> bool {
    access_bytes(op) == Some(8) && !op.contains(".v")
}

/// Whether `op` has a floating-point type among its types (`cvt.rn.f32.u64`, `add.bf16x2`).
pub(crate) fn of_a_float(op: &str) -> bool {
    op.split('.').skip(1).any(|part| part.starts_with('f') || part.starts_with("bf"))
}

/// Whether a value `holds` marks (an address) leaves what the instructions show: stored in memory
/// but where `kept_in` allows, returned (unless `returns_followed`), or passed to a call but one
/// to a function `followed` allows (a call's arguments are stored just before it, in its
/// parameters).
pub(crate) fn handed_on(
    statements: &[Statement],
    holds: &dyn Fn(&str) -> bool,
    kept_in: &dyn Fn(&Statement) -> bool,
    followed: &dyn Fn(&str) -> bool,
    returns_followed: bool,
) -> bool {
    let mut passed = false;
    for statement in statements {
        let stored = statement.stored_values().any(holds);
        let returned =
            statement.op.starts_with("st.param") && statement.address().is_some_and(|a| a.contains("func_retval"));
        let argument = stored && statement.op.starts_with("st.param") && !returned;
        passed |= argument;
        let passed_on = statement.call_target().is_some_and(|target| std::mem::take(&mut passed) && !followed(target));
        let kept = argument || returned && returns_followed || kept_in(statement);
        if stored && !kept || passed_on {
            return true;
        }
    }
    false
}

/// One access's `line` in the parts [`held_inside`] and [`held_in_one`] rewrite: the indent, the
/// operation and what precedes the address, the address's base and numeric offset, and what
/// follows it.
struct Access<'l> {
    indent: &'l str,
    access: &'l str,
    base: &'l str,
    offset: i64,
    after: &'l str,
}

impl<'l> Access<'l> {
    /// `None` if the offset is not a number or the line holds a second address.
    fn of(line: &'l str) -> Option<Access<'l>> {
        let (before, base, offset, after) = address_parts(line)?;
        let (indent, access) = before.split_at(before.len() - before.trim_start().len());
        let offset = offset.parse().ok()?;
        (!after.contains('[')).then_some(Access { indent, access, base, offset, after })
    }
}

/// Every `step` bytes from `first` on (`first` < `step`): the words of a table's members that
/// hold a pointer, where a read is held ([`held_inside`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Every {
    pub(crate) first: u64,
    pub(crate) step: u64,
}

impl Every {
    /// `m` and `s` such that `x * m >> s` is `x / step` for every `x` up to `last` (below 2^31):
    /// a multiply and a shift, where PTX's `div.u64` is a call to a routine of many instructions.
    /// With `n` the bits of `last` and `l` those of `step - 1`, `m` is `2^(n + l) / step` rounded
    /// up, which is less than `2^(n + 1)` (Granlund and Montgomery, 1994).
    pub(crate) fn quotient_by_multiplying(self, last: u64) -> Option<(u64, u32)> {
        let n = 64 - last.leading_zeros();
        let l = 64 - (self.step.checked_sub(1)?).leading_zeros();
        let s = n + l;
        (n <= 31 && s < 64).then(|| ((1u64 << s).div_ceil(self.step), s))
    }
}

/// How an access's address is made from a variable's: as `mov` takes it (in the variable's own
/// space), made generic by `cvta` from that space, or then made global again (`cvta.to.global`:
/// a constant's generic address read by `ld.global` is its copy in global memory).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Made<'s> {
    Own,
    Generic(&'s str),
    Global(&'s str),
}

impl Made<'_> {
    /// The instructions that make `register`, holding the variable's own address, this kind.
    fn made(self, register: &str) -> String {
        match self {
            Made::Own => String::new(),
            Made::Generic(space) => format!("cvta.{space}.u64 {register}, {register}; "),
            Made::Global(space) => {
                format!("cvta.{space}.u64 {register}, {register}; cvta.to.global.u64 {register}, {register}; ")
            }
        }
    }
}

/// `line`, one access at `[base+offset]`, with its address held between `start` (a variable's
/// address, which `mov` takes into `register` and `made` makes of the access's kind) and `last`
/// bytes past it: its offset from `start`, as an unsigned number, at most `last` (an address
/// before `start` lands there too), and where `places` are given, the one of them at or below it
/// (`last` is one of them). `None` if the offset is not a number or the line holds a second
/// address.
pub(crate) fn held_inside(
    line: &str,
    start: &str,
    register: &str,
    made: Made,
    last: u64,
    places: Option<Every>,
) -> Option<String> {
    let Access { indent, access, base, offset, after } = Access::of(line)?;
    let to_generic = made.made(register);
    // The variable's own name is an address `mov` takes, not an operand of `add`.
    let base = if base == start { register } else { base };
    let to_a_place = match places {
        Some(places) => {
            let (multiplier, shift) = places.quotient_by_multiplying(last)?;
            let Every { first, step } = places;
            format!(
                "mul.lo.u64 %bcm_at, %bcm_at, {multiplier}; shr.u64 %bcm_at, %bcm_at, {shift}; \
                 mul.lo.u64 %bcm_at, %bcm_at, {step}; add.u64 %bcm_at, %bcm_at, {first}; "
            )
        }
        None => String::new(),
    };
    Some(format!(
        "{indent}{{ .reg .b64 %bcm_at; .reg .b64 {register}; mov.u64 {register}, {start}; {to_generic}\
         add.s64 %bcm_at, {base}, {offset}; sub.u64 %bcm_at, %bcm_at, {register}; \
         min.u64 %bcm_at, %bcm_at, {last}; {to_a_place}add.u64 %bcm_at, {register}, %bcm_at; \
         {access}[%bcm_at]{after} }}"
    ))
}

/// A table an address is held inside: its name, the last offset an address may have past it, and
/// how the address is made from the table's.
pub(crate) type Table<'s> = (&'s str, u64, Made<'s>);

/// `line`, one access at `[base+offset]`, with its address held inside one of `tables` (each a
/// variable's name, the last offset an access may have past it, and how the access's address is
/// made from its): left where it lies inside one, else held inside the first, as [`held_inside`]
/// holds one. (Not anywhere between them: a module's data with an initializer and without, or of
/// two spaces, may lie apart.)
pub(crate) fn held_in_one(line: &str, tables: &[Table]) -> Option<String> {
    let Access { indent, access, base, offset, after } = Access::of(line)?;
    if tables.is_empty() || tables.iter().any(|(start, ..)| *start == base) {
        return None;
    }
    let held = address_held_in_one("%bcm_at", "%bcm_held", tables);
    Some(format!(
        "{indent}{{ .reg .b64 %bcm_at; .reg .b64 %bcm_base; .reg .b64 %bcm_past; .reg .b64 %bcm_held; \
         .reg .pred %bcm_inside; add.s64 %bcm_at, {base}, {offset}; {held}{access}[%bcm_held]{after} }}"
    ))
}

/// `line`, one store of local memory (`printf`'s arguments' buffer), with each of the `values` it
/// stores that may be a table's address (a register, and its tables as [`held_in_one`] takes
/// them) held inside one of them: `printf("%s")` reads from where it points. `None` if the line
/// holds no such store, or a second address.
pub(crate) fn values_held_in_one(line: &str, values: &[(&str, Vec<Table>)]) -> Option<String> {
    let Access { indent, access, base, offset, after } = Access::of(line)?;
    let mut held = String::new();
    let mut declared = String::from(".reg .b64 %bcm_base; .reg .b64 %bcm_past; .reg .pred %bcm_inside; ");
    let mut renamed: BTreeMap<&str, String> = BTreeMap::new();
    for (index, (value, tables)) in values.iter().enumerate().filter(|(_, (_, tables))| !tables.is_empty()) {
        let into = format!("%bcm_value{index}");
        declared += &format!(".reg .b64 {into}; ");
        held += &address_held_in_one(value, &into, tables);
        renamed.insert(value, into);
    }
    let stored: String = split_words(after).map(|piece| renamed.get(piece).map_or(piece, String::as_str)).collect();
    (!renamed.is_empty()).then(|| format!("{indent}{{ {declared}{held}{access}[{base}+{offset}]{stored} }}"))
}

/// The instructions that set `into` to the address `at` holds where it lies inside one of
/// `tables`, else the first's address past which it lies, at most its last offset.
fn address_held_in_one(at: &str, into: &str, tables: &[Table]) -> String {
    let past = |(start, _, made): &Table| {
        let to_its_kind = made.made("%bcm_base");
        format!("mov.u64 %bcm_base, {start}; {to_its_kind}sub.u64 %bcm_past, {at}, %bcm_base; ")
    };
    let Some(((first_start, first_last, first_made), rest)) = tables.split_first() else { return String::new() };
    let mut held = format!(
        "{}min.u64 %bcm_past, %bcm_past, {first_last}; add.u64 {into}, %bcm_base, %bcm_past; ",
        past(&(first_start, *first_last, *first_made))
    );
    for table in rest {
        held += &format!(
            "{}setp.le.u64 %bcm_inside, %bcm_past, {}; selp.b64 {into}, {at}, {into}, %bcm_inside; ",
            past(table),
            table.1
        );
    }
    held
}

/// `text` in pieces: each name (a register's, `%rd81`) apart from what lies between.
fn split_words(text: &str) -> impl Iterator<Item = &str> {
    let word = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '%');
    let mut rest = text;
    std::iter::from_fn(move || {
        let first = rest.chars().next()?;
        let end = rest.find(|c: char| word(c) != word(first)).unwrap_or(rest.len());
        let (piece, after) = rest.split_at(end);
        rest = after;
        Some(piece)
    })
}

/// The space (one of `spaces`: `.global`), the name and the rest after the space (`.align 4 .b8
/// t[16]`, which [`Variable::parse`] reads) of the module variable `declaration` declares, up to
/// its initializer's `=` (after `.visible`, `.extern` or `.weak`).
pub(crate) fn declared_variable<'a>(
    declaration: &'a str,
    spaces: &[&'static str],
) -> Option<(&'static str, &'a str, &'a str)> {
    let declaration = declaration.trim();
    let mut words = declaration.split_whitespace();
    let space = match words.next()? {
        ".visible" | ".extern" | ".weak" => words.next()?,
        space => space,
    };
    let space = spaces.iter().copied().find(|known| *known == space)?;
    let rest = &declaration[declaration.find(space)? + space.len()..];
    let name = declaration.split_whitespace().last()?.split('[').next()?;
    (!name.is_empty() && !name.starts_with('.')).then_some((space, name, rest))
}
