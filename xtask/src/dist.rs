//! `cargo xtask dist`: a folder that runs the course on a Linux GPU machine with a driver and
//! CUDA but no Rust toolchain (a lab server): the release binary, the kernels, the exercises,
//! and a README.

use std::{
    env, fs,
    io::Write,
    path::{Path, PathBuf},
    process::{Command, ExitCode, Stdio},
};

use anyhow::{Context, bail};

use crate::{test, workspace_root};

/// What the GPU suite reads, relative to the workspace (and to the folder made here): its
/// snapshots and the grading fixtures.
const SUITE_DATA: [&str; 2] = ["tests/gpu/snapshots", "tests/fixtures"];

const README: &str = include_str!("../dist-README.md");

pub fn run(folder: &Path, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let root = workspace_root();
    let status = Command::new(env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(["build", "--release", "--package", "xtask"])
        .current_dir(&root)
        .status()
        .context("could not run cargo build")?;
    if !status.success() {
        bail!("release build failed ({status})");
    }
    let folder = if folder.is_absolute() { folder.to_path_buf() } else { root.join(folder) };
    let kernels = folder.join("kernels");
    fs::create_dir_all(&kernels).with_context(|| format!("cannot create {}", kernels.display()))?;
    fs::copy(root.join("target/release/xtask"), folder.join("xtask")).context("cannot copy the binary")?;
    fs::copy(build_gpu_suite(&root)?, folder.join(test::SUITE_BINARY)).context("cannot copy the GPU suite")?;
    for suite_data in SUITE_DATA {
        copy_folder(&root.join(suite_data), &folder.join(suite_data)).context("cannot copy the GPU suite's data")?;
    }
    for entry in fs::read_dir(root.join("kernels"))? {
        let path = entry?.path();
        if path.extension().is_some_and(|ext| ext == "cu" || ext == "cuh") {
            fs::copy(&path, kernels.join(path.file_name().expect("a file"))).context("cannot copy a kernel")?;
        }
    }
    copy_folder(&root.join("exercises"), &folder.join("exercises")).context("cannot copy the exercises")?;
    fs::write(folder.join("README.md"), README)?;
    writeln!(out, "{}", folder.display())?;
    Ok(ExitCode::SUCCESS)
}

/// Builds the GPU suite's test binary in release mode; returns its path.
fn build_gpu_suite(root: &Path) -> anyhow::Result<PathBuf> {
    let output = Command::new(env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(["test", "--release", "--package", "course-tests", "--test", "gpu", "--no-run"])
        .args(["--message-format", "json-render-diagnostics"])
        .current_dir(root)
        .stderr(Stdio::inherit())
        .output()
        .context("could not run cargo test --no-run")?;
    if !output.status.success() {
        bail!("building the GPU suite failed ({})", output.status);
    }
    // cargo prints one JSON message per line; the test binary is the artifact with an executable.
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find_map(|message| {
            let is_suite = message["reason"] == "compiler-artifact" && message["target"]["name"] == "gpu";
            message["executable"].as_str().filter(|_| is_suite).map(PathBuf::from)
        })
        .context("cargo built no GPU suite binary")
}

/// Copies the files and sub-folders of `from` into `to`, replacing what was there; nothing when
/// `from` does not exist (a course without snapshots yet).
fn copy_folder(from: &Path, to: &Path) -> std::io::Result<()> {
    if !from.exists() {
        return Ok(());
    }
    let _ = fs::remove_dir_all(to);
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let path = entry?.path();
        let target = to.join(path.file_name().expect("an entry"));
        if path.is_dir() { copy_folder(&path, &target)? } else { fs::copy(&path, &target).map(drop)? }
    }
    Ok(())
}
