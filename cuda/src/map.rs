//! [`CudaMap`]: a tensor as CUDA device memory, for as long as the map lives.

use std::cell::Cell;
use std::ffi::c_void;
use std::marker::PhantomData;
use std::sync::Arc;

use zerocam_tensor::{Access, DType, DeviceBorrow};

use crate::host::HostRegistration;

/// The import path a map took.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CudaPath {
    /// (a) The buffer's CPU mapping registered with `cuMemHostRegister`
    /// (heap, shared memory, dma-bufs where the driver allows it).
    HostRegistered,
    /// (b) A dma-buf's EGLImage registered with `cuGraphicsEGLRegisterImage`
    /// (the Jetson path for camera buffers).
    EglImage,
    /// (c) A GL PBO registered with `cuGraphicsGLRegisterBuffer`, mapped per
    /// use (`convert` outputs).
    GlBuffer,
    /// A buffer the driver would not register (a dma-buf of pages it cannot
    /// pin, on a discrete GPU), copied into a device buffer kept for it
    /// (`cuMemcpyHtoDAsync`): not zero-copy, counted in `CudaStats`.
    Staged,
}

impl std::fmt::Display for CudaPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CudaPath::HostRegistered => "host-registered",
            CudaPath::EglImage => "egl-image",
            CudaPath::GlBuffer => "gl-buffer",
            CudaPath::Staged => "staged",
        })
    }
}

/// One plane of a mapped image (or the one "plane" of an array tensor).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaPlane {
    /// The device address of the plane's first element.
    pub device_ptr: u64,
    /// Bytes between the starts of two rows.
    pub pitch: usize,
    /// The plane's shape (rows, columns[, channels]) in elements.
    pub shape: Vec<usize>,
    /// Bytes from the first element to the end of the last.
    pub len: usize,
}

/// Bytes between rows of `t`: an image's row stride, else the stride of the
/// second-to-last axis, else (1-D) its length in bytes.
pub(crate) fn row_pitch<T: zerocam_tensor::Element>(
    t: &zerocam_tensor::Tensor<T>,
    len: usize,
) -> usize {
    t.row_stride()
        .or_else(|| {
            t.shape()
                .len()
                .checked_sub(2)
                .and_then(|axis| t.stride(axis))
        })
        .unwrap_or(len)
}

/// What keeps a map's device memory valid.
pub(crate) enum Keep {
    /// A host registration (unregistered when its last holder drops).
    Host {
        _registrations: Vec<Arc<HostRegistration>>,
    },
    /// The staged path's device buffers (freed when their last holder drops).
    Staged {
        _buffers: Vec<Arc<crate::staged::StagedBuffer>>,
    },
    /// A GL or EGL interop mapping, ended on the GL thread when dropped.
    #[cfg(feature = "gl")]
    Interop { _map: crate::gl::InteropMap },
}

/// A tensor mapped into a CUDA device's address space. Made by
/// [`Cuda::map`](crate::Cuda::map) and [`Cuda::map_frame`](crate::Cuda::map_frame).
///
/// While the map lives the device may read (and, for a read-write map, write)
/// the memory at [`device_ptr`](CudaMap::device_ptr): the tensor's buffer is
/// borrowed for a device, so conflicting CPU maps are refused, and the
/// buffer's registration stays alive. Dropping the map ends the borrow (and
/// unmaps a GL buffer); the registration stays cached for the next frame.
/// Work queued on [`stream`](CudaMap::stream) must be finished (or
/// [`synchronize`](CudaMap::synchronize)d) before the map drops.
///
/// `Send` (the device pointer is usable from any thread of the process) but
/// not `Sync`: two threads must not share one map without their own ordering.
///
/// ```
/// fn send<T: Send>() {}
/// send::<zerocam_cuda::CudaMap>();
/// ```
/// ```compile_fail
/// fn sync<T: Sync>() {}
/// sync::<zerocam_cuda::CudaMap>();
/// ```
pub struct CudaMap {
    device_ptr: u64,
    /// Path (a): the CPU address of the first element (the registered mapping).
    host_ptr: Option<u64>,
    len: usize,
    shape: Vec<usize>,
    strides: Option<Vec<usize>>,
    dtype: DType,
    planes: Vec<CudaPlane>,
    path: CudaPath,
    access: Access,
    stream: crate::cuda::StreamRef,
    integrated: bool,
    // `_keep` drops first: a GL buffer's unmap is queued on the GL thread
    // before the borrow ends, so a CPU (GL) map made after the borrow ends
    // is queued after the unmap.
    _keep: Keep,
    _borrow: DeviceBorrow,
    _not_sync: PhantomData<Cell<()>>,
}

