//! `cargo xtask lesson N`: finds the lesson and hands it to the lesson kit.

use std::{
    io::Write,
    path::{Path, PathBuf},
    process::ExitCode,
};

use anyhow::{Context, bail};
use cuda_kernels::{Gpu, GpuInfo, ncu::SelfCommand, timing::Plan};
use indicatif::{ProgressBar, ProgressStyle};
use lesson_01_banks::Banks;
use lesson_02_padding::Padding;
use lesson_03_transpose::Transpose;
use lesson_04_gemm::Gemm;
use lesson_05_occupancy::OccupancyTradeoff;
use lesson_06_reduction::Reduction;
use lesson_07_vector_widths::VectorWidths;
use lesson_08_broadcast::Broadcast;
use lesson_09_swizzle::Swizzling;
use lesson_10_struct_layout::StructLayout;
use lesson_11_scan::Scan;
use lesson_kit::{
    Figure, Lesson, Series,
    lesson::{self, GpuStatus, Options, Outcome, SuiteRecord},
};

/// Something to do with one lesson, whatever its type.
trait Visit {
    type Output;
    fn visit<L: Lesson>(self, lesson: &L) -> Self::Output;
}

/// The one place that lists the lessons.
const LESSON_NUMBERS: [u32; 11] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11];

fn dispatch<V: Visit>(number: u32, visit: V) -> V::Output {
    match number {
        1 => visit.visit(&Banks),
        2 => visit.visit(&Padding),
        3 => visit.visit(&Transpose),
        4 => visit.visit(&Gemm),
        5 => visit.visit(&OccupancyTradeoff),
        6 => visit.visit(&Reduction),
        7 => visit.visit(&VectorWidths),
        8 => visit.visit(&Broadcast),
        9 => visit.visit(&Swizzling),
        10 => visit.visit(&StructLayout),
        11 => visit.visit(&Scan),
        n => unreachable!("lesson {n} is not in LESSON_NUMBERS"),
    }
}

/// Each lesson's model tables as Markdown, named as the book includes them.
pub fn model_pages() -> Vec<(String, String)> {
    struct Page;
    impl Visit for Page {
        type Output = (String, String);
        fn visit<L: Lesson>(self, lesson: &L) -> (String, String) {
            let mut report = lesson_kit::Report::default();
            lesson.model(&mut report);
            (format!("lesson-{:02}-model.md", lesson.number()), report.render_markdown())
        }
    }
    LESSON_NUMBERS.iter().map(|&n| dispatch(n, Page)).collect()
}

/// Every lesson: number and title.
pub fn list() -> Vec<(u32, &'static str)> {
    struct Title;
    impl Visit for Title {
        type Output = &'static str;
        fn visit<L: Lesson>(self, lesson: &L) -> &'static str {
            lesson.title()
        }
    }
    LESSON_NUMBERS.iter().map(|&n| (n, dispatch(n, Title))).collect()
}

/// What is wrong with each lesson's declarations (`lesson_kit::lesson::declaration_problems`), on
/// an H100's shape; empty when every lesson is sound.
pub fn declaration_problems() -> Vec<(u32, Vec<String>)> {
    struct Problems;
    impl Visit for Problems {
        type Output = Vec<String>;
        fn visit<L: Lesson>(self, lesson: &L) -> Vec<String> {
            lesson::declaration_problems(lesson, &GpuInfo::h100())
        }
    }
    LESSON_NUMBERS.iter().map(|&n| (n, dispatch(n, Problems))).filter(|(_, problems)| !problems.is_empty()).collect()
}

fn lesson_number(text: &str) -> anyhow::Result<u32> {
    match text.trim().parse::<u32>() {
        Ok(n) if LESSON_NUMBERS.contains(&n) => Ok(n),
        _ => {
            let available: Vec<String> = list().iter().map(|(n, title)| format!("  {n:>2}  {title}")).collect();
            bail!(
                "there is no lesson `{text}`. The lessons are:\n{}\nRun one with e.g. `cargo xtask lesson 1`.",
                available.join("\n")
            )
        }
    }
}

/// Runs a lesson with a progress bar (hidden when stderr is not a terminal).
struct RunLesson {
    skip_gpu: Option<String>,
    profile: bool,
    /// Shown before the bar, e.g. `lesson 2 of 5` when lessons run in series.
    prefix: String,
}

