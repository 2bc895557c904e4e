//! [`MapLease`]: a live CPU map of a tensor with its dtype and layout erased,
//! shared by the Python map view, the numpy arrays made from it and DLPack
//! consumers; and [`Export`], the object a numpy array keeps as its base.
//!
//! Lifetime rule: the map (and so the address numpy reads) stays valid while
//! the lease is open. `MapView.release()` closes it only when no export is
//! alive; otherwise it raises `MapConflict` (a `BufferError`), as releasing a
//! `memoryview` with live exports does. An export counts from its creation
//! until numpy drops the array (the export's `Drop`), so the count is exact.

use std::any::Any;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple};
use zerocam_tensor::{Access, DType, Element, Tensor, TensorDyn};

use crate::errors::{invalid, released, tensor_err, MapConflict};

/// The layout numpy sees: shape, byte strides, dtype, base address.
#[derive(Debug, Clone)]
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

struct Open {
    /// The `TensorMap` itself, type-erased; dropping it ends the map.
    _map: Box<dyn Any + Send + Sync>,
    layout: Layout,
}

/// A CPU map shared by a map view, its numpy exports and DLPack capsules.
pub struct MapLease {
    open: Mutex<Option<Open>>,
    exports: AtomicUsize,
}

fn typed<T: Element>(t: &Tensor<T>, access: Access) -> zerocam_tensor::Result<Open> {
    let shape = t.shape().to_vec();
    let strides = t.strides().ok_or(zerocam_tensor::Error::MultiBuffer {
        buffers: t.plane_count(),
    });
    let strides = strides?;
    let layout = |ptr: usize, len: usize, readonly: bool| Layout {
        ptr,
        len,
        shape: shape.clone(),
        strides: strides.clone(),
        dtype: T::DTYPE,
        readonly,
    };
    let e = std::mem::size_of::<T>();
    Ok(match access {
        Access::Read => {
            let m = t.map_read()?;
            let l = layout(m.as_ptr() as usize, m.len() * e, true);
            Open {
                _map: Box::new(m),
                layout: l,
            }
        }
        Access::Write => {
            let mut m = t.map_write()?;
            let l = layout(m.as_mut_ptr() as usize, m.len() * e, false);
            Open {
                _map: Box::new(m),
                layout: l,
            }
        }
        Access::ReadWrite => {
            let mut m = t.map()?;
            let l = layout(m.as_mut_ptr() as usize, m.len() * e, false);
            Open {
                _map: Box::new(m),
                layout: l,
            }
        }
    })
}

impl MapLease {
    /// Maps `tensor` with `access`.
    pub fn new(tensor: &TensorDyn, access: Access) -> PyResult<Arc<MapLease>> {
        if tensor.strides().is_none() {
            return Err(invalid(format!(
                "a tensor of shape {:?} has no uniform strides (a view of a \
                 2-plane image, or planes in two buffers): map each plane(i)",
                tensor.shape()
            )));
        }
        let open = match tensor {
            TensorDyn::U8(t) => typed(t, access),
            TensorDyn::I8(t) => typed(t, access),
            TensorDyn::U16(t) => typed(t, access),
            TensorDyn::I16(t) => typed(t, access),
            TensorDyn::U32(t) => typed(t, access),
            TensorDyn::I32(t) => typed(t, access),
            TensorDyn::F16(t) => typed(t, access),
            TensorDyn::F32(t) => typed(t, access),
            TensorDyn::F64(t) => typed(t, access),
            _ => return Err(invalid("unsupported tensor element type")),
        }
        .map_err(tensor_err)?;
        Ok(Arc::new(MapLease {
            open: Mutex::new(Some(open)),
            exports: AtomicUsize::new(0),
        }))
    }

    /// The layout, or `Released` once closed.
    pub fn layout(&self) -> PyResult<Layout> {
        let open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        open.as_ref()
            .map(|o| o.layout.clone())
            .ok_or_else(|| released("the map"))
    }

    /// Whether the map is still open.
    pub fn is_open(&self) -> bool {
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }

    /// numpy arrays (and other exports) alive now.
    pub fn exports(&self) -> usize {
        self.exports.load(Ordering::SeqCst)
    }

    /// Counts one more export (a numpy array, a buffer-protocol view).
    pub fn add_export(&self) {
        self.exports.fetch_add(1, Ordering::SeqCst);
    }

    /// Counts one export less.
    pub fn remove_export(&self) {
        self.exports.fetch_sub(1, Ordering::SeqCst);
    }

    /// Ends the map, unless exports are alive (`MapConflict`). Idempotent.
    pub fn close(&self) -> PyResult<()> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let n = self.exports.load(Ordering::SeqCst);
        if n > 0 && open.is_some() {
            return Err(MapConflict::new_err(format!(
                "cannot release the map: {n} numpy array(s) or other exports still \
                 use its memory; delete them first"
            )));
        }
        drop(open.take());
        Ok(())
    }

    /// A numpy array over the map (its base is an [`Export`]).
    pub fn to_numpy<'py>(self: &Arc<Self>, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let layout = self.layout()?;
        let export = Bound::new(
            py,
            Export {
                lease: self.clone(),
                layout,
            },
        )?;
        self.add_export();
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

/// The numpy array interface typestr of `dtype` (native byte order).
pub fn typestr(dtype: DType) -> &'static str {
    match dtype {
        DType::U8 => "|u1",
        DType::I8 => "|i1",
        DType::U16 => "<u2",
        DType::I16 => "<i2",
        DType::U32 => "<u4",
        DType::I32 => "<i4",
        DType::F16 => "<f2",
        DType::F32 => "<f4",
        DType::F64 => "<f8",
    }
}

/// What a numpy array made from a map keeps as its base: it holds the map
/// open and counts as one export until numpy drops it.
#[pyclass(module = "zerocam._zerocam", name = "_MapExport", frozen)]
pub struct Export {
    lease: Arc<MapLease>,
    layout: Layout,
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
        d.set_item("typestr", typestr(l.dtype))?;
        d.set_item("data", (l.ptr, l.readonly))?;
        Ok(d)
    }
}

impl Drop for Export {
    fn drop(&mut self) {
        self.lease.remove_export();
    }
}
