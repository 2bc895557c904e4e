//! The buffer protocol on `MapView` (feature `buffer-protocol`, CPython ≥
//! 3.11 limited API): `memoryview(view)` and any buffer consumer get the map's
//! address, shape, byte strides and format. Each exported buffer is owned
//! (`Py_buffer.obj`) by an [`Export`] of the map, which it keeps until the
//! consumer releases it, like a numpy array made through `__array__`: the
//! memory stays valid past the view's `with` block (and, for memory mapped
//! only while a map is open, the map), and the view itself is not kept.

use std::ffi::c_int;

use crate::convert;
use crate::export::Export;
use crate::lease::Layout;
use pyo3::exceptions::PyBufferError;
use pyo3::ffi;
use pyo3::prelude::*;

/// The shape and strides a `Py_buffer` points to, owned through `internal`.
struct Meta {
    shape: Vec<ffi::Py_ssize_t>,
    strides: Vec<ffi::Py_ssize_t>,
}

fn c_contiguous(l: &Layout) -> bool {
    let mut want = l.dtype.size();
    for (d, s) in l.shape.iter().zip(&l.strides).rev() {
        if *d > 1 && *s != want {
            return false;
        }
        want *= d;
    }
    true
}

fn ssize(v: usize) -> PyResult<ffi::Py_ssize_t> {
    ffi::Py_ssize_t::try_from(v).map_err(|_| PyBufferError::new_err(format!("{v} is too large")))
}

/// Fills `view` for `owner`'s map; `owner` becomes `view.obj` (a new
/// reference), so the buffer keeps the export until it is released (and
/// CPython calls the owner's `bf_releasebuffer`, [`release`]). On an error
/// nothing is kept.
///
/// # Safety
/// `view` must be the `Py_buffer` CPython passed to `bf_getbuffer`.
pub unsafe fn fill(
    view: *mut ffi::Py_buffer,
    flags: c_int,
    owner: Bound<'_, Export>,
) -> PyResult<()> {
    let layout = owner.get().token().layout();
    if flags & ffi::PyBUF_WRITABLE != 0 && layout.readonly {
        return Err(PyBufferError::new_err(
            "a writable buffer was asked of a read-only map (made with \"read\")",
        ));
    }
    let strided = flags & ffi::PyBUF_STRIDES == ffi::PyBUF_STRIDES;
    if !strided && !c_contiguous(layout) {
        return Err(PyBufferError::new_err(format!(
            "the map has strides {:?} (padded rows): ask for a strided buffer",
            layout.strides
        )));
    }
    let items: usize = layout.shape.iter().product();
    let len = ssize(items * layout.dtype.size())?;
    let itemsize = ssize(layout.dtype.size())?;
    let ndim = c_int::try_from(layout.shape.len())
        .map_err(|_| PyBufferError::new_err("too many dimensions"))?;
    let (ptr, readonly, format) = (layout.ptr, layout.readonly, layout.dtype);
    let meta = Box::new(Meta {
        shape: layout
            .shape
            .iter()
            .map(|&d| ssize(d))
            .collect::<PyResult<_>>()?,
        strides: layout
            .strides
            .iter()
            .map(|&s| ssize(s))
            .collect::<PyResult<_>>()?,
    });
    let meta = Box::into_raw(meta);
    // SAFETY: `view` is CPython's buffer to fill (the caller's contract);
    // `meta` lives until `release` frees it through `internal`.
    unsafe {
        (*view).buf = ptr as *mut std::ffi::c_void;
        (*view).obj = owner.into_ptr();
        (*view).len = len;
        (*view).itemsize = itemsize;
        (*view).readonly = c_int::from(readonly);
        (*view).format = if flags & ffi::PyBUF_FORMAT != 0 {
            convert::codes(format).buffer_format.as_ptr().cast_mut()
        } else {
            std::ptr::null_mut()
        };
        (*view).ndim = ndim;
        (*view).shape = if flags & ffi::PyBUF_ND != 0 {
            (*meta).shape.as_mut_ptr()
        } else {
            std::ptr::null_mut()
        };
        (*view).strides = if strided {
            (*meta).strides.as_mut_ptr()
        } else {
            std::ptr::null_mut()
        };
        (*view).suboffsets = std::ptr::null_mut();
        (*view).internal = meta.cast();
    }
    Ok(())
}

/// Frees what [`fill`] allocated (CPython then drops the owning export).
///
/// # Safety
/// `view` must be a buffer filled by [`fill`], released once.
pub unsafe fn release(view: *mut ffi::Py_buffer) {
    // SAFETY: `internal` is the `Meta` box made by `fill` (the caller's contract).
    unsafe {
        let meta = (*view).internal.cast::<Meta>();
        if !meta.is_null() {
            drop(Box::from_raw(meta));
            (*view).internal = std::ptr::null_mut();
        }
    }
}
