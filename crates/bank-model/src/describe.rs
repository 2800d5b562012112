//! The model's answer in words and per bank, as the terminal grids and the book's playground
//! show it: one place, so every view says the same thing.

use crate::{Analysis, BANKS, LaneSet, Request};

/// One bank's part in an instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BankUse {
    pub bank: u32,
    /// The distinct words the bank serves, lowest first.
    pub words: Vec<u32>,
    /// The lanes that read or write them.
    pub lanes: LaneSet,
    /// The most distinct words the bank serves within one pass: 1 is conflict-free, n an n-way conflict.
    pub most_words_in_one_pass: u32,
}

impl Analysis {
    /// What `bank` does for this instruction.
    pub fn bank_use(&self, bank: u32) -> BankUse {
        let mut words: Vec<u32> = self.bank_words(bank).map(|u| u.word).collect();
        words.sort_unstable();
        words.dedup();
        let most_words_in_one_pass = (0..self.passes.len())
            .map(|pass| self.bank_words(bank).filter(|u| u.pass == pass).count() as u32)
            .max()
            .unwrap_or(0);
        BankUse { bank, words, lanes: self.bank_lanes(bank), most_words_in_one_pass }
    }

    /// Every bank's part, bank 0 first.
    pub fn bank_uses(&self) -> impl Iterator<Item = BankUse> + '_ {
        (0..BANKS).map(|bank| self.bank_use(bank))
    }
}

/// `1 wavefront`, `2 wavefronts`, `1.50 wavefronts`: a count and the word, in the right number.
pub fn wavefronts(count: impl std::fmt::Display) -> String {
    match count.to_string() {
        one if one == "1" => "1 wavefront".to_owned(),
        many => format!("{many} wavefronts"),
    }
}

/// A one-line verdict, e.g. `ld 4-byte: 2 wavefronts (ideal 1): 2-way bank conflict`.
pub fn summary(request: &Request, analysis: &Analysis) -> String {
    let verdict = match analysis.excess {
        0 if analysis.shared_lanes.is_empty() => "conflict-free".to_owned(),
        0 => format!("conflict-free; {} lanes share a word with another lane", analysis.shared_lanes.len()),
        // No bank holds two words of a pass, yet the passes cost more than the ideal: they did not merge.
        excess if analysis.conflict_degree() == 1 => {
            format!("no bank conflict, but its lane groups are served apart: {} in excess", wavefronts(excess))
        }
        _ => format!("{}-way bank conflict, {} in excess", analysis.conflict_degree(), wavefronts(analysis.excess)),
    };
    let passes = if analysis.passes.len() > 1 {
        let groups: Vec<String> =
            analysis.passes.iter().map(|p| format!("lanes {}: {}", lane_ranges(p.lanes), p.wavefronts)).collect();
        format!(" [{}]", groups.join(", "))
    } else {
        String::new()
    };
    format!(
        "{} {}-byte: {} (ideal {}): {verdict}{passes}",
        request.op,
        request.width,
        wavefronts(analysis.wavefronts),
        analysis.ideal
    )
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
    use super::*;
    use crate::{Op, Width};

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
            "ld 4-byte: 2 wavefronts (ideal 1): 2-way bank conflict, 1 wavefront in excess"
        );
        let request = Request::strided(Op::Store, Width::W16, 1).unwrap();
        assert_eq!(
            summary(&request, &request.analyze()),
            "st 16-byte: 4 wavefronts (ideal 4): conflict-free \
             [lanes 0-7: 1, lanes 8-15: 1, lanes 16-23: 1, lanes 24-31: 1]"
        );
        // Lane 31 active: the first half-warp's two lanes, though conflict-free, are not merged.
        let mut lanes = [None; 32];
        (lanes[0], lanes[8], lanes[31]) = (Some(0), Some(16), Some(32));
        let request = Request::new(Op::Load, Width::W16, lanes).unwrap();
        assert_eq!(
            summary(&request, &request.analyze()),
            "ld 16-byte: 3 wavefronts (ideal 1): no bank conflict, but its lane groups are served apart: 2 wavefronts \
             in excess [lanes 0: 1, lanes 8: 1, lanes 31: 1]"
        );
    }

    #[test]
    fn bank_use_counts_distinct_words_per_pass() {
        // Stride 2: even banks hold two words each, read by lanes 16 apart, in one pass.
        let analysis = Request::strided(Op::Load, Width::W4, 2).unwrap().analyze();
        let bank = analysis.bank_use(2);
        assert_eq!(bank.words, [2, 34]);
        assert_eq!(bank.lanes.iter().collect::<Vec<_>>(), [1, 17]);
        assert_eq!(bank.most_words_in_one_pass, 2);
        assert!(analysis.bank_use(3).lanes.is_empty());
        // double[lane]: two words per bank, but one per half-warp pass.
        let analysis = Request::strided(Op::Load, Width::W8, 1).unwrap().analyze();
        assert!(analysis.bank_uses().all(|b| b.words.len() == 2 && b.most_words_in_one_pass == 1));
        // Broadcast: one word, 32 lanes.
        let analysis = Request::strided(Op::Load, Width::W4, 0).unwrap().analyze();
        let bank = analysis.bank_use(0);
        assert_eq!((bank.words.len(), bank.lanes.len(), bank.most_words_in_one_pass), (1, 32, 1));
    }
}
