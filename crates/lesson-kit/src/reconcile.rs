//! The subtlest check of the course: a run's declared accesses against ncu's counts, in total
//! and access by access, where one machine instruction in a loop may run several declared
//! accesses of different costs.

use std::collections::{BTreeMap, BTreeSet};

use bank_model::describe;
use cuda_kernels::ncu::{SharedCounters, SharedFamily, SharedInstruction};

use crate::{
    lesson::{KernelRun, family_of},
    mismatch::Mismatch,
};

impl<S> KernelRun<S> {
    /// Compares what the run declared with what ncu measured: the kernel's totals of each kind of
    /// shared-memory instruction, then each declared access against the machine instructions of
    /// the same kind and cost. Every difference is a row naming the run and the access.
    pub fn check_counters(&self, totals: &SharedCounters, instructions: &[SharedInstruction]) -> Vec<Mismatch> {
        let mut mismatches = Vec::new();
        for family in SharedFamily::ALL {
            let (want_wavefronts, want_executed) = self.predicted_family(family);
            let measured = totals.of(family);
            // LDS and STS totals are always compared; the others where declared or counted.
            let compared = matches!(family, SharedFamily::Lds | SharedFamily::Sts)
                || want_executed > 0
                || measured.is_some_and(|(_, executed)| executed > 0);
            if compared && measured != Some((want_wavefronts, want_executed)) {
                mismatches.push(Mismatch {
                    run: self.label.clone(),
                    access: format!("every {} (kernel totals)", noun(family)),
                    declared: format!("{want_executed} instructions, {}", describe::wavefronts(want_wavefronts)),
                    measured: match measured {
                        Some((wavefronts, executed)) => {
                            format!("{executed} instructions, {}", describe::wavefronts(wavefronts))
                        }
                        None => "not counted (ncu was not asked for these totals)".into(),
                    },
                });
            }
        }
        let mut declared: ByCost = BTreeMap::new();
        for access in &self.accesses {
            let cost = Cost::new(access.request.analyze().wavefronts as u64, 1);
            let entry = declared.entry((family_of(access.request.op), cost)).or_default();
            entry.0 += access.executions;
            entry.1.push(&access.name);
        }
        let measured = by_cost(instructions);
        for family in SharedFamily::ALL {
            // Machine instructions whose cost equals a declared access's account for it; what is
            // left on either side must balance: one instruction in a loop can run several
            // declared accesses of different costs, and then its cost is their average.
            let (mut declared_left, mut measured_left) = (Unmatched::default(), Unmatched::default());
            // Declared accesses whose cost has more executions than declared.
            let mut outnumbered = Vec::new();
            let costs: BTreeSet<Cost> =
                declared.keys().chain(measured.keys()).filter(|(f, _)| *f == family).map(|&(_, cost)| cost).collect();
            for cost in costs {
                let (declared, accesses) = declared.get(&(family, cost)).cloned().unwrap_or_default();
                let (measured, sass) = measured.get(&(family, cost)).cloned().unwrap_or_default();
                if declared > measured {
                    declared_left.add(cost, declared - measured, accesses);
                } else if measured > declared {
                    measured_left.add(cost, measured - declared, sass);
                    outnumbered.extend(accesses);
                }
            }
            let balanced = (declared_left.executions, declared_left.wavefronts)
                == (measured_left.executions, measured_left.wavefronts)
                && measured_left.costs.iter().all(|cost| declared_left.spans(*cost));
            if !balanced {
                let name = noun(family);
                mismatches.push(Mismatch {
                    run: self.label.clone(),
                    access: match [declared_left.names.as_slice(), &outnumbered].concat() {
                        accesses if accesses.is_empty() => {
                            format!("(no declared {name}; machine code: {})", measured_left.names.join("; "))
                        }
                        accesses => accesses.join("; "),
                    },
                    declared: declared_left.describe(name),
                    measured: measured_left.describe(name),
                });
            }
        }
        mismatches
    }
}

/// How mismatch rows name one instruction of `family`; its plural adds an s.
fn noun(family: SharedFamily) -> &'static str {
    match family {
        SharedFamily::Lds => "load",
        SharedFamily::Sts => "store",
        SharedFamily::Ldsm => "matrix load",
        SharedFamily::Stsm => "matrix store",
        SharedFamily::Ldgsts => "cp.async store",
    }
}

/// Executions at each (kind, wavefronts per request), and the accesses or instructions behind them.
pub(crate) type ByCost<'a> = BTreeMap<(SharedFamily, Cost), (u64, Vec<&'a str>)>;

