//! cuBLAS, the reference the GEMM lessons compare with: SGEMM in FP32 in the default math mode, so
//! no TF32 tensor-core shortcut; and GEMMs of bf16 or fp16 on the tensor cores, accumulated in FP32.

use cudarc::cublas::{CudaBlas, Gemm, GemmConfig, sys::cublasOperation_t};
use cudarc::driver::CudaSlice;

use crate::{Gpu, GpuError};

/// A cuBLAS handle on the GPU's stream.
pub struct Blas {
    handle: CudaBlas,
}

impl Gpu {
    /// Opens cuBLAS, loaded at run time like the driver.
    pub fn blas(&self) -> Result<Blas, GpuError> {
        // SAFETY: only tries to dlopen the library.
        if !unsafe { cudarc::cublas::sys::is_culib_present() } {
            return Err(GpuError::Blas(
                "cuBLAS (libcublas.so) could not be loaded: install the CUDA toolkit or add its lib64 folder to \
                 LD_LIBRARY_PATH"
                    .into(),
            ));
        }
        let handle = CudaBlas::new(self.stream().clone()).map_err(|e| GpuError::Blas(e.to_string()))?;
        Ok(Blas { handle })
    }
}

/// The row-major `c = a * b` as cuBLAS, column-major, computes it: C^T = B^T A^T.
fn row_major_config<T>((m, n, k): (usize, usize, usize), one: T, zero: T) -> GemmConfig<T> {
    GemmConfig {
        transa: cublasOperation_t::CUBLAS_OP_N,
        transb: cublasOperation_t::CUBLAS_OP_N,
        m: n as i32,
        n: m as i32,
        k: k as i32,
        alpha: one,
        lda: n as i32,
        ldb: k as i32,
        beta: zero,
        ldc: n as i32,
    }
}

/// A 16-bit floating-point type cuBLAS multiplies on the tensor cores: `half::bf16` or `half::f16`.
pub trait HalfFloat: Copy {
    const ONE: Self;
    const ZERO: Self;
}

impl HalfFloat for half::bf16 {
    const ONE: Self = half::bf16::ONE;
    const ZERO: Self = half::bf16::ZERO;
}

impl HalfFloat for half::f16 {
    const ONE: Self = half::f16::ONE;
    const ZERO: Self = half::f16::ZERO;
}

impl Blas {
    /// `c = a * b` for row-major `a` (m x k), `b` (k x n), `c` (m x n).
    pub fn sgemm_row_major(
        &self,
        shape: (usize, usize, usize),
        a: &CudaSlice<f32>,
        b: &CudaSlice<f32>,
        c: &mut CudaSlice<f32>,
    ) -> Result<(), GpuError> {
        // SAFETY: the slices hold m*k, k*n and m*n floats, as the leading dimensions say.
        unsafe { self.handle.gemm(row_major_config(shape, 1.0f32, 0.0), b, a, c) }
            .map_err(|e| GpuError::Blas(e.to_string()))
    }

    /// `c = a * b` in bf16 or fp16, row-major as [`Blas::sgemm_row_major`]: `cublasGemmEx` with
    /// FP32 accumulation (`CUBLAS_COMPUTE_32F`), `c` rounded to `T`.
    pub fn half_gemm_row_major<T: HalfFloat>(
        &self,
        shape: (usize, usize, usize),
        a: &CudaSlice<T>,
        b: &CudaSlice<T>,
        c: &mut CudaSlice<T>,
    ) -> Result<(), GpuError>
    where
        CudaBlas: Gemm<T>,
    {
        // SAFETY: the slices hold m*k, k*n and m*n elements, as the leading dimensions say.
        unsafe { self.handle.gemm(row_major_config(shape, T::ONE, T::ZERO), b, a, c) }
            .map_err(|e| GpuError::Blas(e.to_string()))
    }
}
