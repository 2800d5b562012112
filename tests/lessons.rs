//! `cargo xtask lesson N` without a GPU: the model's tables and one line saying why the GPU part
//! was skipped.

use course_tests::xtask;

#[test]
fn every_lesson_without_gpu() {
    for number in course::LESSONS.iter().map(|lesson| lesson.number()) {
        let run = xtask(&["lesson", &number.to_string(), "--no-gpu"]);
        assert!(run.succeeded(), "lesson {number}: {}", run.error());
        assert!(run.stdout.trim_end().ends_with("GPU runs skipped: --no-gpu given."), "lesson {number}");
        insta::assert_snapshot!(format!("lesson_{number}_no_gpu"), run.stdout);
    }
}

#[test]
fn lesson_1_on_a_machine_without_a_usable_gpu_says_why_in_one_line() {
    if cuda_kernels_available() {
        return;
    }
    let run = xtask(&["lesson", "1"]);
    assert!(run.succeeded(), "exit 0 without a GPU: {}", run.error());
    let skipped: Vec<&str> = run.stdout.lines().filter(|l| l.starts_with("GPU runs skipped: ")).collect();
    assert_eq!(skipped.len(), 1, "{}", run.stdout);
    let without_reason = run.stdout.replace(skipped[0], "GPU runs skipped: --no-gpu given.");
    assert_eq!(without_reason, xtask(&["lesson", "1", "--no-gpu"]).stdout, "same tables either way");
}

/// Whether this machine could run the GPU part (then the no-GPU path is tested with --no-gpu only).
fn cuda_kernels_available() -> bool {
    let run = xtask(&["lesson", "1", "--no-ncu"]);
    !run.stdout.contains("GPU runs skipped: ")
}

#[test]
fn unknown_lessons_are_listed() {
    let run = xtask(&["lesson", "99"]);
    assert_eq!(
        run.error(),
        "there is no lesson `99`. The lessons are:\n   1  Banks and strides\n   2  Padding\n   3  Transpose\n   4  GEMM tiling\n   5  The occupancy tradeoff\n   6  Reductions\n   7  Vector widths and data types\n   8  Broadcast and shuffle\n   9  Swizzling\n  10  Arrays of structs, structs of arrays\n  11  Scans\n  12  Stencils\n  13  FFT butterflies\n  14  Tensor-core tiles\n  15  Filling tiles: cp.async pipelines and the TMA\nRun one with e.g. `cargo xtask lesson 1`."
    );
    assert_eq!(
        xtask(&["lesson", "list"]).stdout,
        " 1  Banks and strides\n 2  Padding\n 3  Transpose\n 4  GEMM tiling\n 5  The occupancy tradeoff\n 6  Reductions\n 7  Vector widths and data types\n 8  Broadcast and shuffle\n 9  Swizzling\n10  Arrays of structs, structs of arrays\n11  Scans\n12  Stencils\n13  FFT butterflies\n14  Tensor-core tiles\n15  Filling tiles: cp.async pipelines and the TMA\n"
    );
}

#[test]
fn charts_need_a_gpu_run() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("plots");
    let run = xtask(&["lesson", "5", "--no-gpu", "--plots", dir.to_str().unwrap()]);
    assert!(run.succeeded(), "{}", run.error());
    assert_eq!(std::fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0), 0);
}

/// The GPU suite compares each lesson's declared accesses with ncu's counts on the H100 and keeps
/// them as a snapshot; the declarations must still be those, access by access, without a GPU.
#[test]
fn declared_accesses_are_the_ones_the_gpu_suite_measured() {
    for lesson in course::LESSONS {
        let number = lesson.number();
        let snapshot =
            course_tests::root().join(format!("tests/gpu/snapshots/gpu__lessons__lesson_{number}_model.snap"));
        let text = std::fs::read_to_string(&snapshot).unwrap();
        let measured = text.splitn(3, "---\n").nth(2).expect("an insta snapshot");
        let declared = lesson.declared_accesses(&cuda_kernels::GpuInfo::h100()).render(false);
        assert_eq!(
            declared.trim_end(),
            measured.trim_end(),
            "lesson {number}: the declarations changed since the GPU suite measured them"
        );
    }
}
