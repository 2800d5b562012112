//! The shape every lesson has, and the run that shows model, counters and clock side by side.
//!
//! A lesson declares its kernel runs, and for each run the shared-memory instructions it
//! executes ([`DeclaredAccess`]: the access, as a [`Request`] for the model, and how many times
//! a warp executes it). The kit then
//! 1. prints the model's tables (no GPU needed),
//! 2. runs every kernel once under Nsight Compute (when available) and demands that the
//!    measured wavefronts and instruction counts equal the declared ones exactly, in total and
//!    access by access,
//! 3. times every kernel with CUDA events, checks its output against a CPU reference, and lets
//!    the lesson summarize.

use std::collections::BTreeMap;

use bank_model::{Op, Request, describe};
use cuda_kernels::{
    Gpu, GpuError, GpuInfo, Occupancy,
    ncu::{Ncu, NcuUnavailable, SelfCommand, SharedCounters, SharedInstruction},
    timing::{self, Plan, Timing},
};
use serde::{Deserialize, Serialize};

use crate::{
    plot::Plot,
    report::{Report, Styled, Tone, styled},
    words_kernel::with_fixed_inputs,
};

/// One headline number of a lesson's GPU run, for `cargo xtask bench` and the results file.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Figure {
    /// Stable identifier, e.g. `stride32_slowdown_throughput`.
    pub key: &'static str,
    pub label: String,
    pub value: f64,
    pub unit: &'static str,
}

/// Measured values of one quantity along one axis (per stride, per variant, per kernel), for the
/// book's charts and the results file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Stable identifier, e.g. `stride_slowdown_throughput`.
    pub key: String,
    /// What the values are, as a chart's legend says it.
    pub label: String,
    pub unit: String,
    /// In the order a chart shows them.
    pub points: Vec<Point>,
}

