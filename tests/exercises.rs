//! Exercises and grading where there is no GPU (the GPU suite's `grading` tests run the rest):
//! the manifest and its files, validation, refusals, exit statuses, and the reports' format.

use std::{
    collections::BTreeMap,
    fs,
    os::unix::fs::symlink,
    path::{Path, PathBuf},
    process::ExitCode,
};

use course_tests::{files_under, root, xtask};
use exercises::{
    Manifest,
    check::{CheckOutcome, CounterPair, SubmissionMeasurements},
    grading::{self, Row},
    learner_file,
    manifest::Input,
    verdict::judge,
};
use serde_json::{Value, json};

fn manifest() -> Manifest {
    Manifest::load(&root().join("exercises")).unwrap()
}

fn fixtures() -> PathBuf {
    root().join("tests/fixtures/grading/transpose-swizzle")
}

#[test]
fn lessons_1_to_5_9_to_11_14_and_15_have_exercises_each_with_starter_solution_hints_and_requirements() {
    let manifest = manifest();
    assert!(manifest.exercises.len() >= 11, "eleven or more exercises");
    for lesson in (1..=5).chain(9..=11).chain(14..=15) {
        assert!(manifest.exercises.iter().any(|e| e.lesson == lesson), "lesson {lesson} has an exercise");
    }
    for exercise in &manifest.exercises {
        let id = &exercise.id;
        let starter = fs::read_to_string(manifest.path(&exercise.starter)).unwrap();
        let solution = fs::read_to_string(manifest.path(&exercise.solution)).unwrap();
        let starter_file = learner_file::validate(exercise, &starter, starter.as_bytes()).unwrap();
        let solution_file = learner_file::validate(exercise, &starter, solution.as_bytes())
            .unwrap_or_else(|e| panic!("{id}: the solution differs from the starter outside the region: {e}"));
        assert_ne!(starter_file.region_text(), solution_file.region_text(), "{id}: the solution changes the region");
        assert_eq!(exercise.starter.file_name().unwrap(), "exercise.cu", "{id}: submissions hold exercise.cu");
        assert!(!exercise.hints.is_empty() && !exercise.requirements.is_empty(), "{id}");
        assert_eq!(exercise.inputs, [Input::Index, Input::Random], "{id}: both inputs, so plausible mistakes fail");
        assert!(
            exercise.requirements.iter().any(|r| r.measure.needs_counters()),
            "{id}: a requirement on conflicts, measured by the counters"
        );
    }
}

#[test]
fn the_values_the_code_after_each_part_reads_are_the_starters_macros_and_constants_it_reads() {
    let manifest = manifest();
    let names = |id: &str| {
        let exercise = manifest.exercise(id).unwrap();
        let starter = fs::read_to_string(manifest.path(&exercise.starter)).unwrap();
        learner_file::validate(exercise, &starter, starter.as_bytes()).unwrap().read_after
    };
    assert_eq!(names("tma-swizzle-mode"), ["TILE_BYTES", "TILE_SWIZZLE_BYTES"]);
    assert_eq!(names("transpose-swizzle"), ["TILE_WORDS"]);
    assert_eq!(names("gemm-aligned-pad"), ["A_PITCH"]);
    assert_eq!(names("particles-layout"), ["read_whole_particle"], "a constexpr the code after reads");
    assert_eq!(names("pad-columns"), Vec::<String>::new(), "a kernel-level part: the tile only");
}

#[test]
fn without_a_gpu_the_exercise_command_validates_and_says_in_one_line_that_checking_needs_one() {
    let solution = root().join("exercises/transpose-swizzle/solution.cu");
    let run = xtask(&["exercise", "transpose-swizzle", "--file", solution.to_str().unwrap(), "--no-gpu"]);
    assert_eq!(run.code, ExitCode::from(2), "nothing was checked");
    assert!(
        run.stdout.ends_with(&format!(
            "{}: valid (markers in place, the rest as in the starter).\nChecking needs a GPU: --no-gpu given.\n",
            solution.display()
        )),
        "{}",
        run.stdout
    );
    assert!(run.stdout.starts_with("Exercise transpose-swizzle (lesson 3): Transpose without padding\n"));

    let dir = tempfile::tempdir().unwrap();
    let edited = dir.path().join("mine.cu");
    fs::write(
        &edited,
        fs::read_to_string(&solution).unwrap().replace("#define BLOCK_ROWS 8u", "#define BLOCK_ROWS 4u"),
    )
    .unwrap();
    let run = xtask(&["exercise", "transpose-swizzle", "--file", edited.to_str().unwrap(), "--no-gpu"]);
    assert_eq!(run.code, ExitCode::FAILURE, "the file has a problem");
    assert!(
        run.stdout.contains(&format!("{}: line 13 is outside the editable part", edited.display())),
        "{}",
        run.stdout
    );

    let run = xtask(&["exercise", "row-sums", "--hint"]);
    assert_eq!(run.code, ExitCode::SUCCESS);
    assert_eq!(
        run.stdout.lines().filter(|l| l.starts_with("Hint ")).count(),
        manifest().exercise("row-sums").unwrap().hints.len()
    );
}

