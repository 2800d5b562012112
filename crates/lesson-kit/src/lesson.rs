//! The shape every lesson has: its declared kernel runs, each listing the shared-memory
//! instructions it executes ([`DeclaredAccess`]: the access, as a [`Request`] for the model, and
//! how many times a warp executes it), how to launch and check them, and what it reports.
//! `runner` puts the model, Nsight Compute's counters and the clock side by side;
//! `reconcile` compares the declared accesses with the counters; `declarations` checks a
//! lesson without a GPU.

use bank_model::{Op, Request};
use cuda_kernels::{
    Gpu, GpuError, GpuInfo, Occupancy,
    ncu::{SharedCounters, SharedFamily, SharedInstruction, per_request},
    timing::Timing,
};
use serde::Serialize;

use crate::{chart::Chart, figures::Figure, figures::Series, mismatch::Mismatch, report::Report};

/// A headline figure that divides the median times of two runs, named by their labels.
#[derive(Clone, Copy, Debug)]
pub struct TimeRatio {
    pub key: &'static str,
    pub label: &'static str,
    /// The run whose time is divided, usually the slower one.
    pub numerator: &'static str,
    pub denominator: &'static str,
}

impl TimeRatio {
    /// The figure, when both runs were measured.
    pub fn figure<S>(&self, results: &[TimedRun<S>]) -> Option<Figure> {
        let time = |label| results.iter().find(|m| m.run.label == label).map(|m| m.timing.median_ms);
        let value = time(self.numerator)? / time(self.denominator)?;
        Some(Figure { key: self.key, label: self.label.into(), value, unit: "x" })
    }

    /// The labels it names that no run has.
    pub fn missing_runs<S>(&self, runs: &[KernelRun<S>]) -> Vec<&'static str> {
        [self.numerator, self.denominator].into_iter().filter(|&label| runs.iter().all(|r| r.label != label)).collect()
    }
}

/// One shared-memory instruction of a kernel, as the model sees it.
#[derive(Clone, Debug)]
pub struct DeclaredAccess {
    /// How the source writes it, e.g. `tile[(lane + 32 * r) * stride]`.
    pub name: String,
    pub request: Request,
    /// Warp-level executions of the instruction in one launch.
    pub executions: u64,
}

impl DeclaredAccess {
    /// One access per run of neighbouring warps whose requests cost the same, each warp of a run
    /// executing it once per block: `requests` are the warps' requests in order, a warp that skips
    /// the instruction left out; `name(first, last)` names the run of warps `first` to `last`.
    pub fn per_warp_group(
        blocks: u32,
        requests: impl IntoIterator<Item = (u32, Request)>,
        name: impl Fn(u32, u32) -> String,
    ) -> Vec<DeclaredAccess> {
        let mut groups: Vec<(u32, u32, Request, u32)> = Vec::new();
        for (warp, request) in requests {
            let wavefronts = request.analyze().wavefronts;
            match groups.last_mut() {
                Some((_, last, _, cost)) if *last + 1 == warp && *cost == wavefronts => *last = warp,
                _ => groups.push((warp, warp, request, wavefronts)),
            }
        }
        groups
            .into_iter()
            .map(|(first, last, request, _)| DeclaredAccess {
                name: name(first, last),
                request,
                executions: blocks as u64 * (last - first + 1) as u64,
            })
            .collect()
    }
}

/// One kernel launch a lesson makes, with lesson-specific parameters `S`.
#[derive(Clone, Debug)]
pub struct KernelRun<S> {
    /// Shown in tables, e.g. `stride_read_4 stride=2`.
    pub label: String,
    /// The `extern "C"` kernel name, as ncu reports it; `None` for work that is not a kernel of
    /// the course (a driver copy), which is timed but not profiled.
    pub kernel: Option<&'static str>,
    pub accesses: Vec<DeclaredAccess>,
    pub spec: S,
}

impl<S> KernelRun<S> {
    /// Declared (wavefronts, instructions) of the accesses whose op is `kept`.
    fn declared(&self, kept: impl Fn(Op) -> bool) -> (u64, u64) {
        self.accesses
            .iter()
            .filter(|a| kept(a.request.op))
            .fold((0, 0), |(w, i), a| (w + a.executions * a.request.analyze().wavefronts as u64, i + a.executions))
    }

    /// Declared (wavefronts, instructions) for loads or stores.
    pub fn predicted(&self, op: Op) -> (u64, u64) {
        self.declared(|o| o == op)
    }

