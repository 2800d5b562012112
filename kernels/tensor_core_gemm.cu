// Lessons 14 and 15: C = A B on the tensor cores with mma.sync, bf16 or fp16 in, fp32 accumulated,
// C rounded back to the input type. A is M x K row-major, B is K x N row-major, C is M x N
// row-major; M is a multiple of 256, N of 128, K of 64.
//
// A block of 256 threads (8 warps, 4 along M by 2 along N) computes a 256 x 128 tile of C, warp
// w the 64 x 64 tile at rows 64 (w / 2), columns 64 (w % 2). K goes by in tiles of 64: cp.async
// copies A's 256 x 64 tile (rows of 64 halves, 128 bytes) and B's 64 x 128 tile (rows of 128
// halves, 256 bytes) into one of STAGES buffers while the warps multiply an earlier tile. Per
// k-tile a warp reads its A fragments with 16 ldmatrix.x4 and B's with 16 ldmatrix.x4.trans (B's
// rows run along N) and issues 128 mma.sync. The epilogue writes the accumulators to a shared
// 256 x 128 tile of C with stmatrix.x4, then copies it out in 16-byte rows.
//
// The kernels differ in where a tile's element (row, column) lives: `TileLayout`.

#include "swizzle.cuh"
#include "tensor_core.cuh"

#define BLOCK_N 128u
#define BLOCK_K 64u
#define GROUP_M 8u  // blocks along M that run side by side, so that a wave shares A and B in L2

enum Layout { UNPADDED, PADDED, SWIZZLED };

// ANCHOR: layouts
// Where element (row, column) of a tile with rows of WIDTH halves is stored, as a half offset. A
// column is always a multiple of 8: ldmatrix, stmatrix and cp.async move 16-byte rows of 8 halves.
// UNPADDED: rows back to back, so the 8 rows of one ldmatrix matrix (WIDTH = 64: 128 bytes apart)
// fall in the same 4 banks. PADDED: 8 halves (16 bytes) more per row. SWIZZLED: CuTe's
// Swizzle<3, 3, S>, S = log2(WIDTH / 8): the row's low 3 bits XORed into the 16-byte column.
template <unsigned WIDTH, Layout LAYOUT>
struct TileLayout {
    static constexpr unsigned PITCH = LAYOUT == PADDED ? WIDTH + 8 : WIDTH;
    static constexpr unsigned SHIFT = WIDTH == 64 ? 3 : 4;
    static_assert(WIDTH == 64 || WIDTH == 128, "tiles have rows of 64 or 128 halves");
    __device__ __forceinline__ unsigned operator()(unsigned row, unsigned column) const {
        const unsigned offset = row * PITCH + column;
        return LAYOUT == SWIZZLED ? Swizzle<3, 3, SHIFT>{}(offset) : offset;
    }
    __host__ __device__ static constexpr unsigned bytes(unsigned rows) { return rows * PITCH * 2; }
    // The offset of the element `columns` to the right of the one at `offset`, when that column's
    // bits under `columns` are zero: for the swizzle an XOR (it is linear in the offset's bits and
    // leaves column bits alone), else an addition. Moving down 8 rows or more always adds.
    __device__ __forceinline__ static unsigned right_of(unsigned offset, unsigned columns) {
        return LAYOUT == SWIZZLED ? offset ^ columns : offset + columns;
    }
};
// ANCHOR_END: layouts

// A block of BLOCK_M threads: BLOCK_M / 64 warps along M by 2 along N, each with a 64 x 64 tile of C.
template <unsigned BLOCK_M, Layout LAYOUT>
struct Tiles {
    using A = TileLayout<BLOCK_K, LAYOUT>;  // BLOCK_M rows of 64 halves
    using B = TileLayout<BLOCK_N, LAYOUT>;  // 64 rows of 128 halves
    using C = TileLayout<BLOCK_N, LAYOUT>;  // BLOCK_M rows of 128 halves, after the main loop
    static constexpr unsigned THREADS = BLOCK_M;
    static constexpr unsigned A_BYTES = A::bytes(BLOCK_M);
    static constexpr unsigned STAGE_BYTES = A_BYTES + B::bytes(BLOCK_K);
};

