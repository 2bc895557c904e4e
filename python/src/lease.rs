//! [`MapLease`]: a live CPU map of a tensor with its dtype and layout erased,
//! shared by the Python map view, the numpy arrays made from it and DLPack
//! consumers; and [`Export`], the object a numpy array keeps as its base.
//!
//! Lifetime rule: the map (and so the address numpy reads) stays valid while
//! the lease is open. `MapView.release()` closes it only when no export is
//! alive; otherwise it raises `MapConflict` (a `BufferError`), as releasing a
//! `memoryview` with live exports does. An export counts from its creation
//! until numpy drops the array (the export's `Drop`), so the count is exact.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple};
use zerocam_tensor::{Access, DType, DynMap, TensorDyn};

use crate::convert;
use crate::errors::{invalid, released, tensor_err, MapConflict};

/// The layout numpy sees: shape, byte strides, dtype, base address. Built
/// once when the map opens and shared (an `Arc`) by everything exported.
#[derive(Debug)]
pub struct Layout {
    /// The map's first element.
    pub ptr: usize,
    /// Bytes from the first element to the end of the last.
    pub len: usize,
    /// Shape in elements.
    pub shape: Vec<usize>,
    /// Byte strides.
    pub strides: Vec<usize>,
    /// Element type.
    pub dtype: DType,
    /// Whether the map refuses writes.
    pub readonly: bool,
}

/// The map and its exports, under one lock: an export is counted in the same
/// critical section that finds the map open, and `close` checks the count in
/// the one that ends it.
struct State {
    /// The map (dropping or finishing it ends it) and its layout; `None` once closed.
    open: Option<(DynMap, Arc<Layout>)>,
    /// numpy arrays and buffer-protocol views alive now.
    exports: usize,
}

/// A CPU map shared by a map view, its numpy exports and DLPack capsules.
pub struct MapLease {
    state: Mutex<State>,
}

impl MapLease {
    /// Maps `tensor` with `access`.
    pub fn new(tensor: &TensorDyn, access: Access) -> PyResult<Arc<MapLease>> {
        let mut map = tensor.map_access(access).map_err(tensor_err)?;
        let Some(strides) = map.strides_bytes().map(<[usize]>::to_vec) else {
            return Err(invalid(format!(
                "a tensor of shape {:?} has no uniform strides (a view of a \
                 2-plane image): map each plane(i)",
                tensor.shape()
            )));
        };
        let ptr = match map.as_mut_ptr() {
            Some(p) => p,
            None => map.ptr(),
        };
        let layout = Layout {
            ptr: ptr.as_ptr() as usize,
            len: map.len(),
            shape: map.shape().to_vec(),
            strides,
            dtype: map.dtype(),
            readonly: !map.writable(),
        };
        Ok(Arc::new(MapLease {
            state: Mutex::new(State {
                open: Some((map, Arc::new(layout))),
                exports: 0,
            }),
        }))
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The layout, or `Released` once closed.
    pub fn layout(&self) -> PyResult<Arc<Layout>> {
        self.state()
            .open
            .as_ref()
            .map(|(_, l)| l.clone())
            .ok_or_else(|| released("the map"))
    }

    /// Whether the map is still open.
    pub fn is_open(&self) -> bool {
        self.state().open.is_some()
    }

    /// numpy arrays (and other exports) alive now.
    pub fn exports(&self) -> usize {
        self.state().exports
    }

    /// Counts one more export (a numpy array, a buffer-protocol view) of the
    /// open map and gives its layout; `Released` once closed. Balance with
    /// [`remove_export`](MapLease::remove_export).
    pub fn add_export(&self) -> PyResult<Arc<Layout>> {
        let mut state = self.state();
        let layout = state
            .open
            .as_ref()
            .map(|(_, l)| l.clone())
            .ok_or_else(|| released("the map"))?;
        state.exports += 1;
        Ok(layout)
    }

    /// Counts one export less.
    pub fn remove_export(&self) {
        let mut state = self.state();
        state.exports = state.exports.saturating_sub(1);
    }

    /// Ends the map, unless exports are alive (`MapConflict`), and reports a
    /// failed dma-buf sync END (`DeviceError`). Idempotent.
    pub fn close(&self) -> PyResult<()> {
        let map = {
            let mut state = self.state();
            let n = state.exports;
            if n > 0 && state.open.is_some() {
                return Err(MapConflict::new_err(format!(
                    "cannot release the map: {n} numpy array(s) or other exports still \
                     use its memory; delete them first"
                )));
            }
            state.open.take()
        };
        match map {
            Some((map, _)) => map.finish().map_err(tensor_err),
            None => Ok(()),
        }
    }

    /// A numpy array over the map (its base is an [`Export`]).
    pub fn to_numpy<'py>(self: &Arc<Self>, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let layout = self.add_export()?;
        // From here the export's `Drop` balances the count, whatever fails.
        let export = Bound::new(
            py,
            Export {
                lease: self.clone(),
                layout,
            },
        )?;
        numpy_asarray(py)?.call1((export,))
    }
}

/// `numpy.asarray`, looked up once.
fn numpy_asarray(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static ASARRAY: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    ASARRAY
        .get_or_try_init(py, || {
            py.import("numpy")?.getattr("asarray").map(Bound::unbind)
        })
        .map(|f| f.bind(py))
}

/// What a numpy array made from a map keeps as its base: it holds the map
/// open and counts as one export until numpy drops it.
#[pyclass(module = "zerocam._zerocam", name = "_MapExport", frozen)]
pub struct Export {
    lease: Arc<MapLease>,
    layout: Arc<Layout>,
}

#[pymethods]
impl Export {
    /// numpy's array interface (version 3): address, shape, byte strides.
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let l = &self.layout;
        let d = PyDict::new(py);
        d.set_item("version", 3)?;
        d.set_item("shape", PyTuple::new(py, &l.shape)?)?;
        d.set_item("strides", PyTuple::new(py, &l.strides)?)?;
        d.set_item("typestr", convert::typestr(l.dtype))?;
        d.set_item("data", (l.ptr, l.readonly))?;
        Ok(d)
    }
}

impl Drop for Export {
    fn drop(&mut self) {
        self.lease.remove_export();
    }
}
