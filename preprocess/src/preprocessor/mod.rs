//! [`Preprocessor`]: frames into model inputs on a chosen device, handed out
//! of a small ring of destinations.
//!
//! One object for a stream of frames: it picks the device once
//! ([`Backend::Auto`]: the GPU where it is real hardware, the CPU on a
//! software rasterizer or without EGL), keeps the CPU path's scratch rows and
//! the GPU's caches warm, and writes each result into one of `depth`
//! destinations it owns (PBO tensors on the GPU, heap memory on the CPU),
//! allocated as first needed. A destination is written again only once
//! nothing outside the ring holds it — no tensor, view, map or pin of it
//! (see [`Tensor::handle_count`](zerocam_tensor::Tensor::handle_count)) — so
//! up to `depth` results may be held at once; with all of them held, the
//! next call is [`PreprocessError::RingFull`] (never a silent allocation,
//! never an overwrite). In steady state a CPU conversion allocates nothing.

mod device;
mod error;
mod ring;
mod source;

pub use device::{is_software_renderer, Backend, BackendReason, ChosenBackend};
pub use error::PreprocessError;
pub use source::SourceImage;

use zerocam_tensor::{Region, Tensor, TensorDyn, TensorMemory};

use super::{CpuPreprocessor, FitPlacement, ModelInput};
use ring::Ring;
#[cfg(feature = "gpu")]
use zerocam_gpu::{ConvertOptions, Gpu, GpuError, ImportPolicy};
use zerocam_tensor::ColorSpec;

/// The ring depth [`Preprocessor::new`] gives.
pub const DEFAULT_RING_DEPTH: usize = 3;

/// One result of a [`Preprocessor`]: the model input tensor (a destination of
/// the ring, held until this value and every clone, view or map of the
/// tensor is gone), where the source landed in it, and the device that made it.
///
/// On the GPU the tensor is a PBO of the preprocessor's GL context: it maps
/// while the preprocessor (or another handle of its [`Gpu`](zerocam_gpu::Gpu))
/// lives, and new maps fail with
/// [`Error::PboDisconnected`](zerocam_tensor::Error::PboDisconnected) after.
#[derive(Debug, Clone)]
pub struct Preprocessed {
    /// The model input, of the input's shape and element type.
    pub tensor: TensorDyn,
    /// Where the source landed (the first image's, for a batch): scale,
    /// offsets and the way back to frame pixels.
    pub placement: FitPlacement,
    /// The device that converted it (the CPU for a frame `Auto` sent there).
    pub backend: ChosenBackend,
}

impl Preprocessed {
    /// A point in model pixels, in frame pixels ([`FitPlacement::to_frame`]).
    pub fn to_frame(&self, x: f64, y: f64) -> (f64, f64) {
        self.placement.to_frame(x, y)
    }

    /// A box `[x0, y0, x1, y1]` in model pixels, in frame pixels
    /// ([`FitPlacement::to_frame_box`]).
    pub fn to_frame_box(&self, b: [f64; 4]) -> [f64; 4] {
        self.placement.to_frame_box(b)
    }
}

/// Counters of a [`Preprocessor`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PreprocessStats {
    /// Images converted on the GPU.
    pub gpu_images: u64,
    /// Images converted on the CPU (fallbacks included).
    pub cpu_images: u64,
    /// Images `Auto` sent to the CPU because the GPU could not take them.
    pub cpu_fallbacks: u64,
    /// Destination tensors allocated (at most the ring's depth).
    pub tensors_allocated: u64,
}

/// Converts frames into a [`ModelInput`] on the GPU or the CPU, into a ring
/// of destinations (see the module docs).
///
/// ```
/// use zerocam_preprocess::{Backend, ChosenBackend, Fit, ModelInput, Preprocessor};
/// use zerocam_tensor::ColorSpec;
/// use zerocam_tensor::{PixelFormat, Tensor, TensorMemory};
/// let input = ModelInput::new(64, 64)?
///     .mean_std([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])?
///     .fit(Fit::Letterbox { pad: [114; 3] });
/// let mut pre = Preprocessor::new(input, Backend::Cpu)?;
/// let frame = Tensor::<u8>::image(128, 72, PixelFormat::Nv12, Some(TensorMemory::Mem))?;
/// let out = pre.run(&frame, None, ColorSpec::default())?;
/// assert_eq!(out.tensor.shape(), &[1, 3, 64, 64]);
/// assert_eq!(out.placement.offset(), (0, 14)); // bars above and below
/// assert_eq!(out.to_frame_box([0.0, 14.0, 64.0, 50.0]), [0.0, 0.0, 128.0, 72.0]);
/// assert_eq!(pre.backend(), ChosenBackend::Cpu);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Preprocessor {
    input: ModelInput,
    backend: ChosenBackend,
    reason: BackendReason,
    #[cfg(feature = "gpu")]
    gpu: Option<Gpu>,
    /// `Auto` chose the GPU: images it cannot take go to the CPU.
    #[cfg(feature = "gpu")]
    fallback: bool,
    cpu: CpuPreprocessor,
    ring: Ring,
    stats: PreprocessStats,
}

