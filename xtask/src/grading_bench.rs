//! The grader's speed for `cargo xtask bench`: a generated class graded as `cargo xtask grade`
//! grades it, one check at a time (its first [`ONE_AT_A_TIME`] submissions) and then several side
//! by side, in one run. Each side-by-side spread also grades the first half of the class, which
//! splits its time into what every submission adds and what a run pays once (starting the first
//! checks, the last profile).

use std::{collections::HashMap, io, path::Path, time::Instant};

use anyhow::Context;
use exercises::{
    Manifest,
    grading::{self, Row},
    sample_class, sandbox,
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

/// Submissions the first run grades one check at a time: enough to compare every later run's
/// scores with (the class holds two files, each with its own comment), few enough that a large
/// class, which the side-by-side runs need to show their speed, does not take most of the bench.
pub const ONE_AT_A_TIME: usize = 16;

/// One grading of the class (of its first [`ONE_AT_A_TIME`], for the first run).
#[derive(Serialize)]
pub struct GradingRun {
    #[serde(flatten)]
    pub spread: Spread,
    /// Submissions this run was given.
    pub submissions: usize,
    pub seconds: f64,
    /// The same spread's time for the first half of the class, where it was graded too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub half_class_seconds: Option<f64>,
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
    /// Submissions both runs graded.
    pub compared: usize,
    /// Of those, the ones given the same score.
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
            compared: pairs.len(),
            same_score: pairs.iter().filter(|(a, b)| a.score().is_some() && a.score() == b.score()).count(),
            largest_time_change: pairs
                .iter()
                .filter_map(|(a, b)| Some((time(b)? / time(a)? - 1.0).abs()))
                .fold(0.0, f64::max),
        }
    }
}

impl GradingRun {
    pub fn per_minute(&self) -> f64 {
        60.0 * self.submissions as f64 / self.seconds
    }

    /// (seconds a run pays whatever the class's size, submissions a minute beyond them), from the
    /// whole class's time and its first half's, where the half took less.
    pub fn once_started(&self) -> Option<(f64, f64)> {
        let added = (self.submissions - self.submissions / 2) as f64;
        let each = (self.seconds - self.half_class_seconds?) / added;
        (each > 0.0).then(|| (self.seconds - self.submissions as f64 * each, 60.0 / each))
    }
}

#[derive(Serialize)]
pub struct GradingBench {
    pub exercise: String,
    pub class_size: usize,
    /// Correct submissions each GPU profiled together (`None`: `grade`'s default).
    pub profile_batch: Option<u16>,
    /// What confines each check (`grade` says it once per run; the bench once for all its runs).
    pub sandbox: String,
    pub runs: Vec<GradingRun>,
}

/// Grades a class of `class_size` generated submissions to `exercise` once for each of `spreads`,
/// each run into a fresh folder so that none resumes another's grades; a profile holds at most
/// `profile_batch` correct submissions (grade's default where `None`).
pub fn measure(
    exercise: &str,
    class_size: usize,
    spreads: &[Spread],
    profile_batch: Option<u16>,
) -> anyhow::Result<GradingBench> {
    let manifest = Manifest::find()?;
    let work = tempfile::tempdir().context("cannot make a folder for the generated class")?;
    let sizes = [class_size, class_size / 2, class_size.min(ONE_AT_A_TIME)];
    let [class, half_class, sample] = sizes.map(|size| work.path().join(format!("class-of-{size}")));
    for (dir, size) in [&class, &half_class, &sample].into_iter().zip(sizes) {
        sample_class::write(&manifest, manifest.exercise(exercise)?, dir, size)
            .context("cannot write the generated class")?;
    }
    let mut first: Option<Vec<Row>> = None;
    let mut runs = Vec::with_capacity(spreads.len());
    for (index, spread) in spreads.iter().enumerate() {
        let (submissions, class) = match index {
            0 => (sizes[2], &sample),
            _ => (class_size, &class),
        };
        let out = work.path().join(format!("grades-{index}"));
        let seconds = timed_grading(exercise, class, &out, spread, profile_batch)?;
        let half_class_seconds = match index > 0 && class_size >= 2 {
            true => {
                let half_out = work.path().join(format!("grades-{index}-half"));
                Some(timed_grading(exercise, &half_class, &half_out, spread, profile_batch)?)
            }
            false => None,
        };
        let rows = grading::read(&out)?.rows;
        let graded = rows.iter().filter(|row| row.graded()).count();
        let beside_first = first.as_deref().map(|first| Agreement::between(first, &rows));
        first.get_or_insert(rows);
        runs.push(GradingRun {
            spread: spread.clone(),
            submissions,
            seconds,
            half_class_seconds,
            graded,
            beside_first,
        });
    }
    let sandbox = sandbox::probe().to_string();
    Ok(GradingBench { exercise: exercise.to_owned(), class_size, profile_batch, sandbox, runs })
}

