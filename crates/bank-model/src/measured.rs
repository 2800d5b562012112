//! The measurements the rules were drawn from (`data/h100-wavefronts.tsv`, the course's reference
//! patterns, and `data/h100/*.tsv` and `data/h200/*.tsv`, one table per probe design and seed, on
//! an H100 and, for the newest, an H200: the same GH100 chip and SM), the rule class of
//! every instruction, and the sample of them that `cargo xtask calibrate` measures again on
//! another GPU.

use serde::{Deserialize, Serialize};

use crate::{Op, Request, Width, batch, rules};

/// One measured table: its name and its text (the `probe` format).
pub struct Table {
    pub name: &'static str,
    pub text: &'static str,
}

macro_rules! table {
    ($name:literal) => {
        table!("h100", $name)
    };
    ($gpu:literal, $name:literal) => {
        Table { name: $name, text: include_str!(concat!("../data/", $gpu, "/", $name, ".tsv")) }
    };
}

/// Every measured table, the reference patterns first; each file's first line names its GPU,
/// driver and ncu. The `-seed2` to `-seed9` tables are fresh random draws measured after the
/// rules were written down: the check that they hold.
pub const HOPPER: &[Table] = &[
    Table { name: "reference", text: include_str!("../data/h100-wavefronts.tsv") },
    table!("earlier-tables"),
    table!("pair-masks"),
    table!("group-assignments"),
    table!("one-lane-off"),
    table!("active-count"),
    table!("random"),
    table!("matrix"),
    table!("copy-async"),
    table!("two-lanes"),
    table!("three-lanes"),
    table!("partial-halves"),
    table!("four-and-one"),
    table!("random-seed2"),
    table!("pair-masks-seed2"),
    table!("matrix-seed2"),
    table!("copy-async-seed2"),
    table!("random-seed3"),
    table!("pair-masks-seed3"),
    table!("matrix-seed3"),
    table!("copy-async-seed3"),
    table!("random-seed4"),
    table!("partial-halves-seed5"),
    table!("copy-chains"),
    table!("h200", "copy-positions"),
    table!("h200", "copy-random"),
    table!("h200", "copy-async-seed4"),
    table!("h200", "three-quarters"),
    table!("h200", "first-half-fill"),
    table!("h200", "neighbourhoods"),
    table!("h200", "partial-halves-seed6"),
    table!("h200", "partial-halves-seed7"),
    table!("h200", "partial-halves-seed8"),
    table!("h200", "partial-halves-seed9"),
    table!("h200", "random-seed5"),
];

/// The H200's tables measured again on the H100 (`data/h100-recheck/`): the two GPUs share the
/// GH100 chip, and a test demands that every count agrees.
pub const H100_RECHECKS: &[Table] = &[
    table!("h100-recheck", "copy-positions"),
    table!("h100-recheck", "copy-random"),
    table!("h100-recheck", "copy-async-seed4"),
    table!("h100-recheck", "three-quarters"),
    table!("h100-recheck", "first-half-fill"),
    table!("h100-recheck", "neighbourhoods"),
    table!("h100-recheck", "partial-halves-seed6"),
    table!("h100-recheck", "partial-halves-seed7"),
    table!("h100-recheck", "partial-halves-seed8"),
    table!("h100-recheck", "partial-halves-seed9"),
    table!("h100-recheck", "random-seed5"),
];

/// One measured instruction.
#[derive(Clone, Debug)]
pub struct Measurement {
    pub request: Request,
    pub tag: String,
    /// Wavefronts the GPU took.
    pub wavefronts: u32,
}

impl Table {
    /// The GPU its header names (`(NVIDIA H100 80GB HBM3, ...` gives `NVIDIA H100 80GB HBM3`).
    pub fn gpu(&self) -> &'static str {
        let header = self.text.lines().next().unwrap_or_default();
        header.split_once("(NVIDIA ").and_then(|(_, rest)| rest.split_once(',')).map_or("", |(gpu, _)| gpu)
    }

    /// The table's rows; the files are part of the crate, so a bad row is a bug, not input.
    pub fn rows(&self) -> impl Iterator<Item = Measurement> + '_ {
        batch::parse(self.text).map(|line| {
            let line = line.unwrap_or_else(|e| panic!("measured table {}: {e}", self.name));
            let wavefronts =
                line.extra[2].parse().unwrap_or_else(|_| panic!("{}:{}: wavefronts", self.name, line.line));
            Measurement { request: line.request, tag: line.extra[0].clone(), wavefronts }
        })
    }
}