impl std::fmt::Debug for Preprocessor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Preprocessor")
            .field("input", &self.input)
            .field("backend", &self.backend)
            .field("reason", &self.reason)
            .field("ring_depth", &self.ring.depth())
            .field("stats", &self.stats)
            .finish()
    }
}

/// The GPU `device` gives, if any, what it stands for and why.
#[cfg(feature = "gpu")]
fn open(device: Backend) -> Result<(Option<Gpu>, ChosenBackend, BackendReason), PreprocessError> {
    let opened = match device {
        Backend::Cpu => return Ok((None, ChosenBackend::Cpu, BackendReason::Requested)),
        Backend::Gpu => {
            let gpu = Gpu::new().map_err(|source| PreprocessError::NoGpu { source })?;
            return Ok((Some(gpu), ChosenBackend::Gpu, BackendReason::Requested));
        }
        Backend::Auto => Gpu::new(),
    };
    Ok(match opened {
        Err(GpuError::EglUnavailable { reason }) => {
            (None, ChosenBackend::Cpu, BackendReason::NoEgl { reason })
        }
        Err(e) => (
            None,
            ChosenBackend::Cpu,
            BackendReason::NoContext {
                reason: e.to_string(),
            },
        ),
        Ok(gpu) => {
            let renderer = gpu.info().renderer.clone();
            if is_software_renderer(&renderer) {
                // The GL thread ends with its handle, here.
                (
                    None,
                    ChosenBackend::Cpu,
                    BackendReason::SoftwareRenderer { renderer },
                )
            } else {
                let reason = BackendReason::HardwareRenderer { renderer };
                (Some(gpu), ChosenBackend::Gpu, reason)
            }
        }
    })
}

/// Whether `Auto` sends an image the GPU refused with `e` to the CPU: the
/// GPU cannot take that source (its format, size or memory) or write that
/// model input; not a failing GPU or a bad argument.
#[cfg(feature = "gpu")]
fn gpu_cannot_take(e: &GpuError) -> bool {
    match e {
        GpuError::UnsupportedFormat { role, .. }
        | GpuError::UnsupportedMemory { role, .. }
        | GpuError::NotAnImage { role, .. }
        | GpuError::ForeignPbo { role, .. } => role.contains("source"),
        // A destination too big for GL_MAX_TEXTURE_SIZE is the ring's own
        // model tensor: the CPU writes any size.
        GpuError::BadSize { what, .. } => *what == "source" || *what == "destination",
        GpuError::ModelDestination { .. } => true,
        _ => false,
    }
}

impl Preprocessor {
    /// A preprocessor of `input` on `device`, with a ring of
    /// [`DEFAULT_RING_DEPTH`] destinations (none allocated yet).
    ///
    /// `Backend::Auto` opens the GPU to read its renderer and keeps it only
    /// when it is not a software rasterizer; `Backend::Cpu` never loads EGL.
    ///
    /// # Errors
    /// [`PreprocessError::NoGpu`] for `Backend::Gpu` where the GPU cannot be
    /// opened ([`GpuError::EglUnavailable`](zerocam_gpu::GpuError::EglUnavailable)
    /// without EGL), [`PreprocessError::NoGpuFeature`] for it in a build
    /// without the `gpu` feature.
    pub fn new(input: ModelInput, device: Backend) -> Result<Preprocessor, PreprocessError> {
        #[cfg(feature = "gpu")]
        let (gpu, chosen, reason) = open(device)?;
        #[cfg(not(feature = "gpu"))]
        let (chosen, reason) = match device {
            Backend::Gpu => return Err(PreprocessError::NoGpuFeature),
            Backend::Cpu => (ChosenBackend::Cpu, BackendReason::Requested),
            Backend::Auto => (ChosenBackend::Cpu, BackendReason::NoGpuFeature),
        };
        Ok(Preprocessor {
            input,
            backend: chosen,
            #[cfg(feature = "gpu")]
            fallback: device == Backend::Auto && chosen == ChosenBackend::Gpu,
            reason,
            #[cfg(feature = "gpu")]
            gpu,
            cpu: CpuPreprocessor::new(),
            ring: Ring::new(DEFAULT_RING_DEPTH)?,
            stats: PreprocessStats::default(),
        })
    }

