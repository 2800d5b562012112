//! The rules the model implements, and the experiments that established each.
//!
//! Shared memory is 32 banks, each 4 bytes wide; a 32-bit word at byte address `a` lives in bank
//! `(a / 4) % 32`. One *wavefront* reads or writes at most one distinct word per bank. The
//! hardware serves an instruction in *pass groups* of lanes; a group needs as many wavefronts as
//! the most distinct words any one bank must deliver to it (lanes asking for the same word share
//! it), and the instruction needs the sum over its groups.
//!
//! | instruction | pass groups |
//! |---|---|
//! | load or store, 1, 2 or 4 bytes | the whole warp |
//! | store, 8 bytes | each half-warp (lanes 0-15, 16-31) |
//! | store, 16 bytes | each quarter-warp (lanes 0-7, 8-15, 16-23, 24-31) |
//! | `ldmatrix`, `stmatrix` (`.x1`, `.x2`, `.x4`, `.trans` or not) | each matrix: the 8 lanes that give its rows |
//! | load, 8 bytes | the whole warp in **one** wavefront when its lanes pair up and nothing conflicts (below); else each half-warp |
//! | load, 16 bytes | one address: 16 lanes a wavefront, wherever they are; else each half-warp in one wavefront when nothing conflicts and it pairs as below; else each quarter-warp |
//! | `cp.async` (shared side) | 128 bytes of lanes: the warp (4 bytes), each half-warp (8), each quarter-warp (16); every lane writes once, a wavefront per lane of one source position (below) |
//!
//! *Lanes pair up* when every lane `n` reads the same address as lane `n ^ 1`, or every lane
//! `n` as lane `n ^ 2`, an inactive lane agreeing with anything; they pair up *exactly* when an
//! inactive lane agrees only with an inactive one. *Nothing conflicts* when no bank holds two
//! distinct words of the group. A merged group always takes exactly one wavefront. For 16-byte
//! loads the two half-warps differ: the second merges when its lanes pair up; the first needs
//! nothing while lane 31 is inactive, and while lane 31 is active its lanes must pair up exactly.
//!
//! Each rule, and the experiment behind it (`cargo xtask probe-design NAME` writes the batch,
//! `cargo xtask probe` measures it; the tables are `data/h100/*.tsv` and `data/h200/*.tsv`, read
//! by [`crate::measured`]):
//! - **Stores never merge groups.** `group-assignments` gave every assignment of up to three
//!   addresses (or none) to the halves, eighths, quarters and pairs of the warp: 4,160 stores,
//!   every one the sum of its fixed groups. `active-count`: one address stored by N lanes costs
//!   one wavefront per group that holds any of them (`st 16`: 4 for 32 lanes). Lesson 7's older
//!   figures of 1 and 2 wavefronts for `float2[lane / 8]` and `float4[lane / 4]` stores came
//!   from kernel totals; measured one instruction at a time they are 2 and 4.
//! - **8-byte loads merge the whole warp through lane pairs.** `pair-masks`: lanes `n` and
//!   `n ^ m` share an address, for every mask `m`: only `m = 1` and `m = 2` give 1 wavefront
//!   (16 addresses in 128 bytes); every other mask gives 2, and stride-128 halves 32 (so the
//!   reference data's 16 for `ld 8 stride128` was wrong, as its README now says).
//!   `group-assignments` with the addresses in one bank: `AAAABBBB` over quads costs 2,
//!   `AAAAAAAB` 3: a conflict anywhere sends the warp back to half-warps, each with its own
//!   conflicts. `random`: 16 random addresses inside one 128-byte row cost 2 (no pairs).
//! - **16-byte loads merge a half-warp through lane pairs, and the whole warp only for one
//!   address.** `group-assignments` over eighths: two eighths in one half with different
//!   addresses cost 1, in different halves 2, with one address 1. `active-count`: one address
//!   read by N lanes costs 1 up to N = 16 and 2 from 17 on, wherever the lanes are.
//!   `one-lane-off`: a uniform warp with one lane elsewhere costs 3 (its half falls back to
//!   quarters). With only the second half active, pairing decides, on all 712 measured.
//! - **Lane 31 decides what the first half-warp of a 16-byte load needs.** `two-lanes`,
//!   `three-lanes`, `four-and-one`: with only the first half active, every one of 20,168
//!   conflict-free loads took 1 wavefront, paired or not (`.XXYX... ...Y....` too).
//!   `three-quarters` (one lane in each quarter of the first half and one of the second, every
//!   choice, 1,024 loads): 3 wavefronts exactly when the second-half lane is lane 31, else 2.
//!   `first-half-fill` (lanes 0-3 each inactive, X or Y beside lanes 4-15 on X, lane 31 inactive,
//!   X or Y, lane 16 inactive or Z: 486 loads) tells what an inactive lane counts as: with lane
//!   31 inactive the first half always merges; with lane 31 active it merges exactly when its
//!   lanes pair up exactly, whatever lane 31 reads. `partial-halves` (seeds 1, 3 and 5-9),
//!   `neighbourhoods` (the three loads the last rule left over, and every one-lane change of
//!   them) and `random` seeds 1-5 hold it: 32,539 16-byte loads, none differing.
//! - **`cp.async` writes every lane, and the lanes of one source position in turn.** Measured
//!   with each lane copying from its own 16-byte slot of one contiguous global row (lane `n`
//!   reads bytes `16n..`), so a lane's *source position* is `n mod 8`, its slot in its 128-byte
//!   line. A group is 128 bytes of lanes. `copy-async`, `two-lanes`: lanes writing one word are
//!   written one after another, even in one quarter (`lane / 4`: 4 per quarter, 16 in all), as a
//!   store never is. `copy-positions` (three lanes from positions 0, 1 and 5 of every quarter, every
//!   way to put them in two banks: 8,800 instructions) isolates the positions: lanes A and B in one
//!   bank and C elsewhere take 2 wavefronts, but 3 when C shares a position with A or B, while A
//!   and B sharing a position costs nothing more. `copy-chains` (four 4-byte lanes from positions
//!   0 and 5 of every quarter, every way over two banks with two words each: 17,920) settles how
//!   they add up. The rule: a position's lanes take a wavefront each, plus the most writers that
//!   one of their banks has at other positions; the group takes the most of that over its
//!   positions. It gives every one of the 33,100 copies measured (`copy-random`'s 2,000 random
//!   ones included); for 16 bytes, one lane per position, it is each quarter's busiest bank.
//! - **`ldmatrix` and `stmatrix` are four 16-byte quarter-warp groups.** `matrix`: pitched rows,
//!   XOR-swizzled columns, repeated and random rows for all twelve shapes: 756 instructions,
//!   every one the sum over matrices of the most distinct words in one bank; `.trans` changes
//!   nothing, and repeated rows are broadcast within a matrix only.
//!
//! Every rule class agrees with every instruction measured; `cargo xtask calibrate` checks a
//! sample of each class on the reader's GPU.
//!
//! Where measured: NVIDIA H100 80GB HBM3 (sm_90), and for the tables in `data/h200/` an NVIDIA
//! H200 (the same GH100 chip), every one of whose 18,865 rows the H100 then measured the same
//! (`data/h100-recheck/`); driver 580.159.04, Nsight Compute 2025.3.1,
//! ncu's per-instruction source counters (`memory_l1_wavefronts_shared`) of one warp executing
//! each instruction once; `cargo xtask probe` puts up to 256 instructions in one generated
//! kernel, each its own machine instruction. Re-measured that way, the course's earlier tables
//! (one launch per instruction, sass counters) agree on every row but the three named above. An
//! *inactive* lane is one the instruction's guard predicate turns off, as `if (c) v = tile[i];`
//! compiles; lanes switched off by divergence were not measured apart.