// The block's tile of C, with blocks rasterized GROUP_M at a time down M.
template <unsigned BLOCK_M>
__device__ __forceinline__ void block_tile(unsigned m, unsigned n, unsigned& row0, unsigned& column0) {
    const unsigned blocks_m = m / BLOCK_M, blocks_n = n / BLOCK_N, id = blockIdx.x;
    const unsigned group = id / (GROUP_M * blocks_n), first = group * GROUP_M;
    const unsigned rows = min(blocks_m - first, GROUP_M), within = id % (GROUP_M * blocks_n);
    row0 = (first + within % rows) * BLOCK_M;
    column0 = (within / rows) * BLOCK_N;
}

// ANCHOR: fill
// cp.async of k-tile `kt` into a stage: A's 16-byte rows, 8 per thread (thread t takes row t / 8
// + 32 i, 16-byte column t % 8: a warp, 4 rows of the tile), then B's (thread t: row t / 16 +
// (threads / 16) i, column t % 16: a warp, 2 rows). Each pass moves a thread 8 rows or more down.
template <unsigned BLOCK_M, Layout LAYOUT, bool BYPASS_L1>
__device__ __forceinline__ void fill_stage(unsigned stage, const half_bits* a, const half_bits* b, unsigned n,
                                           unsigned k, unsigned row0, unsigned column0, unsigned kt) {
    using T = Tiles<BLOCK_M, LAYOUT>;
    constexpr unsigned A_ROWS = T::THREADS / 8, B_ROWS = T::THREADS / 16;  // rows a pass of the block covers
    const unsigned a_row = threadIdx.x / 8, a_column = threadIdx.x % 8 * 8;
    const unsigned b_row = threadIdx.x / 16, b_column = threadIdx.x % 16 * 8;
    const unsigned a_tile = stage + 2 * typename T::A{}(a_row, a_column);
    const unsigned b_tile = stage + T::A_BYTES + 2 * typename T::B{}(b_row, b_column);
    const half_bits* a_from = a + (row0 + a_row) * k + kt * BLOCK_K + a_column;
    const half_bits* b_from = b + (kt * BLOCK_K + b_row) * n + column0 + b_column;
#pragma unroll
    for (unsigned i = 0; i < BLOCK_M / A_ROWS; ++i) cp_async_16<BYPASS_L1>(a_tile + 2 * i * A_ROWS * T::A::PITCH, a_from + i * A_ROWS * k);
#pragma unroll
    for (unsigned i = 0; i < BLOCK_K / B_ROWS; ++i) cp_async_16<BYPASS_L1>(b_tile + 2 * i * B_ROWS * T::B::PITCH, b_from + i * B_ROWS * n);
}
// ANCHOR_END: fill

// ANCHOR: multiply
// The warp's fragments for one 16-wide step ks of K: 4 ldmatrix.x4 of A (16 rows each: lane l
// gives row l % 16, 8 halves from column 16 ks + 8 (l / 16)), 4 ldmatrix.x4.trans of B (16 columns
// each: lane l gives row 16 ks + l % 16 of K, 8 halves from column 8 (l / 16)).
template <unsigned BLOCK_M, Layout LAYOUT>
struct WarpFragments {
    using T = Tiles<BLOCK_M, LAYOUT>;
    // This lane's ldmatrix offsets (halves) for the first step's first A and B matrices; the
    // others are 16 rows down or 16 columns right of them.
    unsigned a, b;
    __device__ __forceinline__ WarpFragments(unsigned warp_m, unsigned warp_n, unsigned lane)
        : a(typename T::A{}(warp_m * 64 + lane % 16, lane / 16 * 8)), b(typename T::B{}(lane % 16, warp_n * 64 + lane / 16 * 8)) {}

    __device__ __forceinline__ void load(unsigned stage, unsigned ks, unsigned (&frag_a)[4][4], unsigned (&frag_b)[4][4]) const {
#pragma unroll
        for (unsigned i = 0; i < 4; ++i)
            ldmatrix_x4(frag_a[i], stage + 2 * T::A::right_of(a + i * 16 * T::A::PITCH, ks * 16));
#pragma unroll
        for (unsigned j = 0; j < 4; ++j)
            ldmatrix_x4_trans(frag_b[j], stage + T::A_BYTES + 2 * T::B::right_of(b + ks * 16 * T::B::PITCH, j * 16));
    }
};

// One 16-wide step of K for the warp's 64 x 64 tile: 32 mma.
template <bool BF16>
__device__ __forceinline__ void multiply_step(float (&acc)[4][8][4], const unsigned (&a)[4][4], const unsigned (&b)[4][4]) {
#pragma unroll
    for (unsigned i = 0; i < 4; ++i)
#pragma unroll
        for (unsigned j = 0; j < 8; ++j) mma_16x8x16<BF16>(acc[i][j], a[i], b[j / 2][j % 2 * 2], b[j / 2][j % 2 * 2 + 1]);
}
// ANCHOR_END: multiply

