//! `cargo xtask test`: every check that can run here, then the GPU suite where a GPU is.

use std::{env, process::Command, process::ExitCode};

use anyhow::{Context, bail};

use crate::{book, book_check, lessons, workspace_root};

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

pub fn run(suite: GpuSuite) -> anyhow::Result<ExitCode> {
    step("cargo test --workspace");
    let status = Command::new(env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(["test", "--workspace", "--all-targets"])
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
    step("GPU suite");
    let summary = match suite {
        GpuSuite::Skip => "GPU suite skipped: --no-gpu given".to_owned(),
        GpuSuite::Auto | GpuSuite::Required => lessons::gpu_suite(suite == GpuSuite::Required)?,
    };
    eprintln!("{summary}");
    Ok(ExitCode::SUCCESS)
}
