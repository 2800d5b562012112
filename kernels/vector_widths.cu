// Lesson 7: vector widths and data types.
//
// Three families of kernels, each of the course's `(words, out, a, b)` shape: wide loads and
// stores of 4, 8 and 16 bytes; a tile of floats read by columns as float, float2 or float4; and
// threads that read their own bytes in pieces of 1 to 16 bytes. Every shared access goes through
// `load` and `store` (kernels/shared_load.cuh): one LDS or STS of exactly the element's width.

#define TILE_BYTES 32768u  // wide kernels: 32 KiB of shared memory per block
#define ROWS 8u            // independent accesses per thread per iteration
#define TILE_ROWS 32u      // rows of the float tile read by columns
#define MAX_PITCH 40u      // words per row of that tile, at most

#include "shared_load.cuh"

// ANCHOR: wide_indices
// Row r of lane l touches element ((l + 32 r) / share) * stride, wrapped to the tile. With
// share = 1 that is chapter 1's strided pattern; with share = 16 (8-byte elements) or 8 (16-byte
// elements) every half- or quarter-warp touches a single element.
template <typename Element>
__device__ __forceinline__ void wide_indices(unsigned (&index)[ROWS], unsigned stride, unsigned share) {
    const unsigned mask = TILE_BYTES / sizeof(Element) - 1, lane = threadIdx.x % 32;
#pragma unroll
    for (unsigned r = 0; r < ROWS; ++r) index[r] = ((lane + 32 * r) / share * stride) & mask;
}
// ANCHOR_END: wide_indices

// ANCHOR: wide_access
// Loads: the block fills the tile, then each thread reads ROWS elements per iteration.
template <typename Element>
__device__ void wide_load(const unsigned* words, unsigned* out, unsigned stride, unsigned share, unsigned iterations) {
    __shared__ __align__(16) unsigned tile[TILE_BYTES / 4];
    fill_tile(tile, words, TILE_BYTES / 4);
    const Element* elements = reinterpret_cast<const Element*>(tile);
    unsigned index[ROWS];
    wide_indices<Element>(index, stride, share);
    unsigned sum = 0;
    for (unsigned i = 0; i < iterations; ++i) {
#pragma unroll
        for (unsigned r = 0; r < ROWS; ++r) sum += load(elements, index[r]);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

// Stores: each thread writes ROWS elements per iteration, every 32-bit part of element e getting
// e + 1 in every iteration, so no two writes of one element differ (a value that changed with the
// iteration would race between warps) and the result does not depend on their order. Then each
// thread reads back its row-0 element: one load per warp.
template <typename Element>
__device__ void wide_store(unsigned* out, unsigned stride, unsigned share, unsigned iterations) {
    __shared__ __align__(16) unsigned tile[TILE_BYTES / 4];
    Element* elements = reinterpret_cast<Element*>(tile);
    unsigned index[ROWS];
    wide_indices<Element>(index, stride, share);
    for (unsigned i = 0; i < iterations; ++i) {
#pragma unroll
        for (unsigned r = 0; r < ROWS; ++r) store(elements, index[r], index[r] + 1);
    }
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = load(elements, index[0]);
}
// ANCHOR_END: wide_access

// `wide_*`: lane l of row r touches element (l + 32 r) * stride. `group_*`: element (l + 32 r) / share.
#define WIDE(BYTES, TYPE)                                                                                    \
    extern "C" __global__ void wide_load_##BYTES(const unsigned* words, unsigned* out, unsigned stride,       \
                                                 unsigned iterations) {                                      \
        wide_load<TYPE>(words, out, stride, 1, iterations);                                                  \
    }                                                                                                        \
    extern "C" __global__ void wide_store_##BYTES(const unsigned*, unsigned* out, unsigned stride,            \
                                                  unsigned iterations) {                                     \
        wide_store<TYPE>(out, stride, 1, iterations);                                                        \
    }
