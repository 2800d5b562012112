//! The grader's speed for `cargo xtask bench`: a generated class graded as `cargo xtask grade`
//! grades it, one check at a time and then several side by side, in one run.

use std::{io, path::Path, time::Instant};

use anyhow::Context;
use exercises::{Manifest, grading, sample_class};
use serde::Serialize;

use crate::exercises::{GradeArgs, TIME_LIMIT_SECONDS, grade};

/// How one grading of the class spreads its checks.
#[derive(Clone, Debug, Serialize)]
pub struct Spread {
    /// Checks side by side on each GPU.
    pub jobs: u16,
    /// The GPUs (`--gpus`); empty: the first GPU only.
    pub gpus: Vec<u32>,
}

/// One grading of the whole class.
#[derive(Serialize)]
pub struct GradingRun {
    #[serde(flatten)]
    pub spread: Spread,
    pub seconds: f64,
    /// Submissions that got a score (all of them, unless a check failed to run).
    pub graded: usize,
}

impl GradingRun {
    pub fn per_minute(&self, class_size: usize) -> f64 {
        60.0 * class_size as f64 / self.seconds
    }
}

#[derive(Serialize)]
pub struct GradingBench {
    pub exercise: String,
    pub class_size: usize,
    pub runs: Vec<GradingRun>,
}

/// Grades a class of `class_size` generated submissions to `exercise` once for each of `spreads`,
/// each run into a fresh folder so that none resumes another's grades.
pub fn measure(exercise: &str, class_size: usize, spreads: &[Spread]) -> anyhow::Result<GradingBench> {
    let manifest = Manifest::find()?;
    let work = tempfile::tempdir().context("cannot make a folder for the generated class")?;
    let class = work.path().join("class");
    sample_class::write(&manifest, manifest.exercise(exercise)?, &class, class_size)
        .context("cannot write the generated class")?;
    let runs = spreads
        .iter()
        .enumerate()
        .map(|(index, spread)| {
            let out = work.path().join(format!("grades-{index}"));
            let start = Instant::now();
            grade_quietly(exercise, &class, &out, spread)?;
            let seconds = start.elapsed().as_secs_f64();
            let graded = grading::read(&out)?.rows.iter().filter(|row| row.graded()).count();
            Ok(GradingRun { spread: spread.clone(), seconds, graded })
        })
        .collect::<anyhow::Result<_>>()?;
    Ok(GradingBench { exercise: exercise.to_owned(), class_size, runs })
}

/// `cargo xtask grade --exercise ID CLASS --out OUT --jobs N [--gpus LIST]`, its summary not printed.
fn grade_quietly(exercise: &str, class: &Path, out: &Path, spread: &Spread) -> anyhow::Result<()> {
    let args = GradeArgs {
        exercise: Some(exercise.to_owned()),
        submissions: Some(class.to_owned()),
        shard: None,
        merge: Vec::new(),
        out: Some(out.to_owned()),
        time_limit: TIME_LIMIT_SECONDS,
        no_gpu: false,
        jobs: spread.jobs,
        gpus: spread.gpus.clone(),
    };
    grade(&args, &mut io::sink()).map(drop)
}