    /// Declared (wavefronts, instructions) of one kind of machine instruction.
    pub fn predicted_family(&self, family: SharedFamily) -> (u64, u64) {
        self.declared(|o| family_of(o) == family)
    }

    /// The kinds of machine instruction the run declares.
    pub fn families(&self) -> Vec<SharedFamily> {
        SharedFamily::ALL.into_iter().filter(|&f| self.predicted_family(f).1 > 0).collect()
    }

    /// Declared wavefronts beyond the ideal, loads and stores: the exact count of bank conflicts.
    pub fn predicted_excess(&self) -> u64 {
        self.accesses.iter().map(|a| a.executions * a.request.analyze().excess as u64).sum()
    }

    /// Declared wavefronts per instruction for `op`, `None` when the kernel declares none.
    pub fn predicted_per_request(&self, op: Op) -> Option<f64> {
        per_request(self.predicted(op))
    }

    /// Declared wavefronts per instruction of `family`, `None` when the kernel declares none.
    pub fn predicted_family_per_request(&self, family: SharedFamily) -> Option<f64> {
        per_request(self.predicted_family(family))
    }
}

/// The machine instruction an access of `op` compiles to, as ncu counts it.
pub fn family_of(op: Op) -> SharedFamily {
    match op {
        Op::Load => SharedFamily::Lds,
        Op::Store => SharedFamily::Sts,
        Op::LoadMatrix { .. } => SharedFamily::Ldsm,
        Op::StoreMatrix { .. } => SharedFamily::Stsm,
        Op::CopyAsync => SharedFamily::Ldgsts,
    }
}

/// How big a run is: one quick launch for the profiler, or the full size for the clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunSize {
    Profile,
    Timed,
}

/// How a run's output passed its check.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum OutputCheck {
    /// Equal to the reference bit for bit; the CRC-32 of its bytes.
    Exact { crc32: u32 },
    /// Floating-point results within a relative tolerance of `reference`.
    Within { tolerance: f64, reference: &'static str },
}

impl OutputCheck {
    /// An exact match of these 4-byte values.
    pub fn exact<T: Copy + Into<u32>>(values: &[T]) -> OutputCheck {
        let mut hasher = crc32fast::Hasher::new();
        for &value in values {
            hasher.update(&value.into().to_le_bytes());
        }
        OutputCheck::Exact { crc32: hasher.finalize() }
    }
}

impl std::fmt::Display for OutputCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OutputCheck::Exact { crc32 } => write!(f, "exact, crc32 {crc32:08x}"),
            OutputCheck::Within { tolerance, reference } => write!(f, "within {tolerance:.0e} of {reference}"),
        }
    }
}

/// A kernel run with its buffers allocated, ready to launch again and again.
pub trait Prepared {
    /// Enqueues one launch.
    fn launch(&mut self) -> Result<(), GpuError>;
    /// Compares the output with a CPU reference: `GpuError::WrongResult` when it differs.
    fn check(&mut self) -> Result<OutputCheck, GpuError>;
    /// How the launch fills an SM, for kernels that report it.
    fn occupancy(&self) -> Option<Result<Occupancy, GpuError>> {
        None
    }
}

/// What makes a lesson; see the module docs.
pub trait Lesson {
    type Spec: Clone;
    const NUMBER: u32;
    const TITLE: &'static str;
    /// The `kernels/` files whose kernels the runs name.
    const KERNEL_FILES: &'static [&'static str];
    /// The model's tables and explanations: everything that needs no GPU.
    fn model(&self, report: &mut Report);
    fn runs(&self, gpu: &GpuInfo, size: RunSize) -> Vec<KernelRun<Self::Spec>>;
    fn prepare<'g>(&self, gpu: &'g Gpu, run: &KernelRun<Self::Spec>) -> Result<Box<dyn Prepared + 'g>, GpuError>;
    /// What every kernel's output is checked against, as the report says it.
    fn reference(&self) -> &'static str {
        "its CPU reference"
    }
    /// Headline figures that divide the times of two of the lesson's runs.
    fn time_ratios(&self) -> &'static [TimeRatio] {
        &[]
    }
    /// Headline numbers of a GPU run that are not time ratios (bandwidths, shares of a peak).
    fn figures(&self, _gpu: &GpuInfo, _results: &[TimedRun<Self::Spec>]) -> Vec<Figure> {
        Vec::new()
    }
    /// Every headline number of a GPU run: `figures`, then the time ratios of the runs measured
    /// (each measured side by side in one run). Lessons override the parts, not this.
    fn all_figures(&self, gpu: &GpuInfo, results: &[TimedRun<Self::Spec>]) -> Vec<Figure> {
        let ratios = self.time_ratios().iter().filter_map(|ratio| ratio.figure(results));
        self.figures(gpu, results).into_iter().chain(ratios).collect()
    }
    /// The lesson's measured series, for charts (each from one run, side by side).
    fn series(&self, _gpu: &GpuInfo, _results: &[TimedRun<Self::Spec>]) -> Vec<Series> {
        Vec::new()
    }
    /// Charts of the lesson's series, drawn after its GPU run and on the book's results page.
    fn charts(&self) -> &'static [Chart] {
        &[]
    }
    /// Adds the lesson's own tables of measured results.
    fn summarize(&self, gpu: &GpuInfo, results: &[TimedRun<Self::Spec>], report: &mut Report);
}