#[test]
fn the_list_needs_no_gpu_and_shows_each_exercise_from_its_last_check() {
    let run = xtask(&["exercise", "--list", "--no-gpu"]);
    assert_eq!(run.code, ExitCode::SUCCESS);
    assert!(run.stdout.contains("status (last check)"), "{}", run.stdout);
    for exercise in &manifest().exercises {
        let line = run.stdout.lines().find(|l| l.contains(&format!(" {} ", exercise.id))).expect("a line per exercise");
        let copy = exercises::learner_copy_path(&manifest(), exercise);
        if !copy.exists() {
            assert!(line.contains("not started"), "{line}");
        }
    }
}

#[test]
fn unknown_exercises_and_missing_files_are_named_and_end_with_status_2() {
    let known = manifest()
        .exercises
        .iter()
        .map(|e| format!("\n  {:<20} lesson {}: {}", e.id, e.lesson, e.title))
        .collect::<String>();
    let expected = format!(
        "there is no exercise `nope`. The exercises are:{known}\nList them with `cargo xtask exercise --list`."
    );
    let run = xtask(&["exercise", "nope"]);
    assert_eq!((run.error(), run.code), (expected.as_str(), ExitCode::from(2)));
    let run = xtask(&["grade", "--exercise", "nope", fixtures().to_str().unwrap(), "--no-gpu"]);
    assert_eq!((run.error(), run.code), (expected.as_str(), ExitCode::from(2)));
    let run = xtask(&["exercise", "row-sums", "--file", "/nonexistent/mine.cu", "--no-gpu"]);
    assert!(run.error().starts_with("cannot read /nonexistent/mine.cu: "), "{}", run.error());
    assert_eq!(run.code, ExitCode::from(2));
}

fn rows(out: &Path) -> Vec<Value> {
    let json: Value = serde_json::from_str(&fs::read_to_string(out.join(grading::JSON_FILE)).unwrap()).unwrap();
    json["rows"].as_array().unwrap().clone()
}

#[test]
fn without_a_gpu_grading_validates_all_six_fixtures_grades_nothing_and_modifies_nothing() {
    let before = files_under(&fixtures());
    let out = tempfile::tempdir().unwrap();
    let run = xtask(&[
        "grade",
        "--exercise",
        "transpose-swizzle",
        fixtures().to_str().unwrap(),
        "--out",
        out.path().to_str().unwrap(),
        "--no-gpu",
    ]);
    assert_eq!(run.code, ExitCode::from(2), "nothing graded: {}", run.stdout);
    assert!(run.stdout.trim_end().ends_with("Nothing graded: grading needs a GPU (--no-gpu given)."), "{}", run.stdout);
    let rows = rows(out.path());
    let names: Vec<&str> = rows.iter().map(|r| r["submission"].as_str().unwrap()).collect();
    assert_eq!(names, ["conflicted", "correct", "crashes", "does-not-compile", "hangs", "wrong-result"]);
    for row in &rows {
        assert_eq!(row["not_graded"], "not checked: the file is valid; grading it needs a GPU", "{row}");
        assert_eq!(row["file"], format!("{}/exercise.cu", row["submission"].as_str().unwrap()));
    }
    assert!(!out.path().join(grading::STATE_FILE).exists(), "nothing to resume");
    assert_eq!(files_under(&fixtures()), before, "the submissions are never modified");
}

