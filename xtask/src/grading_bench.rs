//! The grader's speed for `cargo xtask bench`: a generated class graded as `cargo xtask grade`
//! grades it, one check at a time and then several side by side, in one run.

use std::{collections::HashMap, io, path::Path, time::Instant};

use anyhow::Context;
use exercises::{
    Manifest,
    grading::{self, Row},
    sample_class,
};
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
    /// Beside the first run (one check at a time), where this is a later one: whether checks side
    /// by side judge as one alone does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub beside_first: Option<Agreement>,
}

/// How a run's grades compare with the first run's, submission by submission.
#[derive(Serialize)]
pub struct Agreement {
    /// Submissions given the same score.
    pub same_score: usize,
    /// The largest relative change of a submission's time against the reference's.
    pub largest_time_change: f64,
}

impl Agreement {
    fn between(first: &[Row], later: &[Row]) -> Agreement {
        let by_name: HashMap<&str, &Row> = first.iter().map(|row| (row.submission.as_str(), row)).collect();
        let pairs: Vec<(&Row, &Row)> =
            later.iter().filter_map(|row| Some((*by_name.get(row.submission.as_str())?, row))).collect();
        let time = |row: &Row| row.verdict.as_ref().and_then(|v| v.time_vs_reference);
        Agreement {
            same_score: pairs.iter().filter(|(a, b)| a.score().is_some() && a.score() == b.score()).count(),
            largest_time_change: pairs
                .iter()
                .filter_map(|(a, b)| Some((time(b)? / time(a)? - 1.0).abs()))
                .fold(0.0, f64::max),
        }
    }
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
    let mut first: Option<Vec<Row>> = None;
    let mut runs = Vec::with_capacity(spreads.len());
    for (index, spread) in spreads.iter().enumerate() {
        let out = work.path().join(format!("grades-{index}"));
        let start = Instant::now();
        grade_quietly(exercise, &class, &out, spread)?;
        let seconds = start.elapsed().as_secs_f64();
        let rows = grading::read(&out)?.rows;
        let graded = rows.iter().filter(|row| row.graded()).count();
        let beside_first = first.as_deref().map(|first| Agreement::between(first, &rows));
        first.get_or_insert(rows);
        runs.push(GradingRun { spread: spread.clone(), seconds, graded, beside_first });
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, score: u32, time_vs_reference: f64) -> Row {
        serde_json::from_value(serde_json::json!({
            "submission": name,
            "verdict": {
                "outcome": "correct", "score": score, "time_vs_reference": time_vs_reference,
                "items": [], "lost": [], "notes": [], "next": "",
            },
        }))
        .expect("a row")
    }

    #[test]
    fn a_later_run_is_compared_submission_by_submission_with_the_first() {
        let first = [row("a", 100, 1.00), row("b", 60, 2.20), row("c", 100, 1.00)];
        // In another order, one score changed and one time moved by 5%.
        let later = [row("c", 90, 1.05), row("b", 60, 2.178), row("a", 100, 1.00)];
        let agreement = Agreement::between(&first, &later);
        assert_eq!(agreement.same_score, 2);
        assert!((agreement.largest_time_change - 0.05).abs() < 1e-9, "{}", agreement.largest_time_change);
        let alone = Agreement::between(&first, &first);
        assert_eq!((alone.same_score, alone.largest_time_change), (3, 0.0));
    }
}
