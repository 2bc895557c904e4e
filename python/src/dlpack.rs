//! DLPack export (`__dlpack__`, `__dlpack_device__`) of a tensor and of a
//! map view: `numpy.from_dlpack(t)`, `jax.numpy.from_dlpack(t)` and
//! `torch.from_dlpack(t)` take the memory without a copy.
//!
//! The capsule's `DLManagedTensor` owns an [`ExportToken`] of a CPU map, so
//! the memory stays valid until the consumer calls the deleter (an
//! unconsumed capsule calls it itself). A tensor's capsule takes a fresh map
//! of its own (read-write; read-only for read-only memory, versioned capsules
//! only) whose bracket — for a dma-buf, the sync bracket — ends with it; a
//! view's capsule is one more export of the view's map, which keeps the
//! memory past the view's `with` block as a numpy array does (the bracket
//! ends with the block). The deleter may run on any thread, with or without
//! the GIL: it only counts the export off (and, for a map that ends with its
//! last export, ends it; see `lease.rs`).

use std::any::Any;
use std::ffi::{c_void, CStr};

use pyo3::ffi;
use pyo3::prelude::*;
use zerocam_tensor::capsule::{dl_dtype, DLDataType};
use zerocam_tensor::{Access, DType, TensorDyn};

use crate::errors::MapConflict;
use crate::lease::{BracketEnd, ExportToken, Keep, MapLease};

/// `kDLCPU`.
pub const DL_CPU: i32 = 1;
/// `kDLCUDA`: device memory (the interop paths of a CUDA map).
#[cfg(feature = "cuda")]
pub const DL_CUDA: i32 = 2;
/// `kDLCUDAHost`: page-locked host memory the device can address (a
/// host-registered CUDA map; the data pointer is the CPU address).
#[cfg(feature = "cuda")]
pub const DL_CUDA_HOST: i32 = 3;

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

#[repr(C)]
struct DLPackVersion {
    major: u32,
    minor: u32,
}

#[repr(C)]
struct DLManagedTensorVersioned {
    version: DLPackVersion,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DLTensor,
}

const FLAG_READ_ONLY: u64 = 1;
const LEGACY: &CStr = c"dltensor";
const VERSIONED: &CStr = c"dltensor_versioned";

/// What the managed tensor owns: the shape and strides arrays it points to,
/// and what keeps the data valid (a CPU map's [`ExportToken`], a CUDA map).
struct Holder {
    shape: Vec<i64>,
    strides: Vec<i64>,
    _owner: Box<dyn Any + Send>,
}

unsafe extern "C" fn delete_legacy(m: *mut DLManagedTensor) {
    if m.is_null() {
        return;
    }
    // SAFETY: `m` and its `manager_ctx` were made by `Box::into_raw` in
    // `export`, and DLPack calls the deleter once.
    unsafe {
        let m = Box::from_raw(m);
        drop(Box::from_raw(m.manager_ctx.cast::<Holder>()));
    }
}

unsafe extern "C" fn delete_versioned(m: *mut DLManagedTensorVersioned) {
    if m.is_null() {
        return;
    }
    // SAFETY: as for `delete_legacy`.
    unsafe {
        let m = Box::from_raw(m);
        drop(Box::from_raw(m.manager_ctx.cast::<Holder>()));
    }
}

unsafe extern "C" fn capsule_destructor(capsule: *mut ffi::PyObject) {
    // SAFETY: CPython calls this with the capsule; a capsule still carrying
    // its original name was never consumed (consumers rename it), so its
    // managed tensor is still ours to delete. `PyCapsule_IsValid` sets no
    // error.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, LEGACY.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(capsule, LEGACY.as_ptr()).cast::<DLManagedTensor>();
            if let Some(d) = m.as_ref().and_then(|m| m.deleter) {
                d(m);
            }
        } else if ffi::PyCapsule_IsValid(capsule, VERSIONED.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(capsule, VERSIONED.as_ptr())
                .cast::<DLManagedTensorVersioned>();
            if let Some(d) = m.as_ref().and_then(|m| m.deleter) {
                d(m);
            }
        }
    }
}

