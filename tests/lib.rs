//! Helpers for the course's integration tests: run `cargo xtask ...` in-process and capture it.

use std::process::ExitCode;

use clap::Parser;

/// What one command printed, and how it ended.
pub struct Run {
    pub stdout: String,
    /// `Err` carries the error message `cargo xtask` would print.
    pub result: Result<ExitCode, String>,
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
    let result = xtask::run(cli, &mut out, false).map_err(|e| format!("{e:#}"));
    Run { stdout: String::from_utf8(out).expect("UTF-8 output"), result }
}

/// The clap error for arguments that must not parse.
pub fn parse_error(args: &[&str]) -> String {
    match xtask::Cli::try_parse_from(std::iter::once("xtask").chain(args.iter().copied())) {
        Ok(cli) => panic!("cargo xtask {args:?} parsed as {cli:?}"),
        Err(e) => e.to_string(),
    }
}

/// The workspace's root folder.
pub fn root() -> std::path::PathBuf {
    xtask::workspace_root()
}
