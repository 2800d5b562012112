// Exercise ldmatrix-swizzle (lesson 14: tensor-core tiles).
//
// A block of 4 warps copies a tile of 64 rows of 64 halves (128 bytes, eight 16-byte chunks per
// row) into shared memory, one chunk per thread at a time, row by row. Then each warp reads its
// 16 rows as an mma's A operand would: one ldmatrix.x4 per 16 x 16 block, lane l giving the
// address of row l % 16, chunk l / 16 of the block, `iterations` times. Half `col` of row `row`
// lives at `tile[tile_offset(row, col)]`; as written, the eight rows of each 8 x 8 matrix are 128
// bytes apart, all in the same four banks.
//
// Your task: change `tile_offset` so that an ldmatrix.x4 takes 4 wavefronts (one per matrix, the
// least it can take), without using more than 64 x 64 halves of shared memory (no padding).
// Only the lines between the two markers are yours; the rest must stay as it is.

#include "tensor_core.cuh"

#define ROWS 64u        // rows of the tile
#define ROW_HALVES 64u  // 16-bit elements per row: eight 16-byte chunks

// ---- EDIT BELOW ----
// Where half `col` of row `row` is kept, in halves from the tile's start; `col` is always a
// multiple of 8 (a chunk's first half), and a chunk's 8 halves follow it. Every one of the 64 x 8
// chunks needs 16 bytes of its own within TILE_HALVES.
#define TILE_HALVES (ROWS * ROW_HALVES)
__device__ __forceinline__ unsigned tile_offset(unsigned row, unsigned col) {
    return row * ROW_HALVES + col;
}
// ---- EDIT ABOVE ----

extern "C" __global__ void ldmatrix_tile_sums(const unsigned* words, unsigned* out, unsigned iterations) {
    __shared__ __align__(16) half_bits tile[TILE_HALVES];
    const uint4* chunks = reinterpret_cast<const uint4*>(words) + blockIdx.x * ROWS * ROW_HALVES / 8;
    // Row copy: thread t stores chunks t, t + 128, ...; a warp stores four whole rows at a time.
    for (unsigned c = threadIdx.x; c < ROWS * ROW_HALVES / 8; c += blockDim.x)
        *reinterpret_cast<uint4*>(&tile[tile_offset(c / 8, c % 8 * 8)]) = chunks[c];
    __syncthreads();
    // A-operand reads: warp w takes rows 16w to 16w + 15, one 16 x 16 block of them at a time.
    const unsigned lane = threadIdx.x % 32, row = threadIdx.x / 32 * 16 + lane % 16;
    unsigned sum = 0;
    for (unsigned i = 0; i < iterations; ++i) {
        // The pass's fragments, hashed in order: a chunk read from the wrong place changes it.
        unsigned pass = 0;
        for (unsigned block = 0; block < ROW_HALVES / 16; ++block) {
            unsigned r[4];
            ldmatrix_x4(r, shared_address(&tile[tile_offset(row, block * 16 + lane / 16 * 8)]));
            for (unsigned q = 0; q < 4; ++q) pass = pass * 31 + r[q];
        }
        sum += pass;
        pass_barrier();
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}
