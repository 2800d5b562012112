// Single-instruction probes, many to a kernel. Step k of a kernel is one shared-memory machine
// instruction of its own, executed once by the kernel's one warp at the byte offsets
// offsets[32 * k + lane]; an offset of 0xffffffff sits the lane out through the instruction's
// guard predicate. ncu's source page then gives every step's wavefronts. Inline PTX pins each
// access's width and kind, so the compiler can neither split, merge nor drop it; volatile keeps
// the steps in order for the compiler, a warp barrier for ptxas. The tile is not filled: what the loads read does not change their cost,
// and a fill would add shared stores of its own.

#define PROBE_BYTES 16384
#define INACTIVE 0xffffffffu

#define PROBE_KERNEL(NAME)                                                                        \
    extern "C" __global__ void NAME(const unsigned* offsets, const uint4* global, unsigned* out)

#define PROBE_BEGIN                                                                               \
    __shared__ __align__(128) unsigned tile[PROBE_BYTES / 4];                                    \
    const unsigned lane = threadIdx.x;                                                            \
    const unsigned base = static_cast<unsigned>(__cvta_generic_to_shared(tile));                 \
    const uint4* source = global + lane;                                                          \
    unsigned acc = 0, v0 = 0, v1 = 0, v2 = 0, v3 = 0;

#define PROBE_END                                                                                 \
    asm volatile("cp.async.wait_all;" ::: "memory");                                             \
    out[lane] = acc + v0 + v1 + v2 + v3 + (source == nullptr);

// o: this lane's offset; a: its shared address. The warp barrier first keeps the machine code in
// step order: ptxas moves independent shared-memory instructions past each other, not past it.
#define STEP_ARGS(K)                                                                              \
    __syncwarp();                                                                                 \
    const unsigned o = offsets[32 * (K) + lane], a = base + o
// The guard: the step's PTX runs only in lanes whose offset (operand N) is not INACTIVE.
#define GUARD(N, ASM) "{\n.reg .pred p;\nsetp.ne.u32 p, %" #N ", 0xffffffff;\n@p " ASM ";\n}"

// Operands: %0-%3 the values, %4 the offset, %5 the address. Loads write their registers
// through "+r", so a lane the guard sits out keeps what they held.
#define LOADS(K, ASM)                                                                             \
    { STEP_ARGS(K); asm volatile(GUARD(4, ASM) : "+r"(v0), "+r"(v1), "+r"(v2), "+r"(v3) : "r"(o), "r"(a) : "memory"); acc += v0 ^ v1 ^ v2 ^ v3; }
#define LD_1(K) LOADS(K, "ld.shared.u8 %0, [%5]")
#define LD_2(K) LOADS(K, "ld.shared.u16 %0, [%5]")
#define LD_4(K) LOADS(K, "ld.shared.u32 %0, [%5]")
#define LD_8(K) LOADS(K, "ld.shared.v2.u32 {%0, %1}, [%5]")
#define LD_16(K) LOADS(K, "ld.shared.v4.u32 {%0, %1, %2, %3}, [%5]")

// Operands: %0 the offset, %1 the address, %2 the value.
#define STORES(K, ASM) { STEP_ARGS(K); asm volatile(GUARD(0, ASM) :: "r"(o), "r"(a), "r"(lane + (K)) : "memory"); }
#define ST_1(K) STORES(K, "st.shared.u8 [%1], %2")
#define ST_2(K) STORES(K, "st.shared.u16 [%1], %2")
#define ST_4(K) STORES(K, "st.shared.u32 [%1], %2")
#define ST_8(K) STORES(K, "st.shared.v2.u32 [%1], {%2, %2}")
#define ST_16(K) STORES(K, "st.shared.v4.u32 [%1], {%2, %2, %2, %2}")

// cp.async: every active lane copies from its own 16 bytes of `global` to its shared address.
#define COPIES(K, BYTES)                                                                          \
    { STEP_ARGS(K); asm volatile(GUARD(0, "cp.async.ca.shared.global [%1], [%2], " #BYTES) :: "r"(o), "r"(a), "l"(source) : "memory"); }
#define CP_4(K) COPIES(K, 4)
#define CP_8(K) COPIES(K, 8)
#define CP_16(K) COPIES(K, 16)

// ldmatrix / stmatrix are warp-wide (.sync.aligned): every lane executes them, and lanes that
// give no row address have offset 0 (the hardware ignores their address).
#define LDSM(K, SHAPE)                                                                            \
    { STEP_ARGS(K); asm volatile("ldmatrix.sync.aligned.m8n8." SHAPE ".shared.b16 {%0, %1, %2, %3}, [%4];" \
        : "+r"(v0), "+r"(v1), "+r"(v2), "+r"(v3) : "r"(a) : "memory"); acc += v0 ^ v1 ^ v2 ^ v3; }
#define LDSM1(K, SHAPE)                                                                           \
    { STEP_ARGS(K); asm volatile("ldmatrix.sync.aligned.m8n8." SHAPE ".shared.b16 {%0}, [%1];" : "+r"(v0) : "r"(a) : "memory"); acc += v0; }
#define LDSM2(K, SHAPE)                                                                           \
    { STEP_ARGS(K); asm volatile("ldmatrix.sync.aligned.m8n8." SHAPE ".shared.b16 {%0, %1}, [%2];" : "+r"(v0), "+r"(v1) : "r"(a) : "memory"); acc += v0 ^ v1; }
#define LDSM_X1(K) LDSM1(K, "x1")
#define LDSM_X2(K) LDSM2(K, "x2")
#define LDSM_X4(K) LDSM(K, "x4")
#define LDSM_X1_T(K) LDSM1(K, "x1.trans")
#define LDSM_X2_T(K) LDSM2(K, "x2.trans")
#define LDSM_X4_T(K) LDSM(K, "x4.trans")

#define STSM1(K, SHAPE) { STEP_ARGS(K); asm volatile("stmatrix.sync.aligned.m8n8." SHAPE ".shared.b16 [%0], {%1};" :: "r"(a), "r"(lane) : "memory"); }
#define STSM2(K, SHAPE) { STEP_ARGS(K); asm volatile("stmatrix.sync.aligned.m8n8." SHAPE ".shared.b16 [%0], {%1, %1};" :: "r"(a), "r"(lane) : "memory"); }
#define STSM4(K, SHAPE) { STEP_ARGS(K); asm volatile("stmatrix.sync.aligned.m8n8." SHAPE ".shared.b16 [%0], {%1, %1, %1, %1};" :: "r"(a), "r"(lane) : "memory"); }
#define STSM_X1(K) STSM1(K, "x1")
#define STSM_X2(K) STSM2(K, "x2")
#define STSM_X4(K) STSM4(K, "x4")
#define STSM_X1_T(K) STSM1(K, "x1.trans")
#define STSM_X2_T(K) STSM2(K, "x2.trans")
#define STSM_X4_T(K) STSM4(K, "x4.trans")
