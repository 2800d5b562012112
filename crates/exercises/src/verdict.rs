//! From what a check measured to a score, the reason for every lost point, and what to fix next.
//! Needs no GPU: it only reads an [`CheckOutcome`].

use cuda_kernels::ncu::{SharedFamily, per_request};
use serde::{Deserialize, Serialize};

use crate::{
    check::{CheckOutcome, CounterPair, SubmissionMeasurements},
    manifest::{Exercise, MAX_SCORE, Measure},
};

/// One line of the verdict: correctness or a requirement.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct Item {
    pub what: String,
    /// `None`: not measured (the kernel did not get that far).
    pub measured: Option<String>,
    pub needed: String,
    pub met: bool,
    pub points: u32,
    pub earned: u32,
}

/// A scored check.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct Verdict {
    /// `compile-error`, `crashed`, `timed-out`, `incorrect`, `outside-the-tile`, `kept-memory`,
    /// `correct`, `correct-unmeasured` or `could-not-check`.
    pub outcome: String,
    /// `None` when the submission could not be checked (not its fault): it was not graded.
    pub score: Option<u32>,
    pub compiled: Option<bool>,
    pub correct: Option<bool>,
    pub load_wavefronts_per_request: Option<f64>,
    pub store_wavefronts_per_request: Option<f64>,
    /// `ldmatrix`'s, where an exercise measures them.
    #[serde(default)]
    pub matrix_load_wavefronts_per_request: Option<f64>,
    pub time_vs_reference: Option<f64>,
    pub speedup_vs_starter: Option<f64>,
    pub shared_bytes: Option<u32>,
    pub items: Vec<Item>,
    /// `-30 shared load wavefronts per request: 32, needed ≤ 1`, one per item that lost points.
    pub lost: Vec<String>,
    /// Facts about how it was judged (counters unavailable, ...).
    pub notes: Vec<String>,
    /// What to do next, in one or two sentences.
    pub next: String,
}

