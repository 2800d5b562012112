// Lesson 12: stencils.
//
// A K x K convolution (K = 3 or 5) of an image of floats. Each block computes a 32 x 32 tile of
// the output from a (32 + K - 1)-square halo tile of the input in shared memory. The input is the
// output image with a border of K / 2 pixels on every side ("valid" convolution), so no access
// needs a bounds check. The block's BX x BY threads walk the halo tile and the outputs in the
// block's own shape: thread (tx, ty) takes columns tx, tx + BX, ... and rows ty, ty + BY, ...
// The tile is volatile, so every access the source writes is exactly one LDS or STS: the compiler
// can neither merge neighbouring taps into a wider load nor move one.

#define OUT_TILE 32u  // outputs per block, in each direction

// Tap (dy, dx) weighs 1 + K * dy + dx. With whole-number pixels below 256 every partial sum is a
// whole number below 2^24, exact in float in any order: the output must equal the CPU's bit for bit.
__device__ constexpr float weight(unsigned k, unsigned dy, unsigned dx) { return static_cast<float>(1 + k * dy + dx); }

// ANCHOR: stencil
template <unsigned K, unsigned BX, unsigned BY, unsigned PITCH>
__device__ void stencil(const float* __restrict__ in, float* __restrict__ out, unsigned width) {
    constexpr unsigned HALO = K / 2, SIDE = OUT_TILE + 2 * HALO;
    static_assert(PITCH >= SIDE, "a row of the tile holds SIDE pixels");
    __shared__ volatile float tile[SIDE][PITCH];
    const unsigned tx = threadIdx.x, ty = threadIdx.y, in_width = width + 2 * HALO;
    const float* corner = in + blockIdx.y * OUT_TILE * in_width + blockIdx.x * OUT_TILE;
    // The halo load: step (j, i) stores pixel (ty + j * BY, tx + i * BX) of the tile, where there is one.
#pragma unroll
    for (unsigned j = 0; j < (SIDE + BY - 1) / BY; ++j)
#pragma unroll
        for (unsigned i = 0; i < (SIDE + BX - 1) / BX; ++i) {
            const unsigned y = ty + j * BY, x = tx + i * BX;
            if (y < SIDE && x < SIDE) tile[y][x] = corner[y * in_width + x];
        }
    __syncthreads();
    // The taps: output (oy, ox) of the block's 32 x 32 reads tile[oy + dy][ox + dx] for every tap.
#pragma unroll
    for (unsigned j = 0; j < OUT_TILE / BY; ++j)
#pragma unroll
        for (unsigned i = 0; i < OUT_TILE / BX; ++i) {
            const unsigned oy = ty + j * BY, ox = tx + i * BX;
            float sum = 0.0f;
#pragma unroll
            for (unsigned dy = 0; dy < K; ++dy)
#pragma unroll
                for (unsigned dx = 0; dx < K; ++dx) sum += weight(K, dy, dx) * tile[oy + dy][ox + dx];
            out[(blockIdx.y * OUT_TILE + oy) * width + blockIdx.x * OUT_TILE + ox] = sum;
        }
}
// ANCHOR_END: stencil

// ANCHOR: kernels
// One kernel per stencil, block shape and pitch: `stencil3_16x16_pitch35` is the 3 x 3 stencil in
// 16 x 16 blocks with `float tile[34][35]`.
#define STENCIL(K, BX, BY, PITCH)                                                                  \
    extern "C" __global__ void stencil##K##_##BX##x##BY##_pitch##PITCH(                            \
        const float* __restrict__ in, float* __restrict__ out, unsigned width) {                   \
        stencil<K, BX, BY, PITCH>(in, out, width);                                                 \
    }
// ANCHOR_END: kernels
STENCIL(3, 32, 8, 34)
STENCIL(3, 32, 8, 35)
STENCIL(3, 32, 8, 48)
STENCIL(3, 16, 16, 34)
STENCIL(3, 16, 16, 35)
STENCIL(3, 16, 16, 48)
STENCIL(5, 32, 8, 36)
STENCIL(5, 32, 8, 37)
STENCIL(5, 32, 8, 48)
STENCIL(5, 16, 16, 36)
STENCIL(5, 16, 16, 37)
STENCIL(5, 16, 16, 48)