impl Visit for RunLesson {
    type Output = anyhow::Result<Outcome>;
    fn visit<L: Lesson>(self, lesson: &L) -> anyhow::Result<Outcome> {
        let bar = ProgressBar::new(0)
            .with_style(
                ProgressStyle::with_template("{spinner} {prefix} [{bar:24}] {pos}/{len} {msg}")
                    .expect("valid progress template")
                    .progress_chars("=> "),
            )
            .with_prefix(self.prefix);
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
        let progress_bar = bar.clone();
        let profile_with = match self.profile {
            false => None,
            true => Some(profile_command(
                std::env::current_exe().context("cannot find this program to profile it")?,
                lesson.number(),
            )),
        };
        let options = Options {
            skip_gpu: self.skip_gpu,
            plan: Plan::default(),
            profile_with,
            progress: Box::new(move |label, index, total| {
                progress_bar.set_length(total as u64);
                progress_bar.set_position(index as u64);
                progress_bar.set_message(label.to_owned());
            }),
            model_check: crate::calibrate::lesson_line,
        };
        let outcome = lesson::run(lesson, &options);
        bar.finish_and_clear();
        Ok(outcome)
    }
}

/// `cargo xtask lesson N` flags.
pub struct Flags {
    pub no_gpu: bool,
    pub no_ncu: bool,
    pub plots: Option<std::path::PathBuf>,
}

pub fn run(number: &str, flags: Flags, out: &mut dyn Write, color: bool) -> anyhow::Result<ExitCode> {
    if number == "list" {
        for (n, title) in list() {
            writeln!(out, "{n:>2}  {title}")?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let skip_gpu = flags.no_gpu.then(|| "--no-gpu given".to_owned());
    let number = lesson_number(number)?;
    let run = RunLesson { skip_gpu, profile: !flags.no_ncu, prefix: format!("lesson {number}") };
    let outcome = dispatch(number, run)?;
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

/// `program __profile-lesson N`: what ncu profiles for lesson N.
fn profile_command(program: PathBuf, number: u32) -> SelfCommand {
    SelfCommand { program, args: vec!["__profile-lesson".into(), number.to_string().into()] }
}

/// Lesson N's record for the GPU suite; `program` is the `xtask` binary that ncu profiles.
pub fn suite_record(number: u32, program: &Path) -> anyhow::Result<SuiteRecord> {
    struct Record(PathBuf);
    impl Visit for Record {
        type Output = Result<SuiteRecord, String>;
        fn visit<L: Lesson>(self, lesson: &L) -> Result<SuiteRecord, String> {
            lesson::suite_record(lesson, &profile_command(self.0, lesson.number()))
        }
    }
    dispatch(lesson_number(&number.to_string())?, Record(program.to_path_buf())).map_err(anyhow::Error::msg)
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
    for (number, title) in list() {
        let prefix = format!("lesson {number} of {}", LESSON_NUMBERS.len());
        let outcome = dispatch(number, RunLesson { skip_gpu: None, profile: false, prefix })?;
        match outcome.gpu {
            GpuStatus::Ran { gpu: info, .. } => gpu = Some(info),
            GpuStatus::Failed(why) => bail!("lesson {number} ({title}) failed on the GPU: {why}"),
            GpuStatus::Skipped(why) => return Ok(Err(why)),
        }
        figures.extend(outcome.figures.into_iter().map(|figure| (number, figure)));
        series.extend(outcome.series.into_iter().map(|one| (number, one)));
    }
    Ok(Ok(GpuMeasurements { gpu: gpu.expect("at least one lesson ran"), figures, series }))
}

/// The child side of profiling: run lesson N's kernels once each.
pub fn profile_target(number: &str) -> anyhow::Result<ExitCode> {
    struct Target;
    impl Visit for Target {
        type Output = Result<(), String>;
        fn visit<L: Lesson>(self, lesson: &L) -> Result<(), String> {
            lesson::profile_target(lesson)
        }
    }
    dispatch(lesson_number(number)?, Target).map_err(anyhow::Error::msg)?;
    Ok(ExitCode::SUCCESS)
}
