//! Every lesson on the GPU at its profiling size: each run's output check (checksums of exact
//! outputs), the model's cost of every declared access, and ncu's counts, snapshot-tested. The
//! model must equal ncu access by access; a difference fails with a table naming the kernel run
//! and the access. Every lesson of the course's list runs, and all failures are reported together.

use course_tests::{counters_required, gpu_suite_runs, xtask_program};
use lesson_kit::{AnyLesson, mismatch::mismatch_table};

/// Lesson `lesson` on the GPU; `Err` says what failed.
fn lesson_on_the_gpu(lesson: &dyn AnyLesson) -> Result<(), String> {
    let number = lesson.number();
    let record = lesson.suite_record(&course::profile_command(xtask_program(), number))?;
    let snapshot = |what: &str, text: String| {
        std::panic::catch_unwind(|| insta::assert_snapshot!(format!("lesson_{number}_{what}"), text))
            .map_err(|_| format!("the {what} snapshot differs (cargo insta review)"))
    };
    snapshot("outputs", record.outputs.render(false))?;
    snapshot("model", record.model.render(false))?;
    match &record.counters {
        Ok(counters) => {
            if !record.mismatches.is_empty() {
                return Err(format!("the model and ncu disagree:\n{}", mismatch_table(&record.mismatches)));
            }
            snapshot("ncu", counters.render(false))?;
            eprintln!(
                "lesson {number}: {} runs' outputs checked; {} declared accesses equal ncu's counts",
                record.runs, record.accesses
            );
        }
        Err(why) if counters_required() => return Err(format!("ncu's counters are required (--gpu): {why}")),
        Err(why) => eprintln!("lesson {number}: {} runs' outputs checked; counters skipped: {why}", record.runs),
    }
    Ok(())
}

#[test]
fn every_lesson_on_the_gpu() {
    if !gpu_suite_runs("every lesson") {
        return;
    }
    let failures: Vec<String> = course::LESSONS
        .iter()
        .filter_map(|lesson| lesson_on_the_gpu(*lesson).err().map(|why| format!("lesson {}: {why}", lesson.number())))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// memcheck, racecheck and synccheck on every lesson's profile launch: no error, hazard or warning.
#[test]
fn every_lesson_is_clean_under_the_sanitizers() {
    if !gpu_suite_runs("sanitizers") {
        return;
    }
    let mut failures = Vec::new();
    for lesson in course::LESSONS {
        let command = course::profile_command(xtask_program(), lesson.number());
        for tool in cuda_kernels::sanitizer::TOOLS {
            match cuda_kernels::sanitizer::check(tool, &command) {
                Ok(verdict) if verdict.clean => eprintln!("lesson {} {tool}: {}", lesson.number(), verdict.summary),
                Ok(verdict) => {
                    failures.push(format!("lesson {} {tool}: {}\n{}", lesson.number(), verdict.summary, verdict.tail))
                }
                Err(why) if counters_required() => failures.push(format!("{tool}: {why}")),
                Err(why) => {
                    eprintln!("sanitizers skipped: {why}");
                    return;
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