#[test]
fn grading_refuses_unsafe_names_links_and_files_that_are_not_the_exercise_each_with_its_reason() {
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret.cu"), "__global__ void transpose() {}").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let submissions = dir.path().join("submissions");
    let starter = fs::read_to_string(root().join("exercises/transpose-swizzle/exercise.cu")).unwrap();
    let solution = fs::read_to_string(root().join("exercises/transpose-swizzle/solution.cu")).unwrap();
    for (path, text) in [
        ("good/exercise.cu", solution.clone()),
        ("zipped/transpose-swizzle/EXERCISE.CU", solution.clone()),
        ("zipped/__MACOSX/transpose-swizzle/._EXERCISE.CU", "\u{5}\u{16}\u{7}".to_owned()),
        ("as-text/exercise.cu.txt", solution.clone()),
        ("still-zipped.zip", "PK".to_owned()),
        ("..sneaky.cu", solution.clone()),
        ("john..smith.cu", solution.clone()),
        ("notes.txt", "my answer is XOR".to_owned()),
        ("python.cu", "import numpy\nprint(numpy.zeros(3))\n".to_owned()),
        ("renamed.cu", solution.replace("void transpose(", "void my_transpose(")),
        ("retyped.cu", solution.replace("unsigned n)", "int n)")),
        ("edited-outside.cu", solution.replace("#define TILE 32u", "#define TILE 16u")),
        ("no-markers.cu", starter.replace("// ---- EDIT BELOW ----\n", "")),
    ] {
        fs::create_dir_all(submissions.join(path).parent().unwrap()).unwrap();
        fs::write(submissions.join(path), text).unwrap();
    }
    fs::write(submissions.join("binary.cu"), [0x7f, b'E', b'L', b'F', 0, 0, 1]).unwrap();
    symlink(outside.path().join("secret.cu"), submissions.join("link-out.cu")).unwrap();
    let out = dir.path().join("grades");
    let run = xtask(&[
        "grade",
        "--exercise",
        "transpose-swizzle",
        submissions.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--no-gpu",
    ]);
    assert_eq!(run.code, ExitCode::from(2), "{}", run.error());
    let reasons: BTreeMap<String, String> = rows(&out)
        .iter()
        .map(|r| (r["submission"].as_str().unwrap().to_owned(), r["not_graded"].as_str().unwrap().to_owned()))
        .collect();
    let secret = fs::canonicalize(outside.path().join("secret.cu")).unwrap();
    let expected = [
        // (`..sneaky.cu` is a hidden file, passed over as `.DS_Store` is; `..` inside a name is a name.)
        ("john..smith.cu", "not checked: the file is valid; grading it needs a GPU".to_owned()),
        ("binary.cu", "binary.cu: the file is not text (it holds a NUL character, or is broken UTF-16): hand in the .cu source file".into()),
        (
            "edited-outside.cu",
            "edited-outside.cu: line 12 is outside the editable part and differs from the starter (at `16u`):\n  yours:   #define TILE 16u\n  \
             starter: #define TILE 32u\nOnly the lines between the markers may change: restore that line from the starter"
                .into(),
        ),
        ("good", "not checked: the file is valid; grading it needs a GPU".into()),
        ("link-out.cu", format!("refused: `link-out.cu` is a link to {}, outside the submissions folder", secret.display())),
        (
            "no-markers.cu",
            "no-markers.cu: the lines `// ---- EDIT BELOW ----` and `// ---- EDIT ABOVE ----` must each appear once, in \
             that order: restore them from the starter"
                .into(),
        ),
        ("notes.txt", "not a CUDA source: a submission is a folder or a .cu file, `notes.txt` is neither".into()),
        ("zipped", "not checked: the file is valid; grading it needs a GPU".into()),
        ("as-text", "not checked: the file is valid; grading it needs a GPU".into()),
        (
            "still-zipped.zip",
            "`still-zipped.zip` is an archive, which the grader does not open: extract it into a folder of its own".into(),
        ),
        (
            "python.cu",
            "python.cu: the file does not look like CUDA C++ (no `__global__` kernel, no edit markers): is it the right file?".into(),
        ),
        (
            "renamed.cu",
            "renamed.cu: there is no kernel `transpose` (it defines `my_transpose`); keep the starter's `extern \"C\" \
             __global__ void transpose(const unsigned* __restrict__ in, unsigned* __restrict__ out, unsigned n)`"
                .into(),
        ),
        (
            "retyped.cu",
            "retyped.cu: kernel `transpose` takes (const unsigned* __restrict__ in, unsigned* __restrict__ out, int n); \
             it must take (const unsigned* __restrict__ in, unsigned* __restrict__ out, unsigned n) as in the starter"
                .into(),
        ),
    ];
    assert_eq!(reasons, expected.into_iter().map(|(k, v)| (k.to_owned(), v)).collect());
}

