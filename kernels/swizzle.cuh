// CuTe's Swizzle<B, M, S> on an element offset, shared by lesson 9's float tiles and the
// tensor-core tiles of lessons 14 and 15.
#pragma once

// ANCHOR: swizzle
// CuTe's Swizzle<B, M, S> on an element offset: the B bits starting at bit M + S (for a row-major
// tile, the low bits of the row) are XORed into the B bits starting at bit M (the column, in units
// of 2^M elements). The low M bits are never touched: 2^M consecutive elements move together.
template <unsigned B, unsigned M, unsigned S>
struct Swizzle {
    static_assert(S >= B, "the bits XORed in must not overlap the bits they change");
    __device__ __forceinline__ unsigned operator()(unsigned offset) const {
        constexpr unsigned source = ((1u << B) - 1) << (M + S);
        return offset ^ ((offset & source) >> S);
    }
};
// ANCHOR_END: swizzle
