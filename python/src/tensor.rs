//! `zerocam.Tensor`: a handle on zero-copy memory (heap, shared memory,
//! DMA-BUF), its views, maps, pins and exports.

use std::any::Any;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Weak;

use pyo3::prelude::*;
use pyo3::types::PyTuple;
use zerocam_tensor::{Access, Error as TensorError, ImageLayout, Tensor, TensorDyn, TensorMemory};

use crate::convert;
use crate::errors::{import_err, invalid, io_error, tensor_err};
use crate::format::{PixelFormat, Region};
use crate::hostpin::HostPin;
use crate::lease::{BracketEnd, Keep, MapLease};
use crate::mapview::MapView;
use crate::{capsule, dlpack, frame_files};

/// A tensor: shape, dtype and memory; cheap to view, batch and map.
#[pyclass(module = "zerocam._zerocam", name = "Tensor", frozen)]
pub struct PyTensor {
    pub(crate) inner: TensorDyn,
    default_access: Access,
    /// What the memory needs alive besides the tensor (a `Preprocessor`,
    /// whose GL context owns the PBOs of its results); shared by views.
    owner: Option<Py<PyAny>>,
    /// The captured frame the tensor is the buffer of (`Frame.tensor`), not
    /// kept alive by the tensor: arrays of its maps keep it while it is held.
    /// A tensor importing a frame's buffer (`from_fd`, `from_zerocam`) has
    /// none: its maps find the frame through `frame_files.rs`.
    frame: Option<Weak<dyn Any + Send + Sync>>,
}

impl PyTensor {
    /// Wraps a Rust tensor.
    pub fn wrap(inner: TensorDyn) -> PyTensor {
        PyTensor {
            inner,
            default_access: Access::ReadWrite,
            owner: None,
            frame: None,
        }
    }

    /// Wraps the tensor of a captured frame (`Frame.tensor`): the arrays of
    /// its maps keep `frame` — so the buffer stays out of the driver's queue
    /// — until the last of them is gone, if it is still held when mapped.
    pub fn of_frame(inner: TensorDyn, frame: Weak<dyn Any + Send + Sync>) -> PyTensor {
        PyTensor {
            frame: Some(frame),
            ..PyTensor::wrap(inner)
        }
    }

    /// How a map of the tensor ends and what its exports keep besides the
    /// memory. The tensor of a capture buffer — `Frame.tensor`, or an import
    /// of a buffer whose fd a frame handed out (see `frame_files.rs`) —
    /// keeps the frames holding the buffer, so it stays out of the driver's
    /// queue until the last export is gone. With no frame holding it
    /// (released, the buffer not yet lent to the driver again) nothing keeps
    /// the buffer out of the queue but the map's own borrow: that map ends
    /// with its last export, as the frame's `planes` do.
    fn lease_terms(&self, py: Python<'_>) -> (BracketEnd, Keep) {
        let owner = self.owner.as_ref().map(|o| o.clone_ref(py));
        let held = match &self.frame {
            Some(weak) => Some(weak.upgrade().into_iter().collect()),
            None => frame_files::lenders(&self.inner),
        };
        let (end, frames) = match held {
            None => (BracketEnd::WithView, Vec::new()),
            Some(frames) if frames.is_empty() => (BracketEnd::WithLastExport, frames),
            Some(frames) => (BracketEnd::WithView, frames),
        };
        (end, Keep { frames, owner })
    }

    /// A frame's tensor hands out its buffer's fd: record the frame, so
    /// that a tensor importing the fd finds it (see `frame_files.rs`).
    fn lending_fd(&self) {
        if let Some(frame) = &self.frame {
            frame_files::lent(&self.inner, frame);
        }
    }

    /// Wraps a Rust tensor that keeps `owner` alive (and its views too).
    pub fn wrap_owned(inner: TensorDyn, owner: Py<PyAny>) -> PyTensor {
        PyTensor {
            owner: Some(owner),
            ..PyTensor::wrap(inner)
        }
    }
}

fn memory_name(m: TensorMemory) -> String {
    m.to_string()
}

fn shape_arg(obj: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
    let dims: Vec<i64> = match obj.extract::<i64>() {
        Ok(n) => vec![n],
        Err(_) => obj
            .extract()
            .map_err(|_| invalid(format!("shape {obj} is not an int or a sequence of ints")))?,
    };
    convert::shape(dims)
}

