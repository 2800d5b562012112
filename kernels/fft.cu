// Lesson 13: FFT butterflies.
//
// Each block transforms POINTS complex floats (`float2`) with a radix-2 decimation-in-time FFT in
// shared memory: the input is gathered in bit-reversed order, then LOG_POINTS levels of
// butterflies at strides 1, 2, 4, ..., POINTS / 2 leave the transform in natural order, one
// butterfly per thread per level. The four kernels do the same arithmetic on the same values; they
// differ only in where element i is kept in the tile, `Layout::at(i)`, and so in which banks a
// warp's lanes meet. Every shared access goes through `load_float2` and `store_float2`: exactly one
// 8-byte LDS or STS each, which the compiler can neither merge nor split.

#define POINTS 512u            // complex floats each block transforms
#define LOG_POINTS 9u
#define THREADS (POINTS / 2)   // threads per block: one butterfly each per level

// ANCHOR: float2_access
// One 8-byte shared load or store of a float2; `volatile` and the "memory" clobber keep each one
// where the source puts it.
__device__ __forceinline__ float2 load_float2(const float2* tile, unsigned index) {
    float2 v;
    const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(tile + index));
    asm volatile("ld.volatile.shared.v2.f32 {%0, %1}, [%2];" : "=f"(v.x), "=f"(v.y) : "r"(a) : "memory");
    return v;
}
__device__ __forceinline__ void store_float2(float2* tile, unsigned index, float2 v) {
    const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(tile + index));
    asm volatile("st.volatile.shared.v2.f32 [%0], {%1, %2};" ::"r"(a), "f"(v.x), "f"(v.y) : "memory");
}
// ANCHOR_END: float2_access

// ANCHOR: layouts
// Where element i of the transform lives in the tile, and the tile's size in float2s.
struct Natural {
    static constexpr unsigned ELEMENTS = POINTS;
    __device__ static unsigned at(unsigned i) { return i; }
};
// The note's `float2 shared[512 + 16]`: one float2 of padding after every 32.
struct Pad32 {
    static constexpr unsigned ELEMENTS = POINTS + POINTS / 32;
    __device__ static unsigned at(unsigned i) { return i + i / 32; }
};
// One float2 of padding after every 16: a row of the banks holds 16 float2s.
struct Pad16 {
    static constexpr unsigned ELEMENTS = POINTS + POINTS / 16;
    __device__ static unsigned at(unsigned i) { return i + i / 16; }
};
// No padding: the second 16 of every 32 elements are kept in reverse order (i XOR 15).
struct Mirrored {
    static constexpr unsigned ELEMENTS = POINTS;
    __device__ static unsigned at(unsigned i) { return i ^ ((i >> 4 & 1u) * 15u); }
};
// ANCHOR_END: layouts

// ANCHOR: fft
template <typename Layout>
__device__ void fft_block(const float2* in, float2* out) {
    __shared__ float2 tile[Layout::ELEMENTS];
    const unsigned t = threadIdx.x;
    in += blockIdx.x * POINTS;
    out += blockIdx.x * POINTS;
    // Element i of the tile starts as input element reverse(i), so that the levels can work in
    // place and end in natural order.
    const auto reverse = [](unsigned i) { return __brev(i) >> (32 - LOG_POINTS); };
    store_float2(tile, Layout::at(t), in[reverse(t)]);
    store_float2(tile, Layout::at(t + THREADS), in[reverse(t + THREADS)]);
    // Level s joins transforms of s points into transforms of 2s: thread t takes point j = t % s
    // of pair t / s, elements a and b = a + s, and the twiddle w = exp(-i pi j / s).
    for (unsigned s = 1; s < POINTS; s *= 2) {
        __syncthreads();
        const unsigned j = t % s, a = 2 * (t - j) + j, b = a + s;
        float2 w;
        sincospif(-static_cast<float>(j) / static_cast<float>(s), &w.y, &w.x);
        const float2 x = load_float2(tile, Layout::at(a)), y = load_float2(tile, Layout::at(b));
        const float2 wy = make_float2(w.x * y.x - w.y * y.y, w.x * y.y + w.y * y.x);
        store_float2(tile, Layout::at(a), make_float2(x.x + wy.x, x.y + wy.y));
        store_float2(tile, Layout::at(b), make_float2(x.x - wy.x, x.y - wy.y));
    }
    __syncthreads();
    out[t] = load_float2(tile, Layout::at(t));
    out[t + THREADS] = load_float2(tile, Layout::at(t + THREADS));
}

extern "C" __global__ void __launch_bounds__(THREADS) fft_natural(const float2* in, float2* out) {
    fft_block<Natural>(in, out);
}
extern "C" __global__ void __launch_bounds__(THREADS) fft_pad32(const float2* in, float2* out) {
    fft_block<Pad32>(in, out);
}
extern "C" __global__ void __launch_bounds__(THREADS) fft_pad16(const float2* in, float2* out) {
    fft_block<Pad16>(in, out);
}
extern "C" __global__ void __launch_bounds__(THREADS) fft_mirrored(const float2* in, float2* out) {
    fft_block<Mirrored>(in, out);
}
// ANCHOR_END: fft
