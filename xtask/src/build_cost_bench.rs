//! `cargo xtask bench --only build`: what the grader's build costs kernels, each timed beside
//! NVRTC's own build of it: every exercise's solution, and every grading fixture whose compiled
//! code keeps local memory (the code the build changes most) and does not print.

use std::{fs, path::Path};

use anyhow::Context;
use cuda_kernels::Gpu;
use exercises::{
    Manifest,
    build_cost::{self, BuildCost},
    learner_file,
};
use serde::Serialize;

/// The grading fixtures, beside the exercises folder (in a checkout and in a `dist` folder).
const CASES: &str = "tests/fixtures/grading/cases";

/// One kernel, as the grader builds it beside as NVRTC does.
#[derive(Serialize)]
pub struct BuildCostRow {
    pub exercise: String,
    /// `solution` or the fixture's name.
    pub kernel: String,
    pub local_memory: bool,
    /// Why it could not be timed, instead.
    pub cost: Result<BuildCost, String>,
}

/// Every solution and every fixture that keeps local memory (and does not print), timed.
pub fn measure(gpu: &Gpu) -> anyhow::Result<Vec<BuildCostRow>> {
    let manifest = Manifest::find()?;
    let cases = manifest.dir.parent().unwrap_or(Path::new(".")).join(CASES);
    let mut kernels = Vec::new();
    for exercise in &manifest.exercises {
        let starter = fs::read_to_string(manifest.path(&exercise.starter)).context("cannot read a starter")?;
        let mut files = vec![("solution".to_owned(), manifest.path(&exercise.solution))];
        if let Ok(folders) = fs::read_dir(cases.join(&exercise.id)) {
            let mut found: Vec<_> = folders.flatten().map(|entry| entry.path().join("exercise.cu")).collect();
            found.sort();
            files.extend(found.into_iter().filter(|file| file.is_file()).map(|file| {
                let name = file.parent().and_then(Path::file_name).map(|n| n.to_string_lossy().into_owned());
                (name.unwrap_or_default(), file)
            }));
        }
        for (name, path) in files {
            let bytes = fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
            // Only what the grader would time: a valid file that compiles to code it loads.
            let Ok(file) = learner_file::validate(exercise, &starter, &bytes) else { continue };
            let Ok(builds) = build_cost::timed_builds(gpu, exercise, &file) else { continue };
            let local_memory = builds.nvrtc_ptx.contains(".local");
            if name == "solution" || local_memory && !builds.nvrtc_ptx.contains("vprintf") {
                kernels.push((exercise, name, local_memory, builds));
            }
        }
    }
    let bar = indicatif::ProgressBar::new(kernels.len() as u64)
        .with_style(indicatif::ProgressStyle::with_template("timing each build {bar:30} {pos}/{len} {msg}")?);
    let rows = kernels
        .into_iter()
        .map(|(exercise, kernel, local_memory, builds)| {
            bar.set_message(format!("{}/{kernel}", exercise.id));
            let cost = build_cost::measure(gpu, &manifest, exercise, builds);
            bar.inc(1);
            BuildCostRow { exercise: exercise.id.clone(), kernel, local_memory, cost }
        })
        .collect();
    bar.finish_and_clear();
    Ok(rows)
}
