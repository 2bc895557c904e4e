//! `zerocam.Frame`: a captured frame of a `Camera`.
//!
//! A frame keeps its buffer out of the driver's queue until `release()` (or
//! the end of its `with` block, or its garbage collection). Its `planes` are
//! numpy arrays over the mapped buffer (read-only maps): each array keeps its
//! map alive, so a buffer whose plane arrays outlive `release()` stays out of
//! the queue until the last of them dies (the capture layer does not queue a
//! mapped buffer) — the arrays never see the driver overwrite them, and never
//! dangle. Arrays made from maps of `frame.tensor` (while the frame is held)
//! keep the frame itself instead: their maps end with their `with` blocks,
//! and the buffer goes back to the driver when the frame is released and the
//! last of them is gone. So do arrays of a tensor importing the buffer's fd
//! (`Tensor.from_zerocam(frame.tensor)`, `Tensor.from_fd(frame.tensor.clone_fd(), …)`):
//! the frame is recorded when its tensor hands the fd out (`frame_files.rs`).
//! After `release()`, `frame.planes` and `frame.tensor` raise `Released`.

use std::cell::RefCell;
use std::sync::{Arc, Mutex, PoisonError};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PySlice, PyTuple};
use zerocam_capture::Frame as RFrame;
use zerocam_encode::jpeg::{check_quality, JpegEncoder, JpegError};
use zerocam_tensor::{Access, ColorSpec, PixelFormat, TensorDyn};

use crate::errors::{invalid, released, tensor_err};
use crate::lease::{BracketEnd, Keep, MapLease};
use crate::tensor::PyTensor;

struct Held {
    /// Shared with the exports of `frame.tensor` maps (see the module docs).
    frame: Arc<RFrame>,
    planes: Option<Py<PyList>>,
}

/// A captured frame; gives its buffer back on `release()` or at the end of
/// its `with` block.
#[pyclass(module = "zerocam._zerocam", frozen)]
pub struct Frame {
    held: Mutex<Option<Held>>,
    sequence: u32,
    timestamp: f64,
    format: &'static str,
    width: usize,
    height: usize,
    index: usize,
    color: ColorSpec,
}

impl Frame {
    /// Wraps a frame a camera handed out.
    pub(crate) fn new(frame: RFrame) -> Frame {
        let t = frame.tensor();
        let format = t.format().map_or("?", PixelFormat::name);
        Frame {
            sequence: frame.sequence(),
            timestamp: frame.timestamp().as_secs_f64(),
            width: t.width().unwrap_or(0),
            height: t.height().unwrap_or(0),
            index: frame.buffer_index(),
            format,
            color: frame.color_spec(),
            held: Mutex::new(Some(Held {
                frame: Arc::new(frame),
                planes: None,
            })),
        }
    }

    /// How the frame's YCbCr is to be read (the Rust frame's
    /// `color_spec()`, kept after `release()`): for the Rust side of the
    /// bindings (a preprocessor called on a `Frame`).
    pub(crate) fn color_spec(&self) -> ColorSpec {
        self.color
    }
}

impl Frame {
    /// A handle on the frame's tensor (the buffer itself), for a call that
    /// reads it: `Released` after `release()`. Maps of it fail once the
    /// driver owns the buffer again.
    pub(crate) fn tensor_handle(&self) -> PyResult<zerocam_tensor::Tensor<u8>> {
        let held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let h = held.as_ref().ok_or_else(|| released("the frame"))?;
        Ok(h.frame.tensor().clone())
    }

    /// Takes the Rust frame out, for a call that consumes its lease
    /// (`Recorder.write`): the Python frame is released by it. Refused with
    /// `MapConflict`, the frame left as it was, while maps of `frame.tensor`
    /// (or arrays from them) share it; `frame.planes` arrays do not hold the
    /// frame and stay valid.
    pub(crate) fn take(&self) -> PyResult<RFrame> {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let h = held.take().ok_or_else(|| released("the frame"))?;
        match Arc::try_unwrap(h.frame) {
            Ok(frame) => Ok(frame),
            Err(frame) => {
                *held = Some(Held {
                    frame,
                    planes: h.planes,
                });
                Err(crate::errors::MapConflict::new_err(
                    "the frame is held by maps of frame.tensor (or arrays made from them): \
                     release them before handing the frame over",
                ))
            }
        }
    }
}

