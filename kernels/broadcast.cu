// Lesson 8: broadcast and shuffle.
//
// Lanes that read the same word share it: a bank delivers a word to every lane that wants it in
// one wavefront. These kernels read shared words by many lanes at once (broadcast, multicast,
// table lookups), and compare a shared broadcast with spreading values through the warp with
// `__shfl_sync`. Every shared access goes through `load` and `store` (kernels/shared_load.cuh):
// one LDS or STS of exactly the element's width.

#define ROWS 8u               // independent loads per thread per iteration
#define MULTICAST_WORDS 1024u // words the multicast kernels fill: 32 rows of 32
#define VALUES 32u            // a vector every lane needs whole, and the table the chains follow
#define MAX_ENTRIES 1024u     // the largest lookup table
#define FULL_WARP 0xffffffffu

#include "shared_load.cuh"

// ANCHOR: lane_zero_load
// Lane 0 alone loads tile[index] (a request of one active lane), and a shuffle hands the value
// to every lane of the warp.
__device__ __forceinline__ unsigned load_by_lane_zero(const unsigned* tile, unsigned index) {
    unsigned value = 0;
    if (threadIdx.x % 32 == 0) value = load(tile, index);
    return __shfl_sync(FULL_WARP, value, 0);
}
// ANCHOR_END: lane_zero_load

