//! The grader's speed for `cargo xtask bench`: a generated class graded as `cargo xtask grade`
//! grades it, one check at a time and then several side by side, in one run.

use std::{io, path::Path, time::Instant};

use anyhow::Context;
use exercises::{Manifest, grading, sample_class};
use serde::Serialize;

use crate::exercises::{GradeArgs, TIME_LIMIT_SECONDS, grade};

/// One grading of the whole class.
#[derive(Serialize)]
pub struct GradingRun {
    pub jobs: u16,
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

/// Grades a class of `class_size` generated submissions to `exercise` once for each of `jobs`,
/// each run into a fresh folder so that none resumes another's grades.
pub fn measure(exercise: &str, class_size: usize, jobs: &[u16]) -> anyhow::Result<GradingBench> {
    let manifest = Manifest::find()?;
    let work = tempfile::tempdir().context("cannot make a folder for the generated class")?;
    let class = work.path().join("class");
    sample_class::write(&manifest, manifest.exercise(exercise)?, &class, class_size)
        .context("cannot write the generated class")?;
    let runs = jobs
        .iter()
        .map(|&jobs| {
            let out = work.path().join(format!("grades-jobs-{jobs}"));
            let start = Instant::now();
            grade_quietly(exercise, &class, &out, jobs)?;
            let seconds = start.elapsed().as_secs_f64();
            let graded = grading::read(&out)?.rows.iter().filter(|row| row.graded()).count();
            Ok(GradingRun { jobs, seconds, graded })
        })
        .collect::<anyhow::Result<_>>()?;
    Ok(GradingBench { exercise: exercise.to_owned(), class_size, runs })
}

/// `cargo xtask grade --exercise ID CLASS --out OUT --jobs N`, its summary not printed.
fn grade_quietly(exercise: &str, class: &Path, out: &Path, jobs: u16) -> anyhow::Result<()> {
    let args = GradeArgs {
        exercise: Some(exercise.to_owned()),
        submissions: Some(class.to_owned()),
        shard: None,
        merge: Vec::new(),
        out: Some(out.to_owned()),
        time_limit: TIME_LIMIT_SECONDS,
        no_gpu: false,
        jobs,
        gpus: Vec::new(),
    };
    grade(&args, &mut io::sink()).map(drop)
}
