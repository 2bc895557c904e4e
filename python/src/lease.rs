//! [`MapLease`]: a live CPU map of a tensor with its dtype and layout erased,
//! shared by the Python map view and everything exported from it — numpy
//! arrays (their base is an [`Export`]), buffer-protocol views and DLPack
//! capsules, each holding an [`ExportToken`].
//!
//! The release rule (the one a `Frame` follows): the map — the CPU access,
//! the dma-buf sync END, the tensor's access record — ends when the view is
//! released *and* the last export is gone, whichever comes last.
//! [`close`](MapLease::close) (the end of a `with` block) never fails because
//! of live exports: it releases the view at once and leaves the map to the
//! last export. [`close_unexported`](MapLease::close_unexported) (an explicit
//! `MapView.release()`) refuses while exports live, as
//! `memoryview.release()` does. The export count is exact: a token counts
//! from its creation to its drop.
//!
//! A sync END that fails when the last export dies cannot be raised (that
//! happens in a destructor: numpy's array dealloc, a DLPack deleter): it is
//! issued as a `RuntimeWarning` naming the failure, or handed to
//! `sys.unraisablehook` where warnings are errors (see [`report_deferred`]).

use std::ffi::CString;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use pyo3::exceptions::PyRuntimeWarning;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple};
use zerocam_tensor::{Access, DType, DynMap, Error as TensorError, TensorDyn};

use crate::convert;
use crate::errors::{invalid, released, tensor_err, MapConflict};

/// What a refused map adds to the tensor error: maps outlive their `with`
/// block while their exports live.
const LIVE_EXPORTS_HINT: &str = "a map stays open while numpy arrays, memoryviews or \
     DLPack consumers made from it are alive, also after its `with` block: delete them first";

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

/// The map, its exports and the view's state, under one lock: an export is
/// counted in the same critical section that finds the view unreleased, and
/// the map is taken to be ended in the one that sees the last export go.
struct State {
    /// The map (finishing or dropping it ends it) and its layout; `None` once ended.
    open: Option<(DynMap, Arc<Layout>)>,
    /// Exports alive now: numpy arrays' bases, buffer-protocol views, DLPack capsules.
    exports: usize,
    /// The view was released: no new exports; the map ends with the last one.
    released: bool,
}

impl State {
    /// Takes the map out if nothing keeps it open any more.
    fn take_if_done(&mut self) -> Option<DynMap> {
        if self.released && self.exports == 0 {
            self.open.take().map(|(map, _)| map)
        } else {
            None
        }
    }
}

/// A CPU map shared by a map view, its numpy exports and DLPack capsules.
pub struct MapLease {
    state: Mutex<State>,
}

