//! CUTLASS issue 3172's setting (`m_major_ldmatrix.cu`): a 128 x 32 tile of A stored M-major in
//! CuTe's (128, 8) atoms, element (m, k) at half offset `1024 (k / 8) + 128 (k % 8) + m`, swizzled,
//! and read as mma A fragments with `ldmatrix.x4.trans`.

use bank_model::{Matrices, Op, Request, WARP_SIZE, Width, swizzle::Swizzle};
use lesson_kit::DeclaredAccess;

/// The kernels' source file in `kernels/`.
pub const KERNEL_FILE: &str = "m_major_ldmatrix.cu";
/// The tile (`TILE_M` x `TILE_K` halves) and a block's threads, one warp per 32 rows of M.
pub const TILE_M: u32 = 128;
pub const TILE_K: u32 = 32;
pub const THREADS: u32 = 128;
const WARPS: u32 = THREADS / WARP_SIZE as u32;
/// Each warp's 16 x 16 pieces: 2 along M, 2 along K, one `ldmatrix.x4.trans` each.
const PIECES_M: u32 = 2;
const PIECES_K: u32 = TILE_K / 16;
/// CuTe's M-major atom: 8 columns of K, each 128 halves of M; and the halves of the tile.
const ATOM_M: u32 = 128;
const ATOM: u32 = ATOM_M * 8;
const ELEMENTS: u32 = TILE_M * TILE_K;

pub const LDSM_T: Op = Op::LoadMatrix { matrices: Matrices::X4, trans: true };
const LDSM: Op = Op::LoadMatrix { matrices: Matrices::X4, trans: false };

/// The kernels by swizzle, as `M_MAJOR_READS` makes them.
pub const KERNELS: [(Swizzle, &str); 3] = [
    (Swizzle::IDENTITY, "m_major_unswizzled"),
    (Swizzle { bits: 3, base: 3, shift: 3 }, "m_major_swizzle_3_3_3"),
    (Swizzle { bits: 3, base: 3, shift: 4 }, "m_major_swizzle_3_3_4"),
];

/// The M-major atom's half offset of element (m, k), before the swizzle.
pub fn m_major_offset(m: u32, k: u32) -> u32 {
    ATOM * (k / 8) + ATOM_M * (k % 8) + m
}

/// A launch: `blocks` blocks, each reading the tile `iterations` times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MMajor {
    pub swizzle: Swizzle,
    pub blocks: u32,
    pub iterations: u32,
}