use std::ops::Range;

use crate::{BANK_BYTES, BANKS, LaneSet, Op, Request, WARP_SIZE, WAVEFRONT_BYTES, Width};

/// Lanes the hardware serves together, and the wavefronts they take.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassGroup {
    pub lanes: LaneSet,
    pub wavefronts: u32,
}

/// The pass groups of an instruction, in lane order of their first lane; every active lane is
/// in exactly one group.
pub fn pass_groups(request: &Request) -> Vec<PassGroup> {
    let mut groups = Vec::with_capacity(4);
    for_each_group(request, |lanes, wavefronts| groups.push(PassGroup { lanes, wavefronts }));
    groups
}

/// The instruction's wavefronts: the sum over [`pass_groups`], without building them.
pub fn wavefronts(request: &Request) -> u32 {
    let mut total = 0;
    for_each_group(request, |_, wavefronts| total += wavefronts);
    total
}

/// Calls `group` with each pass group's lanes and wavefronts, in lane order.
fn for_each_group(request: &Request, mut group: impl FnMut(LaneSet, u32)) {
    let addresses = Addresses::of(request);
    let active = addresses.active;
    if active.is_empty() {
        return;
    }
    if let Some(count) = fixed_parts(request) {
        let words = addresses.max_words_per_bank(active, count);
        parts(active, count).for_each(|(part, lanes)| group(lanes, words[part]));
    } else if request.op == Op::CopyAsync {
        parts(active, parts_of_128_bytes(request.width))
            .for_each(|(_, lanes)| group(lanes, copy_wavefronts(request, lanes)));
    } else if request.width == Width::W16 && one_address(request) {
        // One address: a wavefront delivers it to at most 16 lanes, wherever they are.
        if active.len() <= 16 {
            group(active, 1);
        } else {
            parts(active, 2).for_each(|(_, half)| group(half, 1));
        }
    } else {
        // The parts of every merge block (halves of the warp for 8 bytes, quarters for 16) are
        // counted in one pass.
        let part_count = parts_of_128_bytes(request.width);
        let part_words = addresses.max_words_per_bank(active, part_count);
        let block_size = if request.width == Width::W8 { WARP_SIZE } else { WARP_SIZE / 2 };
        for start in (0..WARP_SIZE).step_by(block_size) {
            merged_or_split(&addresses, start..start + block_size, part_count, &part_words, &mut group);
        }
    }
}

