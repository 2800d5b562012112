//! Where the TMA puts a box, and what reading it costs: the layout rule the H100 showed (each
//! row at `row * pitch`, then CuTe's `Swizzle<B, 4, 3>` on the byte offset), the shared-memory
//! instructions of the three kernels of `tma_swizzle.cu`, and the CPU's prediction of their outputs.

use bank_model::{Matrices, Op, Request, WARP_SIZE, Width, swizzle::Swizzle};
use cuda_kernels::tensor_map::TmaSwizzle;
use lesson_kit::DeclaredAccess;

/// The kernels' source file in `kernels/`.
pub const KERNEL_FILE: &str = "tma_swizzle.cu";
/// Rows of a box (`BOX_ROWS` in the kernels), and threads of a block.
pub const BOX_ROWS: u32 = 64;
pub const THREADS: u32 = 128;
const WARPS: u32 = THREADS / WARP_SIZE as u32;
/// The bytes of a box row the lesson runs: 16, 32 and 64 halves.
pub const WIDTHS: [u32; 3] = [32, 64, 128];
/// The kernel's read of the box: `ldmatrix.x4`, not transposed, one per 32 bytes of a warp's 16 rows.
pub const LDSM_X4: Op = Op::LoadMatrix { matrices: Matrices::X4, trans: false };

/// Whether the driver encodes a box of `width`-byte rows with this swizzle: a swizzled row must
/// fit in the span.
pub fn valid(width: u32, mode: TmaSwizzle) -> bool {
    mode == TmaSwizzle::None || width <= mode.bytes()
}

/// The bytes a box row takes in shared memory (`tma_row_pitch`): a row narrower than the span is
/// padded to it.
pub fn row_pitch(width: u32, mode: TmaSwizzle) -> u32 {
    width.max(mode.bytes())
}

/// The swizzle of a mode on byte offsets: `Swizzle<B, 4, 3>` with `2^B` 16-byte chunks to a span
/// (B = 1, 2, 3 for 32B, 64B, 128B), which XORs the offset's 128-byte line into its chunk; NONE
/// changes nothing.
pub fn swizzle(mode: TmaSwizzle) -> Swizzle {
    match mode {
        TmaSwizzle::None => Swizzle::IDENTITY,
        mode => Swizzle::new((mode.bytes() / 16).trailing_zeros(), 4, 3).expect("B <= 3 fits"),
    }
}

/// The layout rule (`tma_offset` in the kernels): the byte of the tile, which starts on a
/// 1024-byte boundary, where the TMA puts byte `column` of box row `row`.
pub fn tma_offset(row: u32, column: u32, width: u32, mode: TmaSwizzle) -> u32 {
    swizzle(mode).apply(row * row_pitch(width, mode) + column)
}

/// The 16-byte chunk of box row `row` stored at chunk position `position` of the row's pitch, or
/// `None` for padding: what a picture of the tile shows.
pub fn chunk_at(row: u32, position: u32, width: u32, mode: TmaSwizzle) -> Option<u32> {
    let pitch = row_pitch(width, mode);
    (0..width / 16).find(|&chunk| tma_offset(row, 16 * chunk, width, mode) == row * pitch + 16 * position)
}

/// Element (row, column) of the readback kernel's matrix, which numbers its 16-bit elements in
/// row-major order: every element of a box is distinct.
pub fn readback_element(width: u32, row: u32, column: u32) -> u16 {
    (row * (width / 2) + column) as u16
}

/// The tile the readback kernel copies out, as 16-bit elements: `BOX_ROWS` rows of the pitch,
/// each element of the box's rows of `matrix` (rows of `width / 2` elements) where the rule puts
/// it, and the padding 0.
pub fn predicted_tile(matrix: &[u16], width: u32, mode: TmaSwizzle) -> Vec<u16> {
    let mut tile = vec![0; (BOX_ROWS * row_pitch(width, mode) / 2) as usize];
    for row in 0..BOX_ROWS {
        for column in 0..width / 2 {
            tile[(tma_offset(row, 2 * column, width, mode) / 2) as usize] = matrix[(row * width / 2 + column) as usize];
        }
    }
    tile
}

