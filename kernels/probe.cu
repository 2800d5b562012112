// Single-instruction probes: one warp executes exactly one shared-memory load or store of the
// given width at the byte offsets in `offsets` (0xffffffff = inactive lane). Run under Nsight
// Compute, the sass wavefront counters of a launch are the cost of that one instruction.
// Inline PTX pins the access width, so the compiler can neither split nor merge the access; the
// "memory" clobber tells it the asm reads the tile, so the fill stays.

#define PROBE_BYTES 16384
#define INACTIVE 0xffffffffu

__device__ __forceinline__ unsigned shared_address(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Loads read a tile filled with its own word indices (the fill is counted as stores, apart).
#define PROBE_LOAD(BYTES, ASM, ...)                                                              \
    extern "C" __global__ void probe_ld_##BYTES(const unsigned* offsets, unsigned* out) {        \
        __shared__ __align__(16) unsigned tile[PROBE_BYTES / 4];                                \
        for (unsigned i = threadIdx.x; i < PROBE_BYTES / 4; i += blockDim.x) tile[i] = i;       \
        __syncthreads();                                                                         \
        unsigned offset = offsets[threadIdx.x];                                                  \
        if (offset == INACTIVE) return;                                                          \
        unsigned a = shared_address(tile) + offset, v0 = 0, v1 = 0, v2 = 0, v3 = 0;              \
        asm volatile(ASM : __VA_ARGS__ : "r"(a) : "memory");                                                \
        out[threadIdx.x] = v0 + v1 + v2 + v3;                                                    \
    }

PROBE_LOAD(1, "ld.shared.u8 %0, [%1];", "=r"(v0))
PROBE_LOAD(2, "ld.shared.u16 %0, [%1];", "=r"(v0))
PROBE_LOAD(4, "ld.shared.u32 %0, [%1];", "=r"(v0))
PROBE_LOAD(8, "ld.shared.v2.u32 {%0, %1}, [%2];", "=r"(v0), "=r"(v1))
PROBE_LOAD(16, "ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];", "=r"(v0), "=r"(v1), "=r"(v2), "=r"(v3))

#define PROBE_STORE(BYTES, ASM, ...)                                                             \
    extern "C" __global__ void probe_st_##BYTES(const unsigned* offsets, unsigned* out) {        \
        __shared__ __align__(16) unsigned tile[PROBE_BYTES / 4];                                \
        unsigned offset = offsets[threadIdx.x];                                                  \
        if (offset == INACTIVE) return;                                                          \
        unsigned a = shared_address(tile) + offset, v = threadIdx.x;                             \
        asm volatile(ASM ::"r"(a), __VA_ARGS__ : "memory");                                      \
        out[threadIdx.x] = v;                                                                    \
    }

PROBE_STORE(1, "st.shared.u8 [%0], %1;", "r"(v))
PROBE_STORE(2, "st.shared.u16 [%0], %1;", "r"(v))
PROBE_STORE(4, "st.shared.u32 [%0], %1;", "r"(v))
PROBE_STORE(8, "st.shared.v2.u32 [%0], {%1, %2};", "r"(v), "r"(v))
PROBE_STORE(16, "st.shared.v4.u32 [%0], {%1, %2, %3, %4};", "r"(v), "r"(v), "r"(v), "r"(v))