#[test]
fn bad_folders_are_named_and_end_with_status_2() {
    let dir = tempfile::tempdir().unwrap();
    let grade = |folder: &Path, out: Option<&Path>| {
        let mut args = vec!["grade", "--exercise", "row-sums", folder.to_str().unwrap(), "--no-gpu"];
        if let Some(out) = out {
            args.extend(["--out", out.to_str().unwrap()]);
        }
        let run = xtask(&args);
        assert_eq!(run.code, ExitCode::from(2), "{}", run.error());
        run.error().to_owned()
    };
    let missing = dir.path().join("missing");
    assert_eq!(
        grade(&missing, None),
        format!("there is no folder {}: give the folder that holds the submissions", missing.display())
    );
    let empty = dir.path().join("empty");
    fs::create_dir(&empty).unwrap();
    assert_eq!(
        grade(&empty, None),
        format!("{} has no submissions: put one sub-folder or .cu file per submission in it", empty.display())
    );
    fs::write(empty.join("a.cu"), "x").unwrap();
    let inside = empty.join("grades");
    assert_eq!(
        grade(&empty, Some(&inside)),
        format!(
            "{} is inside the submissions folder, which grading never writes to: choose another --out",
            inside.display()
        )
    );
    assert!(!inside.exists());
}

fn measurements(load_per_request: u64) -> SubmissionMeasurements {
    let counters = |load| cuda_kernels::ncu::SharedCounters {
        load_wavefronts: 256 * load,
        load_instructions: 256,
        store_wavefronts: 256,
        store_instructions: 256,
        matrix_and_async: [None; 3],
    };
    SubmissionMeasurements {
        counters: Ok(CounterPair { submission: counters(load_per_request), reference: counters(1) }),
        profile_failed: None,
        submission_ms: 2.0,
        reference_ms: 2.0,
        starter_ms: 3.0,
        shared_bytes: 4096,
    }
}

#[test]
fn reports_have_a_row_per_submission_and_every_lost_point() {
    let exercise = manifest().exercise("transpose-swizzle").unwrap().clone();
    let row = |name: &str, outcome: Option<CheckOutcome>, not_graded: Option<&str>| Row {
        submission: name.into(),
        file: outcome.as_ref().map(|_| format!("{name}/exercise.cu")),
        sha256: None,
        not_graded: not_graded.map(str::to_owned),
        verdict: outcome.map(|o| judge(&exercise, &o)),
    };
    let rows = [
        row("alice", Some(CheckOutcome::Correct(Box::new(measurements(1)))), None),
        row("bob", Some(CheckOutcome::Correct(Box::new(measurements(2)))), None),
        row(
            "carol",
            Some(CheckOutcome::CompileError { messages: vec!["carol/exercise.cu:20: error: expected a \";\"".into()] }),
            None,
        ),
        row("dave", Some(CheckOutcome::TimedOut { seconds: 60 }), None),
        row("..eve", None, Some("refused: the name `..eve` contains `..`")),
    ];
    insta::assert_snapshot!("grades_csv", grading::csv(&rows).unwrap());
    insta::assert_snapshot!("grades_markdown", grading::markdown(&exercise, &rows));
}

fn cases() -> PathBuf {
    root().join("tests/fixtures/grading/cases")
}