/// The readback kernel's shared accesses in `blocks` blocks: the tile's words zeroed, then copied
/// out, word `i` by thread `i mod 128`: every warp instruction 32 consecutive words.
pub fn readback_accesses(width: u32, mode: TmaSwizzle, blocks: u32) -> Vec<DeclaredAccess> {
    let instructions = (blocks * BOX_ROWS * row_pitch(width, mode) / 4 / WARP_SIZE as u32) as u64;
    [(Op::Store, "tile[i] = 0"), (Op::Load, "out[i] = tile[i]")]
        .map(|(op, name)| DeclaredAccess {
            name: name.into(),
            request: Request::strided(op, Width::W4, 1).expect("aligned"),
            executions: instructions,
        })
        .into()
}

/// The box row and byte that lane `lane` of warp `warp` gives `ldmatrix.x4` number `pair` (of
/// the row's 32-byte pairs of chunks): row `16 warp + lane % 16`, chunk `lane / 16` of the pair.
fn ldmatrix_lane(warp: u32, pair: u32, lane: u32) -> (u32, u32) {
    (16 * warp + lane % 16, 32 * pair + lane / 16 * 16)
}

/// Warp `warp`'s `ldmatrix.x4` of pair `pair` of its rows, where the TMA put them.
pub fn ldmatrix_request(warp: u32, pair: u32, width: u32, mode: TmaSwizzle) -> Request {
    Request::bytes(LDSM_X4, Width::W16, |lane| {
        let (row, column) = ldmatrix_lane(warp, pair, lane);
        tma_offset(row, column, width, mode)
    })
    .expect("chunks stay 16-byte aligned")
}

/// Every `ldmatrix.x4` of `blocks` blocks reading `iterations` times: per pair, one access per
/// run of warps of one cost.
pub fn ldmatrix_accesses(width: u32, mode: TmaSwizzle, blocks: u32, iterations: u32) -> Vec<DeclaredAccess> {
    (0..width / 32)
        .flat_map(|pair| {
            let requests = (0..WARPS).map(|warp| (warp, ldmatrix_request(warp, pair, width, mode)));
            DeclaredAccess::per_warp_group(blocks * iterations, requests, |first, last| {
                format!(
                    "ldmatrix.x4 bytes {}-{} of rows 16w to 16w + 15 (warps {first}-{last})",
                    32 * pair,
                    32 * pair + 31
                )
            })
        })
        .collect()
}

/// The most wavefronts of any `ldmatrix.x4` the kernel makes (4 when conflict-free).
pub fn ldmatrix_wavefronts(width: u32, mode: TmaSwizzle) -> u32 {
    (0..WARPS)
        .flat_map(|warp| (0..width / 32).map(move |pair| ldmatrix_request(warp, pair, width, mode).wavefronts()))
        .max()
        .unwrap_or(0)
}

