//! `CudaArray`'s Python methods: the CUDA array interface, DLPack, the map's
//! properties and its lifetime.

use super::*;

/// What a DLPack capsule of a `CudaArray` owns: a share of the map and the
/// array's owner (`Tensor` or `Frame`), dropped by the consumer's deleter.
struct CapsuleOwner {
    _map: SharedMap,
    _owner: Py<PyAny>,
}

/// Whether `__dlpack__(stream=...)` synchronizes: not for `-1` (the consumer
/// asks for none), `InvalidArgument` for `0` (ambiguous, as the spec says),
/// else yes — `None` (the legacy default stream), `1`, `2` or a stream
/// handle: waiting for the map's stream makes the data ready for any stream.
fn wants_sync(stream: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
    let Some(s) = stream.filter(|s| !s.is_none()) else {
        return Ok(true);
    };
    match s.extract::<i64>() {
        Ok(0) => Err(invalid(
            "stream 0 is ambiguous (DLPack): pass None, 1 (legacy default), 2 (per-thread \
             default), a stream handle, or -1 for no synchronization",
        )),
        Ok(-1) => Ok(false),
        Ok(_) => Ok(true),
        Err(_) if s.extract::<u64>().is_ok() => Ok(true),
        Err(_) => Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "stream must be None or an int, not {}",
            s.get_type().name()?
        ))),
    }
}

