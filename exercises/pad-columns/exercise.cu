// Exercise pad-columns (lesson 2: padding).
//
// A block of 32 warps copies a 32 x 32 tile of words into shared memory, row by row (warp w
// stores row w). Then warp w reads column w: lane l reads row l. In an unpadded tile the 32
// words of a column are 32 words apart, all in one bank.
//
// Your task: change the tile's declaration so that a column read takes one wavefront, using as
// little extra shared memory as you can. The code below reads and writes `tile[row][column]`.
// Only the lines between the two markers are yours; the rest must stay as it is.

#include "shared_load.cuh"

extern "C" __global__ void column_sums(const unsigned* words, unsigned* out, unsigned iterations) {
    // ---- EDIT BELOW ----
    __shared__ unsigned tile[32][32];
    // ---- EDIT ABOVE ----
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    tile[warp][lane] = words[blockIdx.x * 1024 + threadIdx.x];
    __syncthreads();
    unsigned sum = 0;
#pragma unroll 8
    for (unsigned i = 0; i < iterations; ++i) sum += load(&tile[lane][0], warp);
    out[blockIdx.x * 1024 + threadIdx.x] = sum;
}