// ANCHOR: pipeline
// One k-tile of the pipeline, kt, in its 4 steps. FILL: during step 1, the copy of tile kt +
// STAGES - 1 into the stage tile kt - 1 used (every warp loaded its last fragments from there
// before the barrier that ended tile kt - 1). A tile that copies nothing still commits a group, so
// that leaving STAGES - 2 groups pending always means the next tile has landed. NEXT: the last
// step's mma overlap the first loads of tile kt + 1, once it has landed.
template <unsigned BLOCK_M, Layout LAYOUT, unsigned STAGES, bool BF16, bool BYPASS_L1, bool FILL, bool NEXT>
__device__ __forceinline__ void pipelined_tile(unsigned kt, unsigned base, const half_bits* a, const half_bits* b,
                                               unsigned n, unsigned k, unsigned row0, unsigned column0,
                                               const WarpFragments<BLOCK_M, LAYOUT>& fragments, float (&acc)[4][8][4],
                                               unsigned (&frag_a)[2][4][4], unsigned (&frag_b)[2][4][4]) {
    using T = Tiles<BLOCK_M, LAYOUT>;
    constexpr unsigned STEPS = BLOCK_K / 16;
    const unsigned stage = base + kt % STAGES * T::STAGE_BYTES, next = kt + STAGES - 1;
#pragma unroll
    for (unsigned ks = 0; ks < STEPS; ++ks) {
        if (ks == 1) {
            if (FILL) fill_stage<BLOCK_M, LAYOUT, BYPASS_L1>(base + next % STAGES * T::STAGE_BYTES, a, b, n, k, row0, column0, next);
            cp_async_commit();
        }
        if (ks + 1 < STEPS) {
            fragments.load(stage, ks + 1, frag_a[(ks + 1) % 2], frag_b[(ks + 1) % 2]);
        } else if (NEXT) {
            cp_async_wait<(STAGES >= 2 ? STAGES - 2 : 0)>();
            __syncthreads();
            fragments.load(base + (kt + 1) % STAGES * T::STAGE_BYTES, 0, frag_a[0], frag_b[0]);
        }
        multiply_step<BF16>(acc, frag_a[ks % 2], frag_b[ks % 2]);
    }
}

