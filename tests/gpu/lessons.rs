//! Every lesson on the GPU at its profiling size: each run's output check (checksums of exact
//! outputs), the model's cost of every declared access, and ncu's counts, snapshot-tested. The
//! model must equal ncu access by access; a difference fails with a table naming the kernel run
//! and the access.

use course_tests::{counters_required, gpu_suite_runs, xtask_program};
use lesson_kit::lesson::mismatch_table;

fn lesson_on_the_gpu(number: u32) {
    if !gpu_suite_runs(&format!("lesson {number}")) {
        return;
    }
    let record =
        xtask::lessons::suite_record(number, &xtask_program()).unwrap_or_else(|e| panic!("lesson {number}: {e:#}"));
    insta::assert_snapshot!(format!("lesson_{number}_outputs"), record.outputs.render(false));
    insta::assert_snapshot!(format!("lesson_{number}_model"), record.model.render(false));
    match &record.counters {
        Ok(counters) => {
            assert!(
                record.mismatches.is_empty(),
                "lesson {number}: the model and ncu disagree:\n{}",
                mismatch_table(&record.mismatches)
            );
            insta::assert_snapshot!(format!("lesson_{number}_ncu"), counters.render(false));
            eprintln!(
                "lesson {number}: {} runs' outputs checked; {} declared accesses equal ncu's counts",
                record.runs, record.accesses
            );
        }
        Err(why) if counters_required() => panic!("lesson {number}: ncu's counters are required (--gpu): {why}"),
        Err(why) => eprintln!("lesson {number}: {} runs' outputs checked; counters skipped: {why}", record.runs),
    }
}

/// One test per lesson, so each passes or fails on its own.
macro_rules! lessons_on_the_gpu {
    ($($test:ident: $number:literal),*) => {
        $(#[test] fn $test() { lesson_on_the_gpu($number) })*

        #[test]
        fn every_lesson_is_in_the_suite() {
            let numbers: Vec<u32> = xtask::lessons::list().into_iter().map(|(number, _)| number).collect();
            assert_eq!(numbers, [$($number),*], "add the new lesson to lessons_on_the_gpu!");
        }
    };
}

lessons_on_the_gpu!(
    lesson_1: 1,
    lesson_2: 2,
    lesson_3: 3,
    lesson_4: 4,
    lesson_5: 5,
    lesson_6: 6,
    lesson_7: 7,
    lesson_8: 8,
    lesson_9: 9,
    lesson_10: 10,
    lesson_11: 11
);
