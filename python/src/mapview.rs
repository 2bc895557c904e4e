//! `MapView`: the context manager `Tensor.map()` returns.
//!
//! ```python
//! with tensor.map() as view:
//!     frame = np.asarray(view)   # no copy: shape, dtype and byte strides published
//!     frame[:] = 128             # inside the bracket: a dma-buf's sync END flushes it
//! with tensor.map("read") as view:
//!     frame = np.asarray(view)   # the first `frame` is still alive here: no conflict
//! ```
//!
//! `np.asarray(view)` goes through `__array__`, which hands numpy an
//! [`Export`](crate::export::Export) with the array interface: the numpy array
//! keeps the export, the export keeps the tensor's memory. `__dlpack__` hands
//! a DLPack consumer (`np.from_dlpack(view)`, `jax.numpy.from_dlpack(view)`)
//! a capsule that is an export too, until the consumer's deleter runs.
//!
//! The `with` block is the access bracket: its end — or `view.release()`, or
//! the view's garbage collection — ends the map (the recorded CPU access and
//! a dma-buf's sync END in the map's direction), whatever arrays are alive,
//! and releases the view (every later use raises `Released`,
//! `view.released` is true). The arrays stay valid: they keep the tensor's
//! storage and its persistent mapping (and a captured frame's buffer out of
//! the driver's queue), so they read and write the same memory, outside the
//! coherency bracket. `view.mapped` says whether the bracket is open,
//! `view.exports` counts the live exports.
//!
//! Memory mapped only for the access (a GL PBO: the `Preprocessor`'s GPU
//! results) has no persistent mapping: there the map stays open until the
//! view is released and its last export is gone, and `release()` with live
//! exports raises `MapConflict` (see [`BracketEnd`](crate::lease::BracketEnd)).
//!
//! Built with the `buffer-protocol` feature (a `cp311-abi3` wheel), the view
//! also implements the buffer protocol (`memoryview(view)`; numpy then uses
//! it), with the same rule: each exported buffer is owned by an export of
//! its own (never by the view) and counts until released. The
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

    /// Releases the view and ends the map (for PBO memory: when its last
    /// export dies). Raises only for a failed dma-buf sync END.
    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.lease.close()?;
        Ok(false)
    }

    /// Releases the view and ends the map now, as leaving the `with` block
    /// does; arrays made from it stay valid. For PBO memory, `MapConflict`
    /// (a `BufferError`) while exports are alive, as `memoryview.release()`.
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

    /// The buffer protocol (feature `buffer-protocol`): the buffer is owned
    /// by a new export of the map (not by the view, which arrays and
    /// memoryviews then do not keep alive).
    #[cfg(feature = "buffer-protocol")]
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut pyo3::ffi::Py_buffer,
        flags: std::ffi::c_int,
    ) -> PyResult<()> {
        let export = crate::export::Export::new(slf.py(), slf.get().lease.export()?)?;
        // SAFETY: CPython's buffer to fill; on failure the export is dropped
        // (no buffer exported, nothing to release). CPython releases the
        // buffer through the export's `bf_releasebuffer`: it is `view.obj`.
        unsafe { crate::buffer::fill(view, flags, export) }
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

    /// Whether the map (the access bracket) is open: until the view is
    /// released (for PBO memory: and its last export is gone).
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
            Err(_) => format!(
                "MapView(released; {} export(s) keep its memory)",
                self.lease.exports()
            ),
        }
    }
}

impl Drop for MapView {
    /// A view garbage-collected without a release ends its bracket here
    /// (a failed sync END becomes a `RuntimeWarning`).
    fn drop(&mut self) {
        self.lease.close_quietly();
    }
}