/// One value of a [`Series`] and where it stands on the axis: a stride, a variant, a kernel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub at: String,
    pub value: f64,
}

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
    pub fn figure<S>(&self, results: &[Measured<S>]) -> Option<Figure> {
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
    /// Declared (wavefronts, instructions) for loads or stores.
    pub fn predicted(&self, op: Op) -> (u64, u64) {
        self.accesses
            .iter()
            .filter(|a| a.request.op == op)
            .fold((0, 0), |(w, i), a| (w + a.executions * a.request.analyze().wavefronts as u64, i + a.executions))
    }

    /// Declared wavefronts beyond the ideal, loads and stores: the exact count of bank conflicts.
    pub fn predicted_excess(&self) -> u64 {
        self.accesses.iter().map(|a| a.executions * a.request.analyze().excess as u64).sum()
    }

    /// Declared wavefronts per instruction for `op`, `None` when the kernel declares none.
    pub fn predicted_per_request(&self, op: Op) -> Option<f64> {
        let (wavefronts, instructions) = self.predicted(op);
        (instructions > 0).then(|| wavefronts as f64 / instructions as f64)
    }

    /// Compares what the run declared with what ncu measured: the kernel's totals, then each
    /// declared access against the machine instructions of the same cost. Every difference is a
    /// row naming the run and the access.
    pub fn check_counters(&self, totals: &SharedCounters, instructions: &[SharedInstruction]) -> Vec<Mismatch> {
        let mut mismatches = Vec::new();
        for (op, wavefronts, executed) in [
            (Op::Load, totals.load_wavefronts, totals.load_instructions),
            (Op::Store, totals.store_wavefronts, totals.store_instructions),
        ] {
            let (want_wavefronts, want_executed) = self.predicted(op);
            if (wavefronts, executed) != (want_wavefronts, want_executed) {
                mismatches.push(Mismatch {
                    run: self.label.clone(),
                    access: format!("every {} (kernel totals)", op_name(op)),
                    declared: format!("{want_executed} instructions, {}", describe::wavefronts(want_wavefronts)),
                    measured: format!("{executed} instructions, {}", describe::wavefronts(wavefronts)),
                });
            }
        }
        let mut declared: ByCost = BTreeMap::new();
        for access in &self.accesses {
            let cost = Cost::new(access.request.analyze().wavefronts as u64, 1);
            let entry = declared.entry((access.request.op, cost)).or_default();
            entry.0 += access.executions;
            entry.1.push(&access.name);
        }
        let measured = by_cost(instructions);
        for op in [Op::Load, Op::Store] {
            // Machine instructions whose cost equals a declared access's account for it; what is
            // left on either side must balance: one instruction in a loop can run several
            // declared accesses of different costs, and then its cost is their average.
            let (mut declared_left, mut measured_left) = (Unmatched::default(), Unmatched::default());
            // Declared accesses whose cost has more executions than declared.
            let mut outnumbered = Vec::new();
            let costs: std::collections::BTreeSet<Cost> =
                declared.keys().chain(measured.keys()).filter(|(o, _)| *o == op).map(|&(_, cost)| cost).collect();
            for cost in costs {
                let (declared, accesses) = declared.get(&(op, cost)).cloned().unwrap_or_default();
                let (measured, sass) = measured.get(&(op, cost)).cloned().unwrap_or_default();
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
                let name = op_name(op);
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

fn op_name(op: Op) -> &'static str {
    if op.reads() { "load" } else { "store" }
}

/// Executions at each (op, wavefronts per request), and the accesses or instructions behind them.
type ByCost<'a> = BTreeMap<(Op, Cost), (u64, Vec<&'a str>)>;

/// ncu's per-instruction counts, grouped by cost.
fn by_cost(instructions: &[SharedInstruction]) -> ByCost<'_> {
    let mut grouped: ByCost = BTreeMap::new();
    for instruction in instructions {
        let op = if instruction.is_load() { Op::Load } else { Op::Store };
        let entry = grouped.entry((op, Cost::new(instruction.wavefronts, instruction.executed))).or_default();
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
struct Cost {
    wavefronts: u64,
    requests: u64,
}

impl Cost {
    fn new(wavefronts: u64, requests: u64) -> Cost {
        let divisor = gcd(wavefronts, requests).max(1);
        Cost { wavefronts: wavefronts / divisor, requests: requests / divisor }
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

impl std::fmt::Display for Cost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.requests {
            1 => write!(f, "{}", self.wavefronts),
            requests => write!(f, "{:.2}", self.wavefronts as f64 / requests as f64),
        }
    }
}

/// One difference between a run's declared accesses and ncu's counts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Mismatch {
    pub run: String,
    /// The declared accesses concerned, as the source writes them.
    pub access: String,
    pub declared: String,
    pub measured: String,
}

/// The mismatches as a plain table, for error messages.
pub fn mismatch_table(mismatches: &[Mismatch]) -> String {
    let mut report = Report::default();
    let rows = mismatches
        .iter()
        .map(|m| {
            vec![
                m.run.as_str().into(),
                m.access.as_str().into(),
                m.declared.as_str().into(),
                m.measured.as_str().into(),
            ]
        })
        .collect();
    report.table(["kernel run", "access", "declared", "ncu measured"], rows);
    report.render(false)
}

/// How big a run is: one quick launch for the profiler, or the full size for the clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
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
    fn number(&self) -> u32;
    fn title(&self) -> &'static str;
    /// The model's tables and explanations: everything that needs no GPU.
    fn model(&self, report: &mut Report);
    fn runs(&self, gpu: &GpuInfo, size: Size) -> Vec<KernelRun<Self::Spec>>;
    fn prepare<'g>(&self, gpu: &'g Gpu, run: &KernelRun<Self::Spec>) -> Result<Box<dyn Prepared + 'g>, GpuError>;
    /// What every kernel's output is checked against, as the report says it.
    fn reference(&self) -> &'static str {
        "its CPU reference"
    }
    /// Headline figures that divide the times of two of the lesson's runs.
    fn time_ratios(&self) -> &'static [TimeRatio] {
        &[]
    }
    /// The lesson's headline numbers from a GPU run (ratios measured side by side in one run).
    fn figures(&self, _gpu: &GpuInfo, results: &[Measured<Self::Spec>]) -> Vec<Figure> {
        self.time_ratios().iter().filter_map(|ratio| ratio.figure(results)).collect()
    }
    /// The lesson's measured series, for charts (each from one run, side by side).
    fn series(&self, _gpu: &GpuInfo, _results: &[Measured<Self::Spec>]) -> Vec<Series> {
        Vec::new()
    }
    /// Charts of the measured results, for lessons that draw them.
    fn plots(&self, _gpu: &GpuInfo, _results: &[Measured<Self::Spec>]) -> Result<Vec<Plot>, String> {
        Ok(Vec::new())
    }
    /// Adds the lesson's own tables of measured results.
    fn summarize(&self, gpu: &GpuInfo, results: &[Measured<Self::Spec>], report: &mut Report);
}

