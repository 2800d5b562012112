//! Words in the host's memory that kernels write through a device address: what a kernel wrote
//! there before it stopped can still be read after a trap, which leaves the GPU's own memory
//! unreadable to the process.

use cudarc::driver::{DriverError, result, sys};

use crate::{Gpu, GpuError};

/// Page-locked host words, zeroed, mapped into the GPU's address space.
pub struct HostWords {
    host: *mut u32,
    len: usize,
    device_address: u64,
}

impl HostWords {
    pub(crate) fn new(gpu: &Gpu, len: usize) -> Result<HostWords, GpuError> {
        gpu.bind()?;
        let bytes = len.max(1) * std::mem::size_of::<u32>();
        // SAFETY: a fresh allocation of `bytes` bytes, zeroed before any use; freed on drop.
        let host = unsafe { result::malloc_host(bytes, sys::CU_MEMHOSTALLOC_DEVICEMAP)? } as *mut u32;
        // SAFETY: `host` holds `len` words.
        unsafe { std::ptr::write_bytes(host, 0, len) };
        let mut device_address: sys::CUdeviceptr = 0;
        // SAFETY: `host` was allocated with DEVICEMAP by `cuMemHostAlloc` in this context.
        let mapped = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device_address, host.cast(), 0).result() };
        // (Made first, so that the memory is freed if mapping failed.)
        let words = HostWords { host, len, device_address };
        mapped?;
        Ok(words)
    }

    /// Where kernels reach the words.
    pub fn device_address(&self) -> u64 {
        self.device_address
    }

    /// The words as kernels left them (read whatever state the GPU is in).
    pub fn read(&self) -> Vec<u32> {
        // SAFETY: `host` holds `len` words; volatile, since the GPU writes them behind the compiler.
        (0..self.len).map(|i| unsafe { std::ptr::read_volatile(self.host.add(i)) }).collect()
    }
}

impl Drop for HostWords {
    fn drop(&mut self) {
        // SAFETY: allocated by `cuMemHostAlloc`, freed once. (After a trap the driver may refuse;
        // the process ends then anyway.)
        let _: Result<(), DriverError> = unsafe { result::free_host(self.host.cast()) };
    }
}