thread_local! {
    /// Each thread's JPEG encoder: its scratch planes and output buffer
    /// serve the next `frame.jpeg()` on the thread without allocating.
    static JPEG: RefCell<Option<JpegEncoder>> = const { RefCell::new(None) };
}

/// The JPEG of `frame` at `quality` through this thread's encoder.
fn jpeg_of(frame: &RFrame, quality: u8) -> Result<Vec<u8>, JpegError> {
    JPEG.with(|cell| {
        let mut slot = cell.borrow_mut();
        let enc = match slot.as_mut() {
            Some(enc) => {
                enc.set_quality(quality)?;
                enc
            }
            None => slot.insert(JpegEncoder::new(quality)?),
        };
        Ok(enc.encode(frame)?.to_vec())
    })
}

/// A JPEG failure as the matching Python exception: a bad quality or
/// format is an `InvalidArgument`, the frame's memory a tensor error.
fn jpeg_err(e: JpegError) -> PyErr {
    match e {
        JpegError::Tensor(e) => tensor_err(e),
        JpegError::Turbo(_) => crate::errors::Error::new_err(e.to_string()),
        other => invalid(other.to_string()),
    }
}

/// The numpy arrays of a frame: the packed image as `[H, W, C]`, or each
/// plane of a planar format as `[rows, samples]`. A frame in one buffer with
/// uniform strides (NV12, NV16) is mapped once and split into its planes (one
/// dma-buf sync bracket instead of one per plane); planes in two buffers
/// (NV12M) are mapped one by one.
fn plane_arrays<'py>(py: Python<'py>, frame: &RFrame) -> PyResult<Bound<'py, PyList>> {
    let t = frame.tensor();
    let list = PyList::empty(py);
    if t.plane_count() == 1 || t.strides().is_some() {
        let lease = MapLease::new(
            &TensorDyn::U8(t.clone()),
            Access::Read,
            BracketEnd::WithLastExport,
            Keep::default(),
        )?;
        let whole = lease.to_numpy(py)?;
        if t.plane_count() == 1 {
            list.append(whole)?;
            return Ok(list);
        }
        // One array over all the planes' rows (`[rows, samples]`): split it
        // at each plane's row count.
        let (Some(format), Some(height)) = (t.format(), t.height()) else {
            return Err(invalid("a multi-plane frame without an image layout"));
        };
        let mut start = 0isize;
        for i in 0..t.plane_count() {
            let end = start + format.plane_rows(i, height) as isize;
            list.append(whole.get_item(PySlice::new(py, start, end, 1))?)?;
            start = end;
        }
        return Ok(list);
    }
    for i in 0..t.plane_count() {
        let p = t.plane(i).map_err(tensor_err)?;
        let lease: Arc<MapLease> = MapLease::new(
            &TensorDyn::U8(p),
            Access::Read,
            BracketEnd::WithLastExport,
            Keep::default(),
        )?;
        list.append(lease.to_numpy(py)?)?;
    }
    Ok(list)
}

#[pymethods]
impl Frame {
    /// The driver's sequence number.
    #[getter]
    fn sequence(&self) -> u32 {
        self.sequence
    }

    /// Capture time in seconds on `CLOCK_MONOTONIC`.
    #[getter]
    fn timestamp(&self) -> f64 {
        self.timestamp
    }

