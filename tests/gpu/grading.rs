//! Exercises and grading on the GPU, through the compiled `xtask` program as a learner and an
//! instructor run it: every starter fails and every solution passes, and grading the six fixtures
//! of `transpose-swizzle` gives each its expected row. The tests hold one lock, so that no two
//! checks time kernels at once (speed is a requirement).

use std::{collections::BTreeMap, path::Path, process::Command, sync::Mutex};

use course_tests::{files_under, gpu_suite_runs, root, xtask_program};
use exercises::{Manifest, check::CheckOutcome};
use serde_json::Value;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Exit status and everything printed.
fn xtask(args: &[&str]) -> (Option<i32>, String) {
    let output = Command::new(xtask_program()).args(args).current_dir(root()).output().expect("xtask starts");
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    (output.status.code(), text)
}

#[test]
fn every_starter_fails_its_requirements_and_every_solution_passes() {
    if !gpu_suite_runs("grading") {
        return;
    }
    let _gpu = ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let manifest = Manifest::load(&root().join("exercises")).unwrap();
    for exercise in &manifest.exercises {
        let id = exercise.id.as_str();
        let starter = manifest.path(&exercise.starter);
        let (code, out) = xtask(&["exercise", id, "--file", starter.to_str().unwrap(), "--time-limit", "300"]);
        assert_eq!(code, Some(1), "{id}: the starter must fail:\n{out}");
        assert!(out.contains("Correct, but "), "{id}: the starter is correct and fails a requirement:\n{out}");
        let solution = manifest.path(&exercise.solution);
        let (code, out) = xtask(&["exercise", id, "--file", solution.to_str().unwrap(), "--time-limit", "300"]);
        assert_eq!(code, Some(0), "{id}: the solution must pass:\n{out}");
        assert!(out.contains("Score: 100/100") && out.contains("All requirements met."), "{id}:\n{out}");
        assert!(!out.contains("Note: Conflicts judged by timing"), "{id}: the GPU suite reads the counters:\n{out}");
    }
}

fn rows(out: &Path) -> BTreeMap<String, Value> {
    let json: Value = serde_json::from_str(&std::fs::read_to_string(out.join("grades.json")).unwrap()).unwrap();
    json["rows"].as_array().unwrap().iter().map(|r| (r["submission"].as_str().unwrap().to_owned(), r.clone())).collect()
}

#[test]
fn grading_the_six_fixtures_gives_each_its_verdict_and_a_rerun_redoes_none() {
    if !gpu_suite_runs("grading") {
        return;
    }
    let _gpu = ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let fixtures = root().join("tests/fixtures/grading/transpose-swizzle");
    let before = files_under(&fixtures);
    let out = tempfile::tempdir().unwrap();
    let args = [
        "grade",
        "--exercise",
        "transpose-swizzle",
        fixtures.to_str().unwrap(),
        "--out",
        out.path().to_str().unwrap(),
        "--time-limit",
        "30",
    ];
    let (code, text) = xtask(&args);
    assert_eq!(code, Some(0), "every submission graded:\n{text}");
    let rows = rows(out.path());
    let verdict = |name: &str| rows[name]["verdict"].clone();

    let correct = verdict("correct");
    assert_eq!(correct["score"], 100, "{correct:#}");
    assert_eq!((correct["compiled"].clone(), correct["correct"].clone()), (Value::Bool(true), Value::Bool(true)));
    assert_eq!(
        (correct["load_wavefronts_per_request"].as_f64(), correct["store_wavefronts_per_request"].as_f64()),
        (Some(1.0), Some(1.0))
    );
    assert_eq!(correct["lost"], serde_json::json!([]));

    // Rows r and r + 16 share every bank: exactly 2 wavefronts per column load, 1 per row store.
    let conflicted = verdict("conflicted");
    assert_eq!(conflicted["correct"], true, "{conflicted:#}");
    assert_eq!(conflicted["load_wavefronts_per_request"].as_f64(), Some(2.0), "{conflicted:#}");
    assert_eq!(conflicted["store_wavefronts_per_request"].as_f64(), Some(1.0));
    let lost: Vec<&str> = conflicted["lost"].as_array().unwrap().iter().map(|l| l.as_str().unwrap()).collect();
    assert_eq!(lost[0], "-30 shared load wavefronts per request: 2, needed ≤ 1");
    assert!(
        lost[1..].iter().all(|l| l.starts_with("-10 speed-up over the starter: ")),
        "only speed may go too: {lost:?}"
    );
    assert!(conflicted["score"] == 70 || conflicted["score"] == 60, "{conflicted:#}");

    let wrong = verdict("wrong-result");
    assert_eq!(
        (wrong["outcome"].as_str(), wrong["score"].as_u64(), wrong["correct"].as_bool()),
        (Some("incorrect"), Some(0), Some(false))
    );
    assert!(
        wrong["lost"][0].as_str().unwrap().starts_with("-40 wrong output on the index-encoded input: out["),
        "{wrong:#}"
    );

    let broken = verdict("does-not-compile");
    assert_eq!(
        (broken["outcome"].as_str(), broken["score"].as_u64(), broken["compiled"].as_bool()),
        (Some("compile-error"), Some(0), Some(false))
    );
    assert_eq!(
        broken["lost"][0],
        "-40 does not compile: does-not-compile/exercise.cu:20: error: identifier \"colum\" is undefined"
    );

    let crashed = verdict("crashes");
    assert_eq!((crashed["outcome"].as_str(), crashed["score"].as_u64()), (Some("crashed"), Some(0)), "{crashed:#}");
    assert!(
        crashed["lost"][0].as_str().unwrap().starts_with("-40 crashed: on the index-encoded input: CUDA driver error"),
        "{crashed:#}"
    );

    let hung = verdict("hangs");
    assert_eq!((hung["outcome"].as_str(), hung["score"].as_u64()), (Some("timed-out"), Some(0)), "{hung:#}");
    assert_eq!(hung["lost"][0], "-40 killed after 30 s without finishing");

    for file in ["grades.csv", "summary.md", "progress.jsonl"] {
        assert!(out.path().join(file).is_file(), "{file} written");
    }
    let (code, text) = xtask(&args);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("Resumed: 6 submissions graded by an earlier run into this folder were kept."), "{text}");
    assert_eq!(self::rows(out.path()), rows, "the same rows, none checked again");
    assert_eq!(files_under(&fixtures), before, "the submissions are never modified");
}

