//! The `__zerocam_tensor__` capsule: passing a tensor between extension
//! modules (each PyO3 module has its own `Tensor` class, so `isinstance`
//! across modules fails; the capsule does not).
//!
//! Protocol (ABI version 1):
//! - `obj.__zerocam_tensor__()` returns a `PyCapsule` named
//!   `"zerocam.tensor.v1"` whose pointer is a [`ZerocamTensorV1`] (C layout,
//!   below).
//! - The capsule owns the struct and `fd` (a `dup` of the buffer's fd made for
//!   this capsule): its destructor closes `fd` and frees the struct. A
//!   consumer that keeps the buffer `dup`s `fd` (never takes it) and must not
//!   keep the pointer past the capsule's life.
//! - Only fd-backed memory (shared memory, dma-buf) can be passed: heap
//!   tensors raise `BufferError` (use `__dlpack__` for those).
//! - An import treats `fd` as `Tensor.from_fd` treats any fd: it duplicates
//!   the number with `F_DUPFD_CLOEXEC` (a closed one raises `EBADF`) and takes
//!   only a dma-buf or a memfd that cannot shrink (sealing a sealable one);
//!   any other file is refused, naming what it is.
//! - Arrays: `shape`/`strides` (bytes) from `byte_offset` in the fd.
//!   Images (`format[0] != 0`): `format` names the `zerocam.PixelFormat`, and
//!   `width`, `height`, `row_stride` and `byte_offset` describe it; `shape`
//!   and `strides` are the image tensor's, so they also carry a batch (a
//!   leading `N`, `strides[0]` apart) and the plane step of `PLANAR_RGB`
//!   (the stride of its plane dim). An import rebuilds the image from these
//!   and refuses a capsule whose shape or strides differ from the rebuilt ones.

use std::ffi::{c_void, CStr};
use std::os::fd::IntoRawFd;

use pyo3::ffi;
use pyo3::prelude::*;
use zerocam_tensor::capsule::{self as wire, CapsuleError};
use zerocam_tensor::TensorDyn;

pub use zerocam_tensor::capsule::ZerocamTensorV1;

use crate::errors::{import_err, invalid, tensor_err, MapConflict};
use crate::tensor::dup_fd;

/// The capsule name.
pub const NAME: &CStr = c"zerocam.tensor.v1";

unsafe extern "C" fn destructor(capsule: *mut ffi::PyObject) {
    // SAFETY: CPython calls this once with our capsule; its pointer is the
    // boxed struct made in `export`, and the fd is owned by it.
    unsafe {
        let p = ffi::PyCapsule_GetPointer(capsule, NAME.as_ptr()).cast::<ZerocamTensorV1>();
        if p.is_null() {
            ffi::PyErr_Clear();
            return;
        }
        let b = Box::from_raw(p);
        if b.fd >= 0 {
            libc::close(b.fd);
        }
    }
}

/// `__zerocam_tensor__`.
pub fn export<'py>(py: Python<'py>, t: &TensorDyn) -> PyResult<Bound<'py, PyAny>> {
    let fd = t.clone_fd().map_err(|e| {
        MapConflict::new_err(format!(
            "no zerocam capsule for this tensor: {e}; use __dlpack__"
        ))
    })?;
    let mut s = wire::describe(t, -1).map_err(|e| invalid(e.to_string()))?;
    s.fd = fd.into_raw_fd();
    let p = Box::into_raw(Box::new(s));
    // SAFETY: `p` is a live boxed struct, the name static; the destructor frees both.
    let cap = unsafe { ffi::PyCapsule_New(p.cast::<c_void>(), NAME.as_ptr(), Some(destructor)) };
    if cap.is_null() {
        // SAFETY: not handed to Python: free it here.
        unsafe {
            let b = Box::from_raw(p);
            libc::close(b.fd);
        }
    }
    // SAFETY: a new reference, or NULL with an error set.
    unsafe { Bound::from_owned_ptr_or_err(py, cap) }
}

/// `Tensor.from_zerocam(obj)`: imports what `obj.__zerocam_tensor__()` hands
/// over. The fields are decoded by [`zerocam_tensor::capsule::import`]; here
/// the capsule is opened and its fd duplicated.
pub fn import(obj: &Bound<'_, PyAny>) -> PyResult<TensorDyn> {
    let cap = obj.call_method0("__zerocam_tensor__")?;
    // SAFETY: `PyCapsule_GetPointer` checks the type and the name (NULL and
    // an error otherwise); the struct lives as long as `cap`, held here.
    let p = unsafe { ffi::PyCapsule_GetPointer(cap.as_ptr(), NAME.as_ptr()) };
    if p.is_null() {
        return Err(
            PyErr::take(obj.py()).unwrap_or_else(|| invalid("not a zerocam.tensor.v1 capsule"))
        );
    }
    // SAFETY: as above; read only.
    let s = unsafe { &*p.cast::<ZerocamTensorV1>() };
    // The header first, as before the fd is duplicated.
    wire::check_header(s).map_err(|e| capsule_err(e, s.fd))?;
    let fd = dup_fd(s.fd)?;
    wire::import(s, fd).map_err(|e| capsule_err(e, s.fd))
}

/// A capsule error as the Python exception: the fd's errors as an import of
/// the capsule's fd number, the image's as a tensor error, the others
/// `InvalidArgument`.
fn capsule_err(e: CapsuleError, fd: i32) -> PyErr {
    match e {
        CapsuleError::Import(e) => import_err(e, fd),
        CapsuleError::Image(e) => tensor_err(e),
        e => invalid(e.to_string()),
    }
}
