// Exercise gemm-b-tile (lesson 4: GEMM tiling).
//
// C = A * B (row-major floats, n x n, n a multiple of 32) with 32 x 32 shared tiles: each block
// of 32 x 32 threads stages a tile of A and a tile of B, then thread (ty, tx) multiplies row ty of
// the A tile with column tx of the B tile. Element (k, column) of the B tile lives at
// `Bs[b_slot(k, column)]`. As written the B tile is stored transposed: the 32 lanes of a warp
// (consecutive columns) are 32 floats apart, all in one bank, when they store and when they load.
//
// Your task: change `b_slot` so that the B tile's stores and loads are free of bank conflicts.
// Only the lines between the two markers are yours; the rest must stay as it is.

#define T 32u

// ---- EDIT BELOW ----
// Where element (k, column) of the B tile is kept: each of the 32 x 32 elements needs a slot of
// its own, 0 <= slot < B_TILE_FLOATS.
#define B_TILE_FLOATS (T * T)
__device__ __forceinline__ unsigned b_slot(unsigned k, unsigned column) {
    return column * T + k;
}
// ---- EDIT ABOVE ----

extern "C" __global__ void gemm(const float* A, const float* B, float* C, unsigned M, unsigned N, unsigned K) {
    __shared__ __align__(16) float As[T][T];
    __shared__ __align__(16) float Bs[B_TILE_FLOATS];
    const unsigned tx = threadIdx.x, ty = threadIdx.y;
    const unsigned row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    float acc = 0.0f;
    for (unsigned k0 = 0; k0 < K; k0 += T) {
        As[ty][tx] = A[row * K + k0 + tx];
        Bs[b_slot(ty, tx)] = B[(k0 + ty) * N + col];
        __syncthreads();
#pragma unroll
        for (unsigned k = 0; k < T; ++k) acc += As[ty][k] * Bs[b_slot(k, tx)];
        __syncthreads();
    }
    C[row * N + col] = acc;
}
