//! The rules the model implements, and where each was measured.
//!
//! Shared memory is 32 banks, each 4 bytes wide; a 32-bit word at byte address `a` lives in bank
//! `(a / 4) % 32`. One *wavefront* serves at most one distinct word per bank. The hardware splits
//! an instruction into *pass groups* of lanes; a group needs as many wavefronts as the most
//! distinct words any one bank must deliver to it (lanes asking for the same word share it), and
//! the instruction needs the sum over its groups.
//!
//! | instruction | pass groups |
//! |---|---|
//! | load or store, 1, 2 or 4 bytes | the whole warp |
//! | load, 8 bytes | the whole warp |
//! | load, 16 bytes | each half-warp (lanes 0-15, 16-31) on its own; a half whose words need more than one wavefront is split into its two quarter-warps |
//! | store, 8 bytes | each half-warp |
//! | store, 16 bytes | each quarter-warp (lanes 0-7, 8-15, 16-23, 24-31) |
//!
//! Consequences a textbook rule misses, each measured on the H100:
//! - an 8-byte load where all 32 lanes read one address is **1** wavefront (no half-warp split),
//!   and lanes `i` and `i + 16` reading the same address share it (`ld 8 stride128`: 16, not 32);
//! - a 16-byte load where all lanes read one address is **2** wavefronts (one per half-warp),
//!   a 16-byte store of one address is 4, an 8-byte store is 2: stores never merge across groups;
//! - a 16-byte load whose half-warp conflicts is served quarter by quarter, so the same address in
//!   lanes `i` and `i + 8` is *not* shared (`ld 16 stride128`: 32 wavefronts, not 16).
//!
//! Where measured: NVIDIA H100 80GB HBM3 (sm_90), driver 580.159.04, Nsight Compute 2025.3.1,
//! counters `sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_{ld,st}.sum` per single-warp
//! instruction. The regular patterns are `tests/data/h100-wavefronts.tsv` (420 rows: strides,
//! pitched tile columns, XOR swizzles, every width, loads and stores); the irregular ones (random
//! addresses, partial broadcasts, inactive lanes) are `tests/data/h100-irregular.tsv`, made with
//! `cargo xtask probe`. The crate's tests replay both files.

use std::ops::Range;

use crate::{BANKS, Op, Request, WARP_SIZE, Width};

/// Lanes the hardware serves together.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassGroup {
    pub lanes: Range<usize>,
}

impl PassGroup {
    /// Wavefronts this group needs: the most distinct words one bank must deliver.
    pub fn wavefronts_for(&self, request: &Request) -> u32 {
        max_words_per_bank(request, self.lanes.clone())
    }
}

/// The pass groups of an instruction, in lane order. Groups with no active lane are left out.
pub fn pass_groups(request: &Request) -> impl Iterator<Item = PassGroup> + '_ {
    let size = match (request.op, request.width) {
        (_, Width::W1 | Width::W2 | Width::W4) | (Op::Load, Width::W8) => WARP_SIZE,
        (Op::Load, Width::W16) | (Op::Store, Width::W8) => WARP_SIZE / 2,
        (Op::Store, Width::W16) => WARP_SIZE / 4,
    };
    (0..WARP_SIZE).step_by(size).flat_map(move |start| {
        let group = start..start + size;
        let split = request.op == Op::Load
            && request.width == Width::W16
            && max_words_per_bank(request, group.clone()) > 1;
        let groups = if split {
            let middle = start + size / 2;
            vec![start..middle, middle..group.end]
        } else {
            vec![group]
        };
        groups
            .into_iter()
            .filter(|lanes| request.lanes[lanes.clone()].iter().any(Option::is_some))
            .map(|lanes| PassGroup { lanes })
    })
}

/// The most distinct 32-bit words that any one bank holds among the given lanes' accesses.
fn max_words_per_bank(request: &Request, lanes: Range<usize>) -> u32 {
    // A lane's words are consecutive and at most 4, so each bank gets at most one word per lane.
    let mut words = [[0u32; WARP_SIZE]; BANKS as usize];
    let mut counts = [0usize; BANKS as usize];
    for address in request.lanes[lanes].iter().flatten() {
        for word in request.width.words(*address) {
            let bank = (word % BANKS) as usize;
            let seen = &mut words[bank][..counts[bank]];
            if !seen.contains(&word) {
                words[bank][counts[bank]] = word;
                counts[bank] += 1;
            }
        }
    }
    counts.into_iter().max().unwrap_or(0) as u32
}
