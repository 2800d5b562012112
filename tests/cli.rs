//! `cargo xtask conflicts`: answers, JSON, batches, and clear errors on bad input.

use bank_model::batch;
use course_tests::{parse_error, root, xtask};
use serde_json::Value;

fn json(args: &[&str]) -> Value {
    let run = xtask(args);
    assert!(run.succeeded(), "{args:?}: {}", run.error());
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{args:?} printed no JSON ({e}): {}", run.stdout))
}

#[test]
fn index_expression_gives_wavefronts_and_ideal() {
    let answer = json(&["conflicts", "--index", "lane * 2", "--json"]);
    assert_eq!((answer["wavefronts"].as_u64(), answer["ideal"].as_u64()), (Some(2), Some(1)));
    assert_eq!(answer["addresses"][31], 248);
    let answer = json(&["conflicts", "--op", "st", "--width", "16", "--index", "0", "--json"]);
    assert_eq!((answer["wavefronts"].as_u64(), answer["ideal"].as_u64()), (Some(4), Some(4)));
    let column = json(&["conflicts", "--index", "lane * 32 + 3", "--json"]);
    assert_eq!(column["wavefronts"], 32, "column 3 of a float tile[32][32]");
    let swizzled = json(&["conflicts", "--index", "lane * 32 + bitxor(3, lane)", "--json"]);
    assert_eq!(swizzled["wavefronts"], 1, "an XOR swizzle spreads the column over the banks");
}

#[test]
fn addresses_with_inactive_lanes() {
    let mut lanes = vec!["_"; 32];
    lanes[0] = "0";
    lanes[5] = "128";
    let answer = json(&["conflicts", "--addresses", &lanes.join(","), "--json"]);
    assert_eq!(answer["wavefronts"], 2);
    assert_eq!(answer["active_lanes"], serde_json::json!([0, 5]));
}

#[test]
fn table_output_shows_the_summary_and_every_bank() {
    let run = xtask(&["conflicts", "--index", "lane * 32"]);
    assert!(run.succeeded());
    assert!(run.stdout.starts_with("ld 4-byte: 32 wavefronts (ideal 1): 32-way bank conflict"), "{}", run.stdout);
    assert!(run.stdout.contains(" 0: 32w") && run.stdout.contains("31: -"), "{}", run.stdout);
    insta::assert_snapshot!("conflicts_stride_2", xtask(&["conflicts", "--index", "lane * 2"]).stdout);
}

#[test]
fn batch_prints_one_object_per_data_line_matching_the_h100() {
    let path = root().join("crates/bank-model/data/h100-wavefronts.tsv");
    let run = xtask(&["conflicts", "--batch", path.to_str().unwrap()]);
    assert!(run.succeeded(), "{}", run.error());
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<_> = batch::parse(&text).map(Result::unwrap).collect();
    let answers: Vec<Value> = run.stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(answers.len(), lines.len());
    for (line, answer) in lines.iter().zip(&answers) {
        assert_eq!(answer["line"], line.line);
        assert_eq!(answer["wavefronts"].to_string(), line.extra[2], "line {}", line.line);
    }
}

fn batch_error(content: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.tsv");
    std::fs::write(&path, content).unwrap();
    let run = xtask(&["conflicts", "--batch", path.to_str().unwrap()]);
    assert!(run.stdout.is_empty(), "nothing is printed for a bad batch");
    run.error().to_owned()
}

#[test]
fn bad_batches_name_the_line_and_the_problem() {
    let good = vec!["0"; 32].join(",");
    let error = batch_error(&format!("# ok\nld\t4\t{good}\nld\t4\t0,4,8\n"));
    assert!(error.contains("line 3: expected 32 lane addresses"), "{error}");
    let error = batch_error(&format!("ld\t4\t{good}\n\nst\t3\t{good}\n"));
    assert!(error.contains("line 3: width 3 bytes is not a shared-memory access width"), "{error}");
    let error = batch_error(&format!("mov\t4\t{good}\n"));
    assert!(error.contains("line 1: unknown op `mov`"), "{error}");
    let misaligned = format!("2,{}", vec!["0"; 31].join(","));
    let error = batch_error(&format!("ld\t4\t{misaligned}\n"));
    assert!(error.contains("line 1: lane 0: byte address 2 is not aligned to the 4-byte access width"), "{error}");
}

