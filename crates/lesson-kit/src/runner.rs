//! Runs a lesson: the model's tables always; on a GPU, every run once under Nsight Compute (its
//! counters must equal the declared accesses exactly), then every run timed with CUDA events and
//! its output checked against a CPU reference.

use std::collections::{BTreeMap, BTreeSet};

use cuda_kernels::{
    Gpu, GpuInfo,
    ncu::{Ncu, NcuUnavailable, SelfCommand, SharedFamily},
    timing::{self, Plan},
};
use serde::Serialize;

use crate::{
    chart::Plot,
    figures::{Figure, Series},
    lesson::{CounterCheck, KernelRun, Lesson, OutputCheck, Prepared, RunSize, TimedRun},
    mismatch::{Mismatch, mismatch_table},
    reconcile::by_cost,
    report::Report,
    words_kernel::with_fixed_inputs,
};

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

/// The lesson's report, and what its GPU run measured (empty when it did not run).
pub struct LessonOutcome {
    pub report: Report,
    pub plots: Vec<Plot>,
    pub figures: Vec<Figure>,
    pub series: Vec<Series>,
    pub gpu: GpuStatus,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum GpuStatus {
    Skipped(String),
    Ran { gpu: GpuInfo },
    Failed(String),
}

/// Runs a lesson: the model always, the GPU part where there is one.
pub fn run<L: Lesson>(lesson: &L, options: &Options) -> LessonOutcome {
    let mut report = Report::default();
    report.heading(format!("Lesson {}: {}", L::NUMBER, L::TITLE));
    lesson.model(&mut report);
    report.heading("On the GPU");
    let opened = match &options.skip_gpu {
        Some(reason) => Err(reason.clone()),
        None => Gpu::open().map_err(|e| e.to_string()),
    };
    let status = match opened {
        Ok(ref gpu) => GpuStatus::Ran { gpu: gpu.info().clone() },
        Err(ref reason) => {
            report.text(format!("GPU runs skipped: {reason}."));
            GpuStatus::Skipped(reason.clone())
        }
    };
    let mut outcome = LessonOutcome { report, plots: Vec::new(), figures: Vec::new(), series: Vec::new(), gpu: status };
    if let Ok(gpu) = opened
        && let Err(failure) = measure(lesson, &gpu, options, &mut outcome)
    {
        outcome.report.text(format!("GPU run FAILED: {failure}"));
        outcome.gpu = GpuStatus::Failed(failure);
    }
    outcome
}

fn measure<L: Lesson>(lesson: &L, gpu: &Gpu, options: &Options, outcome: &mut LessonOutcome) -> Result<(), String> {
    let info = gpu.info();
    let report = &mut outcome.report;
    report.text(format!(
        "{} ({}, {} SMs, {} MHz, CUDA {} driver)",
        info.name,
        info.arch(),
        info.multiprocessors,
        info.clock_mhz,
        info.driver_cuda_version
    ));
    report.text(format!("{}.", (options.model_check)(&info.name)));
    let runs = lesson.runs(info, RunSize::Timed);
    let total = runs.len();
    (options.progress)("profiling under Nsight Compute", 0, total);
    let mut checks = match &options.profile_with {
        None => Err("not requested".to_owned()),
        Some(command) => counter_checks(lesson, info, command).map_err(|e| e.to_string()),
    };
    let mut timed = Vec::with_capacity(total);
    for (index, run) in runs.into_iter().enumerate() {
        (options.progress)(&run.label, index, total);
        let mut prepared = prepare(lesson, gpu, &run)?;
        let timing =
            timing::time(gpu, options.plan, || prepared.launch()).map_err(|e| format!("{}: {e}", run.label))?;
        prepared.check().map_err(|e| format!("{}: {e}", run.label))?;
        let occupancy = prepared.occupancy().transpose().map_err(|e| format!("{}: {e}", run.label))?;
        let counters = match (&mut checks, run.kernel) {
            (Ok(checks), Some(_)) => Some(checks.remove(&run.label).ok_or_else(|| {
                format!("run `{}` has no profiled run of its label: profile and timed runs must match", run.label)
            })?),
            _ => None,
        };
        timed.push(TimedRun { run, timing, counters, occupancy });
    }
    match &checks {
        Ok(left) if !left.is_empty() => {
            let labels: Vec<&str> = left.keys().map(String::as_str).collect();
            return Err(format!("profiled runs without a timed run of their label: {}", labels.join(", ")));
        }
        Ok(_) => {}
        Err(why) => report.text(format!("Counters skipped: {why}. Showing the model and the clock only.")),
    }
    report.text(format!("Every kernel's output matched {}.", lesson.reference()));
    lesson.summarize(info, &timed, report);
    outcome.figures = lesson.all_figures(info, &timed);
    outcome.series = lesson.series(info, &timed);
    outcome.plots = lesson
        .charts()
        .iter()
        .filter_map(|chart| chart.plot(&info.name, &outcome.series).transpose())
        .collect::<Result<_, _>>()
        .map_err(|e| format!("drawing the charts: {e}"))?;
    let mismatches: Vec<Mismatch> =
        timed.iter().filter_map(|m| m.counters.as_ref()).flat_map(|c| c.mismatches.clone()).collect();
    match mismatches.is_empty() {
        true => Ok(()),
        false => Err(format!("model and ncu disagree:\n{}", mismatch_table(&mismatches))),
    }
}

/// A run's buffers, allocated; errors name the run.
fn prepare<'g, L: Lesson>(
    lesson: &L,
    gpu: &'g Gpu,
    run: &KernelRun<L::Spec>,
) -> Result<Box<dyn Prepared + 'g>, String> {
    lesson.prepare(gpu, run).map_err(|e| format!("{}: {e}", run.label))
}

