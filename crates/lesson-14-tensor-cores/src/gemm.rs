//! The tensor-core GEMM of `tensor_core_gemm.cu`: its tile shape, the three layouts of its shared
//! tiles, every shared-memory instruction a launch executes, and the CPU's product it is checked
//! against. Lesson 15 times the same kernels with other pipeline depths.

use bank_model::{Matrices, Op, Request, WARP_SIZE, Width, swizzle::Swizzle};
use lesson_kit::DeclaredAccess;

/// The kernels' source file in `kernels/`.
pub const KERNEL_FILE: &str = "tensor_core_gemm.cu";

/// The block's tile of C (`BLOCK_M` x `BLOCK_N`), the depth of a k-tile, and the threads of a
/// block (one per row of the A tile): the kernels' template arguments, here and nowhere else.
pub const BLOCK_M: u32 = 256;
pub const BLOCK_N: u32 = 128;
pub const BLOCK_K: u32 = 64;
pub const THREADS: u32 = BLOCK_M;
/// Each warp computes a square of C this wide; the warps of a block tile its C tile, 2 along N.
const WARP_TILE: u32 = 64;
const WARPS: u32 = THREADS / WARP_SIZE as u32;
const WARPS_N: u32 = BLOCK_N / WARP_TILE;
/// K steps of one `mma.m16n8k16` per k-tile, and the 16-row (or 16-column) pieces of a warp's
/// tile: one `ldmatrix.x4` (or `stmatrix.x4`) each.
const STEPS: u32 = BLOCK_K / 16;
const PIECES: u32 = WARP_TILE / 16;
/// Halves that `ldmatrix`, `stmatrix`, `cp.async` and the epilogue's loads move per lane.
const CHUNK: u32 = 8;
/// Halves of padding after each row of a PADDED tile: one 16-byte chunk.
pub const PAD: u32 = CHUNK;

const LDSM_A: Op = Op::LoadMatrix { matrices: Matrices::X4, trans: false };
const LDSM_B: Op = Op::LoadMatrix { matrices: Matrices::X4, trans: true };
const STSM: Op = Op::StoreMatrix { matrices: Matrices::X4, trans: false };

/// Where element (row, column) of a shared tile lives (`TileLayout` in the kernels).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Rows back to back.
    Unpadded,
    /// [`PAD`] halves after every row.
    Padded,
    /// CuTe's `Swizzle<3, 3, S>` on the half offset, `2^S` chunks to a row.
    Swizzled,
}

impl Layout {
    pub const ALL: [Layout; 3] = [Layout::Unpadded, Layout::Padded, Layout::Swizzled];

    pub fn name(self) -> &'static str {
        match self {
            Layout::Unpadded => "unpadded",
            Layout::Padded => "padded",
            Layout::Swizzled => "swizzled",
        }
    }

    /// Halves from one row to the next of a tile with rows of `width` halves.
    pub fn pitch(self, width: u32) -> u32 {
        match self {
            Layout::Padded => width + PAD,
            _ => width,
        }
    }

    /// The swizzle on the tile's half offsets: the row's low 3 bits XORed into its 16-byte chunk.
    pub fn swizzle(self, width: u32) -> Swizzle {
        match self {
            Layout::Swizzled => Swizzle::new(3, 3, (width / CHUNK).ilog2()).expect("B = 3 <= S"),
            _ => Swizzle::IDENTITY,
        }
    }

    /// The half offset of element (row, column) in a tile with rows of `width` halves.
    pub fn offset(self, width: u32, row: u32, column: u32) -> u32 {
        self.swizzle(width).apply(row * self.pitch(width) + column)
    }

    /// Bytes of a tile of `rows` rows of `width` halves.
    pub fn bytes(self, width: u32, rows: u32) -> u32 {
        2 * rows * self.pitch(width)
    }
}

/// The type of A, B and C: the tensor cores multiply either, accumulating in fp32.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Element {
    Bf16,
    F16,
}

impl Element {
    pub fn name(self) -> &'static str {
        match self {
            Element::Bf16 => "bf16",
            Element::F16 => "fp16",
        }
    }

    /// Bits of the significand, the leading one included: 8 for bf16, 11 for fp16.
    pub fn precision(self) -> i32 {
        match self {
            Element::Bf16 => 8,
            Element::F16 => 11,
        }
    }
}

