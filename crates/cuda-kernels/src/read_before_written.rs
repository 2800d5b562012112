//! The registers a function may read before it writes them, on some path from its start: a loop's
//! pointer that each turn makes at its end for the next (`unsigned* p; for (...) { use(p); p =
//! &table[...]; }`) is read on the first turn before anything wrote it. The grader's build gives
//! every register 0 where its function starts ([`crate::zeroed_registers`]), so there it holds 0,
//! a number, whatever the instructions that write it make ([`crate::address_origins`] takes it to
//! be one). Found over the function's branches: a register is written on every path to an
//! instruction where every path to it has an instruction that writes it, unguarded.

use std::collections::{BTreeMap, BTreeSet};

use crate::{
    calls::Place,
    ptx_text::{Statement, Step, scalar_bytes, steps, words},
};

/// The registers of a function's `body` that some path from its start reads before an
/// instruction writes them (of those some instruction writes: one no instruction writes is
/// known to hold 0 everywhere).
pub(crate) fn registers(body: &str) -> BTreeSet<String> {
    let steps = steps(body);
    let read = read_first(&steps, &|s| writes(s).collect(), &|s| reads(s).collect());
    read.into_iter().map(str::to_owned).collect()
}

/// The places of a function's result (offset and bytes: `(0, 4)` of `st.param.b32
/// [func_retval0+0], %r2;`) that some path from its start to a `ret` does not write, of those
/// some instruction writes. (A vector's store writes none of them: what it passes is unknown.)
pub(crate) fn unwritten_results(steps: &[Step]) -> BTreeSet<Place> {
    let results: Vec<Place> = steps
        .iter()
        .filter_map(|step| match step {
            Step::Do(statement) => result_place(statement),
            Step::Label(_) => None,
        })
        .collect();
    let returns = |statement: &Statement| if statement.kind() == "ret" { results.clone() } else { Vec::new() };
    read_first(steps, &|s| result_place(s).into_iter().collect(), &returns)
}

/// The place a store to the function's result writes (`(8, 8)` of `st.param.b64 [func_retval0+8]`).
fn result_place(statement: &Statement) -> Option<Place> {
    let address = statement.address().filter(|_| statement.space() == "param" && statement.writes_memory())?;
    let inside = address.trim_start_matches('[').trim_end_matches(']').strip_prefix("func_retval")?;
    let offset = inside.split_once('+').map_or(Some(0), |(_, offset)| offset.trim().parse().ok())?;
    Some((offset, scalar_bytes(&statement.op)?))
}