#[pymethods]
impl PyTensor {
    /// Allocates a zeroed C-contiguous tensor of `shape` and `dtype` in `mem`
    /// (`None`: DMA, then shared memory, then heap).
    #[new]
    #[pyo3(signature = (shape, dtype=None, mem=None, name=None))]
    fn new(
        py: Python<'_>,
        shape: &Bound<'_, PyAny>,
        dtype: Option<&Bound<'_, PyAny>>,
        mem: Option<&str>,
        name: Option<&str>,
    ) -> PyResult<PyTensor> {
        let shape = shape_arg(shape)?;
        let dtype = match dtype {
            Some(d) if !d.is_none() => convert::dtype(py, d)?,
            _ => zerocam_tensor::DType::U8,
        };
        let mem = convert::memory(mem)?;
        let t = TensorDyn::new(&shape, dtype, mem, name).map_err(tensor_err)?;
        Ok(PyTensor::wrap(t))
    }

    /// Allocates a zeroed `width`x`height` image of `format` (uint8 samples).
    /// `row_stride` pads rows (bytes); `access` is the default of `map()`.
    #[staticmethod]
    #[pyo3(signature = (width, height, format=None, mem=None, access="readwrite", row_stride=None, batch=None))]
    #[allow(clippy::too_many_arguments)]
    fn image(
        width: usize,
        height: usize,
        format: Option<&Bound<'_, PyAny>>,
        mem: Option<&str>,
        access: &str,
        row_stride: Option<usize>,
        batch: Option<usize>,
    ) -> PyResult<PyTensor> {
        let format = match format {
            Some(f) if !f.is_none() => PixelFormat::parse(f)?,
            _ => PixelFormat::Rgb,
        };
        let default_access = convert::access(access)?;
        let mut layout = ImageLayout::new(width, height, format.rust());
        if let Some(s) = row_stride {
            layout = layout.with_row_stride(s);
        }
        if let Some(n) = batch {
            if n == 0 {
                return Err(invalid("batch 0 is empty: give at least 1"));
            }
            layout = layout.with_batch(n);
        }
        let mut b = Tensor::<u8>::builder_image(layout);
        if let Some(m) = convert::memory(mem)? {
            b = b.memory(m);
        }
        let t = b.build().map_err(tensor_err)?;
        Ok(PyTensor {
            default_access,
            ..PyTensor::wrap(TensorDyn::U8(t))
        })
    }

    /// Imports the buffer behind `fd` — a dma-buf, or a memfd that cannot
    /// shrink (one made with `MFD_ALLOW_SEALING` is sealed with
    /// `F_SEAL_SHRINK` now) — as a C-contiguous tensor of `shape` and `dtype`.
    /// The tensor keeps a duplicate of `fd`: the caller still owns (and
    /// closes) `fd`. Regular files, tmpfs/`/dev/shm` files and unsealable
    /// memfds raise `InvalidArgument` naming what the file is: a file that
    /// shrank under the mapping would kill the interpreter with `SIGBUS`.
    /// `unchecked=True` takes any mappable file as it is; the caller then
    /// guarantees that nobody truncates it while the tensor, a view of it or
    /// a map or array of those lives, else the process dies of `SIGBUS`.
    #[staticmethod]
    #[pyo3(signature = (fd, shape, dtype=None, *, unchecked=false))]
    fn from_fd(
        py: Python<'_>,
        fd: &Bound<'_, PyAny>,
        shape: &Bound<'_, PyAny>,
        dtype: Option<&Bound<'_, PyAny>>,
        unchecked: bool,
    ) -> PyResult<PyTensor> {
        let fd = fd_arg(fd)?;
        let shape = shape_arg(shape)?;
        let dtype = match dtype {
            Some(d) if !d.is_none() => convert::dtype(py, d)?,
            _ => zerocam_tensor::DType::U8,
        };
        let t = crate::unchecked::import(dup_fd(fd)?, &shape, dtype, unchecked);
        Ok(PyTensor::wrap(t.map_err(|e| import_err(e, fd))?))
    }

