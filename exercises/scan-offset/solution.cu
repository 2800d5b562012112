// Exercise scan-offset (lesson 11: scans).
//
// Each block of 1024 threads computes the exclusive prefix sums of its own 2048 words with the
// work-efficient (Blelloch) scan in shared memory: an up-sweep that builds partial sums up a tree,
// then a down-sweep that turns them into the scan. At offset o = 1, 2, 4, ..., thread t works on
// words a = o(2t + 1) - 1 and b = o(2t + 2) - 1, so a warp's lanes are 2o words apart. Word i of
// the scan is kept at `tile[at(i)]`; as written at(i) = i, and those strides put up to 32 lanes
// of a warp in one bank.
//
// Your task: change `at` (and the tile's size, TILE_WORDS) so that the scan's shared loads and
// stores each take at most 1.06 wavefronts per request, on average over the whole kernel.
// Only the lines between the two markers are yours; the rest must stay as it is.

#include "shared_load.cuh"

#define WORDS 2048u          // words each block scans
#define THREADS (WORDS / 2)  // threads per block: each owns two words

// ---- EDIT BELOW ----
// Where word i of the scan (0 <= i < WORDS) is kept: each word needs a place of its own,
// 0 <= at(i) < TILE_WORDS.
// GPU Gems 3's CONFLICT_FREE_OFFSET for 32 banks: one word of padding after every 32, so each
// row of 32 words starts one bank further on. It leaves 2-way conflicts at offsets 32 to 512, one
// warp each (1.06 wavefronts per request); adding i >> 10 as well removes them (1).
#define TILE_WORDS (WORDS + WORDS / 32)
__device__ __forceinline__ unsigned at(unsigned i) {
    return i + (i >> 5);
}
// ---- EDIT ABOVE ----

// Every shared access goes through `load` and `store` (kernels/shared_load.cuh): one 4-byte LDS or
// STS each. Blocks of 1024 threads: the bound keeps registers within what such a block may use.
extern "C" __global__ void __launch_bounds__(THREADS) block_scan(const unsigned* words, unsigned* out, unsigned n) {
    __shared__ unsigned tile[TILE_WORDS];
    // n is the number of words in all: one block per WORDS of them.
    if ((blockIdx.x + 1) * WORDS > n) return;
    const unsigned t = threadIdx.x;
    words += blockIdx.x * WORDS;
    out += blockIdx.x * WORDS;
    store(tile, at(t), words[t]);
    store(tile, at(t + THREADS), words[t + THREADS]);
    // Up-sweep: at offset 1, 2, 4, ..., thread t < active adds word a into word b, offset apart.
    unsigned offset = 1;
    for (unsigned active = WORDS / 2; active > 0; active /= 2) {
        __syncthreads();
        if (t < active) {
            const unsigned a = at(offset * (2 * t + 1) - 1), b = at(offset * (2 * t + 2) - 1);
            store(tile, b, load(tile, a) + load(tile, b));
        }
        offset *= 2;
    }
    // The root holds the total; the exclusive scan starts from 0.
    if (t == 0) store(tile, at(WORDS - 1), 0u);
    // Down-sweep: the same pairs in reverse order; b passes its prefix to a and adds a's sum.
    for (unsigned active = 1; active < WORDS; active *= 2) {
        offset /= 2;
        __syncthreads();
        if (t < active) {
            const unsigned a = at(offset * (2 * t + 1) - 1), b = at(offset * (2 * t + 2) - 1);
            const unsigned left = load(tile, a), right = load(tile, b);
            store(tile, a, right);
            store(tile, b, left + right);
        }
    }
    __syncthreads();
    out[t] = load(tile, at(t));
    out[t + THREADS] = load(tile, at(t + THREADS));
}
