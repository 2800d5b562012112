// Exact-width shared-memory loads and stores.
//
// One shared-memory load per call, of exactly the width of `Element` (1, 2, 4, 8 or 16 bytes),
// returning the sum of its 32-bit parts. Inline PTX makes it exactly one LDS of that width.
// `ld.volatile` keeps ptxas from hoisting a load of an unchanging tile out of a timing loop (a
// plain `ld.shared` was loaded once per kernel, and the instruction counters showed it), and the
// "memory" clobber tells the compiler the tile is read, so the stores that fill it stay.
#pragma once

// ANCHOR: shared_load
template <typename Element> __device__ __forceinline__ unsigned load(const Element* tile, unsigned index);

template <> __device__ __forceinline__ unsigned load<unsigned char>(const unsigned char* tile, unsigned index) {
    unsigned v, a = static_cast<unsigned>(__cvta_generic_to_shared(tile + index));
    asm volatile("ld.volatile.shared.u8 %0, [%1];" : "=r"(v) : "r"(a) : "memory");
    return v;
}
template <> __device__ __forceinline__ unsigned load<unsigned short>(const unsigned short* tile, unsigned index) {
    unsigned v, a = static_cast<unsigned>(__cvta_generic_to_shared(tile + index));
    asm volatile("ld.volatile.shared.u16 %0, [%1];" : "=r"(v) : "r"(a) : "memory");
    return v;
}
template <> __device__ __forceinline__ unsigned load<unsigned>(const unsigned* tile, unsigned index) {
    unsigned v, a = static_cast<unsigned>(__cvta_generic_to_shared(tile + index));
    asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(v) : "r"(a) : "memory");
    return v;
}
template <> __device__ __forceinline__ unsigned load<uint2>(const uint2* tile, unsigned index) {
    unsigned x, y, a = static_cast<unsigned>(__cvta_generic_to_shared(tile + index));
    asm volatile("ld.volatile.shared.v2.u32 {%0, %1}, [%2];" : "=r"(x), "=r"(y) : "r"(a) : "memory");
    return x + y;
}
template <> __device__ __forceinline__ unsigned load<uint4>(const uint4* tile, unsigned index) {
    unsigned x, y, z, w, a = static_cast<unsigned>(__cvta_generic_to_shared(tile + index));
    asm volatile("ld.volatile.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(x), "=r"(y), "=r"(z), "=r"(w)
                 : "r"(a) : "memory");
    return x + y + z + w;
}
// ANCHOR_END: shared_load

// ANCHOR: shared_store
// One shared-memory store per call, of exactly the width of `Element` (4, 8 or 16 bytes), writing
// `value` into each of its 32-bit parts. `st.volatile` keeps every store in a timing loop.
template <typename Element> __device__ __forceinline__ void store(Element* tile, unsigned index, unsigned value);

template <> __device__ __forceinline__ void store<unsigned>(unsigned* tile, unsigned index, unsigned value) {
    unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(tile + index));
    asm volatile("st.volatile.shared.u32 [%0], %1;" ::"r"(a), "r"(value) : "memory");
}
template <> __device__ __forceinline__ void store<uint2>(uint2* tile, unsigned index, unsigned value) {
    unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(tile + index));
    asm volatile("st.volatile.shared.v2.u32 [%0], {%1, %2};" ::"r"(a), "r"(value), "r"(value) : "memory");
}
template <> __device__ __forceinline__ void store<uint4>(uint4* tile, unsigned index, unsigned value) {
    unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(tile + index));
    asm volatile("st.volatile.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(a), "r"(value), "r"(value), "r"(value),
                 "r"(value) : "memory");
}
// ANCHOR_END: shared_store

// Copies `count` words from global memory into the tile, one 4-byte store per thread per step
// (consecutive lanes, consecutive words: conflict-free), then waits for the whole block.
__device__ __forceinline__ void fill_tile(unsigned* tile, const unsigned* words, unsigned count) {
    for (unsigned i = threadIdx.x; i < count; i += blockDim.x) tile[i] = words[i];
    __syncthreads();
}
