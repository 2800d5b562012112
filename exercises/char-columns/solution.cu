// Exercise char-columns (lesson 2: padding, one-byte elements).
//
// The same column read as pad-columns, on a tile of 32 rows of 128 one-byte elements. A block of
// 32 warps copies the tile into shared memory byte by byte; then warp w reads columns w, w + 32,
// w + 64 and w + 96, lane l reading row l. The tile below is padded by one element per row, the
// usual advice for a 32-way column conflict.
//
// Your task: find the padding that makes every column read take one wavefront, using as little
// extra shared memory as you can. The code below reads and writes `tile[row][column]`.
// Only the lines between the two markers are yours; the rest must stay as it is.

#include "shared_load.cuh"

#define ROWS 32u
#define COLUMNS 128u

extern "C" __global__ void char_column_sums(const unsigned* words, unsigned* out, unsigned iterations) {
    // ---- EDIT BELOW ----
    // A row must be an odd number of whole words: 132 bytes = 33 words, so row l starts in bank l.
    // (129 bytes is not a whole number of words: four rows start in each bank, 4 wavefronts.)
    __shared__ unsigned char tile[32][132];
    // ---- EDIT ABOVE ----
    const unsigned char* bytes = reinterpret_cast<const unsigned char*>(words) + blockIdx.x * ROWS * COLUMNS;
    for (unsigned i = threadIdx.x; i < ROWS * COLUMNS; i += blockDim.x) tile[i / COLUMNS][i % COLUMNS] = bytes[i];
    __syncthreads();
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    unsigned sum = 0;
    for (unsigned i = 0; i < iterations; ++i) {
#pragma unroll
        for (unsigned j = 0; j < COLUMNS / 32; ++j) sum += load(&tile[lane][0], warp + 32 * j);
    }
    out[blockIdx.x * 1024 + threadIdx.x] = sum;
}