/// ncu's per-instruction counts, grouped by kind and cost.
pub(crate) fn by_cost(instructions: &[SharedInstruction]) -> ByCost<'_> {
    let mut grouped: ByCost = BTreeMap::new();
    for instruction in instructions {
        let entry =
            grouped.entry((instruction.family(), Cost::new(instruction.wavefronts, instruction.executed))).or_default();
        entry.0 += instruction.executed;
        entry.1.push(&instruction.sass);
    }
    grouped
}

/// Executions not matched one to one, on the declared or the measured side.
#[derive(Default)]
struct Unmatched<'a> {
    executions: u64,
    wavefronts: u64,
    costs: Vec<Cost>,
    /// The declared accesses, or the machine instructions.
    names: Vec<&'a str>,
}

impl<'a> Unmatched<'a> {
    fn add(&mut self, cost: Cost, executions: u64, names: Vec<&'a str>) {
        self.executions += executions;
        self.wavefronts += executions * cost.wavefronts / cost.requests;
        self.costs.push(cost);
        self.names.extend(names);
    }

    /// Whether an average of these costs could come out as `cost`.
    fn spans(&self, cost: Cost) -> bool {
        let per_request = |c: &Cost| c.wavefronts as f64 / c.requests as f64;
        let lowest = self.costs.iter().map(per_request).fold(f64::INFINITY, f64::min);
        let highest = self.costs.iter().map(per_request).fold(f64::NEG_INFINITY, f64::max);
        (lowest..=highest).contains(&per_request(&cost))
    }

    fn describe(&self, name: &str) -> String {
        let costs: Vec<String> = self.costs.iter().map(Cost::to_string).collect();
        match costs.len() {
            0 => format!("0 {name}s"),
            1 => format!("{} {name}s at {} each", self.executions, describe::wavefronts(&costs[0])),
            _ => format!(
                "{} {name}s, {}, at {} wavefronts each",
                self.executions,
                describe::wavefronts(self.wavefronts),
                costs.join(" or ")
            ),
        }
    }
}

/// Wavefronts per request as an exact fraction (a machine instruction may mix costs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Cost {
    wavefronts: u64,
    requests: u64,
}

impl Cost {
    fn new(wavefronts: u64, requests: u64) -> Cost {
        let divisor = bank_model::gcd(wavefronts, requests).max(1);
        Cost { wavefronts: wavefronts / divisor, requests: requests / divisor }
    }
}

impl std::fmt::Display for Cost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.requests {
            1 => write!(f, "{}", self.wavefronts),
            requests => write!(f, "{:.2}", self.wavefronts as f64 / requests as f64),
        }
    }
}

#[cfg(test)]
mod tests {
    use bank_model::{Matrices, Op, Request, Width};

    use super::*;
    use crate::{
        lesson::{DeclaredAccess, tests::transpose_like},
        mismatch::mismatch_table,
    };

    fn instruction(sass: &str, executed: u64, wavefronts: u64) -> SharedInstruction {
        SharedInstruction { sass: sass.into(), executed, wavefronts }
    }

    const TOTALS: SharedCounters = SharedCounters {
        load_wavefronts: 2048,
        load_instructions: 64,
        store_wavefronts: 64,
        store_instructions: 64,
        matrix_and_async: [None; 3],
    };

    #[test]
    fn unrolled_instructions_of_the_declared_cost_match() {
        let machine_code = [
            instruction("STS [R1], R2", 64, 64),
            instruction("LDS R3, [R4]", 32, 1024),
            instruction("LDS R5, [R4+0x80]", 32, 1024),
        ];
        assert_eq!(transpose_like().check_counters(&TOTALS, &machine_code), []);
    }

    #[test]
    fn an_access_of_another_cost_is_named_even_when_the_totals_agree() {
        // Half the column reads cost 1 and half 63: same totals, different accesses.
        let machine_code = [
            instruction("STS [R1], R2", 64, 64),
            instruction("LDS R3, [R4]", 32, 32),
            instruction("LDS R5, [R6]", 32, 2016),
        ];
        let mismatches = transpose_like().check_counters(&TOTALS, &machine_code);
        let table = mismatch_table(&mismatches);
        assert_eq!(mismatches.len(), 1, "{table}");
        assert_eq!(mismatches[0].access, "out = tile[tx][ty]", "{table}");
        assert_eq!(mismatches[0].declared, "64 loads at 32 wavefronts each");
        assert_eq!(mismatches[0].measured, "64 loads, 2048 wavefronts, at 1 or 63 wavefronts each");
    }

