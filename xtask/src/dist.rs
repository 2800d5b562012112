//! `cargo xtask dist`: a folder that runs the course on a Linux GPU machine with a driver and
//! CUDA but no Rust toolchain (a lab server): the release binary, the kernels, the exercises,
//! and a README.

use std::{env, fs, io::Write, path::Path, process::Command, process::ExitCode};

use anyhow::{Context, bail};

use crate::workspace_root;

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

/// Copies the files and sub-folders of `from` into `to`.
fn copy_folder(from: &Path, to: &Path) -> std::io::Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let path = entry?.path();
        let target = to.join(path.file_name().expect("an entry"));
        if path.is_dir() { copy_folder(&path, &target)? } else { fs::copy(&path, &target).map(drop)? }
    }
    Ok(())
}
