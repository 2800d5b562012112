//! The GPU side of the runs: inputs, launches and the checks of their outputs.

use cuda_kernels::{
    CudaFunction, CudaSlice, DeviceRepr, Gpu, GpuError, LaunchConfig, PushKernelArg,
    blas::Blas,
    half::{bf16, f16},
};
use lesson_kit::{OutputCheck, Prepared, floats::random_floats};

use crate::{
    Multiply, PROFILED_SIZE,
    gemm::{self, Element, Shape, THREADS, Tiles, Tolerance, cpu_product},
    m_major::{self, MMajor},
};

/// Rows of a timed cuBLAS output checked against the CPU.
const CUBLAS_ROWS_CHECKED: usize = 16;

/// The 16-bit types the GEMMs take, as the CPU reads them and cuBLAS multiplies them.
trait Half: DeviceRepr + Copy + Unpin + 'static {
    fn round(value: f32) -> Self;
    fn value(self) -> f32;
    fn cublas(
        blas: &Blas,
        shape: Shape,
        a: &CudaSlice<Self>,
        b: &CudaSlice<Self>,
        c: &mut CudaSlice<Self>,
    ) -> Result<(), GpuError>;
}

/// The dimensions as cuBLAS takes them.
fn dimensions(shape: Shape) -> (usize, usize, usize) {
    (shape.m as usize, shape.n as usize, shape.k as usize)
}

/// bf16 and fp16 alike: the `half` crate's conversions, and cuBLAS's GEMM of the type.
macro_rules! half_type {
    ($type:ty) => {
        impl Half for $type {
            fn round(value: f32) -> Self {
                <$type>::from_f32(value)
            }
            fn value(self) -> f32 {
                self.to_f32()
            }
            fn cublas(
                blas: &Blas,
                shape: Shape,
                a: &CudaSlice<Self>,
                b: &CudaSlice<Self>,
                c: &mut CudaSlice<Self>,
            ) -> Result<(), GpuError> {
                blas.half_gemm_row_major(dimensions(shape), a, b, c)
            }
        }
    };
}
half_type!(bf16);
half_type!(f16);

/// Random inputs of `shape` rounded to `multiply`'s type, on the GPU, and the launch and check of
/// `multiply` on them (lesson 15 times the same kernels at other pipeline depths).
pub fn prepare_gemm(gpu: &Gpu, multiply: Multiply, shape: Shape) -> Result<Box<dyn Prepared + '_>, GpuError> {
    match multiply.element() {
        Element::Bf16 => Ok(Box::new(GemmRun::<bf16>::new(gpu, multiply, shape)?)),
        Element::F16 => Ok(Box::new(GemmRun::<f16>::new(gpu, multiply, shape)?)),
    }
}

/// A GEMM with its inputs, rounded to `T`, on the GPU and on the CPU.
struct GemmRun<'g, T> {
    gpu: &'g Gpu,
    multiply: Multiply,
    /// The kernel and its tiles; `None` for cuBLAS.
    kernel: Option<(CudaFunction, Tiles)>,
    shape: Shape,
    a: Vec<f32>,
    b: Vec<f32>,
    device_a: CudaSlice<T>,
    device_b: CudaSlice<T>,
    device_c: CudaSlice<T>,
    /// cuBLAS, where the run is cuBLAS or is checked against it.
    blas: Option<Blas>,
}

impl<'g, T: Half> GemmRun<'g, T> {
    fn new(gpu: &'g Gpu, multiply: Multiply, shape: Shape) -> Result<Self, GpuError> {
        assert!(shape.fits_the_tiles(), "{shape:?} is not whole tiles");
        let (m, n, k) = dimensions(shape);
        let rounded = |len| random_floats(len).into_iter().map(T::round).collect::<Vec<T>>();
        let (a, b) = (rounded(m * k), rounded(k * n));
        let kernel = match multiply {
            Multiply::Cublas(_) => None,
            Multiply::Kernel(tiles) => {
                let name = tiles.kernel().expect("tensor_core_gemm.cu defines every kernel the lesson runs");
                Some((gpu.function_with_dynamic_shared(gemm::KERNEL_FILE, name, tiles.shared_bytes())?, tiles))
            }
        };
        // The profiled launch must be the lesson's kernel alone, so the profile size is checked
        // on the CPU; the timed sizes against cuBLAS.
        let blas = (shape != Shape::cube(PROFILED_SIZE) || kernel.is_none()).then(|| gpu.blas()).transpose()?;
        Ok(GemmRun {
            gpu,
            multiply,
            kernel,
            shape,
            device_a: gpu.upload(&a)?,
            device_b: gpu.upload(&b)?,
            device_c: gpu.upload(&vec![T::round(0.0); m * n])?,
            a: a.into_iter().map(T::value).collect(),
            b: b.into_iter().map(T::value).collect(),
            blas,
        })
    }
}

