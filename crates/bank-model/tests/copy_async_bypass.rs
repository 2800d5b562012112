//! `cp.async.cg` (LDGSTS.BYPASS), the variant that bypasses L1, against the model's `cp.async`
//! rule, which was measured on `.ca` (`data/h100/copy-async-bypass.tsv`: both variants of the
//! same instructions). The rule holds for `.cg` where a group of 8 lanes copies one 128-byte
//! source line into one 128-byte shared line, each 32-byte source sector into one 32-byte unit of
//! it, to distinct addresses (the fills of lesson 14's swizzled and unpadded tiles); elsewhere
//! `.cg` takes other counts, which the model does not know yet.

use bank_model::{Op, Request, WARP_SIZE, Width, rules};

struct Row {
    addresses: [Option<u32>; WARP_SIZE],
    sources: Vec<u32>,
    tag: String,
    ca: u32,
    cg: u32,
}

fn rows() -> Vec<Row> {
    include_str!("../data/h100/copy-async-bypass.tsv")
        .lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| {
            let fields: Vec<&str> = line.split('\t').collect();
            let addresses: Vec<Option<u32>> =
                fields[0].split(',').map(|a| (a != "-").then(|| a.parse().expect("a byte address"))).collect();
            Row {
                addresses: addresses.try_into().expect("32 lanes"),
                sources: fields[1].split(',').map(|s| s.parse().expect("a chunk")).collect(),
                tag: fields[2].to_owned(),
                ca: fields[3].parse().expect("wavefronts"),
                cg: fields[4].parse().expect("wavefronts"),
            }
        })
        .collect()
}

/// The row's instruction, when its lanes copy chunks in lane order (as the model assumes).
fn lane_ordered(row: &Row) -> Option<Request> {
    row.sources
        .iter()
        .enumerate()
        .all(|(lane, &source)| source == lane as u32)
        .then(|| Request::new(Op::CopyAsync, Width::W16, row.addresses).expect("16-byte aligned"))
}

#[test]
fn the_model_counts_every_ca_copy_with_lane_ordered_sources() {
    for row in rows() {
        if let Some(request) = lane_ordered(&row) {
            assert_eq!(request.wavefronts(), row.ca, "{}: {:?}", row.tag, row.addresses);
        }
    }
}

#[test]
fn cg_costs_what_ca_does_where_lines_and_sectors_stay_whole() {
    let rows = rows();
    let keeps = |row: &Row| lane_ordered(row).is_some_and(|request| rules::bypass_counts_as_through_l1(&request));
    let whole: Vec<&Row> = rows.iter().filter(|row| keeps(row)).collect();
    assert!(whole.len() >= 8, "{} rows keep lines and sectors whole", whole.len());
    for row in &whole {
        assert_eq!(row.cg, row.ca, "{}", row.tag);
    }
    // Where they do not, `.cg` differs: a group from chunk 1 of a line, or rotated by one chunk
    // within it, splits every sector; a group that reads two source lines takes one each.
    let split = |tag: &str| rows.iter().find(|row| row.tag == tag).map(|row| (row.ca, row.cg));
    assert_eq!(split("one-line-group-from-chunk-1"), Some((1, 3)));
    assert_eq!(split("rotated-1-in-one-line"), Some((1, 2)));
    assert_eq!(split("rotated-2-in-one-line"), Some((1, 1)), "a 32-byte sector moved whole");
    assert_eq!(split("from-chunk-0-sources-shifted-4"), Some((1, 2)));
    assert!(rows.iter().filter(|row| !keeps(row)).any(|row| row.cg != row.ca));
}