/// A kernel run after the clock (and, where it could, ncu) had its say.
#[derive(Clone, Debug)]
pub struct TimedRun<S> {
    pub run: KernelRun<S>,
    pub timing: Timing,
    /// ncu's counters for the profile-size launch of the run, when they could be read.
    pub counters: Option<CounterCheck>,
    /// Blocks per SM and what limits them, for kernels that report it.
    pub occupancy: Option<Occupancy>,
}

/// Counters of the profile-size launch, and where they differ from what the lesson declared.
#[derive(Clone, Debug)]
pub struct CounterCheck {
    pub counters: SharedCounters,
    /// ncu's hardware bank-conflict counter (`l1tex__data_bank_conflicts_*`), loads and stores.
    pub hardware_conflicts: Option<u64>,
    /// The exact bank conflicts of the launch: declared wavefronts beyond the ideal, which the
    /// sass counters confirm whenever `mismatches` is empty.
    pub excess_wavefronts: u64,
    pub mismatches: Vec<Mismatch>,
    /// ncu's count of each shared-memory machine instruction.
    pub instructions: Vec<SharedInstruction>,
}

#[cfg(test)]
pub(crate) mod tests {
    use bank_model::Width;

    use super::*;

    /// A kernel that stores a row (1 wavefront) and reads a column (stride 32: 32 wavefronts).
    pub(crate) fn transpose_like() -> KernelRun<()> {
        let access = |name: &str, op, stride| DeclaredAccess {
            name: name.into(),
            request: Request::strided(op, Width::W4, stride).unwrap(),
            executions: 64,
        };
        KernelRun {
            label: "transpose n=32".into(),
            kernel: Some("transpose_naive"),
            accesses: vec![access("tile[ty][tx] = in", Op::Store, 1), access("out = tile[tx][ty]", Op::Load, 32)],
            spec: (),
        }
    }

    #[test]
    fn time_ratios_divide_the_runs_they_name() {
        let measured = |label: &str, median_ms| TimedRun {
            run: KernelRun { label: label.into(), kernel: None, accesses: Vec::new(), spec: () },
            timing: Timing::from_samples(vec![median_ms]).expect("one sample"),
            counters: None,
            occupancy: None,
        };
        let results = [measured("slow", 3.0), measured("fast", 1.5)];
        let ratio = TimeRatio { key: "k", label: "slow over fast", numerator: "slow", denominator: "fast" };
        assert_eq!(ratio.figure(&results).map(|f| f.value), Some(2.0));
        assert_eq!(ratio.missing_runs(&[results[0].run.clone()]), ["fast"]);
        assert_eq!(TimeRatio { denominator: "gone", ..ratio }.figure(&results), None);
    }

    #[test]
    fn warps_group_while_they_are_neighbours_of_one_cost() {
        let request = |stride| Request::strided(Op::Load, Width::W4, stride).unwrap();
        let warps = [(0, request(1)), (1, request(1)), (2, request(2)), (4, request(2)), (5, request(2))];
        let groups = DeclaredAccess::per_warp_group(3, warps, |first, last| format!("warps {first}-{last}"));
        let described: Vec<(&str, u64, u32)> =
            groups.iter().map(|a| (a.name.as_str(), a.executions, a.request.analyze().wavefronts)).collect();
        assert_eq!(described, [("warps 0-1", 6, 1), ("warps 2-2", 3, 2), ("warps 4-5", 6, 2)]);
    }

    #[test]
    fn exact_checks_tell_outputs_apart() {
        assert_ne!(OutputCheck::exact(&[1u32, 2]), OutputCheck::exact(&[2u32, 1]));
        assert_eq!(OutputCheck::exact(&[1u32, 2]), OutputCheck::exact(&[1u32, 2]));
    }
}
