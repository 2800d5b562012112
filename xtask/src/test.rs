//! `cargo xtask test`: every check that can run here, then the GPU suite where a GPU is.
//!
//! The GPU suite is the `gpu` test binary of `tests/` (insta snapshots of what a GPU run makes
//! that repeats from run to run). `cargo xtask dist` carries it compiled, so `./xtask test` in
//! the self-contained build runs it on a GPU machine that has no Rust toolchain.

use std::{
    env,
    path::PathBuf,
    process::{Command, ExitCode},
};

use anyhow::{Context, bail};
use cuda_kernels::Gpu;

use crate::{book, book_check, workspace_root};

/// The GPU suite's compiled test binary, in the self-contained build beside `xtask`.
pub const SUITE_BINARY: &str = "gpu-suite";
/// Tells the suite's tests whether to run (`skip`, `auto`, `required`).
pub const SUITE_MODE_VAR: &str = "BCM_GPU_SUITE";
/// The `xtask` program the suite's tests start (ncu profiles it).
pub const XTASK_PROGRAM_VAR: &str = "BCM_XTASK";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuSuite {
    /// Run it if a GPU is there, else say why not.
    Auto,
    /// It must run.
    Required,
    Skip,
}

impl GpuSuite {
    pub fn from_flags(no_gpu: bool, gpu: bool) -> GpuSuite {
        match (no_gpu, gpu) {
            (true, _) => GpuSuite::Skip,
            (false, true) => GpuSuite::Required,
            (false, false) => GpuSuite::Auto,
        }
    }
}

fn step(title: &str) {
    eprintln!("\n==> {title}");
}

fn cargo() -> Command {
    Command::new(env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// Every check that can run here, then the GPU suite (`suite`); with `only`, the GPU suite's
/// tests whose names contain it and nothing else, which must run.
pub fn run(suite: GpuSuite, only: Option<&str>) -> anyhow::Result<ExitCode> {
    if let Some(binary) = self_contained_suite() {
        eprintln!("Self-contained build: running the GPU suite only (the other tests need the Rust toolchain).");
        let folder = binary.parent().expect("a file in a folder").to_path_buf();
        let suite_command = || {
            let mut command = Command::new(&binary);
            // insta finds the snapshots relative to the workspace root: here, this folder.
            command.env("INSTA_WORKSPACE_ROOT", &folder);
            command
        };
        return gpu_suite(suite, &suite_command, only);
    }
    if only.is_none() {
        step("cargo test --workspace");
        let status = cargo()
            .args(["test", "--workspace", "--all-targets"])
            .env(SUITE_MODE_VAR, "skip")
            .current_dir(workspace_root())
            .status()
            .context("could not run cargo test")?;
        if !status.success() {
            bail!("workspace tests failed ({status})");
        }
        step("book");
        let built = book::build()?;
        step("the built book's links, anchors and resources");
        eprintln!("{}", book_check::check(&built)?);
    }
    let suite_command = || {
        let mut command = cargo();
        command.args(["test", "--package", "course-tests", "--test", "gpu", "--"]).current_dir(workspace_root());
        command
    };
    gpu_suite(suite, &suite_command, only)
}

/// `gpu-suite` beside this program, when it runs from the self-contained build.
fn self_contained_suite() -> Option<PathBuf> {
    let binary = env::current_exe().ok()?.parent()?.join(SUITE_BINARY);
    binary.is_file().then_some(binary)
}

/// Runs the suite's tests one at a time (they share the GPU and time it), showing their lines;
/// with `only`, those whose names contain it, which must run. `tests` makes the command that
/// runs the suite, to which the test harness's arguments are added.
fn gpu_suite(suite: GpuSuite, tests: &dyn Fn() -> Command, only: Option<&str>) -> anyhow::Result<ExitCode> {
    step("GPU suite");
    // Tests named to run must run.
    let suite = if only.is_some() { GpuSuite::Required } else { suite };
    if suite == GpuSuite::Skip {
        eprintln!("GPU suite skipped: --no-gpu given");
        return Ok(ExitCode::SUCCESS);
    }
    if let Err(why) = Gpu::open() {
        if suite == GpuSuite::Required {
            bail!("the GPU suite was required (--gpu or --only) but cannot run: {why}");
        }
        eprintln!("GPU suite skipped: {why}.");
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(only) = only {
        let named = suite_tests(tests, only)?;
        if named.is_empty() {
            let all = suite_tests(tests, "")?;
            bail!("no test of the GPU suite has `{only}` in its name; its tests: {}", all.join(", "));
        }
        eprintln!("Running {} of the GPU suite's tests: {}", named.len(), named.join(", "));
    }
    let program = env::current_exe().context("cannot find this program for the suite to profile")?;
    let status = tests()
        .args(["--test-threads=1", "--nocapture"])
        .args(only)
        // The GPU is there; `required` also makes missing ncu counters fail the suite.
        .env(SUITE_MODE_VAR, if suite == GpuSuite::Required { "required" } else { "auto" })
        .env(XTASK_PROGRAM_VAR, &program)
        .status()
        .context("could not start the GPU suite")?;
    if !status.success() {
        bail!("the GPU suite failed ({status}); its messages are above");
    }
    eprintln!("GPU suite passed.");
    Ok(ExitCode::SUCCESS)
}

/// The names of the suite's tests that contain `part` (all, for ""), as its harness lists them.
fn suite_tests(tests: &dyn Fn() -> Command, part: &str) -> anyhow::Result<Vec<String>> {
    let listed = tests()
        .args(["--list", "--format", "terse", part])
        .env(SUITE_MODE_VAR, "skip")
        .output()
        .context("could not list the GPU suite's tests")?;
    if !listed.status.success() {
        bail!("could not list the GPU suite's tests ({}):\n{}", listed.status, String::from_utf8_lossy(&listed.stderr));
    }
    Ok(String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter_map(|line| line.strip_suffix(": test"))
        .map(str::to_owned)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_suites_tests_are_read_from_its_harness_list() {
        // A stand-in harness: prints a terse list, the filter it was given as a test of its own.
        let harness = || {
            let mut command = Command::new("sh");
            command.args([
                "-c",
                "printf 'lessons::every_lesson_on_the_gpu: test\ngrading::a: test\n'; echo \"$4: test\"",
                "sh",
            ]);
            command
        };
        let named = suite_tests(&harness, "grading::").unwrap();
        assert_eq!(named, ["lessons::every_lesson_on_the_gpu", "grading::a", "grading::"], "the filter passed last");
        let failing = || {
            let mut command = Command::new("sh");
            command.args(["-c", "echo broken >&2; exit 3", "sh"]);
            command
        };
        assert!(suite_tests(&failing, "").unwrap_err().to_string().contains("broken"));
    }
}