    /// The pixel layout name (`"NV12"` also for NV12M frames).
    #[getter]
    fn format(&self) -> &'static str {
        self.format
    }

    /// Width in pixels.
    #[getter]
    fn width(&self) -> usize {
        self.width
    }

    /// Height in pixels.
    #[getter]
    fn height(&self) -> usize {
        self.height
    }

    /// The buffer index.
    #[getter]
    fn buffer_index(&self) -> usize {
        self.index
    }

    /// How the frame's YCbCr is to be read, as `(matrix, range)`: matrix
    /// `"bt601"` or `"bt709"`, range `"limited"` or `"full"`. It comes from
    /// the camera (V4L2: the driver's colorspace fields; the pattern source:
    /// `("bt601", "limited")`, what it draws with) and stays readable after
    /// `release()`.
    #[getter(color_spec)]
    fn color_spec_names(&self) -> (&'static str, &'static str) {
        let c = self.color_spec();
        (c.matrix.name(), c.range.name())
    }

    /// Read-only numpy arrays over the frame's memory, without a copy
    /// (`[H, W, C]` for packed formats, one `[rows, samples]` per plane for
    /// NV12/NV16). Arrays outliving `release()` keep the buffer out of the
    /// driver's queue until they die.
    #[getter]
    fn planes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let h = held.as_mut().ok_or_else(|| released("the frame"))?;
        if let Some(p) = &h.planes {
            return Ok(p.bind(py).clone());
        }
        let list = plane_arrays(py, &h.frame)?;
        h.planes = Some(list.clone().unbind());
        Ok(list)
    }

    /// The frame as a `Tensor` (the buffer itself). Maps of it fail while
    /// the driver owns the buffer (after `release()`); arrays made from its
    /// maps while the frame is held keep the buffer out of the driver's
    /// queue until the last of them is gone.
    #[getter]
    fn tensor(&self) -> PyResult<PyTensor> {
        let held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let h = held.as_ref().ok_or_else(|| released("the frame"))?;
        let frame: Arc<dyn std::any::Any + Send + Sync> = h.frame.clone();
        Ok(PyTensor::of_frame(
            TensorDyn::U8(h.frame.tensor().clone()),
            Arc::downgrade(&frame),
        ))
    }

    /// The frame's buffer as CUDA device memory, for the device to read
    /// (a `CudaArray`; each capture buffer is registered once, whatever the
    /// number of frames). While the array lives the buffer stays out of the
    /// driver's queue: `release()` succeeds and the buffer goes back once the
    /// array is released, as with plane arrays. Raises `Released` after
    /// `release()`, `CudaUnavailable` without a driver.
    #[cfg(feature = "cuda")]
    fn cuda(slf: &Bound<'_, Self>) -> PyResult<crate::cuda::CudaArray> {
        let tensor = slf.get().tensor_handle()?;
        crate::cuda::map_frame(slf.py(), tensor, slf.clone().into_any().unbind())
    }

    /// The frame as JPEG bytes at `quality` (1..=100), compressed by
    /// libjpeg-turbo straight from its YCbCr planes (no RGB pass; NV12 is
    /// 4:2:0, YUYV/UYVY/NV16 4:2:2) with the GIL released. The samples are
    /// read with the frame's `color_spec` and written as JFIF's BT.601 full
    /// range, what every decoder assumes. Raises `InvalidArgument` for a
    /// quality outside 1..=100 or a format it does not take, `Released`
    /// after `release()`.
    #[pyo3(signature = (quality = 85))]
    fn jpeg<'py>(&self, py: Python<'py>, quality: i64) -> PyResult<Bound<'py, PyBytes>> {
        let quality = check_quality(quality).map_err(jpeg_err)?;
        let frame = {
            let held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
            let h = held.as_ref().ok_or_else(|| released("the frame"))?;
            h.frame.clone()
        };
        let bytes = py
            .detach(move || jpeg_of(&frame, quality))
            .map_err(jpeg_err)?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Whether the frame was released.
    #[getter]
    fn released(&self) -> bool {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_none()
    }

    /// Gives the buffer back to the camera. Idempotent.
    fn release(&self, py: Python<'_>) {
        let h = self
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(h) = h {
            // Our reference to the plane list goes; arrays the caller holds stay.
            drop(h.planes);
            py.detach(move || drop(h.frame));
        }
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> bool {
        self.release(py);
        false
    }

    fn __repr__(&self) -> String {
        format!(
            "Frame(sequence={}, format={}, size={}x{}, buffer={}{})",
            self.sequence,
            self.format,
            self.width,
            self.height,
            self.index,
            if self.released() { ", released" } else { "" }
        )
    }
}
