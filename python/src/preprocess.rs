//! `zerocam.Preprocessor`: frames or tensors into a `ModelInput` on the GPU
//! or the CPU (Rust's [`Preprocessor`]), each result a `zerocam.Tensor`
//! handed out of a ring of `ring` destinations.
//!
//! The ring rule: a destination is written again only when nothing holds
//! it — no `Tensor` object, view, open map, numpy array or memoryview
//! (through the copy of the tensor each keeps, past its map's end) or DLPack
//! capsule of it — so up to `ring` results may be held at once;
//! a call with all of them held raises `NoFreeBuffer` naming the depth
//! (nothing is overwritten, nothing more allocated). The results are the
//! destinations themselves: numpy (`np.asarray(t.map())`) and DLPack
//! (`np.from_dlpack(t)`) read them without a copy, through the existing
//! map and export machinery of `zerocam.Tensor`.

use std::sync::{Mutex, PoisonError};

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PySequence};
use zerocam_preprocess::{Backend, FitPlacement, Preprocessor as RPreprocessor, SourceImage};
use zerocam_tensor::Tensor;
use zerocam_tensor::{ColorSpec, Matrix, Range};

use crate::errors::{gpu_err, invalid, preprocess_err};
use crate::format::Region;
use crate::frame::Frame;
use crate::model::{Placement, PyModelInput};
use crate::tensor::PyTensor;

/// Converts frames or tensors into a model input on a device, into a ring
/// of destinations (see the module docs).
#[pyclass(module = "zerocam._zerocam", name = "Preprocessor", frozen)]
pub struct PyPreprocessor {
    inner: Mutex<RPreprocessor>,
    input: Py<PyModelInput>,
    /// Where each source of the last call landed.
    placements: Mutex<Vec<FitPlacement>>,
}

fn device_arg(s: &str) -> PyResult<Backend> {
    match s.to_ascii_lowercase().as_str() {
        "auto" => Ok(Backend::Auto),
        "gpu" => Ok(Backend::Gpu),
        "cpu" => Ok(Backend::Cpu),
        _ => Err(invalid(format!(
            "device {s:?} is not one of \"auto\", \"gpu\", \"cpu\""
        ))),
    }
}

/// `None` (the frame's own spec, else BT.601 limited range) or `(matrix,
/// range)`: `"bt601"`/`"bt709"`, `"limited"`/`"full"`.
fn color_arg(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<ColorSpec>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    let (matrix, range): (String, String) = obj.extract().map_err(|_| {
        invalid(format!(
            "color {obj} is not None or a (matrix, range) tuple such as (\"bt601\", \"limited\")"
        ))
    })?;
    let matrix = match matrix.to_ascii_lowercase().as_str() {
        "bt601" | "bt.601" => Matrix::Bt601,
        "bt709" | "bt.709" => Matrix::Bt709,
        _ => {
            return Err(invalid(format!(
                "color matrix {matrix:?} is not one of \"bt601\", \"bt709\""
            )))
        }
    };
    let range = match range.to_ascii_lowercase().as_str() {
        "limited" => Range::Limited,
        "full" => Range::Full,
        _ => {
            return Err(invalid(format!(
                "color range {range:?} is not one of \"limited\", \"full\""
            )))
        }
    };
    Ok(Some(ColorSpec::new(matrix, range)))
}

/// A source's tensor: a `Frame`'s (for this call only, with the colour spec
/// the frame carries) or a uint8 image `Tensor` (no spec of its own).
fn source(obj: &Bound<'_, PyAny>) -> PyResult<(Tensor<u8>, Option<ColorSpec>)> {
    if let Ok(frame) = obj.cast::<Frame>() {
        let frame = frame.get();
        return Ok((frame.tensor_handle()?, Some(frame.color_spec())));
    }
    if let Ok(t) = obj.cast::<PyTensor>() {
        let inner = &t.get().inner;
        return inner.as_u8().cloned().map(|t| (t, None)).ok_or_else(|| {
            invalid(format!(
                "a source tensor holds uint8 samples (an image); this one is {}",
                inner.dtype().name()
            ))
        });
    }
    Err(pyo3::exceptions::PyTypeError::new_err(format!(
        "a source is a zerocam.Frame or zerocam.Tensor (or a list of them for a batch), not {}",
        obj.get_type().name()?
    )))
}

/// Whether `obj` is a list or tuple (a batch, or one crop a source).
fn is_sequence(obj: &Bound<'_, PyAny>) -> bool {
    obj.is_instance_of::<PyList>() || obj.is_instance_of::<pyo3::types::PyTuple>()
}