/// The rule that decides an instruction's cost (see [`rules`]): what calibration reports by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum RuleClass {
    WholeWarp,
    Store8Halves,
    Store16Quarters,
    Load8Merged,
    Load8Halves,
    Load16OneAddress,
    Load16FirstHalfFree,
    Load16MergedHalf,
    Load16Quarters,
    Matrix,
    CopyAsync16,
    CopyAsync8,
    CopyAsync4,
}

impl RuleClass {
    pub const ALL: [RuleClass; 13] = [
        RuleClass::WholeWarp,
        RuleClass::Store8Halves,
        RuleClass::Store16Quarters,
        RuleClass::Load8Merged,
        RuleClass::Load8Halves,
        RuleClass::Load16OneAddress,
        RuleClass::Load16FirstHalfFree,
        RuleClass::Load16MergedHalf,
        RuleClass::Load16Quarters,
        RuleClass::Matrix,
        RuleClass::CopyAsync16,
        RuleClass::CopyAsync8,
        RuleClass::CopyAsync4,
    ];

    pub fn of(request: &Request) -> RuleClass {
        match (request.op, request.width) {
            (Op::CopyAsync, Width::W16) => return RuleClass::CopyAsync16,
            (Op::CopyAsync, Width::W8) => return RuleClass::CopyAsync8,
            (Op::CopyAsync, _) => return RuleClass::CopyAsync4,
            (Op::LoadMatrix { .. } | Op::StoreMatrix { .. }, _) => return RuleClass::Matrix,
            (_, Width::W1 | Width::W2 | Width::W4) => return RuleClass::WholeWarp,
            (Op::Store, Width::W8) => return RuleClass::Store8Halves,
            (Op::Store, _) => return RuleClass::Store16Quarters,
            _ => {}
        }
        // An 8- or 16-byte load: its class is how its pass groups came out.
        let groups = rules::pass_groups(request);
        let spans_halves = |lanes: u32| lanes & 0xffff != 0 && lanes >> 16 != 0;
        let merged = |lanes: u32| lanes.count_ones() > 8 || spans_quarters(lanes);
        match request.width {
            Width::W8 if groups.iter().any(|g| spans_halves(g.lanes.0)) => RuleClass::Load8Merged,
            Width::W8 => RuleClass::Load8Halves,
            _ if rules::one_address(request) => RuleClass::Load16OneAddress,
            _ if request.lanes[31].is_none() && groups.iter().any(|g| g.lanes.0 >> 16 == 0 && merged(g.lanes.0)) => {
                RuleClass::Load16FirstHalfFree
            }
            _ if groups.iter().any(|g| merged(g.lanes.0)) => RuleClass::Load16MergedHalf,
            _ => RuleClass::Load16Quarters,
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            RuleClass::WholeWarp => "1-, 2- and 4-byte loads and stores: the whole warp",
            RuleClass::Store8Halves => "8-byte stores: half-warps",
            RuleClass::Store16Quarters => "16-byte stores: quarter-warps",
            RuleClass::Load8Merged => "8-byte loads: lanes pair up, one wavefront",
            RuleClass::Load8Halves => "8-byte loads: half-warps",
            RuleClass::Load16OneAddress => "16-byte loads: one address, 16 lanes a wavefront",
            RuleClass::Load16FirstHalfFree => {
                "16-byte loads: lane 31 inactive, the first half-warp merged, paired or not"
            }
            RuleClass::Load16MergedHalf => "16-byte loads: a half-warp pairs up",
            RuleClass::Load16Quarters => "16-byte loads: quarter-warps",
            RuleClass::Matrix => "ldmatrix and stmatrix: one group per matrix",
            RuleClass::CopyAsync16 => "cp.async of 16 bytes: quarter-warps, one write per lane",
            RuleClass::CopyAsync8 => "cp.async of 8 bytes: half-warps, lanes of one source position in turn",
            RuleClass::CopyAsync4 => "cp.async of 4 bytes: the warp, lanes of one source position in turn",
        }
    }
}

fn spans_quarters(lanes: u32) -> bool {
    (0..4).filter(|q| lanes >> (8 * q) & 0xff != 0).count() > 1
}