/// Checks a `__dlpack__` request (the array API's keywords) and says
/// whether to make a versioned capsule (`max_version >= (1, 0)`). A CPU
/// export takes no stream, goes to `(kDLCPU, 0)` only and never copies.
pub fn request(
    stream: Option<&Bound<'_, PyAny>>,
    max_version: Option<(u32, u32)>,
    dl_device: Option<(i32, i32)>,
    copy: Option<bool>,
) -> PyResult<bool> {
    if let Some(s) = stream.filter(|s| !s.is_none()) {
        return Err(MapConflict::new_err(format!(
            "stream {s}: a CPU tensor takes no stream"
        )));
    }
    if let Some(d) = dl_device {
        if d != (DL_CPU, 0) {
            return Err(MapConflict::new_err(format!(
                "dl_device {d:?}: zerocam tensors export to the CPU (1, 0) only"
            )));
        }
    }
    if copy == Some(true) {
        return Err(MapConflict::new_err(
            "copy=True: zerocam exports without copying; copy the consumer's array",
        ));
    }
    Ok(max_version.is_some_and(|(major, _)| major >= 1))
}

/// `Tensor.__dlpack__`: a capsule over a fresh map of `tensor`, ended when
/// the capsule's consumer deletes it (there is no view, so no block to end
/// it earlier); the consumer keeps what `keep` holds as long.
pub fn export<'py>(
    py: Python<'py>,
    tensor: &TensorDyn,
    versioned: bool,
    keep: Keep,
) -> PyResult<Bound<'py, PyAny>> {
    let end = BracketEnd::WithLastExport;
    let lease = match MapLease::new(tensor, Access::ReadWrite, end, keep.clone_ref(py)) {
        Ok(l) => l,
        Err(e) if e.is_instance_of::<MapConflict>(py) && versioned => {
            // Read-only memory (or a live read map): a read-only export.
            MapLease::new(tensor, Access::Read, end, keep).map_err(|_| e)?
        }
        Err(e) => return Err(e),
    };
    let token = lease.export()?;
    // No view: the map ends with the token (the capsule's deleter).
    lease.close()?;
    capsule(py, token, versioned)
}

/// A capsule (versioned or legacy) owning `token`. A read-only map needs the
/// versioned capsule's read-only flag: a legacy capsule cannot say it, and a
/// consumer writing through it would fault.
pub fn capsule<'py>(
    py: Python<'py>,
    token: ExportToken,
    versioned: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let layout = token.layout();
    let desc = Described {
        data: layout.ptr,
        device: (DL_CPU, 0),
        dtype: layout.dtype,
        shape: &layout.shape,
        strides: &layout.strides,
        readonly: layout.readonly,
    };
    let arrays = desc.arrays(versioned)?;
    build(py, arrays, Box::new(token), versioned)
}

/// What a capsule describes, before the checks: the address of the first
/// element, `(device_type, device_id)`, the element type, the shape, byte
/// strides and whether the memory is read-only.
pub struct Described<'a> {
    /// The first element's address (as the device named by `device` sees it).
    pub data: usize,
    /// `(device_type, device_id)`: `(kDLCPU, 0)`, `(kDLCUDA, n)`, `(kDLCUDAHost, 0)`.
    pub device: (i32, i32),
    /// Element type.
    pub dtype: DType,
    /// Shape in elements.
    pub shape: &'a [usize],
    /// Byte strides.
    pub strides: &'a [usize],
    /// Whether consumers must not write.
    pub readonly: bool,
}

/// A [`Described`] tensor checked for DLPack: shape and strides in elements.
struct Arrays {
    data: usize,
    device: (i32, i32),
    dtype: DType,
    shape: Vec<i64>,
    strides: Vec<i64>,
    readonly: bool,
}

