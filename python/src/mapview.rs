//! `MapView`: the context manager `Tensor.map()` returns.
//!
//! ```python
//! with tensor.map("read") as view:
//!     a = np.asarray(view)     # no copy: shape, dtype and byte strides published
//! ```
//!
//! `np.asarray(view)` goes through `__array__`, which hands numpy an
//! [`Export`](crate::lease::Export) with the array interface: the numpy array
//! keeps the export, the export keeps the map open. Ending the `with` block
//! (or `release()`) while such an array is alive raises `MapConflict` (a
//! `BufferError`) and leaves the map open, so numpy never holds a dangling
//! address; after a successful release every use of the view raises
//! `Released`.
//!
//! Built with the `buffer-protocol` feature (a `cp311-abi3` wheel), the view
//! also implements the buffer protocol (`memoryview(view)`; numpy then uses
//! it), with the same rule: each exported buffer counts until released. The
//! `cp39-abi3` wheel cannot (CPython's limited API has the buffer slots from
//! 3.11), so there numpy takes the view through `__array__` only.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyTuple;
use zerocam_tensor::Access;

use crate::convert::access_name;
use crate::lease::MapLease;

/// A live CPU map of a tensor (see the module docs).
#[pyclass(module = "zerocam._zerocam", frozen)]
pub struct MapView {
    lease: Arc<MapLease>,
    access: Access,
}

impl MapView {
    /// Wraps an open lease.
    pub fn new(lease: Arc<MapLease>, access: Access) -> MapView {
        MapView { lease, access }
    }
}

#[pymethods]
impl MapView {
    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.lease.close()?;
        Ok(false)
    }

    /// Ends the map (`MapConflict` while numpy arrays of it are alive).
    fn release(&self) -> PyResult<()> {
        self.lease.close()
    }

    /// A numpy array over the mapped memory, without a copy (numpy's
    /// `__array__` protocol; `copy=True` or another `dtype` copies).
    #[pyo3(signature = (dtype=None, copy=None))]
    fn __array__<'py>(
        &self,
        py: Python<'py>,
        dtype: Option<&Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let a = self.lease.to_numpy(py)?;
        let a = match dtype {
            Some(d) if !d.is_none() => a.call_method1("astype", (d,))?,
            _ => a,
        };
        if copy == Some(true) {
            return a.call_method0("copy");
        }
        Ok(a)
    }

    /// The buffer protocol (feature `buffer-protocol`).
    #[cfg(feature = "buffer-protocol")]
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut pyo3::ffi::Py_buffer,
        flags: std::ffi::c_int,
    ) -> PyResult<()> {
        let this = slf.get();
        let layout = this.lease.add_export()?;
        // SAFETY: CPython's buffer to fill.
        let filled = unsafe { crate::buffer::fill(view, flags, &layout, slf.clone().into_any()) };
        if filled.is_err() {
            // No buffer was exported: CPython will not call `__releasebuffer__`.
            this.lease.remove_export();
        }
        filled
    }

    /// Ends one buffer-protocol export.
    #[cfg(feature = "buffer-protocol")]
    unsafe fn __releasebuffer__(&self, view: *mut pyo3::ffi::Py_buffer) {
        // SAFETY: a buffer `__getbuffer__` filled, released once by CPython.
        unsafe { crate::buffer::release(view) };
        self.lease.remove_export();
    }

    /// The same as `numpy.asarray(view)`.
    fn numpy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.lease.to_numpy(py)
    }

    /// Shape in elements.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.lease.layout()?.shape)
    }

    /// Byte strides (a padded row stride is published as it is).
    #[getter]
    fn strides<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.lease.layout()?.strides)
    }

    /// Element type name (`"uint8"`, …).
    #[getter]
    fn dtype(&self) -> PyResult<&'static str> {
        Ok(self.lease.layout()?.dtype.name())
    }

    /// Whether writes are refused (maps made with `"read"`).
    #[getter]
    fn readonly(&self) -> PyResult<bool> {
        Ok(self.lease.layout()?.readonly)
    }

    /// The address of the first element.
    #[getter]
    fn ptr(&self) -> PyResult<usize> {
        Ok(self.lease.layout()?.ptr)
    }

    /// Bytes from the first element to the end of the last (padding included).
    #[getter]
    fn nbytes(&self) -> PyResult<usize> {
        Ok(self.lease.layout()?.len)
    }

    /// `"read"`, `"write"` or `"readwrite"`.
    #[getter]
    fn access(&self) -> &'static str {
        access_name(self.access)
    }

    /// Whether the map was released.
    #[getter]
    fn released(&self) -> bool {
        !self.lease.is_open()
    }

    /// numpy arrays (exports) alive now.
    #[getter]
    fn exports(&self) -> usize {
        self.lease.exports()
    }

    fn __repr__(&self) -> String {
        match self.lease.layout() {
            Ok(l) => format!(
                "MapView(shape={:?}, dtype={}, strides={:?}, access={})",
                l.shape,
                l.dtype,
                l.strides,
                access_name(self.access)
            ),
            Err(_) => "MapView(released)".to_owned(),
        }
    }
}
