//! Helpers for the course's integration tests: run `cargo xtask ...` in-process and capture it.

use std::process::ExitCode;

use clap::Parser;

/// What one command printed, and how it ended.
pub struct Run {
    pub stdout: String,
    /// `Err` carries the error message `cargo xtask` would print.
    pub result: Result<ExitCode, String>,
    /// The exit status `cargo xtask` would end with, errors included.
    pub code: ExitCode,
}

impl Run {
    pub fn succeeded(&self) -> bool {
        matches!(self.result, Ok(code) if code == ExitCode::SUCCESS)
    }

    pub fn error(&self) -> &str {
        self.result.as_ref().err().map(String::as_str).unwrap_or("")
    }
}

/// Runs `cargo xtask ARGS` without colour, as when piped.
pub fn xtask(args: &[&str]) -> Run {
    let cli = xtask::Cli::try_parse_from(std::iter::once("xtask").chain(args.iter().copied()))
        .unwrap_or_else(|e| panic!("cargo xtask {args:?} did not parse: {e}"));
    let mut out = Vec::new();
    let result = xtask::run(cli, &mut out, false);
    let code = result.as_ref().map_or_else(xtask::exit_code, |code| *code);
    Run { stdout: String::from_utf8(out).expect("UTF-8 output"), result: result.map_err(|e| format!("{e:#}")), code }
}

/// The clap error for arguments that must not parse.
pub fn parse_error(args: &[&str]) -> String {
    match xtask::Cli::try_parse_from(std::iter::once("xtask").chain(args.iter().copied())) {
        Ok(cli) => panic!("cargo xtask {args:?} parsed as {cli:?}"),
        Err(e) => e.to_string(),
    }
}

/// The workspace's root folder.
/// In the self-contained build the suite runs beside its data, named by `INSTA_WORKSPACE_ROOT`.
pub fn root() -> std::path::PathBuf {
    std::env::var_os("INSTA_WORKSPACE_ROOT").map_or_else(xtask::workspace_root, Into::into)
}

use xtask::test::{SUITE_MODE_VAR as GPU_SUITE_VAR, XTASK_PROGRAM_VAR};

/// Whether the GPU part named `what` runs here. `auto` skips with one line on stderr when there is
/// no usable GPU; `required` panics with the reason instead.
pub fn gpu_suite_runs(what: &str) -> bool {
    let mode = std::env::var(GPU_SUITE_VAR).unwrap_or_else(|_| "auto".to_owned());
    let why_not = match mode.as_str() {
        "skip" => Some(format!("{GPU_SUITE_VAR}=skip")),
        "auto" | "required" => match (cuda_kernels::Gpu::open(), std::env::var_os(XTASK_PROGRAM_VAR)) {
            (Err(why), _) => Some(why.to_string()),
            (Ok(_), None) => Some(format!("{XTASK_PROGRAM_VAR} is not set; run it through `cargo xtask test --gpu`")),
            (Ok(_), Some(_)) => None,
        },
        other => panic!("{GPU_SUITE_VAR}={other} is not one of skip, auto, required"),
    };
    match why_not {
        None => true,
        Some(why) if mode == "required" => panic!("{what}: the GPU suite was required but cannot run: {why}"),
        Some(why) => {
            eprintln!("{what}: GPU suite skipped: {why}");
            false
        }
    }
}

/// Whether the suite must fail when ncu cannot read counters (`cargo xtask test --gpu`).
pub fn counters_required() -> bool {
    std::env::var(GPU_SUITE_VAR).is_ok_and(|mode| mode == "required")
}

/// The `xtask` program named by `BCM_XTASK` (set by `cargo xtask test`).
pub fn xtask_program() -> std::path::PathBuf {
    std::env::var_os(XTASK_PROGRAM_VAR)
        .unwrap_or_else(|| panic!("{XTASK_PROGRAM_VAR} is not set; run the GPU suite through `cargo xtask test --gpu`"))
        .into()
}

/// Every file under `dir` (links not followed) with its bytes and whether it is a link: to show
/// that a command left a folder exactly as it was.
pub fn files_under(dir: &std::path::Path) -> std::collections::BTreeMap<std::path::PathBuf, (Vec<u8>, bool)> {
    let mut files = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display())) {
        let path = entry.expect("a readable entry").path();
        let link = path.symlink_metadata().is_ok_and(|m| m.file_type().is_symlink());
        if path.is_dir() && !link {
            files.extend(files_under(&path));
        } else {
            files.insert(path.clone(), (std::fs::read(&path).unwrap_or_default(), link));
        }
    }
    files
}
