// Lesson 11: scans.
//
// Each block computes the exclusive prefix sum of its WORDS words with the work-efficient
// (Blelloch) scan in shared memory: an up-sweep that builds partial sums up a tree, then a
// down-sweep that turns them into the scan. The three kernels do the same additions on the same
// words; they differ only in where word i of the scan is kept in the tile, `Layout::at(i)`, and
// so in which banks a warp's lanes meet. Every shared access goes through `load` and `store`
// (exactly one 4-byte LDS or STS each), so the compiler cannot merge neighbours into wider ones.

#define WORDS 2048u              // words each block scans
#define THREADS (WORDS / 2)      // threads per block: each owns two words
#define LOG_BANKS 5u             // 32 banks

#include "shared_load.cuh"

// ANCHOR: layouts
// Where word i of the scan lives in the tile.
struct NoOffset {
    __host__ __device__ static constexpr unsigned at(unsigned i) { return i; }
};
// GPU Gems 3's CONFLICT_FREE_OFFSET for 32 banks: one word of padding after every 32.
struct Offset {
    __host__ __device__ static constexpr unsigned at(unsigned i) { return i + (i >> LOG_BANKS); }
};
// The two-level form: one more word after every 32 * 32.
struct TwoLevelOffset {
    __host__ __device__ static constexpr unsigned at(unsigned i) {
        return i + (i >> LOG_BANKS) + (i >> (2 * LOG_BANKS));
    }
};
// ANCHOR_END: layouts

// ANCHOR: scan
template <typename Layout>
__device__ void exclusive_scan(const unsigned* words, unsigned* out) {
    __shared__ unsigned tile[Layout::at(WORDS - 1) + 1];
    const unsigned t = threadIdx.x;
    words += blockIdx.x * WORDS;
    out += blockIdx.x * WORDS;
    store(tile, Layout::at(t), words[t]);
    store(tile, Layout::at(t + THREADS), words[t + THREADS]);
    // Up-sweep: at offset 1, 2, 4, ..., thread t < active adds word a into word b, offset apart.
    unsigned offset = 1;
    for (unsigned active = WORDS / 2; active > 0; active /= 2) {
        __syncthreads();
        if (t < active) {
            const unsigned a = Layout::at(offset * (2 * t + 1) - 1), b = Layout::at(offset * (2 * t + 2) - 1);
            store(tile, b, load(tile, a) + load(tile, b));
        }
        offset *= 2;
    }
    // The root holds the total; the exclusive scan starts from 0.
    if (t == 0) store(tile, Layout::at(WORDS - 1), 0u);
    // Down-sweep: the same pairs in reverse order; b passes its prefix to a and adds a's sum.
    for (unsigned active = 1; active < WORDS; active *= 2) {
        offset /= 2;
        __syncthreads();
        if (t < active) {
            const unsigned a = Layout::at(offset * (2 * t + 1) - 1), b = Layout::at(offset * (2 * t + 2) - 1);
            const unsigned left = load(tile, a), right = load(tile, b);
            store(tile, a, right);
            store(tile, b, left + right);
        }
    }
    __syncthreads();
    out[t] = load(tile, Layout::at(t));
    out[t + THREADS] = load(tile, Layout::at(t + THREADS));
}

// Blocks of 1024 threads: the bound keeps registers within what such a block may use.
extern "C" __global__ void __launch_bounds__(THREADS) scan_no_offset(const unsigned* words, unsigned* out) {
    exclusive_scan<NoOffset>(words, out);
}
extern "C" __global__ void __launch_bounds__(THREADS) scan_offset(const unsigned* words, unsigned* out) {
    exclusive_scan<Offset>(words, out);
}
extern "C" __global__ void __launch_bounds__(THREADS) scan_two_level_offset(const unsigned* words, unsigned* out) {
    exclusive_scan<TwoLevelOffset>(words, out);
}
// ANCHOR_END: scan
