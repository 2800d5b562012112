use std::{cell::RefCell, collections::HashMap, sync::Arc};

use cudarc::{
    driver::{
        CudaContext, CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, DeviceRepr, DriverError,
        ValidAsZeroBits, sys,
    },
    nvrtc::Ptx,
};
use serde::Serialize;
use thiserror::Error;

use crate::{
    compile,
    host_words::HostWords,
    source,
    static_shared::{self, STATIC_SHARED_LIMIT_BYTES, TooMuchStaticShared},
    written_globals,
};

/// Set to any value to skip GPU runs even where a GPU exists.
pub const NO_GPU_VAR: &str = "BCM_NO_GPU";

/// Why GPU runs cannot happen here: each case names what to do about it.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum Unavailable {
    #[error("GPU runs turned off ({0})")]
    TurnedOff(String),
    #[error("no NVIDIA driver found (libcuda.so could not be loaded)")]
    NoDriver,
    #[error("the NVIDIA driver found no CUDA device")]
    NoDevice,
    #[error(
        "NVRTC (libnvrtc.so) could not be loaded: install the CUDA toolkit or add its lib64 folder to LD_LIBRARY_PATH"
    )]
    NoNvrtc,
    #[error("the CUDA driver failed to open GPU 0: {0}")]
    Driver(String),
}

/// A CUDA failure once a GPU is open.
#[derive(Debug, Error)]
pub enum GpuError {
    #[error("CUDA driver error: {0}")]
    Driver(#[from] DriverError),
    #[error("kernel file `{0}` not found in kernels/ (searched {1}) and not embedded in this build")]
    MissingSource(String, String),
    #[error("NVRTC could not compile {file} for {arch}:\n{log}")]
    Compile { file: String, arch: String, log: String },
    #[error("kernel `{kernel}` not found in {file}")]
    MissingKernel { file: String, kernel: String },
    /// The driver refused the module, whose kernels declare more static shared memory than a block may have.
    #[error("{file} {over}")]
    TooMuchStaticShared { file: String, over: TooMuchStaticShared },
    #[error("{0}")]
    WrongResult(String),
    #[error("cuBLAS: {0}")]
    Blas(String),
    #[error("cuFFT: {0}")]
    Fft(String),
    #[error(
        "kernel `{kernel}` asks for {asked} bytes of dynamic shared memory; this GPU gives a block at most {limit} \
         (shared memory per block, opt-in): use smaller tiles or fewer stages"
    )]
    TooMuchDynamicShared { kernel: String, asked: u32, limit: u32 },
    #[error("tensor map: {0}")]
    TensorMap(String),
}

/// What the course reports about the device it ran on.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GpuInfo {
    pub name: String,
    pub compute_capability: (i32, i32),
    pub multiprocessors: u32,
    /// Maximum SM clock the driver reports.
    pub clock_mhz: u32,
    /// e.g. `13.0`: the CUDA version the driver supports.
    pub driver_cuda_version: String,
    pub max_threads_per_sm: u32,
    pub shared_bytes_per_sm: u32,
    pub shared_bytes_per_block_optin: u32,
}

impl GpuInfo {
    /// The NVIDIA H100 80GB HBM3 the course was measured on, as `Gpu::open` reports it: for tests
    /// that need a GPU's shape (launch sizes, declared counts) on a machine without one.
    pub fn h100() -> GpuInfo {
        GpuInfo {
            name: "NVIDIA H100 80GB HBM3".into(),
            compute_capability: (9, 0),
            multiprocessors: 132,
            clock_mhz: 1980,
            driver_cuda_version: "13.0".into(),
            max_threads_per_sm: 2048,
            shared_bytes_per_sm: 233472,
            shared_bytes_per_block_optin: 232448,
        }
    }

    /// `sm_90` style name of the architecture.
    pub fn arch(&self) -> String {
        compile::sm_name(self.compute_capability)
    }

    /// Bytes per second all SMs' shared memory can deliver: 32 banks x 4 bytes per clock.
    pub fn shared_peak_bytes_per_s(&self) -> f64 {
        32.0 * 4.0 * self.multiprocessors as f64 * self.clock_mhz as f64 * 1e6
    }
}

/// Blocks that fit on one SM at a time, and what fraction of its threads they occupy.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Occupancy {
    pub blocks_per_sm: u32,
    pub threads_per_sm: u32,
    /// Resident threads over the SM's maximum.
    pub fraction: f64,
    /// What the kernel asks of each SM's register file and shared memory.
    pub registers_per_thread: u32,
    pub shared_bytes_per_block: u32,
}

/// A module compiled from text by [`Gpu::module_from_text`].
pub struct TextModule {
    module: Arc<CudaModule>,
    /// The text's name in messages.
    name: String,
    ptx: String,
}

