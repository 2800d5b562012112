// Lesson 2: padding.
//
// A tile of 32 rows, each `pitch` elements long (32 + padding), is filled row by row, then every
// warp reads one column: lane `l` reads `tile[l][column]`. Column reads are where an unpadded
// tile conflicts; the pitch decides which banks the 32 rows start in.

#define ROWS 32u
#define MAX_TILE_BYTES 32768u  // 32 rows of up to 64 16-byte elements

#include "shared_load.cuh"

// ANCHOR: column_read
// Fill: the block copies `ROWS * pitch` elements row by row (padding included), 4 bytes per
// store. Read: warp `w` reads column `w % 32`, lane `l` reading row `l`, `iterations` times.
template <typename Element>
__device__ void column_read(const unsigned* words, unsigned* out, unsigned pitch, unsigned iterations) {
    __shared__ __align__(16) unsigned tile_words[MAX_TILE_BYTES / 4];
    fill_tile(tile_words, words, ROWS * pitch * sizeof(Element) / 4);
    const Element* tile = reinterpret_cast<const Element*>(tile_words);
    const unsigned lane = threadIdx.x % 32, column = (threadIdx.x / 32) % 32;
    const unsigned index = lane * pitch + column;
    unsigned sum = 0;
#pragma unroll 8
    for (unsigned i = 0; i < iterations; ++i) sum += load(tile, index);
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}
// ANCHOR_END: column_read

#define COLUMN_READ(NAME, TYPE)                                                                          \
    extern "C" __global__ void NAME(const unsigned* words, unsigned* out, unsigned pitch, unsigned iterations) { \
        column_read<TYPE>(words, out, pitch, iterations);                                                 \
    }
COLUMN_READ(column_read_1, unsigned char)
COLUMN_READ(column_read_2, unsigned short)
COLUMN_READ(column_read_4, unsigned)
COLUMN_READ(column_read_8, uint2)
COLUMN_READ(column_read_16, uint4)
