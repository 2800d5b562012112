//! `cargo xtask dist`: a folder that runs the course on a Linux GPU machine with a driver and
//! CUDA but no Rust toolchain (a lab server): the release binary, the kernels, and a README.

use std::{
    env, fs,
    io::Write,
    path::{Path, PathBuf},
    process::{Command, ExitCode, Stdio},
};

use anyhow::{Context, bail};

use crate::{test, workspace_root};

/// Where the GPU suite's snapshots live, relative to the workspace (and to the folder made here).
const SUITE_SNAPSHOTS: &str = "tests/gpu/snapshots";

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
    copy_folder(&root.join(SUITE_SNAPSHOTS), &folder.join(SUITE_SNAPSHOTS))?;
    for entry in fs::read_dir(root.join("kernels"))? {
        let path = entry?.path();
        if path.extension().is_some_and(|ext| ext == "cu") {
            fs::copy(&path, kernels.join(path.file_name().expect("a file"))).context("cannot copy a kernel")?;
        }
    }
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

/// Copies the files of `from` (one level, if it exists) into `to`, replacing what was there.
fn copy_folder(from: &Path, to: &Path) -> anyhow::Result<()> {
    let _ = fs::remove_dir_all(to);
    fs::create_dir_all(to).with_context(|| format!("cannot create {}", to.display()))?;
    let entries = match fs::read_dir(from) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        entries => entries.with_context(|| format!("cannot read {}", from.display()))?,
    };
    for entry in entries {
        let path = entry?.path();
        if path.is_file() {
            fs::copy(&path, to.join(path.file_name().expect("a file")))
                .with_context(|| format!("cannot copy {}", path.display()))?;
        }
    }
    Ok(())
}
