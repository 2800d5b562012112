//! CuTe's `Swizzle<B, M, S>`: a layout function that XORs bits of an element offset.
//!
//! Offsets are in elements of the tile's type. The offset's `B` bits starting at bit `M + S`
//! (for a row-major tile: the low bits of the row) are XORed into its `B` bits starting at bit
//! `M` (the column, in units of `2^M` elements). The low `M` bits are never touched, so groups of
//! `2^M` consecutive elements stay together and keep their alignment: a vector of `2^M`
//! elements stays one vector. Chapter 3's `tile[r][c ^ r]` on a 32 x 32 tile is `Swizzle<5, 0, 5>`.

use std::fmt;

use thiserror::Error;

/// CuTe's `Swizzle<B, M, S>` with a non-negative shift, `S >= B`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Swizzle {
    /// `B`: how many bits are XORed.
    pub bits: u32,
    /// `M`: low bits left alone (`2^M` elements move together).
    pub base: u32,
    /// `S`: how far above the XORed bits their source bits are.
    pub shift: u32,
}

/// Why three numbers are not a swizzle.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum SwizzleError {
    #[error(
        "Swizzle<{bits}, {base}, {shift}>: the shift S must be at least the number of bits B, or the bits \
         XORed in would overlap the bits they change (CuTe requires |S| >= B)"
    )]
    Overlap { bits: u32, base: u32, shift: u32 },
    #[error("Swizzle<{bits}, {base}, {shift}>: B + M + S must be at most 31, so offsets fit in 32 bits")]
    TooWide { bits: u32, base: u32, shift: u32 },
}

impl Swizzle {
    /// The swizzle that changes nothing, `Swizzle<0, 0, 0>`.
    pub const IDENTITY: Swizzle = Swizzle { bits: 0, base: 0, shift: 0 };

    pub fn new(bits: u32, base: u32, shift: u32) -> Result<Swizzle, SwizzleError> {
        if shift < bits {
            return Err(SwizzleError::Overlap { bits, base, shift });
        }
        if bits + base + shift > 31 {
            return Err(SwizzleError::TooWide { bits, base, shift });
        }
        Ok(Swizzle { bits, base, shift })
    }

    /// The offset at which element `offset` is stored.
    pub fn apply(self, offset: u32) -> u32 {
        let source_mask = ((1 << self.bits) - 1) << (self.base + self.shift);
        offset ^ ((offset & source_mask) >> self.shift)
    }
}

impl fmt::Display for Swizzle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Swizzle<{}, {}, {}>", self.bits, self.base, self.shift)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_swizzle_permutes_each_block_of_offsets_and_undoes_itself() {
        for (bits, base, shift) in [(3, 2, 3), (3, 3, 3), (2, 0, 5), (5, 0, 5), (1, 4, 4)] {
            let swizzle = Swizzle::new(bits, base, shift).unwrap();
            let block = 1u32 << (bits + base + shift);
            let mut seen = vec![false; block as usize * 2];
            for offset in 0..2 * block {
                let stored = swizzle.apply(offset);
                assert_eq!(stored / block, offset / block, "{swizzle} moves {offset} to another block");
                assert!(!std::mem::replace(&mut seen[stored as usize], true), "{swizzle} maps two offsets to {stored}");
                assert_eq!(swizzle.apply(stored), offset, "{swizzle} is its own inverse");
            }
        }
    }

    #[test]
    fn swizzle_5_0_5_is_chapter_3s_xor_of_row_into_column() {
        let swizzle = Swizzle::new(5, 0, 5).unwrap();
        for (row, column) in [(0, 7), (3, 5), (31, 31), (17, 2)] {
            assert_eq!(swizzle.apply(row * 32 + column), row * 32 + (column ^ row));
        }
    }

    #[test]
    fn vectors_of_2_to_the_m_elements_stay_together() {
        // Swizzle<3, 2, 3> on a float tile[32][32]: float4 vectors (4 floats) move as a whole.
        let swizzle = Swizzle::new(3, 2, 3).unwrap();
        for offset in (0..1024).step_by(4) {
            let stored = swizzle.apply(offset);
            assert_eq!(stored % 4, 0);
            assert!((1..4).all(|i| swizzle.apply(offset + i) == stored + i));
        }
        // Row 5's vector 2 (floats 8-11) is stored as vector 2 ^ 5 = 7 of the same row.
        assert_eq!(swizzle.apply(5 * 32 + 8), 5 * 32 + 28);
    }

    #[test]
    fn overlapping_or_too_wide_swizzles_are_refused() {
        assert_eq!(Swizzle::new(3, 0, 2), Err(SwizzleError::Overlap { bits: 3, base: 0, shift: 2 }));
        assert!(Swizzle::new(3, 20, 10).unwrap_err().to_string().contains("at most 31"));
        assert_eq!(Swizzle::IDENTITY.apply(1234), 1234);
    }
}
