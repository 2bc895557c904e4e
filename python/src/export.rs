//! [`Export`]: the Python object that stands for one export of a map — the
//! base of a numpy array made from a view (through the array interface), and
//! the owner (`Py_buffer.obj`) of a buffer-protocol view of it (feature
//! `buffer-protocol`). It holds an [`ExportToken`], so it keeps the map's
//! memory valid (see `lease.rs`) and counts as one export until it dies.
//!
//! A buffer-protocol view is owned by an `Export`, never by the `MapView`:
//! an array or memoryview made from a view does not keep the view alive, so
//! a view garbage-collected without a release ends its map in both wheels,
//! whatever numpy takes (`__array__` or the buffer protocol).

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple};

use crate::convert;
use crate::lease::ExportToken;

/// `numpy.asarray`, looked up once.
fn numpy_asarray(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static ASARRAY: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    ASARRAY
        .get_or_try_init(py, || {
            py.import("numpy")?.getattr("asarray").map(Bound::unbind)
        })
        .map(|f| f.bind(py))
}

/// One export of a map as a Python object (see the module docs).
#[pyclass(module = "zerocam._zerocam", name = "_MapExport", frozen)]
pub struct Export {
    token: ExportToken,
}

impl Export {
    /// Wraps `token`; from here its `Drop` balances the export count,
    /// whatever fails.
    pub fn new(py: Python<'_>, token: ExportToken) -> PyResult<Bound<'_, Export>> {
        Bound::new(py, Export { token })
    }

    /// The export's token.
    pub fn token(&self) -> &ExportToken {
        &self.token
    }
}

/// A numpy array whose base is `export`.
pub fn to_numpy(export: Bound<'_, Export>) -> PyResult<Bound<'_, PyAny>> {
    numpy_asarray(export.py())?.call1((export,))
}

#[pymethods]
impl Export {
    /// numpy's array interface (version 3): address, shape, byte strides.
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let l = self.token.layout();
        let d = PyDict::new(py);
        d.set_item("version", 3)?;
        d.set_item("shape", PyTuple::new(py, &l.shape)?)?;
        d.set_item("strides", PyTuple::new(py, &l.strides)?)?;
        d.set_item("typestr", convert::typestr(l.dtype))?;
        d.set_item("data", (l.ptr, l.readonly))?;
        Ok(d)
    }

    /// The buffer protocol (feature `buffer-protocol`): a buffer over the
    /// export's map, owned by this export.
    #[cfg(feature = "buffer-protocol")]
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut pyo3::ffi::Py_buffer,
        flags: std::ffi::c_int,
    ) -> PyResult<()> {
        // SAFETY: CPython's buffer to fill, as `__getbuffer__` receives it.
        unsafe { crate::buffer::fill(view, flags, slf) }
    }

    /// Frees what `__getbuffer__` allocated for `view`.
    #[cfg(feature = "buffer-protocol")]
    unsafe fn __releasebuffer__(&self, view: *mut pyo3::ffi::Py_buffer) {
        // SAFETY: a buffer `__getbuffer__` filled, released once by CPython.
        unsafe { crate::buffer::release(view) };
    }
}
