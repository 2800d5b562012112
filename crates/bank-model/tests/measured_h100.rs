//! Replays every instruction measured (H100, and H200 for the newest tables) and demands the
//! model's exact count for each.

use bank_model::{Op, Width, batch, measured};

/// The rows of a measured table, each replayed: the model's count must equal the measured one,
/// and the fast path must equal the full analysis.
fn replay(name: &str) -> usize {
    let table = measured::HOPPER.iter().find(|t| t.name == name).expect("a measured table");
    let mut wrong = Vec::new();
    let mut rows = 0;
    for line in batch::parse(table.text) {
        let line = line.unwrap_or_else(|e| panic!("{name}: {e}"));
        let measured: u32 = line.extra[2].parse().expect("wavefronts column");
        let analysis = line.request.analyze();
        assert_eq!(line.request.wavefronts(), analysis.wavefronts, "{name}:{}: fast path", line.line);
        if analysis.wavefronts != measured {
            wrong.push(format!(
                "{name}:{} {} {}B {}: measured {measured}, model {}",
                line.line, line.request.op, line.request.width, line.extra[0], analysis.wavefronts
            ));
        }
        rows += 1;
    }
    assert!(wrong.is_empty(), "{} predictions were wrong:\n{}", wrong.len(), wrong.join("\n"));
    rows
}

#[test]
fn every_measured_table_replays_exactly() {
    for table in measured::HOPPER {
        assert!(replay(table.name) > 0, "{} is empty", table.name);
    }
}

#[test]
fn the_reference_patterns_and_the_earlier_tables() {
    assert_eq!(replay("reference"), 420);
    // Re-measured one instruction per step.
    assert_eq!(replay("earlier-tables"), 1078);
}

#[test]
fn every_lane_pair_every_triple_of_the_first_half_and_every_four_and_one() {
    assert_eq!(replay("two-lanes"), 5 * 496);
    assert_eq!(replay("three-lanes"), 3360 + 1200);
    // The first half-warp with lane 31 inactive merges whenever nothing conflicts, however its
    // lanes pair.
    assert_eq!(replay("four-and-one"), 16_800);
}

#[test]
fn ldmatrix_and_stmatrix_every_shape() {
    for name in ["matrix", "matrix-seed2", "matrix-seed3"] {
        assert_eq!(replay(name), 756, "{name}");
    }
}

#[test]
fn cp_async_every_width() {
    for name in ["copy-async", "copy-async-seed2", "copy-async-seed3", "copy-async-seed4"] {
        assert_eq!(replay(name), 423, "{name}");
    }
    // Three lanes over source positions and banks, every way; four lanes in chains, every way;
    // and 1,000 random copies each of 4 and 8 bytes.
    assert_eq!(replay("copy-positions"), 8800);
    assert_eq!(replay("copy-chains"), 17_920);
    assert_eq!(replay("copy-random"), 2000);
}

#[test]
fn lane_31_stops_the_first_half_warp_merging() {
    let table = measured::HOPPER.iter().find(|t| t.name == "three-quarters").expect("measured");
    let rows: Vec<_> = table.rows().collect();
    assert_eq!(rows.len(), 1024);
    for row in rows {
        let expected = if row.request.lanes[31].is_some() { 3 } else { 2 };
        assert_eq!(row.wavefronts, expected, "{}", row.tag);
        assert_eq!(row.request.wavefronts(), expected, "{}: the model", row.tag);
    }
}

#[test]
fn the_data_covers_every_width_and_op_with_thousands_of_rows() {
    let lines: Vec<_> = measured::HOPPER.iter().flat_map(|t| batch::parse(t.text).map(Result::unwrap)).collect();
    assert!(lines.len() >= 53_000, "{} rows", lines.len());
    for width in [Width::W8, Width::W16] {
        for op in [Op::Load, Op::Store] {
            let rows = lines.iter().filter(|l| l.request.op == op && l.request.width == width).count();
            assert!(rows >= 2_000, "{op} {width}: {rows} rows");
        }
    }
}

#[test]
fn the_h200_tables_measured_again_on_the_h100_agree_row_for_row() {
    let h200: Vec<&str> = measured::HOPPER.iter().filter(|t| t.gpu() == "H200").map(|t| t.name).collect();
    assert_eq!(measured::H100_RECHECKS.len(), h200.len(), "every H200 table is measured again");
    for recheck in measured::H100_RECHECKS {
        assert_eq!(recheck.gpu(), "H100 80GB HBM3");
        let table =
            measured::HOPPER.iter().find(|t| t.name == recheck.name && t.gpu() == "H200").expect("its H200 table");
        let rows = |t: &measured::Table| -> Vec<_> {
            t.rows().map(|m| (format!("{:?}", m.request), m.tag, m.wavefronts)).collect()
        };
        assert!(rows(recheck) == rows(table), "{}: the H100 and the H200 differ", recheck.name);
    }
}