pub fn judge(exercise: &Exercise, outcome: &CheckOutcome) -> Verdict {
    let kind = serde_json::to_value(outcome).ok().and_then(|v| v["outcome"].as_str().map(str::to_owned));
    let mut verdict = Verdict {
        outcome: kind.expect("every outcome has a name"),
        score: Some(0),
        compiled: Some(true),
        correct: None,
        load_wavefronts_per_request: None,
        store_wavefronts_per_request: None,
        matrix_load_wavefronts_per_request: None,
        time_vs_reference: None,
        speedup_vs_starter: None,
        shared_bytes: None,
        items: Vec::new(),
        lost: Vec::new(),
        notes: Vec::new(),
        next: String::new(),
    };
    let (failure, next) = match outcome {
        CheckOutcome::Correct(measurements) => {
            verdict.correct = Some(true);
            judge_measurements(exercise, measurements, &mut verdict);
            return verdict;
        }
        CheckOutcome::CorrectUnmeasured { detail } => {
            verdict.correct = Some(true);
            verdict.items.push(Item {
                what: "correct output".into(),
                measured: Some("yes".into()),
                needed: "yes".into(),
                met: true,
                points: exercise.correct_points,
                earned: exercise.correct_points,
            });
            for requirement in &exercise.requirements {
                let what = requirement.measure.describe();
                verdict.lost.push(format!("-{} {what}: not measured ({detail})", requirement.points));
                verdict.items.push(Item {
                    what: what.into(),
                    measured: None,
                    needed: requirement.needed(),
                    met: false,
                    points: requirement.points,
                    earned: 0,
                });
            }
            verdict.score = Some(exercise.correct_points);
            verdict.next =
                format!("Correct, but not measured: {detail}. Look for a loop that runs far longer at the timed size.");
            return verdict;
        }
        CheckOutcome::CouldNotCheck { reason } => {
            verdict.score = None;
            verdict.compiled = None;
            verdict.next = format!("Not checked: {reason}.");
            return verdict;
        }
        CheckOutcome::CompileError { messages } => {
            verdict.compiled = Some(false);
            let first = messages.first().map_or("", String::as_str);
            (format!("does not compile: {first}"), format!("Fix the compile error first: {first}"))
        }
        CheckOutcome::Crashed { detail } => (
            format!("crashed: {detail}"),
            "The kernel crashed on the GPU: look for an index outside the arrays (or a __trap).".to_owned(),
        ),
        CheckOutcome::TimedOut { seconds } => {
            // Killed while compiling or while running: which, the time limit does not tell.
            verdict.compiled = None;
            (
                format!("killed after {seconds} s without finishing"),
                format!("It did not finish within {seconds} s: look for a loop that never ends."),
            )
        }
        CheckOutcome::OutsideTheTile { detail } => {
            verdict.correct = Some(false);
            (
                format!("a place outside the tile: {detail}"),
                format!(
                    "{detail}. Every place your part gives must lie inside the tile it declares; performance is \
                     measured once they do."
                ),
            )
        }
        CheckOutcome::KeptMemory { detail } => {
            verdict.correct = Some(false);
            (
                format!("{detail}, which lasts from one launch to the next"),
                format!(
                    "{detail}, which lasts from one launch to the next (the code after your part could read it to \
                     act otherwise when it is profiled): {}.",
                    crate::check::KEEP_IN_LOCALS
                ),
            )
        }
        CheckOutcome::Incorrect { input, detail } => {
            verdict.correct = Some(false);
            (
                format!("wrong output on the {input} input: {detail}"),
                format!(
                    "The output is wrong on the {input} input ({detail}): every element must still be read and written \
                     exactly once. Performance is measured once the output is right."
                ),
            )
        }
    };
    verdict.items.push(Item {
        what: "correct output".into(),
        measured: Some("no".into()),
        needed: "yes".into(),
        met: false,
        points: exercise.correct_points,
        earned: 0,
    });
    verdict.lost.push(format!("-{} {failure}", exercise.correct_points));
    let rest = MAX_SCORE - exercise.correct_points;
    if rest > 0 {
        verdict.lost.push(format!("-{rest} performance not measured: it needs a correct kernel"));
    }
    for requirement in &exercise.requirements {
        verdict.items.push(Item {
            what: requirement.measure.describe().into(),
            measured: None,
            needed: requirement.needed(),
            met: false,
            points: requirement.points,
            earned: 0,
        });
    }
    verdict.next = next;
    verdict
}