template <unsigned BLOCK_M, Layout LAYOUT, unsigned STAGES, bool BF16, bool BYPASS_L1>
__device__ void mma_gemm(const half_bits* a, const half_bits* b, half_bits* c, unsigned m, unsigned n, unsigned k) {
    using T = Tiles<BLOCK_M, LAYOUT>;
    constexpr unsigned STEPS = BLOCK_K / 16;
    extern __shared__ __align__(128) unsigned char shared[];
    const unsigned base = shared_address(shared), warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const unsigned warp_m = warp / 2, warp_n = warp % 2, tiles = k / BLOCK_K;
    unsigned row0, column0;
    block_tile<BLOCK_M>(m, n, row0, column0);
    float acc[4][8][4] = {};
    const WarpFragments<BLOCK_M, LAYOUT> fragments(warp_m, warp_n, lane);
    unsigned frag_a[2][4][4], frag_b[2][4][4];  // one step's fragments multiplying, the next step's loading
    if (STAGES == 1) {
        // No pipeline: copy a tile, wait for it, multiply it.
        for (unsigned kt = 0; kt < tiles; ++kt) {
            fill_stage<BLOCK_M, LAYOUT, BYPASS_L1>(base, a, b, n, k, row0, column0, kt);
            cp_async_commit();
            cp_async_wait<0>();
            __syncthreads();
#pragma unroll
            for (unsigned ks = 0; ks < STEPS; ++ks) {
                fragments.load(base, ks, frag_a[0], frag_b[0]);
                multiply_step<BF16>(acc, frag_a[0], frag_b[0]);
            }
            __syncthreads();
        }
    } else {
        // STAGES - 1 tiles in flight while one is multiplied.
#pragma unroll
        for (unsigned s = 0; s + 1 < STAGES; ++s) {
            if (s < tiles) fill_stage<BLOCK_M, LAYOUT, BYPASS_L1>(base + s * T::STAGE_BYTES, a, b, n, k, row0, column0, s);
            cp_async_commit();
        }
        cp_async_wait<(STAGES >= 2 ? STAGES - 2 : 0)>();
        __syncthreads();
        fragments.load(base, 0, frag_a[0], frag_b[0]);
        // Three loops, so that no copy or load is ever issued with its guard off: the tiles that
        // copy a later one, the ones that only load the next, and the last.
        unsigned kt = 0;
        for (; kt + STAGES - 1 < tiles; ++kt)
            pipelined_tile<BLOCK_M, LAYOUT, STAGES, BF16, BYPASS_L1, true, true>(kt, base, a, b, n, k, row0, column0,
                                                                             fragments, acc, frag_a, frag_b);
        for (; kt + 1 < tiles; ++kt)
            pipelined_tile<BLOCK_M, LAYOUT, STAGES, BF16, BYPASS_L1, false, true>(kt, base, a, b, n, k, row0, column0,
                                                                              fragments, acc, frag_a, frag_b);
        pipelined_tile<BLOCK_M, LAYOUT, STAGES, BF16, BYPASS_L1, false, false>(kt, base, a, b, n, k, row0, column0,
                                                                           fragments, acc, frag_a, frag_b);
        cp_async_wait<0>();
        __syncthreads();
    }
    // ANCHOR_END: pipeline

    // ANCHOR: epilogue
    // The accumulators' 16 x 16 pieces, rounded, go to the shared tile of C by stmatrix.x4: lane l
    // gives row l % 16, 8 halves from column 8 (l / 16), the lanes of ldmatrix's B loads.
#pragma unroll
    for (unsigned i = 0; i < 4; ++i)
#pragma unroll
        for (unsigned j = 0; j < 4; ++j) {
            const unsigned r[4] = {pack_rounded<BF16>(acc[i][2 * j][0], acc[i][2 * j][1]),
                                   pack_rounded<BF16>(acc[i][2 * j][2], acc[i][2 * j][3]),
                                   pack_rounded<BF16>(acc[i][2 * j + 1][0], acc[i][2 * j + 1][1]),
                                   pack_rounded<BF16>(acc[i][2 * j + 1][2], acc[i][2 * j + 1][3])};
            stmatrix_x4(base + 2 * typename T::C{}(warp_m * 64 + i * 16 + lane % 16, warp_n * 64 + j * 16 + lane / 16 * 8), r);
        }
    __syncthreads();
    // Then 16-byte rows out, 16 per thread: a warp reads two rows of the tile and writes them to C.
#pragma unroll 4
    for (unsigned i = 0; i < 16; ++i) {
        const unsigned index = threadIdx.x + i * T::THREADS, row = index / 16, column = index % 16 * 8;
        uint4 v;
        asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                     : "r"(base + 2 * typename T::C{}(row, column)));
        *reinterpret_cast<uint4*>(c + (row0 + row) * n + column0 + column) = v;
    }
    // ANCHOR_END: epilogue
}

#define MMA_GEMM(NAME, LAYOUT, STAGES, BF16, BYPASS_L1)                                                    \
    extern "C" __global__ void __launch_bounds__(256, 1)                                                      \
        NAME(const half_bits* a, const half_bits* b, half_bits* c, unsigned m, unsigned n, unsigned k) {      \
        mma_gemm<256, LAYOUT, STAGES, BF16, BYPASS_L1>(a, b, c, m, n, k);                                     \
    }
// ANCHOR: kernels
// Lesson 14: the three layouts, filled through L1 (cp.async.ca), then the swizzled one filled
// around it (cp.async.cg), in bf16 and fp16.
MMA_GEMM(mma_gemm_bf16_unpadded, UNPADDED, 3, true, false)
MMA_GEMM(mma_gemm_bf16_padded, PADDED, 3, true, false)
MMA_GEMM(mma_gemm_bf16_swizzled, SWIZZLED, 3, true, false)
MMA_GEMM(mma_gemm_bf16_swizzled_cg, SWIZZLED, 3, true, true)
MMA_GEMM(mma_gemm_f16_swizzled_cg, SWIZZLED, 3, false, true)
// Lesson 15: the cp.async.cg kernel with 1, 2 and 4 stages.
MMA_GEMM(mma_gemm_bf16_swizzled_cg_1_stage, SWIZZLED, 1, true, true)
MMA_GEMM(mma_gemm_bf16_swizzled_cg_2_stages, SWIZZLED, 2, true, true)
MMA_GEMM(mma_gemm_bf16_swizzled_cg_4_stages, SWIZZLED, 4, true, true)
// ANCHOR_END: kernels
