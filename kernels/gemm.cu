// Lesson 4: GEMM tiling.
//
// C (M x N) = A (M x K) * B (K x N), all row-major floats; M, N and K are multiples of 128.
// The path goes from one thread per output reading global memory, to shared-memory tiles, to
// register tiles fed by 16-byte shared loads.

// ANCHOR: naive
// One thread per output of C. Consecutive lanes take consecutive *rows*: their loads of A are
// K floats apart, and their stores of C are N floats apart.
extern "C" __global__ void gemm_naive(const float* A, const float* B, float* C, unsigned M, unsigned N, unsigned K) {
    const unsigned row = blockIdx.x * 32 + threadIdx.x, col = blockIdx.y * 32 + threadIdx.y;
    float acc = 0.0f;
    for (unsigned k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}
// ANCHOR_END: naive

// ANCHOR: coalesced
// The same, with consecutive lanes on consecutive *columns*: a warp reads one float of A
// (a broadcast) and 32 consecutive floats of B, and writes 32 consecutive floats of C.
extern "C" __global__ void gemm_coalesced(const float* A, const float* B, float* C, unsigned M, unsigned N, unsigned K) {
    const unsigned row = blockIdx.y * 32 + threadIdx.y, col = blockIdx.x * 32 + threadIdx.x;
    float acc = 0.0f;
    for (unsigned k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}
// ANCHOR_END: coalesced

// ANCHOR: tiled
// T x T threads stage a T x T tile of A and of B in shared memory, then each thread takes its
// row of the A tile (`As[ty][k]`: the same address for a whole row of threads) and its column of
// the B tile (`Bs[k][tx]`: consecutive words). With `TRANSPOSED_B` the B tile is stored the other
// way round and read as `Bs[tx][k]`: lanes 32 words apart, all in one bank. `PAD_A` floats after
// each row of the A tile are lesson 5's subject.
template <unsigned T, bool TRANSPOSED_B, unsigned PAD_A = 0>
__device__ void gemm_tiled(const float* A, const float* B, float* C, unsigned N, unsigned K) {
    __shared__ __align__(16) float As[T][T + PAD_A];
    __shared__ __align__(16) float Bs[T][T];
    const unsigned tx = threadIdx.x, ty = threadIdx.y;
    const unsigned row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    float acc = 0.0f;
    for (unsigned k0 = 0; k0 < K; k0 += T) {
        As[ty][tx] = A[row * K + k0 + tx];
        if (TRANSPOSED_B) Bs[tx][ty] = B[(k0 + ty) * N + col];
        else Bs[ty][tx] = B[(k0 + ty) * N + col];
        __syncthreads();
#pragma unroll
        for (unsigned k = 0; k < T; ++k) acc += As[ty][k] * (TRANSPOSED_B ? Bs[tx][k] : Bs[k][tx]);
        __syncthreads();
    }
    C[row * N + col] = acc;
}

extern "C" __global__ void gemm_tiled16(const float* A, const float* B, float* C, unsigned M, unsigned N, unsigned K) {
    gemm_tiled<16, false>(A, B, C, N, K);
}
extern "C" __global__ void gemm_tiled32(const float* A, const float* B, float* C, unsigned M, unsigned N, unsigned K) {
    gemm_tiled<32, false>(A, B, C, N, K);
}
extern "C" __global__ void gemm_tiled32_bt(const float* A, const float* B, float* C, unsigned M, unsigned N, unsigned K) {
    gemm_tiled<32, true>(A, B, C, N, K);
}
// ANCHOR_END: tiled

// ANCHOR: padded_a
// Lesson 5: the same tiled kernels with the A tile padded by one float, or by one 16-byte vector.
extern "C" __global__ void gemm_tiled16_pad1(const float* A, const float* B, float* C, unsigned M, unsigned N, unsigned K) {
    gemm_tiled<16, false, 1>(A, B, C, N, K);
}
extern "C" __global__ void gemm_tiled16_pad4(const float* A, const float* B, float* C, unsigned M, unsigned N, unsigned K) {
    gemm_tiled<16, false, 4>(A, B, C, N, K);
}
extern "C" __global__ void gemm_tiled32_pad1(const float* A, const float* B, float* C, unsigned M, unsigned N, unsigned K) {
    gemm_tiled<32, false, 1>(A, B, C, N, K);
}
extern "C" __global__ void gemm_tiled32_pad4(const float* A, const float* B, float* C, unsigned M, unsigned N, unsigned K) {
    gemm_tiled<32, false, 4>(A, B, C, N, K);
}
// ANCHOR_END: padded_a

// ANCHOR: register_tiled
// A 128 x 128 tile of C per block of 256 threads, 8 x 8 outputs per thread, K in steps of 8.
// The A tile is stored transposed, `As[k][m]`, so that a thread's 4 consecutive rows are one
// 16-byte load. Each thread loads 4 floats of a row of A and stores them down a column of As:
// with rows of 128 floats, the two halves of a warp (k and k + 4) land in the same banks; padding
// each row by one 16-byte vector (PAD = 4) moves them 16 banks apart and keeps rows 16-byte aligned.
#define BM 128
#define BN 128
#define BK 8

template <unsigned PAD>
__device__ void gemm_registers(const float* A, const float* B, float* C, unsigned N, unsigned K) {
    __shared__ __align__(16) float As[BK][BM + PAD];
    __shared__ __align__(16) float Bs[BK][BN];
    const unsigned t = threadIdx.x, ty = t / 16, tx = t % 16;
    const unsigned a_row = t / 2, a_col = (t % 2) * 4;  // this thread's float4 of the A tile
    const unsigned b_row = t / 32, b_col = (t % 32) * 4;  // and of the B tile
    const float* a_tile = A + (blockIdx.y * BM) * K;
    const float* b_tile = B + blockIdx.x * BN;
    float acc[8][8] = {};
    // The next slice of A and B is loaded from global memory into registers while the current
    // one is multiplied, so the loads' latency hides behind the arithmetic.
    float4 a = *reinterpret_cast<const float4*>(a_tile + a_row * K + a_col);
    float4 b = *reinterpret_cast<const float4*>(b_tile + b_row * N + b_col);
    for (unsigned k0 = 0; k0 < K; k0 += BK) {
        As[a_col + 0][a_row] = a.x;
        As[a_col + 1][a_row] = a.y;
        As[a_col + 2][a_row] = a.z;
        As[a_col + 3][a_row] = a.w;
        *reinterpret_cast<float4*>(&Bs[b_row][b_col]) = b;
        __syncthreads();
        if (k0 + BK < K) {
            a = *reinterpret_cast<const float4*>(a_tile + a_row * K + k0 + BK + a_col);
            b = *reinterpret_cast<const float4*>(b_tile + (k0 + BK + b_row) * N + b_col);
        }
#pragma unroll
        for (unsigned k = 0; k < BK; ++k) {
            const float4 a0 = *reinterpret_cast<const float4*>(&As[k][ty * 4]);
            const float4 a1 = *reinterpret_cast<const float4*>(&As[k][64 + ty * 4]);
            const float4 b0 = *reinterpret_cast<const float4*>(&Bs[k][tx * 4]);
            const float4 b1 = *reinterpret_cast<const float4*>(&Bs[k][64 + tx * 4]);
            const float as[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float bs[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (unsigned i = 0; i < 8; ++i)
#pragma unroll
                for (unsigned j = 0; j < 8; ++j) acc[i][j] += as[i] * bs[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (unsigned i = 0; i < 8; ++i) {
        const unsigned row = blockIdx.y * BM + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4);
        float* c = C + row * N + blockIdx.x * BN;
        *reinterpret_cast<float4*>(c + tx * 4) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
        *reinterpret_cast<float4*>(c + 64 + tx * 4) = make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
    }
}

extern "C" __global__ void __launch_bounds__(256)
gemm_registers_unpadded(const float* A, const float* B, float* C, unsigned M, unsigned N, unsigned K) {
    gemm_registers<0>(A, B, C, N, K);
}
extern "C" __global__ void __launch_bounds__(256)
gemm_registers_padded(const float* A, const float* B, float* C, unsigned M, unsigned N, unsigned K) {
    gemm_registers<4>(A, B, C, N, K);
}
// ANCHOR_END: register_tiled
