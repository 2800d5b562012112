// Lesson 6: reductions.
//
// Each block sums BLOCK words with a tree in shared memory, and every thread writes the block's
// sum. The two kernels do the same additions; they differ only in which thread adds which pair,
// and so in which lanes of a warp meet in a bank. Reads go through `load` (one 4-byte LDS each)
// so the compiler cannot merge a pair into one wider load and change what is measured.

#define BLOCK 512u

#include "shared_load.cuh"

// ANCHOR: interleaved
// Interleaved addressing: at step s = 1, 2, 4, ..., thread t adds word 2*s*t + s into word 2*s*t.
// Neighbouring lanes sit 2*s words apart, so they pile into ever fewer banks as s grows.
extern "C" __global__ void reduce_interleaved(const unsigned* words, unsigned* out, unsigned, unsigned) {
    __shared__ unsigned tile[BLOCK];
    fill_tile(tile, words + blockIdx.x * BLOCK, BLOCK);
    for (unsigned s = 1; s < BLOCK; s *= 2) {
        const unsigned index = 2 * s * threadIdx.x;
        if (index < BLOCK) tile[index] = load(tile, index) + load(tile, index + s);
        __syncthreads();
    }
    out[blockIdx.x * BLOCK + threadIdx.x] = load(tile, 0);
}
// ANCHOR_END: interleaved

// ANCHOR: sequential
// Sequential addressing: at step s = BLOCK/2, ..., 2, 1, thread t < s adds word t + s into word t.
// The active lanes of a warp read consecutive words: one wavefront per request at every step.
extern "C" __global__ void reduce_sequential(const unsigned* words, unsigned* out, unsigned, unsigned) {
    __shared__ unsigned tile[BLOCK];
    fill_tile(tile, words + blockIdx.x * BLOCK, BLOCK);
    for (unsigned s = BLOCK / 2; s > 0; s /= 2) {
        if (threadIdx.x < s) tile[threadIdx.x] = load(tile, threadIdx.x) + load(tile, threadIdx.x + s);
        __syncthreads();
    }
    out[blockIdx.x * BLOCK + threadIdx.x] = load(tile, 0);
}
// ANCHOR_END: sequential
