// Hopper's tensor memory accelerator (TMA), for lesson 15 and its exercise: one thread asks it
// to copy a box of a matrix into shared memory (cp.async.bulk.tensor, the box and its swizzle
// named by a tensor map the host encoded), and an mbarrier counts the bytes in.
#pragma once

#include "tensor_core.cuh"

// A CUtensorMap, passed by value as the driver encoded it.
struct __align__(64) TensorMap {
    unsigned long long opaque[16];
};

__device__ __forceinline__ void barrier_init(unsigned barrier) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(barrier) : "memory");
    // Make the initialized barrier visible to the TMA, which works in the async proxy.
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// ANCHOR: tma_load
// Thread-side: the barrier expects `bytes`, and the TMA copies the box at (x bytes, row y) to
// `destination`, completing those bytes on the barrier.
__device__ __forceinline__ void tma_load_box(unsigned destination, const TensorMap& map, int x, int y,
                                             unsigned barrier, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(barrier), "r"(bytes) : "memory");
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
        :: "r"(destination), "l"(&map), "r"(x), "r"(y), "r"(barrier) : "memory");
}
// ANCHOR_END: tma_load

__device__ __forceinline__ void barrier_wait(unsigned barrier, unsigned phase) {
    unsigned done = 0;
    while (!done)
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done) : "r"(barrier), "r"(phase) : "memory");
}