/// C = A B for row-major A (m x k), B (k x n) and C (m x n).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub m: u32,
    pub n: u32,
    pub k: u32,
}

impl Shape {
    pub fn cube(n: u32) -> Shape {
        Shape { m: n, n, k: n }
    }

    /// Whether the kernels' tiles cover it exactly, as they require.
    pub fn fits_the_tiles(self) -> bool {
        self.m.is_multiple_of(BLOCK_M) && self.n.is_multiple_of(BLOCK_N) && self.k.is_multiple_of(BLOCK_K) && self.k > 0
    }

    /// Blocks of a launch: one per tile of C.
    pub fn blocks(self) -> u32 {
        (self.m / BLOCK_M) * (self.n / BLOCK_N)
    }

    /// k-tiles each block multiplies.
    pub fn tiles(self) -> u32 {
        self.k / BLOCK_K
    }

    /// Floating-point operations of the product: a multiply and an add per term.
    pub fn flops(self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }
}

/// Every kernel of `tensor_core_gemm.cu` the lessons run, by element type, layout, stages and
/// whether `cp.async` bypasses L1 (`.cg`) or goes through it (`.ca`).
const KERNELS: [(Element, Layout, u32, bool, &str); 8] = [
    (Element::Bf16, Layout::Unpadded, 3, false, "mma_gemm_bf16_unpadded"),
    (Element::Bf16, Layout::Padded, 3, false, "mma_gemm_bf16_padded"),
    (Element::Bf16, Layout::Swizzled, 3, false, "mma_gemm_bf16_swizzled"),
    (Element::Bf16, Layout::Swizzled, 3, true, "mma_gemm_bf16_swizzled_cg"),
    (Element::F16, Layout::Swizzled, 3, true, "mma_gemm_f16_swizzled_cg"),
    (Element::Bf16, Layout::Swizzled, 1, true, "mma_gemm_bf16_swizzled_cg_1_stage"),
    (Element::Bf16, Layout::Swizzled, 2, true, "mma_gemm_bf16_swizzled_cg_2_stages"),
    (Element::Bf16, Layout::Swizzled, 4, true, "mma_gemm_bf16_swizzled_cg_4_stages"),
];

/// One of the GEMM kernels: its tiles' layout, element type, `cp.async` stages, and whether its
/// `cp.async` bypasses L1.
///
/// The model's `cp.async` rule was measured on `.ca`. It holds for `.cg` where the 8 lanes of a
/// 128-byte source line write one 128-byte shared line, each 32-byte source sector into one
/// 32-byte unit of it: measured equal on the H100 (`bank-model/data/h100/copy-async-bypass.tsv`),
/// and every `.cg` kernel here is swizzled, whose fills are such.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tiles {
    pub element: Element,
    pub layout: Layout,
    pub stages: u32,
    pub bypass_l1: bool,
}

impl Tiles {
    /// Every kernel of the file, in its order.
    pub fn all() -> impl Iterator<Item = Tiles> {
        KERNELS.into_iter().map(|(element, layout, stages, bypass_l1, _)| Tiles { element, layout, stages, bypass_l1 })
    }