/// What is wrong with a lesson's declarations, found without a GPU: time ratios naming runs the
/// lesson does not have. Empty when all is well.
pub fn declaration_problems<L: Lesson>(lesson: &L, gpu: &GpuInfo) -> Vec<String> {
    let mut problems = Vec::new();
    let timed = lesson.runs(gpu, Size::Timed);
    for ratio in lesson.time_ratios() {
        for label in ratio.missing_runs(&timed) {
            problems.push(format!("figure `{}` names run `{label}`, which the lesson does not have", ratio.key));
        }
    }
    problems
}

/// A kernel run after the GPU had its say.
#[derive(Clone, Debug)]
pub struct Measured<S> {
    pub run: KernelRun<S>,
    pub timing: Timing,
    /// ncu's counters for the profile-size launch of the run, when they could be read.
    pub counters: Option<Counted>,
    /// Blocks per SM and what limits them, for kernels that report it.
    pub occupancy: Option<Occupancy>,
}

/// Counters of the profile-size launch, and where they differ from what the lesson declared.
#[derive(Clone, Debug)]
pub struct Counted {
    pub counters: SharedCounters,
    /// ncu's hardware bank-conflict counter (`l1tex__data_bank_conflicts_*`), loads and stores.
    pub hardware_conflicts: Option<u64>,
    /// The exact bank conflicts of the launch: declared wavefronts beyond the ideal, which the
    /// sass counters confirm whenever `mismatches` is empty.
    pub excess_wavefronts: u64,
    pub mismatches: Vec<Mismatch>,
}

/// Told `(label, index, total)` before each timed run.
pub type Progress = Box<dyn Fn(&str, usize, usize)>;

pub struct Options {
    /// `Some(reason)`: do not touch the GPU.
    pub skip_gpu: Option<String>,
    pub plan: Plan,
    /// `None`: do not profile.
    pub profile_with: Option<SelfCommand>,
    /// Shows progress while timing (a bar on a terminal).
    pub progress: Progress,
    /// The line that says whether the model was checked on the GPU of this name
    /// (`cargo xtask calibrate`).
    pub model_check: fn(gpu: &str) -> String,
}

