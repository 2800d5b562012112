//! Floating-point inputs and the check of floating-point outputs, for lessons whose kernels
//! compute with floats rather than move words.

use crate::words_kernel::random_words;

/// Uniform floats in [-1, 1), different on every call (repeating inside
/// [`with_fixed_inputs`](crate::words_kernel::with_fixed_inputs), as [`random_words`] does).
pub fn random_floats(len: usize) -> Vec<f32> {
    random_words(len).into_iter().map(|w| (w >> 8) as f32 / (1u32 << 23) as f32 - 1.0).collect()
}

/// Row-major `a * b` in double precision, `a` having `k` columns and `b` `n`, for the rows listed:
/// the CPU reference of the GEMM lessons.
pub fn row_major_product(
    a: &[f32],
    b: &[f32],
    (n, k): (usize, usize),
    rows: impl Iterator<Item = usize>,
) -> Vec<(usize, Vec<f64>)> {
    rows.map(|i| {
        let mut row = vec![0.0f64; n];
        for kk in 0..k {
            let aik = a[i * k + kk] as f64;
            for (j, value) in row.iter_mut().enumerate() {
                *value += aik * b[kk * n + j] as f64;
            }
        }
        (i, row)
    })
    .collect()
}

/// `||got - want|| / ||want||`: NaN when `got` holds a NaN.
pub fn relative_error(got: &[f32], want: &[f64]) -> f64 {
    let (mut diff, mut norm) = (0.0f64, 0.0f64);
    for (g, w) in got.iter().zip(want) {
        diff += (*g as f64 - w).powi(2);
        norm += w * w;
    }
    (diff / norm).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_floats_lie_in_minus_one_to_one() {
        let floats = random_floats(4096);
        assert!(floats.iter().all(|x| (-1.0..1.0).contains(x)));
        assert!(floats.iter().any(|&x| x < -0.5) && floats.iter().any(|&x| x > 0.5));
    }

    #[test]
    fn relative_error_is_normwise_and_catches_nans() {
        assert_eq!(relative_error(&[7.0, 10.0], &[7.0, 10.0]), 0.0);
        assert_eq!(relative_error(&[3.0, 0.0], &[3.0, 4.0]), 0.8);
        assert!(relative_error(&[f32::NAN], &[1.0]).is_nan());
    }
}
