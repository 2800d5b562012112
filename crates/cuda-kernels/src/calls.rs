//! What calls pass between a module's functions, so that an address handed to a function that does
//! not inline (`__noinline__ unsigned lookup(const unsigned* table, unsigned i)`) is followed into
//! it, and one it returns back out. A call's arguments are stored, just before it, in parameters
//! the caller declares (`st.param.b64 [param0+0], %rd10;`), which the function reads as its own
//! (`ld.param.u64 %rd1, [_Z6lookupPKjj_param_0];`); its result goes the other way
//! (`st.param.b32 [func_retval0+0], %r2;` then `ld.param.b32 %r14, [retval0+0];` after the call).
//! A value is followed by the offset at which it is passed. Only a function that nothing but
//! direct calls reach is followed: one whose address the code takes may be called with anything.
//! What a call leaves unwritten, an argument or a result, holds the grader's 0
//! ([`crate::zeroed_registers`]), whatever the analysis takes an unknown value to be.

use std::collections::{BTreeMap, BTreeSet};

use crate::{
    ptx_text::{Statement, Step, bodies, scalar_bytes, steps, words},
    read_before_written,
};

/// A function's body, its instructions, and the part each plays in passing values to calls.
pub(crate) struct Body<'p> {
    pub(crate) text: &'p str,
    pub(crate) statements: Vec<Statement>,
    /// For each of `statements`, the value it passes or takes, if any.
    pub(crate) passing: Vec<Option<Passing>>,
    /// The function's name (a kernel's too).
    pub(crate) name: Option<&'p str>,
    /// The places of its result that some path returns without writing.
    unwritten_results: BTreeSet<Place>,
}

/// The part an instruction plays in passing a value to or from a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Passing {
    /// A read of the function's own parameter: `ld.param.u64 %rd1, [f_param_0+8]` (its key,
    /// `f_param_0+8:8`, with the bytes it reads).
    Parameter(String),
    /// An argument of the call at `call` (its place among the body's statements) to `callee`,
    /// given at the callee parameter's `key` (where the module defines the callee):
    /// `st.param.b64 [param0+0], %rd10`. `callee` is `None` for a call through a register. `sure` where every path to the call stores it: not under a
    /// guard, nor with a label or a branch between.
    Argument { call: usize, callee: Option<String>, key: String, sure: bool },
    /// The function's result at a place: `st.param.b32 [func_retval0+0], %r2`.
    Returned(Place),
    /// A read of the result at a place of the call before it, to `callee` (`None` through a
    /// register): `ld.param.b32 %r14, [retval0+0]`.
    Result { callee: Option<String>, place: Place },
}

/// A value's place among what a call passes: its offset and its bytes. A value is read back only
/// where it was stored, as wide: a pointer's low half, stored as 4 bytes, is no pointer read as 8.
pub(crate) type Place = (u64, u64);

/// A module's functions, read for what their calls pass.
pub(crate) struct Module<'p> {
    pub(crate) bodies: Vec<Body<'p>>,
    /// The functions only direct calls reach, which are followed.
    followed: BTreeSet<&'p str>,
}