fn judge_measurements(exercise: &Exercise, m: &SubmissionMeasurements, verdict: &mut Verdict) {
    verdict.items.push(Item {
        what: "correct output".into(),
        measured: Some(exercise.inputs.iter().map(|i| format!("yes ({i})")).collect::<Vec<_>>().join(", ")),
        needed: "yes".into(),
        met: true,
        points: exercise.correct_points,
        earned: exercise.correct_points,
    });
    let time_vs_reference = m.submission_ms / m.reference_ms;
    verdict.time_vs_reference = Some(time_vs_reference);
    verdict.speedup_vs_starter = Some(m.starter_ms / m.submission_ms);
    verdict.shared_bytes = Some(m.shared_bytes);
    if let Ok(pair) = &m.counters {
        verdict.load_wavefronts_per_request = judged_per_request(pair, SharedFamily::Lds);
        verdict.store_wavefronts_per_request = judged_per_request(pair, SharedFamily::Sts);
        verdict.matrix_load_wavefronts_per_request = judged_per_request(pair, SharedFamily::Ldsm);
        for measure in exercise.requirements.iter().map(|r| r.measure).filter(|m| m.per_request()) {
            if let Some((made, reference)) = measure.family().and_then(|family| extra_requests(pair, family)) {
                verdict.notes.push(format!(
                    "{}: your kernel made {made} requests where the reference makes {reference}, with the same code \
                     outside your part; its wavefronts are counted per the reference's {reference}, since requests \
                     that your part adds (a load in an index function, or one that no lane makes) would lower the \
                     figure without removing a conflict.",
                    measure.describe()
                ));
            }
        }
    }
    // A load moves 16 bytes at most, four of the reference's 4-byte words: fewer than a quarter of
    // its load requests means loads left the loop that the code outside runs (plain reads the
    // compiler hoisted, or reads of another kind), and then neither the counters nor the clock
    // measure the work.
    let skipped = m.counters.as_ref().ok().and_then(|pair| {
        let ((_, made), (_, reference)) =
            (pair.submission.of(SharedFamily::Lds)?, pair.reference.of(SharedFamily::Lds)?);
        (made.saturating_mul(4) < reference).then_some((made, reference))
    });
    let mut by_clock = false;
    for requirement in &exercise.requirements {
        let counted = requirement.measure.needs_counters();
        let judged_on_the_loads = matches!(
            requirement.measure,
            Measure::LoadWavefrontsVsReference
                | Measure::LoadInstructionsVsReference
                | Measure::SpeedupVsStarter
                | Measure::TimeVsReference
        );
        let unmeasured = match (skipped, &m.profile_failed) {
            (Some((made, reference)), _) if judged_on_the_loads => Some(format!(
                "not measured: your kernel made {made} shared load requests, fewer than a quarter of the reference's \
                 {reference}, so it does not make the loads it is timed and counted on (read with `load`)"
            )),
            (_, Some(why)) if counted => Some(format!(
                "not measured: the kernel failed under Nsight Compute, where the reference did not ({why})"
            )),
            _ => None,
        };
        if let Some(measured) = unmeasured {
            let what = requirement.measure.describe().to_owned();
            verdict.lost.push(format!("-{} {what}: {measured}", requirement.points));
            verdict.items.push(Item {
                what,
                measured: Some(measured),
                needed: requirement.needed(),
                met: false,
                points: requirement.points,
                earned: 0,
            });
            continue;
        }
        let (value, measure, limit) = match (&m.counters, counted) {
            (Err(_), true) => {
                by_clock = true;
                (Some(time_vs_reference), Measure::TimeVsReference, exercise.fallback_time_vs_reference)
            }
            _ => (value(requirement.measure, m), requirement.measure, requirement.limit()),
        };
        // No shared access of that kind: nothing to conflict, unless the reference makes such
        // accesses (then the kernel does not do what is measured).
        let reference_makes_them = counted && reference_value(requirement.measure, m).is_some();
        let met = match value {
            Some(v) => measure.meets(v, limit),
            None => !reference_makes_them,
        };
        let measured = match (value, reference_makes_them) {
            (Some(v), _) => measure.format(v),
            (None, true) => "none (the kernel makes no such access; the reference does)".to_owned(),
            (None, false) => "none".to_owned(),
        };
        let what = match measure == requirement.measure {
            true => measure.describe().to_owned(),
            false => format!("{} (judged by {})", requirement.measure.describe(), measure.describe()),
        };
        if !met {
            verdict.lost.push(format!("-{} {what}: {measured}, needed {}", requirement.points, measure.needed(limit)));
        }
        verdict.items.push(Item {
            what,
            measured: Some(measured),
            needed: measure.needed(limit),
            met,
            points: requirement.points,
            earned: if met { requirement.points } else { 0 },
        });
    }
    if let (true, Err(why)) = (by_clock, &m.counters) {
        verdict.notes.push(format!(
            "Conflicts judged by timing against the reference (met at ≤ {}x its time): Nsight Compute's counters could \
             not be read: {why}",
            exercise.fallback_time_vs_reference
        ));
    }
    verdict.score = Some(verdict.items.iter().map(|i| i.earned).sum());
    let failing = exercise.requirements.iter().zip(&verdict.items[1..]).find(|(_, item)| !item.met);
    verdict.next = match failing {
        None => "All requirements met.".to_owned(),
        Some((requirement, item)) => format!(
            "Correct, but {} is {}, needed {}: {}.",
            item.what,
            item.measured.as_deref().unwrap_or("-"),
            item.needed,
            requirement.fix
        ),
    };
}