    /// The kernel's name, if the file defines these tiles.
    pub fn kernel(self) -> Option<&'static str> {
        KERNELS
            .into_iter()
            .find(|&(e, l, s, b, _)| (e, l, s, b) == (self.element, self.layout, self.stages, self.bypass_l1))
            .map(|k| k.4)
    }

    /// How tables name its `cp.async`.
    pub fn copy_name(self) -> &'static str {
        if self.bypass_l1 { "cp.async.cg" } else { "cp.async.ca" }
    }

    /// Bytes of A's tile, which B's follows in a stage.
    pub fn a_bytes(self) -> u32 {
        self.layout.bytes(BLOCK_K, BLOCK_M)
    }

    /// Bytes of one stage: A's tile, then B's.
    pub fn stage_bytes(self) -> u32 {
        self.a_bytes() + self.layout.bytes(BLOCK_N, BLOCK_K)
    }

    /// The dynamic shared memory a launch needs: the stages, which C's tile reuses afterwards.
    pub fn shared_bytes(self) -> u32 {
        (self.stages * self.stage_bytes()).max(self.layout.bytes(BLOCK_N, BLOCK_M))
    }

    /// Byte address of element (row, column) of A's tile in stage `stage`.
    fn a_address(self, stage: u32, row: u32, column: u32) -> u32 {
        stage * self.stage_bytes() + 2 * self.layout.offset(BLOCK_K, row, column)
    }

    fn b_address(self, stage: u32, row: u32, column: u32) -> u32 {
        stage * self.stage_bytes() + self.a_bytes() + 2 * self.layout.offset(BLOCK_N, row, column)
    }

    /// C's tile starts at the start of shared memory, over the stages.
    fn c_address(self, row: u32, column: u32) -> u32 {
        2 * self.layout.offset(BLOCK_N, row, column)
    }

    /// The instruction `op` of a warp whose lane `l` accesses the 16 bytes at `address(l)`.
    fn request(op: Op, address: impl Fn(u32) -> u32) -> Request {
        Request::bytes(op, Width::W16, address).expect("16-byte chunks")
    }

    /// The thread of lane `lane` of warp `warp`.
    fn thread(warp: u32, lane: u32) -> u32 {
        warp * WARP_SIZE as u32 + lane
    }

    /// Warp `warp`'s `cp.async` number `pass` of A's tile into stage `stage` (`fill_stage`):
    /// thread t copies chunk t + pass * THREADS of the tile, 8 chunks to a row.
    pub fn fill_a(self, stage: u32, warp: u32, pass: u32) -> Request {
        Tiles::request(Op::CopyAsync, |lane| {
            let index = Tiles::thread(warp, lane) + pass * THREADS;
            self.a_address(stage, index / (BLOCK_K / CHUNK), index % (BLOCK_K / CHUNK) * CHUNK)
        })
    }

    /// The same for B's tile, 16 chunks to a row.
    pub fn fill_b(self, stage: u32, warp: u32, pass: u32) -> Request {
        Tiles::request(Op::CopyAsync, |lane| {
            let index = Tiles::thread(warp, lane) + pass * THREADS;
            self.b_address(stage, index / (BLOCK_N / CHUNK), index % (BLOCK_N / CHUNK) * CHUNK)
        })
    }

    /// Warp `warp`'s `ldmatrix.x4` of A's piece `i` at K step `step` (`WarpFragments::load`):
    /// lane l gives row l % 16 of the piece, 8 halves from column 16 step + 8 (l / 16).
    pub fn load_a(self, stage: u32, warp: u32, step: u32, i: u32) -> Request {
        let row0 = warp / WARPS_N * WARP_TILE + i * 16;
        Tiles::request(LDSM_A, |lane| self.a_address(stage, row0 + lane % 16, step * 16 + lane / 16 * CHUNK))
    }

    /// Warp `warp`'s `ldmatrix.x4.trans` of B's piece `j` at K step `step`: lane l gives row
    /// 16 step + l % 16 of K, 8 halves from the piece's column 8 (l / 16).
    pub fn load_b(self, stage: u32, warp: u32, step: u32, j: u32) -> Request {
        let column0 = warp % WARPS_N * WARP_TILE + j * 16;
        Tiles::request(LDSM_B, |lane| self.b_address(stage, step * 16 + lane % 16, column0 + lane / 16 * CHUNK))
    }

    /// Warp `warp`'s `stmatrix.x4` of its accumulators' piece (i, j) into C's tile: lane l gives
    /// row l % 16 of the piece, 8 halves from column 8 (l / 16).
    pub fn store_c(self, warp: u32, i: u32, j: u32) -> Request {
        let (row0, column0) = (warp / WARPS_N * WARP_TILE + i * 16, warp % WARPS_N * WARP_TILE + j * 16);
        Tiles::request(STSM, |lane| self.c_address(row0 + lane % 16, column0 + lane / 16 * CHUNK))
    }

    /// Warp `warp`'s 16-byte load number `pass` of C's tile on its way out: thread t reads chunk
    /// t + pass * THREADS, 16 chunks to a row.
    pub fn read_c(self, warp: u32, pass: u32) -> Request {
        Tiles::request(Op::Load, |lane| {
            let index = Tiles::thread(warp, lane) + pass * THREADS;
            self.c_address(index / (BLOCK_N / CHUNK), index % (BLOCK_N / CHUNK) * CHUNK)
        })
    }

    /// k-tiles of `shape` whose copy and multiply use stage `stage`: tile t uses stage t % stages.
    fn tiles_in_stage(self, shape: Shape, stage: u32) -> u32 {
        (shape.tiles() + self.stages - 1 - stage) / self.stages
    }

    /// One block's shared-memory instructions of k-tiles in stage `stage`, each with its name:
    /// the copy of a tile, then its multiply.
    pub fn k_tile_requests(self, stage: u32) -> Vec<(&'static str, Request)> {
        let mut requests = Vec::new();
        for warp in 0..WARPS {
            requests.extend(
                (0..BLOCK_M * BLOCK_K / CHUNK / THREADS).map(|pass| ("cp.async A", self.fill_a(stage, warp, pass))),
            );
            requests.extend(
                (0..BLOCK_K * BLOCK_N / CHUNK / THREADS).map(|pass| ("cp.async B", self.fill_b(stage, warp, pass))),
            );
        }
        for step in 0..STEPS {
            for warp in 0..WARPS {
                requests.extend((0..PIECES).map(|i| ("ldmatrix.x4 A", self.load_a(stage, warp, step, i))));
                requests.extend((0..PIECES).map(|j| ("ldmatrix.x4.trans B", self.load_b(stage, warp, step, j))));
            }
        }
        requests
    }

    /// One block's epilogue: the `stmatrix.x4` of every warp's accumulators, then the 16-byte
    /// loads that carry C's tile out.
    pub fn epilogue_requests(self) -> Vec<(&'static str, Request)> {
        let mut requests = Vec::new();
        for warp in 0..WARPS {
            for i in 0..PIECES {
                requests.extend((0..PIECES).map(|j| ("stmatrix.x4 C", self.store_c(warp, i, j))));
            }
        }
        for warp in 0..WARPS {
            requests.extend(
                (0..BLOCK_M * BLOCK_N / CHUNK / THREADS).map(|pass| ("ld.shared.v4 C", self.read_c(warp, pass))),
            );
        }
        requests
    }

    /// Every shared-memory instruction of a launch on `shape`: per block, each k-tile's copy and
    /// multiply in its stage, and the epilogue. One declared access per name and cost.
    pub fn accesses(self, shape: Shape) -> Vec<DeclaredAccess> {
        let blocks = shape.blocks() as u64;
        let mut accesses: Vec<DeclaredAccess> = Vec::new();
        let mut add = |name: &str, request: Request, executions: u64| {
            let wavefronts = request.wavefronts();
            let same = |a: &&mut DeclaredAccess| a.name == name && a.request.wavefronts() == wavefronts;
            match accesses.iter_mut().find(|a| same(a)) {
                Some(access) => access.executions += executions,
                None => accesses.push(DeclaredAccess { name: name.into(), request, executions }),
            }
        };
        for stage in 0..self.stages {
            let tiles = self.tiles_in_stage(shape, stage) as u64;
            if tiles > 0 {
                self.k_tile_requests(stage).into_iter().for_each(|(name, r)| add(name, r, blocks * tiles));
            }
        }
        self.epilogue_requests().into_iter().for_each(|(name, r)| add(name, r, blocks));
        accesses
    }
}