/// How many equal lane ranges serve the instruction, when that does not depend on the addresses:
/// everything but 8- and 16-byte loads and `cp.async`.
pub(crate) fn fixed_parts(request: &Request) -> Option<usize> {
    match (request.op, request.width) {
        (Op::LoadMatrix { .. } | Op::StoreMatrix { .. }, _) => Some(4),
        (Op::Load, Width::W8 | Width::W16) | (Op::CopyAsync, _) => None,
        (_, width) => Some(parts_of_128_bytes(width)),
    }
}

/// How many lane ranges of 128 bytes (one wavefront's worth) the warp's accesses of `width`
/// make: 1 up to 4 bytes, 2 for 8, 4 for 16.
fn parts_of_128_bytes(width: Width) -> usize {
    (WARP_SIZE as u32 * width.bytes()).div_ceil(WAVEFRONT_BYTES) as usize
}

/// The index and active lanes of each of `parts` equal lane ranges, leaving out empty ones.
pub(crate) fn parts(active: LaneSet, parts: usize) -> impl Iterator<Item = (usize, LaneSet)> + Clone {
    let size = WARP_SIZE / parts;
    (0..parts)
        .map(move |part| (part, LaneSet(active.0 & range_mask(part * size, size))))
        .filter(|(_, lanes)| !lanes.is_empty())
}

/// A merge block of an 8- or 16-byte load (the warp, or a half-warp: `range`): one wavefront
/// when nothing conflicts and its lanes pair up as [`pairs_for_merge`] says, else its halves (8
/// bytes) or quarters (16 bytes) of `part_count`, each as many wavefronts as its most crowded
/// bank (`part_words`, by part).
fn merged_or_split(
    addresses: &Addresses,
    range: Range<usize>,
    part_count: usize,
    part_words: &[u32; 4],
    group: &mut impl FnMut(LaneSet, u32),
) {
    let block = LaneSet(addresses.active.0 & range_mask(range.start, range.len()));
    if block.is_empty() {
        return;
    }
    // A conflict inside a part is one of the block, which then needs no count of its own.
    let block_parts = parts(block, part_count);
    let nothing_conflicts =
        || block_parts.clone().all(|(part, _)| part_words[part] <= 1) && addresses.max_words_per_bank(block, 1)[0] <= 1;
    if nothing_conflicts() && pairs_for_merge(addresses.request, range) {
        group(block, 1);
        return;
    }
    block_parts.for_each(|(part, lanes)| group(lanes, part_words[part]));
}

