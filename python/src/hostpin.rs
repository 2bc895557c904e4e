//! `HostPin` and `CpuAccess`: a stable host address for runtimes that keep a
//! pointer (TFLite custom allocations, ONNX Runtime external tensors), and the
//! explicit coherency bracket that goes with it.
//!
//! A pin holds the buffer (so the address stays valid while the pin lives,
//! across maps) and records no borrow: it runs no dma-buf sync by itself.
//! Code reading or writing through `pin.ptr` brackets that access with
//! `with pin.cpu_access("read"): ...` (dma-buf sync START/END, recorded like a
//! map, so it conflicts with writable maps and with a device owning the buffer).

use std::sync::{Mutex, PoisonError};

use pyo3::prelude::*;
use pyo3::types::PyTuple;
use zerocam_tensor::{Access, CpuAccess as RCpuAccess, HostPin as RHostPin, TensorDyn};

use crate::convert::{access as parse_access, access_name};
use crate::errors::{invalid, released, tensor_err};

/// A stable host address of a tensor's bytes (see the module docs).
#[pyclass(module = "zerocam._zerocam", frozen)]
pub struct HostPin {
    pin: Mutex<Option<RHostPin>>,
    access: Access,
}

impl HostPin {
    /// Pins `tensor`.
    pub fn new(tensor: &TensorDyn, access: Access) -> PyResult<HostPin> {
        let pin = tensor.pin_host().map_err(tensor_err)?;
        Ok(HostPin {
            pin: Mutex::new(Some(pin)),
            access,
        })
    }

    fn with<R>(&self, f: impl FnOnce(&RHostPin) -> PyResult<R>) -> PyResult<R> {
        let pin = self.pin.lock().unwrap_or_else(PoisonError::into_inner);
        match pin.as_ref() {
            Some(p) => f(p),
            None => Err(released("the pin")),
        }
    }
}

#[pymethods]
impl HostPin {
    /// The address of the tensor's first element.
    #[getter]
    fn ptr(&self) -> PyResult<usize> {
        self.with(|p| Ok(p.ptr().as_ptr() as usize))
    }

    /// Bytes from the first element to the end of the last (padding included).
    #[getter]
    fn len(&self) -> PyResult<usize> {
        self.with(|p| Ok(p.len()))
    }

    fn __len__(&self) -> PyResult<usize> {
        self.len()
    }

    /// The largest power of two (at most 64) dividing the address.
    #[getter]
    fn alignment(&self) -> PyResult<usize> {
        self.with(|p| Ok(p.alignment()))
    }

    /// The access the pin was made for (`"read"`, `"write"`, `"readwrite"`).
    #[getter]
    fn access(&self) -> &'static str {
        access_name(self.access)
    }

    /// Whether the pin was released.
    #[getter]
    fn released(&self) -> bool {
        self.pin
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_none()
    }

    /// Starts CPU access through the pin (a context manager); `access`
    /// defaults to the pin's.
    #[pyo3(signature = (access=None))]
    fn cpu_access(&self, access: Option<&str>) -> PyResult<CpuAccess> {
        let a = match access {
            Some(s) => parse_access(s)?,
            None => self.access,
        };
        if a.writes() && !self.access.writes() {
            return Err(invalid(format!(
                "cpu_access({:?}) on a pin made for {:?}",
                access_name(a),
                access_name(self.access)
            )));
        }
        let guard = self.with(|p| p.cpu_access(a).map_err(tensor_err))?;
        Ok(CpuAccess {
            guard: Mutex::new(Some(guard)),
        })
    }

    /// Drops the pin: the address is no longer guaranteed. Idempotent.
    fn release(&self) {
        drop(
            self.pin
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) -> bool {
        self.release();
        false
    }

    fn __repr__(&self) -> String {
        match self.with(|p| Ok((p.ptr().as_ptr() as usize, p.len()))) {
            Ok((ptr, len)) => format!(
                "HostPin(ptr={ptr:#x}, len={len}, access={})",
                access_name(self.access)
            ),
            Err(_) => "HostPin(released)".to_owned(),
        }
    }
}

/// An open CPU access bracket on pinned memory; ends at the end of its `with`
/// block or on `end()`.
#[pyclass(module = "zerocam._zerocam", frozen)]
pub struct CpuAccess {
    guard: Mutex<Option<RCpuAccess>>,
}

#[pymethods]
impl CpuAccess {
    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.end()?;
        Ok(false)
    }

    /// Ends the access (dma-buf sync END), reporting a failed sync.
    fn end(&self) -> PyResult<()> {
        let g = self
            .guard
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match g {
            Some(g) => g.finish().map_err(tensor_err),
            None => Ok(()),
        }
    }

    /// Whether the bracket is still open.
    #[getter]
    fn active(&self) -> bool {
        self.guard
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }
}
