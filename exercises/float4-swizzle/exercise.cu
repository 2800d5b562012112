// Exercise float4-swizzle (lesson 9: swizzling).
//
// A block of 8 warps copies a tile of 32 rows of 32 floats (8 vectors of 16 bytes per row) into
// shared memory, one vector per thread, row by row. Then warp w reads vector column w: lane l
// loads vector w of row l with one 16-byte load, `iterations` times. Vector v of row r lives at
// `tile[slot(r, v)]`; as written, a column's 32 vectors are 128 bytes apart, all in the same four
// banks.
//
// Your task: change `slot` so that a column read takes 4 wavefronts (the least a warp's 512 bytes
// can take) and a row copy still takes 4, without using more than 32 x 8 vectors of shared
// memory (no padding).
// Only the lines between the two markers are yours; the rest must stay as it is.

#include "shared_load.cuh"

#define ROWS 32u    // rows of the tile
#define VECTORS 8u  // 16-byte vectors (4 floats) per row

// ---- EDIT BELOW ----
// Where vector `vector` (0..7) of row `row` (0..31) is kept: each of the 32 x 8 vectors needs a
// slot of its own, 0 <= slot < TILE_VECTORS.
#define TILE_VECTORS (ROWS * VECTORS)
__device__ __forceinline__ unsigned slot(unsigned row, unsigned vector) {
    return row * VECTORS + vector;
}
// ---- EDIT ABOVE ----

extern "C" __global__ void vector_column_sums(const unsigned* words, unsigned* out, unsigned iterations) {
    __shared__ uint4 tile[TILE_VECTORS];
    const uint4* vectors = reinterpret_cast<const uint4*>(words) + blockIdx.x * ROWS * VECTORS;
    // Row copy: thread t stores vector t % 8 of row t / 8; a warp stores four whole rows.
    tile[slot(threadIdx.x / VECTORS, threadIdx.x % VECTORS)] = vectors[threadIdx.x];
    __syncthreads();
    // Column read: lane l loads vector w of row l, w being the warp.
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const unsigned index = slot(lane, warp);
    unsigned sum = 0;
#pragma unroll 8
    for (unsigned i = 0; i < iterations; ++i) sum += load(tile, index);
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}