/// C = A B in double precision from the inputs as the kernels read them, for the rows listed.
pub fn cpu_product(a: &[f32], b: &[f32], shape: Shape, rows: impl Iterator<Item = usize>) -> Vec<(usize, Vec<f64>)> {
    lesson_kit::floats::row_major_product(a, b, (shape.n as usize, shape.k as usize), rows)
}

/// How far an output may lie from the exact product: rounded to `element` it moves by up to half
/// a unit in the last place, and two roundings (the kernel's and cuBLAS's) of sums that differ in
/// the fp32 accumulator's last bits can land a unit apart, `2^(1 - precision)` of the value. The
/// accumulators' own error, near outputs that cancel to almost nothing, is the absolute term:
/// `2^-12 sqrt(k)` against sums whose typical size is `sqrt(k) / 3` for inputs in [-1, 1).
pub struct Tolerance {
    pub relative: f64,
    pub absolute: f64,
}

impl Tolerance {
    pub fn of(element: Element, shape: Shape) -> Tolerance {
        Tolerance { relative: 2f64.powi(1 - element.precision()), absolute: 2f64.powi(-12) * (shape.k as f64).sqrt() }
    }

    pub fn allows(&self, got: f64, want: f64) -> bool {
        (got - want).abs() <= self.relative * want.abs() + self.absolute
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROFILED: Shape = Shape { m: 256, n: 256, k: 256 };

    /// (instructions, wavefronts) of the accesses of `op` in a launch.
    fn counted(tiles: Tiles, op: Op) -> (u64, u64) {
        tiles
            .accesses(PROFILED)
            .iter()
            .filter(|a| a.request.op == op)
            .fold((0, 0), |(i, w), a| (i + a.executions, w + a.executions * a.request.analyze().wavefronts as u64))
    }

    fn tiles(layout: Layout, stages: u32) -> Tiles {
        Tiles { element: Element::Bf16, layout, stages, bypass_l1: stages != 3 }
    }

    #[test]
    fn declarations_reproduce_the_h100s_counts_at_256_cubed() {
        // ncu's sass counters for one launch at m = n = k = 256 on the H100 (2 blocks, 4 k-tiles
        // each): executions and wavefronts of LDSM, STSM, LDGSTS and LDS, by layout (cp.async.ca).
        let measured = [
            (Layout::Unpadded, [(2048, 65536), (256, 8192), (768, 3072), (256, 1024)]),
            (Layout::Padded, [(2048, 8192), (256, 1024), (768, 3072), (256, 1024)]),
            (Layout::Swizzled, [(2048, 8192), (256, 1024), (768, 3072), (256, 1024)]),
        ];
        for (layout, [ldsm, stsm, ldgsts, lds]) in measured {
            let kernel = Tiles { element: Element::Bf16, layout, stages: 3, bypass_l1: false };
            let (a, b) = (counted(kernel, LDSM_A), counted(kernel, LDSM_B));
            assert_eq!((a.0 + b.0, a.1 + b.1), ldsm, "{layout:?} LDSM");
            assert_eq!(counted(kernel, STSM), stsm, "{layout:?} STSM");
            assert_eq!(counted(kernel, Op::Load), lds, "{layout:?} LDS");
            assert_eq!(counted(kernel, Op::CopyAsync), ldgsts, "{layout:?} LDGSTS");
        }
    }

    #[test]
    fn the_pipeline_depth_changes_no_count() {
        let three = tiles(Layout::Swizzled, 3);
        for stages in [1, 2, 4] {
            for op in [LDSM_A, LDSM_B, STSM, Op::CopyAsync, Op::Load] {
                assert_eq!(counted(tiles(Layout::Swizzled, stages), op), counted(three, op), "{stages} stages, {op}");
            }
        }
    }

    #[test]
    fn every_k_tile_is_copied_and_multiplied_once_in_its_stage() {
        for stages in [1, 2, 3, 4] {
            let kernel = tiles(Layout::Swizzled, stages);
            for k_tiles in [1, 2, 3, 4, 5, 9] {
                let shape = Shape { m: 256, n: 128, k: 64 * k_tiles };
                let per_stage: Vec<u32> = (0..stages).map(|s| kernel.tiles_in_stage(shape, s)).collect();
                let want: Vec<u32> =
                    (0..stages).map(|s| (0..k_tiles).filter(|t| t % stages == s).count() as u32).collect();
                assert_eq!(per_stage, want, "{stages} stages, {k_tiles} tiles");
            }
        }
    }

    #[test]
    fn the_fill_writes_every_chunk_of_both_tiles_once() {
        for layout in Layout::ALL {
            let kernel = tiles(layout, 3);
            let mut written = vec![0u32; (kernel.stage_bytes() / 16) as usize];
            for (name, request) in kernel.k_tile_requests(0).iter().filter(|(name, _)| name.starts_with("cp.async")) {
                for address in request.lanes.iter().flatten() {
                    written[(address / 16) as usize] += 1;
                    assert!(name.ends_with('A') == (*address < kernel.a_bytes()), "{layout:?} {name} at {address}");
                }
            }
            // Every chunk of a row once; the padding never.
            let chunks = |width: u32, rows: u32| rows * width / CHUNK;
            assert_eq!(
                written.iter().filter(|&&n| n == 1).count() as u32,
                chunks(BLOCK_K, BLOCK_M) + chunks(BLOCK_N, BLOCK_K)
            );
            assert!(written.iter().all(|&n| n <= 1), "{layout:?}");
        }
    }

    #[test]
    fn the_layouts_are_permutations_of_each_rows_chunks_that_keep_chunks_whole() {
        for width in [BLOCK_K, BLOCK_N] {
            for layout in Layout::ALL {
                for row in 0..16 {
                    let mut columns: Vec<u32> = (0..width)
                        .map(|column| layout.offset(width, row, column) - row * layout.pitch(width))
                        .collect();
                    assert!(columns.chunks(CHUNK as usize).all(|c| c.windows(2).all(|p| p[1] == p[0] + 1)));
                    columns.sort_unstable();
                    assert_eq!(columns, (0..width).collect::<Vec<_>>(), "{layout:?}, rows of {width}, row {row}");
                }
            }
        }
    }

    #[test]
    fn the_swizzle_xors_the_rows_low_bits_into_the_chunk() {
        // Row 5 of A's tile (8 chunks a row): chunk 2 is stored as chunk 2 ^ 5 = 7.
        assert_eq!(Layout::Swizzled.offset(BLOCK_K, 5, 16), 5 * 64 + 7 * 8);
        // Row 13 of B's (16 chunks a row): chunk 3 is stored as chunk 3 ^ (13 % 8) = 6.
        assert_eq!(Layout::Swizzled.offset(BLOCK_N, 13, 24), 13 * 128 + 6 * 8);
        assert_eq!(Layout::Padded.offset(BLOCK_N, 13, 24), 13 * 136 + 24);
    }

    /// The model counts `.cg` copies only where it measured them equal to `.ca`.
    #[test]
    fn every_bypassing_fill_is_one_the_model_counts() {
        for tiles in Tiles::all().filter(|t| t.bypass_l1) {
            for (stage, warp) in (0..tiles.stages).flat_map(|s| (0..WARPS).map(move |w| (s, w))) {
                let a = (0..BLOCK_M * 8 / THREADS).map(|pass| tiles.fill_a(stage, warp, pass));
                let b = (0..BLOCK_K * 16 / THREADS).map(|pass| tiles.fill_b(stage, warp, pass));
                for request in a.chain(b) {
                    assert!(bank_model::rules::bypass_counts_as_through_l1(&request), "{tiles:?}: {request:?}");
                }
            }
        }
        let padded = Tiles { element: Element::Bf16, layout: Layout::Padded, stages: 3, bypass_l1: false };
        assert!(!bank_model::rules::bypass_counts_as_through_l1(&padded.fill_a(0, 0, 1)), "rows off the line");
    }

    #[test]
    fn the_stages_fit_in_an_h100_block() {
        // 227 KiB of shared memory per block on sm_90.
        for kernel in Tiles::all() {
            assert!(kernel.shared_bytes() <= 227 * 1024, "{kernel:?}: {}", kernel.shared_bytes());
        }
        assert_eq!(tiles(Layout::Unpadded, 3).shared_bytes(), 3 * 2 * (256 * 64 + 64 * 128));
        assert_eq!(tiles(Layout::Padded, 1).shared_bytes(), 2 * 256 * 136);
    }

    #[test]
    fn every_kernel_of_the_table_is_defined_once_by_the_file() {
        let text = cuda_kernels::source::embedded(KERNEL_FILE).expect("kernels/ has the file");
        let defined = cuda_kernels::kernel_names::kernel_names(text);
        let names: Vec<&str> = Tiles::all().map(|tiles| tiles.kernel().expect("in the table")).collect();
        assert!(names.iter().all(|name| defined.iter().any(|d| d == name)), "{names:?} against {defined:?}");
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len());
        assert_eq!(tiles(Layout::Padded, 2).kernel(), None);
    }

    #[test]
    fn the_cpu_product_multiplies_row_major() {
        let shape = Shape { m: 2, n: 3, k: 2 };
        let (a, b) = ([1.0, 2.0, 3.0, 4.0], [1.0, 0.0, -1.0, 0.5, 2.0, 0.25]);
        assert_eq!(cpu_product(&a, &b, shape, 0..2), [(0, vec![2.0, 4.0, -0.5]), (1, vec![5.0, 8.0, -2.0])]);
    }

    #[test]
    fn the_tolerance_allows_a_unit_in_the_last_place_and_no_more() {
        let tolerance = Tolerance::of(Element::Bf16, Shape::cube(256));
        // bf16 values near 4 are 2^-5 apart: a unit is allowed, two are not.
        assert!(tolerance.allows(4.0 + 2f64.powi(-5), 4.0));
        assert!(!tolerance.allows(4.0 + 2.0 * 2f64.powi(-5) + tolerance.absolute, 4.0));
        assert!(Tolerance::of(Element::F16, Shape::cube(256)).relative < tolerance.relative);
    }
}