/// The sources of a call: one frame or tensor, or a list or tuple of them.
fn sources(obj: &Bound<'_, PyAny>) -> PyResult<Vec<(Tensor<u8>, Option<ColorSpec>)>> {
    if is_sequence(obj) {
        let seq = obj.cast::<PySequence>()?;
        return (0..seq.len()?).map(|i| source(&seq.get_item(i)?)).collect();
    }
    Ok(vec![source(obj)?])
}

/// The crop of each of `n` sources: `None` (all of each), one region for
/// every source, or a list of `n` regions or `None`s (one a camera).
fn crops(
    obj: Option<&Bound<'_, PyAny>>,
    n: usize,
) -> PyResult<Vec<Option<zerocam_tensor::Region>>> {
    let Some(obj) = obj.filter(|c| !c.is_none()) else {
        return Ok(vec![None; n]);
    };
    // A list of crops is a list of regions or Nones, not a 4-tuple of ints.
    if obj.is_instance_of::<PyList>() {
        let seq = obj.cast::<PySequence>()?;
        if seq.len()? != n {
            return Err(invalid(format!(
                "crop: a list of {} crops for {n} source(s); give one a source, or one region for all",
                seq.len()?
            )));
        }
        return (0..n)
            .map(|i| {
                let c = seq.get_item(i)?;
                if c.is_none() {
                    Ok(None)
                } else {
                    Region::parse(&c).map(Some)
                }
            })
            .collect();
    }
    Ok(vec![Some(Region::parse(obj)?); n])
}

#[pymethods]
impl PyPreprocessor {
    /// A preprocessor of `model_input` on `device` (`"auto"`: the GPU where it
    /// is real hardware, else the CPU; `"gpu"`; `"cpu"`, which never loads
    /// EGL), handing results out of a ring of `ring` destinations: up to
    /// `ring` results may be held at once. On the CPU each image's rows are
    /// split over `threads` threads (a pool made here; `None`: the cores
    /// this process may use, at most 8); the output is the same bits on any
    /// number.
    #[new]
    #[pyo3(signature = (model_input, device="auto", ring=3, threads=None))]
    fn new(
        py: Python<'_>,
        model_input: Bound<'_, PyModelInput>,
        device: &str,
        ring: i64,
        threads: Option<i64>,
    ) -> PyResult<PyPreprocessor> {
        let device = device_arg(device)?;
        let depth = usize::try_from(ring)
            .map_err(|_| invalid(format!("ring {ring} is negative: give at least 1")))?;
        let threads = match threads {
            None => zerocam_preprocess::default_threads(),
            Some(n) if n >= 1 => usize::try_from(n).unwrap_or(usize::MAX),
            Some(n) => {
                return Err(invalid(format!(
                    "threads {n}: give at least 1 (or None for the cores this process may use)"
                )))
            }
        };
        let input = model_input.get().inner.clone();
        // Opening the GPU starts its thread and context: without the GIL.
        let pre = py
            .detach(|| {
                RPreprocessor::new(input, device)?
                    .with_ring_depth(depth)
                    .map(|p| p.with_threads(threads))
            })
            .map_err(preprocess_err)?;
        #[cfg(feature = "cuda")]
        if let Some(gpu) = pre.gpu() {
            crate::cuda::remember_gpu(gpu); // its PBO results map through it
        }
        Ok(PyPreprocessor {
            inner: Mutex::new(pre),
            input: model_input.unbind(),
            placements: Mutex::new(Vec::new()),
        })
    }

    /// Converts `source` — a `Frame`, a uint8 image `Tensor`, or a list of
    /// `batch` of them (one a camera) — cropped to `crop` (a `Region` or
    /// `(x, y, width, height)` in the source's pixels, for every source; a
    /// list of them or `None`s, one a source; `None`: all of each), reading
    /// YUV as `color`: `("bt601"|"bt709", "limited"|"full")` for every
    /// source, or `None` for each frame's own spec (`Frame.color_spec`;
    /// BT.601 limited range for a tensor).
    ///
    /// Without `out`, returns the model input, a `Tensor` of the ring: keep
    /// it only as long as needed (`NoFreeBuffer` once `ring` results are
    /// held). With `out` — a `Tensor` of the input's shape and dtype, such
    /// as `Tensor.from_array(a)` over the array a model runtime reads —
    /// writes into it instead, in place, and returns it; the ring is not
    /// used. A frame is read during the call only.
    #[pyo3(signature = (source, crop=None, color=None, out=None))]
    fn __call__(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        source: &Bound<'_, PyAny>,
        crop: Option<&Bound<'_, PyAny>>,
        color: Option<&Bound<'_, PyAny>>,
        out: Option<Bound<'_, PyTensor>>,
    ) -> PyResult<Py<PyTensor>> {
        let srcs = sources(source)?;
        let crops = crops(crop, srcs.len())?;
        // An explicit colour is every source's; else each frame's own.
        let color = color_arg(color)?;
        let this = slf.get();
        let dst = out.as_ref().map(|o| o.get().inner.clone());
        let made = py
            .detach(|| {
                let images: Vec<SourceImage<'_>> = srcs
                    .iter()
                    .zip(&crops)
                    .map(|((t, own), crop)| {
                        SourceImage::new(t)
                            .with_crop(*crop)
                            .with_color(color.or(*own).unwrap_or_default())
                    })
                    .collect();
                let mut pre = this.inner.lock().unwrap_or_else(PoisonError::into_inner);
                let mut placements = this
                    .placements
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                placements.clear();
                let placed = |_, p| placements.push(p);
                match &dst {
                    Some(dst) => pre.run_batch_into(&images, dst, placed).map(|_| None),
                    None => pre.run_batch(&images, placed).map(|p| Some(p.tensor)),
                }
            })
            .map_err(preprocess_err)?;
        match (made, out) {
            // The result keeps its preprocessor: on the GPU its memory is a
            // PBO of the preprocessor's GL context, which ends with the last
            // handle.
            (Some(tensor), _) => Py::new(
                py,
                PyTensor::wrap_owned(tensor, slf.clone().into_any().unbind()),
            ),
            (None, Some(out)) => Ok(out.unbind()),
            (None, None) => Err(invalid("no model input was made")),
        }
    }