/// Up to `per_class` measured instructions of every class, spread evenly over the
/// tables' rows: what `cargo xtask calibrate` measures on the reader's GPU.
pub fn calibration_sample(per_class: usize) -> Vec<Measurement> {
    let all: Vec<Measurement> = HOPPER.iter().flat_map(Table::rows).collect();
    let mut sample = Vec::new();
    for class in RuleClass::ALL {
        let members: Vec<&Measurement> = all.iter().filter(|m| RuleClass::of(&m.request) == class).collect();
        let step = members.len().div_ceil(per_class).max(1);
        sample.extend(members.into_iter().step_by(step).cloned());
    }
    sample
}

/// How one rule class fares against every instruction measured (H100 and H200).
#[derive(Clone, Debug)]
pub struct ClassEvidence {
    pub class: RuleClass,
    pub measured: usize,
    pub agree: usize,
}

/// Every rule class with its measured instructions and how many the model's count equals.
pub fn evidence() -> Vec<ClassEvidence> {
    let mut classes: Vec<ClassEvidence> =
        RuleClass::ALL.into_iter().map(|class| ClassEvidence { class, measured: 0, agree: 0 }).collect();
    for m in HOPPER.iter().flat_map(Table::rows) {
        let entry = &mut classes[RuleClass::ALL.iter().position(|&c| c == RuleClass::of(&m.request)).expect("listed")];
        entry.measured += 1;
        entry.agree += usize::from(m.request.wavefronts() == m.wavefronts);
    }
    classes
}

/// What calibration found for one class on one GPU.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassAgreement {
    pub class: RuleClass,
    pub agree: usize,
    pub measured: usize,
}

/// The result of `cargo xtask calibrate` on one GPU: the small profile file lessons read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Calibration {
    pub gpu: String,
    pub driver: String,
    pub ncu: String,
    pub date: String,
    pub classes: Vec<ClassAgreement>,
}

impl Calibration {
    /// One line: every class agrees, or which classes do not.
    pub fn summary(&self) -> String {
        let agree: usize = self.classes.iter().map(|c| c.agree).sum();
        let measured: usize = self.classes.iter().map(|c| c.measured).sum();
        let differ: Vec<String> = self
            .classes
            .iter()
            .filter(|c| c.agree < c.measured)
            .map(|c| format!("{} ({}/{})", c.class.describe(), c.agree, c.measured))
            .collect();
        match differ.is_empty() {
            true => {
                format!("Bank model verified on this GPU: {agree}/{measured} (cargo xtask calibrate, {})", self.date)
            }
            false => format!(
                "Bank model checked on this GPU: {agree}/{measured} agree; differs in {} (cargo xtask calibrate, {})",
                differ.join("; "),
                self.date
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sample_covers_every_class_and_holds_the_h100_exactly() {
        let sample = calibration_sample(40);
        for class in RuleClass::ALL {
            let members = sample.iter().filter(|m| RuleClass::of(&m.request) == class).count();
            assert!((10..=40).contains(&members), "{class:?}: {members}");
        }
        assert!(sample.iter().all(|m| m.request.wavefronts() == m.wavefronts));
    }

    #[test]
    fn every_class_is_measured_and_agrees_on_every_instruction() {
        for class in evidence() {
            assert!(class.measured > 0, "{:?} was never measured", class.class);
            assert_eq!(class.agree, class.measured, "{:?}", class.class);
        }
    }

    #[test]
    fn the_summary_names_the_classes_that_differ() {
        let calibration = |agree| Calibration {
            gpu: "GPU".into(),
            driver: "1".into(),
            ncu: "2".into(),
            date: "2026-11-23".into(),
            classes: vec![
                ClassAgreement { class: RuleClass::WholeWarp, agree: 40, measured: 40 },
                ClassAgreement { class: RuleClass::Load8Merged, agree, measured: 40 },
            ],
        };
        assert_eq!(
            calibration(40).summary(),
            "Bank model verified on this GPU: 80/80 (cargo xtask calibrate, 2026-11-23)"
        );
        assert_eq!(
            calibration(37).summary(),
            "Bank model checked on this GPU: 77/80 agree; differs in 8-byte loads: lanes pair up, one wavefront (37/40) \
             (cargo xtask calibrate, 2026-11-23)"
        );
    }
}
