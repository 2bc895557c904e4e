//! `MapView`: the context manager `Tensor.map()` returns.
//!
//! ```python
//! with tensor.map() as view:
//!     frame = np.asarray(view)   # no copy: shape, dtype and byte strides published
//!     frame[:] = 128
//! print(frame.mean())            # still valid: the array keeps the map open
//! ```
//!
//! `np.asarray(view)` goes through `__array__`, which hands numpy an
//! [`Export`](crate::lease::Export) with the array interface: the numpy array
//! keeps the export, the export keeps the map open. `__dlpack__` hands a
//! DLPack consumer (`np.from_dlpack(view)`, `jax.numpy.from_dlpack(view)`) a
//! capsule that is an export too, until the consumer's deleter runs.
//!
//! The release rule (the one a `Frame`'s buffer follows): the end of the
//! `with` block releases the view — every later use of it raises `Released`,
//! `view.released` is true — and never raises because of live exports; the
//! map itself (the CPU access, the dma-buf sync END, the tensor's access
//! record, so a device borrow or a conflicting writable map is refused
//! meanwhile) ends when the last export dies (`view.mapped` says whether it
//! is still open). An explicit `view.release()` ends the map now, so with
//! live exports it raises `MapConflict` (a `BufferError`) and changes
//! nothing, as `memoryview.release()` does: a caller asking to end the map
//! now (say, before handing the buffer to a device) learns at once that it
//! cannot. A sync END that fails when the last export dies cannot be raised
//! there: it becomes a `RuntimeWarning` (see [`report_deferred`](crate::lease::report_deferred)).
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
use crate::dlpack;
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

    /// Releases the view; the map ends now, or when its last export dies.
    /// Raises only for a failed dma-buf sync END of a map ended now.
    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.lease.close()?;
        Ok(false)
    }

    /// Releases the view and ends the map now; `MapConflict` (a
    /// `BufferError`) while exports are alive, as `memoryview.release()`.
    fn release(&self) -> PyResult<()> {
        self.lease.close_unexported()
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
        let token = slf.get().lease.export()?;
        // SAFETY: CPython's buffer to fill; on failure the token is dropped
        // (no buffer exported, no `__releasebuffer__` call to come).
        unsafe { crate::buffer::fill(view, flags, token, slf.clone().into_any()) }
    }

    /// Ends one buffer-protocol export (the map, if it was the last one of a
    /// released view).
    #[cfg(feature = "buffer-protocol")]
    unsafe fn __releasebuffer__(&self, view: *mut pyo3::ffi::Py_buffer) {
        // SAFETY: a buffer `__getbuffer__` filled, released once by CPython.
        unsafe { crate::buffer::release(view) };
    }

    /// DLPack export of the map: the capsule (and then its consumer) holds
    /// one export until the consumer's deleter runs. A read-only map needs a
    /// versioned capsule (`max_version >= (1, 0)`), which can say so.
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__<'py>(
        &self,
        py: Python<'py>,
        stream: Option<&Bound<'py, PyAny>>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let versioned = dlpack::request(stream, max_version, dl_device, copy)?;
        dlpack::capsule(py, self.lease.export()?, versioned)
    }

    /// `(kDLCPU, 0)`.
    fn __dlpack_device__(&self) -> (i32, i32) {
        (dlpack::DL_CPU, 0)
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

    /// Whether the view was released (its `with` block ended, or `release()`).
    #[getter]
    fn released(&self) -> bool {
        self.lease.is_released()
    }

    /// Whether the map itself is open: until the view is released, and
    /// after that while exports keep it.
    #[getter]
    fn mapped(&self) -> bool {
        self.lease.is_mapped()
    }

    /// Exports alive now: numpy arrays' bases, memoryviews, DLPack capsules
    /// (readable after the release too).
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
            Err(_) if self.lease.is_mapped() => format!(
                "MapView(released; {} export(s) keep the map open)",
                self.lease.exports()
            ),
            Err(_) => "MapView(released)".to_owned(),
        }
    }
}
