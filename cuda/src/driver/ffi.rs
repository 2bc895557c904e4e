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

/// `CUdevice_attribute` values read by [`CudaInfo`](crate::CudaInfo).
pub const ATTR_INTEGRATED: c_int = 18;
pub const ATTR_CAN_MAP_HOST_MEMORY: c_int = 19;
pub const ATTR_UNIFIED_ADDRESSING: c_int = 41;
pub const ATTR_COMPUTE_CAPABILITY_MAJOR: c_int = 75;
pub const ATTR_COMPUTE_CAPABILITY_MINOR: c_int = 76;
pub const ATTR_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: c_int = 91;
pub const ATTR_READ_ONLY_HOST_REGISTER_SUPPORTED: c_int = 113;

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