impl MMajor {
    pub fn kernel(&self) -> &'static str {
        KERNELS.into_iter().find(|(s, _)| *s == self.swizzle).map(|(_, name)| name).expect("a kernel per swizzle")
    }

    /// Warp `warp`'s `ldmatrix.x4.trans` of piece (piece_m, piece_k): lane l gives the 8 halves
    /// of M from row 8 ((l / 8) % 2) of the piece, at k = l % 8 + 8 (l / 16).
    pub fn read(&self, warp: u32, piece_m: u32, piece_k: u32) -> Request {
        Request::bytes(LDSM_T, Width::W16, |lane| 2 * self.swizzle.apply(self.logical(warp, piece_m, piece_k, lane)))
            .expect("16-byte rows")
    }

    /// The offset, before the swizzle, of the row lane `lane` gives in that read.
    fn logical(&self, warp: u32, piece_m: u32, piece_k: u32, lane: u32) -> u32 {
        let m = warp * 32 + piece_m * 16 + (lane / 8) % 2 * 8;
        let k = piece_k * 16 + lane % 8 + lane / 16 * 8;
        m_major_offset(m, k)
    }

    fn reads(&self) -> impl Iterator<Item = (u32, Request)> + '_ {
        (0..WARPS).flat_map(move |warp| {
            (0..PIECES_M).flat_map(move |pm| (0..PIECES_K).map(move |pk| (warp, self.read(warp, pm, pk))))
        })
    }

    /// Every shared-memory instruction of the launch: the fill's 2-byte stores (a warp's 32
    /// consecutive halves at a time), then the reads, one declared access per cost.
    pub fn accesses(&self) -> Vec<DeclaredAccess> {
        let fill = DeclaredAccess {
            name: "tile[i] = hash(i)".into(),
            request: Request::elements(Op::Store, Width::W2, |lane| lane),
            executions: self.blocks as u64 * (ELEMENTS / WARP_SIZE as u32) as u64,
        };
        let mut accesses = vec![fill];
        for (_, request) in self.reads() {
            let wavefronts = request.wavefronts();
            let executions = self.blocks as u64 * self.iterations as u64;
            match accesses.iter_mut().find(|a| a.request.op == LDSM_T && a.request.wavefronts() == wavefronts) {
                Some(access) => access.executions += executions,
                None => accesses.push(DeclaredAccess { name: "ldmatrix.x4.trans A".into(), request, executions }),
            }
        }
        accesses
    }

    /// The most wavefronts of any one read.
    pub fn worst_read(&self) -> u32 {
        self.reads().map(|(_, r)| r.wavefronts()).max().unwrap_or(0)
    }

    /// What each thread of a block writes to `out` when the tile holds `value(i)` at half
    /// offset i. The low half of register q of an `ldmatrix.x4.trans` is element (t / 4,
    /// 2 (t % 4)) of matrix q transposed: half t / 4 of the row that lane 8q + 2 (t % 4) gave. A
    /// thread XORs its registers over every read and keeps the low 16 bits, so an even number of
    /// iterations cancels out.
    pub fn fragment_xor(&self, value: impl Fn(u32) -> u16) -> Vec<u16> {
        (0..THREADS)
            .map(|thread| {
                let (warp, lane) = (thread / WARP_SIZE as u32, thread % WARP_SIZE as u32);
                let mut sum = 0;
                for (piece_m, piece_k) in (0..PIECES_M).flat_map(|pm| (0..PIECES_K).map(move |pk| (pm, pk))) {
                    for q in 0..4 {
                        let row = self.swizzle.apply(self.logical(warp, piece_m, piece_k, 8 * q + 2 * (lane % 4)));
                        sum ^= value(row + lane / 4);
                    }
                }
                if self.iterations % 2 == 1 { sum } else { 0 }
            })
            .collect()
    }

    /// What the kernels write: element i of their tile holds `hash(i)`, the high half of
    /// i * 2654435761 (Knuth's multiplicative hash), so that no two reads cancel by design.
    pub fn expected(&self) -> Vec<u16> {
        self.fragment_xor(|offset| (offset.wrapping_mul(2654435761) >> 16) as u16)
    }
}

/// A read had the same tile been stored K-major, rows of 32 halves (64 bytes), with `swizzle` on
/// the half offset `32 m + k`, and read without `.trans`: lane l gives row m0 + l % 16 of M, 8
/// halves from k0 + 8 (l / 16).
fn k_major_read(swizzle: Swizzle, m0: u32, k0: u32) -> Request {
    Request::bytes(LDSM, Width::W16, |lane| 2 * swizzle.apply(TILE_K * (m0 + lane % 16) + k0 + lane / 16 * 8))
        .expect("16-byte rows")
}