#[pymethods]
impl CudaArray {
    /// The CUDA array interface, version 3 (CuPy, Numba): `shape`,
    /// `typestr`, `data` as `(device pointer, read-only)`, `strides` (`None`
    /// when C-contiguous, else byte strides), `version` and `stream` (the
    /// map's stream: consumers order their work after it). Raises
    /// `MapConflict` for a tensor without uniform strides (map each plane).
    ///
    /// A consumer of the interface (a CuPy or torch view) holds this object,
    /// not a capsule, so once the interface has been read, `release()` (and
    /// the end of a `with` block) marks the array released but keeps the map
    /// until the object itself is gone: no release unmaps memory under a
    /// live view.
    #[getter]
    fn __cuda_array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let m = self.check()?;
        self.interfaced.store(true, Ordering::Relaxed);
        let Some(strides) = &m.strides else {
            return Err(MapConflict::new_err(format!(
                "a CUDA map of shape {:?} has no uniform strides (a two-buffer image): use \
                 `planes`, or map each plane",
                m.shape
            )));
        };
        let d = PyDict::new(py);
        d.set_item("shape", PyTuple::new(py, &m.shape)?)?;
        d.set_item("typestr", convert::typestr(m.dtype))?;
        d.set_item("data", (m.device_ptr, !m.access.writes()))?;
        if m.c_contiguous() {
            d.set_item("strides", py.None())?;
        } else {
            d.set_item("strides", PyTuple::new(py, strides)?)?;
        }
        d.set_item("version", 3)?;
        d.set_item("stream", m.stream)?;
        Ok(d)
    }

    /// DLPack export: a capsule over the map, `(kDLCUDA, ordinal)` with the
    /// device pointer (every path: host-registered memory is device-mapped);
    /// `dl_device=(3, 0)` asks for `kDLCUDAHost` with the page-locked CPU
    /// address of host-registered memory instead. Before it returns, the map's stream is
    /// synchronized, unless `stream=-1`: the data is then ready on any
    /// stream the consumer names. The capsule keeps the map (and the tensor
    /// or frame) until the consumer's deleter runs. A read map's versioned
    /// capsule (`max_version=(1, 0)`) has the read-only flag set; a consumer
    /// that passes no `max_version` gets the legacy capsule, which has no
    /// such flag: the memory is still read-only for the device (host memory
    /// registered read-only, a GL resource registered for reading), so a
    /// kernel that writes through it faults or its writes are lost; map with
    /// `"rw"` for a consumer that writes. Another `dl_device` or `copy=True`
    /// raises `BufferError`.
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__<'py>(
        &self,
        py: Python<'py>,
        stream: Option<&Bound<'py, PyAny>>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (map, owner) = {
            let state = self.state();
            let l = state.as_ref().ok_or_else(|| released("the CUDA array"))?;
            (Arc::clone(&l.map), l.owner.clone_ref(py))
        };
        let m = &self.meta;
        let (device, data) = m.dl_export(dl_device).ok_or_else(|| {
            MapConflict::new_err(format!(
                "dl_device {dl_device:?}: this CUDA map exports to {:?}{}",
                m.dl_device(),
                if m.path == CudaPath::HostRegistered {
                    " or (3, 0) (kDLCUDAHost: its page-locked CPU address)"
                } else {
                    ""
                }
            ))
        })?;
        if copy == Some(true) {
            return Err(MapConflict::new_err(
                "copy=True: zerocam exports without copying; copy the consumer's array",
            ));
        }
        if wants_sync(stream)? {
            let shared = Arc::clone(&map);
            py.detach(move || lock(&shared).synchronize())
                .map_err(cuda_err)?;
        }
        let strides = m.strides.as_deref().ok_or_else(|| {
            MapConflict::new_err(format!(
                "a CUDA map of shape {:?} has no uniform strides: no DLPack export",
                m.shape
            ))
        })?;
        let versioned = max_version.is_some_and(|(major, _)| major >= 1);
        let desc = Described {
            data: usize::try_from(data).map_err(|_| invalid("address out of range"))?,
            device,
            dtype: m.dtype,
            shape: &m.shape,
            strides,
            // A consumer that passes no `max_version` (torch and CuPy before
            // DLPack 1.0) takes only the legacy capsule, which cannot carry
            // the read-only flag: a read map is exported in it unflagged,
            // and stays read-only on the device (see the method's doc).
            readonly: !m.access.writes() && versioned,
        };
        let owner = CapsuleOwner {
            _map: map,
            _owner: owner,
        };
        desc.capsule(py, Box::new(owner), versioned)
    }

    /// `(2, ordinal)` (`kDLCUDA`): what `__dlpack__()` exports by default.
    fn __dlpack_device__(&self) -> PyResult<(i32, i32)> {
        Ok(self.check()?.dl_device())
    }

    /// The device address of the first element (a `CUdeviceptr`).
    #[getter]
    fn device_ptr(&self) -> PyResult<u64> {
        Ok(self.check()?.device_ptr)
    }

    /// The CPU address of the first element for host-registered memory,
    /// `None` for the interop paths (`egl-image`, `gl-buffer`).
    #[getter]
    fn host_ptr(&self) -> PyResult<Option<u64>> {
        Ok(self.check()?.host_ptr)
    }

    /// Bytes from the first element to the end of the last (row padding included).
    #[getter]
    fn nbytes(&self) -> PyResult<usize> {
        Ok(self.check()?.len)
    }

    /// The shape.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.check()?.shape)
    }

    /// Byte strides (always given, as `Tensor.strides`), or `None` for a
    /// layout without uniform strides.
    #[getter]
    fn strides<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let m = self.check()?;
        m.strides.as_ref().map(|s| PyTuple::new(py, s)).transpose()
    }

    /// Element type name (`"uint8"`, `"float32"`, …).
    #[getter]
    fn dtype(&self) -> PyResult<&'static str> {
        Ok(self.check()?.dtype.name())
    }

    /// How the memory reached the device: `"host-registered"`,
    /// `"egl-image"` or `"gl-buffer"`.
    #[getter]
    fn path(&self) -> PyResult<&'static str> {
        Ok(self.check()?.path_name())
    }

    /// The access the device was granted: `"read"` or `"readwrite"`.
    #[getter]
    fn access(&self) -> PyResult<&'static str> {
        Ok(convert::access_name(self.check()?.access))
    }

    /// The map's `CUstream` handle (an int, never 0): queue the work that
    /// uses the memory on it, or synchronize with it.
    #[getter]
    fn stream(&self) -> PyResult<usize> {
        Ok(self.check()?.stream)
    }

    /// The planes (Y and UV of NV12..., one for other tensors): a list of
    /// dicts with `device_ptr`, `pitch` (bytes between rows), `shape` and
    /// `nbytes`.
    #[getter]
    fn planes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for p in &self.check()?.planes {
            let d = PyDict::new(py);
            d.set_item("device_ptr", p.device_ptr)?;
            d.set_item("pitch", p.pitch)?;
            d.set_item("shape", PyTuple::new(py, &p.shape)?)?;
            d.set_item("nbytes", p.len)?;
            list.append(d)?;
        }
        Ok(list)
    }

    /// Whether the array was released.
    #[getter]
    fn released(&self) -> bool {
        self.state().is_none()
    }

    /// Waits for the work queued on the map's stream (without the GIL).
    fn synchronize(&self, py: Python<'_>) -> PyResult<()> {
        let map = self.map()?;
        py.detach(move || lock(&map).synchronize())
            .map_err(cuda_err)
    }

    /// `nbytes` bytes (default: to the end) from `offset` of the map, copied
    /// by the device with `cuMemcpyDtoHAsync` on the map's stream, after the
    /// work queued there: what the device sees.
    #[pyo3(signature = (offset=0, nbytes=None))]
    fn copy_to_host<'py>(
        &self,
        py: Python<'py>,
        offset: usize,
        nbytes: Option<usize>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let map = self.map()?;
        let len = self.meta.len;
        let n = nbytes.unwrap_or(len.saturating_sub(offset));
        if offset.checked_add(n).is_none_or(|end| end > len) {
            return Err(invalid(format!(
                "{n} bytes at offset {offset} leave the {len}-byte CUDA map"
            )));
        }
        let mut buf = vec![0u8; n];
        py.detach(|| lock(&map).copy_to_host(offset, &mut buf))
            .map_err(cuda_err)?;
        Ok(PyBytes::new(py, &buf))
    }

    /// Ends the map now: the device borrow ends (CPU maps may start, a
    /// frame's buffer may go back to the driver). Raises `MapConflict` (a
    /// `BufferError`) and changes nothing while DLPack capsules or their
    /// consumers still use the map; a no-op once released. Once
    /// `__cuda_array_interface__` has been read, the map ends when this
    /// object is gone instead (its consumers hold it). Synchronize first if
    /// work queued on `stream` still uses the memory.
    fn release(&self, py: Python<'_>) -> PyResult<()> {
        self.end(py, true)
    }

    /// The array itself: `with t.cuda() as c:` releases it at the end.
    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Releases the array; the map ends now, or with the last DLPack capsule
    /// still using it. Never raises because of live capsules.
    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.end(py, false)?;
        Ok(false)
    }

    /// `CudaArray(shape=..., dtype=..., path=..., access=..., device_ptr=...)`.
    fn __repr__(&self) -> String {
        let m = &self.meta;
        format!(
            "CudaArray(shape={:?}, dtype={}, path={}, access={}, device_ptr={:#x}{})",
            m.shape,
            m.dtype.name(),
            m.path_name(),
            convert::access_name(m.access),
            m.device_ptr,
            if self.released() { ", released" } else { "" }
        )
    }
}
