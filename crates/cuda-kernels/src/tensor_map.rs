//! Tensor maps: how Hopper's tensor memory accelerator (TMA) reads a box of a matrix into shared
//! memory (`cp.async.bulk.tensor`), encoded by the driver (`cuTensorMapEncodeTiled`) and passed
//! to a kernel by value as a `const __grid_constant__` parameter.

use std::fmt;

use cudarc::driver::{CudaSlice, DevicePtr, DeviceRepr, sys};

use crate::{Gpu, GpuError};

/// Where the TMA puts the 16-byte pieces of each box row in shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TmaSwizzle {
    None,
    Bytes32,
    Bytes64,
    Bytes128,
}

impl TmaSwizzle {
    pub const ALL: [TmaSwizzle; 4] = [TmaSwizzle::None, TmaSwizzle::Bytes32, TmaSwizzle::Bytes64, TmaSwizzle::Bytes128];

    /// The span the swizzle works within, in bytes (0 for none).
    pub fn bytes(self) -> u32 {
        match self {
            TmaSwizzle::None => 0,
            TmaSwizzle::Bytes32 => 32,
            TmaSwizzle::Bytes64 => 64,
            TmaSwizzle::Bytes128 => 128,
        }
    }

    fn driver(self) -> sys::CUtensorMapSwizzle {
        match self {
            TmaSwizzle::None => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
            TmaSwizzle::Bytes32 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_32B,
            TmaSwizzle::Bytes64 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_64B,
            TmaSwizzle::Bytes128 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
        }
    }
}

impl fmt::Display for TmaSwizzle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TmaSwizzle::None => write!(f, "NONE"),
            other => write!(f, "{}B", other.bytes()),
        }
    }
}

/// A `CUtensorMap` as the driver encoded it: 128 opaque bytes, 64-byte aligned.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub struct TensorMap([u64; 16]);

// SAFETY: plain bytes with the layout and alignment of `CUtensorMap`, which kernels take by value.
unsafe impl DeviceRepr for TensorMap {}

/// One tensor map per swizzle mode, in [`TmaSwizzle::ALL`]'s order, for a kernel that picks its
/// mode at compile time (it takes them by value: `struct { TensorMap by_swizzle[4]; }`). A mode
/// the box cannot use is all zeros: a kernel must refuse that mode before it runs.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub struct SwizzleMaps(pub [TensorMap; 4]);

// SAFETY: four `TensorMap`s, laid out as the kernel's array of four `CUtensorMap`s.
unsafe impl DeviceRepr for SwizzleMaps {}

/// A 2-D box of a row-major matrix of 16-bit elements, as `Gpu::tensor_map_2d` takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Box2d {
    /// Elements in a row of the matrix, and its rows.
    pub row_elements: u64,
    pub rows: u64,
    /// Elements in a row of the box, and its rows.
    pub box_elements: u32,
    pub box_rows: u32,
    pub swizzle: TmaSwizzle,
}

impl Box2d {
    /// Why the driver would refuse this box over `available` elements, or `None`; each answer
    /// names the fix.
    pub fn problem(&self, available: usize) -> Option<String> {
        let (row_bytes, box_bytes) = (2 * self.row_elements, 2 * u64::from(self.box_elements));
        let span = u64::from(self.swizzle.bytes());
        if row_bytes % 16 != 0 || row_bytes == 0 {
            return Some(format!("a row of the matrix is {row_bytes} bytes; the TMA needs a multiple of 16"));
        }
        if (self.row_elements * self.rows) as u128 > available as u128 {
            return Some(format!(
                "{} x {} elements do not fit in the {available} the buffer holds",
                self.rows, self.row_elements
            ));
        }
        if !(1..=256).contains(&self.box_elements) || !(1..=256).contains(&self.box_rows) {
            return Some(format!(
                "a box of {} x {} elements: each side must be 1 to 256",
                self.box_rows, self.box_elements
            ));
        }
        if box_bytes % 16 != 0 {
            return Some(format!("a box row of {box_bytes} bytes: the TMA needs a multiple of 16"));
        }
        if span > 0 && box_bytes > span {
            return Some(format!(
                "a box row of {box_bytes} bytes is wider than the {} swizzle's {span}: use a wider swizzle or a \
                 narrower box",
                self.swizzle
            ));
        }
        None
    }
}

