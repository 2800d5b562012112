//! `cargo xtask lesson N`: finds the lesson in the course's list and runs it with a progress bar.

use std::{io::Write, path::PathBuf, process::ExitCode};

use anyhow::{Context, bail};
use course::LESSONS;
use cuda_kernels::{Gpu, GpuInfo, timing::Plan};
use indicatif::{ProgressBar, ProgressStyle};
use lesson_kit::{
    AnyLesson, Figure, Series,
    runner::{GpuStatus, LessonOutcome, Options},
};

/// Runs a lesson with a progress bar (hidden when stderr is not a terminal); `prefix` is shown
/// before the bar, e.g. `lesson 2 of 5` when lessons run in series.
fn run_with_progress(
    lesson: &dyn AnyLesson,
    skip_gpu: Option<String>,
    profile: bool,
    prefix: String,
) -> anyhow::Result<LessonOutcome> {
    let bar = ProgressBar::new(0)
        .with_style(
            ProgressStyle::with_template("{spinner} {prefix} [{bar:24}] {pos}/{len} {msg}")
                .expect("valid progress template")
                .progress_chars("=> "),
        )
        .with_prefix(prefix);
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    let progress_bar = bar.clone();
    let profile_with = match profile {
        false => None,
        true => Some(course::profile_command(
            std::env::current_exe().context("cannot find this program to profile it")?,
            lesson.number(),
        )),
    };
    let options = Options {
        skip_gpu,
        plan: Plan::default(),
        profile_with,
        progress: Box::new(move |label, index, total| {
            progress_bar.set_length(total as u64);
            progress_bar.set_position(index as u64);
            progress_bar.set_message(label.to_owned());
        }),
        model_check: crate::calibrate::lesson_line,
    };
    let outcome = lesson.run(&options);
    bar.finish_and_clear();
    Ok(outcome)
}

/// `cargo xtask lesson N` flags.
pub struct Flags {
    pub no_gpu: bool,
    pub no_ncu: bool,
    pub plots: Option<PathBuf>,
}

pub fn run(number: &str, flags: Flags, out: &mut dyn Write, color: bool) -> anyhow::Result<ExitCode> {
    if number == "list" {
        writeln!(out, "{}", course::list())?;
        return Ok(ExitCode::SUCCESS);
    }
    let lesson = course::lesson(number)?;
    let skip_gpu = flags.no_gpu.then(|| "--no-gpu given".to_owned());
    let outcome = run_with_progress(lesson, skip_gpu, !flags.no_ncu, format!("lesson {}", lesson.number()))?;
    write!(out, "{}", outcome.report.render(color))?;
    if let Some(dir) = &flags.plots {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        for plot in &outcome.plots {
            let path = dir.join(&plot.file);
            std::fs::write(&path, &plot.svg).with_context(|| format!("cannot write {}", path.display()))?;
            // A status line, not part of the report: measured outputs carry no machine's paths.
            eprintln!("Chart written: {}", path.display());
        }
    }
    Ok(match outcome.gpu {
        GpuStatus::Failed(_) => ExitCode::FAILURE,
        GpuStatus::Skipped(_) | GpuStatus::Ran { .. } => ExitCode::SUCCESS,
    })
}

/// One timing run of every lesson: the GPU, and each lesson's figures and series with its number.
pub struct GpuMeasurements {
    pub gpu: GpuInfo,
    pub figures: Vec<(u32, Figure)>,
    pub series: Vec<(u32, Series)>,
}

/// Every lesson's headline figures and series, timed (not profiled) on the GPU; the inner `Err`
/// says why not.
pub fn measure_all() -> anyhow::Result<Result<GpuMeasurements, String>> {
    if let Err(why) = Gpu::open() {
        return Ok(Err(why.to_string()));
    }
    let (mut figures, mut series) = (Vec::new(), Vec::new());
    let mut gpu = None;
    for lesson in LESSONS {
        let number = lesson.number();
        let prefix = format!("lesson {number} of {}", LESSONS.len());
        let outcome = run_with_progress(*lesson, None, false, prefix)?;
        match outcome.gpu {
            GpuStatus::Ran { gpu: info } => gpu = Some(info),
            GpuStatus::Failed(why) => bail!("lesson {number} ({}) failed on the GPU: {why}", lesson.title()),
            GpuStatus::Skipped(why) => return Ok(Err(why)),
        }
        figures.extend(outcome.figures.into_iter().map(|figure| (number, figure)));
        series.extend(outcome.series.into_iter().map(|one| (number, one)));
    }
    Ok(Ok(GpuMeasurements { gpu: gpu.expect("at least one lesson ran"), figures, series }))
}

/// `cargo xtask results`: measures every lesson on this GPU and writes the results file.
pub fn write_results(file: &std::path::Path, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let measured = match measure_all()? {
        Ok(measured) => measured,
        Err(why) => bail!("results need a GPU: {why}"),
    };
    let results = course::results::Results::new(&measured.gpu, measured.figures, measured.series);
    results.write(file)?;
    writeln!(
        out,
        "{} figures and {} series from {} written to {}",
        results.figures.len(),
        results.series.len(),
        results.gpu,
        file.display()
    )?;
    Ok(ExitCode::SUCCESS)
}

/// The child side of profiling (`__profile-lesson N`): run lesson N's kernels once each.
pub fn profile_target(number: &str) -> anyhow::Result<ExitCode> {
    course::lesson(number)?.profile_target().map_err(anyhow::Error::msg)?;
    Ok(ExitCode::SUCCESS)
}