impl Described<'_> {
    /// The shape and element strides DLPack takes, and the read-only flag;
    /// `MapConflict` (a `BufferError`) for what DLPack cannot carry: a byte
    /// stride that is not a whole number of elements, a dimension too large,
    /// or read-only memory in a legacy capsule.
    fn arrays(&self, versioned: bool) -> PyResult<Arrays> {
        if self.readonly && !versioned {
            return Err(MapConflict::new_err(
                "a read-only map has no legacy DLPack capsule (it cannot carry the read-only \
                 flag): ask with max_version=(1, 0), or map with \"readwrite\"",
            ));
        }
        let e = self.dtype.size();
        let strides = self
            .strides
            .iter()
            .map(|&s| {
                if s % e == 0 {
                    i64::try_from(s / e).map_err(|_| MapConflict::new_err("stride too large"))
                } else {
                    Err(MapConflict::new_err(format!(
                        "byte stride {s} is not a multiple of the {e}-byte element: no DLPack export"
                    )))
                }
            })
            .collect::<PyResult<Vec<i64>>>()?;
        let shape = self
            .shape
            .iter()
            .map(|&d| i64::try_from(d).map_err(|_| MapConflict::new_err("shape too large")))
            .collect::<PyResult<Vec<i64>>>()?;
        Ok(Arrays {
            data: self.data,
            device: self.device,
            dtype: self.dtype,
            shape,
            strides,
            readonly: self.readonly,
        })
    }

    /// Checks the description (see `arrays`) and makes the capsule (see
    /// [`build`]) owning `owner`: what `CudaArray.__dlpack__` uses.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub fn capsule<'py>(
        &self,
        py: Python<'py>,
        owner: Box<dyn Any + Send>,
        versioned: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        build(py, self.arrays(versioned)?, owner, versioned)
    }
}

/// A DLPack capsule (`"dltensor_versioned"` when `versioned`, else
/// `"dltensor"`) over `arrays`. The managed tensor owns `owner`, which keeps
/// the memory valid: dropping it is the deleter's work (on whatever thread the
/// consumer calls the deleter, with or without the GIL; an unconsumed
/// capsule's destructor calls it).
fn build<'py>(
    py: Python<'py>,
    arrays: Arrays,
    owner: Box<dyn Any + Send>,
    versioned: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let Arrays {
        data,
        device,
        dtype,
        shape,
        strides,
        readonly,
    } = arrays;
    let ndim = i32::try_from(shape.len()).map_err(|_| MapConflict::new_err("too many dims"))?;
    let (data, dtype) = (data as *mut c_void, dl_dtype(dtype));
    let holder = Box::into_raw(Box::new(Holder {
        shape,
        strides,
        _owner: owner,
    }));
    // SAFETY: `holder` was just made by `Box::into_raw` and is freed only by a deleter.
    let (shape_ptr, strides_ptr) =
        unsafe { ((*holder).shape.as_mut_ptr(), (*holder).strides.as_mut_ptr()) };
    let dl_tensor = DLTensor {
        data,
        device: DLDevice {
            device_type: device.0,
            device_id: device.1,
        },
        ndim,
        dtype,
        shape: shape_ptr,
        strides: strides_ptr,
        byte_offset: 0,
    };
    let (ptr, name) = if versioned {
        let m = Box::new(DLManagedTensorVersioned {
            version: DLPackVersion { major: 1, minor: 0 },
            manager_ctx: holder.cast(),
            deleter: Some(delete_versioned),
            flags: if readonly { FLAG_READ_ONLY } else { 0 },
            dl_tensor,
        });
        (Box::into_raw(m).cast::<c_void>(), VERSIONED)
    } else {
        let m = Box::new(DLManagedTensor {
            dl_tensor,
            manager_ctx: holder.cast(),
            deleter: Some(delete_legacy),
        });
        (Box::into_raw(m).cast::<c_void>(), LEGACY)
    };
    // SAFETY: `ptr` is a live managed tensor, `name` a static C string, and
    // the destructor deletes the tensor only if nobody consumed it.
    let capsule = unsafe { ffi::PyCapsule_New(ptr, name.as_ptr(), Some(capsule_destructor)) };
    if capsule.is_null() {
        // SAFETY: not handed to Python: delete it here.
        unsafe {
            if versioned {
                delete_versioned(ptr.cast());
            } else {
                delete_legacy(ptr.cast());
            }
        }
    }
    // SAFETY: a new reference (or NULL with an error set).
    unsafe { Bound::from_owned_ptr_or_err(py, capsule) }
}