/// Every attack and honest oddity of `tests/fixtures/grading/cases` gets, without a GPU, the
/// verdict `expected.tsv` gives it: refused with its reason, or valid (to be graded on a GPU by
/// `run-on-gpu.sh`).
#[test]
fn every_grading_case_is_refused_with_its_reason_or_accepted_as_its_table_says() {
    let manifest = manifest();
    let table = fs::read_to_string(cases().join("expected.tsv")).unwrap();
    let mut seen = 0;
    for line in table.lines().filter(|l| !l.starts_with('#')) {
        let [case, expected, reason, on_gpu] = line.splitn(4, '\t').collect::<Vec<_>>()[..] else { panic!("{line:?}") };
        let gpu_verdict_known = match expected {
            "refused" => on_gpu == "-",
            _ => {
                on_gpu.parse::<u32>().is_ok()
                    || ["incorrect", "crashed", "compile-error", "profile-failed", "outside-the-tile", "kept-memory"]
                        .contains(&on_gpu)
            }
        };
        assert!(gpu_verdict_known, "{case}: `{on_gpu}` is no verdict run-on-gpu.sh checks");
        let (id, _) = case.split_once('/').unwrap();
        let exercise = manifest.exercise(id).unwrap();
        let starter = fs::read_to_string(manifest.path(&exercise.starter)).unwrap();
        // The case's file as `grade` finds it (an oddity may be in its name or folders).
        let (_, folder) = case.split_once('/').unwrap();
        let entries = exercises::submissions::scan(&cases().join(id), "exercise.cu").unwrap();
        let bytes = match entries.into_iter().find(|entry| entry.name() == folder) {
            Some(exercises::submissions::Entry::Found(submission)) => submission.bytes,
            other => panic!("{case}: {other:?}"),
        };
        let verdict = learner_file::validate(exercise, &starter, &bytes);
        match (expected, verdict) {
            ("valid", Ok(file)) => assert!(
                !file.text.starts_with('\u{feff}') && !file.text.contains('\r'),
                "{case}: what is compiled is normalized"
            ),
            ("refused", Err(invalid)) => {
                let message = invalid.to_string();
                assert!(message.contains(reason), "{case}: {message}");
                assert!(message.starts_with("line "), "{case}: the message names the line: {message}");
            }
            (expected, verdict) => panic!("{case}: expected {expected}, got {verdict:?}"),
        }
        seen += 1;
    }
    let exercises = fs::read_dir(cases()).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir());
    let folders: usize = exercises.map(|exercise| fs::read_dir(exercise).unwrap().count()).sum();
    assert_eq!(seen, folders, "every case folder has its line in expected.tsv");
}

#[test]
fn odd_names_are_graded_as_data_and_land_in_every_report_safely() {
    let submissions = tempfile::tempdir().unwrap();
    let correct = fs::read(cases().join("transpose-swizzle/=1+1/exercise.cu")).unwrap();
    for name in ["-resubmitted", "=1+1", "say \"hi\"", "two\nlines", "@cmd"] {
        fs::create_dir(submissions.path().join(name)).unwrap();
        fs::write(submissions.path().join(name).join("exercise.cu"), &correct).unwrap();
    }
    let out = tempfile::tempdir().unwrap();
    let run = xtask(&[
        "grade",
        "--exercise",
        "transpose-swizzle",
        submissions.path().to_str().unwrap(),
        "--out",
        out.path().to_str().unwrap(),
        "--no-gpu",
    ]);
    assert_eq!(run.code, ExitCode::from(2), "nothing graded without a GPU: {}", run.stdout);
    let csv = fs::read_to_string(out.path().join("grades.csv")).unwrap();
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let names: Vec<String> = reader.records().map(|r| r.unwrap()[0].to_owned()).collect();
    assert_eq!(names.len(), 5, "{csv}");
    for name in &names {
        assert!(!name.starts_with(['=', '+', '-', '@']), "a live formula: {name:?}");
    }
    assert!(names.contains(&"'=1+1".to_owned()) && names.contains(&"two\nlines".to_owned()), "{names:?}");
    let summary = fs::read_to_string(out.path().join("summary.md")).unwrap();
    assert!(summary.contains("| two / lines |"), "{summary}");
    let json: Value = serde_json::from_str(&fs::read_to_string(out.path().join("grades.json")).unwrap()).unwrap();
    let rows = json["rows"].as_array().unwrap();
    assert!(rows.iter().any(|r| r["submission"] == "say \"hi\""), "{json}");
}