/// The pairing a merge block needs. The warp of an 8-byte load, and the second half-warp of a
/// 16-byte one: lanes pair up, an inactive lane agreeing with anything. The first half-warp of a
/// 16-byte load: nothing while lane 31 is inactive; while it is active, lanes pair up exactly,
/// an inactive lane agreeing only with an inactive one.
fn pairs_for_merge(request: &Request, range: Range<usize>) -> bool {
    let last_lane = request.lanes[WARP_SIZE - 1];
    if request.width == Width::W16 && range.start == 0 {
        return last_lane.is_none() || pairs_up(request, range, |a, b| a == b);
    }
    pairs_up(request, range, |a, b| a.is_none() || b.is_none() || a == b)
}

/// Whether every lane `n` of `range` (the warp or a half-warp) agrees with lane `n ^ 1`, or
/// every lane with `n ^ 2` (`agree` decides, given both lanes' addresses).
fn pairs_up(request: &Request, range: Range<usize>, agree: impl Fn(Option<u32>, Option<u32>) -> bool) -> bool {
    let lanes = &request.lanes;
    [1, 2].into_iter().any(|mask| range.clone().all(|n| agree(lanes[n], lanes[n ^ mask])))
}

/// The wavefronts of one `cp.async` group (`lanes`: 128 bytes of lanes, so 32 lanes of 4 bytes,
/// 16 of 8 or 8 of 16). Every lane writes its word(s) once, even where lanes share a word, and
/// the lanes of one *source position* (lane mod 8, the 16-byte slot of its 128-byte global line)
/// take one wavefront each. A position's lanes wait besides for the writers of their banks at
/// other positions: the group takes the most, over positions, of the position's lanes plus the
/// most writers one of its banks has elsewhere.
fn copy_wavefronts(request: &Request, lanes: LaneSet) -> u32 {
    let banks_of = |lane: usize| {
        request.lanes[lane]
            .map(|address| request.width.words(address).fold(0u32, |set, word| set | 1 << (word % BANKS)))
    };
    let mut writers = [0u32; BANKS as usize];
    let mut writers_at = [[0u32; BANKS as usize]; 8];
    let mut lanes_at = [0u32; 8];
    for lane in lanes.iter() {
        let Some(banks) = banks_of(lane) else { continue };
        lanes_at[lane % 8] += 1;
        for bank in (0..BANKS).filter(|bank| banks >> bank & 1 == 1) {
            writers[bank as usize] += 1;
            writers_at[lane % 8][bank as usize] += 1;
        }
    }
    (0..8)
        .filter(|&position| lanes_at[position] > 0)
        .map(|position| {
            let writers_elsewhere = (0..BANKS as usize)
                .filter(|&bank| writers_at[position][bank] > 0)
                .map(|bank| writers[bank] - writers_at[position][bank]);
            lanes_at[position] + writers_elsewhere.max().unwrap_or(0)
        })
        .max()
        .unwrap_or(0)
}

/// Whether a 16-byte `cp.async.cg` (LDGSTS.BYPASS, bypassing L1) costs what this rule counts for
/// `.ca`: each group of 8 lanes (one 128-byte source line, lane l copying its chunk l mod 8)
/// writes one 128-byte shared line, lanes 2k and 2k + 1 (a 32-byte source sector) one 32-byte
/// unit of it, no two lanes one address. Measured on the H100 (`data/h100/copy-async-bypass.tsv`):
/// equal there; elsewhere `.cg` took more, by a rule not yet known (a group from chunk 1 of a
/// line: 3 wavefronts against 1).
pub fn bypass_counts_as_through_l1(request: &Request) -> bool {
    if request.op != Op::CopyAsync || request.width != Width::W16 {
        return false;
    }
    let lanes = &request.lanes;
    let same_unit = |lanes: &[Option<u32>], bytes: u32| {
        let mut units = lanes.iter().flatten().map(|address| address / bytes);
        units.next().is_none_or(|first| units.all(|unit| unit == first))
    };
    let mut addresses: Vec<u32> = lanes.iter().flatten().copied().collect();
    let active = addresses.len();
    addresses.sort_unstable();
    addresses.dedup();
    addresses.len() == active
        && lanes.chunks(8).all(|group| same_unit(group, WAVEFRONT_BYTES))
        && lanes.chunks(2).all(|sector| same_unit(sector, 32))
}

