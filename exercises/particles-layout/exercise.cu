// Exercise particles-layout (lesson 10: arrays of structs, structs of arrays).
//
// A block of 1024 threads keeps 1024 particles of four 4-byte fields (x, y, z and mass, as bits)
// in shared memory. Thread p copies particle p in from global memory, field by field, then reads
// it back `iterations` times with `particle_sum`, adding up its fields. Field f of particle p
// lives at `tile[slot(p, f)]`. As written the tile is an array of structs, read one field at a
// time: the 32 lanes of a warp are 4 words apart, 4 wavefronts for each of the 4 field loads.
//
// Your task: make a warp's read of its 32 particles take 4 wavefronts in all (512 bytes, 128 per
// wavefront) instead of 16, by changing where the fields are kept (`slot`), how a particle is read
// (`read_whole_particle`), or both.
// Only the lines between the two markers are yours; the rest must stay as it is.

#include "shared_load.cuh"

#define PARTICLES 1024u  // particles per block: one per thread
#define FIELDS 4u        // 4-byte fields per particle

// ---- EDIT BELOW ----
// Where field `f` (0..3) of particle `p` (0..1023) is kept: each of the 1024 x 4 fields needs a
// word of its own, 0 <= slot < PARTICLES * FIELDS.
__device__ __forceinline__ unsigned slot(unsigned p, unsigned f) {
    return p * FIELDS + f;
}

// How `particle_sum` reads a particle: field by field, one 4-byte load each (false), or whole,
// one 16-byte load of the four words from `slot(p, 0)` on (true: the fields must then lie side by
// side, slot(p, f) == slot(p, 0) + f, with slot(p, 0) a multiple of 4).
constexpr bool read_whole_particle = false;
// ---- EDIT ABOVE ----

// The sum of particle p's fields, read from the tile (which is 16-byte aligned) as the part above
// says. `load(tile, i)` is one shared load of the type `tile` points to: 4 bytes from an unsigned*;
// from a uint4*, 16 bytes, returning the sum of their four words.
__device__ __forceinline__ unsigned particle_sum(const unsigned* tile, unsigned p) {
    if constexpr (read_whole_particle) {
        return load(reinterpret_cast<const uint4*>(tile), slot(p, 0) / FIELDS);
    } else {
        unsigned sum = 0;
#pragma unroll
        for (unsigned f = 0; f < FIELDS; ++f) sum += load(tile, slot(p, f));
        return sum;
    }
}

extern "C" __global__ void particle_sums(const unsigned* words, unsigned* out, unsigned iterations) {
    __shared__ __align__(16) unsigned tile[PARTICLES * FIELDS];
    const unsigned p = threadIdx.x;
    // The input is an array of structs: particle p of the block at words (block * 1024 + p) * 4.
    const unsigned* particle = words + (blockIdx.x * PARTICLES + p) * FIELDS;
#pragma unroll
    for (unsigned f = 0; f < FIELDS; ++f) tile[slot(p, f)] = particle[f];
    __syncthreads();
    unsigned sum = 0;
#pragma unroll 4
    for (unsigned i = 0; i < iterations; ++i) sum += particle_sum(tile, p);
    out[blockIdx.x * PARTICLES + p] = sum;
}