    /// The shape.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.inner.shape())
    }

    /// Byte strides, or `None` for layouts without uniform strides.
    #[getter]
    fn strides<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        self.inner
            .strides()
            .map(|s| PyTuple::new(py, s))
            .transpose()
    }

    /// Element type name (`"uint8"`, `"float32"`, …).
    #[getter]
    fn dtype(&self) -> &'static str {
        self.inner.dtype().name()
    }

    /// The pixel format of an image tensor, else `None`.
    #[getter]
    fn format(&self) -> Option<PixelFormat> {
        self.inner.format().and_then(PixelFormat::from_rust)
    }

    /// `"mem"`, `"shm"`, `"dma"` or `"pbo"`.
    #[getter]
    fn memory(&self) -> String {
        memory_name(self.inner.memory())
    }

    /// Width of an image tensor.
    #[getter]
    fn width(&self) -> Option<usize> {
        self.inner.width()
    }

    /// Height of an image tensor.
    #[getter]
    fn height(&self) -> Option<usize> {
        self.inner.height()
    }

    /// Bytes between rows of an image tensor's first plane.
    #[getter]
    fn row_stride(&self) -> Option<usize> {
        self.inner.row_stride()
    }

    /// Bytes of the elements (padding excluded).
    #[getter]
    fn nbytes(&self) -> usize {
        self.inner.size()
    }

    /// Number of planes (2 for NV12, 3 for planar RGB, else 1).
    #[getter]
    fn planes(&self) -> usize {
        self.inner.plane_count()
    }

    /// The tensor's name.
    #[getter]
    fn name(&self) -> Option<String> {
        self.inner.name().map(str::to_owned)
    }

    /// The fd number behind the tensor's buffer, borrowed (valid while the
    /// tensor lives; do not close it), or `None` for heap memory. A tensor
    /// importing a frame's buffer through it (or `clone_fd()`,
    /// `__zerocam_tensor__()`) finds the frame: its arrays keep the buffer
    /// from the driver as those of `frame.tensor` maps do.
    #[getter]
    fn fd(&self) -> Option<i32> {
        let fd = self.inner.fd().map(|fd| fd.as_raw_fd());
        if fd.is_some() {
            self.lending_fd();
        }
        fd
    }

    /// The identity shared by this tensor's views, batches and planes.
    #[getter]
    fn buffer_id(&self) -> u64 {
        self.inner.buffer_identity().id()
    }

    /// `(st_dev, st_ino)` of the buffer's file, or `None` for heap memory.
    #[getter]
    fn fd_identity(&self) -> Option<(u64, u64)> {
        self.inner.fd_identity().map(|i| (i.dev, i.ino))
    }

    /// A new fd of the buffer (a `dup`), owned by the caller.
    fn clone_fd(&self) -> PyResult<i32> {
        let fd = self.inner.clone_fd().map_err(tensor_err)?;
        self.lending_fd();
        Ok(into_raw(fd))
    }

    /// A view of `region` (a `Region` or `(x, y, width, height)`): same buffer.
    fn view(&self, py: Python<'_>, region: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let r = Region::parse(region)?;
        Ok(self.derived(py, self.inner.view(r).map_err(tensor_err)?))
    }

    /// Element `n` of the leading batch dimension.
    fn batch(&self, py: Python<'_>, n: usize) -> PyResult<PyTensor> {
        Ok(self.derived(py, self.inner.batch(n).map_err(tensor_err)?))
    }

    /// Plane `i` of an image as a 2-D tensor.
    fn plane(&self, py: Python<'_>, i: usize) -> PyResult<PyTensor> {
        Ok(self.derived(py, self.inner.plane(i).map_err(tensor_err)?))
    }

    /// Maps the tensor for the CPU; use as a context manager. `access` is
    /// `"read"` (read-only numpy arrays, no write-back flush), `"write"` or
    /// `"readwrite"` (default: the tensor's, normally `"readwrite"`). The
    /// `with` block is the access bracket (a dma-buf's sync START/END);
    /// arrays made from the view outlive it, keeping the memory.
    #[pyo3(signature = (access=None))]
    fn map(&self, py: Python<'_>, access: Option<&str>) -> PyResult<MapView> {
        let access = match access {
            Some(a) => convert::access(a)?,
            None => self.default_access,
        };
        let (end, keep) = self.lease_terms(py);
        Ok(MapView::new(
            MapLease::new(&self.inner, access, end, keep)?,
            access,
        ))
    }

    /// Copies the tensor into a new numpy array (a convenience; `map()` is the
    /// zero-copy way).
    fn numpy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let lease = MapLease::new(
            &self.inner,
            Access::Read,
            BracketEnd::WithView,
            Keep::default(),
        )?;
        let a = lease.to_numpy(py)?;
        let copy = a.call_method0("copy")?;
        drop(a);
        lease.close()?;
        Ok(copy)
    }

    /// Pins the memory: a stable address valid until `release()`, across maps.
    /// Access through it is bracketed by `cpu_access(access)`.
    #[pyo3(signature = (access="readwrite"))]
    fn pin_host(&self, access: &str) -> PyResult<HostPin> {
        HostPin::new(&self.inner, convert::access(access)?)
    }

    /// DLPack export (CPU): `numpy.from_dlpack(t)` without a copy. The
    /// consumer holds a read-write map (read-only for read-only memory, with
    /// a versioned capsule) until it drops the array.
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
        let (_, keep) = self.lease_terms(py);
        dlpack::export(py, &self.inner, versioned, keep)
    }

    /// `(kDLCPU, 0)`.
    fn __dlpack_device__(&self) -> (i32, i32) {
        (dlpack::DL_CPU, 0)
    }

    /// Maps the tensor into CUDA device memory (see `CudaArray`): `access`
    /// `"r"` or `"rw"` (default: `"rw"`, `"r"` for read-only memory). The
    /// buffer is registered with the driver once, whatever the number of
    /// calls; the map borrows it for the device until the array's
    /// `release()` or the end of its `with` block (conflicting CPU maps raise
    /// `MapConflict` meanwhile). Raises `CudaUnavailable` without a driver.
    #[cfg(feature = "cuda")]
    #[pyo3(signature = (access=None))]
    fn cuda(slf: &Bound<'_, Self>, access: Option<&str>) -> PyResult<crate::cuda::CudaArray> {
        let owner = slf.clone().into_any().unbind();
        crate::cuda::map_tensor(slf.py(), &slf.get().inner, access, owner)
    }

    /// The `zerocam.tensor.v1` capsule (see `capsule.rs` and the docs).
    fn __zerocam_tensor__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let capsule = capsule::export(py, &self.inner)?;
        self.lending_fd();
        Ok(capsule)
    }

    /// The memory of `array` — a numpy array (`numpy.ndarray`, not another
    /// object's `__array_interface__`, whose address could be anything):
    /// C-contiguous, writable, a zerocam dtype — as a
    /// writable tensor of its shape and dtype, without a copy. Writes through
    /// the tensor (`Preprocessor(...)(frame, out=t)`) land in the array;
    /// the tensor keeps the array alive. Don't read or write the array while
    /// zerocam writes it (a call that takes `out=` returns when it is done).
    #[staticmethod]
    fn from_array(array: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        Ok(PyTensor::wrap(crate::lent::from_array(array)?))
    }

    /// A tensor from any object with `__zerocam_tensor__` (another zerocam
    /// extension module's tensor): same buffer, no copy.
    #[staticmethod]
    fn from_zerocam(obj: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        Ok(PyTensor::wrap(capsule::import(obj)?))
    }

    fn __repr__(&self) -> String {
        let mut s = format!(
            "Tensor(shape={:?}, dtype={}, memory={}",
            self.inner.shape(),
            self.inner.dtype(),
            self.inner.memory()
        );
        if let Some(f) = self.inner.format() {
            s.push_str(&format!(", format={f}"));
        }
        s.push(')');
        s
    }
}

