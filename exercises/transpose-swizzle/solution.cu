// Exercise transpose-swizzle (lesson 3: transpose).
//
// An n x n matrix is transposed through a 32 x 32 shared tile: each block of 32 x 8 threads
// stores a tile's rows (lanes = columns), then loads its columns (lanes = rows) to write the
// transposed tile's rows. Element (row, column) of the tile lives at `tile[slot(row, column)]`;
// as written, a column's 32 elements are 32 words apart, all in one bank.
//
// Your task: change `slot` so that both the row stores and the column loads take one wavefront,
// without using more than 32 x 32 words of shared memory (no padding).
// Only the lines between the two markers are yours; the rest must stay as it is.

#define TILE 32u
#define BLOCK_ROWS 8u

// ---- EDIT BELOW ----
// Where element (row, column) of the tile is kept: each of the 32 x 32 elements needs a slot of
// its own, 0 <= slot < TILE_WORDS.
#define TILE_WORDS (TILE * TILE)
__device__ __forceinline__ unsigned slot(unsigned row, unsigned column) {
    // XOR swizzle: a row still holds each column once, and column c of row r sits in bank c ^ r,
    // different for each of the 32 rows.
    return row * TILE + (column ^ row);
}
// ---- EDIT ABOVE ----

extern "C" __global__ void transpose(const unsigned* __restrict__ in, unsigned* __restrict__ out, unsigned n) {
    __shared__ unsigned tile[TILE_WORDS];
    unsigned x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    for (unsigned j = 0; j < TILE; j += BLOCK_ROWS) tile[slot(threadIdx.y + j, threadIdx.x)] = in[(y + j) * n + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (unsigned j = 0; j < TILE; j += BLOCK_ROWS) out[(y + j) * n + x] = tile[slot(threadIdx.x, threadIdx.y + j)];
}
