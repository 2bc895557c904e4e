//! [`MapLease`]: a CPU map of a tensor with its dtype and layout erased,
//! shared by the Python map view and everything exported from it — numpy
//! arrays and buffer-protocol views (through an [`Export`]) and DLPack
//! capsules, each holding an [`ExportToken`].
//!
//! Two things with two lifetimes:
//!
//! - the *bracket*: the CPU access the tensor crate records (so a conflicting
//!   map or device borrow is refused) and, on a dma-buf, the
//!   `DMA_BUF_IOCTL_SYNC` START/END pair in the map's direction;
//! - the *memory*: the tensor's storage and its persistent mapping, which is
//!   what an array's address points into.
//!
//! With [`BracketEnd::WithView`] (every `Tensor.map()` of memory mapped for
//! its buffer's life: heap, shared memory, dma-bufs) the bracket ends when
//! the view is released — the end of its `with` block, `release()`, or its
//! garbage collection — whatever exports are alive; the exports keep the
//! memory (a handle on the tensor, so its mapping stays), plus the captured
//! frame holding the buffer (so the driver gets the buffer back only when the
//! last export is gone; for a frame's tensor and for imports of its fd, see
//! `frame_files.rs`) and the tensor's owner (a `Preprocessor`). So no array
//! ever points at unmapped memory, and a later map of the tensor is judged
//! by the brackets open then, not by arrays of ended ones.
//!
//! With [`BracketEnd::WithLastExport`] the bracket ends when the view is
//! released *and* the last export is gone: for memory whose CPU mapping is
//! the bracket itself (a GL PBO is mapped for the access and unmapped at its
//! end, so an array outliving the bracket would dangle), for a tensor's own
//! DLPack capsule (no view: the consumer's deleter ends it), for a frame's
//! `planes` (their read map keeps the buffer out of the driver's queue until
//! the last array dies), and for a capture buffer mapped while no frame holds
//! it (a frame's tensor after the frame's release, or an import of its fd:
//! the map's borrow is then all that keeps the buffer from the driver).
//! There `close_unexported` (an explicit `MapView.release()`) refuses while
//! exports live, as `memoryview.release()` does.
//!
//! A sync END that fails where it cannot be raised (a destructor: numpy's
//! array dealloc, a DLPack deleter, a view's garbage collection) is issued as
//! a `RuntimeWarning` naming the failure, or handed to `sys.unraisablehook`
//! where warnings are errors (see [`report_deferred`]).

use std::any::Any;
use std::ffi::CString;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use pyo3::exceptions::PyRuntimeWarning;
use pyo3::prelude::*;
use zerocam_tensor::{Access, DType, DynMap, Error as TensorError, TensorDyn, TensorMemory};

use crate::errors::{invalid, released, tensor_err, MapConflict};
use crate::export::{self, Export};

/// What a refused map adds to the tensor error: which brackets are open.
const OPEN_BRACKETS_HINT: &str = "another map of these bytes is open: a view's, until its \
     `with` block ends or `release()` (a view of PBO memory, or of a capture buffer mapped while \
     no frame held it, until then and its last array or memoryview is gone); a tensor's DLPack \
     consumer, or a frame's `planes` arrays, until they are gone; or a device's borrow (a buffer \
     queued to the driver)";

/// When a lease's bracket (the recorded CPU access and the dma-buf sync
/// END) ends; see the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BracketEnd {
    /// When the view is released; exports keep only the memory.
    WithView,
    /// When the view is released and the last export is gone.
    WithLastExport,
}

/// Whether `memory`'s CPU mapping exists only inside an access bracket, so
/// that an export outliving the bracket would point at unmapped memory: such
/// a map keeps its bracket until its last export ([`BracketEnd::WithLastExport`]).
///
/// The storage contract (the tensor crate's `Storage`) promises no more than
/// the bracket: the pointer `begin_cpu_access` returns is valid until the
/// matching `end_cpu_access`. Heap memory (ours, or an external owner's:
/// both `Mem`), memfds (`Shm`) and dma-bufs (`Dma`) give more — their storage
/// is allocated or `mmap`ped once for its whole life, and a bracket only
/// records the access and syncs the caches — and `BracketEnd::WithView`
/// relies on it. A GL PBO does not: `PboOps::map`'s pointer is valid only
/// until `unmap`, which the end of its last open access calls. The match
/// names every kind, so a new one is decided here before the crate builds.
const fn mapped_per_access(memory: TensorMemory) -> bool {
    match memory {
        TensorMemory::Mem | TensorMemory::Shm | TensorMemory::Dma => false,
        TensorMemory::Pbo => true,
    }
}