/// What a launch leaves in the module's own memory is found at run time, however the address was
/// made: here a shared variable's address plus a difference rebuilt bit by bit from integers,
/// which the PTX check cannot follow (the check of the source refuses the casts and the shared
/// variable; these files are handed to the check directly, past it). A namespace constant, a
/// function's `static` and a `__constant__` table are each written. The address rebuilt alone, a
/// number, is refused before any launch.
#[test]
fn a_launch_that_writes_lasting_memory_is_caught_however_the_address_was_made() {
    if !gpu_suite_runs("grading") {
        return;
    }
    let _gpu = ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let (manifest, starter) = starter_of("row-sums");
    let exercise = manifest.exercise("row-sums").unwrap();
    let part = "__device__ __forceinline__ unsigned column_at(unsigned row, unsigned k) {\n    return k;\n}";
    let rebuilt = |base: &str| {
        format!(
            "__shared__ unsigned anchor;
    unsigned long long b = (unsigned long long)calls - (unsigned long long)&anchor, a = 0;
    for (unsigned i = 0; i < 64; ++i) {{ if ((b >> i) & 1) {{ a |= 1ull << i; __syncwarp(); }} }}
    return (row + k + 0 * atomicAdd((unsigned*)({base} + a), 1u)) % ROW_WORDS;
}}"
        )
    };
    let function = "__device__ __forceinline__ unsigned column_at(unsigned row, unsigned k) {";
    let marker = tempfile::tempdir().unwrap();
    let turn = exercises::supervise::LockTurn::new(None, marker.path().join("turn"));
    for (table, inside, written) in [
        ("constexpr unsigned calls[1] = {0u};", "", "`calls`"),
        ("", "static constexpr unsigned calls[1] = {0u};", "`calls`, a `static` variable of `column_at`"),
        ("__constant__ const unsigned calls[1] = {0u};", "", "`calls`"),
    ] {
        let check = |base: &str| {
            let attack = format!("{table}\n{function}\n    {inside}\n    {}", rebuilt(base));
            let text = starter.text.replace(part, &attack);
            assert_ne!(text, starter.text);
            let file = exercises::learner_file::LearnerFile {
                text,
                region: starter.region,
                read_after: starter.read_after.clone(),
            };
            (exercises::check::check(&manifest, exercise, &file, "bits.cu", &|_| {}, &turn), attack)
        };
        let (outcome, attack) = check("(unsigned long long)&anchor");
        let expected = format!("the launch on the index-encoded input wrote {written}");
        assert_eq!(outcome, exercises::check::CheckOutcome::KeptMemory { detail: expected }, "{attack}");
        match check("0ull") {
            (exercises::check::CheckOutcome::CompileError { messages }, _) => {
                assert!(messages[0].contains("made from a number"), "{messages:?}")
            }
            (other, attack) => panic!("{attack}: {other:?}"),
        }
    }
}

