//! The shape every lesson has, and the run that shows model, counters and clock side by side.
//!
//! A lesson declares its kernel runs, and for each run the shared-memory instructions it
//! executes ([`DeclaredAccess`]: the access, as a [`Request`] for the model, and how many times
//! a warp executes it). The kit then
//! 1. prints the model's tables (no GPU needed),
//! 2. runs every kernel once under Nsight Compute (when available) and demands that the
//!    measured wavefronts and instruction counts equal the declared ones exactly,
//! 3. times every kernel with CUDA events, checks its output against a CPU reference, and lets
//!    the lesson summarize.

use std::{ffi::OsString, path::PathBuf};

use bank_model::{Op, Request};
use cuda_kernels::{
    Gpu, GpuError, GpuInfo, Occupancy,
    ncu::{Ncu, NcuUnavailable, SHARED_METRICS, SharedCounters},
    timing::{self, Plan, Timing},
};
use serde::{Deserialize, Serialize};

use crate::{
    plot::Plot,
    report::{Report, Styled, Tone, styled},
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

    /// Declared wavefronts per instruction for `op`, `None` when the kernel declares none.
    pub fn predicted_per_request(&self, op: Op) -> Option<f64> {
        let (wavefronts, instructions) = self.predicted(op);
        (instructions > 0).then(|| wavefronts as f64 / instructions as f64)
    }

    /// Compares declared with measured counters; `Err` names every difference.
    pub fn check_counters(&self, measured: &SharedCounters) -> Result<(), String> {
        let mut problems = Vec::new();
        for (op, wavefronts, instructions) in [
            (Op::Load, measured.load_wavefronts, measured.load_instructions),
            (Op::Store, measured.store_wavefronts, measured.store_instructions),
        ] {
            let (want_wavefronts, want_instructions) = self.predicted(op);
            if (wavefronts, instructions) != (want_wavefronts, want_instructions) {
                problems.push(format!(
                    "{}: {op} declared {want_instructions} instructions / {want_wavefronts} wavefronts, \
                     ncu measured {instructions} / {wavefronts}",
                    self.label
                ));
            }
        }
        if problems.is_empty() { Ok(()) } else { Err(problems.join("\n")) }
    }
}

/// How big a run is: one quick launch for the profiler, or the full size for the clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    Profile,
    Timed,
}

/// A kernel run with its buffers allocated, ready to launch again and again.
pub trait Prepared {
    /// Enqueues one launch.
    fn launch(&mut self) -> Result<(), GpuError>;
    /// Compares the output with a CPU reference: `GpuError::WrongResult` when it differs.
    fn check(&mut self) -> Result<(), GpuError>;
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
    /// The lesson's headline numbers from a GPU run (ratios measured side by side in one run).
    fn figures(&self, _gpu: &GpuInfo, _results: &[Measured<Self::Spec>]) -> Vec<Figure> {
        Vec::new()
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

/// Counters of the profile-size launch, and whether they equal what the lesson declared for it.
#[derive(Clone, Debug)]
pub struct Counted {
    pub counters: SharedCounters,
    pub check: Result<(), String>,
}

/// How to start this program again so that it runs a lesson's kernels once each ([`profile_target`]).
#[derive(Clone, Debug)]
pub struct SelfCommand {
    pub program: PathBuf,
    pub args: Vec<OsString>,
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
            let (profiled, counters) = all.iter().find(|(label, _)| *label == run.label)?;
            let declared = profile_runs.iter().find(|r| r.label == *profiled)?;
            Some(Counted { check: declared.check_counters(counters), counters: *counters })
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
    let mismatches: Vec<String> =
        measured.iter().filter_map(|m| m.counters.as_ref().and_then(|c| c.check.clone().err())).collect();
    if mismatches.is_empty() { Ok(status) } else { Err(format!("model and ncu disagree:\n{}", mismatches.join("\n"))) }
}

/// Errors of the profiling step.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error(transparent)]
    Ncu(#[from] NcuUnavailable),
    #[error("{0}")]
    Launches(String),
}

/// Runs the lesson's profile-size kernels under ncu: the counters of each kernel run, by label.
pub fn profile<L: Lesson>(
    lesson: &L,
    info: &GpuInfo,
    command: &SelfCommand,
) -> Result<Vec<(String, SharedCounters)>, ProfileError> {
    let ncu = Ncu::find()?;
    let launches = ncu.profile(&command.program, &command.args, &SHARED_METRICS)?;
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
            let counters = launch.shared().ok_or_else(|| {
                ProfileError::Launches(format!("ncu gave no shared-memory counters for {}", launch.kernel))
            })?;
            Ok((run.label, counters))
        })
        .collect()
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

/// Cells for "predicted | measured" wavefronts per request of `op`.
pub fn counter_cells<S>(measured: &Measured<S>, op: Op) -> [Styled; 2] {
    let predicted = measured.run.predicted_per_request(op);
    let format = |v: Option<f64>| v.map_or("-".to_owned(), format_ratio);
    let measured_cell = match &measured.counters {
        None => "n/a".into(),
        Some(Counted { counters, check }) => {
            let per_request = match op {
                Op::Load => counters.load_wavefronts_per_request(),
                Op::Store => counters.store_wavefronts_per_request(),
            };
            match check {
                Ok(()) => styled(format!("{} ✓", format(per_request)), Tone::Good),
                Err(_) => styled(format!("{} ✗", format(per_request)), Tone::Bad),
            }
        }
    };
    [format(predicted).into(), measured_cell]
}

/// `2`, `2.5`, `1.03`: short and exact where the value is whole.
pub fn format_ratio(value: f64) -> String {
    if (value - value.round()).abs() < 1e-9 { format!("{}", value.round()) } else { format!("{value:.2}") }
}
