//! The CUDA driver API's C types and the constants zerocam uses, from
//! `cuda.h` / `cudaEGL.h` (stable since CUDA 4–9; the `_v2` entry points are
//! the ones 64-bit builds have used since CUDA 3.2).

use std::ffi::{c_int, c_uint, c_void};

/// `CUresult`.
pub type CuResult = c_int;
/// `CUdevice`: an ordinal.
pub type CuDevice = c_int;
/// `CUcontext`, `CUstream`, `CUgraphicsResource`: opaque handles.
pub type CuHandle = *mut c_void;
/// `CUdeviceptr`: a 64-bit device address.
pub type CuDevicePtr = u64;

pub const CUDA_SUCCESS: CuResult = 0;
/// `CUDA_ERROR_INVALID_VALUE`: what `cuDeviceGetAttribute` answers for an
/// attribute newer than the driver.
pub const CUDA_ERROR_INVALID_VALUE: CuResult = 1;
/// `CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED`: the range (or part of it) is
/// registered already, by us or by another library of the process.
pub const CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED: CuResult = 712;

/// `CUdevice_attribute` values read by [`CudaInfo`](crate::CudaInfo).
pub const ATTR_INTEGRATED: c_int = 18;
pub const ATTR_CAN_MAP_HOST_MEMORY: c_int = 19;
pub const ATTR_UNIFIED_ADDRESSING: c_int = 41;
pub const ATTR_COMPUTE_CAPABILITY_MAJOR: c_int = 75;
pub const ATTR_COMPUTE_CAPABILITY_MINOR: c_int = 76;
pub const ATTR_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: c_int = 91;
/// CUDA 11.0 and later.
pub const ATTR_HOST_REGISTER_SUPPORTED: c_int = 99;
/// CUDA 11.1 and later.
pub const ATTR_READ_ONLY_HOST_REGISTER_SUPPORTED: c_int = 113;

/// `cuda.h`'s name of a `CUdevice_attribute` zerocam reads.
pub fn attribute_name(attribute: c_int) -> &'static str {
    match attribute {
        ATTR_INTEGRATED => "CU_DEVICE_ATTRIBUTE_INTEGRATED",
        ATTR_CAN_MAP_HOST_MEMORY => "CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY",
        ATTR_UNIFIED_ADDRESSING => "CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING",
        ATTR_COMPUTE_CAPABILITY_MAJOR => "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR",
        ATTR_COMPUTE_CAPABILITY_MINOR => "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR",
        ATTR_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM => {
            "CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM"
        }
        ATTR_HOST_REGISTER_SUPPORTED => "CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED",
        ATTR_READ_ONLY_HOST_REGISTER_SUPPORTED => {
            "CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED"
        }
        _ => "a CUdevice_attribute",
    }
}

/// `CUpointer_attribute` values read of memory registered elsewhere; each
/// answers one 64-bit value (a `CUdeviceptr`, or a `size_t` on the 64-bit
/// targets zerocam builds for).
pub const POINTER_ATTRIBUTE_DEVICE_POINTER: c_int = 3;
pub const POINTER_ATTRIBUTE_RANGE_START_ADDR: c_int = 11;
pub const POINTER_ATTRIBUTE_RANGE_SIZE: c_int = 12;

/// `cuMemHostRegister` flags.
pub const MEMHOSTREGISTER_DEVICEMAP: c_uint = 0x02;
pub const MEMHOSTREGISTER_READ_ONLY: c_uint = 0x08;

/// `CUgraphicsRegisterFlags`.
#[cfg_attr(not(feature = "gl"), allow(dead_code))]
pub const GRAPHICS_REGISTER_NONE: c_uint = 0;

/// `CU_STREAM_NON_BLOCKING`: no implicit sync with the legacy default stream.
pub const STREAM_NON_BLOCKING: c_uint = 1;

/// `CU_EGL_FRAME_TYPE_PITCH`: planes are pitch-linear device pointers.
#[cfg_attr(not(feature = "gl"), allow(dead_code))]
pub const EGL_FRAME_TYPE_PITCH: c_int = 1;

/// `CUeglFrame`: what `cuGraphicsResourceGetMappedEglFrame` fills in.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CuEglFrame {
    /// `pPitch[3]` (pitch frames) or `pArray[3]` (array frames).
    pub planes: [*mut c_void; 3],
    pub width: c_uint,
    pub height: c_uint,
    pub depth: c_uint,
    /// Pitch of the first plane, in bytes.
    pub pitch: c_uint,
    pub plane_count: c_uint,
    pub num_channels: c_uint,
    pub frame_type: c_int,
    pub egl_color_format: c_int,
    pub cu_format: c_int,
}

impl Default for CuEglFrame {
    fn default() -> Self {
        CuEglFrame {
            planes: [std::ptr::null_mut(); 3],
            width: 0,
            height: 0,
            depth: 0,
            pitch: 0,
            plane_count: 0,
            num_channels: 0,
            frame_type: 0,
            egl_color_format: 0,
            cu_format: 0,
        }
    }
}