/// Whether the reference made the shared accesses `measure` counts: `Some` when it did.
fn reference_value(measure: Measure, m: &SubmissionMeasurements) -> Option<u64> {
    let (_, count) = m.counters.as_ref().ok()?.reference.of(measure.family()?)?;
    (count > 0).then_some(count)
}

/// The submission's wavefronts per request of `family`, counted over at most as many requests
/// as the reference made: the requests are made by the code outside the learner's part, the
/// same in both, so more can only come from that part (see [`extra_requests`]).
fn judged_per_request(pair: &CounterPair, family: SharedFamily) -> Option<f64> {
    let (wavefronts, requests) = pair.submission.of(family)?;
    let counted = extra_requests(pair, family).map_or(requests, |(_, reference)| reference);
    per_request((wavefronts, counted))
}

/// (the submission's requests of `family`, the reference's) where the submission made more:
/// loads added in an index function, or loads that no lane makes, which count as requests that
/// take no wavefront and would water a conflict down.
fn extra_requests(pair: &CounterPair, family: SharedFamily) -> Option<(u64, u64)> {
    let ((_, made), (_, reference)) = (pair.submission.of(family)?, pair.reference.of(family)?);
    (reference > 0 && made > reference).then_some((made, reference))
}

/// A requirement's value, `None` when the kernel made no shared access of that kind.
fn value(measure: Measure, m: &SubmissionMeasurements) -> Option<f64> {
    let counters = m.counters.as_ref().ok();
    let ratio = |a: u64, b: u64| (b > 0).then(|| a as f64 / b as f64);
    match measure {
        Measure::LoadWavefrontsPerRequest
        | Measure::StoreWavefrontsPerRequest
        | Measure::MatrixLoadWavefrontsPerRequest => judged_per_request(counters?, measure.family()?),
        Measure::LoadWavefrontsVsReference => {
            let c = counters?;
            ratio(c.submission.load_wavefronts, c.reference.load_wavefronts)
        }
        Measure::LoadInstructionsVsReference => {
            let c = counters?;
            ratio(c.submission.load_instructions, c.reference.load_instructions)
        }
        Measure::SharedBytesPerBlock => Some(m.shared_bytes as f64),
        Measure::SpeedupVsStarter => Some(m.starter_ms / m.submission_ms),
        Measure::TimeVsReference => Some(m.submission_ms / m.reference_ms),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use cuda_kernels::ncu::SharedCounters;

    use super::*;
    use crate::{
        check::CounterPair,
        manifest::{Input, Manifest},
    };

    pub fn transpose() -> Exercise {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../exercises");
        Manifest::load(&dir).unwrap().exercise("transpose-swizzle").unwrap().clone()
    }

    /// Per warp: 32 loads and 32 stores of `load` and `store` wavefronts each.
    pub fn measured(load: u64, store: u64, submission_ms: f64) -> SubmissionMeasurements {
        let counters = |load, store| SharedCounters {
            load_wavefronts: 32 * load,
            load_instructions: 32,
            store_wavefronts: 32 * store,
            store_instructions: 32,
            matrix_and_async: [None; 3],
        };
        SubmissionMeasurements {
            counters: Ok(CounterPair { submission: counters(load, store), reference: counters(1, 1) }),
            profile_failed: None,
            submission_ms,
            reference_ms: 1.0,
            starter_ms: 1.7,
            shared_bytes: 4096,
        }
    }

    #[test]
    fn a_kernel_that_makes_under_a_quarter_of_the_references_loads_is_not_judged_on_their_totals_or_its_time() {
        let particles = Manifest::load(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../exercises"))
            .unwrap()
            .exercise("particles-layout")
            .unwrap()
            .clone();
        let with_requests = |made: u64, wavefronts: u64| {
            let mut m = measured(1, 1, 0.1);
            let pair = m.counters.as_mut().unwrap();
            (pair.reference.load_wavefronts, pair.reference.load_instructions) = (4096, 4096);
            (pair.submission.load_wavefronts, pair.submission.load_instructions) = (wavefronts, made);
            judge(&particles, &CheckOutcome::Correct(Box::new(m)))
        };
        // One 16-byte load for the reference's four 4-byte ones: the work, done with a quarter.
        assert_eq!(with_requests(1024, 4096).score, Some(100));
        // The loads hoisted out of the loop: a few requests, 4 wavefronts each.
        let hoisted = with_requests(8, 32);
        assert_eq!(hoisted.score, Some(40), "{:?}", hoisted.lost);
        assert!(hoisted.lost.iter().all(|l| l.contains("made 8 shared load requests, fewer than a quarter")));
    }

    #[test]
    fn a_kernel_that_makes_no_shared_loads_does_not_meet_a_wavefront_requirement() {
        let mut none = measured(1, 1, 1.0);
        let pair = none.counters.as_mut().unwrap();
        (pair.submission.load_wavefronts, pair.submission.load_instructions) = (0, 0);
        let verdict = judge(&transpose(), &CheckOutcome::Correct(Box::new(none)));
        assert_eq!(verdict.score, Some(60), "{:?}", verdict.lost);
        assert_eq!(
            verdict.lost[0],
            "-30 shared load wavefronts per request: none (the kernel makes no such access; the reference does), needed ≤ 1"
        );
        assert!(
            verdict.lost[1].starts_with("-10 speed-up over the starter: not measured: your kernel made 0 shared load")
        );
    }

    #[test]
    fn requests_beyond_the_references_do_not_water_a_conflict_down() {
        // The starter's 32-way column loads, plus 31 loads a request that no lane makes: counted
        // as requests with no wavefront, they would make 1 wavefront per request.
        let mut diluted = measured(32, 1, 1.0);
        diluted.counters.as_mut().unwrap().submission.load_instructions = 32 * 32;
        let verdict = judge(&transpose(), &CheckOutcome::Correct(Box::new(diluted)));
        assert_eq!(verdict.load_wavefronts_per_request, Some(32.0));
        assert!(
            verdict.lost.iter().any(|l| l.starts_with("-30 shared load wavefronts per request: 32")),
            "{:?}",
            verdict.lost
        );
        assert!(
            verdict.notes.iter().any(|n| n.contains("made 1024 requests where the reference makes 32")),
            "{:?}",
            verdict.notes
        );
        // Fewer requests than the reference's (loads merged into wider ones) are its own.
        let mut merged = measured(4, 1, 1.0);
        merged.counters.as_mut().unwrap().submission.load_instructions = 8;
        let verdict = judge(&transpose(), &CheckOutcome::Correct(Box::new(merged)));
        assert_eq!((verdict.load_wavefronts_per_request, verdict.notes.len()), (Some(16.0), 0));
        // The same requests as the reference: as measured, with no note.
        let verdict = judge(&transpose(), &CheckOutcome::Correct(Box::new(measured(1, 1, 1.0))));
        assert_eq!((verdict.load_wavefronts_per_request, verdict.notes.len()), (Some(1.0), 0));
    }

    #[test]
    fn ldmatrix_requirements_read_the_matrix_load_counters() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../exercises");
        let exercise = Manifest::load(&dir).unwrap().exercise("ldmatrix-swizzle").unwrap().clone();
        // 4 ldmatrix.x4 of 8 (or 1) wavefronts a matrix; the row copy's stores at 4 wavefronts each.
        let with_ldsm = |per_matrix: u64, executions: u64| {
            let mut m = measured(0, 4, 1.0);
            let pair = m.counters.as_mut().unwrap();
            for counters in [&mut pair.submission, &mut pair.reference] {
                (counters.load_wavefronts, counters.load_instructions) = (0, 0);
                counters.matrix_and_async[0] = Some((4 * 4, 4));
            }
            pair.submission.matrix_and_async[0] = Some((4 * per_matrix * executions, executions));
            (m.shared_bytes, m.starter_ms) = (8192, 100.0);
            m
        };
        let swizzled = judge(&exercise, &CheckOutcome::Correct(Box::new(with_ldsm(1, 4))));
        assert_eq!(swizzled.score, Some(100), "{:?}", swizzled.lost);
        assert_eq!(swizzled.matrix_load_wavefronts_per_request, Some(4.0));
        let conflicted = judge(&exercise, &CheckOutcome::Correct(Box::new(with_ldsm(8, 4))));
        assert_eq!(conflicted.lost, ["-30 ldmatrix wavefronts per request: 32, needed ≤ 4"]);
        let none = judge(&exercise, &CheckOutcome::Correct(Box::new(with_ldsm(1, 0))));
        assert_eq!(
            none.lost,
            [
                "-30 ldmatrix wavefronts per request: none (the kernel makes no such access; the reference does), needed ≤ 4"
            ]
        );
    }

    #[test]
    fn a_kernel_that_fails_only_under_the_profiler_loses_the_counted_points() {
        let mut trapped = measured(1, 1, 1.0);
        trapped.counters = Err("exit status 1".into());
        trapped.profile_failed = Some("exit status 1".into());
        let verdict = judge(&transpose(), &CheckOutcome::Correct(Box::new(trapped)));
        assert_eq!(verdict.score, Some(60), "not judged by the clock: {:?}", verdict.lost);
        assert!(verdict.notes.is_empty(), "{:?}", verdict.notes);
        assert!(
            verdict.lost[0].contains("failed under Nsight Compute, where the reference did not"),
            "{:?}",
            verdict.lost
        );
    }

    #[test]
    fn a_correct_kernel_stopped_while_timed_keeps_its_correctness_points() {
        let detail = "stopped at the time limit (60 s) while profiling and timing".to_owned();
        let verdict = judge(&transpose(), &CheckOutcome::CorrectUnmeasured { detail });
        assert_eq!(
            (verdict.score, verdict.correct, verdict.outcome.as_str()),
            (Some(40), Some(true), "correct-unmeasured")
        );
        assert_eq!(verdict.lost.len(), transpose().requirements.len(), "{:?}", verdict.lost);
        assert!(
            verdict.lost[0].ends_with("not measured (stopped at the time limit (60 s) while profiling and timing)")
        );
    }

    #[test]
    fn a_conflict_free_kernel_gets_every_point() {
        let verdict = judge(&transpose(), &CheckOutcome::Correct(Box::new(measured(1, 1, 1.0))));
        assert_eq!((verdict.score, verdict.correct, verdict.compiled), (Some(100), Some(true), Some(true)));
        assert_eq!((verdict.load_wavefronts_per_request, verdict.store_wavefronts_per_request), (Some(1.0), Some(1.0)));
        assert!(verdict.lost.is_empty() && verdict.notes.is_empty(), "{verdict:?}");
        assert_eq!(verdict.next, "All requirements met.");
    }

    #[test]
    fn a_conflicted_kernel_loses_the_conflict_points_and_is_told_what_to_fix() {
        let mut conflicted = measured(2, 1, 1.0);
        conflicted.shared_bytes = 4224;
        let verdict = judge(&transpose(), &CheckOutcome::Correct(Box::new(conflicted)));
        assert_eq!(verdict.score, Some(60));
        assert_eq!(
            verdict.lost,
            [
                "-30 shared load wavefronts per request: 2, needed ≤ 1",
                "-10 shared memory per block: 4224 B, needed ≤ 4096 B"
            ]
        );
        assert_eq!(
            verdict.next,
            "Correct, but shared load wavefronts per request is 2, needed ≤ 1: a column load still puts several lanes \
             in one bank: column c of rows 0..31 must be in 32 different banks."
        );
    }

    #[test]
    fn without_counters_conflicts_are_judged_by_the_clock_and_the_verdict_says_so() {
        let mut slow = measured(1, 1, 1.5);
        slow.counters = Err("ncu not found".into());
        let verdict = judge(&transpose(), &CheckOutcome::Correct(Box::new(slow)));
        assert_eq!(verdict.load_wavefronts_per_request, None);
        assert_eq!(
            verdict.lost[0],
            "-30 shared load wavefronts per request (judged by time vs the reference): 1.50x, needed ≤ 1.20x"
        );
        assert_eq!(
            verdict.score,
            Some(40 + 10),
            "correct and within the shared memory; 1.13x over the starter is too slow"
        );
        assert_eq!(
            verdict.notes,
            [
                "Conflicts judged by timing against the reference (met at ≤ 1.2x its time): Nsight Compute's counters could \
              not be read: ncu not found"
            ]
        );
        let mut fast = measured(1, 1, 1.0);
        fast.counters = Err("ncu not found".into());
        assert_eq!(judge(&transpose(), &CheckOutcome::Correct(Box::new(fast))).score, Some(100));
    }

    #[test]
    fn failures_before_measuring_cost_everything_with_one_reason_each() {
        let error = "does-not-compile/exercise.cu:20: error: identifier \"colum\" is undefined".to_owned();
        let verdict = judge(&transpose(), &CheckOutcome::CompileError { messages: vec![error.clone()] });
        assert_eq!(
            (verdict.score, verdict.compiled, verdict.outcome.as_str()),
            (Some(0), Some(false), "compile-error")
        );
        assert_eq!(
            verdict.lost,
            [
                format!("-40 does not compile: {error}"),
                "-60 performance not measured: it needs a correct kernel".into()
            ]
        );
        assert_eq!(verdict.next, format!("Fix the compile error first: {error}"));
        assert_eq!(verdict.items.len(), 1 + transpose().requirements.len());

        let wrong = judge(
            &transpose(),
            &CheckOutcome::Incorrect { input: Input::Index, detail: "out[1] is 0, the CPU's answer is 256".into() },
        );
        assert_eq!((wrong.score, wrong.correct), (Some(0), Some(false)));
        assert_eq!(wrong.lost[0], "-40 wrong output on the index-encoded input: out[1] is 0, the CPU's answer is 256");
        let hung = judge(&transpose(), &CheckOutcome::TimedOut { seconds: 30 });
        assert_eq!((hung.score, hung.outcome.as_str()), (Some(0), "timed-out"));
        assert_eq!(hung.lost[0], "-40 killed after 30 s without finishing");
        let crashed = judge(
            &transpose(),
            &CheckOutcome::Crashed { detail: "on the index-encoded input: CUDA driver error".into() },
        );
        assert_eq!(crashed.lost[0], "-40 crashed: on the index-encoded input: CUDA driver error");
        let kept = judge(
            &transpose(),
            &CheckOutcome::KeptMemory { detail: "the launch on the index-encoded input wrote `seen`".into() },
        );
        assert_eq!((kept.score, kept.correct, kept.outcome.as_str()), (Some(0), Some(false), "kept-memory"));
        assert_eq!(
            kept.lost[0],
            "-40 the launch on the index-encoded input wrote `seen`, which lasts from one launch to the next"
        );
        assert!(kept.next.ends_with("keep values in locals, tables in `__constant__ const` memory."), "{}", kept.next);
        let unchecked = judge(&transpose(), &CheckOutcome::CouldNotCheck { reason: "no GPU".into() });
        assert_eq!((unchecked.score, unchecked.compiled), (None, None));
    }
}