/// The most wavefronts of any of the K-major tile's reads, 16 x 16 piece by piece.
pub fn k_major_worst(swizzle: Swizzle) -> u32 {
    let pieces = (0..TILE_M).step_by(16).flat_map(|m0| (0..TILE_K).step_by(16).map(move |k0| (m0, k0)));
    pieces.map(|(m0, k0)| k_major_read(swizzle, m0, k0).wavefronts()).max().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(swizzle: usize) -> MMajor {
        MMajor { swizzle: KERNELS[swizzle].0, blocks: 1, iterations: 1 }
    }

    /// (executions, wavefronts) of the accesses of `op`.
    fn counted(spec: &MMajor, op: Op) -> (u64, u64) {
        spec.accesses()
            .iter()
            .filter(|a| a.request.op == op)
            .fold((0, 0), |(i, w), a| (i + a.executions, w + a.executions * a.request.analyze().wavefronts as u64))
    }

    #[test]
    fn declarations_reproduce_the_h100s_counts() {
        // ncu on the H100, one block, one iteration: LDSM executions and wavefronts, and the
        // hardware conflict counter of the loads; STS 128 executions at 128 wavefronts in all.
        for (swizzle, wavefronts, hardware_conflicts) in [(0, 512, 448), (1, 128, 64), (2, 64, 0)] {
            let spec = launch(swizzle);
            assert_eq!(counted(&spec, LDSM_T), (16, wavefronts), "{}", spec.swizzle);
            assert_eq!(counted(&spec, Op::Store), (128, 128), "{}", spec.swizzle);
            let excess: u64 = spec.accesses().iter().map(|a| a.executions * a.request.analyze().excess as u64).sum();
            assert_eq!(excess, hardware_conflicts, "{}", spec.swizzle);
        }
    }

    #[test]
    fn the_atom_numbers_every_element_of_the_tile_once() {
        let mut offsets: Vec<u32> = (0..TILE_M).flat_map(|m| (0..TILE_K).map(move |k| m_major_offset(m, k))).collect();
        offsets.sort_unstable();
        assert_eq!(offsets, (0..ELEMENTS).collect::<Vec<_>>());
        for (swizzle, _) in KERNELS {
            let mut stored: Vec<u32> = (0..ELEMENTS).map(|o| swizzle.apply(o)).collect();
            stored.sort_unstable();
            assert_eq!(stored, (0..ELEMENTS).collect::<Vec<_>>(), "{swizzle}");
        }
    }

    #[test]
    fn a_warps_reads_cover_its_32_rows_of_m_for_all_of_k() {
        let spec = launch(2);
        let mut read = vec![0u32; ELEMENTS as usize];
        for piece_m in 0..PIECES_M {
            for piece_k in 0..PIECES_K {
                for address in spec.read(1, piece_m, piece_k).lanes.iter().flatten() {
                    (0..8).for_each(|h| read[(address / 2 + h) as usize] += 1);
                }
            }
        }
        for m in 0..TILE_M {
            for k in 0..TILE_K {
                let want = u32::from((32..64).contains(&m));
                assert_eq!(read[spec.swizzle.apply(m_major_offset(m, k)) as usize], want, "({m}, {k})");
            }
        }
    }

    #[test]
    fn the_reference_xors_the_low_halves_of_the_four_matrices() {
        // Unswizzled, thread 0 takes from each piece half 0 of the rows at k = 0 and 8 (matrices
        // 0 and 2) and at m + 8 (1 and 3): offsets x, x + 8, x + 1024, x + 1032, with x = 16
        // piece_m + 2048 piece_k. Thread 5 (lane 5) the rows at k = 2 and 10, half 1 of each.
        let spec = launch(0);
        let value = |offset: u32| (offset.wrapping_mul(offset) >> 3) as u16;
        let rows = |x: u32| [x, x + 8, x + 1024, x + 1032];
        let over_pieces =
            |first: u32| [0, 16, 2048, 2064].into_iter().flat_map(|x| rows(x + first)).fold(0, |sum, o| sum ^ value(o));
        let got = spec.fragment_xor(value);
        assert_eq!((got[0], got[5]), (over_pieces(0), over_pieces(2 * 128 + 1)));
        assert!(MMajor { iterations: 2, ..spec }.fragment_xor(value).iter().all(|&v| v == 0));
    }

    #[test]
    fn the_expected_output_tells_the_swizzles_apart() {
        // A read that took other rows would show: each swizzle's threads expect other values,
        // and none expects all zeros.
        let outputs: Vec<Vec<u16>> =
            KERNELS.iter().map(|&(swizzle, _)| MMajor { swizzle, blocks: 1, iterations: 1 }.expected()).collect();
        assert!(outputs.iter().all(|output| output.iter().any(|&v| v != 0)));
        assert!(outputs[0] != outputs[1] && outputs[1] != outputs[2] && outputs[0] != outputs[2]);
    }

    #[test]
    fn only_the_swizzle_over_a_whole_atom_row_frees_the_reads() {
        assert_eq!([0, 1, 2].map(|s| launch(s).worst_read()), [32, 8, 4]);
        // Stored K-major, rows of 64 bytes, the tile wants its row's bits 1 and 2 in the chunk:
        // Swizzle<2, 3, 3> or <3, 3, 3>; the M-major atom's <3, 3, 4> leaves a 2-way conflict.
        let k_major = |bits, shift| k_major_worst(Swizzle::new(bits, 3, shift).unwrap());
        assert_eq!(k_major_read(Swizzle::IDENTITY, 0, 0).wavefronts(), 16);
        assert_eq!([k_major(2, 3), k_major(3, 3), k_major(3, 4)], [4, 4, 8]);
    }
}
