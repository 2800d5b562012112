// A compile-time check that a warp reading one column of a row-major shared tile, lane l reading
// row l, is conflict-free on every column. Chapter "Which fix do I need?" derives it; the course's
// tests compare it with the bank model on every element type of 1 to 16 bytes and every row of
// 1 to 160 elements (crates/claims, quick_reference.rs, whose twin is written the same way).
#pragma once

// ANCHOR: conflict_free_column
// Conflict-free when a row is an odd, whole number of units, a unit being the larger of a 4-byte
// word and the element; or when a row is shorter than a word, so that 32 rows fit in 32 words.
// (`__host__ __device__`: NVRTC compiles no function that is the host's alone.)
__host__ __device__ constexpr bool conflict_free_column_bytes(unsigned row_bytes, unsigned element_bytes) {
    const unsigned unit = element_bytes > 4 ? element_bytes : 4;
    return row_bytes < 4 || (row_bytes % unit == 0 && (row_bytes / unit) % 2 == 1);
}

// `row_elements` is the tile's pitch, COLS + PAD; for a vector view of a float tile, ask with the
// vector type and the pitch in vectors: conflict_free_column<float4>(pitch_in_floats / 4).
// (Not `T`: the exercises' starters define `T` as a macro before a learner's part may include this.)
template <typename Element>
__host__ __device__ constexpr bool conflict_free_column(unsigned row_elements) {
    return conflict_free_column_bytes(row_elements * static_cast<unsigned>(sizeof(Element)),
                                      static_cast<unsigned>(sizeof(Element)));
}
// ANCHOR_END: conflict_free_column

// ANCHOR: usage
// constexpr unsigned COLS = 32, PAD = 1;
// __shared__ float tile[32][COLS + PAD];
// static_assert(conflict_free_column<float>(COLS + PAD), "a column read of tile conflicts");
// ANCHOR_END: usage