impl PyTensor {
    fn derived(&self, py: Python<'_>, inner: TensorDyn) -> PyTensor {
        PyTensor {
            inner,
            default_access: self.default_access,
            owner: self.owner.as_ref().map(|o| o.clone_ref(py)),
            frame: self.frame.clone(),
        }
    }
}

/// The fd number a Python argument gives: an int in `0..=INT_MAX`, else
/// `InvalidArgument` naming it (`TypeError` for a non-int).
fn fd_arg(obj: &Bound<'_, PyAny>) -> PyResult<i32> {
    let Ok(n) = obj.extract::<i64>() else {
        if obj.is_instance_of::<pyo3::types::PyInt>() {
            return Err(invalid(format!(
                "fd {obj} is out of range: not a file descriptor"
            )));
        }
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "fd must be an int, not {}",
            obj.get_type().name()?
        )));
    };
    i32::try_from(n).map_err(|_| {
        invalid(format!(
            "fd {n} is out of range: not a file descriptor (0..={})",
            i32::MAX
        ))
    })
}

/// A close-on-exec duplicate of the caller's fd number `fd`, made with
/// `fcntl(F_DUPFD_CLOEXEC)` on the number itself (the caller keeps theirs;
/// [`zerocam_tensor::dup_fd_number`]). The number is never treated as a live
/// fd before the kernel says it is one: a closed number raises `DeviceError`
/// (an `OSError`) with errno `EBADF`, a negative one `InvalidArgument`.
pub fn dup_fd(fd: i32) -> PyResult<OwnedFd> {
    if fd < 0 {
        return Err(invalid(format!(
            "fd {fd} is negative: not a file descriptor"
        )));
    }
    zerocam_tensor::dup_fd_number(fd).map_err(|e| match e {
        TensorError::DupFailed { errno, .. } => {
            let e = std::io::Error::from_raw_os_error(errno as i32);
            io_error(&e, format!("fd {fd} cannot be duplicated: {e}"))
        }
        e => tensor_err(e),
    })
}

/// Gives up ownership of `fd`, returning its number.
pub fn into_raw(fd: OwnedFd) -> i32 {
    use std::os::fd::IntoRawFd;
    fd.into_raw_fd()
}