    /// The threads the CPU path splits an image's rows over.
    #[getter]
    fn threads(&self) -> usize {
        self.lock().threads()
    }

    /// The `ModelInput` it makes.
    #[getter]
    fn model_input(&self, py: Python<'_>) -> Py<PyModelInput> {
        self.input.clone_ref(py)
    }

    /// `"gpu"` or `"cpu"`: the device it converts on.
    #[getter]
    fn device(&self) -> &'static str {
        self.lock().backend().name()
    }

    /// Why that device (`"requested"`, `"software rasterizer: llvmpipe
    /// (...)"`, `"no EGL: ..."`, `"GPU renderer: ..."`).
    #[getter]
    fn device_reason(&self) -> String {
        self.lock().reason().to_string()
    }

    /// The ring's depth: how many results may be held at once.
    #[getter]
    fn ring(&self) -> usize {
        self.lock().ring_depth()
    }

    /// Results held now (by `Tensor` objects, maps, numpy arrays, DLPack
    /// capsules).
    #[getter]
    fn held(&self) -> usize {
        self.lock().held()
    }

    /// Where the last call's (first) source landed — scale, offset,
    /// `to_frame`, `to_frame_box` — or `None` before the first call.
    #[getter]
    fn placement(&self) -> Option<Placement> {
        self.placements_lock().first().copied().map(Placement::new)
    }

    /// The same as `placement`: the letterbox's scale and offsets.
    #[getter]
    fn letterbox(&self) -> Option<Placement> {
        self.placement()
    }

    /// Where each source of the last call landed, in batch order.
    #[getter]
    fn placements<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let all: Vec<Placement> = self
            .placements_lock()
            .iter()
            .copied()
            .map(Placement::new)
            .collect();
        PyList::new(py, all)
    }

    /// Counters: images converted on the GPU and the CPU, those `"auto"` sent
    /// to the CPU because the GPU could not take them, destinations allocated
    /// (at most `ring`); on the GPU also `gpu_imports` (dma-buf frames
    /// imported as EGLImages: one per camera buffer), `gpu_import_hits`,
    /// `gpu_uploads` (frames copied up instead) and `gpu_readbacks`.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (s, gpu) = {
            let pre = self.lock();
            (pre.stats(), pre.gpu().cloned())
        };
        let d = PyDict::new(py);
        d.set_item("gpu_images", s.gpu_images)?;
        d.set_item("cpu_images", s.cpu_images)?;
        d.set_item("cpu_fallbacks", s.cpu_fallbacks)?;
        d.set_item("tensors_allocated", s.tensors_allocated)?;
        if let Some(gpu) = gpu {
            let g = py.detach(|| gpu.stats()).map_err(gpu_err)?;
            d.set_item("gpu_imports", g.images.imports)?;
            d.set_item("gpu_import_hits", g.images.hits)?;
            d.set_item("gpu_uploads", g.uploads)?;
            d.set_item("gpu_readbacks", g.readbacks)?;
        }
        Ok(d)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let pre = self.lock();
        format!(
            "Preprocessor({}, device='{}' ({}), ring={})",
            self.input.bind(py).get().repr(),
            pre.backend().name(),
            pre.reason(),
            pre.ring_depth()
        )
    }
}

impl PyPreprocessor {
    fn lock(&self) -> std::sync::MutexGuard<'_, RPreprocessor> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn placements_lock(&self) -> std::sync::MutexGuard<'_, Vec<FitPlacement>> {
        self.placements
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}
