//! A warp-level model of shared-memory banks on NVIDIA GPUs.
//!
//! Give it one warp-wide shared-memory instruction (load or store, access width, and the byte
//! address of each of the 32 lanes, any lane possibly inactive) and it tells how many
//! *wavefronts* (passes through the 32 banks) the hardware needs, how many an ideal access of
//! the same size would need, and which lanes and 32-bit words land in each bank.
//!
//! The rules are those of the NVIDIA H100 (sm_90), checked against Nsight Compute's exact
//! per-instruction counters; see [`rules`] for each rule and where it was measured.
//! The crate knows nothing of CUDA: it is plain arithmetic on addresses.

pub mod batch;
pub mod describe;
pub mod measured;
mod request;
pub mod rules;
pub mod swizzle;

pub use request::{Matrices, Op, Request, RequestError, Width, parse_addresses};

use serde::Serialize;

/// Lanes in a warp.
pub const WARP_SIZE: usize = 32;
/// Shared-memory banks per SM.
pub const BANKS: u32 = 32;
/// Bytes each bank delivers per wavefront.
pub const BANK_BYTES: u32 = 4;
/// Bytes one wavefront moves when every bank is busy.
pub const WAVEFRONT_BYTES: u32 = BANKS * BANK_BYTES;

/// Greatest common divisor: the textbook rule says 4-byte lanes `stride` words apart conflict
/// `gcd(stride, 32)`-way, which the course checks the model against and teaches.
/// Any unsigned integer type.
pub fn gcd<T: Copy + PartialEq + Default + std::ops::Rem<Output = T>>(a: T, b: T) -> T {
    if b == T::default() { a } else { gcd(b, a % b) }
}

/// A set of lanes, bit `i` for lane `i`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LaneSet(pub u32);

impl LaneSet {
    pub fn contains(self, lane: usize) -> bool {
        self.0 >> lane & 1 == 1
    }
    pub fn len(self) -> u32 {
        self.0.count_ones()
    }
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
    pub fn iter(self) -> impl Iterator<Item = usize> {
        let mut rest = self.0;
        std::iter::from_fn(move || {
            (rest != 0).then(|| {
                let lane = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                lane
            })
        })
    }
    fn insert(&mut self, lane: usize) {
        self.0 |= 1 << lane;
    }
}

impl Serialize for LaneSet {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

/// One 32-bit word touched by an instruction, and the lanes that touch it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WordUse {
    /// Word index: byte address / 4.
    pub word: u32,
    /// The pass group (see [`Pass`]) in which the word is accessed.
    pub pass: usize,
    pub lanes: LaneSet,
}

impl WordUse {
    pub fn bank(&self) -> u32 {
        self.word % BANKS
    }
}

/// A group of lanes the hardware serves on its own, and the wavefronts it takes.
///
/// Most instructions are one pass over the whole warp; 8- and 16-byte accesses are served by
/// half- or quarter-warps (see [`rules`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Pass {
    pub lanes: LaneSet,
    pub wavefronts: u32,
}

/// What the model predicts for one instruction.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Analysis {
    /// Wavefronts the hardware needs (what ncu counts in
    /// `sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_{ld,st}`).
    pub wavefronts: u32,
    /// Wavefronts needed to move the active lanes' bytes with no conflict at all.
    pub ideal: u32,
    /// `wavefronts - ideal`: the bank conflicts, exactly (ncu's hardware counter of that name
    /// counts more under load; lesson 3 shows it).
    pub excess: u32,
    pub active_lanes: LaneSet,
    /// Lanes whose words are all read or written by a lower lane of the same pass too
    /// (broadcast for loads, merged writes for stores): they cost no extra wavefront.
    pub shared_lanes: LaneSet,
    pub passes: Vec<Pass>,
    /// Every word touched, pass by pass, in the order lanes first touch them.
    pub words: Vec<WordUse>,
}

