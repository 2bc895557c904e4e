//! `Tensor.cuda()`, `Frame.cuda()` → [`CudaArray`]: a tensor or a frame as
//! CUDA device memory (zerocam-cuda's [`CudaMap`]), for CuPy, Numba, PyTorch
//! and anything else that takes `__cuda_array_interface__` or DLPack.
//!
//! - **One handle per process.** The CUDA driver (`libcuda.so.1`, or the
//!   library `ZEROCAM_CUDA_LIBRARY` names) is loaded, and device 0 opened,
//!   on first use; a failure is remembered and raised again on every use
//!   (`CudaUnavailable` naming the library). Buffers are registered once per
//!   buffer by that handle's caches, whatever the number of `cuda()` calls.
//! - **The map's lifetime.** A `CudaArray` holds its map until `release()`
//!   (or the end of its `with` block, or its garbage collection). While the
//!   map lives the buffer is borrowed for the device: conflicting CPU maps
//!   are refused (`MapConflict`), and a frame's buffer is not given back to
//!   the driver — `Frame.release()` succeeds at once and the buffer stays out
//!   of the queue until the map ends, the rule plane arrays follow.
//! - **DLPack capsules** share the map: each one keeps it (and the array's
//!   owner: the `Tensor` or `Frame`) until the consumer's deleter runs, so
//!   the map ends when the array is released *and* the last capsule is gone
//!   (the rule of `MapView` and its exports, `lease.rs`); an explicit
//!   `release()` refuses while capsules live.
//! - **`__cuda_array_interface__` consumers** hold the `CudaArray` itself,
//!   with no count zerocam can see: once the interface has been read, a
//!   release marks the array released and keeps the map until the object
//!   is gone (its last consumer), so no release unmaps memory under a view.
//!
//! Why `frozen` with a `Mutex` rather than `unsendable`: a `CudaMap` is
//! `Send` but not `Sync`, so a mutex around it makes the object usable from
//! any Python thread (an `unsendable` object raises when another thread
//! touches it, and cannot be shared with a DLPack deleter, which runs on
//! whatever thread the consumer frees on, GIL or not).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};
use zerocam_cuda::{Cuda, CudaError, CudaMap, CudaPath, CudaPlane};
use zerocam_gpu::{Gpu, WeakGpu};
use zerocam_tensor::{Access, DType, Error as TensorError, Tensor, TensorDyn, TensorMemory};

use crate::convert;
use crate::dlpack::{self, Described};
use crate::errors::{cuda_err, cuda_err_ref, invalid, released, MapConflict};

/// The process's CUDA handle (device 0), made on first use; its error kept.
fn handle_result() -> &'static Result<Cuda, CudaError> {
    static CUDA: OnceLock<Result<Cuda, CudaError>> = OnceLock::new();
    CUDA.get_or_init(Cuda::new)
}