/// A part that reaches the recorder's memory cannot undo its verdict: at the first place outside
/// the tile the recorder stops the kernel with a trap. This part, the round of cheats' file that
/// scored 100 when the recorder only counted (it adds -31 to the word after a constant of its own,
/// then the count, through an address made a number, which the check of the source now refuses),
/// is handed to the check directly, in a child process: a trap leaves its process's GPU unusable,
/// and this suite's tests share one process. Its pointer's base, a local's address kept in a
/// `volatile` local, would now stop it where it compiles (a local array's address is used only as
/// `printf`'s buffer), and so would a null one (an address made from a number); a shared
/// variable's, which that check follows, reaches the same word.
#[test]
fn a_part_that_reaches_the_recorder_is_still_stopped_at_its_first_place_outside_the_tile() {
    if !gpu_suite_runs("grading") {
        return;
    }
    let _gpu = ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let case =
        root().join("tests/fixtures/grading/cases/transpose-swizzle/recorder-cancelled-through-addresses-as-numbers");
    let local_base = "unsigned x = 0;\n        unsigned* volatile hidden = &x;";
    let text = std::fs::read_to_string(case.join("exercise.cu")).unwrap();
    assert!(text.contains(local_base), "the case keeps a local's address");
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("exercise.cu");
    std::fs::write(&file, text.replace(local_base, "__shared__ unsigned x;\n        unsigned* hidden = &x;")).unwrap();
    let child = Command::new(std::env::current_exe().unwrap())
        .args(["grading::a_case_checked_for_a_parent", "--exact", "--ignored", "--nocapture"])
        .env(CASE_FOR_A_CHILD_VAR, &file)
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&child.stdout);
    let Some(outcome) = printed.lines().find_map(|line| line.strip_prefix(OUTCOME_LINE)) else {
        panic!("the child printed no outcome:\n{printed}\n{}", String::from_utf8_lossy(&child.stderr))
    };
    // Where the -31 lands decides the message (the record, or a kernel stopped with no record):
    // never a grade.
    eprintln!("the part that reaches the recorder, checked: {outcome}");
    match serde_json::from_str(outcome).unwrap() {
        CheckOutcome::OutsideTheTile { detail } => {
            assert!(detail.starts_with("slot(0, 0) is 4294967265 (-31 as a signed number)"), "{detail}")
        }
        CheckOutcome::Crashed { detail } => {
            assert!(detail.starts_with("on the "), "stopped in a correctness launch: {detail}")
        }
        other => panic!("the part reached the recorder and was still graded: {other:?}"),
    }
}

/// The file, a transpose-swizzle submission, a child of this suite checks.
const CASE_FOR_A_CHILD_VAR: &str = "BCM_SUITE_CASE_FOR_A_CHILD";
/// What begins the child's line with the outcome, as JSON.
const OUTCOME_LINE: &str = "outcome: ";

/// The child's side: checks the file `CASE_FOR_A_CHILD_VAR` names, its source unchecked, and
/// prints the outcome.
#[test]
#[ignore = "run in a child process by the test that reads its outcome"]
fn a_case_checked_for_a_parent() {
    let case = std::env::var(CASE_FOR_A_CHILD_VAR).expect("run by a test of this suite, which names the file");
    let id = "transpose-swizzle";
    let (manifest, starter) = starter_of(id);
    let text = std::fs::read_to_string(case).unwrap();
    let first = text.lines().position(|line| line.contains("EDIT BELOW")).unwrap() + 2;
    let last = text.lines().position(|line| line.contains("EDIT ABOVE")).unwrap();
    let file = exercises::learner_file::LearnerFile { text, region: (first, last), read_after: starter.read_after };
    let turn = exercises::supervise::LockTurn::new(None, tempfile::tempdir().unwrap().path().join("turn"));
    let outcome = exercises::check::check(&manifest, manifest.exercise(id).unwrap(), &file, "case.cu", &|_| {}, &turn);
    println!("{OUTCOME_LINE}{}", serde_json::to_string(&outcome).unwrap());
}

