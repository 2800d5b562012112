//! cuFFT, the reference the FFT lesson times its kernels against: batched single-precision
//! complex-to-complex forward transforms.

use cudarc::cufft::{CudaFft, FftDirection, sys::cufftType};
use cudarc::driver::CudaSlice;

pub use cudarc::cufft::sys::float2;

use crate::{Gpu, GpuError};

/// A cuFFT plan for `batch` forward transforms of `points` complex floats each, on the GPU's stream.
pub struct Fft {
    plan: CudaFft,
    len: usize,
}

impl Gpu {
    /// Plans a batch of forward C2C transforms, cuFFT loaded at run time like the driver.
    pub fn fft(&self, points: usize, batch: usize) -> Result<Fft, GpuError> {
        // SAFETY: only tries to dlopen the library.
        if !unsafe { cudarc::cufft::sys::is_culib_present() } {
            return Err(GpuError::Fft(
                "cuFFT (libcufft.so) could not be loaded: install the CUDA toolkit or add its lib64 folder to \
                 LD_LIBRARY_PATH"
                    .into(),
            ));
        }
        let plan = CudaFft::plan_1d(points as i32, cufftType::CUFFT_C2C, batch as i32, self.stream().clone())
            .map_err(|e| GpuError::Fft(e.to_string()))?;
        Ok(Fft { plan, len: points * batch })
    }
}

impl Fft {
    /// `output` = the forward transform of each of `input`'s transforms, one after the other,
    /// unnormalized: `X[k] = sum_n x[n] exp(-2 pi i n k / points)`.
    pub fn forward(&self, input: &mut CudaSlice<float2>, output: &mut CudaSlice<float2>) -> Result<(), GpuError> {
        assert!(input.len() == self.len && output.len() == self.len, "the plan's batch of points");
        self.plan.exec_c2c(input, output, FftDirection::Forward).map_err(|e| GpuError::Fft(e.to_string()))
    }
}