/// What each thread of a block of the ldmatrix kernel writes: the XOR of the four registers of
/// every `ldmatrix.x4`, over the pairs and `iterations` times (an even count cancels). Computed
/// from the matrix (rows of `width / 2` elements) alone: lane `l` receives, in register `i`,
/// elements `2 (l % 4)` and the next of row `l / 4` of matrix `i`, whose row lane `8 i + l / 4`
/// addressed.
pub fn ldmatrix_sums(matrix: &[u16], width: u32, iterations: u32) -> Vec<u32> {
    let element = |row: u32, column: u32| matrix[(row * width / 2 + column) as usize] as u32;
    (0..THREADS)
        .map(|thread| {
            let (warp, lane) = (thread / WARP_SIZE as u32, thread % WARP_SIZE as u32);
            let once = (0..width / 32).flat_map(|pair| (0..4).map(move |matrix| (pair, matrix))).fold(
                0,
                |sum, (pair, matrix)| {
                    let (row, byte) = ldmatrix_lane(warp, pair, 8 * matrix + lane / 4);
                    let column = byte / 2 + 2 * (lane % 4);
                    sum ^ element(row, column) ^ element(row, column + 1) << 16
                },
            );
            if iterations % 2 == 1 { once } else { 0 }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    use TmaSwizzle::{Bytes32, Bytes64, Bytes128, None as Unswizzled};

    /// The chunk at each position of rows 0 to `rows - 1`, `None` for padding.
    fn picture(rows: u32, width: u32, mode: TmaSwizzle) -> Vec<Vec<Option<u32>>> {
        (0..rows).map(|row| (0..row_pitch(width, mode) / 16).map(|p| chunk_at(row, p, width, mode)).collect()).collect()
    }

    /// The modes that hold rows of `width` bytes.
    fn valid_modes(width: u32) -> impl Iterator<Item = TmaSwizzle> {
        TmaSwizzle::ALL.into_iter().filter(move |&mode| valid(width, mode))
    }

    #[test]
    fn the_128b_swizzle_on_128_byte_rows_xors_the_row_into_the_chunk() {
        let rows: Vec<Vec<u32>> =
            picture(8, 128, Bytes128).into_iter().map(|row| row.into_iter().map(Option::unwrap).collect()).collect();
        assert_eq!(rows[0], [0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(rows[1], [1, 0, 3, 2, 5, 4, 7, 6]);
        assert_eq!(rows[2], [2, 3, 0, 1, 6, 7, 4, 5]);
        assert_eq!(rows[7], [7, 6, 5, 4, 3, 2, 1, 0]);
        for (row, chunks) in rows.iter().enumerate() {
            assert!(chunks.iter().enumerate().all(|(p, &c)| c == p as u32 ^ row as u32), "row {row}");
        }
        assert_eq!(picture(9, 128, Bytes128)[8], picture(1, 128, Bytes128)[0], "the pattern repeats every 8 rows");
    }

    #[test]
    fn the_64b_swizzle_pads_32_byte_rows_to_64_and_swaps_by_line() {
        assert_eq!(row_pitch(32, Bytes64), 64);
        let rows = picture(8, 32, Bytes64);
        assert_eq!(rows[0], [Some(0), Some(1), None, None]);
        assert_eq!(rows[1], [Some(0), Some(1), None, None]);
        assert_eq!(rows[2], [Some(1), Some(0), None, None], "bit 7 of the offset flips the chunk");
        assert_eq!(rows[3], [Some(1), Some(0), None, None]);
        assert_eq!(rows[4], [None, None, Some(0), Some(1)], "bit 8 moves the row to the other half");
        // Row 4 starts at byte 256, chunk 16, and lands at chunks 18 and 19.
        assert_eq!([0, 16].map(|column| tma_offset(4, column, 32, Bytes64) / 16), [18, 19]);
    }

    #[test]
    fn the_swizzles_are_cutes_on_byte_offsets() {
        assert_eq!(swizzle(Unswizzled), Swizzle::IDENTITY);
        for (mode, bits) in [(Bytes32, 1), (Bytes64, 2), (Bytes128, 3)] {
            assert_eq!(swizzle(mode), Swizzle::new(bits, 4, 3).unwrap());
        }
        // The kernels' form: bits 7 to 6 + B of the offset XORed into bits 4 to 3 + B.
        for mode in TmaSwizzle::ALL {
            let bits = if mode == Unswizzled { 0 } else { mode.bytes() / 16 - 1 };
            for offset in 0..4096 {
                assert_eq!(swizzle(mode).apply(offset), offset ^ ((offset >> 3) & (bits << 4)), "{mode}, {offset}");
            }
        }
    }

    #[test]
    fn modes_hold_rows_up_to_their_span() {
        assert_eq!(WIDTHS.map(|width| valid_modes(width).count()), [4, 3, 2]);
        assert!(!valid(64, Bytes32) && !valid(128, Bytes64) && valid(128, Unswizzled) && valid(32, Bytes128));
    }

    #[test]
    fn every_element_lands_once_inside_the_tile() {
        for width in WIDTHS {
            for mode in valid_modes(width) {
                let matrix: Vec<u16> =
                    (0..BOX_ROWS).flat_map(|r| (0..width / 2).map(move |c| readback_element(width, r, c))).collect();
                let tile = predicted_tile(&matrix, width, mode);
                let mut found: Vec<u16> = tile.iter().copied().filter(|&e| e != 0).collect();
                found.sort_unstable();
                let pitch = row_pitch(width, mode);
                assert_eq!(found, (1..BOX_ROWS * width / 2).map(|e| e as u16).collect::<Vec<_>>(), "{width} {mode}");
                assert_eq!(tile.len() as u32, BOX_ROWS * pitch / 2);
                // Each row stays in its own pitch of bytes.
                for row in 0..BOX_ROWS {
                    for column in (0..width).step_by(2) {
                        assert_eq!(tma_offset(row, column, width, mode) / pitch, row, "{width} {mode}");
                    }
                }
            }
        }
    }

    #[test]
    fn unswizzled_reads_conflict_by_rows_per_128_bytes_and_swizzled_ones_never() {
        for (width, unswizzled) in [(32, 8), (64, 16), (128, 32)] {
            assert_eq!(ldmatrix_wavefronts(width, Unswizzled), unswizzled, "NONE, {width}-byte rows");
            for mode in valid_modes(width).filter(|&mode| mode != Unswizzled) {
                assert_eq!(ldmatrix_wavefronts(width, mode), 4, "{mode}, {width}-byte rows");
            }
        }
    }

    #[test]
    fn declared_accesses_count_every_instruction_of_a_block() {
        for (width, mode, words) in
            [(32, Unswizzled, 512), (32, Bytes128, 2048), (64, Bytes64, 1024), (128, Bytes128, 2048)]
        {
            let accesses = readback_accesses(width, mode, 1);
            let total = |op| accesses.iter().filter(|a| a.request.op == op).map(|a| a.executions).sum::<u64>();
            assert_eq!((total(Op::Store), total(Op::Load)), (words / 32, words / 32), "{width} {mode}");
        }
        for (width, ldsm) in [(32, 4), (64, 8), (128, 16)] {
            for mode in [Unswizzled, Bytes128] {
                let accesses = ldmatrix_accesses(width, mode, 1, 1);
                assert_eq!(accesses.iter().map(|a| a.executions).sum::<u64>(), ldsm, "{width} {mode}");
                assert_eq!(accesses.len() as u32, width / 32, "every warp's read of a pair costs the same");
            }
            let timed = ldmatrix_accesses(width, Unswizzled, 3, 5);
            assert_eq!(timed.iter().map(|a| a.executions).sum::<u64>(), ldsm * 15);
        }
    }

    #[test]
    fn ldmatrix_sums_follow_the_fragment_layout() {
        // Only element (0, 0) is set: lane 0 gets it in register 0 of pair 0 (row 0, columns 0
        // and 1), and no other thread sees it.
        let mut matrix = vec![0u16; (BOX_ROWS * 64) as usize];
        matrix[0] = 0xabcd;
        let sums = ldmatrix_sums(&matrix, 128, 1);
        assert_eq!(sums[0], 0xabcd);
        assert!(sums[1..].iter().all(|&s| s == 0));
        // Element (17, 9) of 64-byte rows: warp 1's row 1, in chunk 1 of pair 0, which is matrix 2
        // (lanes 16 to 23 address its rows); its row 1 goes to lanes 4 to 7, and column 9 - 8 = 1
        // to the high half of lane 4's register.
        let mut matrix = vec![0u16; (BOX_ROWS * 32) as usize];
        matrix[17 * 32 + 9] = 1;
        let sums = ldmatrix_sums(&matrix, 64, 3);
        assert_eq!(sums.iter().position(|&s| s != 0), Some(32 + 4));
        assert_eq!(sums[36], 1 << 16);
        assert!(ldmatrix_sums(&matrix, 64, 2).iter().all(|&s| s == 0), "an even count cancels");
    }
}
