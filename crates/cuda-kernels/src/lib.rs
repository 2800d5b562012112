//! The one crate of the course that touches CUDA.
//!
//! Everything goes through [cudarc] with the driver and NVRTC loaded at run time, so the
//! workspace builds and its other tests run on a machine with no GPU, no driver and no toolkit.
//! Opening a GPU returns [`Unavailable`] with the reason instead of panicking.
//!
//! - [`Gpu`]: the device, its properties, kernels compiled from `kernels/*.cu` with NVRTC for
//!   the device's own architecture, launch and copy helpers.
//! - [`compile`]: NVRTC's PTX of a text, on any thread, the last few a process compiled kept.
//! - [`timing`]: CUDA-event timing with warm-up, repetitions, median and spread.
//! - [`ncu`]: runs a program under Nsight Compute and reads the exact shared-memory counters.
//! - [`source`]: finds kernel sources on disk (so edits take effect at once), or embedded.
//! - [`blas`]: cuBLAS SGEMM and bf16/fp16 GEMMs, the references for the GEMM lessons.
//! - [`tensor_map`]: the tensor maps Hopper's TMA copies tiles by, in every swizzle mode.
//! - [`fft`]: cuFFT's batched complex transforms, the reference for the FFT lesson.
//! - [`sass`]: the machine code's shared-memory instructions, where `nvcc` and `cuobjdump` exist.
//! - [`static_shared`]: the static shared memory a module declares, when the driver refuses it.
//! - [`written_globals`]: the module-scope variables a module's code writes, which outlive a launch.
//! - [`address_origins`]: where each address a module's code makes comes from; none from a number.
//! - [`special_registers`]: the special registers a module's code reads beyond its launch's shape.
//! - [`launch_bounds`]: a kernel's block shape given to the assembler, for a build that needs more
//!   registers than a block of that shape may have.
//! - [`line_info`]: the source line an instruction of a module's PTX came from.
//! - [`HostWords`]: host memory kernels write, readable after a kernel trapped.
//! - [`half`]: bf16 and fp16 on the host (the `half` crate, as cudarc moves them).

pub mod address_origins;
pub mod blas;
mod calls;
pub mod compile;
pub mod fft;
mod gpu;
mod host_words;
pub mod kernel_names;
pub mod launch_bounds;
pub mod line_info;
pub mod local_memory;
mod low_bits;
pub mod module_variables;
pub mod ncu;
mod ptx_text;
mod read_before_written;
pub mod sanitizer;
pub mod sass;
pub mod source;
pub mod special_registers;
pub mod static_shared;
pub mod tensor_map;
pub mod timing;
pub mod written_globals;
pub mod zeroed_registers;

pub use half;

pub use cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, CudaView, DeviceRepr, LaunchConfig, PushKernelArg, ValidAsZeroBits,
};
pub use gpu::{Gpu, GpuError, GpuInfo, Occupancy, TextModule, Unavailable, driver_version};
pub use host_words::HostWords;