/// Launches a run once and checks its output.
fn launch_once<L: Lesson>(lesson: &L, gpu: &Gpu, run: &KernelRun<L::Spec>) -> Result<OutputCheck, String> {
    let mut prepared = prepare(lesson, gpu, run)?;
    prepared.launch().and_then(|()| prepared.check()).map_err(|e| format!("{}: {e}", run.label))
}

/// Errors of the profiling step.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error(transparent)]
    Ncu(#[from] NcuUnavailable),
    #[error("{0}")]
    Launches(String),
}

/// Runs the lesson's profile-size kernels under ncu and reconciles each with its declared
/// accesses, by run label.
pub fn counter_checks<L: Lesson>(
    lesson: &L,
    info: &GpuInfo,
    command: &SelfCommand,
) -> Result<BTreeMap<String, CounterCheck>, ProfileError> {
    let runs: Vec<_> = lesson.runs(info, RunSize::Profile).into_iter().filter(|r| r.kernel.is_some()).collect();
    let families: BTreeSet<SharedFamily> = runs.iter().flat_map(KernelRun::families).collect();
    let launches = Ncu::find()?.profile(command, &families.into_iter().collect::<Vec<_>>())?;
    let kernels: Vec<&str> = launches.iter().map(|l| l.kernel.as_str()).collect();
    let expected: Vec<&str> = runs.iter().filter_map(|r| r.kernel).collect();
    if kernels != expected {
        return Err(ProfileError::Launches(format!(
            "the profiled program launched {kernels:?}, expected {expected:?}"
        )));
    }
    runs.into_iter()
        .zip(launches)
        .map(|(run, launch)| {
            let totals = launch.shared().ok_or_else(|| {
                ProfileError::Launches(format!("ncu gave no shared-memory counters for {}", launch.kernel))
            })?;
            let check = CounterCheck {
                mismatches: run.check_counters(&totals, &launch.instructions),
                counters: totals,
                hardware_conflicts: launch.hardware_conflicts(),
                excess_wavefronts: run.predicted_excess(),
                instructions: launch.instructions,
            };
            Ok((run.label, check))
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
    let runs = lesson.runs(gpu.info(), RunSize::Profile);
    let checked =
        with_fixed_inputs(|| runs.iter().map(|run| launch_once(lesson, &gpu, run)).collect::<Result<Vec<_>, _>>())?;
    let mut outputs = Report::default();
    let rows = runs.iter().zip(&checked).map(|(run, check)| vec![run.label.as_str().into(), check.into()]).collect();
    outputs.table(["kernel run", "output"], rows);
    let model = declared_accesses(&runs);
    let (counters, mismatches) = match counter_checks(lesson, gpu.info(), command) {
        Err(why) => (Err(why.to_string()), Vec::new()),
        Ok(checks) => {
            let mut mismatches = Vec::new();
            let mut rows = Vec::new();
            // In run order, as the profiled program launched them.
            for run in runs.iter().filter(|run| run.kernel.is_some()) {
                let check = &checks[&run.label];
                mismatches.extend(check.mismatches.iter().cloned());
                rows.extend(by_cost(&check.instructions).into_iter().map(|((family, cost), (executions, _))| {
                    vec![run.label.as_str().into(), family.short_name().into(), executions.into(), cost.into()]
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

/// The model's cost of every access the runs declare, a row each (what the GPU suite compares
/// with ncu's counts).
pub fn declared_accesses<S>(runs: &[KernelRun<S>]) -> Report {
    let rows = runs
        .iter()
        .flat_map(|run| {
            run.accesses.iter().map(|access| {
                vec![
                    run.label.as_str().into(),
                    access.name.as_str().into(),
                    access.request.op.into(),
                    access.executions.into(),
                    access.request.analyze().wavefronts.into(),
                ]
            })
        })
        .collect();
    let mut model = Report::default();
    model.table(["kernel run", "access", "op", "executions", "wavefronts per request"], rows);
    model
}

/// The profiled side of [`counter_checks`]: launches each profile-size kernel run once and checks
/// its output.
pub fn profile_target<L: Lesson>(lesson: &L) -> Result<(), String> {
    let gpu = Gpu::open().map_err(|e| e.to_string())?;
    for run in lesson.runs(gpu.info(), RunSize::Profile).iter().filter(|r| r.kernel.is_some()) {
        launch_once(lesson, &gpu, run)?;
    }
    Ok(())
}