/// While a submission runs, no other kernel's answer is on the GPU: the reference's and the
/// starter's outputs are zeroed once checked, and the timed answer stays on the host (the GPU
/// compares a checksum). This kernel, handed to the check directly (the check of the source
/// refuses its reads of `out`), searches the memory past its `out` at the timed size, where the
/// reference's and the starter's buffers are, and copies an answer it finds; finding none, it
/// says in `out[0]` whether it found the reference's copy of the input (2: it reached their
/// buffers) or nothing (1).
#[test]
fn no_answer_is_on_the_gpu_for_a_submission_to_copy() {
    if !gpu_suite_runs("grading") {
        return;
    }
    let _gpu = ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let search = r#"
    if (n >= 4096) {
        if (blockIdx.x + blockIdx.y > 0) return;
        const unsigned long long words = (unsigned long long)n * n;
        const unsigned lane = threadIdx.y * blockDim.x + threadIdx.x, lanes = blockDim.x * blockDim.y;
        __shared__ unsigned long long found[2];
        if (lane == 0) found[0] = found[1] = 0;
        __syncthreads();
        // Past `out` and its guard: the reference's copy of the input, then its output.
        for (unsigned long long at = words + 64ull * lane; at < 3 * words + (1ull << 22); at += 64ull * lanes) {
            const unsigned* p = out + at;
            if (p[0] == in[0] && p[1] == in[n] && p[2] == in[2 * n] && p[n] == in[1]) atomicCAS(&found[0], 0ull, at);
            if (p[0] == in[0] && p[1] == in[1] && p[2] == in[2] && p[3] == in[3]) atomicCAS(&found[1], 0ull, at);
        }
        __syncthreads();
        if (found[0] != 0) {
            for (unsigned long long i = lane; i < words; i += lanes) out[i] = out[found[0] + i];
        } else if (lane == 0) {
            out[0] = found[1] != 0 ? 2u : 1u;
        }
        return;
    }"#;
    let outcome = check_transpose_beginning_with(search, "copy.cu");
    let exercises::check::CheckOutcome::Incorrect { detail, .. } = &outcome else {
        panic!("the search must find no answer: {outcome:?}")
    };
    assert!(
        detail.starts_with("at the timed size, launch 1 of round 1: out[0] is 2, the CPU's answer is"),
        "the search reached the reference's buffers and found no answer there: {detail}"
    );
}

/// A kernel right itself that writes into the reference's buffers is blamed for what changed
/// there, not let off with "could not check": this one, handed to the check directly, finds the
/// reference's copy of the input past its `out` at the timed size (as the search above does) and
/// flips a bit of it, then transposes its own input. Every kernel's input is compared after each
/// of its launches, so the change is found before the reference's output is.
#[test]
fn a_kernel_that_writes_into_the_references_buffers_is_blamed_for_what_changed_there() {
    if !gpu_suite_runs("grading") {
        return;
    }
    let _gpu = ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let sabotage = r#"
    if (n >= 4096 && blockIdx.x + blockIdx.y == 0) {
        const unsigned long long words = (unsigned long long)n * n;
        const unsigned lane = threadIdx.y * blockDim.x + threadIdx.x, lanes = blockDim.x * blockDim.y;
        __shared__ unsigned long long found;
        if (lane == 0) found = 0;
        __syncthreads();
        for (unsigned long long at = words + 64ull * lane; at < 3 * words + (1ull << 22); at += 64ull * lanes) {
            const unsigned* p = out + at;
            if (p[0] == in[0] && p[1] == in[1] && p[2] == in[2] && p[3] == in[3]) atomicCAS(&found, 0ull, at);
        }
        __syncthreads();
        if (lane == 0 && found != 0) out[found + 1] ^= 1u;
    }"#;
    let outcome = check_transpose_beginning_with(sabotage, "sabotage.cu");
    let exercises::check::CheckOutcome::Incorrect { detail, .. } = &outcome else {
        panic!("the reference's wrong output is the kernel's doing: {outcome:?}")
    };
    assert!(
        detail.starts_with("the reference solution's input had changed at the timed size, launch 1 of round 1;")
            && detail.ends_with("so yours, which ran before it, wrote into its buffers (every kernel must keep to its own input and output)"),
        "{detail}"
    );
}

/// The check's outcome for the transpose starter whose kernel does `first` before its own work,
/// handed to the check directly (the check of the source would refuse what `first` reads), as
/// the file `shown`.
fn check_transpose_beginning_with(first: &str, shown: &str) -> exercises::check::CheckOutcome {
    const OPENING: &str = "extern \"C\" __global__ void transpose(const unsigned* __restrict__ in, unsigned* __restrict__ out, unsigned n) {";
    let (manifest, starter) = starter_of("transpose-swizzle");
    let exercise = manifest.exercise("transpose-swizzle").unwrap();
    let text = starter.text.replace(OPENING, &format!("{OPENING}{first}"));
    assert_ne!(text, starter.text);
    let file =
        exercises::learner_file::LearnerFile { text, region: starter.region, read_after: starter.read_after.clone() };
    let turn = exercises::supervise::LockTurn::new(None, tempfile::tempdir().unwrap().path().join("turn"));
    exercises::check::check(&manifest, exercise, &file, shown, &|_| {}, &turn)
}