impl Gpu {
    /// The tensor map of `shape` over `data`: interleave none, no L2 promotion, zeros out of bounds.
    pub fn tensor_map_2d(&self, data: &CudaSlice<u16>, shape: Box2d) -> Result<TensorMap, GpuError> {
        if let Some(problem) = shape.problem(data.len()) {
            return Err(GpuError::TensorMap(problem));
        }
        let dims = [shape.row_elements, shape.rows];
        let strides = [2 * shape.row_elements];
        let box_dims = [shape.box_elements, shape.box_rows];
        let element_strides = [1u32, 1];
        let mut map = std::mem::MaybeUninit::<sys::CUtensorMap>::uninit();
        let (address, _sync) = data.device_ptr(self.stream());
        // SAFETY: every array is as long as the rank (2; strides rank - 1) says, and the checks
        // above keep the box inside the buffer's rows.
        let result = unsafe {
            sys::cuTensorMapEncodeTiled(
                map.as_mut_ptr(),
                sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT16,
                2,
                address as *mut std::ffi::c_void,
                dims.as_ptr(),
                strides.as_ptr(),
                box_dims.as_ptr(),
                element_strides.as_ptr(),
                sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
                shape.swizzle.driver(),
                sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_NONE,
                sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            )
        };
        result.result().map_err(|e| GpuError::TensorMap(format!("the driver refused the map: {e}")))?;
        // SAFETY: the driver filled the map.
        Ok(TensorMap(unsafe { map.assume_init() }.opaque))
    }

    /// [`SwizzleMaps`] of `shape` (its `swizzle` ignored) over `data`: every mode the box allows
    /// encoded, the others zeros.
    pub fn tensor_maps_every_swizzle(&self, data: &CudaSlice<u16>, shape: Box2d) -> Result<SwizzleMaps, GpuError> {
        // A problem of the box itself (not of a swizzle too narrow for it) is an error.
        if let Some(problem) = (Box2d { swizzle: TmaSwizzle::None, ..shape }).problem(data.len()) {
            return Err(GpuError::TensorMap(problem));
        }
        let mut maps = SwizzleMaps([TensorMap([0; 16]); 4]);
        for (map, swizzle) in maps.0.iter_mut().zip(TmaSwizzle::ALL) {
            let shape = Box2d { swizzle, ..shape };
            if shape.problem(data.len()).is_none() {
                *map = self.tensor_map_2d(data, shape)?;
            }
        }
        Ok(maps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(row_elements: u64, box_elements: u32, swizzle: TmaSwizzle) -> Box2d {
        Box2d { row_elements, rows: 64, box_elements, box_rows: 64, swizzle }
    }

    #[test]
    fn a_box_no_wider_than_its_swizzle_is_accepted() {
        for (width, swizzle) in [(64, TmaSwizzle::Bytes128), (32, TmaSwizzle::Bytes64), (64, TmaSwizzle::None)] {
            assert_eq!(shape(width, width as u32, swizzle).problem(64 * width as usize), None);
        }
    }

    #[test]
    fn each_refusal_names_its_fix() {
        let wide = shape(64, 64, TmaSwizzle::Bytes64).problem(4096).unwrap();
        assert!(wide.contains("128 bytes is wider than the 64B swizzle's 64"), "{wide}");
        assert!(shape(12, 12, TmaSwizzle::None).problem(4096).unwrap().contains("multiple of 16"));
        assert!(shape(64, 64, TmaSwizzle::None).problem(100).unwrap().contains("do not fit"));
        let tall = Box2d { box_rows: 300, ..shape(64, 64, TmaSwizzle::None) }.problem(1 << 20).unwrap();
        assert!(tall.contains("1 to 256"), "{tall}");
    }

    #[test]
    fn maps_are_the_drivers_size_and_alignment() {
        assert_eq!(std::mem::size_of::<TensorMap>(), std::mem::size_of::<sys::CUtensorMap>());
        assert_eq!(std::mem::align_of::<TensorMap>(), 64);
        assert_eq!(std::mem::size_of::<SwizzleMaps>(), 4 * std::mem::size_of::<sys::CUtensorMap>());
        assert_eq!(TmaSwizzle::ALL.map(|s| s.to_string()), ["NONE", "32B", "64B", "128B"]);
    }
}