/// Seconds [`grade_quietly`] took.
fn timed_grading(
    exercise: &str,
    class: &Path,
    out: &Path,
    spread: &Spread,
    profile_batch: Option<u16>,
) -> anyhow::Result<f64> {
    let start = Instant::now();
    grade_quietly(exercise, class, out, spread, profile_batch)?;
    Ok(start.elapsed().as_secs_f64())
}

/// `cargo xtask grade --exercise ID CLASS --out OUT --jobs N [--gpus LIST] --profile-batch B`, its
/// summary not printed.
fn grade_quietly(
    exercise: &str,
    class: &Path,
    out: &Path,
    spread: &Spread,
    profile_batch: Option<u16>,
) -> anyhow::Result<()> {
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
        profile_batch: profile_batch.unwrap_or(exercises::grading::PROFILE_BATCH as u16),
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
    fn the_half_class_splits_a_run_into_what_it_pays_once_and_what_each_submission_adds() {
        let run = |submissions, seconds, half_class_seconds| GradingRun {
            spread: Spread { jobs: 4, gpus: Vec::new() },
            submissions,
            seconds,
            half_class_seconds,
            graded: 64,
            beside_first: None,
        };
        // 32 more submissions took 26 s more: 0.8125 s each, so 8 s of the 60 are paid once.
        let (once, per_minute) = run(64, 60.0, Some(34.0)).once_started().unwrap();
        assert!((once - 8.0).abs() < 1e-9 && (per_minute - 60.0 / 0.8125).abs() < 1e-9, "{once} {per_minute}");
        // An odd class: its first half is 2 of 5, so the 3 others took the 18 s more.
        let (once, per_minute) = run(5, 40.0, Some(22.0)).once_started().unwrap();
        assert!((once - 10.0).abs() < 1e-9 && (per_minute - 10.0).abs() < 1e-9, "{once} {per_minute}");
        assert_eq!(run(64, 30.0, Some(31.0)).once_started(), None, "noise larger than the half's work");
        assert_eq!(run(64, 30.0, None).once_started(), None);
    }

    #[test]
    fn a_later_run_is_compared_submission_by_submission_with_the_first() {
        let first = [row("a", 100, 1.00), row("b", 60, 2.20), row("c", 100, 1.00)];
        // In another order, one score changed and one time moved by 5%.
        let later = [row("c", 90, 1.05), row("b", 60, 2.178), row("a", 100, 1.00)];
        let agreement = Agreement::between(&first, &later);
        assert_eq!((agreement.compared, agreement.same_score), (3, 2));
        assert!((agreement.largest_time_change - 0.05).abs() < 1e-9, "{}", agreement.largest_time_change);
        let alone = Agreement::between(&first, &first);
        assert_eq!((alone.same_score, alone.largest_time_change), (3, 0.0));
        // A later run of the whole class is compared on the first run's sample.
        let whole = [row("a", 100, 1.0), row("b", 60, 2.2), row("c", 100, 1.0), row("d", 60, 2.2)];
        let on_the_sample = Agreement::between(&first[..2], &whole);
        assert_eq!((on_the_sample.compared, on_the_sample.same_score), (2, 2));
    }
}