impl TextModule {
    /// The PTX it was compiled to.
    pub fn ptx(&self) -> &str {
        &self.ptx
    }

    /// Its kernel `kernel`.
    pub fn function(&self, kernel: &str) -> Result<CudaFunction, GpuError> {
        self.module
            .load_function(kernel)
            .map_err(|_| GpuError::MissingKernel { file: self.name.clone(), kernel: kernel.to_owned() })
    }

    /// The bytes of its module-scope variable `name`, as the kernels launched so far left them.
    pub fn bytes(&self, gpu: &Gpu, name: &str) -> Result<Vec<u8>, GpuError> {
        let global = self.module.get_global(name, gpu.stream())?;
        let mut bytes = vec![0u8; global.len()];
        gpu.stream().memcpy_dtoh(&global, &mut bytes)?;
        Ok(bytes)
    }

    /// Sets its module-scope pointer `name` (a `__device__ T *name;`) to `address`.
    pub fn set_address(&self, gpu: &Gpu, name: &str, address: u64) -> Result<(), GpuError> {
        let mut global = self.module.get_global(name, gpu.stream())?;
        gpu.stream().memcpy_htod(&address.to_le_bytes(), &mut global)?;
        Ok(gpu.stream().synchronize()?)
    }

    /// Each of its module-scope variables (`__device__`, `__constant__`, a function's `static`, a
    /// string literal) but `exempt`, with its bytes as the kernels launched so far left them: the
    /// memory that lasts from one launch to the next. (A variable the driver does not find was
    /// left out of the machine code, being never used.)
    pub fn variables(&self, gpu: &Gpu, exempt: &[&str]) -> Result<Vec<(String, Vec<u8>)>, GpuError> {
        let not_found = DriverError(sys::CUresult::CUDA_ERROR_NOT_FOUND);
        let mut variables = Vec::new();
        for name in written_globals::module_variables(&self.ptx).into_iter().filter(|name| !exempt.contains(name)) {
            match self.bytes(gpu, name) {
                Ok(bytes) => variables.push((name.to_owned(), bytes)),
                Err(GpuError::Driver(error)) if error == not_found => {}
                Err(error) => return Err(error),
            }
        }
        Ok(variables)
    }
}

/// How many GPUs this process sees (at least one), once CUDA has started, unless `BCM_NO_GPU` is
/// set or CUDA, a GPU or NVRTC is missing.
fn usable() -> Result<i32, Unavailable> {
    if std::env::var_os(NO_GPU_VAR).is_some() {
        return Err(Unavailable::TurnedOff(format!("{NO_GPU_VAR} is set")));
    }
    // SAFETY: only tries to dlopen the library; no CUDA call is made.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(Unavailable::NoDriver);
    }
    let count = CudaContext::device_count().map_err(|e| match e.0 {
        sys::cudaError_enum::CUDA_ERROR_NO_DEVICE => Unavailable::NoDevice,
        _ => Unavailable::Driver(e.to_string()),
    })?;
    if count == 0 {
        return Err(Unavailable::NoDevice);
    }
    // SAFETY: as above, a dlopen attempt only.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err(Unavailable::NoNvrtc);
    }
    Ok(count)
}

/// An open GPU with one stream and a cache of compiled kernel files.
pub struct Gpu {
    context: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    info: GpuInfo,
    modules: RefCell<HashMap<String, Arc<CudaModule>>>,
}

impl Gpu {
    /// Opens GPU 0, unless `BCM_NO_GPU` is set; never panics when CUDA is missing.
    pub fn open() -> Result<Gpu, Unavailable> {
        usable()?;
        let context = CudaContext::new(0).map_err(|e| Unavailable::Driver(e.to_string()))?;
        let info = read_info(&context).map_err(|e| Unavailable::Driver(e.to_string()))?;
        let stream = context.default_stream();
        Ok(Gpu { context, stream, info, modules: RefCell::default() })
    }

    /// The UUID of each GPU this process sees, numbered from 0 as CUDA numbers them, as
    /// `nvidia-smi -L` writes it (`GPU-` and 32 hex digits): the one name of a GPU that every process
    /// on the host shares, whatever its `CUDA_VISIBLE_DEVICES`. No context is made: a grader only
    /// names its GPUs (on a host of four H100s, 1.0 s where making a context too took 1.2 to 1.4 s).
    pub fn uuids() -> Result<Vec<String>, Unavailable> {
        use cudarc::driver::result::device;
        let driver = |e: DriverError| Unavailable::Driver(e.to_string());
        (0..usable()?)
            .map(|ordinal| {
                let bytes = device::get_uuid(device::get(ordinal).map_err(driver)?).map_err(driver)?.bytes;
                Ok(uuid_text(&bytes.map(|byte| byte as u8)))
            })
            .collect()
    }