    #[test]
    fn a_loop_instruction_may_mix_declared_costs() {
        // One LDS in a loop runs both declared reads: 32 at 1 wavefront and 32 at 32 (average 16.5).
        let mut run = transpose_like();
        run.accesses[1].executions = 32;
        run.accesses.push(DeclaredAccess {
            name: "out = tile[ty][tx]".into(),
            request: Request::strided(Op::Load, Width::W4, 1).unwrap(),
            executions: 32,
        });
        let totals = SharedCounters { load_wavefronts: 1056, ..TOTALS };
        let mixed = [instruction("STS [R1], R2", 64, 64), instruction("LDS R3, [R4]", 64, 1056)];
        assert_eq!(run.check_counters(&totals, &mixed), []);
        let wrong_mix = [instruction("STS [R1], R2", 64, 64), instruction("LDS R3, [R4]", 64, 1024)];
        let mismatches = run.check_counters(&totals, &wrong_mix);
        assert_eq!(mismatches.len(), 1, "{}", mismatch_table(&mismatches));
        assert_eq!(mismatches[0].access, "out = tile[ty][tx]; out = tile[tx][ty]");
        assert_eq!(mismatches[0].declared, "64 loads, 1056 wavefronts, at 1 or 32 wavefronts each");
        assert_eq!(mismatches[0].measured, "64 loads at 16 wavefronts each");
        let machine_code = [instruction("STS [R1], R2", 64, 64), instruction("LDS R3, [R4]", 64, 2048)];
        let beyond = run.check_counters(&SharedCounters { load_wavefronts: 2048, ..TOTALS }, &machine_code);
        assert_eq!(beyond.len(), 2, "totals, and an average of 1 and 32 that is 32: {}", mismatch_table(&beyond));
    }

    #[test]
    fn different_totals_are_reported_per_op() {
        let totals = SharedCounters { store_instructions: 128, store_wavefronts: 128, ..TOTALS };
        let machine_code = [instruction("STS [R1], R2", 128, 128), instruction("LDS R3, [R4]", 64, 2048)];
        let mismatches = transpose_like().check_counters(&totals, &machine_code);
        assert_eq!(mismatches[0].access, "every store (kernel totals)");
        assert_eq!(mismatches[0].measured, "128 instructions, 128 wavefronts");
        assert_eq!(mismatches[1].access, "tile[ty][tx] = in");
        assert_eq!(mismatches.len(), 2);
    }

    /// A warp's ldmatrix.x4 of a tile with rows of 128 bytes: 8-way (32 wavefronts), executed 16 times.
    fn matrix_run() -> KernelRun<()> {
        let op = Op::LoadMatrix { matrices: Matrices::X4, trans: false };
        let request = Request::bytes(op, Width::W16, |lane| 128 * (lane % 16) + 16 * (lane / 16)).unwrap();
        KernelRun {
            label: "ldmatrix rows of 128 bytes".into(),
            kernel: Some("reads"),
            accesses: vec![DeclaredAccess { name: "ldmatrix_x4(tile + 128 row)".into(), request, executions: 16 }],
            spec: (),
        }
    }

    #[test]
    fn matrix_loads_reconcile_with_their_own_totals() {
        let run = matrix_run();
        assert_eq!(run.predicted_family(SharedFamily::Ldsm), (512, 16));
        let totals = SharedCounters {
            load_wavefronts: 0,
            load_instructions: 0,
            store_wavefronts: 0,
            store_instructions: 0,
            matrix_and_async: [Some((512, 16)), Some((0, 0)), Some((0, 0))],
        };
        let machine_code = [instruction("LDSM.16.M88.4 R4, [R2]", 16, 512)];
        assert_eq!(run.check_counters(&totals, &machine_code), []);

        let conflict_free = SharedCounters { matrix_and_async: [Some((64, 16)), Some((0, 0)), Some((0, 0))], ..totals };
        let mismatches = run.check_counters(&conflict_free, &[instruction("LDSM.16.M88.4 R4, [R2]", 16, 64)]);
        let table = mismatch_table(&mismatches);
        assert_eq!(mismatches.len(), 2, "{table}");
        assert_eq!(mismatches[0].access, "every matrix load (kernel totals)");
        assert_eq!(mismatches[0].measured, "16 instructions, 64 wavefronts");
        assert_eq!(mismatches[1].declared, "16 matrix loads at 32 wavefronts each");
        assert_eq!(mismatches[1].measured, "16 matrix loads at 4 wavefronts each");

        let uncounted = SharedCounters { matrix_and_async: [None; 3], ..totals };
        let mismatches = run.check_counters(&uncounted, &machine_code);
        assert_eq!(mismatches[0].measured, "not counted (ncu was not asked for these totals)");
    }

    #[test]
    fn costs_are_exact_fractions() {
        assert_eq!(Cost::new(96, 64).to_string(), "1.50");
        assert_eq!(Cost::new(2048, 64), Cost::new(32, 1));
    }
}
