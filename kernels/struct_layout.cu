// Lesson 10: arrays of structs, structs of arrays.
//
// A block of THREADS threads keeps THREADS elements of 4-byte fields in shared memory, copied
// from `words` by `fill_tile`, and thread t reads element t, every field, `iterations` times,
// adding up what it reads. The kernels differ only in where field f of element e lives and in
// the width of the loads that read it:
//   array of structs (AoS), FIELDS words per element:  word e * FIELDS + f
//   struct of arrays (SoA), one array per field:        word f * THREADS + e
// Every shared access goes through `load` (kernels/shared_load.cuh): one LDS of exactly the
// element's width, so four 4-byte field reads stay four LDS and a 16-byte read is one LDS.128.

#define THREADS 1024u  // threads per block, and elements per block

#include "shared_load.cuh"

// ANCHOR: field_reads
// Every field its own 4-byte load. AoS puts a warp's lanes FIELDS words apart, SoA on
// consecutive words. The iteration loop is unrolled so that each warp has several independent
// loads in flight and the kernel waits on shared-memory throughput, not on one load's latency.
template <unsigned FIELDS, bool AOS>
__device__ void field_reads(const unsigned* words, unsigned* out, unsigned iterations) {
    __shared__ unsigned tile[THREADS * FIELDS];
    fill_tile(tile, words, THREADS * FIELDS);
    const unsigned e = threadIdx.x;
    unsigned sum = 0;
#pragma unroll 4
    for (unsigned i = 0; i < iterations; ++i) {
#pragma unroll
        for (unsigned f = 0; f < FIELDS; ++f) sum += load(tile, AOS ? e * FIELDS + f : f * THREADS + e);
    }
    out[blockIdx.x * THREADS + threadIdx.x] = sum;
}
// ANCHOR_END: field_reads

// ANCHOR: vector_reads
// AoS read whole: an element of WORDS words (a multiple of 4, so every element starts on a
// 16-byte boundary) as WORDS / 4 loads of 16 bytes. Padding words are part of the element and
// are loaded, and added, with the fields.
template <unsigned WORDS>
__device__ void vector_reads(const unsigned* words, unsigned* out, unsigned iterations) {
    __shared__ __align__(16) unsigned tile[THREADS * WORDS];
    fill_tile(tile, words, THREADS * WORDS);
    const uint4* elements = reinterpret_cast<const uint4*>(tile);
    const unsigned e = threadIdx.x;
    unsigned sum = 0;
#pragma unroll 4
    for (unsigned i = 0; i < iterations; ++i) {
#pragma unroll
        for (unsigned part = 0; part < WORDS / 4; ++part) sum += load(elements, e * (WORDS / 4) + part);
    }
    out[blockIdx.x * THREADS + threadIdx.x] = sum;
}
// ANCHOR_END: vector_reads

// The kernels of the lesson's runs, each of the course's `(words, out, a, b)` shape (`a` unused).
// ANCHOR: kernels
extern "C" __global__ void aos_fields_3(const unsigned* words, unsigned* out, unsigned, unsigned iterations) {
    field_reads<3, true>(words, out, iterations);
}
extern "C" __global__ void soa_fields_3(const unsigned* words, unsigned* out, unsigned, unsigned iterations) {
    field_reads<3, false>(words, out, iterations);
}
extern "C" __global__ void aos_fields_4(const unsigned* words, unsigned* out, unsigned, unsigned iterations) {
    field_reads<4, true>(words, out, iterations);
}
extern "C" __global__ void soa_fields_4(const unsigned* words, unsigned* out, unsigned, unsigned iterations) {
    field_reads<4, false>(words, out, iterations);
}
extern "C" __global__ void aos_fields_8(const unsigned* words, unsigned* out, unsigned, unsigned iterations) {
    field_reads<8, true>(words, out, iterations);
}
extern "C" __global__ void soa_fields_8(const unsigned* words, unsigned* out, unsigned, unsigned iterations) {
    field_reads<8, false>(words, out, iterations);
}
// One 16-byte load per element: the 4-field particle, or a 3-field struct padded to 16 bytes.
extern "C" __global__ void aos_vector_4(const unsigned* words, unsigned* out, unsigned, unsigned iterations) {
    vector_reads<4>(words, out, iterations);
}
// Two 16-byte loads per element: the 8-field struct.
extern "C" __global__ void aos_vector_8(const unsigned* words, unsigned* out, unsigned, unsigned iterations) {
    vector_reads<8>(words, out, iterations);
}
// ANCHOR_END: kernels
