// The tensor-core era's shared-memory instructions, one inline-PTX wrapper each, for lessons 14
// and 15 and their exercises. Shared addresses are 32-bit shared-window addresses
// (`__cvta_generic_to_shared`); every wrapper is one machine instruction.
#pragma once

typedef unsigned short half_bits;  // a bf16 or fp16 element, moved as bits

__device__ __forceinline__ unsigned shared_address(const void* pointer) {
    return static_cast<unsigned>(__cvta_generic_to_shared(pointer));
}

// ANCHOR: ldmatrix
// ldmatrix.x4 (LDSM): lanes 8i to 8i + 7 give the addresses of the eight 16-byte rows of matrix i;
// every lane receives one 32-bit register of each matrix. `.trans` delivers the matrices
// transposed; the addresses, and so the banks, are the same.
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned address) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(address) : "memory");
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], unsigned address) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(address) : "memory");
}
// ANCHOR_END: ldmatrix

// Ends one pass of a timing loop that reads an unchanged tile again and again. ldmatrix has no
// volatile form, and ptxas merged an ldmatrix with one of the same address from an earlier pass:
// without this, the exercise kernels of lessons 14 and 15 executed 1 ldmatrix in 16 on the H100
// (ncu's instruction count). A warp barrier orders shared memory, so every pass reads again.
__device__ __forceinline__ void pass_barrier() { __syncwarp(); }

// stmatrix.x4 (STSM, sm_90): ldmatrix's addressing, writing.
__device__ __forceinline__ void stmatrix_x4(unsigned address, const unsigned (&r)[4]) {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};"
                 :: "r"(address), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]) : "memory");
}

// cp.async of 16 bytes, global to shared, and its groups. `.ca` (LDGSTS) goes through L1;
// `.cg` (LDGSTS.BYPASS) bypasses it, which lesson 15 measures as faster. Their shared sides
// differ: where the 8 lanes of one 128-byte source line write one 128-byte shared line and the
// two 16-byte halves of each 32-byte source sector land in one 32-byte unit of it (rows of a
// swizzled or unpadded tile), the H100 counts them the same (bank-model/data/h100/copy-async-bypass.tsv);
// elsewhere `.cg` takes more wavefronts, by a rule the model does not have yet.
template <bool BYPASS_L1>
__device__ __forceinline__ void cp_async_16(unsigned address, const void* global) {
    if (BYPASS_L1) asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(address), "l"(global) : "memory");
    else asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" :: "r"(address), "l"(global) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int PENDING>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" :: "n"(PENDING) : "memory"); }

// ANCHOR: mma
// D = A B + D for one 16 x 8 x 16 tile: A is 4 registers (two bf16 or fp16 each), B is 2, the
// fp32 accumulator 4. The fragments' layouts are those ldmatrix delivers.
template <bool BF16>
__device__ __forceinline__ void mma_16x8x16(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    if (BF16) {
        asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                     "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    } else {
        asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                     "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
}
// ANCHOR_END: mma

// Two floats rounded to nearest into one register of two 16-bit values, `low` in the low half.
template <bool BF16>
__device__ __forceinline__ unsigned pack_rounded(float low, float high) {
    unsigned packed;
    if (BF16) asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(packed) : "f"(high), "f"(low));
    else asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(packed) : "f"(high), "f"(low));
    return packed;
}
