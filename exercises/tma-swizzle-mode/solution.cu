// Exercise tma-swizzle-mode (lesson 15: the TMA's swizzle modes).
//
// One thread of a block of 4 warps asks the TMA to copy a box of 64 rows of 32 halves (64 bytes
// a row) into shared memory, in the swizzle mode TILE_SWIZZLE_BYTES names. Then each warp reads
// its 16 rows as an mma's A operand would: one ldmatrix.x4 per 16 x 16 block, lane l giving the
// address of row l % 16, 16-byte chunk l / 16 of the block, `iterations` times. Byte `byte` of
// box row `row` is read at byte `tile_offset(row, byte)` of the tile. As written, with no
// swizzle, the eight rows of each 8 x 8 matrix are 64 bytes apart: they fall in two groups of
// four banks.
//
// Your task: choose the swizzle mode, and say where the TMA puts each 16-byte chunk in it, so that
// an ldmatrix.x4 takes 4 wavefronts (one per matrix, the least it can take) without the tile
// taking more than the box's 64 x 64 bytes of shared memory.
// Only the lines between the two markers are yours; the rest must stay as it is.

#include "tma.cuh"

#define BOX_ROWS 64u   // rows of the box
#define ROW_BYTES 64u  // bytes of a box row: 32 halves, four 16-byte chunks

// ---- EDIT BELOW ----
// The swizzle mode, as the span it swizzles within, in bytes: 0 (none), 32, 64 or 128.
#define TILE_SWIZZLE_BYTES 64
// The shared memory the box takes in that mode: 64 rows, each a box row or the span, whichever
// is wider.
#define TILE_BYTES (BOX_ROWS * ROW_BYTES)
// Where the TMA put byte `byte` (a multiple of 16: a chunk's first byte) of box row `row`, in
// bytes from the tile's start.
__device__ __forceinline__ unsigned tile_offset(unsigned row, unsigned byte) {
    // 64B: CuTe's Swizzle<2, 4, 3> on byte offsets, bits 7 and 8 (the pair of rows' 128-byte
    // line, mod 4) XORed into bits 4 and 5 (the chunk): rows 2k and 2k + 1 share a line, and the
    // four lines of eight rows put their chunk in four different places (lesson 15's tma_offset).
    const unsigned offset = row * ROW_BYTES + byte;
    return offset ^ ((offset >> 3) & 0x30);
}
// ---- EDIT ABOVE ----

static_assert(TILE_SWIZZLE_BYTES == 0 || TILE_SWIZZLE_BYTES == 32 || TILE_SWIZZLE_BYTES == 64 ||
                  TILE_SWIZZLE_BYTES == 128,
              "TILE_SWIZZLE_BYTES must be 0 (no swizzle), 32, 64 or 128");
static_assert(TILE_SWIZZLE_BYTES == 0 || TILE_SWIZZLE_BYTES >= ROW_BYTES,
              "the TMA refuses a swizzle span narrower than a box row (64 bytes)");
static_assert(TILE_BYTES >= BOX_ROWS * (TILE_SWIZZLE_BYTES > ROW_BYTES ? TILE_SWIZZLE_BYTES : ROW_BYTES),
              "TILE_BYTES is less than the TMA writes: 64 rows of a box row or the span, whichever is wider");

// The harness's tensor maps of the input, one per mode in the order NONE, 32B, 64B, 128B (a mode
// the box cannot use is left zero; the assertions above keep it from being chosen).
struct SwizzleMaps {
    TensorMap by_swizzle[4];
};
#define CHOSEN_MAP (TILE_SWIZZLE_BYTES == 0 ? 0 : TILE_SWIZZLE_BYTES == 32 ? 1 : TILE_SWIZZLE_BYTES == 64 ? 2 : 3)

extern "C" __global__ void tma_tile_sums(const __grid_constant__ SwizzleMaps maps, unsigned* out, unsigned iterations) {
    __shared__ __align__(1024) unsigned char tile[TILE_BYTES];
    __shared__ __align__(8) unsigned long long barrier_word;
    const unsigned barrier = shared_address(&barrier_word), base = shared_address(tile);
    if (threadIdx.x == 0) barrier_init(barrier);
    __syncthreads();
    // Block b's box: rows 64b to 64b + 63 of the input.
    const int first_row = static_cast<int>(blockIdx.x * BOX_ROWS);
    if (threadIdx.x == 0) tma_load_box(base, maps.by_swizzle[CHOSEN_MAP], 0, first_row, barrier, BOX_ROWS * ROW_BYTES);
    barrier_wait(barrier, 0);
    // A-operand reads: warp w takes rows 16w to 16w + 15, one 16 x 16 block of them at a time.
    const unsigned lane = threadIdx.x % 32, row = threadIdx.x / 32 * 16 + lane % 16;
    unsigned sum = 0;
    for (unsigned i = 0; i < iterations; ++i) {
        // The pass's fragments, hashed in order: a chunk read from the wrong place changes it.
        unsigned pass = 0;
        for (unsigned block = 0; block < ROW_BYTES / 32; ++block) {
            unsigned r[4];
            ldmatrix_x4(r, base + tile_offset(row, block * 32 + lane / 16 * 16));
            for (unsigned q = 0; q < 4; ++q) pass = pass * 31 + r[q];
        }
        sum += pass;
        pass_barrier();
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}