    pub fn info(&self) -> &GpuInfo {
        &self.info
    }

    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// A kernel from `kernels/FILE`, compiled with NVRTC for this GPU on first use.
    pub fn function(&self, file: &str, kernel: &str) -> Result<CudaFunction, GpuError> {
        let module = self.module(file)?;
        module
            .load_function(kernel)
            .map_err(|_| GpuError::MissingKernel { file: file.to_owned(), kernel: kernel.to_owned() })
    }

    /// [`Gpu::function`], allowed to launch with up to `bytes` of dynamic shared memory: past
    /// 48 KiB a kernel must opt in, up to the GPU's per-block limit (227 KiB on the H100).
    pub fn function_with_dynamic_shared(&self, file: &str, kernel: &str, bytes: u32) -> Result<CudaFunction, GpuError> {
        let limit = self.info.shared_bytes_per_block_optin;
        if bytes > limit {
            return Err(GpuError::TooMuchDynamicShared { kernel: kernel.to_owned(), asked: bytes, limit });
        }
        let function = self.function(file, kernel)?;
        let attribute = sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
        function.set_attribute(attribute, bytes as i32)?;
        Ok(function)
    }

    fn module(&self, file: &str) -> Result<Arc<CudaModule>, GpuError> {
        if let Some(module) = self.modules.borrow().get(file) {
            return Ok(module.clone());
        }
        let source = source::load_for_compile(file).map_err(|missing| {
            let searched = source::search_dirs().iter().map(|d| d.display().to_string()).collect::<Vec<_>>();
            let wanted = match missing.included_from {
                Some(parent) => format!("{} (included from {parent})", missing.file),
                None => missing.file,
            };
            GpuError::MissingSource(wanted, searched.join(", "))
        })?;
        let (module, _) = self.compile(file, &source.display_name(), &source.text)?;
        self.modules.borrow_mut().insert(file.to_owned(), module.clone());
        Ok(module)
    }

    /// Kernel `kernel` of a source that is not in `kernels/` (an exercise): `text` is compiled as
    /// it is, once per call, and compiler messages name `display_name` (see
    /// [`source::expand_for_compile`] for its includes).
    pub fn function_from_text(&self, display_name: &str, text: &str, kernel: &str) -> Result<CudaFunction, GpuError> {
        self.module_from_text(display_name, text)?.function(kernel)
    }

    /// `text` compiled as it is (see [`Gpu::function_from_text`]), for its kernels and the
    /// `__device__` words they write.
    pub fn module_from_text(&self, display_name: &str, text: &str) -> Result<TextModule, GpuError> {
        let (module, ptx) = self.compile(display_name, display_name, text)?;
        Ok(TextModule { module, name: display_name.to_owned(), ptx })
    }

    /// A module from [`compile::ptx`]'s PTX of a text (compiled on any thread for this GPU's
    /// [`GpuInfo::compute_capability`]), named `display_name` in messages.
    pub fn module_from_ptx(&self, display_name: &str, ptx: String) -> Result<TextModule, GpuError> {
        let module = self.load(display_name, &ptx)?;
        Ok(TextModule { module, name: display_name.to_owned(), ptx })
    }

    /// NVRTC for this GPU's architecture, loaded, and its PTX; `file` names the source in errors,
    /// `name` in messages.
    fn compile(&self, file: &str, name: &str, text: &str) -> Result<(Arc<CudaModule>, String), GpuError> {
        let ptx = compile::ptx(self.info.compute_capability, file, name, text)?;
        Ok((self.load(file, &ptx)?, ptx))
    }

    /// `ptx` loaded; `file` names its source in errors.
    fn load(&self, file: &str, ptx: &str) -> Result<Arc<CudaModule>, GpuError> {
        let declared_bytes = static_shared::declared_bytes(ptx);
        self.context.load_module(Ptx::from_src(ptx)).map_err(|error| match declared_bytes > STATIC_SHARED_LIMIT_BYTES {
            true => self.too_much_static_shared(file, declared_bytes),
            false => error.into(),
        })
    }

    /// A module of `file` that declares `declared_bytes` of static shared memory, more than a block
    /// may have.
    pub fn too_much_static_shared(&self, file: &str, declared_bytes: u64) -> GpuError {
        GpuError::TooMuchStaticShared {
            file: file.to_owned(),
            over: TooMuchStaticShared {
                declared_bytes,
                dynamic_limit_bytes: self.info.shared_bytes_per_block_optin.into(),
            },
        }
    }

    pub fn upload<T: DeviceRepr>(&self, data: &[T]) -> Result<CudaSlice<T>, GpuError> {
        Ok(self.stream.clone_htod(data)?)
    }

    /// A copy of `data` made on the GPU.
    pub fn copy<T: DeviceRepr>(&self, data: &CudaSlice<T>) -> Result<CudaSlice<T>, GpuError> {
        Ok(self.stream.clone_dtod(data)?)
    }

