//! `cargo xtask book`: regenerates the model's tables for the book and builds it with pinned
//! mdBook and mdbook-katex, installed on first use into a tool folder outside the clone.

use std::{
    env, fs,
    path::{Path, PathBuf},
    process::Command,
};

use crate::{lessons, results, workspace_root};
use anyhow::{Context, bail};

/// A pinned tool installed with `cargo install`.
struct Tool {
    krate: &'static str,
    version: &'static str,
}

// mdbook-katex 0.10.0 is built against mdBook 0.5.3; the same version keeps the two in step.
const MDBOOK: Tool = Tool { krate: "mdbook", version: "0.5.3" };
const MDBOOK_KATEX: Tool = Tool { krate: "mdbook-katex", version: "0.10.0" };

/// Overrides where the book's tools are installed.
const TOOLS_DIR_VAR: &str = "BCM_TOOLS_DIR";

/// `$BCM_TOOLS_DIR`, else `$CARGO_HOME/bank-conflicts-measured/tools` (`~/.cargo/...`): outside
/// the clone, so every clone and CI run on a machine shares one install.
fn tools_dir() -> PathBuf {
    if let Some(dir) = env::var_os(TOOLS_DIR_VAR) {
        return dir.into();
    }
    let cargo_home = env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|home| Path::new(&home).join(".cargo")))
        .unwrap_or_else(|| PathBuf::from(".cargo"));
    cargo_home.join("bank-conflicts-measured").join("tools")
}

impl Tool {
    fn root(&self) -> PathBuf {
        tools_dir().join(format!("{}-{}", self.krate, self.version))
    }

    /// The tool's `bin` folder, installing the pinned version first if it is missing.
    fn ensure(&self) -> anyhow::Result<PathBuf> {
        let bin = self.root().join("bin");
        if bin.join(self.krate).is_file() {
            return Ok(bin);
        }
        eprintln!(
            "Installing {} {} into {} (first time on this machine; cargo builds it, a few minutes)...",
            self.krate,
            self.version,
            self.root().display()
        );
        let status = Command::new(env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
            .args(["install", "--locked", "--quiet", "--version", self.version, "--root"])
            .arg(self.root())
            .arg(self.krate)
            .status()
            .with_context(|| format!("could not run cargo to install {}", self.krate))?;
        if !status.success() {
            bail!("installing {} {} failed ({status}); see cargo's messages above", self.krate, self.version);
        }
        Ok(bin)
    }
}

/// Everything in `book/src/generated/`: the model's tables of each lesson, and the results page
/// with its charts.
pub fn generated_pages() -> anyhow::Result<Vec<(String, String)>> {
    let mut pages = lessons::model_pages();
    pages.extend(results::pages()?);
    Ok(pages)
}

fn generated_dir() -> PathBuf {
    workspace_root().join("book/src/generated")
}

/// Writes the generated pages and removes files there that are no longer generated; returns the
/// names of those that changed.
pub fn write_generated_pages() -> anyhow::Result<Vec<String>> {
    let dir = generated_dir();
    fs::create_dir_all(&dir)?;
    let pages = generated_pages()?;
    let mut changed = Vec::new();
    for (name, text) in &pages {
        let path = dir.join(name);
        if fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
            changed.push(name.clone());
        }
    }
    for entry in fs::read_dir(&dir)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if !pages.iter().any(|(page, _)| *page == name) {
            fs::remove_file(dir.join(&name)).with_context(|| format!("cannot remove stale {name}"))?;
            changed.push(name);
        }
    }
    Ok(changed)
}

/// Builds the book into `book/build`; returns that folder.
pub fn build() -> anyhow::Result<PathBuf> {
    for name in write_generated_pages()? {
        eprintln!("Updated book/src/generated/{name}");
    }
    let paths = [MDBOOK_KATEX.ensure()?, MDBOOK.ensure()?];
    let path =
        env::join_paths(paths.iter().cloned().chain(env::split_paths(&env::var_os("PATH").unwrap_or_default())))?;
    let root = workspace_root();
    let status = Command::new(paths[1].join("mdbook"))
        .arg("build")
        .arg(&root)
        .env("PATH", path)
        .status()
        .context("could not run mdbook")?;
    if !status.success() {
        bail!("mdbook build failed ({status})");
    }
    let out = root.join("book/build");
    eprintln!("Book built: {}", out.join("index.html").display());
    Ok(out)
}
