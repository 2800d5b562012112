//! `cargo xtask`: the course's command line. It only wires the crates together.

mod bench;
pub mod book;
mod book_check;
mod build_cost_bench;
pub mod calibrate;
mod conflicts;
mod dist;
mod exercises;
/// A check process's loop, for tests that run it in a thread of their own (its sandbox confines
/// that thread).
pub use exercises::serve_checks;
mod grading_bench;
pub mod lessons;
mod measured_pages;
mod probe;
pub mod test;

use std::{io::Write, path::PathBuf, process::ExitCode};

use clap::{Parser, Subcommand};

pub use conflicts::ConflictsArgs;

#[derive(Debug, Parser)]
#[command(
    name = "cargo xtask",
    bin_name = "cargo xtask",
    version,
    about = "Bank Conflicts, Measured: lessons, tools and checks"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run lesson N: the model's tables, then the kernels on the GPU (if there is one).
    Lesson {
        /// Lesson number (`cargo xtask lesson list` shows them).
        number: String,
        /// Skip the GPU part even if a GPU is present.
        #[arg(long)]
        no_gpu: bool,
        /// Do not run Nsight Compute, only the model and the clock.
        #[arg(long)]
        no_ncu: bool,
        /// Write the lesson's charts (SVG) into this folder.
        #[arg(long, value_name = "DIR")]
        plots: Option<PathBuf>,
    },
    /// Ask the bank model about one warp-wide shared-memory instruction (or a batch of them).
    Conflicts(ConflictsArgs),
    /// Build the book into book/build (installs pinned mdbook and mdbook-katex on first use).
    Book,
    /// Run every test that can run here: workspace tests, snapshots, the book build, and the
    /// GPU suite when a GPU is present.
    Test {
        /// Skip the GPU suite even if a GPU is present.
        #[arg(long, conflicts_with = "gpu")]
        no_gpu: bool,
        /// Fail if the GPU suite cannot run (no GPU, driver or counters).
        #[arg(long)]
        gpu: bool,
        /// Run only the GPU suite's tests whose names contain NAME (`grading::`,
        /// `every_lesson_on_the_gpu`), and nothing else; they must run.
        #[arg(long, value_name = "NAME", conflicts_with = "no_gpu")]
        only: Option<String>,
    },
    /// Measure every lesson's headline figures on this GPU and write them, with the GPU, driver,
    /// CUDA version and date, to the book's results file (regenerate it on your own GPU).
    Results {
        /// Where to write the JSON file.
        #[arg(long, default_value = "book/src/measured/results.json")]
        out: PathBuf,
    },
    /// Make a self-contained folder (binary + kernels) for a GPU machine without Rust.
    Dist {
        /// Where to put it.
        #[arg(long, default_value = "dist/bank-conflicts-measured")]
        out: PathBuf,
    },
    /// Measure the wavefronts of single instructions on the GPU with Nsight Compute.
    Probe {
        /// Tab-separated instructions: op, width, 32 lane byte addresses (`conflicts --batch` format).
        batch: PathBuf,
        /// Write the measured table here (default: standard output).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Check the bank model on this GPU: measure a sample of every rule class under Nsight
    /// Compute (under a minute) and write a profile that lessons summarize in one line.
    Calibrate,
    /// Write one of the experiments behind the model's rules as a batch for `probe`
    /// (`--list` names them all).
    ProbeDesign {
        /// The design's name.
        #[arg(required_unless_present = "list")]
        name: Option<String>,
        /// Seed of the design's random choices.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// List the designs and what each varies.
        #[arg(long)]
        list: bool,
    },
    /// Benchmarks, printed as measured rates and side-by-side ratios (never part of the tests):
    /// the bank model on one core, every lesson's headline figures on the GPU, and the grader's
    /// speed on a generated class.
    Bench(bench::BenchArgs),
    /// Check your solution of an exercise on the GPU (`--list` shows every exercise, `--hint` helps).
    Exercise(exercises::ExerciseArgs),
    /// Check your copy of an exercise now and on every save, with the verdict and the next hint.
    Watch(exercises::WatchArgs),
    /// Grade a folder of submissions to an exercise: CSV, JSON and a Markdown summary.
    Grade(exercises::GradeArgs),
    /// Internal: check files one after another in a process of their own, each named by a line
    /// of standard input, writing each outcome as JSON.
    #[command(name = "__check-submissions", hide = true)]
    CheckSubmissions(exercises::ChildArgs),
    /// Internal: profile checked files in a process of their own, writing their counters as JSON.
    #[command(name = "__profile-submissions", hide = true)]
    ProfileSubmissions(exercises::ChildArgs),
    /// Internal: launch an exercise's reference, then each file, once each, to be profiled by ncu.
    #[command(name = "__profile-target", hide = true)]
    ProfileTarget(exercises::ChildArgs),
    /// Internal: run a lesson's kernels once each, to be profiled by ncu.
    #[command(name = course::PROFILE_LESSON, hide = true)]
    ProfileLesson { number: String },
    /// Internal: launch probe instructions once each, to be profiled by ncu.
    #[command(name = ::probe::PROBE_TARGET, hide = true)]
    ProbeTarget { batch: PathBuf },
}

/// Runs one command, writing its report to `out` (with ANSI colours if `color`).
pub fn run(cli: Cli, out: &mut dyn Write, color: bool) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Lesson { number, no_gpu, no_ncu, plots } => {
            lessons::run(&number, lessons::Flags { no_gpu, no_ncu, plots }, out, color)
        }
        Command::Conflicts(args) => conflicts::run(&args, out, color),
        Command::Book => book::build().map(|_| ExitCode::SUCCESS),
        Command::Test { no_gpu, gpu, only } => test::run(test::GpuSuite::from_flags(no_gpu, gpu), only.as_deref()),
        Command::Dist { out: folder } => dist::run(&folder, out),
        Command::Results { out: file } => lessons::write_results(&file, out),
        Command::Probe { batch, out: table } => probe::run(&batch, table.as_deref(), out),
        Command::Calibrate => calibrate::run(out, color),
        Command::ProbeDesign { name, seed, list } => probe::design(name.as_deref(), seed, list, out),
        Command::Bench(args) => bench::run(&args, out, color),
        Command::ProfileLesson { number } => lessons::profile_target(&number),
        Command::ProbeTarget { batch } => ::probe::target(&batch).map(|()| ExitCode::SUCCESS),
        Command::Exercise(args) => exercises::exercise(&args, out, color),
        Command::Watch(args) => exercises::watch(&args, out, color),
        Command::Grade(args) => exercises::grade(&args, out),
        Command::CheckSubmissions(args) => exercises::check_submissions(&args),
        Command::ProfileSubmissions(args) => exercises::profile_submissions(&args),
        Command::ProfileTarget(args) => exercises::profile_target(&args),
    }
}

/// The exit status for an error: 2 when the input left nothing to do (an unknown exercise, a
/// missing or empty folder), else 1.
pub fn exit_code(error: &anyhow::Error) -> ExitCode {
    let nothing_to_do = error.downcast_ref::<::exercises::BadInput>().is_some()
        || error.downcast_ref::<::exercises::UnknownExercise>().is_some();
    if nothing_to_do { ExitCode::from(2) } else { ExitCode::FAILURE }
}

/// The workspace root (this crate's parent folder).
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace").to_path_buf()
}

/// Colour only on a terminal, and never when `NO_COLOR` is set.
pub fn use_color() -> bool {
    use std::io::IsTerminal;
    std::env::var_os("NO_COLOR").is_none() && std::io::stdout().is_terminal()
}