/// Whether every active lane reads one address.
pub(crate) fn one_address(request: &Request) -> bool {
    let mut addresses = request.lanes.iter().flatten();
    addresses.next().is_some_and(|first| addresses.all(|address| address == first))
}

pub(crate) fn active_lanes(request: &Request) -> LaneSet {
    LaneSet(request.lanes.iter().enumerate().fold(0, |set, (lane, address)| set | u32::from(address.is_some()) << lane))
}

fn range_mask(start: usize, len: usize) -> u32 {
    (((1u64 << len) - 1) << start) as u32
}

/// An instruction's addresses as the bank counts read them: which lanes are active, and which
/// address bits differ among them, both found in one pass without a branch per lane.
struct Addresses<'a> {
    request: &'a Request,
    active: LaneSet,
    /// The bits set in some active lane's address and clear in another's.
    differing_bits: u32,
}

impl<'a> Addresses<'a> {
    fn of(request: &'a Request) -> Self {
        let (active, any, all) =
            request.lanes.iter().enumerate().fold((0, 0, u32::MAX), |(active, any, all), (lane, address)| {
                let is_active = u32::from(address.is_some());
                (active | is_active << lane, any | address.unwrap_or(0), all & address.unwrap_or(u32::MAX))
            });
        Addresses { request, active: LaneSet(active), differing_bits: any ^ all }
    }

    /// For each of `part_count` equal lane ranges of the warp (1, 2 or 4 of them), the most
    /// distinct 32-bit words any one bank holds among the active `lanes` in that range: the count
    /// alone, the hot path of every table and sweep.
    ///
    /// Addresses in one 128-byte row of the banks are in distinct banks or share a word: one
    /// wavefront. Addresses within [`ROWS`] rows are counted by [`max_units_per_cell`], any
    /// others by [`max_units_per_slot`], one part at a time.
    fn max_words_per_bank(&self, lanes: LaneSet, part_count: usize) -> [u32; 4] {
        let mut most = [0; 4];
        if self.differing_bits < WAVEFRONT_BYTES {
            parts(lanes, part_count).for_each(|(part, _)| most[part] = 1);
        } else if self.differing_bits >= ROWS * WAVEFRONT_BYTES && self.rows_spanned(lanes) > ROWS {
            parts(lanes, part_count).for_each(|(part, lanes)| most[part] = max_units_per_slot(self.request, lanes));
        } else {
            // One instance per unit size, so that its shifts and masks are constants.
            most = match self.request.width {
                Width::W1 | Width::W2 | Width::W4 => max_units_per_cell::<4>(self.request, lanes, part_count),
                Width::W8 => max_units_per_cell::<8>(self.request, lanes, part_count),
                Width::W16 => max_units_per_cell::<16>(self.request, lanes, part_count),
            };
        }
        most
    }

    /// How many 128-byte rows of the banks lie from the lowest address of `lanes` to its highest.
    fn rows_spanned(&self, lanes: LaneSet) -> u32 {
        let rows = || lanes.iter().filter_map(|lane| self.request.lanes[lane]).map(|address| address / WAVEFRONT_BYTES);
        rows().max().unwrap_or(0) - rows().min().unwrap_or(0) + 1
    }
}

/// The rows of the banks [`max_units_per_cell`] tells apart: 16 KiB.
const ROWS: u32 = 128;