impl Analysis {
    /// The words of one bank, pass by pass.
    pub fn bank_words(&self, bank: u32) -> impl Iterator<Item = &WordUse> {
        self.words.iter().filter(move |use_| use_.bank() == bank)
    }

    /// Lanes that touch a bank.
    pub fn bank_lanes(&self, bank: u32) -> LaneSet {
        LaneSet(self.bank_words(bank).fold(0, |set, use_| set | use_.lanes.0))
    }

    /// The largest number of distinct words any bank serves within one pass:
    /// the "n" of an n-way bank conflict.
    pub fn conflict_degree(&self) -> u32 {
        let mut worst = 0;
        for pass in 0..self.passes.len() {
            for bank in 0..BANKS {
                let n = self.words.iter().filter(|u| u.pass == pass && u.bank() == bank).count();
                worst = worst.max(n as u32);
            }
        }
        worst
    }
}

impl Request {
    /// Predicts wavefronts, the per-bank table and broadcasts for this instruction.
    pub fn analyze(&self) -> Analysis {
        let mut words: Vec<WordUse> = Vec::with_capacity(4 * WARP_SIZE);
        let mut passes = Vec::with_capacity(4);
        let mut active_lanes = LaneSet::default();
        let mut shared_lanes = LaneSet::default();
        // Fixed lane ranges get their wavefronts from the one scan that records the words.
        let groups: Vec<(LaneSet, Option<u32>)> = match rules::fixed_parts(self) {
            Some(parts) => rules::parts(rules::active_lanes(self), parts).map(|(_, lanes)| (lanes, None)).collect(),
            None => rules::pass_groups(self).into_iter().map(|g| (g.lanes, Some(g.wavefronts))).collect(),
        };
        for (lanes, known_wavefronts) in groups {
            let pass = passes.len();
            let first = words.len();
            let mut lanes_with_new_words = LaneSet::default();
            let scanned = rules::scan_words(self, lanes, |visit| {
                if visit.first_touch {
                    lanes_with_new_words.insert(visit.lane);
                    words.push(WordUse { word: visit.word, pass, lanes: LaneSet(1 << visit.lane) });
                } else {
                    words[first + visit.index].lanes.insert(visit.lane);
                }
            });
            active_lanes.0 |= lanes.0;
            shared_lanes.0 |= lanes.0 & !lanes_with_new_words.0;
            passes.push(Pass { lanes, wavefronts: known_wavefronts.unwrap_or(scanned.wavefronts) });
        }
        let wavefronts = passes.iter().map(|p| p.wavefronts).sum();
        let ideal = self.ideal_wavefronts();
        Analysis {
            wavefronts,
            ideal,
            excess: wavefronts.saturating_sub(ideal),
            active_lanes,
            shared_lanes,
            passes,
            words,
        }
    }

    /// Only the wavefront count: the fast path for sweeping many instructions.
    pub fn wavefronts(&self) -> u32 {
        rules::wavefronts(self)
    }