/// The process's CUDA handle, or the (remembered) reason there is none.
/// The first call loads the driver: without the GIL.
fn handle(py: Python<'_>) -> PyResult<&'static Cuda> {
    let cuda = py.detach(handle_result).as_ref().map_err(cuda_err_ref)?;
    // A fork() child inherits the handle but not a usable driver.
    cuda.driver().check_process().map_err(cuda_err)?;
    Ok(cuda)
}

/// `zerocam.cuda_available()`: whether CUDA can be used here — the driver
/// library loads and device 0 opens (the first call tries, once per process),
/// and this is not a `fork()` child of the process that loaded it.
#[pyfunction]
pub fn cuda_available(py: Python<'_>) -> bool {
    handle(py).is_ok()
}

/// `zerocam.cuda_info()`: device 0 as a dict (`name`, `ordinal`,
/// `compute_capability`, `integrated`, `driver_version`, `library`,
/// `host_register`, `read_only_host_register`, `unknown_attributes` (the
/// attributes the driver is older than), ...), or
/// `None` when CUDA is unavailable.
#[pyfunction]
pub fn cuda_info(py: Python<'_>) -> PyResult<Option<Bound<'_, PyDict>>> {
    let Ok(cuda) = handle(py) else {
        return Ok(None);
    };
    let i = cuda.info();
    let d = PyDict::new(py);
    d.set_item("name", &i.name)?;
    d.set_item("ordinal", i.ordinal)?;
    d.set_item("compute_capability", i.compute_capability)?;
    d.set_item("integrated", i.integrated)?;
    d.set_item("driver_version", i.driver_version)?;
    d.set_item("can_map_host_memory", i.can_map_host_memory)?;
    d.set_item("unified_addressing", i.unified_addressing)?;
    d.set_item(
        "host_pointer_is_device_pointer",
        i.host_pointer_is_device_pointer,
    )?;
    d.set_item("host_register", i.host_register)?;
    d.set_item("read_only_host_register", i.read_only_host_register)?;
    d.set_item(
        "unknown_attributes",
        PyList::new(py, &i.unknown_attributes)?,
    )?;
    d.set_item("library", cuda.driver().library().display().to_string())?;
    Ok(Some(d))
}

/// `zerocam.cuda_stats()`: the process handle's counters as a dict — `maps`;
/// per path (`host`, `staged`, `gl_buffers`, `egl_images`) `imports` and
/// `hits`; `staged_copies` and `staged_bytes` (the copies of buffers the
/// driver would not register: never silent) — or `None` when CUDA is
/// unavailable.
#[pyfunction]
pub fn cuda_stats(py: Python<'_>) -> PyResult<Option<Bound<'_, PyDict>>> {
    let Ok(cuda) = handle(py) else {
        return Ok(None);
    };
    let st = py.detach(|| cuda.stats());
    let d = PyDict::new(py);
    d.set_item("maps", st.maps)?;
    for (name, c) in [
        ("host", st.host),
        ("staged", st.staged),
        ("gl_buffers", st.gl_buffers),
        ("egl_images", st.egl_images),
    ] {
        let p = PyDict::new(py);
        p.set_item("imports", c.imports)?;
        p.set_item("hits", c.hits)?;
        p.set_item("live", c.live)?;
        d.set_item(name, p)?;
    }
    d.set_item("staged_copies", st.staged_copies)?;
    d.set_item("staged_bytes", st.staged_bytes)?;
    Ok(Some(d))
}

/// The GPUs of this process's `Preprocessor`s, held weakly: a PBO result
/// maps through its own GL thread (GL buffer interop), and a dma-buf frame
/// through a live GPU's EGLImage on an integrated device (Jetson).
static GPUS: Mutex<Vec<WeakGpu>> = Mutex::new(Vec::new());

/// Remembers `gpu` (a `Preprocessor`'s) for the CUDA maps of its PBOs.
pub fn remember_gpu(gpu: &Gpu) {
    let mut gpus = GPUS.lock().unwrap_or_else(PoisonError::into_inner);
    gpus.retain(|g| g.upgrade().is_some());
    gpus.push(gpu.downgrade());
}

/// A live remembered GPU `pick` accepts.
fn remembered_gpu(pick: impl Fn(&Gpu) -> bool) -> Option<Gpu> {
    let gpus = GPUS.lock().unwrap_or_else(PoisonError::into_inner);
    gpus.iter().filter_map(WeakGpu::upgrade).find(|g| pick(g))
}

/// `Tensor.cuda(access)`: `None` asks for read-write, and read-only memory
/// gets a read map instead. `owner` is the `Tensor` object. A PBO (a GPU
/// `Preprocessor`'s result) maps through its GL thread.
pub fn map_tensor(
    py: Python<'_>,
    tensor: &TensorDyn,
    access: Option<&str>,
    owner: Py<PyAny>,
) -> PyResult<CudaArray> {
    let cuda = handle(py)?;
    let asked = access.map(convert::access).transpose()?;
    if let Some(token) = tensor.pbo_owner() {
        if let Some(gpu) = remembered_gpu(|g| g.owner_token() == token) {
            cuda.attach_gpu(&gpu);
        }
    }
    let tensor = tensor.clone();
    let map = py.detach(|| {
        let first = cuda.map_dyn(&tensor, asked.unwrap_or(Access::ReadWrite));
        match first {
            Err(CudaError::Tensor(TensorError::ReadOnly { .. })) if asked.is_none() => {
                cuda.map_dyn(&tensor, Access::Read)
            }
            other => other,
        }
    });
    CudaArray::new(cuda, map.map_err(cuda_err)?, owner)
}

/// `Frame.cuda()`: a read map of the frame's buffer (`tensor`, taken while
/// the frame is held). `owner` is the `Frame` object. A dma-buf frame on an
/// integrated device (Jetson) goes through a live GPU's EGLImage of it when
/// a `Preprocessor` has one (what `Cuda::map_frame` does with a GPU
/// attached), else by host registration.
pub fn map_frame(py: Python<'_>, tensor: Tensor<u8>, owner: Py<PyAny>) -> PyResult<CudaArray> {
    let cuda = handle(py)?;
    let egl = tensor.memory() == TensorMemory::Dma && cuda.info().integrated;
    let gpu = egl
        .then(|| remembered_gpu(|g| g.info().dma_buf_import))
        .flatten();
    let map = py.detach(|| match gpu {
        Some(gpu) => {
            cuda.attach_gpu(&gpu);
            cuda.map_egl(&tensor, Access::Read)
        }
        None => cuda.map(&tensor, Access::Read),
    });
    CudaArray::new(cuda, map.map_err(cuda_err)?, owner)
}

/// What the array describes: the map's fields, read once (they never change).
struct Meta {
    device_ptr: u64,
    host_ptr: Option<u64>,
    len: usize,
    shape: Vec<usize>,
    strides: Option<Vec<usize>>,
    dtype: DType,
    planes: Vec<CudaPlane>,
    path: CudaPath,
    access: Access,
    stream: usize,
    ordinal: i32,
}

impl Meta {
    /// Whether the strides are the C-contiguous ones (dims of 1 aside).
    fn c_contiguous(&self) -> bool {
        let Some(strides) = &self.strides else {
            return false;
        };
        let mut want = self.dtype.size();
        for (&d, &s) in self.shape.iter().zip(strides).rev() {
            if d != 1 && s != want {
                return false;
            }
            want = want.saturating_mul(d);
        }
        true
    }

    /// DLPack's `(device_type, device_id)`: `(kDLCUDA, ordinal)` with the
    /// device pointer, for every path — host-registered memory is
    /// device-mapped, so its device pointer is valid device memory, and
    /// `torch.from_dlpack` / `cupy.from_dlpack` take only `kDLCUDA`.
    fn dl_device(&self) -> (i32, i32) {
        (dlpack::DL_CUDA, self.ordinal)
    }

    /// The export `__dlpack__(dl_device=...)` asks for: the default
    /// (`kDLCUDA`, the device pointer), or `(kDLCUDAHost, 0)` with the CPU
    /// address of host-registered (page-locked) memory.
    fn dl_export(&self, asked: Option<(i32, i32)>) -> Option<((i32, i32), u64)> {
        let host = (dlpack::DL_CUDA_HOST, 0);
        match asked {
            None => Some((self.dl_device(), self.device_ptr)),
            Some(d) if d == self.dl_device() => Some((d, self.device_ptr)),
            Some(d) if d == host && self.path == CudaPath::HostRegistered => {
                self.host_ptr.map(|p| (host, p))
            }
            Some(_) => None,
        }
    }

    fn path_name(&self) -> &'static str {
        match self.path {
            CudaPath::HostRegistered => "host-registered",
            CudaPath::EglImage => "egl-image",
            CudaPath::GlBuffer => "gl-buffer",
            CudaPath::Staged => "staged",
        }
    }
}

/// The map, shared by the array and its DLPack capsules (it ends with the
/// last of them). The mutex makes the `!Sync` map shareable.
type SharedMap = Arc<Mutex<CudaMap>>;

fn lock(map: &SharedMap) -> MutexGuard<'_, CudaMap> {
    map.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The array's live state: the map and what the memory belongs to (the
/// `Tensor` or `Frame` object), kept until `release()`.
struct Live {
    map: SharedMap,
    owner: Py<PyAny>,
}

/// A tensor or frame mapped into CUDA device memory (`Tensor.cuda()`,
/// `Frame.cuda()`): `__cuda_array_interface__` (CuPy, Numba) and
/// `__dlpack__` (PyTorch, CuPy, JAX). The buffer is borrowed for the device
/// until `release()` or the end of the `with` block.
#[pyclass(module = "zerocam._zerocam", name = "CudaArray", frozen)]
pub struct CudaArray {
    meta: Meta,
    live: Mutex<Option<Live>>,
    /// `__cuda_array_interface__` was read: a consumer may hold this object
    /// and use the memory without any count zerocam can see.
    interfaced: AtomicBool,
    /// The map after a release once the interface was read: it ends with
    /// this object, that is with the interface's last consumer.
    deferred: Mutex<Option<Live>>,
}

impl CudaArray {
    fn new(cuda: &Cuda, map: CudaMap, owner: Py<PyAny>) -> PyResult<CudaArray> {
        let meta = Meta {
            device_ptr: map.device_ptr(),
            host_ptr: map.host_ptr(),
            len: map.len(),
            shape: map.shape().to_vec(),
            strides: map.strides().map(<[usize]>::to_vec),
            dtype: map.dtype(),
            planes: map.planes().to_vec(),
            path: map.path(),
            access: map.access(),
            stream: map.stream() as usize,
            ordinal: cuda.info().ordinal,
        };
        Ok(CudaArray {
            meta,
            live: Mutex::new(Some(Live {
                map: Arc::new(Mutex::new(map)),
                owner,
            })),
            interfaced: AtomicBool::new(false),
            deferred: Mutex::new(None),
        })
    }

    fn state(&self) -> MutexGuard<'_, Option<Live>> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The shared map, or `Released`.
    fn map(&self) -> PyResult<SharedMap> {
        self.state()
            .as_ref()
            .map(|l| Arc::clone(&l.map))
            .ok_or_else(|| released("the CUDA array"))
    }

    /// `Released` once released.
    fn check(&self) -> PyResult<&Meta> {
        self.map().map(|_| &self.meta)
    }

    /// Ends the array's share of the map (the map itself ends with the last
    /// capsule); `strict`: refuse while capsules live.
    fn end(&self, py: Python<'_>, strict: bool) -> PyResult<()> {
        let live = {
            let mut state = self.state();
            if let (true, Some(l)) = (strict, state.as_ref()) {
                let capsules = Arc::strong_count(&l.map) - 1;
                if capsules > 0 {
                    return Err(MapConflict::new_err(format!(
                        "cannot release the CUDA map now: {capsules} DLPack capsule(s) or \
                         consumer(s) still use its memory; delete them first, or leave the \
                         `with` block, which ends the map when the last of them dies"
                    )));
                }
            }
            state.take()
        };
        let Some(live) = live else {
            return Ok(());
        };
        if self.interfaced.load(Ordering::Relaxed) {
            *self.deferred.lock().unwrap_or_else(PoisonError::into_inner) = Some(live);
            return Ok(());
        }
        let Live { map, owner } = live;
        py.detach(move || drop(map));
        drop(owner);
        Ok(())
    }
}

mod methods;