#[test]
fn bad_single_requests_are_clear_errors() {
    let run = xtask(&["conflicts", "--addresses", "0,4"]);
    assert_eq!(run.error(), "expected 32 lane addresses (one per lane, `_` for an inactive lane), found 2");
    let run = xtask(&["conflicts", "--width", "3", "--index", "lane"]);
    assert!(run.error().starts_with("width 3 bytes is not a shared-memory access width"));
    let run = xtask(&["conflicts", "--index", "lane - 1"]);
    assert!(run.error().contains("gives -1 at lane 0"), "{}", run.error());
    let run = xtask(&["conflicts", "--index", "lane / 0"]);
    assert!(run.error().contains("--index `lane / 0` at lane 0"), "{}", run.error());
    let run = xtask(&["conflicts", "--batch", "/nonexistent/batch.tsv"]);
    assert!(run.error().starts_with("cannot read batch file /nonexistent/batch.tsv"), "{}", run.error());
    assert!(
        parse_error(&["conflicts", "--op", "ld"]).contains("--index <INDEX>|--addresses <ADDRESSES>|--batch <BATCH>")
    );
}

#[test]
fn bench_reports_model_rates_and_why_gpu_figures_are_missing() {
    let answer = json(&["bench", "--seconds", "0.05", "--no-gpu", "--json"]);
    assert!(answer["model"]["analyze_per_second"].as_f64().unwrap() > 0.0);
    assert!(answer["model"]["wavefronts_per_second"].as_f64().unwrap() > 0.0);
    assert_eq!(answer["gpu_skipped"], "--no-gpu given");
    assert_eq!(answer["figures"], serde_json::json!([]));
    assert_eq!(answer["grading"], serde_json::Value::Null);
    let grading_only = json(&["bench", "--only", "grading", "--no-gpu", "--json"]);
    assert_eq!(
        (&grading_only["model"], &grading_only["gpu_skipped"]),
        (&serde_json::Value::Null, &"--no-gpu given".into())
    );
    let build_only = json(&["bench", "--only", "build", "--no-gpu", "--json"]);
    assert_eq!((&build_only["model"], &build_only["build_cost"]), (&serde_json::Value::Null, &serde_json::json!([])));
    let unknown = xtask(&["bench", "--only", "grading", "--grading-exercise", "row-sum", "--no-gpu"]);
    assert!(!unknown.succeeded());
    assert!(unknown.error().starts_with("there is no exercise `row-sum`"), "{}", unknown.error());
}

#[test]
fn named_gpu_tests_must_run() {
    if cuda_kernels::Gpu::open().is_ok() {
        return;
    }
    let named = xtask(&["test", "--only", "grading::"]);
    assert!(!named.succeeded());
    assert!(
        named.error().starts_with("the GPU suite was required (--gpu or --only) but cannot run: "),
        "{}",
        named.error()
    );
}

#[test]
fn matrix_and_copy_ops_from_an_index() {
    // ldmatrix.x4 of rows 128 bytes apart: each matrix's 8 rows in banks 0-3, 8 wavefronts each.
    let rows = json(&["conflicts", "--op", "ldmatrix.x4", "--width", "16", "--index", "lane * 8", "--json"]);
    assert_eq!((rows["wavefronts"].as_u64(), rows["passes"].as_array().map(Vec::len)), (Some(32), Some(4)));
    // .x1 takes its rows from lanes 0-7; the index's other lanes give none.
    let x1 = json(&["conflicts", "--op", "ldmatrix.x1.trans", "--width", "16", "--index", "lane", "--json"]);
    assert_eq!((x1["wavefronts"].as_u64(), x1["active_lanes"].as_array().map(Vec::len)), (Some(1), Some(8)));
    let copy = json(&["conflicts", "--op", "cp.async", "--width", "16", "--index", "lane / 4", "--json"]);
    assert_eq!(copy["wavefronts"], 16, "a word written by 4 lanes of a quarter is written 4 times");
    let wrong = xtask(&["conflicts", "--op", "stmatrix.x2", "--width", "8", "--index", "lane"]);
    assert!(!wrong.succeeded());
    assert!(wrong.error().contains("`stmatrix.x2` moves rows of 16 bytes: use width 16, not 8"), "{}", wrong.error());
}

#[test]
fn probe_designs_are_listed_and_an_unknown_one_is_named() {
    let list = xtask(&["probe-design", "--list"]);
    assert!(list.succeeded() && list.stdout.lines().count() >= 10, "{}", list.stdout);
    let batch = xtask(&["probe-design", "pair-masks"]);
    assert!(batch.stdout.starts_with("# pair-masks (seed 1): "), "{}", &batch.stdout[..80]);
    let unknown = xtask(&["probe-design", "nope"]);
    assert!(!unknown.succeeded());
    assert!(unknown.error().contains("no probe design `nope`: choose one of pair-masks,"), "{}", unknown.error());
}
