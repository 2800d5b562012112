//! The per-bank table: 32 banks as a 4 x 8 grid, each cell the distinct words it serves and the
//! lanes that asked for them.

use bank_model::{Analysis, BANKS, LaneSet, Request};

use crate::report::{Report, Styled, Tone, styled};

const COLUMNS: u32 = 8;

/// Printed under instructions the model flags as not verified.
pub const UNVERIFIED_NOTE: &str = "Note: unverified. The H100 serves 8/16-byte accesses whose lanes share addresses like \
     this in ways the model does not yet predict exactly (see crates/bank-model/src/rules.rs).";

/// A one-line verdict, e.g. `ld 4-byte: 2 wavefronts (ideal 1): 2-way bank conflict`.
pub fn summary(request: &Request, analysis: &Analysis) -> String {
    let verdict = match analysis.excess {
        0 if analysis.shared_lanes.is_empty() => "conflict-free".to_owned(),
        0 => format!("conflict-free; {} lanes share a word with another lane", analysis.shared_lanes.len()),
        _ => format!("{}-way bank conflict, {} excess wavefronts", analysis.conflict_degree(), analysis.excess),
    };
    let passes = if analysis.passes.len() > 1 {
        let groups: Vec<String> =
            analysis.passes.iter().map(|p| format!("lanes {}: {}", lane_ranges(p.lanes), p.wavefronts)).collect();
        format!(" [{}]", groups.join(", "))
    } else {
        String::new()
    };
    format!(
        "{} {}-byte: {} wavefronts (ideal {}): {verdict}{passes}",
        request.op, request.width, analysis.wavefronts, analysis.ideal
    )
}

/// Adds the bank grid of one instruction to `report`.
pub fn add_bank_grid(report: &mut Report, request: &Request, analysis: &Analysis) {
    report.text(summary(request, analysis));
    if !analysis.verified {
        report.text(UNVERIFIED_NOTE);
    }
    let header = (0..COLUMNS).map(|c| format!("bank +{c}"));
    let rows = (0..BANKS / COLUMNS)
        .map(|row| (0..COLUMNS).map(|column| bank_cell(analysis, row * COLUMNS + column)).collect())
        .collect();
    report.table(header, rows);
}

fn bank_cell(analysis: &Analysis, bank: u32) -> Styled {
    let mut words: Vec<u32> = analysis.bank_words(bank).map(|u| u.word).collect();
    words.sort_unstable();
    words.dedup();
    let words = words.len();
    let lanes = analysis.bank_lanes(bank);
    if lanes.is_empty() {
        return styled(format!("{bank:>2}: -"), Tone::Plain);
    }
    let most_in_one_pass = (0..analysis.passes.len())
        .map(|pass| analysis.bank_words(bank).filter(|u| u.pass == pass).count() as u32)
        .max()
        .unwrap_or(0);
    let tone = Tone::of_wavefronts(most_in_one_pass, 1);
    styled(format!("{bank:>2}: {words}w\nL{}", lane_ranges(lanes)), tone)
}

/// `0-3,8,10-11`: a lane set as compact ranges.
pub fn lane_ranges(lanes: LaneSet) -> String {
    let mut parts = Vec::new();
    let mut lanes = lanes.iter().peekable();
    while let Some(start) = lanes.next() {
        let mut end = start;
        while lanes.peek() == Some(&(end + 1)) {
            end = lanes.next().expect("peeked");
        }
        parts.push(if start == end { start.to_string() } else { format!("{start}-{end}") });
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use bank_model::{Op, Width};

    use super::*;

    #[test]
    fn lane_ranges_are_compact() {
        assert_eq!(lane_ranges(LaneSet(0b1011_0111)), "0-2,4-5,7");
        assert_eq!(lane_ranges(LaneSet(u32::MAX)), "0-31");
        assert_eq!(lane_ranges(LaneSet(0)), "");
    }

    #[test]
    fn summary_names_the_conflict_and_the_passes() {
        let request = Request::strided(Op::Load, Width::W4, 2).unwrap();
        assert_eq!(
            summary(&request, &request.analyze()),
            "ld 4-byte: 2 wavefronts (ideal 1): 2-way bank conflict, 1 excess wavefronts"
        );
        let request = Request::strided(Op::Store, Width::W16, 1).unwrap();
        assert_eq!(
            summary(&request, &request.analyze()),
            "st 16-byte: 4 wavefronts (ideal 4): conflict-free \
             [lanes 0-7: 1, lanes 8-15: 1, lanes 16-23: 1, lanes 24-31: 1]"
        );
    }
}