/// The hidden check command restricts itself before reading the submission, and still does its
/// work in its own folder: here (no GPU) it writes that it could not check, and ends, since its
/// GPU was not checked clean. Run in a thread of its own, which the sandbox confines (Landlock
/// restricts a thread and what it starts).
#[test]
fn the_check_command_works_inside_its_sandbox_and_cannot_read_beside_it() {
    if cuda_kernels::Gpu::open().is_ok() {
        eprintln!("a GPU is here: this test's check would run for real (the GPU suite grades the fixtures)");
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let request = exercises::protocol::CheckRequest { number: 1, name: "-resubmitted \"x\"\n".into() };
    let files = request.files(work.path());
    fs::create_dir(&files.folder).unwrap();
    fs::copy(root().join("exercises/transpose-swizzle/solution.cu"), &files.submission).unwrap();
    fs::write(outside.path().join("secret"), "not yours").unwrap();
    let command = exercises::protocol::ChildCommand {
        role: exercises::protocol::Role::Check,
        exercise: "transpose-swizzle".into(),
        files: Vec::new(),
        folder: Some(work.path().to_owned()),
        result: None,
        launches: exercises::protocol::Launches::All,
        gpu_lock: None,
    };
    // Two requests: the first one's outcome ends the process, which never reads the second (whose
    // file does not exist: reading it would be an error).
    let second = exercises::protocol::CheckRequest { number: 2, ..request.clone() };
    let requests =
        format!("{}\n{}\n", serde_json::to_string(&request).unwrap(), serde_json::to_string(&second).unwrap());
    let secret = outside.path().join("secret");
    let (run, read) = std::thread::spawn(move || {
        let run = xtask::serve_checks(&command, &mut requests.as_bytes()).map_err(|e| format!("{e:#}"));
        (run, fs::read_to_string(&secret).map_err(|e| e.kind()))
    })
    .join()
    .unwrap();
    assert_eq!(run, Ok(ExitCode::SUCCESS));
    let outcome: Value = serde_json::from_str(&fs::read_to_string(&files.result).unwrap()).unwrap();
    assert_eq!(outcome["outcome"], "could-not-check", "{outcome}");
    assert_eq!(fs::read_to_string(&files.answered).unwrap(), "ending");
    match exercises::sandbox::probe() {
        exercises::sandbox::Status::Unconfined(why) => eprintln!("no sandbox here ({why}); read: {read:?}"),
        _ => assert_eq!(read, Err(std::io::ErrorKind::PermissionDenied), "the check's thread cannot read beside it"),
    }
}

/// The profile command, in its own sandbox too: with no ncu here it says so, blaming no submission.
#[test]
fn the_profile_command_works_inside_its_sandbox_and_without_counters_blames_nobody() {
    if cuda_kernels::Gpu::open().is_ok() {
        eprintln!("a GPU is here: this test's profile would run for real (the GPU suite grades the fixtures)");
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let files: Vec<PathBuf> = (1..=2).map(|i| work.path().join(format!("submission-{i}.cu"))).collect();
    for file in &files {
        fs::copy(root().join("exercises/transpose-swizzle/solution.cu"), file).unwrap();
    }
    let result = work.path().join("profiled.json");
    let args = exercises::protocol::ChildCommand {
        role: exercises::protocol::Role::Profile,
        exercise: "transpose-swizzle".into(),
        files,
        folder: None,
        result: Some(result.clone()),
        launches: exercises::protocol::Launches::All,
        gpu_lock: None,
    }
    .args();
    let run = std::thread::spawn(move || {
        let args: Vec<&str> = args.iter().map(|a| a.to_str().unwrap()).collect();
        xtask(&args).code
    })
    .join()
    .unwrap();
    assert_eq!(run, ExitCode::SUCCESS);
    let profiled: Value = serde_json::from_str(&fs::read_to_string(&result).unwrap()).unwrap();
    assert_eq!(
        (&profiled["outcome"], &profiled["reference_profiles"]),
        (&json!("failed"), &json!(false)),
        "{profiled}"
    );
}

#[test]
fn a_class_graded_in_shards_and_merged_or_several_at_a_time_gives_the_reports_of_one_run() {
    let cases = cases().join("transpose-swizzle");
    let folders: Vec<tempfile::TempDir> = (0..6).map(|_| tempfile::tempdir().unwrap()).collect();
    let path = |i: usize| folders[i].path().to_str().unwrap().to_owned();
    let grade = |extra: &[&str], out: &str| {
        let mut args =
            vec!["grade", "--exercise", "transpose-swizzle", cases.to_str().unwrap(), "--out", out, "--no-gpu"];
        args.extend(extra);
        xtask(&args)
    };
    grade(&[], &path(0));
    let first = grade(&["--shard", "1/2"], &path(1));
    grade(&["--shard", "2/2"], &path(2));
    assert!(first.stdout.contains("submissions:"), "{}", first.stdout);
    let merged = xtask(&["grade", "--merge", &path(1), &path(2), "--out", &path(3)]);
    grade(&["--jobs", "3"], &path(4));
    grade(&["--gpus", "0,1", "--jobs", "2"], &path(5));
    let in_folder = fs::read_dir(folders[5].path()).unwrap().map(|entry| entry.unwrap().file_name());
    assert!(in_folder.into_iter().all(|name| !name.to_string_lossy().contains("gpu")), "a GPU's locks are the host's");
    assert!(merged.stdout.contains("Merged 2 folders"), "{}", merged.stdout);
    for file in [grading::CSV_FILE, grading::JSON_FILE, grading::MARKDOWN_FILE] {
        let read = |i: usize| fs::read_to_string(folders[i].path().join(file)).unwrap();
        assert_eq!(read(3), read(0), "{file}");
        assert_eq!(read(4), read(0), "{file}: three checks at a time give the same report");
        assert_eq!(read(5), read(0), "{file}: two GPUs, two checks on each");
        assert_ne!(read(1), read(0), "{file}: a shard is a part");
    }
    assert!(xtask_parse_error(&["grade", "--exercise", "x", "y", "--shard", "3/2"]).contains("give K/N"));
    assert!(xtask_parse_error(&["grade", "--exercise", "x", "y", "--time-limit", "0"]).contains("1..=86400"));
    // A shard left out is named, not merged into a report that looks whole.
    let partial = xtask(&["grade", "--merge", &path(1), "--out", &path(3)]);
    assert!(partial.error().contains("lacks shard 2/2"), "{}", partial.error());
    // One run at a time writes a folder's reports.
    let held = grading::hold_output(folders[0].path()).unwrap().expect("free");
    assert!(grading::hold_output(folders[0].path()).unwrap().is_none(), "held once");
    assert!(grade(&[], &path(0)).error().contains("another grade is writing into"));
    drop(held);
    // `..` after a folder that does not exist still leads into the submissions.
    let sneaky = format!("{}/missing/../transpose-swizzle", cases.parent().unwrap().display());
    assert!(grade(&[], &sneaky).error().contains("inside the submissions folder"));
}

fn xtask_parse_error(args: &[&str]) -> String {
    use clap::Parser;
    xtask::Cli::try_parse_from(std::iter::once("xtask").chain(args.iter().copied())).unwrap_err().to_string()
}

/// `watch` checks the file at once and again when it is saved, with the next hint each time it
/// does not pass (without a GPU: validation only, so an invalid save is what fails).
#[test]
fn watch_checks_again_on_every_save_with_the_next_hint() {
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("mine.cu");
    let starter = fs::read_to_string(root().join("exercises/transpose-swizzle/exercise.cu")).unwrap();
    let broken = starter.replace("#define TILE 32u", "#define TILE 16u");
    fs::write(&file, &broken).unwrap();
    let path = file.to_str().unwrap().to_owned();
    let watcher = std::thread::spawn(move || {
        xtask(&["watch", "transpose-swizzle", "--file", &path, "--no-gpu", "--max-checks", "2"])
    });
    // Saves until the watcher has checked twice, whenever its first read happens.
    for save in 0..200 {
        if watcher.is_finished() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
        fs::write(&file, format!("{broken}// save {save}\n")).unwrap();
    }
    let run = watcher.join().unwrap();
    assert_eq!(run.code, ExitCode::FAILURE, "{}", run.stdout);
    assert_eq!(run.stdout.matches("is outside the editable part").count(), 2, "{}", run.stdout);
    assert!(run.stdout.contains("Hint 1: ") && run.stdout.contains("Hint 2: "), "{}", run.stdout);
}

/// What NVRTC is given for every starter and solution: the course's headers inlined, nothing left
/// to include, and `#line` directives naming only the fixed program name and bare header names.
#[test]
fn every_exercise_compiles_from_memory_with_no_path_in_its_text() {
    let manifest = manifest();
    for exercise in &manifest.exercises {
        let starter = fs::read_to_string(manifest.path(&exercise.starter)).unwrap();
        for file in [&exercise.starter, &exercise.solution] {
            let bytes = fs::read(manifest.path(file)).unwrap();
            let valid = learner_file::validate(exercise, &starter, &bytes).unwrap();
            let text = cuda_kernels::source::expand_for_compile(exercises::check::PROGRAM_NAME, &valid.text).unwrap();
            assert_eq!(exercises::tokens::include_left(&text), None, "{}", exercise.id);
            for line in text.lines().filter(|l| l.starts_with("#line")) {
                let name = line.split('"').nth(1).unwrap();
                assert!(name == "submission.cu" || cuda_kernels::source::course_headers().contains(&name), "{line}");
            }
        }
    }
}