// ANCHOR: multicast
// In row r, lane l reads word (l mod distinct) * STEP + r: `distinct` different words, each read
// by 32 / distinct lanes. STEP = 32 puts all of them in one bank, STEP = 1 in `distinct` banks.
template <unsigned STEP>
__device__ void multicast(const unsigned* words, unsigned* out, unsigned distinct, unsigned iterations) {
    __shared__ unsigned tile[MULTICAST_WORDS];
    fill_tile(tile, words, MULTICAST_WORDS);
    const unsigned lane = threadIdx.x % 32;
    unsigned index[ROWS];
#pragma unroll
    for (unsigned r = 0; r < ROWS; ++r) index[r] = lane % distinct * STEP + r;
    unsigned sum = 0;
    for (unsigned i = 0; i < iterations; ++i) {
#pragma unroll
        for (unsigned r = 0; r < ROWS; ++r) sum += load(tile, index[r]);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

extern "C" __global__ void multicast_one_bank(const unsigned* words, unsigned* out, unsigned distinct,
                                              unsigned iterations) {
    multicast<32>(words, out, distinct, iterations);
}
extern "C" __global__ void multicast_many_banks(const unsigned* words, unsigned* out, unsigned distinct,
                                                unsigned iterations) {
    multicast<1>(words, out, distinct, iterations);
}
// ANCHOR_END: multicast

// ANCHOR: one_address
// Every lane of the warp loads, or stores, element r in row r: one address per request. The
// stores write r + i into every 32-bit part, the same value from every lane; then each thread
// reads back element 0 (one load per warp).
template <typename Element>
__device__ void one_address_load(const unsigned* words, unsigned* out, unsigned iterations) {
    __shared__ __align__(16) unsigned tile[ROWS * 4];
    fill_tile(tile, words, ROWS * sizeof(Element) / 4);
    const Element* elements = reinterpret_cast<const Element*>(tile);
    unsigned sum = 0;
    for (unsigned i = 0; i < iterations; ++i) {
#pragma unroll
        for (unsigned r = 0; r < ROWS; ++r) sum += load(elements, r);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

template <typename Element>
__device__ void one_address_store(unsigned* out, unsigned iterations) {
    __shared__ __align__(16) unsigned tile[ROWS * 4];
    Element* elements = reinterpret_cast<Element*>(tile);
    for (unsigned i = 0; i < iterations; ++i) {
#pragma unroll
        for (unsigned r = 0; r < ROWS; ++r) store(elements, r, r + 1);
    }
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = load(elements, 0);
}
// ANCHOR_END: one_address

#define ONE_ADDRESS(BYTES, TYPE)                                                                             \
    extern "C" __global__ void one_address_load_##BYTES(const unsigned* words, unsigned* out, unsigned,       \
                                                        unsigned iterations) {                               \
        one_address_load<TYPE>(words, out, iterations);                                                      \
    }                                                                                                        \
    extern "C" __global__ void one_address_store_##BYTES(const unsigned*, unsigned* out, unsigned,            \
                                                         unsigned iterations) {                              \
        one_address_store<TYPE>(out, iterations);                                                            \
    }
ONE_ADDRESS(4, unsigned)
ONE_ADDRESS(8, uint2)
ONE_ADDRESS(16, uint4)

// ANCHOR: spread
// Throughput: every thread needs all VALUES words of a vector, as in a matrix-vector product,
// once per iteration. Three ways to hand them out.

// A shared broadcast: each value is one load that every lane of the warp makes.
extern "C" __global__ void spread_broadcast(const unsigned* words, unsigned* out, unsigned, unsigned iterations) {
    __shared__ unsigned vector[VALUES];
    fill_tile(vector, words, VALUES);
    unsigned sum = 0;
    for (unsigned i = 0; i < iterations; ++i) {
#pragma unroll
        for (unsigned k = 0; k < VALUES; ++k) sum += load(vector, k);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

// One lane reads, a shuffle spreads: lane 0 loads each value and __shfl_sync hands it to the warp.
extern "C" __global__ void spread_one_lane(const unsigned* words, unsigned* out, unsigned, unsigned iterations) {
    __shared__ unsigned vector[VALUES];
    fill_tile(vector, words, VALUES);
    unsigned sum = 0;
    for (unsigned i = 0; i < iterations; ++i) {
#pragma unroll
        for (unsigned k = 0; k < VALUES; ++k) sum += load_by_lane_zero(vector, k);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

// One lane per value: lane l loads value l, one conflict-free load for the whole vector, and
// VALUES shuffles hand each lane's value to the warp.
extern "C" __global__ void spread_lane_per_value(const unsigned* words, unsigned* out, unsigned,
                                                 unsigned iterations) {
    __shared__ unsigned vector[VALUES];
    fill_tile(vector, words, VALUES);
    const unsigned lane = threadIdx.x % 32;
    unsigned sum = 0;
    for (unsigned i = 0; i < iterations; ++i) {
        const unsigned mine = load(vector, lane);
#pragma unroll
        for (unsigned k = 0; k < VALUES; ++k) sum += __shfl_sync(FULL_WARP, mine, k);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}
// ANCHOR_END: spread

// ANCHOR: chain
// Latency: one warp follows a chain through a table of VALUES words, every lane at the same
// index, each step's index being the value the previous step found (modulo VALUES). The same
// three ways: a shared broadcast, lane 0 loading and a shuffle spreading, and the table held
// in registers, one entry per lane, read with a shuffle.
extern "C" __global__ void chain_broadcast(const unsigned* words, unsigned* out, unsigned, unsigned steps) {
    __shared__ unsigned table[VALUES];
    fill_tile(table, words, VALUES);
    unsigned index = 0;
    for (unsigned s = 0; s < steps; ++s) index = load(table, index) % VALUES;
    out[threadIdx.x] = index;
}

extern "C" __global__ void chain_one_lane(const unsigned* words, unsigned* out, unsigned, unsigned steps) {
    __shared__ unsigned table[VALUES];
    fill_tile(table, words, VALUES);
    unsigned index = 0;
    for (unsigned s = 0; s < steps; ++s) index = load_by_lane_zero(table, index) % VALUES;
    out[threadIdx.x] = index;
}

extern "C" __global__ void chain_lane_per_value(const unsigned* words, unsigned* out, unsigned, unsigned steps) {
    __shared__ unsigned table[VALUES];
    fill_tile(table, words, VALUES);
    const unsigned entry = load(table, threadIdx.x % 32);
    unsigned index = 0;
    for (unsigned s = 0; s < steps; ++s) index = __shfl_sync(FULL_WARP, entry, index) % VALUES;
    out[threadIdx.x] = index;
}
// ANCHOR_END: chain

// ANCHOR: lookup
// Table lookups: the block fills a table of `entries` words (a power of two) followed by the
// lookup indices, ROWS per lane. Each thread loads its indices once, then looks them up
// `iterations` times. Lanes that pick the same entry share it; entries in one bank conflict.
extern "C" __global__ void lookup_shared(const unsigned* words, unsigned* out, unsigned entries,
                                         unsigned iterations) {
    __shared__ unsigned tile[MAX_ENTRIES + 32 * ROWS];
    fill_tile(tile, words, entries + 32 * ROWS);
    const unsigned lane = threadIdx.x % 32;
    unsigned index[ROWS];
#pragma unroll
    for (unsigned r = 0; r < ROWS; ++r) index[r] = load(tile, entries + lane + 32 * r) & (entries - 1);
    unsigned sum = 0;
    for (unsigned i = 0; i < iterations; ++i) {
#pragma unroll
        for (unsigned r = 0; r < ROWS; ++r) sum += load(tile, index[r]);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

// A table of 32 entries fits in the warp's registers, one entry per lane: a lookup is a shuffle.
extern "C" __global__ void lookup_shuffle(const unsigned* words, unsigned* out, unsigned, unsigned iterations) {
    __shared__ unsigned tile[32 + 32 * ROWS];
    fill_tile(tile, words, 32 + 32 * ROWS);
    const unsigned lane = threadIdx.x % 32, entry = load(tile, lane);
    unsigned index[ROWS];
#pragma unroll
    for (unsigned r = 0; r < ROWS; ++r) index[r] = load(tile, 32 + lane + 32 * r) % 32;
    unsigned sum = 0;
    for (unsigned i = 0; i < iterations; ++i) {
#pragma unroll
        for (unsigned r = 0; r < ROWS; ++r) sum += __shfl_sync(FULL_WARP, entry, index[r]);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}
// ANCHOR_END: lookup
