// Exercise row-sums (lesson 1: banks and strides).
//
// A block copies 256 rows of 32 words into shared memory; thread `row` then sums its own row,
// `iterations` times over. As written, step k of every thread reads word k of its row: the 32
// lanes of a warp read addresses 32 words apart, all in one bank.
//
// Your task: change the order in which a thread visits its row so that, at every step, the 32
// lanes of a warp read 32 different banks. Every word of the row must still be read once per pass.
// Only the lines between the two markers are yours; the rest must stay as it is.

#include "shared_load.cuh"

#define ROW_WORDS 32u  // words per row
#define ROWS 256u      // rows per block: one per thread

// ---- EDIT BELOW ----
// The word of its row that thread `row` reads at step `k` (k = 0, 1, ..., 31).
__device__ __forceinline__ unsigned column_at(unsigned row, unsigned k) {
    // Start each row at a different word: lane l reads bank (l + k) mod 32 at step k.
    return (row + k) % ROW_WORDS;
}
// ---- EDIT ABOVE ----

extern "C" __global__ void row_sums(const unsigned* words, unsigned* out, unsigned iterations) {
    __shared__ __align__(16) unsigned tile[ROWS * ROW_WORDS];
    fill_tile(tile, words + blockIdx.x * ROWS * ROW_WORDS, ROWS * ROW_WORDS);
    const unsigned row = threadIdx.x;
    unsigned sum = 0;
    for (unsigned i = 0; i < iterations; ++i) {
#pragma unroll
        for (unsigned k = 0; k < ROW_WORDS; ++k) sum += load(tile, row * ROW_WORDS + column_at(row, k));
    }
    out[blockIdx.x * ROWS + row] = sum;
}