impl<'p> Module<'p> {
    pub(crate) fn of(ptx: &'p str) -> Module<'p> {
        let texts = bodies(ptx);
        let headers: Vec<Option<(&str, Vec<&str>)>> = texts.iter().map(|text| header(text)).collect();
        let parameters: BTreeMap<&str, &[&str]> =
            headers.iter().flatten().map(|(name, parameters)| (*name, &parameters[..])).collect();
        let bodies: Vec<Body> = texts
            .iter()
            .zip(&headers)
            .map(|(text, header)| {
                let steps = steps(text);
                let unwritten_results = read_before_written::unwritten_results(&steps);
                // (Each statement, with the labels before it.)
                let mut labels = Vec::new();
                let mut statements = Vec::new();
                for step in steps {
                    match step {
                        Step::Label(_) => labels.push(statements.len()),
                        Step::Do(statement) => statements.push(statement),
                    }
                }
                let own = header.as_ref().map_or(&[][..], |(_, parameters)| &parameters[..]);
                let passing = passing(&statements, &labels, own, &parameters);
                Body { text, statements, passing, name: header.as_ref().map(|(name, _)| *name), unwritten_results }
            })
            .collect();
        let followed = bodies
            .iter()
            .filter_map(|body| body.name)
            .filter(|name| !text_names_otherwise_than_calling(ptx, name, &bodies))
            .collect();
        Module { bodies, followed }
    }

    /// Each body's findings (`find`'s, given what calls pass by then), found again until what
    /// calls pass, read from them by `value` (what an operand holds), stops growing. `unknown` is
    /// what an unwritten or unfollowed value holds. What calls pass starts from nothing, so that
    /// a value going round a cycle of calls holds only what enters it.
    pub(crate) fn followed<V: Ord + Clone, R>(
        &self,
        unknown: BTreeSet<V>,
        find: impl Fn(&Body<'p>, &Passed<V>) -> R,
        value: impl Fn(&R, &str) -> BTreeSet<V>,
    ) -> Vec<R> {
        let mut passed = self.passed(None, &value, unknown);
        loop {
            let found: Vec<R> = self.bodies.iter().map(|body| find(body, &passed)).collect();
            let next = self.passed(Some(&found), &value, passed.unknown.clone());
            if next == passed {
                return found;
            }
            passed = next;
        }
    }

    /// What the calls of the bodies pass, read from their findings (nothing yet where there are
    /// none): at every place a call stores, and every place a function returns.
    fn passed<V: Ord + Clone, R>(
        &self,
        found: Option<&[R]>,
        value: &impl Fn(&R, &str) -> BTreeSet<V>,
        unknown: BTreeSet<V>,
    ) -> Passed<V> {
        let mut passed = Passed { arguments: BTreeMap::new(), results: BTreeMap::new(), unknown };
        for (index, body) in self.bodies.iter().enumerate() {
            let found = found.map(|found| &found[index]);
            for (statement, passing) in body.statements.iter().zip(&body.passing) {
                let stored = || -> BTreeSet<V> {
                    let Some(found) = found else { return BTreeSet::new() };
                    statement.stored_values().flat_map(|v| value(found, v)).collect()
                };
                match passing {
                    Some(Passing::Argument { call, callee: Some(callee), key, sure }) if self.follows(callee) => {
                        let sites = passed.arguments.entry(callee.clone()).or_default();
                        let given = sites.entry((index, *call)).or_default().entry(key.clone()).or_default();
                        given.extend(stored());
                        if !sure {
                            given.extend(passed.unknown.iter().cloned());
                        }
                    }
                    Some(Passing::Returned(place)) => {
                        let Some(name) = body.name else { continue };
                        let results = passed.results.entry(name.to_owned()).or_default();
                        results.entry(*place).or_default().extend(stored());
                    }
                    _ => {}
                }
            }
            // A call to a followed function with no arguments is a call site all the same.
            for (at, statement) in body.statements.iter().enumerate() {
                if let Some(callee) = statement.call_target().filter(|callee| self.follows(callee)) {
                    passed.arguments.entry(callee.to_owned()).or_default().entry((index, at)).or_default();
                }
            }
            if let Some(results) = body.name.and_then(|name| passed.results.get_mut(name)) {
                for (place, returned) in results.iter_mut() {
                    if body.unwritten_results.contains(place) {
                        returned.extend(passed.unknown.iter().cloned());
                    }
                }
            }
        }
        passed
    }

    /// Whether the function `name` is followed: defined here, and reached only by direct calls.
    pub(crate) fn follows(&self, name: &str) -> bool {
        self.followed.contains(name)
    }

    /// Whether the module defines the function `name` (one it only declares is defined elsewhere:
    /// CUDA's `vprintf`).
    pub(crate) fn defines(&self, name: &str) -> bool {
        self.bodies.iter().any(|body| body.name == Some(name))
    }
}

/// A call: its body's place among the module's, and its own among the body's statements.
type CallSite = (usize, usize);

/// What calls pass, by value: for each followed function, what each call to it gives at each of
/// its parameters' keys, and what each function returns at each offset of its result.
#[derive(PartialEq, Eq)]
pub(crate) struct Passed<V> {
    arguments: BTreeMap<String, BTreeMap<CallSite, BTreeMap<String, BTreeSet<V>>>>,
    results: BTreeMap<String, BTreeMap<Place, BTreeSet<V>>>,
    unknown: BTreeSet<V>,
}

impl<V: Ord + Clone> Passed<V> {
    /// What the parameter at `key` of `function` may hold: what any call gives there, unknown
    /// where a call gives nothing there or the function is not followed.
    pub(crate) fn parameter(&self, function: &str, key: &str) -> BTreeSet<V> {
        match self.arguments.get(function) {
            Some(sites) if !sites.is_empty() => sites
                .values()
                .flat_map(|given| given.get(key).cloned().unwrap_or_else(|| self.unknown.clone()))
                .collect(),
            _ => self.unknown.clone(),
        }
    }

    /// What a call to `callee` may return at `place` (unknown for a call through a register, or
    /// to a function defined elsewhere).
    pub(crate) fn result(&self, callee: Option<&str>, place: Place) -> BTreeSet<V> {
        let returned = callee.and_then(|callee| self.results.get(callee)?.get(&place));
        returned.cloned().unwrap_or_else(|| self.unknown.clone())
    }

    /// What a `.param` load of `passing` may read: a parameter's or a result's value, else unknown.
    pub(crate) fn read(&self, function: Option<&str>, passing: Option<&Passing>) -> BTreeSet<V> {
        match (passing, function) {
            (Some(Passing::Parameter(key)), Some(function)) => self.parameter(function, key),
            (Some(Passing::Result { callee, place }), _) => self.result(callee.as_deref(), *place),
            _ => self.unknown.clone(),
        }
    }
}

/// The names of the functions `ptx` defines (kernels too).
pub(crate) fn defined(ptx: &str) -> BTreeSet<&str> {
    bodies(ptx).into_iter().filter_map(|body| Some(header(body)?.0)).collect()
}

/// A function's name and its parameters' names, in order, from its `body`'s header (`.func
/// (.param .b32 func_retval0) _Z6lookupPKjj(.param .b64 _Z6lookupPKjj_param_0, ...)`).
fn header(body: &str) -> Option<(&str, Vec<&str>)> {
    let head = body.split('{').next()?;
    // (The last: a declaration of another function may come before it. A declaration, which
    // ends in `;`, before a variable's initializer, `= {...}`, is none.)
    let definition = &head[head.rfind(".func").max(head.rfind(".entry"))?..];
    if definition.contains(';') {
        return None;
    }
    let after_keyword = definition.split_once(char::is_whitespace)?.1.trim_start();
    // (A result comes first, in parentheses.)
    let after_result = match after_keyword.strip_prefix('(') {
        Some(result) => result.split_once(')')?.1.trim_start(),
        None => after_keyword,
    };
    let (name, rest) = after_result.split_once('(').unwrap_or((after_result, ""));
    let name = name.trim();
    let list = rest.split(')').next().unwrap_or_default();
    let parameters = list
        .split(',')
        .filter_map(|parameter| parameter.split_whitespace().last())
        .map(|parameter| parameter.split('[').next().unwrap_or(parameter))
        .collect();
    (!name.is_empty()).then_some((name, parameters))
}

/// Whether `ptx` names the function `name` anywhere but in a function's header and as a direct
/// call's target (its address taken: `mov.u64 %rd1, name;`, or a variable holding it).
fn text_names_otherwise_than_calling(ptx: &str, name: &str, bodies: &[Body]) -> bool {
    let calls = bodies.iter().flat_map(|body| &body.statements).filter(|s| s.call_target() == Some(name)).count();
    let named = ptx
        .lines()
        .map(|line| line.split("//").next().unwrap_or_default())
        .filter(|line| !line.contains(".func"))
        .flat_map(words)
        .filter(|word| *word == name)
        .count();
    named != calls
}

/// The part each of `statements` plays in passing values: reads of the function's `own`
/// parameters, a call's arguments and result (`parameters` gives each function's, by name), the
/// function's result. `labels` holds, for each label, the place of the statement after it. A
/// vector's elements play none (what they pass is unknown where it is read).
fn passing(
    statements: &[Statement],
    labels: &[usize],
    own: &[&str],
    parameters: &BTreeMap<&str, &[&str]>,
) -> Vec<Option<Passing>> {
    let calls: Vec<usize> = (0..statements.len()).filter(|i| statements[*i].kind() == "call").collect();
    statements
        .iter()
        .enumerate()
        .map(|(at, statement)| {
            let (Some(address), "param") = (statement.address(), statement.space()) else { return None };
            let bytes = scalar_bytes(&statement.op)?;
            let (symbol, offset) = symbol_and_offset(address);
            let place = (offset, bytes);
            let reads = statement.kind() == "ld";
            if symbol.starts_with("func_retval") {
                return (!reads).then_some(Passing::Returned(place));
            }
            if reads && own.contains(&symbol) {
                return Some(Passing::Parameter(key(symbol, place)));
            }
            if reads {
                // (The call before it.)
                let call = &statements[*calls.iter().rev().find(|call| **call < at)?];
                let returns =
                    call.operands.first().is_some_and(|o| o.starts_with('(') && words(o).any(|w| w == symbol));
                return returns.then(|| Passing::Result { callee: direct(call), place });
            }
            // An argument of the call after it, at its place among the call's.
            let call = *calls.iter().find(|call| **call > at)?;
            let place_among = arguments(&statements[call]).and_then(|list| words(list).position(|w| w == symbol))?;
            let callee = direct(&statements[call]);
            let parameter = callee.as_deref().and_then(|callee| parameters.get(callee)?.get(place_among).copied());
            let between = &statements[at + 1..call];
            let sure = !statement.guarded
                && !labels.iter().any(|label| (at + 1..=call).contains(label))
                && !between.iter().any(|s| ["bra", "brx", "ret", "exit"].contains(&s.kind()));
            Some(Passing::Argument { call, key: key(parameter.unwrap_or(symbol), place), callee, sure })
        })
        .collect()
}

/// A parameter's key: its name, and the place of a value in it (`f_param_0+8:8`).
fn key(parameter: &str, (offset, bytes): Place) -> String {
    format!("{parameter}+{offset}:{bytes}")
}

/// The function a call names, `None` for a call through a register.
fn direct(call: &Statement) -> Option<String> {
    call.call_target().filter(|target| !target.starts_with('%')).map(str::to_owned)
}

/// A call's list of arguments, after its target: `(param0, param1)`.
fn arguments(call: &Statement) -> Option<&str> {
    let target = call.operands.iter().position(|o| !o.starts_with('('))?;
    call.operands.get(target + 1).map(String::as_str).filter(|list| list.starts_with('('))
}

/// `[param0+8]`'s symbol and offset (`param0`, 8).
fn symbol_and_offset(address: &str) -> (&str, u64) {
    let inside = address.trim_start_matches('[').trim_end_matches(']');
    let (symbol, offset) = inside.split_once('+').unwrap_or((inside, "0"));
    (symbol.trim(), offset.trim().parse().unwrap_or(0))
}

#[cfg(test)]
pub(crate) mod tests;