/// What the exports of a map keep alive besides the tensor's memory.
#[derive(Default)]
pub struct Keep {
    /// The captured frames holding the tensor's buffer (the capture crate's
    /// guards; one, but for a file shared by several buffers): the buffer
    /// goes back to the driver only when the last export is gone.
    pub frames: Vec<Arc<dyn Any + Send + Sync>>,
    /// What the memory needs besides the tensor (a `Preprocessor`, whose GL
    /// context owns the PBOs of its results).
    pub owner: Option<Py<PyAny>>,
}

impl Keep {
    /// Another keep of the same things.
    pub fn clone_ref(&self, py: Python<'_>) -> Keep {
        Keep {
            frames: self.frames.clone(),
            owner: self.owner.as_ref().map(|o| o.clone_ref(py)),
        }
    }
}

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

/// What every export holds, the bracket open or not: a handle on the
/// tensor (its storage and the persistent mapping `Layout::ptr` points
/// into) and the [`Keep`].
struct Holds {
    _memory: TensorDyn,
    _keep: Keep,
}

/// The bracket, the exports and the view's state, under one lock: an export
/// is counted in the same critical section that finds the view unreleased,
/// and the bracket is taken to be ended in the one that decides it ends.
struct State {
    /// The open bracket; `None` once ended.
    bracket: Option<DynMap>,
    /// Exports alive now: numpy arrays' bases, buffer-protocol views, DLPack capsules.
    exports: usize,
    /// The view was released: no new exports.
    released: bool,
    /// Handed to each export; dropped with the view's release, so a
    /// released view object keeps nothing (a frame goes back to its camera
    /// with the last export, whatever the view's name still refers to).
    holds: Option<Arc<Holds>>,
}

/// A CPU map shared by a map view, its numpy exports and DLPack capsules.
pub struct MapLease {
    state: Mutex<State>,
    layout: Arc<Layout>,
    end: BracketEnd,
}

