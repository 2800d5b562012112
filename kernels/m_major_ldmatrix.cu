// Lesson 14: an M-major tile of A read with ldmatrix.x4.trans, the setting of a conflict people
// report with CuTe (CUTLASS issue 3172). The tile is 128 (M) x 32 (K) halves built from CuTe's
// M-major atom (128, 8): element (m, k) at offset 1024 (k / 8) + 128 (k % 8) + m, then swizzled.
// 128 threads fill it with 2-byte stores, element i of the array from thread i % 128, then each
// of the 4 warps reads the A fragments of its 32 rows of M for all of K, `iterations` times: per
// 16 x 16 piece one ldmatrix.x4.trans, lane l giving the 8 halves of M from row 8 ((l / 8) % 2) of
// the piece, at k = l % 8 + 8 (l / 16). The kernels differ only in the swizzle.

#include "swizzle.cuh"
#include "tensor_core.cuh"

#define TILE_M 128u
#define TILE_K 32u

template <typename Layout>
__device__ void m_major_reads(half_bits* out, unsigned iterations) {
    __shared__ __align__(1024) half_bits tile[TILE_M * TILE_K];
    // A hash of i, not i: the XOR of a thread's fragments then tells which rows its reads took.
    for (unsigned i = threadIdx.x; i < TILE_M * TILE_K; i += blockDim.x) tile[i] = static_cast<half_bits>(i * 2654435761u >> 16);
    __syncthreads();
    const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32, base = shared_address(tile);
    unsigned sum[4] = {};
    for (unsigned it = 0; it < iterations; ++it) {
#pragma unroll
        for (unsigned piece_m = 0; piece_m < 2; ++piece_m)
#pragma unroll
            for (unsigned piece_k = 0; piece_k < TILE_K / 16; ++piece_k) {
                const unsigned m = warp * 32 + piece_m * 16 + (lane / 8) % 2 * 8, k = piece_k * 16 + lane % 8 + lane / 16 * 8;
                unsigned r[4];
                ldmatrix_x4_trans(r, base + 2 * Layout{}(1024 * (k / 8) + 128 * (k % 8) + m));
#pragma unroll
                for (unsigned q = 0; q < 4; ++q) sum[q] ^= r[q];
            }
        pass_barrier();
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = static_cast<half_bits>(sum[0] ^ sum[1] ^ sum[2] ^ sum[3]);
}

#define M_MAJOR_READS(NAME, B, M, S) \
    extern "C" __global__ void NAME(half_bits* out, unsigned iterations) { m_major_reads<Swizzle<B, M, S>>(out, iterations); }
M_MAJOR_READS(m_major_unswizzled, 0, 0, 0)
M_MAJOR_READS(m_major_swizzle_3_3_3, 3, 3, 3)
M_MAJOR_READS(m_major_swizzle_3_3_4, 3, 3, 4)