/// What some path of `steps` from the start reads (`reads`) before an instruction, unguarded,
/// writes it (`writes`), of what some instruction writes: found over the function's branches.
fn read_first<'s, K: Ord + Copy>(
    steps: &'s [Step],
    writes: &dyn Fn(&'s Statement) -> Vec<K>,
    reads: &dyn Fn(&'s Statement) -> Vec<K>,
) -> BTreeSet<K> {
    let blocks = blocks(steps);
    let written: BTreeSet<K> =
        blocks.iter().flat_map(|block| block.statements.iter()).flat_map(|s| writes(s)).collect();
    // Written on every path to each block's end: the most first, then less until nothing changes.
    let entry_in = BTreeSet::new();
    let mut out: Vec<BTreeSet<K>> = vec![written.clone(); blocks.len()];
    loop {
        let mut changed = false;
        for (index, block) in blocks.iter().enumerate() {
            let into = written_into(index, &blocks, &out, &entry_in);
            let after: BTreeSet<K> = into
                .into_iter()
                .chain(block.statements.iter().filter(|s| !s.guarded).flat_map(|s| writes(s)))
                .collect();
            if after != out[index] {
                out[index] = after;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let mut read_first = BTreeSet::new();
    for (index, block) in blocks.iter().enumerate() {
        let mut known = written_into(index, &blocks, &out, &entry_in);
        for statement in &block.statements {
            let unwritten = reads(statement).into_iter().filter(|r| written.contains(r) && !known.contains(r));
            read_first.extend(unwritten);
            if !statement.guarded {
                known.extend(writes(statement));
            }
        }
    }
    read_first
}

/// A run of instructions that only its first is branched to, and the blocks it may go to next.
struct Block<'s> {
    statements: Vec<&'s Statement>,
    next: Vec<usize>,
}

/// What is written on every path into block `index`: nothing into the first, else what every
/// block that goes to it wrote by its end (`out`).
fn written_into<K: Ord + Copy>(
    index: usize,
    blocks: &[Block],
    out: &[BTreeSet<K>],
    entry: &BTreeSet<K>,
) -> BTreeSet<K> {
    if index == 0 {
        return entry.clone();
    }
    let mut before =
        blocks.iter().enumerate().filter(|(_, block)| block.next.contains(&index)).map(|(from, _)| &out[from]);
    let Some(first) = before.next() else { return out[index].clone() };
    before.fold(first.clone(), |all, more| all.intersection(more).copied().collect())
}

/// `steps` cut into blocks at each label and after each branch, return or exit.
fn blocks(steps: &[Step]) -> Vec<Block<'_>> {
    let mut cut: Vec<(Vec<&str>, Vec<&Statement>)> = vec![(Vec::new(), Vec::new())];
    for step in steps {
        match step {
            Step::Label(label) => {
                if !cut.last().is_some_and(|(_, statements)| statements.is_empty()) {
                    cut.push((Vec::new(), Vec::new()));
                }
                cut.last_mut().expect("a block").0.push(label);
            }
            Step::Do(statement) => {
                cut.last_mut().expect("a block").1.push(statement);
                if ["bra", "brx", "ret", "exit", "trap"].contains(&statement.kind()) {
                    cut.push((Vec::new(), Vec::new()));
                }
            }
        }
    }
    let at: BTreeMap<&str, usize> = cut
        .iter()
        .enumerate()
        .flat_map(|(index, (labels, _))| labels.iter().map(move |label| (*label, index)))
        .collect();
    let count = cut.len();
    cut.into_iter()
        .enumerate()
        .map(|(index, (_, statements))| {
            let fall_through = (index + 1 < count).then_some(index + 1);
            let next = match statements.last() {
                // (A branch through a table of labels may go to any.)
                Some(last) if last.kind() == "brx" => at.values().copied().chain(fall_through).collect(),
                Some(last) if last.kind() == "bra" => {
                    let target = last.operands.first().and_then(|label| at.get(label.as_str()).copied());
                    let target: Vec<usize> = match target {
                        Some(target) => vec![target],
                        None => at.values().copied().collect(),
                    };
                    target.into_iter().chain(fall_through.filter(|_| last.guarded)).collect()
                }
                Some(last) if ["ret", "exit", "trap"].contains(&last.kind()) => {
                    fall_through.filter(|_| last.guarded).into_iter().collect()
                }
                _ => fall_through.into_iter().collect(),
            };
            Block { statements, next }
        })
        .collect()
}

/// The registers `statement` writes: its first operand's, unless that is an address or a call's
/// results (`{%r1, %r2}` of a vector load, `%p1|%p2` of `setp`).
fn writes(statement: &Statement) -> impl Iterator<Item = &str> {
    let destination = statement.operands.first().filter(|d| !d.starts_with(['[', '(']));
    destination.into_iter().flat_map(|d| words(d)).filter(|w| w.starts_with('%'))
}

/// The registers `statement` reads: every operand's but those it writes.
fn reads(statement: &Statement) -> impl Iterator<Item = &str> {
    let skip = usize::from(statement.operands.first().is_some_and(|d| !d.starts_with(['[', '('])));
    statement.operands.iter().skip(skip).flat_map(|o| words(o)).filter(|w| w.starts_with('%'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loops_pointer_made_at_the_end_of_each_turn_is_read_before_it_is_written() {
        // `p` made after its use in the loop; `%r1` and `%rd2` made before it.
        let body = "mov.u32 %r1, 0;\nmov.u64 %rd2, table;\n$L__BB0_1:\nld.global.u32 %r2, [%rd1+4];\n\
                    mov.u64 %rd1, %rd2;\nadd.s32 %r1, %r1, 1;\nsetp.lt.u32 %p1, %r1, 2;\n@%p1 bra $L__BB0_1;\nret;\n";
        assert_eq!(registers(body), BTreeSet::from(["%rd1".to_owned()]));
        // Made before the loop too, it is written on every path.
        let made_first = body.replace("$L__BB0_1:", "mov.u64 %rd1, %rd2;\n$L__BB0_1:");
        assert_eq!(registers(&made_first), BTreeSet::new());
    }

    #[test]
    fn a_register_written_on_one_branch_or_under_a_guard_may_be_read_unwritten() {
        // `if (c) x = 1; use(x)`: the branch over the write, and the write under a guard.
        let branch =
            "setp.eq.s32 %p1, %r9, 0;\n@%p1 bra $L__BB0_2;\nmov.u32 %r1, 1;\n$L__BB0_2:\nadd.s32 %r2, %r1, 1;\nret;\n";
        assert_eq!(registers(branch), BTreeSet::from(["%r1".to_owned()]));
        let guarded = "setp.eq.s32 %p1, %r9, 0;\n@%p1 mov.u32 %r1, 1;\nadd.s32 %r2, %r1, 1;\nret;\n";
        assert_eq!(registers(guarded), BTreeSet::from(["%r1".to_owned()]));
        // Written on both branches, then read: written on every path. (`%r9`, which nothing
        // writes, is known to hold 0 and is not told.)
        let both = "setp.eq.s32 %p1, %r9, 0;\n@%p1 bra $L__BB0_2;\nmov.u32 %r1, 1;\nbra.uni $L__BB0_3;\n\
                    $L__BB0_2:\nmov.u32 %r1, 2;\n$L__BB0_3:\nadd.s32 %r2, %r1, 1;\nret;\n";
        assert_eq!(registers(both), BTreeSet::new());
        // A vector load writes each of its registers; a store writes none.
        let vector = "ld.global.v2.u32 {%r1, %r2}, [%rd9];\nst.global.u32 [%rd9], %r2;\nadd.s32 %r3, %r1, %r2;\n";
        assert_eq!(registers(vector), BTreeSet::new());
    }
}
