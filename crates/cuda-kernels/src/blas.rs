//! cuBLAS SGEMM, the reference the GEMM lessons compare with: FP32 in the default math mode, so no
//! TF32 tensor-core shortcut.

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

impl Blas {
    /// `c = a * b` for row-major `a` (m x k), `b` (k x n), `c` (m x n).
    pub fn sgemm_row_major(
        &self,
        (m, n, k): (usize, usize, usize),
        a: &CudaSlice<f32>,
        b: &CudaSlice<f32>,
        c: &mut CudaSlice<f32>,
    ) -> Result<(), GpuError> {
        // cuBLAS is column-major: a row-major C is a column-major C^T = B^T A^T.
        let config = GemmConfig {
            transa: cublasOperation_t::CUBLAS_OP_N,
            transb: cublasOperation_t::CUBLAS_OP_N,
            m: n as i32,
            n: m as i32,
            k: k as i32,
            alpha: 1.0f32,
            lda: n as i32,
            ldb: k as i32,
            beta: 0.0f32,
            ldc: n as i32,
        };
        // SAFETY: the slices hold m*k, k*n and m*n floats, as the leading dimensions say.
        unsafe { self.handle.gemm(config, b, a, c) }.map_err(|e| GpuError::Blas(e.to_string()))
    }
}
