//! Replays every instruction measured on the H100 and demands the model's exact count, except
//! for instructions the model itself flags as not verified.

use bank_model::batch;

struct Replay {
    rows: usize,
    /// Flagged as not verified, and the measured count differed.
    unverified_misses: usize,
}

fn replay(name: &str, text: &str) -> Replay {
    let mut wrong = Vec::new();
    let (mut rows, mut unverified_misses) = (0, 0);
    for line in batch::parse(text) {
        let line = line.unwrap_or_else(|e| panic!("{name}: {e}"));
        let measured: u32 = line.extra[2].parse().expect("wavefronts column");
        let analysis = line.request.analyze();
        match (analysis.wavefronts == measured, analysis.verified) {
            (true, _) => {}
            (false, false) => unverified_misses += 1,
            (false, true) => wrong.push(format!(
                "{name}:{} {} {}B {}: measured {measured}, model {}",
                line.line, line.request.op, line.request.width, line.extra[0], analysis.wavefronts
            )),
        }
        rows += 1;
    }
    assert!(wrong.is_empty(), "{} verified predictions were wrong:\n{}", wrong.len(), wrong.join("\n"));
    Replay { rows, unverified_misses }
}

#[test]
fn model_matches_all_420_regular_patterns_measured_on_h100() {
    let replay = replay("h100-wavefronts.tsv", include_str!("data/h100-wavefronts.tsv"));
    assert_eq!((replay.rows, replay.unverified_misses), (420, 0));
}

#[test]
fn model_matches_random_broadcast_and_inactive_lane_patterns_measured_on_h100() {
    let replay = replay("h100-irregular.tsv", include_str!("data/h100-irregular.tsv"));
    assert_eq!((replay.rows, replay.unverified_misses), (504, 0));
}

#[test]
fn every_miss_on_the_multicast_probes_is_flagged_unverified() {
    let replay = replay("h100-targeted.tsv", include_str!("data/h100-targeted.tsv"));
    assert_eq!(replay.rows, 150);
    // The flagged class is real: most of these probes were built to land in it.
    assert!(replay.unverified_misses > 0);
}

#[test]
fn reference_patterns_remeasured_by_the_course_probe_differ_only_where_flagged() {
    let replay = replay("h100-wavefronts-remeasured.tsv", include_str!("data/h100-wavefronts-remeasured.tsv"));
    // ld 8 stride128: 32 wavefronts on the course's probe, 16 in the reference data.
    assert_eq!((replay.rows, replay.unverified_misses), (420, 1));
}

#[test]
fn lanes_of_a_group_sharing_one_of_several_addresses_are_flagged() {
    let replay = replay("h100-group-sharing.tsv", include_str!("data/h100-group-sharing.tsv"));
    // The hardware served each in half the rules' wavefronts, loads and stores alike.
    assert_eq!((replay.rows, replay.unverified_misses), (4, 4));
}