    /// Wavefronts needed to move the active lanes' bytes if no two lanes ever conflicted.
    pub fn ideal_wavefronts(&self) -> u32 {
        let active = self.lanes.iter().flatten().count() as u32;
        if active == 0 {
            return 0;
        }
        (active * self.width.bytes()).div_ceil(WAVEFRONT_BYTES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strided(op: Op, width: u32, stride: u32) -> Request {
        Request::strided(op, Width::try_from(width).unwrap(), stride).unwrap()
    }

    #[test]
    fn four_byte_conflict_degree_is_gcd_of_stride_and_32() {
        for stride in 1..=64 {
            let analysis = strided(Op::Load, 4, stride).analyze();
            assert_eq!(analysis.wavefronts, gcd(stride, 32), "stride {stride}");
            assert_eq!(analysis.conflict_degree(), gcd(stride, 32), "stride {stride}");
        }
    }

    #[test]
    fn broadcast_is_one_wavefront_and_marks_shared_lanes() {
        let analysis = strided(Op::Load, 4, 0).analyze();
        assert_eq!(analysis.wavefronts, 1);
        assert_eq!(analysis.excess, 0);
        assert_eq!(analysis.shared_lanes.len(), 31);
        assert!(!analysis.shared_lanes.contains(0));
        assert_eq!(analysis.bank_lanes(0).len(), 32);
        assert_eq!(analysis.bank_words(0).count(), 1);
    }

    #[test]
    fn stride_32_puts_every_lane_in_bank_zero() {
        let analysis = strided(Op::Load, 4, 32).analyze();
        assert_eq!(analysis.wavefronts, 32);
        assert_eq!(analysis.ideal, 1);
        assert_eq!(analysis.excess, 31);
        assert_eq!(analysis.bank_words(0).count(), 32);
        assert!((1..BANKS).all(|bank| analysis.bank_lanes(bank).is_empty()));
    }

    #[test]
    fn inactive_lanes_cost_nothing() {
        let mut lanes = [None; WARP_SIZE];
        lanes[3] = Some(0);
        lanes[17] = Some(128);
        let request = Request::new(Op::Load, Width::W4, lanes).unwrap();
        let analysis = request.analyze();
        assert_eq!(analysis.active_lanes.iter().collect::<Vec<_>>(), [3, 17]);
        assert_eq!(analysis.wavefronts, 2);
        assert_eq!(analysis.ideal, 1);
        let none = Request::new(Op::Store, Width::W16, [None; WARP_SIZE]).unwrap();
        assert_eq!(none.analyze().wavefronts, 0);
        assert_eq!(none.ideal_wavefronts(), 0);
    }

    #[test]
    fn passes_cover_every_active_lane_once() {
        // Lanes i and i + 16 read the same address, and every address is in banks 0 and 1: lanes
        // n and n ^ 16 are no pair the hardware merges, so each half pays its 16 conflicts.
        let lanes = std::array::from_fn(|lane| Some(lane as u32 % 16 * 1024));
        let analysis = Request::new(Op::Load, Width::W8, lanes).unwrap().analyze();
        assert_eq!(analysis.wavefronts, 32);
        assert_eq!(analysis.passes.iter().map(|p| p.lanes.0).collect::<Vec<_>>(), [0xffff, 0xffff_0000]);
        // Lanes n and n ^ 1 sharing a conflict-free address: the warp is one pass.
        let lanes = std::array::from_fn(|lane| Some(lane as u32 / 2 * 8));
        let analysis = Request::new(Op::Load, Width::W8, lanes).unwrap().analyze();
        assert_eq!((analysis.wavefronts, analysis.passes.len()), (1, 1));
        let request = Request::strided(Op::Store, Width::W16, 1).unwrap();
        let lanes: Vec<u32> = request.analyze().passes.iter().map(|p| p.lanes.0).collect();
        assert_eq!(lanes, [0xff, 0xff00, 0xff_0000, 0xff00_0000]);
    }

    #[test]
    fn wide_stores_never_merge_across_quarter_warps() {
        assert_eq!(strided(Op::Store, 16, 0).analyze().wavefronts, 4);
        assert_eq!(strided(Op::Load, 16, 0).analyze().wavefronts, 2);
        assert_eq!(strided(Op::Store, 8, 0).analyze().wavefronts, 2);
        assert_eq!(strided(Op::Load, 8, 0).analyze().wavefronts, 1);
    }

    #[test]
    fn fast_path_agrees_with_full_analysis_on_random_requests() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for _ in 0..20_000 {
            let op = if rng.random() { Op::Load } else { Op::Store };
            let width = Width::ALL[rng.random_range(0..Width::ALL.len())];
            let span = [64u32, 512, 4096][rng.random_range(0..3)];
            let lanes = std::array::from_fn(|_| {
                rng.random_bool(0.9).then(|| rng.random_range(0..span / width.bytes()) * width.bytes())
            });
            let request = Request::new(op, width, lanes).unwrap();
            assert_eq!(request.wavefronts(), request.analyze().wavefronts, "{request:?}");
        }
    }
}
