// Lesson 9: swizzling.
//
// A tile of 32 rows of 32 floats (4-byte words; the kernels move bits, so `unsigned`) is written
// by rows and read by columns of 16-byte vectors. A block has 256 threads, one per vector of the
// tile: thread t writes vector t % 8 of row t / 8, then warp w reads vector column w, lane l from
// row l, `iterations` times. The kernels differ only in where a vector is stored: the row pitch
// (32 floats, or 36 with a vector of padding) and the swizzle of the float offset. Every shared
// access goes through `load` and `store` (kernels/shared_load.cuh): one 16-byte LDS or STS each.

#define ROWS 32u     // rows of the tile
#define COLUMNS 32u  // floats of data in a row
#define VECTOR 4u    // floats in a 16-byte vector

#include "shared_load.cuh"
#include "swizzle.cuh"

// ANCHOR: column_of_vectors
// `Layout` maps a float offset `row * PITCH + column` to where the float is stored. It must keep
// the 4 floats of a vector together and in order, so that one 16-byte access moves them.
template <unsigned PITCH, typename Layout>
__device__ void column_of_vectors(const unsigned* words, unsigned* out, unsigned iterations) {
    static_assert(PITCH % VECTOR == 0, "a row must be a whole number of vectors, or its vectors are misaligned");
    __shared__ __align__(16) unsigned tile[ROWS * PITCH];
    uint4* vectors = reinterpret_cast<uint4*>(tile);
    const Layout layout{};
    // Row write: thread t stores its word in the 4 floats of vector t % 8 of row t / 8. A quarter-warp
    // writes one row, whatever the layout does within it.
    const unsigned row = threadIdx.x / (COLUMNS / VECTOR), vector = threadIdx.x % (COLUMNS / VECTOR);
    store(vectors, layout(row * PITCH + vector * VECTOR) / VECTOR, words[threadIdx.x]);
    __syncthreads();
    // Column read: lane l loads vector w of row l, w being the warp.
    const unsigned lane = threadIdx.x % 32, column = threadIdx.x / 32;
    const unsigned index = layout(lane * PITCH + column * VECTOR) / VECTOR;
    unsigned sum = 0;
#pragma unroll 8
    for (unsigned i = 0; i < iterations; ++i) sum += load(vectors, index);
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}
// ANCHOR_END: column_of_vectors

// ANCHOR: kernels
// Swizzle<0, M, S> changes nothing: the plain and the padded tile.
#define COLUMN_OF_VECTORS(NAME, PITCH, B, M, S)                                                              \
    extern "C" __global__ void NAME(const unsigned* words, unsigned* out, unsigned, unsigned iterations) {   \
        column_of_vectors<PITCH, Swizzle<B, M, S>>(words, out, iterations);                                 \
    }
COLUMN_OF_VECTORS(column_unswizzled, 32, 0, 0, 0)
COLUMN_OF_VECTORS(column_padded, 36, 0, 0, 0)
COLUMN_OF_VECTORS(column_swizzle_1_2_3, 32, 1, 2, 3)
COLUMN_OF_VECTORS(column_swizzle_2_2_3, 32, 2, 2, 3)
COLUMN_OF_VECTORS(column_swizzle_3_2_3, 32, 3, 2, 3)
// ANCHOR_END: kernels
