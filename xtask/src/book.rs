//! `cargo xtask book`: regenerates the model's tables for the book, builds the playground's
//! WebAssembly, and builds the book with pinned mdBook and mdbook-katex, installed on first use
//! into a tool folder outside the clone.

use std::{
    env, fs,
    path::{Path, PathBuf},
    process::Command,
};

use crate::workspace_root;
use anyhow::{Context, bail};
use base64::{Engine, engine::general_purpose::STANDARD as BASE64};

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

/// Everything in `book/src/generated/`: the model's tables of each lesson, the results page
/// with its charts, and each measured output of `book/src/measured/` as HTML tables.
pub fn generated_pages() -> anyhow::Result<Vec<(String, String)>> {
    let mut pages: Vec<(String, String)> = course::LESSONS
        .iter()
        .map(|lesson| (format!("lesson-{:02}-model.md", lesson.number()), lesson.model_report().render_markdown()))
        .collect();
    pages.push(("claims-model.md".to_owned(), claims::model_page()));
    pages.push(("rules-measured.md".to_owned(), claims::rules_page()));
    pages.extend(claims::quick_reference::pages());
    if let Some(results) = course::results::Results::read(&workspace_root().join(course::results::BOOK_FILE))? {
        pages.extend(course::results::render(&results)?);
    }
    pages.extend(crate::measured_pages::pages()?);
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

/// The playground's model as a script the page loads (a script, unlike a fetched `.wasm`, also
/// loads when the book is opened from disk).
const PLAYGROUND_SCRIPT: &str = "book/src/assets/bank-playground-wasm.js";

const WASM_TARGET: &str = "wasm32-unknown-unknown";

/// Adds the WebAssembly target through rustup when it is missing, so that setting up takes no
/// step of its own; without rustup, says what to install.
fn ensure_wasm_target() -> anyhow::Result<()> {
    let Ok(installed) = Command::new("rustup").args(["target", "list", "--installed"]).output() else {
        // No rustup: a toolchain installed otherwise must bring the target itself.
        return Ok(());
    };
    if String::from_utf8_lossy(&installed.stdout).lines().any(|target| target.trim() == WASM_TARGET) {
        return Ok(());
    }
    eprintln!("Adding the {WASM_TARGET} target for the book's playground (rustup target add {WASM_TARGET})...");
    let status =
        Command::new("rustup").args(["target", "add", WASM_TARGET]).status().context("could not run rustup")?;
    if !status.success() {
        bail!("`rustup target add {WASM_TARGET}` failed ({status}); the book's playground needs that target");
    }
    Ok(())
}

/// Builds `crates/bank-playground` for WebAssembly and writes it into the book's sources.
fn build_playground() -> anyhow::Result<()> {
    ensure_wasm_target()?;
    let root = workspace_root();
    let output = Command::new(env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(["build", "--profile", "wasm", "--target", WASM_TARGET, "--package", "bank-playground"])
        .args(["--message-format", "json-render-diagnostics"])
        .current_dir(&root)
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("could not run cargo to build the playground")?;
    if !output.status.success() {
        bail!(
            "building the playground for WebAssembly failed ({}); if the target is missing: \
             `rustup target add {WASM_TARGET}`",
            output.status
        );
    }
    let wasm = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|message| message["reason"] == "compiler-artifact" && message["target"]["name"] == "bank_playground")
        .flat_map(|message| message["filenames"].as_array().cloned().unwrap_or_default())
        .filter_map(|file| file.as_str().map(PathBuf::from))
        .find(|file| file.extension().is_some_and(|e| e == "wasm"))
        .context("cargo built the playground but named no .wasm file")?;
    let bytes = fs::read(&wasm).with_context(|| format!("cannot read {}", wasm.display()))?;
    let script = format!(
        "// Written by `cargo xtask book`: crates/bank-playground compiled to WebAssembly, base64.\n\
         globalThis.bankPlaygroundWasm = \"{}\";\n",
        BASE64.encode(bytes)
    );
    let path = root.join(PLAYGROUND_SCRIPT);
    if fs::read_to_string(&path).ok().as_deref() != Some(script.as_str()) {
        fs::write(&path, script).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// Builds the book into `book/build`; returns that folder.
pub fn build() -> anyhow::Result<PathBuf> {
    for name in write_generated_pages()? {
        eprintln!("Updated book/src/generated/{name}");
    }
    let out = workspace_root().join("book/build");
    render(&out)?;
    eprintln!("Book built: {}", out.join("index.html").display());
    Ok(out)
}

/// Builds the playground and renders the book's sources as they are into `out`.
pub fn render(out: &Path) -> anyhow::Result<()> {
    build_playground()?;
    let paths = [MDBOOK_KATEX.ensure()?, MDBOOK.ensure()?];
    let path =
        env::join_paths(paths.iter().cloned().chain(env::split_paths(&env::var_os("PATH").unwrap_or_default())))?;
    let status = Command::new(paths[1].join("mdbook"))
        .arg("build")
        .arg("--dest-dir")
        .arg(out)
        .arg(workspace_root())
        .env("PATH", path)
        .status()
        .context("could not run mdbook")?;
    if !status.success() {
        bail!("mdbook build failed ({status})");
    }
    Ok(())
}