    /// The same with a ring of `depth` destinations: up to `depth` results
    /// may be held at once.
    ///
    /// # Errors
    /// [`PreprocessError::ZeroRingDepth`] for 0.
    pub fn with_ring_depth(mut self, depth: usize) -> Result<Preprocessor, PreprocessError> {
        self.ring = Ring::new(depth)?;
        Ok(self)
    }

    /// `Auto` on the GPU whatever its renderer: frames the GPU cannot take
    /// still go to the CPU. For the tests of that fallback on the host's
    /// llvmpipe (the `fault-injection` feature, test builds only).
    #[cfg(feature = "fault-injection")]
    #[doc(hidden)]
    pub fn __auto_on_any_gpu(input: ModelInput) -> Result<Preprocessor, PreprocessError> {
        let mut pre = Preprocessor::new(input, Backend::Gpu)?;
        pre.fallback = true;
        Ok(pre)
    }

    /// The same with the CPU path's output rows split over `threads`
    /// threads (1 to [`MAX_THREADS`](crate::MAX_THREADS), clamped;
    /// default [`default_threads`](crate::default_threads)). The
    /// output is the same, bit for bit, on any number.
    pub fn with_threads(mut self, threads: usize) -> Preprocessor {
        self.set_threads(threads);
        self
    }

    /// Splits the CPU path's output rows over `threads` threads from the
    /// next conversion on (as [`with_threads`](Preprocessor::with_threads);
    /// the old pool ends here, a new one starts).
    pub fn set_threads(&mut self, threads: usize) {
        if threads.clamp(1, crate::MAX_THREADS) != self.cpu.threads() {
            self.cpu = CpuPreprocessor::with_threads(threads);
        }
    }

    /// The threads the CPU path splits a conversion over.
    pub fn threads(&self) -> usize {
        self.cpu.threads()
    }

    /// The model input it makes.
    pub fn input(&self) -> &ModelInput {
        &self.input
    }

    /// The backend it converts on.
    pub fn backend(&self) -> ChosenBackend {
        self.backend
    }

    /// Why that device.
    pub fn reason(&self) -> &BackendReason {
        &self.reason
    }

    /// The GPU it converts on (`None` on the CPU): its
    /// [`info`](Gpu::info) and [`stats`](Gpu::stats) (imports, cache
    /// hits, uploads, readbacks).
    #[cfg(feature = "gpu")]
    pub fn gpu(&self) -> Option<&Gpu> {
        self.gpu.as_ref()
    }

    /// The ring's depth: how many results may be held at once.
    pub fn ring_depth(&self) -> usize {
        self.ring.depth()
    }

    /// Results held outside the ring now.
    pub fn held(&self) -> usize {
        self.ring.held()
    }

    /// The counters.
    pub fn stats(&self) -> PreprocessStats {
        PreprocessStats {
            tensors_allocated: self.ring.allocated(),
            ..self.stats
        }
    }

    /// Converts `crop` of `src` (all of it for `None`; in `src`'s pixels),
    /// reading YUV as `color`, into the next free destination of the ring.
    /// For a model input of batch 1; see [`run_batch`](Preprocessor::run_batch).
    ///
    /// `src` is any source [`CpuPreprocessor::convert`] and
    /// [`gpu::convert_model`](crate::gpu::convert_model) take: an image
    /// tensor, a view of one, a camera frame's tensor.
    ///
    /// # Errors
    /// [`PreprocessError::RingFull`] when every destination is held;
    /// [`PreprocessError::BatchSize`] for a batched input; the device's
    /// errors for the source ([`PreprocessError::Cpu`],
    /// [`PreprocessError::Gpu`]; under `Auto` on the GPU, a source neither
    /// takes is [`PreprocessError::NoDeviceTakes`]);
    /// [`PreprocessError::Tensor`] when a destination cannot be allocated.
    pub fn run(
        &mut self,
        src: &Tensor<u8>,
        crop: Option<Region>,
        color: ColorSpec,
    ) -> Result<Preprocessed, PreprocessError> {
        let source = SourceImage::new(src).with_crop(crop).with_color(color);
        self.run_batch(&[source], |_, _| {})
    }