impl<T: Half> Prepared for GemmRun<'_, T> {
    fn launch(&mut self) -> Result<(), GpuError> {
        let Some((function, tiles)) = &self.kernel else {
            let blas = self.blas.as_ref().expect("cuBLAS runs open cuBLAS");
            return T::cublas(blas, self.shape, &self.device_a, &self.device_b, &mut self.device_c);
        };
        let Shape { m, n, k } = self.shape;
        let config = LaunchConfig {
            grid_dim: (self.shape.blocks(), 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: tiles.shared_bytes(),
        };
        let mut launch = self.gpu.stream().launch_builder(function);
        launch.arg(&self.device_a).arg(&self.device_b).arg(&mut self.device_c).arg(&m).arg(&n).arg(&k);
        // SAFETY: (const u16* a, const u16* b, u16* c, unsigned m, n, k): A is m x k, B k x n and
        // C m x n elements of 16 bits, m, n and k whole tiles of the kernel, one block per tile of
        // C, and the dynamic shared memory its stages and C's tile take.
        unsafe { launch.launch(config) }?;
        Ok(())
    }

    fn check(&mut self) -> Result<OutputCheck, GpuError> {
        let (m, n, _) = dimensions(self.shape);
        let got = self.gpu.download(&self.device_c)?;
        let tolerance = Tolerance::of(self.multiply.element(), self.shape);
        let value = |v: &T| v.value() as f64;
        let (reference, outside) = match (&self.blas, &self.kernel) {
            (Some(blas), Some(_)) => {
                let mut c = self.gpu.upload(&vec![T::round(0.0); m * n])?;
                T::cublas(blas, self.shape, &self.device_a, &self.device_b, &mut c)?;
                let want = self.gpu.download(&c)?;
                let mut pairs = got.iter().zip(&want).enumerate().map(|(i, (g, w))| (i, value(g), value(w)));
                ("cuBLAS", pairs.find(|&(_, g, w)| !tolerance.allows(g, w)))
            }
            _ => {
                let step = if self.shape == Shape::cube(PROFILED_SIZE) { 1 } else { m / CUBLAS_ROWS_CHECKED };
                let product = cpu_product(&self.a, &self.b, self.shape, (0..m).step_by(step));
                let got = &got;
                let mut pairs = product.iter().flat_map(|&(row, ref wants)| {
                    wants.iter().enumerate().map(move |(j, &w)| (row * n + j, value(&got[row * n + j]), w))
                });
                ("the CPU in double precision", pairs.find(|&(_, g, w)| !tolerance.allows(g, w)))
            }
        };
        if let Some((index, got, want)) = outside {
            return Err(GpuError::WrongResult(format!(
                "C[{}][{}] is {got}, {reference} says {want} (allowed: {:.0e} of it and {:.1e})",
                index / n,
                index % n,
                tolerance.relative,
                tolerance.absolute
            )));
        }
        Ok(OutputCheck::Within { tolerance: tolerance.relative, reference })
    }
}

pub(crate) fn prepare_m_major(gpu: &Gpu, spec: MMajor) -> Result<Box<dyn Prepared + '_>, GpuError> {
    Ok(Box::new(MMajorRun {
        gpu,
        function: gpu.function(m_major::KERNEL_FILE, spec.kernel())?,
        out: gpu.zeros((spec.blocks * m_major::THREADS) as usize)?,
        spec,
    }))
}

struct MMajorRun<'g> {
    gpu: &'g Gpu,
    function: CudaFunction,
    spec: MMajor,
    out: CudaSlice<u16>,
}

impl Prepared for MMajorRun<'_> {
    fn launch(&mut self) -> Result<(), GpuError> {
        let config = LaunchConfig {
            grid_dim: (self.spec.blocks, 1, 1),
            block_dim: (m_major::THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut launch = self.gpu.stream().launch_builder(&self.function);
        launch.arg(&mut self.out).arg(&self.spec.iterations);
        // SAFETY: (u16* out, unsigned iterations); `out` holds a value per thread of every block.
        unsafe { launch.launch(config) }?;
        Ok(())
    }

    fn check(&mut self) -> Result<OutputCheck, GpuError> {
        let out = self.gpu.download(&self.out)?;
        let expected = self.spec.expected();
        let threads = m_major::THREADS as usize;
        if let Some(index) = (0..out.len()).find(|&i| out[i] != expected[i % threads]) {
            return Err(GpuError::WrongResult(format!(
                "block {}, thread {}: {:#06x}, the fragments of the tile say {:#06x}",
                index / threads,
                index % threads,
                out[index],
                expected[index % threads]
            )));
        }
        Ok(OutputCheck::exact(&out))
    }
}