/// The lesson's report, its charts, figures and series (when the GPU ran), and whether anything
/// went wrong on the GPU.
pub struct Outcome {
    pub report: Report,
    pub plots: Vec<Plot>,
    pub figures: Vec<Figure>,
    pub series: Vec<Series>,
    pub gpu: GpuStatus,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum GpuStatus {
    Skipped(String),
    Ran { gpu: GpuInfo, counters: CounterStatus },
    Failed(String),
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum CounterStatus {
    AllMatch,
    Skipped(String),
}

/// Runs a lesson: the model always, the GPU part where there is one.
pub fn run<L: Lesson>(lesson: &L, options: &Options) -> Outcome {
    let mut report = Report::default();
    report.heading(format!("Lesson {}: {}", lesson.number(), lesson.title()));
    lesson.model(&mut report);
    report.heading("On the GPU");
    let opened = match &options.skip_gpu {
        Some(reason) => Err(reason.clone()),
        None => Gpu::open().map_err(|e| e.to_string()),
    };
    let gpu = match opened {
        Ok(gpu) => gpu,
        Err(reason) => {
            report.text(format!("GPU runs skipped: {reason}."));
            let skipped = GpuStatus::Skipped(reason);
            return Outcome { report, plots: Vec::new(), figures: Vec::new(), series: Vec::new(), gpu: skipped };
        }
    };
    let mut outputs = Measurements::default();
    let status = match measure(lesson, &gpu, options, &mut report, &mut outputs) {
        Ok(counters) => GpuStatus::Ran { gpu: gpu.info().clone(), counters },
        Err(failure) => {
            report.text(format!("GPU run FAILED: {failure}"));
            GpuStatus::Failed(failure)
        }
    };
    let Measurements { plots, figures, series } = outputs;
    Outcome { report, plots, figures, series, gpu: status }
}

/// What a lesson draws and reports from its GPU run.
#[derive(Default)]
struct Measurements {
    plots: Vec<Plot>,
    figures: Vec<Figure>,
    series: Vec<Series>,
}

fn measure<L: Lesson>(
    lesson: &L,
    gpu: &Gpu,
    options: &Options,
    report: &mut Report,
    out: &mut Measurements,
) -> Result<CounterStatus, String> {
    let info = gpu.info();
    report.text(format!(
        "{} ({}, {} SMs, {} MHz, CUDA {} driver)",
        info.name,
        info.arch(),
        info.multiprocessors,
        info.clock_mhz,
        info.driver_cuda_version
    ));
    report.text(format!("{}.", (options.model_check)(&info.name)));
    let runs = lesson.runs(info, Size::Timed);
    let total = runs.len();
    (options.progress)("profiling under Nsight Compute", 0, total);
    let counters = match &options.profile_with {
        None => Err("not requested".to_owned()),
        Some(command) => profile(lesson, info, command).map_err(|e| e.to_string()),
    };
    let profile_runs = lesson.runs(info, Size::Profile);
    let mut measured = Vec::with_capacity(total);
    for (index, run) in runs.into_iter().enumerate() {
        (options.progress)(&run.label, index, total);
        let mut prepared = lesson.prepare(gpu, &run).map_err(|e| format!("{}: {e}", run.label))?;
        let timing =
            timing::time(gpu, options.plan, || prepared.launch()).map_err(|e| format!("{}: {e}", run.label))?;
        prepared.check().map_err(|e| format!("{}: {e}", run.label))?;
        let occupancy = prepared.occupancy().transpose().map_err(|e| format!("{}: {e}", run.label))?;
        let counters = counters.as_ref().ok().and_then(|all| {
            let profiled = all.iter().find(|p| p.label == run.label)?;
            let declared = profile_runs.iter().find(|r| r.label == profiled.label)?;
            Some(Counted {
                mismatches: declared.check_counters(&profiled.totals, &profiled.instructions),
                counters: profiled.totals,
                hardware_conflicts: profiled.hardware_conflicts,
                excess_wavefronts: declared.predicted_excess(),
            })
        });
        measured.push(Measured { run, timing, counters, occupancy });
    }
    let status = match &counters {
        Ok(_) => CounterStatus::AllMatch,
        Err(why) => CounterStatus::Skipped(why.clone()),
    };
    if let CounterStatus::Skipped(why) = &status {
        report.text(format!("Counters skipped: {why}. Showing the model and the clock only."));
    }
    report.text(format!("Every kernel's output matched {}.", lesson.reference()));
    lesson.summarize(info, &measured, report);
    out.plots = lesson.plots(info, &measured).map_err(|e| format!("drawing the charts: {e}"))?;
    out.figures = lesson.figures(info, &measured);
    out.series = lesson.series(info, &measured);
    let mismatches: Vec<Mismatch> =
        measured.iter().filter_map(|m| m.counters.as_ref()).flat_map(|c| c.mismatches.clone()).collect();
    match mismatches.is_empty() {
        true => Ok(status),
        false => Err(format!("model and ncu disagree:\n{}", mismatch_table(&mismatches))),
    }
}

/// Errors of the profiling step.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error(transparent)]
    Ncu(#[from] NcuUnavailable),
    #[error("{0}")]
    Launches(String),
}

/// ncu's counts for one profiled kernel run.
#[derive(Clone, Debug)]
pub struct Profiled {
    pub label: String,
    pub totals: SharedCounters,
    pub hardware_conflicts: Option<u64>,
    pub instructions: Vec<SharedInstruction>,
}

/// Runs the lesson's profile-size kernels under ncu: the counters of each kernel run.
pub fn profile<L: Lesson>(lesson: &L, info: &GpuInfo, command: &SelfCommand) -> Result<Vec<Profiled>, ProfileError> {
    let ncu = Ncu::find()?;
    let launches = ncu.profile(command)?;
    let runs: Vec<_> = lesson.runs(info, Size::Profile).into_iter().filter(|r| r.kernel.is_some()).collect();
    let kernels: Vec<&str> = launches.iter().map(|l| l.kernel.as_str()).collect();
    let expected: Vec<&str> = runs.iter().filter_map(|r| r.kernel).collect();
    if kernels != expected {
        return Err(ProfileError::Launches(format!(
            "the profiled program launched {kernels:?}, expected {expected:?}"
        )));
    }
    runs.into_iter()
        .zip(&launches)
        .map(|(run, launch)| {
            let totals = launch.shared().ok_or_else(|| {
                ProfileError::Launches(format!("ncu gave no shared-memory counters for {}", launch.kernel))
            })?;
            Ok(Profiled {
                label: run.label,
                totals,
                hardware_conflicts: launch.hardware_conflicts(),
                instructions: launch.instructions.clone(),
            })
        })
        .collect()
}

/// What the GPU suite snapshots of a lesson: everything about its profile-size runs that repeats
/// from run to run. No timings.
pub struct SuiteRecord {
    pub runs: usize,
    pub accesses: usize,
    /// Each run's output check (inputs from [`with_fixed_inputs`], so checksums repeat).
    pub outputs: Report,
    /// The model's cost of every declared access.
    pub model: Report,
    /// ncu's executions at each cost, per kernel run; or why the counters were skipped.
    pub counters: Result<Report, String>,
    pub mismatches: Vec<Mismatch>,
}

/// Runs a lesson's profile-size runs for the GPU suite: outputs, the model, and ncu's counts.
pub fn suite_record<L: Lesson>(lesson: &L, command: &SelfCommand) -> Result<SuiteRecord, String> {
    let gpu = Gpu::open().map_err(|e| e.to_string())?;
    let runs = lesson.runs(gpu.info(), Size::Profile);
    let checked = with_fixed_inputs(|| {
        runs.iter()
            .map(|run| {
                let mut prepared = lesson.prepare(&gpu, run)?;
                prepared.launch()?;
                prepared.check()
            })
            .zip(&runs)
            .map(|(check, run)| check.map_err(|e| format!("{}: {e}", run.label)))
            .collect::<Result<Vec<_>, _>>()
    })?;
    let mut outputs = Report::default();
    let rows = runs.iter().zip(&checked).map(|(run, check)| vec![run.label.as_str().into(), check.into()]).collect();
    outputs.table(["kernel run", "output"], rows);
    let mut model = Report::default();
    let rows = runs
        .iter()
        .flat_map(|run| {
            run.accesses.iter().map(|access| {
                let wavefronts = access.request.analyze().wavefronts;
                vec![
                    run.label.as_str().into(),
                    access.name.as_str().into(),
                    access.request.op.into(),
                    access.executions.into(),
                    wavefronts.into(),
                ]
            })
        })
        .collect();
    model.table(["kernel run", "access", "op", "executions", "wavefronts per request"], rows);
    let (counters, mismatches) = match profile(lesson, gpu.info(), command) {
        Err(why) => (Err(why.to_string()), Vec::new()),
        Ok(profiled) => {
            let mut mismatches = Vec::new();
            let mut rows = Vec::new();
            for counted in &profiled {
                if let Some(run) = runs.iter().find(|run| run.label == counted.label) {
                    mismatches.extend(run.check_counters(&counted.totals, &counted.instructions));
                }
                rows.extend(by_cost(&counted.instructions).into_iter().map(|((op, cost), (executions, _))| {
                    vec![counted.label.as_str().into(), op.into(), executions.into(), cost.into()]
                }));
            }
            let mut report = Report::default();
            report.table(["kernel run", "op", "executions", "wavefronts per request"], rows);
            (Ok(report), mismatches)
        }
    };
    let accesses = runs.iter().map(|run| run.accesses.len()).sum();
    Ok(SuiteRecord { runs: runs.len(), accesses, outputs, model, counters, mismatches })
}

/// The profiled side of [`profile`]: launches each profile-size kernel run once and checks its output.
pub fn profile_target<L: Lesson>(lesson: &L) -> Result<(), String> {
    let gpu = Gpu::open().map_err(|e| e.to_string())?;
    for run in lesson.runs(gpu.info(), Size::Profile).into_iter().filter(|r| r.kernel.is_some()) {
        let mut prepared = lesson.prepare(&gpu, &run).map_err(|e| format!("{}: {e}", run.label))?;
        prepared.launch().map_err(|e| format!("{}: {e}", run.label))?;
        prepared.check().map_err(|e| format!("{}: {e}", run.label))?;
    }
    Ok(())
}

/// Results grouped by `family` (the table each belongs in, say), families in the order they first
/// appear, results in their order.
pub fn grouped<S>(
    results: &[Measured<S>],
    family: impl Fn(&S) -> &'static str,
) -> Vec<(&'static str, Vec<&Measured<S>>)> {
    let mut groups: Vec<(&'static str, Vec<&Measured<S>>)> = Vec::new();
    for result in results {
        let name = family(&result.run.spec);
        match groups.iter_mut().find(|(existing, _)| *existing == name) {
            Some((_, members)) => members.push(result),
            None => groups.push((name, vec![result])),
        }
    }
    groups
}

/// Cells for "predicted | measured" wavefronts per request of `op`.
pub fn counter_cells<S>(measured: &Measured<S>, op: Op) -> [Styled; 2] {
    let predicted = measured.run.predicted_per_request(op);
    let format = |v: Option<f64>| v.map_or("-".to_owned(), format_ratio);
    let measured_cell = match &measured.counters {
        None => "n/a".into(),
        Some(Counted { counters, mismatches, .. }) => {
            let per_request = match op.reads() {
                true => counters.load_wavefronts_per_request(),
                false => counters.store_wavefronts_per_request(),
            };
            match mismatches.is_empty() {
                true => styled(format!("{} ✓", format(per_request)), Tone::Good),
                false => styled(format!("{} ✗", format(per_request)), Tone::Bad),
            }
        }
    };
    [format(predicted).into(), measured_cell]
}

/// `2`, `2.5`, `1.03`: short and exact where the value is whole.
pub fn format_ratio(value: f64) -> String {
    if (value - value.round()).abs() < 1e-9 { format!("{}", value.round()) } else { format!("{value:.2}") }
}

#[cfg(test)]
mod tests {
    use bank_model::Width;

    use super::*;

    /// A kernel that stores a row (1 wavefront) and reads a column (stride 32: 32 wavefronts).
    fn transpose_like() -> KernelRun<()> {
        let access = |name: &str, op, stride| DeclaredAccess {
            name: name.into(),
            request: Request::strided(op, Width::W4, stride).unwrap(),
            executions: 64,
        };
        KernelRun {
            label: "transpose n=32".into(),
            kernel: Some("transpose"),
            accesses: vec![access("tile[ty][tx] = in", Op::Store, 1), access("out = tile[tx][ty]", Op::Load, 32)],
            spec: (),
        }
    }

    fn instruction(sass: &str, executed: u64, wavefronts: u64) -> SharedInstruction {
        SharedInstruction { sass: sass.into(), executed, wavefronts }
    }

    const TOTALS: SharedCounters =
        SharedCounters { load_wavefronts: 2048, load_instructions: 64, store_wavefronts: 64, store_instructions: 64 };

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

    #[test]
    fn time_ratios_divide_the_runs_they_name() {
        let measured = |label: &str, median_ms| Measured {
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

    /// A lesson of one run, `transpose_like` plus `extra` accesses, and the given figures.
    struct Declarations {
        ratios: &'static [TimeRatio],
    }

    impl Lesson for Declarations {
        type Spec = ();
        fn number(&self) -> u32 {
            99
        }
        fn title(&self) -> &'static str {
            "declarations"
        }
        fn model(&self, _report: &mut Report) {}
        fn runs(&self, _gpu: &GpuInfo, _size: Size) -> Vec<KernelRun<()>> {
            vec![transpose_like()]
        }
        fn prepare<'g>(&self, _gpu: &'g Gpu, _run: &KernelRun<()>) -> Result<Box<dyn Prepared + 'g>, GpuError> {
            Err(GpuError::WrongResult("never launched".into()))
        }
        fn time_ratios(&self) -> &'static [TimeRatio] {
            self.ratios
        }
        fn summarize(&self, _gpu: &GpuInfo, _results: &[Measured<()>], _report: &mut Report) {}
    }

    #[test]
    fn declaration_problems_name_figures_without_runs() {
        const RATIOS: [TimeRatio; 2] = [
            TimeRatio { key: "fine", label: "", numerator: "transpose n=32", denominator: "transpose n=32" },
            TimeRatio { key: "typo", label: "", numerator: "transpose n=32", denominator: "transpose n=64" },
        ];
        let gpu = GpuInfo::h100();
        assert_eq!(declaration_problems(&Declarations { ratios: &RATIOS[..1] }, &gpu), Vec::<String>::new());
        assert_eq!(
            declaration_problems(&Declarations { ratios: &RATIOS }, &gpu),
            ["figure `typo` names run `transpose n=64`, which the lesson does not have"]
        );
    }

    #[test]
    fn results_group_by_family_in_order_of_first_appearance() {
        let result = |label: &str, spec: u32| Measured {
            run: KernelRun { label: label.into(), kernel: None, accesses: Vec::new(), spec },
            timing: Timing::from_samples(vec![1.0]).expect("one sample"),
            counters: None,
            occupancy: None,
        };
        let results = [result("a1", 1), result("b2", 2), result("a3", 3)];
        let groups = grouped(&results, |&spec| if spec % 2 == 1 { "odd" } else { "even" });
        let labels: Vec<(&str, Vec<&str>)> = groups
            .iter()
            .map(|(family, members)| (*family, members.iter().map(|m| m.run.label.as_str()).collect()))
            .collect();
        assert_eq!(labels, [("odd", vec!["a1", "a3"]), ("even", vec!["b2"])]);
    }

    #[test]
    fn costs_are_exact_fractions() {
        assert_eq!(Cost::new(96, 64).to_string(), "1.50");
        assert_eq!(Cost::new(2048, 64), Cost::new(32, 1));
        assert_eq!(OutputCheck::exact(&[1u32, 2]).to_string(), OutputCheck::exact(&[1u32, 2]).to_string());
        assert_ne!(OutputCheck::exact(&[1u32, 2]), OutputCheck::exact(&[2u32, 1]));
    }
}
