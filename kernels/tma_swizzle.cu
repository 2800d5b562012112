// Lesson 15: Hopper's tensor memory accelerator (TMA). One thread asks it to copy a box of a
// row-major matrix (64 rows of WIDTH bytes) into shared memory with cp.async.bulk.tensor; an
// mbarrier counts the bytes in. The tensor map (cuTensorMapEncodeTiled on the host) names the
// swizzle: NONE, 32B, 64B or 128B. The kernels read where the box landed, read it with
// ldmatrix as an mma A operand would, and stream boxes to time the TMA itself.

#include "tma.cuh"

#define BOX_ROWS 64u

// ANCHOR: swizzle_modes
// Where the TMA puts byte `column` of box row `row`, the shared tile starting on a 1024-byte
// boundary (measured: lesson 15). A row takes `width` bytes, or the swizzle's span if that is
// wider; then CuTe's Swizzle<B, 4, 3> on the byte offset, B = 3, 2, 1 for 128B, 64B, 32B: bits 7
// to 6 + B of the offset (its 128-byte line) XORed into bits 4 to 3 + B (its 16-byte column).
__device__ __forceinline__ unsigned tma_row_pitch(unsigned width, unsigned swizzle_bytes) {
    return width > swizzle_bytes ? width : swizzle_bytes;
}
__device__ __forceinline__ unsigned tma_offset(unsigned row, unsigned column, unsigned width, unsigned swizzle_bytes) {
    const unsigned offset = row * tma_row_pitch(width, swizzle_bytes) + column;
    const unsigned bits = swizzle_bytes ? swizzle_bytes / 16 - 1 : 0;  // 0 (NONE), 1, 3 or 7
    return offset ^ ((offset >> 3) & (bits << 4));
}
// ANCHOR_END: swizzle_modes

// One box in, then the tile it fills copied out word by word: out[i] is the 4 bytes at byte 4i.
// The tile is 64 rows of max(width, swizzle span) bytes; bytes the TMA leaves alone read as 0.
extern "C" __global__ void tma_box_readback(const __grid_constant__ TensorMap map, unsigned* out, unsigned width,
                                            unsigned swizzle_bytes) {
    __shared__ __align__(1024) unsigned tile[BOX_ROWS * 128 / 4];
    __shared__ __align__(8) unsigned long long barrier_word;
    const unsigned barrier = shared_address(&barrier_word);
    const unsigned words = BOX_ROWS * tma_row_pitch(width, swizzle_bytes) / 4;
    for (unsigned i = threadIdx.x; i < words; i += blockDim.x) tile[i] = 0;
    if (threadIdx.x == 0) barrier_init(barrier);
    __syncthreads();
    // Shared-memory writes of the threads, then the TMA's: the async proxy needs a fence between.
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    if (threadIdx.x == 0) tma_load_box(shared_address(tile), map, 0, 0, barrier, BOX_ROWS * width);
    barrier_wait(barrier, 0);
    for (unsigned i = threadIdx.x; i < words; i += blockDim.x) out[i] = tile[i];
}

// ANCHOR: ldmatrix_reads
// One box in, then read `iterations` times by 4 warps as the A operand of m16n8k16 mma: warp w
// takes rows 16w to 16w + 15, one ldmatrix.x4 per 32 bytes of row (lane l: row l % 16, 16-byte
// column l / 16 of the pair), where the TMA put them.
extern "C" __global__ void tma_ldmatrix_reads(const __grid_constant__ TensorMap map, unsigned* out, unsigned width,
                                              unsigned swizzle_bytes, unsigned iterations) {
    __shared__ __align__(1024) unsigned tile[BOX_ROWS * 128 / 4];
    __shared__ __align__(8) unsigned long long barrier_word;
    const unsigned barrier = shared_address(&barrier_word), base = shared_address(tile);
    if (threadIdx.x == 0) barrier_init(barrier);
    __syncthreads();
    if (threadIdx.x == 0) tma_load_box(base, map, 0, 0, barrier, BOX_ROWS * width);
    barrier_wait(barrier, 0);
    const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32, row = warp * 16 + lane % 16;
    unsigned sum = 0;
    for (unsigned it = 0; it < iterations; ++it) {
        for (unsigned pair = 0; pair < width / 32; ++pair) {
            unsigned r[4];
            ldmatrix_x4(r, base + tma_offset(row, pair * 32 + lane / 16 * 16, width, swizzle_bytes));
            sum ^= r[0] ^ r[1] ^ r[2] ^ r[3];
        }
        pass_barrier();
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}
// ANCHOR_END: ldmatrix_reads

// ANCHOR: stream
// The TMA's own speed: block b copies boxes b, b + grid, ... (`boxes` of them, rows of the
// matrix wrapping at `rows`) through 4 buffers, one thread issuing and every thread waiting.
#define STREAM_BUFFERS 4u
extern "C" __global__ void tma_stream(const __grid_constant__ TensorMap map, unsigned* out, unsigned width,
                                      unsigned rows, unsigned boxes) {
    __shared__ __align__(1024) unsigned char buffers[STREAM_BUFFERS][BOX_ROWS * 128];
    __shared__ __align__(8) unsigned long long barrier_words[STREAM_BUFFERS];
    const unsigned bytes = BOX_ROWS * width;
    if (threadIdx.x == 0)
        for (unsigned s = 0; s < STREAM_BUFFERS; ++s) barrier_init(shared_address(&barrier_words[s]));
    __syncthreads();
    auto issue = [&](unsigned i) {
        const unsigned s = i % STREAM_BUFFERS, box = blockIdx.x + i * gridDim.x;
        tma_load_box(shared_address(buffers[s]), map, 0, static_cast<int>(box * BOX_ROWS % rows),
                     shared_address(&barrier_words[s]), bytes);
    };
    if (threadIdx.x == 0)
        for (unsigned i = 0; i < STREAM_BUFFERS && i < boxes; ++i) issue(i);
    for (unsigned i = 0; i < boxes; ++i) {
        barrier_wait(shared_address(&barrier_words[i % STREAM_BUFFERS]), i / STREAM_BUFFERS % 2);
        __syncthreads();  // every thread is past the wait before the buffer is refilled
        if (threadIdx.x == 0 && i + STREAM_BUFFERS < boxes) issue(i + STREAM_BUFFERS);
    }
    if (threadIdx.x == 0) out[blockIdx.x] = boxes;
}
// ANCHOR_END: stream
