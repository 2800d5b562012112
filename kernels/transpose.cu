// Lesson 3: transpose.
//
// An n x n matrix of 4-byte elements (float-sized; the kernels move bits, so `unsigned`) is
// transposed by 32 x 32 tiles. Each block has 32 x 8 threads; each thread moves 4 elements,
// rows `threadIdx.y + 0, 8, 16, 24` of its tile. `n` must be a multiple of 32.

#define TILE 32
#define BLOCK_ROWS 8

// ANCHOR: copy
// The ceiling for any kernel of this shape: read and write the same tile, no transpose.
extern "C" __global__ void copy_tiles(const unsigned* __restrict__ in, unsigned* __restrict__ out, unsigned n) {
    const unsigned x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    for (unsigned j = 0; j < TILE; j += BLOCK_ROWS) out[(y + j) * n + x] = in[(y + j) * n + x];
}
// ANCHOR_END: copy

// ANCHOR: naive
// Reads rows (coalesced), writes columns: each warp's 32 stores go to 32 different rows.
extern "C" __global__ void transpose_naive(const unsigned* __restrict__ in, unsigned* __restrict__ out, unsigned n) {
    const unsigned x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    for (unsigned j = 0; j < TILE; j += BLOCK_ROWS) out[x * n + y + j] = in[(y + j) * n + x];
}
// ANCHOR_END: naive

// ANCHOR: tiled
// Reads a tile's rows into shared memory, then writes the transposed tile's rows: both global
// accesses are coalesced. The shared tile is read by columns: `tile[threadIdx.x][...]`.
template <unsigned PAD>
__device__ void transpose_tiled(const unsigned* __restrict__ in, unsigned* __restrict__ out, unsigned n) {
    __shared__ unsigned tile[TILE][TILE + PAD];
    unsigned x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    for (unsigned j = 0; j < TILE; j += BLOCK_ROWS) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * n + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (unsigned j = 0; j < TILE; j += BLOCK_ROWS) out[(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];
}

extern "C" __global__ void transpose_tile32(const unsigned* __restrict__ in, unsigned* __restrict__ out, unsigned n) {
    transpose_tiled<0>(in, out, n);
}
extern "C" __global__ void transpose_padded(const unsigned* __restrict__ in, unsigned* __restrict__ out, unsigned n) {
    transpose_tiled<1>(in, out, n);
}
// ANCHOR_END: tiled

// ANCHOR: swizzled
// The same tile with no padding: element (row, column) is stored at column `column ^ row`.
// A row still holds each column once (conflict-free writes), and a column's 32 elements now sit
// in 32 different banks (conflict-free reads), with no extra memory.
extern "C" __global__ void transpose_swizzled(const unsigned* __restrict__ in, unsigned* __restrict__ out, unsigned n) {
    __shared__ unsigned tile[TILE][TILE];
    unsigned x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    for (unsigned j = 0; j < TILE; j += BLOCK_ROWS) {
        const unsigned row = threadIdx.y + j;
        tile[row][threadIdx.x ^ row] = in[(y + j) * n + x];
    }
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (unsigned j = 0; j < TILE; j += BLOCK_ROWS) {
        const unsigned column = threadIdx.y + j;
        out[(y + j) * n + x] = tile[threadIdx.x][column ^ threadIdx.x];
    }
}
// ANCHOR_END: swizzled
