//! Replays every instruction measured on the H100 and demands the model's exact count.

use bank_model::batch;

fn check_file(name: &str, text: &str) -> usize {
    let mut mismatches = Vec::new();
    let mut rows = 0;
    for line in batch::parse(text) {
        let line = line.unwrap_or_else(|e| panic!("{name}: {e}"));
        let measured: u32 = line.extra[2].parse().expect("wavefronts column");
        let predicted = line.request.analyze().wavefronts;
        if predicted != measured {
            mismatches.push(format!(
                "{name}:{} {} {}B {}: measured {measured}, model {predicted}",
                line.line, line.request.op, line.request.width, line.extra[0]
            ));
        }
        rows += 1;
    }
    assert!(mismatches.is_empty(), "{} mismatches:\n{}", mismatches.len(), mismatches.join("\n"));
    rows
}

#[test]
fn model_matches_all_420_regular_patterns_measured_on_h100() {
    let rows = check_file("h100-wavefronts.tsv", include_str!("data/h100-wavefronts.tsv"));
    assert_eq!(rows, 420);
}