    /// Converts `sources` (as many as the input's batch: one a camera, each
    /// with its own crop and colour spec) into the batch elements of the
    /// next free destination; `placed(n, placement)` is told where source
    /// `n` landed. The result's `placement` is the first source's. On the
    /// CPU each image's rows are split over the preprocessor's
    /// [`threads`](Preprocessor::threads).
    ///
    /// ```
    /// use zerocam_preprocess::{Backend, ModelInput, Preprocessor, SourceImage};
    /// use zerocam_tensor::{ColorSpec, Matrix, PixelFormat, Range, Region, Tensor, TensorMemory};
    /// let input = ModelInput::new(64, 64)?.batch(2)?;
    /// let mut pre = Preprocessor::new(input, Backend::Cpu)?;
    /// let mem = Some(TensorMemory::Mem);
    /// let front = Tensor::<u8>::image(128, 72, PixelFormat::Nv12, mem)?;
    /// let rear = Tensor::<u8>::image(64, 64, PixelFormat::Yuyv, mem)?;
    /// let sources = [
    ///     SourceImage::new(&front).with_crop(Some(Region::new(32, 0, 64, 72))),
    ///     SourceImage::new(&rear).with_color(ColorSpec::new(Matrix::Bt709, Range::Full)),
    /// ];
    /// let out = pre.run_batch(&sources, |n, p| println!("camera {n} at {:?}", p.target))?;
    /// assert_eq!(out.tensor.shape(), &[2, 3, 64, 64]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`run`](Preprocessor::run); [`PreprocessError::BatchSize`] for
    /// another number of sources than the batch. An error in element `n`
    /// leaves the destination with the elements before it written.
    pub fn run_batch(
        &mut self,
        sources: &[SourceImage<'_>],
        placed: impl FnMut(usize, FitPlacement),
    ) -> Result<Preprocessed, PreprocessError> {
        let batch = self.input.batch_size();
        if sources.len() != batch {
            return Err(PreprocessError::BatchSize {
                batch,
                sources: sources.len(),
            });
        }
        let index = {
            let (input, device) = (&self.input, self.backend);
            #[cfg(feature = "gpu")]
            let gpu = self.gpu.as_ref();
            self.ring.acquire(|| {
                #[cfg(feature = "gpu")]
                if let (ChosenBackend::Gpu, Some(gpu)) = (device, gpu) {
                    return pbo_destination(gpu, input);
                }
                let _ = device;
                let shape = input.shape();
                let dtype = input.element_type();
                Ok(TensorDyn::new(
                    &shape,
                    dtype,
                    Some(TensorMemory::Mem),
                    None,
                )?)
            })?
        };
        let dst = self
            .ring
            .get(index)
            .ok_or(PreprocessError::RingFull {
                depth: self.ring.depth(),
            })?
            .clone();
        let (placement, backend) = self.fill(sources, &dst, placed)?;
        Ok(Preprocessed {
            tensor: dst,
            placement,
            backend,
        })
    }

    /// Converts `crop` of `src`, reading YUV as `color`, into the caller's
    /// `dst` instead of the ring: a tensor of the input's shape and element
    /// type, packed, in any memory — a model runtime's own input buffer
    /// wrapped with [`Tensor::from_external`](zerocam_tensor::Tensor), a
    /// numpy array's memory, a PBO — so the model reads it without a copy.
    /// The ring is not touched (nothing allocated, nothing held). Returns
    /// where the source landed and the device that wrote it.
    ///
    /// # Errors
    /// [`PreprocessError::Model`] for a `dst` that is not the input's
    /// (element type, shape, packing: the values named); as
    /// [`run`](Preprocessor::run) for the source.
    pub fn run_into(
        &mut self,
        src: &Tensor<u8>,
        crop: Option<Region>,
        color: ColorSpec,
        dst: &TensorDyn,
    ) -> Result<(FitPlacement, ChosenBackend), PreprocessError> {
        let source = SourceImage::new(src).with_crop(crop).with_color(color);
        self.run_batch_into(&[source], dst, |_, _| {})
    }

    /// [`run_batch`](Preprocessor::run_batch) into the caller's `dst` (see
    /// [`run_into`](Preprocessor::run_into)): where the first source landed
    /// and the device that wrote the batch (the CPU if any image went there).
    ///
    /// # Errors
    /// As [`run_into`](Preprocessor::run_into) and
    /// [`run_batch`](Preprocessor::run_batch).
    pub fn run_batch_into(
        &mut self,
        sources: &[SourceImage<'_>],
        dst: &TensorDyn,
        placed: impl FnMut(usize, FitPlacement),
    ) -> Result<(FitPlacement, ChosenBackend), PreprocessError> {
        let batch = self.input.batch_size();
        if sources.len() != batch {
            return Err(PreprocessError::BatchSize {
                batch,
                sources: sources.len(),
            });
        }
        self.input.check_destination(dst, 0)?;
        self.fill(sources, dst, placed)
    }

    /// Each of `sources` into its batch element of `dst`.
    fn fill(
        &mut self,
        sources: &[SourceImage<'_>],
        dst: &TensorDyn,
        mut placed: impl FnMut(usize, FitPlacement),
    ) -> Result<(FitPlacement, ChosenBackend), PreprocessError> {
        let mut first = None;
        let mut backend = self.backend;
        for (n, src) in sources.iter().enumerate() {
            let (placement, on) = self.convert(src.tensor, src.crop, src.color, dst, n)?;
            placed(n, placement);
            first.get_or_insert(placement);
            if on == ChosenBackend::Cpu {
                backend = on;
            }
        }
        let batch = self.input.batch_size();
        let placement = first.ok_or(PreprocessError::BatchSize { batch, sources: 0 })?;
        Ok((placement, backend))
    }

    /// One image into batch element `n` of `dst`, on the chosen device (or,
    /// under `Auto`, the CPU for an image the GPU cannot take).
    fn convert(
        &mut self,
        src: &Tensor<u8>,
        crop: Option<Region>,
        color: ColorSpec,
        dst: &TensorDyn,
        n: usize,
    ) -> Result<(FitPlacement, ChosenBackend), PreprocessError> {
        #[cfg(feature = "gpu")]
        if let Some(gpu) = &self.gpu {
            let options = ConvertOptions {
                crop,
                color,
                import: ImportPolicy::Auto,
            };
            match crate::gpu::convert_model_dyn(gpu, src, dst, &self.input, &options, n) {
                Ok(p) => {
                    self.stats.gpu_images += 1;
                    return Ok((p, ChosenBackend::Gpu));
                }
                Err(PreprocessError::Gpu(gpu)) if self.fallback && gpu_cannot_take(&gpu) => {
                    self.stats.cpu_fallbacks += 1;
                    let p = self
                        .cpu
                        .convert(src, crop, color, &self.input, dst, n)
                        .map_err(|cpu| PreprocessError::NoDeviceTakes {
                            gpu: Box::new(gpu),
                            cpu: Box::new(cpu),
                        })?;
                    self.stats.cpu_images += 1;
                    return Ok((p, ChosenBackend::Cpu));
                }
                Err(e) => return Err(e),
            }
        }
        let p = self.cpu.convert(src, crop, color, &self.input, dst, n)?;
        self.stats.cpu_images += 1;
        Ok((p, ChosenBackend::Cpu))
    }
}

/// A zeroed PBO tensor of `input`'s shape and element type.
#[cfg(feature = "gpu")]
fn pbo_destination(gpu: &Gpu, input: &ModelInput) -> Result<TensorDyn, PreprocessError> {
    use zerocam_tensor::{f16, DType};
    let shape = input.shape();
    Ok(match input.element_type() {
        DType::U8 => TensorDyn::U8(gpu.pbo_tensor::<u8>(&shape)?),
        DType::I8 => TensorDyn::I8(gpu.pbo_tensor::<i8>(&shape)?),
        DType::F16 => TensorDyn::F16(gpu.pbo_tensor::<f16>(&shape)?),
        _ => TensorDyn::F32(gpu.pbo_tensor::<f32>(&shape)?),
    })
}