impl std::fmt::Debug for CudaMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaMap")
            .field("device_ptr", &format_args!("{:#x}", self.device_ptr))
            .field("len", &self.len)
            .field("shape", &self.shape)
            .field("path", &self.path)
            .field("access", &self.access)
            .finish()
    }
}

/// Where a map's memory lies and what it holds: everything of a
/// [`CudaMap`] but what keeps it valid.
pub(crate) struct MapGeometry {
    pub device_ptr: u64,
    pub host_ptr: Option<u64>,
    pub len: usize,
    pub shape: Vec<usize>,
    pub strides: Option<Vec<usize>>,
    pub dtype: DType,
    pub planes: Vec<CudaPlane>,
    pub path: CudaPath,
}

impl CudaMap {
    /// A map of `geometry` on `cuda`'s stream, valid while `keep` and
    /// `borrow` live.
    pub(crate) fn assemble(
        geometry: MapGeometry,
        cuda: &crate::Cuda,
        access: Access,
        borrow: DeviceBorrow,
        keep: Keep,
    ) -> CudaMap {
        CudaMap {
            device_ptr: geometry.device_ptr,
            host_ptr: geometry.host_ptr,
            len: geometry.len,
            shape: geometry.shape,
            strides: geometry.strides,
            dtype: geometry.dtype,
            planes: geometry.planes,
            path: geometry.path,
            access,
            stream: cuda.stream_ref().clone(),
            integrated: cuda.info().integrated,
            _keep: keep,
            _borrow: borrow,
            _not_sync: PhantomData,
        }
    }

    /// The device address of the tensor's first element (a `CUdeviceptr`).
    pub fn device_ptr(&self) -> u64 {
        self.device_ptr
    }

    /// The CPU address of the first element for host-registered memory
    /// (path a: page-locked, device-mapped; what DLPack calls `kDLCUDAHost`
    /// memory), `None` for the interop paths.
    pub fn host_ptr(&self) -> Option<u64> {
        self.host_ptr
    }

    /// Bytes from the first element to the end of the last (row padding included).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the map is empty (never: empty tensors are refused).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The tensor's shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Byte strides matching [`shape`](CudaMap::shape), when uniform.
    pub fn strides(&self) -> Option<&[usize]> {
        self.strides.as_deref()
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Row pitch in bytes of the first plane (the tensor's row stride).
    pub fn pitch(&self) -> usize {
        self.planes.first().map_or(0, |p| p.pitch)
    }

    /// The planes of an image (Y and UV of NV12...), one for other tensors.
    pub fn planes(&self) -> &[CudaPlane] {
        &self.planes
    }

    /// How the memory reached the device.
    pub fn path(&self) -> CudaPath {
        self.path
    }

    /// The access the device was granted.
    pub fn access(&self) -> Access {
        self.access
    }

    /// Whether the device shares DRAM with the CPU (reads in place).
    pub fn integrated(&self) -> bool {
        self.integrated
    }

    /// The `CUstream` the map belongs to: queue the work that uses the
    /// pointer on it (the [`Cuda`](crate::Cuda) handle's non-blocking stream).
    pub fn stream(&self) -> *mut c_void {
        self.stream.handle()
    }

    /// Waits for the work queued on [`stream`](CudaMap::stream).
    ///
    /// # Errors
    /// [`CudaError::Driver`](crate::CudaError::Driver) from `cuStreamSynchronize`.
    pub fn synchronize(&self) -> crate::Result<()> {
        self.stream.synchronize()
    }

    /// Copies `dst.len()` bytes from `device_ptr() + offset` to `dst` on the
    /// map's [`stream`](CudaMap::stream) (`cuMemcpyDtoHAsync`, then
    /// `cuStreamSynchronize`): what the device sees after the work queued on
    /// the stream so far (your kernels, a GL buffer's map). A check that the
    /// device sees what the CPU or a kernel wrote.
    ///
    /// # Errors
    /// [`CudaError::Mismatch`](crate::CudaError::Mismatch) when the range
    /// leaves the map; the driver's error (of the copy, or of earlier work on
    /// the stream, which the synchronize reports).
    pub fn copy_to_host(&self, offset: usize, dst: &mut [u8]) -> crate::Result<()> {
        if offset
            .checked_add(dst.len())
            .is_none_or(|end| end > self.len)
        {
            return Err(crate::CudaError::Mismatch {
                call: "CudaMap::copy_to_host",
                what: format!(
                    "{} bytes at {offset} from a {}-byte map",
                    dst.len(),
                    self.len
                ),
            });
        }
        self.stream
            .copy_to_host(self.device_ptr + offset as u64, dst)
    }
}