impl MapLease {
    /// Maps `tensor` with `access`; the bracket ends as `end` says, except
    /// that memory mapped only for the access (a GL PBO) always ends it with
    /// the last export. A conflicting map or device borrow is `MapConflict`.
    pub fn new(
        tensor: &TensorDyn,
        access: Access,
        end: BracketEnd,
        keep: Keep,
    ) -> PyResult<Arc<MapLease>> {
        let mut map = match tensor.map_access(access) {
            Ok(map) => map,
            Err(e @ TensorError::MapConflict { .. }) => {
                return Err(MapConflict::new_err(format!("{e} ({OPEN_BRACKETS_HINT})")))
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
        let end = if mapped_per_access(tensor.memory()) {
            BracketEnd::WithLastExport
        } else {
            end
        };
        Ok(Arc::new(MapLease {
            state: Mutex::new(State {
                bracket: Some(map),
                exports: 0,
                released: false,
                holds: Some(Arc::new(Holds {
                    _memory: tensor.clone(),
                    _keep: keep,
                })),
            }),
            layout: Arc::new(layout),
            end,
        }))
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The layout, or `Released` once the view was released.
    pub fn layout(&self) -> PyResult<Arc<Layout>> {
        if self.state().released {
            return Err(released("the map"));
        }
        Ok(self.layout.clone())
    }

    /// Whether the view was released (by `close` or `close_unexported`).
    pub fn is_released(&self) -> bool {
        self.state().released
    }

    /// Whether the bracket is still open.
    pub fn is_mapped(&self) -> bool {
        self.state().bracket.is_some()
    }

    /// Exports alive now.
    pub fn exports(&self) -> usize {
        self.state().exports
    }

    /// One more export of the map (a numpy array's base, a buffer-protocol
    /// view, a DLPack capsule); `Released` once the view was released.
    pub fn export(self: &Arc<Self>) -> PyResult<ExportToken> {
        let mut state = self.state();
        let holds = match (&state.holds, state.released) {
            (Some(h), false) => h.clone(),
            _ => return Err(released("the map")),
        };
        state.exports += 1;
        Ok(ExportToken {
            lease: self.clone(),
            layout: self.layout.clone(),
            _holds: holds,
        })
    }

    /// Takes the bracket out if it ends now.
    fn take_if_done(&self, state: &mut State) -> Option<DynMap> {
        let done = match self.end {
            BracketEnd::WithView => state.released,
            BracketEnd::WithLastExport => state.released && state.exports == 0,
        };
        if done {
            state.bracket.take()
        } else {
            None
        }
    }

    /// Counts one export less; with `WithLastExport`, ends the bracket if it
    /// was the last one of a released view. Called from destructors: a
    /// failed sync END is reported by [`report_deferred`].
    fn remove_export(&self) {
        let done = {
            let mut state = self.state();
            state.exports = state.exports.saturating_sub(1);
            self.take_if_done(&mut state)
        };
        if let Some(map) = done {
            if let Err(e) = map.finish() {
                report_deferred(&e);
            }
        }
    }

    /// Releases the view: no more exports; the bracket ends now — with
    /// `WithLastExport`, only if no export is alive. Idempotent.
    fn release_view(&self) -> Result<(), TensorError> {
        let (done, holds) = {
            let mut state = self.state();
            state.released = true;
            (self.take_if_done(&mut state), state.holds.take())
        };
        // The bracket ends before what it holds goes (a frame, its last
        // handle here, goes back to its camera only after the sync END).
        let ended = done.map_or(Ok(()), DynMap::finish);
        drop(holds);
        ended
    }

    /// Releases the view (the end of its `with` block; see `release_view`),
    /// raising a failed sync END (`DeviceError`).
    pub fn close(&self) -> PyResult<()> {
        self.release_view().map_err(tensor_err)
    }

    /// Releases the view where nothing can be raised (its garbage
    /// collection): a failed sync END is reported by [`report_deferred`].
    pub fn close_quietly(&self) {
        if let Err(e) = self.release_view() {
            report_deferred(&e);
        }
    }

    /// Releases the view and ends the bracket now (`MapView.release()`).
    /// With `WithLastExport` and live exports it raises `MapConflict` (a
    /// `BufferError`) and changes nothing, as `memoryview.release()` does.
    /// A no-op on a released view.
    pub fn close_unexported(&self) -> PyResult<()> {
        {
            let state = self.state();
            let n = state.exports;
            if self.end == BracketEnd::WithLastExport && n > 0 && !state.released {
                return Err(MapConflict::new_err(format!(
                    "cannot release the map now: {n} export(s) (numpy arrays, memoryviews, \
                     DLPack capsules) still use its memory, and this map must stay open for \
                     them (a GL buffer is mapped only while a map is open; a capture buffer \
                     no frame held when the map was made is kept from the driver only by it); \
                     delete them first, or leave the `with` block, which ends the map when \
                     the last of them dies"
                )));
            }
        }
        self.close()
    }

    /// A numpy array over the map (its base is an [`Export`]).
    pub fn to_numpy<'py>(self: &Arc<Self>, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        // From here the token's `Drop` balances the count, whatever fails.
        export::to_numpy(Export::new(py, self.export()?)?)
    }
}

impl Drop for MapLease {
    /// A lease dropped with its bracket open (a frame's last plane array, a
    /// capsule never released) ends the bracket here.
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        if let Some(map) = state.bracket.take() {
            if let Err(e) = map.finish() {
                report_deferred(&e);
            }
        }
    }
}

/// One live export of a map: counts from its creation until it drops, and
/// keeps the map's memory valid meanwhile.
pub struct ExportToken {
    lease: Arc<MapLease>,
    layout: Arc<Layout>,
    /// Dropped after `Drop::drop` counted the export off (and perhaps ended
    /// the bracket): fields drop after the body.
    _holds: Arc<Holds>,
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
        "zerocam: ending a map where no error can be raised (its last export — numpy \
         array, memoryview, DLPack consumer — died, or its view was garbage-collected) \
         failed: {e}; devices may not see the CPU's writes"
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