/// For each part (as in [`Addresses::max_words_per_bank`]), the most distinct units in one slot
/// among `lanes`, whose addresses lie within [`ROWS`] rows of the banks.
///
/// An aligned access of 4 bytes or more is one *unit* of its width: its words sit in one row of
/// the banks, in the banks of its *slot* (unit mod 128 / width), so the most distinct words in one
/// bank is the most distinct units in one slot; a narrower access counts its 4-byte word. A part
/// is at most 128 bytes of lanes, so its slots and the parts make at most 32 *cells*. Each unit
/// sets a bit for its cell and its row modulo [`ROWS`], and each new bit counts in its cell.
fn max_units_per_cell<const UNIT_BYTES: u32>(request: &Request, lanes: LaneSet, part_count: usize) -> [u32; 4] {
    let slots = WAVEFRONT_BYTES / UNIT_BYTES;
    let part_shift = WARP_SIZE.trailing_zeros() - part_count.trailing_zeros();
    let mut seen = [0u64; (ROWS * BANKS / 64) as usize];
    let mut distinct = [0u8; BANKS as usize];
    for lane in lanes.iter() {
        let Some(address) = request.lanes[lane] else { continue };
        let (part, unit) = (lane >> part_shift, address / UNIT_BYTES);
        let cell = part * slots as usize + (unit % slots) as usize;
        let bit = (unit / slots % ROWS) as usize * BANKS as usize + cell;
        let (word, mask) = (&mut seen[bit / 64], 1 << (bit % 64));
        distinct[cell] += u8::from(*word & mask == 0);
        *word |= mask;
    }
    // The cells of part p are p * slots.., so the maxima wait until after the loop, which then
    // carries no dependency from one lane to the next.
    let mut most = [0; 4];
    for (most, cells) in most.iter_mut().zip(distinct.chunks_exact(slots as usize)) {
        *most = u32::from(cells.iter().copied().max().unwrap_or(0));
    }
    most
}

/// The most distinct units in one slot among `lanes`, wherever they are: each slot keeps its
/// first unit in `first`, and only its further distinct units (a conflict) are chained in
/// `others`.
fn max_units_per_slot(request: &Request, lanes: LaneSet) -> u32 {
    const EMPTY: u32 = u32::MAX;
    const END: u8 = u8::MAX;
    let unit_bytes = request.width.bytes().max(BANK_BYTES);
    let slots = WAVEFRONT_BYTES / unit_bytes;
    let mut first = [EMPTY; BANKS as usize];
    let mut distinct = [0u8; BANKS as usize];
    let mut head = [END; BANKS as usize];
    let mut others = [0u32; WARP_SIZE];
    let mut next = [END; WARP_SIZE];
    let (mut stored, mut most) = (0, 0);
    for unit in lanes.iter().filter_map(|lane| request.lanes[lane]).map(|address| address / unit_bytes) {
        let slot = (unit % slots) as usize;
        if first[slot] == EMPTY {
            first[slot] = unit;
            distinct[slot] = 1;
            most = most.max(1);
            continue;
        }
        if first[slot] == unit {
            continue;
        }
        let mut at = head[slot];
        while at != END && others[at as usize] != unit {
            at = next[at as usize];
        }
        if at == END {
            others[stored] = unit;
            next[stored] = head[slot];
            head[slot] = stored as u8;
            stored += 1;
            distinct[slot] += 1;
            most = most.max(distinct[slot]);
        }
    }
    u32::from(most)
}

/// One word access met by [`scan_words`].
pub(crate) struct WordVisit {
    pub lane: usize,
    pub word: u32,
    /// Index of the word among the distinct words of this scan, in first-touch order.
    pub index: usize,
    pub first_touch: bool,
}

/// What [`scan_words`] found.
pub(crate) struct Scan {
    /// The most distinct words any one bank holds: the wavefronts of a pass group.
    pub wavefronts: u32,
}

/// Walks the words of `lanes` in lane order, telling `visit` about each.
pub(crate) fn scan_words(request: &Request, lanes: LaneSet, mut visit: impl FnMut(WordVisit)) -> Scan {
    // Words seen so far, chained per bank: a few hundred bytes, no per-call table to clear.
    const END: u8 = u8::MAX;
    let mut words = [0u32; 4 * WARP_SIZE];
    let mut next = [END; 4 * WARP_SIZE];
    let mut head = [END; BANKS as usize];
    let mut counts = [0u32; BANKS as usize];
    let mut stored = 0;
    for lane in lanes.iter() {
        let Some(address) = request.lanes[lane] else { continue };
        for word in request.width.words(address) {
            let bank = (word % BANKS) as usize;
            let mut at = head[bank];
            while at != END && words[at as usize] != word {
                at = next[at as usize];
            }
            let first_touch = at == END;
            if first_touch {
                at = stored as u8;
                words[stored] = word;
                next[stored] = head[bank];
                head[bank] = at;
                stored += 1;
                counts[bank] += 1;
            }
            visit(WordVisit { lane, word, index: at as usize, first_touch });
        }
    }
    Scan { wavefronts: counts.into_iter().max().unwrap_or(0) }
}