impl MapLease {
    /// Maps `tensor` with `access`. A conflicting map or device borrow is
    /// `MapConflict`, with a hint at exports keeping an earlier map open.
    pub fn new(tensor: &TensorDyn, access: Access) -> PyResult<Arc<MapLease>> {
        let mut map = match tensor.map_access(access) {
            Ok(map) => map,
            Err(e @ TensorError::MapConflict { .. }) => {
                return Err(MapConflict::new_err(format!("{e} ({LIVE_EXPORTS_HINT})")))
            }
            Err(e) => return Err(tensor_err(e)),
        };
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
                released: false,
            }),
        }))
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The layout, or `Released` once the view was released.
    pub fn layout(&self) -> PyResult<Arc<Layout>> {
        let state = self.state();
        match (&state.open, state.released) {
            (Some((_, l)), false) => Ok(l.clone()),
            _ => Err(released("the map")),
        }
    }

    /// Whether the view was released (by `close` or `close_unexported`).
    pub fn is_released(&self) -> bool {
        self.state().released
    }

    /// Whether the map itself is still open: until the view is released, and
    /// after that while exports keep it.
    pub fn is_mapped(&self) -> bool {
        self.state().open.is_some()
    }

    /// Exports alive now.
    pub fn exports(&self) -> usize {
        self.state().exports
    }

    /// One more export of the map (a numpy array's base, a buffer-protocol
    /// view, a DLPack capsule); `Released` once the view was released.
    pub fn export(self: &Arc<Self>) -> PyResult<ExportToken> {
        let mut state = self.state();
        let layout = match (&state.open, state.released) {
            (Some((_, l)), false) => l.clone(),
            _ => return Err(released("the map")),
        };
        state.exports += 1;
        Ok(ExportToken {
            lease: self.clone(),
            layout,
        })
    }

    /// Counts one export less; ends the map if it was the last one and the
    /// view is released. Called from destructors: a failed sync END is
    /// reported by [`report_deferred`].
    fn remove_export(&self) {
        let done = {
            let mut state = self.state();
            state.exports = state.exports.saturating_sub(1);
            state.take_if_done()
        };
        if let Some(map) = done {
            if let Err(e) = map.finish() {
                report_deferred(&e);
            }
        }
    }

    /// Releases the view (the end of its `with` block): no more exports;
    /// the map ends now if none is alive — reporting a failed sync END
    /// (`DeviceError`) — else when the last one dies. Idempotent.
    pub fn close(&self) -> PyResult<()> {
        let done = {
            let mut state = self.state();
            state.released = true;
            state.take_if_done()
        };
        match done {
            Some(map) => map.finish().map_err(tensor_err),
            None => Ok(()),
        }
    }

    /// Releases the view and ends the map now (`MapView.release()`), or
    /// raises `MapConflict` (a `BufferError`) and changes nothing while
    /// exports are alive. A no-op on a released view.
    pub fn close_unexported(&self) -> PyResult<()> {
        {
            let state = self.state();
            let n = state.exports;
            if n > 0 && !state.released {
                return Err(MapConflict::new_err(format!(
                    "cannot release the map now: {n} export(s) (numpy arrays, memoryviews, \
                     DLPack capsules) still use its memory; delete them first, or leave the \
                     `with` block, which ends the map when the last of them dies"
                )));
            }
        }
        self.close()
    }

    /// A numpy array over the map (its base is an [`Export`]).
    pub fn to_numpy<'py>(self: &Arc<Self>, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        // From here the token's `Drop` balances the count, whatever fails.
        let export = Bound::new(
            py,
            Export {
                token: self.export()?,
            },
        )?;
        numpy_asarray(py)?.call1((export,))
    }
}

impl Drop for MapLease {
    /// A lease dropped with its map open (a view garbage-collected without a
    /// release, the last plane array of a frame) ends the map here.
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        if let Some((map, _)) = state.open.take() {
            if let Err(e) = map.finish() {
                report_deferred(&e);
            }
        }
    }
}

/// One live export of a map: counts from its creation until it drops.
pub struct ExportToken {
    lease: Arc<MapLease>,
    layout: Arc<Layout>,
}

impl ExportToken {
    /// The exported map's layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }
}

impl Drop for ExportToken {
    fn drop(&mut self) {
        self.lease.remove_export();
    }
}

/// Reports a sync END that failed where it cannot be raised (a destructor,
/// perhaps on a thread without the GIL, as a DLPack deleter may run): a
/// `RuntimeWarning`; if the warning is turned into an error, that error goes
/// to `sys.unraisablehook`. An exception pending on the thread is set aside
/// and put back. Nothing is reported while the interpreter shuts down.
pub fn report_deferred(e: &TensorError) {
    let msg = format!(
        "zerocam: ending a map when its last export (numpy array, memoryview, DLPack \
         consumer) died failed: {e}; devices may not see the CPU's writes"
    );
    let msg = CString::new(msg).unwrap_or_default();
    Python::try_attach(|py| {
        // Set aside the exception pending on this thread (if any), put back below.
        let pending = PyErr::take(py);
        let category = py.get_type::<PyRuntimeWarning>();
        if let Err(err) = PyErr::warn(py, &category, &msg, 1) {
            err.write_unraisable(py, None);
        }
        if let Some(pending) = pending {
            pending.restore(py);
        }
    });
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

/// What a numpy array made from a map keeps as its base: it keeps the map
/// open and counts as one export until numpy drops it.
#[pyclass(module = "zerocam._zerocam", name = "_MapExport", frozen)]
pub struct Export {
    token: ExportToken,
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
}
