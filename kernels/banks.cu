// Lesson 1: banks and strides.
//
// Each warp reads a shared-memory tile with a stride: lane `l` of row `r` reads element
// `(l + 32 * r) * stride` (wrapped to the tile). Every row is one warp-wide request with the
// same bank pattern as row 0, so the model's prediction for `lane * stride` holds for all of them.

#define TILE_BYTES 32768u  // 32 KiB of shared memory per block
#define ROWS 8u            // independent requests in flight per thread

#include "shared_load.cuh"

// ANCHOR: stride_read
// Throughput: many warps, ROWS independent loads per thread per iteration. The SM's load/store
// unit is the bottleneck, so time grows with wavefronts per request.
template <typename Word>
__device__ void stride_read(const unsigned* words, unsigned* out, unsigned stride, unsigned iterations) {
    __shared__ __align__(16) unsigned tile[TILE_BYTES / 4];
    fill_tile(tile, words, TILE_BYTES / 4);
    const Word* elements = reinterpret_cast<const Word*>(tile);
    const unsigned mask = TILE_BYTES / sizeof(Word) - 1;
    const unsigned lane = threadIdx.x % 32;
    unsigned index[ROWS];
#pragma unroll
    for (unsigned r = 0; r < ROWS; ++r) index[r] = ((lane + 32 * r) * stride) & mask;
    unsigned sum = 0;
    for (unsigned i = 0; i < iterations; ++i) {
#pragma unroll
        for (unsigned r = 0; r < ROWS; ++r) sum += load(elements, index[r]);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

extern "C" __global__ void stride_read_4(const unsigned* words, unsigned* out, unsigned stride, unsigned iterations) {
    stride_read<unsigned>(words, out, stride, iterations);
}
extern "C" __global__ void stride_read_8(const unsigned* words, unsigned* out, unsigned stride, unsigned iterations) {
    stride_read<uint2>(words, out, stride, iterations);
}
extern "C" __global__ void stride_read_16(const unsigned* words, unsigned* out, unsigned stride, unsigned iterations) {
    stride_read<uint4>(words, out, stride, iterations);
}
// ANCHOR_END: stride_read

// ANCHOR: stride_chain
// Latency: one warp follows a chain, each load's address coming from the previous load. The
// host fills the tile so that `tile[i] = (i + 32 * stride) mod words`: step `s` of lane `l`
// reads element `(l + 32 * s) * stride`, the same bank pattern at every step.
extern "C" __global__ void stride_chain(const unsigned* words, unsigned* out, unsigned stride, unsigned steps) {
    __shared__ __align__(16) unsigned tile[TILE_BYTES / 4];
    fill_tile(tile, words, TILE_BYTES / 4);
    unsigned index = (threadIdx.x * stride) & (TILE_BYTES / 4 - 1);
    for (unsigned s = 0; s < steps; ++s) index = load(tile, index);
    out[threadIdx.x] = index;
}
// ANCHOR_END: stride_chain