    pub fn zeros<T: DeviceRepr + ValidAsZeroBits>(&self, len: usize) -> Result<CudaSlice<T>, GpuError> {
        Ok(self.stream.alloc_zeros(len)?)
    }

    pub fn download<T: DeviceRepr>(&self, data: &CudaSlice<T>) -> Result<Vec<T>, GpuError> {
        Ok(self.stream.clone_dtoh(data)?)
    }

    pub fn synchronize(&self) -> Result<(), GpuError> {
        Ok(self.stream.synchronize()?)
    }

    /// `len` zeroed words in the host's memory that this GPU's kernels can write: see [`HostWords`].
    pub fn host_words(&self, len: usize) -> Result<HostWords, GpuError> {
        HostWords::new(self, len)
    }

    /// Makes this GPU's context the calling thread's.
    pub(crate) fn bind(&self) -> Result<(), GpuError> {
        Ok(self.context.bind_to_thread()?)
    }

    pub(crate) fn timing_event(&self) -> Result<CudaEvent, GpuError> {
        Ok(self.context.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))?)
    }

    /// How many blocks of `block_threads` threads (plus `dynamic_shared` bytes) fit on one SM.
    pub fn occupancy(
        &self,
        function: &CudaFunction,
        block_threads: u32,
        dynamic_shared: usize,
    ) -> Result<Occupancy, GpuError> {
        let blocks_per_sm =
            function.occupancy_max_active_blocks_per_multiprocessor(block_threads, dynamic_shared, None)?;
        let threads_per_sm = blocks_per_sm * block_threads;
        Ok(Occupancy {
            blocks_per_sm,
            threads_per_sm,
            fraction: threads_per_sm as f64 / self.info.max_threads_per_sm as f64,
            registers_per_thread: function.num_regs()? as u32,
            shared_bytes_per_block: function.shared_size_bytes()? as u32 + dynamic_shared as u32,
        })
    }
}

/// The NVIDIA kernel driver's version (e.g. `580.159.04`), where Linux reports it.
pub fn driver_version() -> Option<String> {
    parse_driver_version(&std::fs::read_to_string("/proc/driver/nvidia/version").ok()?)
}

/// The first version-shaped word (digits and dots) of `/proc/driver/nvidia/version`'s first line.
fn parse_driver_version(text: &str) -> Option<String> {
    let is_version = |word: &&str| word.contains('.') && word.chars().all(|c| c.is_ascii_digit() || c == '.');
    text.lines().next()?.split_whitespace().find(is_version).map(str::to_owned)
}

/// A GPU's 16 UUID bytes as `nvidia-smi -L` writes them: `GPU-` and the hex digits grouped 8-4-4-4-12.
fn uuid_text(bytes: &[u8; 16]) -> String {
    let hex: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("GPU-{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}

fn read_info(context: &Arc<CudaContext>) -> Result<GpuInfo, DriverError> {
    use sys::CUdevice_attribute::*;
    let attribute = |a| context.attribute(a).map(|v| v as u32);
    let mut driver_version = 0;
    // SAFETY: writes one integer; the driver library is loaded (the context exists).
    unsafe { sys::cuDriverGetVersion(&mut driver_version) }.result()?;
    Ok(GpuInfo {
        name: context.name()?,
        compute_capability: context.compute_capability()?,
        multiprocessors: attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        clock_mhz: attribute(CU_DEVICE_ATTRIBUTE_CLOCK_RATE)? / 1000,
        driver_cuda_version: format!("{}.{}", driver_version / 1000, driver_version % 1000 / 10),
        max_threads_per_sm: attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?,
        shared_bytes_per_sm: attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)?,
        shared_bytes_per_block_optin: attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
    })
}

#[cfg(test)]
mod tests {
    use super::{parse_driver_version, uuid_text};

    #[test]
    fn a_uuid_is_written_as_nvidia_smi_writes_it() {
        let bytes = [0x8f, 0x2a, 0x01, 0x5c, 0x9e, 0x3b, 0x4d, 0x70, 0xa1, 0x16, 0x02, 0xff, 0x00, 0xc4, 0x5d, 0x9b];
        assert_eq!(uuid_text(&bytes), "GPU-8f2a015c-9e3b-4d70-a116-02ff00c45d9b");
    }

    #[test]
    fn driver_version_in_both_module_formats() {
        let open = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (dvs-builder@U16)\nGCC version: 12";
        assert_eq!(parse_driver_version(open).as_deref(), Some("580.159.04"));
        let proprietary = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14  Thu Feb 22 01:44:30 UTC 2024";
        assert_eq!(parse_driver_version(proprietary).as_deref(), Some("550.54.14"));
        assert_eq!(parse_driver_version(""), None);
    }
}