#define GROUP(BYTES, TYPE)                                                                                   \
    extern "C" __global__ void group_load_##BYTES(const unsigned* words, unsigned* out, unsigned share,       \
                                                  unsigned iterations) {                                     \
        wide_load<TYPE>(words, out, 1, share, iterations);                                                   \
    }                                                                                                        \
    extern "C" __global__ void group_store_##BYTES(const unsigned*, unsigned* out, unsigned share,            \
                                                   unsigned iterations) {                                    \
        wide_store<TYPE>(out, 1, share, iterations);                                                         \
    }
WIDE(4, unsigned)
WIDE(8, uint2)
WIDE(16, uint4)
GROUP(8, uint2)
GROUP(16, uint4)

// ANCHOR: tile_column
// A tile of TILE_ROWS rows of `pitch` floats, read by columns as `Element` (float, float2 or
// float4): a row holds 128 / sizeof(Element) such columns, warp w reads column w modulo that,
// lane l reading row l, `iterations` times. A row must be a whole number of elements.
template <typename Element>
__device__ void tile_column(const unsigned* words, unsigned* out, unsigned pitch, unsigned iterations) {
    __shared__ __align__(16) unsigned tile[TILE_ROWS * MAX_PITCH];
    fill_tile(tile, words, TILE_ROWS * pitch);
    const Element* elements = reinterpret_cast<const Element*>(tile);
    const unsigned lane = threadIdx.x % 32, column = (threadIdx.x / 32) % (128 / sizeof(Element));
    const unsigned index = lane * (pitch * 4 / sizeof(Element)) + column;
    unsigned sum = 0;
#pragma unroll 8
    for (unsigned i = 0; i < iterations; ++i) sum += load(elements, index);
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}
// ANCHOR_END: tile_column

#define TILE_COLUMN(BYTES, TYPE)                                                                             \
    extern "C" __global__ void tile_column_##BYTES(const unsigned* words, unsigned* out, unsigned pitch,      \
                                                   unsigned iterations) {                                    \
        tile_column<TYPE>(words, out, pitch, iterations);                                                    \
    }
TILE_COLUMN(4, unsigned)
TILE_COLUMN(8, uint2)
TILE_COLUMN(16, uint4)

// ANCHOR: chunk_read
// Each thread owns CHUNK consecutive bytes per row, chunk l + 32 r of the tile, and reads them
// as CHUNK / sizeof(Element) loads of Element: bytes, halves, words, or all at once.
template <unsigned CHUNK, typename Element>
__device__ void chunk_read(const unsigned* words, unsigned* out, unsigned iterations) {
    __shared__ __align__(16) unsigned tile[32 * ROWS * CHUNK / 4];
    fill_tile(tile, words, 32 * ROWS * CHUNK / 4);
    const Element* elements = reinterpret_cast<const Element*>(tile);
    const unsigned parts = CHUNK / sizeof(Element), lane = threadIdx.x % 32;
    unsigned sum = 0;
    for (unsigned i = 0; i < iterations; ++i) {
#pragma unroll
        for (unsigned r = 0; r < ROWS; ++r) {
#pragma unroll
            for (unsigned k = 0; k < parts; ++k) sum += load(elements, (lane + 32 * r) * parts + k);
        }
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}
// ANCHOR_END: chunk_read

#define CHUNK_READ(CHUNK, BYTES, TYPE)                                                                       \
    extern "C" __global__ void chunk_##CHUNK##_##BYTES(const unsigned* words, unsigned* out, unsigned,        \
                                                       unsigned iterations) {                                \
        chunk_read<CHUNK, TYPE>(words, out, iterations);                                                     \
    }
CHUNK_READ(4, 1, unsigned char)
CHUNK_READ(4, 2, unsigned short)
CHUNK_READ(4, 4, unsigned)
CHUNK_READ(16, 1, unsigned char)
CHUNK_READ(16, 2, unsigned short)
CHUNK_READ(16, 4, unsigned)
CHUNK_READ(16, 8, uint2)
CHUNK_READ(16, 16, uint4)