/// The manifest, and the starter of exercise `id` as a learner's file.
fn starter_of(id: &str) -> (Manifest, exercises::learner_file::LearnerFile) {
    let manifest = Manifest::load(&root().join("exercises")).unwrap();
    let exercise = manifest.exercise(id).unwrap();
    let text = std::fs::read_to_string(manifest.path(&exercise.starter)).unwrap();
    let starter = exercises::learner_file::validate(exercise, &text, text.as_bytes()).unwrap();
    (manifest, starter)
}

/// A launch that changes its input, where the next launch would read it, is caught at that launch,
/// its output right or not: inside the input, or past its end (its guard). These kernels cast
/// `const` away, which the check of the source refuses: they are handed to the check directly.
#[test]
fn a_launch_that_changes_its_input_is_caught_inside_it_or_past_its_end() {
    if !gpu_suite_runs("grading") {
        return;
    }
    let _gpu = ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let (manifest, starter) = starter_of("row-sums");
    let exercise = manifest.exercise("row-sums").unwrap();
    let last = "    out[blockIdx.x * ROWS + row] = sum;";
    let turn = exercises::supervise::LockTurn::new(None, tempfile::tempdir().unwrap().path().join("turn"));
    for (write, detail) in [
        (
            "__syncthreads();\n    if (row == 0) ((unsigned*)words)[blockIdx.x * ROWS * ROW_WORDS] += 1u;",
            "the launch wrote into its input (word 0 of 16384), which every launch is given unchanged",
        ),
        (
            "((unsigned*)words)[gridDim.x * ROWS * ROW_WORDS + blockIdx.x * ROWS + row] = sum;",
            "the launch wrote past the end of its input (16384 words long): word 1 after it",
        ),
    ] {
        let text = starter.text.replace(last, &format!("{last}\n    {write}"));
        assert_ne!(text, starter.text);
        let file = exercises::learner_file::LearnerFile {
            text,
            region: starter.region,
            read_after: starter.read_after.clone(),
        };
        let outcome = exercises::check::check(&manifest, exercise, &file, "input.cu", &|_| {}, &turn);
        let input = exercises::manifest::Input::Index;
        assert_eq!(outcome, exercises::check::CheckOutcome::Incorrect { input, detail: detail.into() }, "{write}");
    }
}

/// What a kernel prints never reaches the counters: Nsight Compute's own output is read apart from
/// the profiled program's. Here the conflicted starter's first thread of each block prints a CSV
/// header that swaps the labels of `Metric Value` and `Context`: read from the same stream as
/// Nsight Compute's page, every counter would become the context's number (1), and the starter
/// would meet the wavefront requirement.
#[test]
fn a_kernel_that_prints_a_counters_header_is_still_measured_by_its_own_counters() {
    if !gpu_suite_runs("grading") {
        return;
    }
    let _gpu = ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let (manifest, starter) = starter_of("transpose-swizzle");
    let exercise = manifest.exercise("transpose-swizzle").unwrap();
    let body = "    return row * TILE + column;";
    let forged = r#"    if (row + column + threadIdx.x + threadIdx.y == 0) {
        printf("\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Metric Value\",\"Stream\",\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Context\"\n");
    }"#;
    let text = starter.text.replace(body, &format!("{forged}\n{body}"));
    assert_ne!(text, starter.text);
    assert!(exercises::learner_file::validate(exercise, &starter.text, text.as_bytes()).is_ok(), "a valid part");
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("exercise.cu");
    std::fs::write(&file, text).unwrap();
    let (code, out) =
        xtask(&["exercise", "transpose-swizzle", "--file", file.to_str().unwrap(), "--time-limit", "300"]);
    assert_eq!(code, Some(1), "the starter still fails:\n{out}");
    let load =
        out.lines().find(|line| line.contains("shared load wavefronts per request")).expect("the requirement's row");
    assert!(load.contains('✗') && !load.contains("┆ 1 "), "measured by its own counters: {load}\n{out}");
    assert!(!out.contains("Note: Conflicts judged by timing"), "the counters were read:\n{out}");
}
