//! [`GpuError`]: what the GPU path reports, with the values that explain it.

use zerocam_tensor::{DType, PixelFormat, Region, TensorMemory};

/// A GPU path failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GpuError {
    /// The EGL or GLES library could not be loaded, or lacks a function.
    #[error("EGL unavailable: {reason}")]
    EglUnavailable {
        /// What was missing (library name and the loader's message).
        reason: String,
    },

    /// An EGL call failed.
    #[error("EGL: {call} failed with {error}")]
    Egl {
        /// The call.
        call: &'static str,
        /// EGL's error name (`EGL_BAD_MATCH`, ...).
        error: String,
    },

    /// No EGL device matches the one asked for.
    #[error("no EGL device is {wanted}; this EGL lists: {devices} (NVIDIA's EGL lists each GPU with its CUDA device; `egl_devices()` shows them)")]
    NoEglDevice {
        /// The display asked for (an `EglDisplay`, as text).
        wanted: String,
        /// The devices EGL listed.
        devices: String,
    },

    /// A required EGL or GL extension is missing.
    #[error("{extension} is not supported by this EGL/GL implementation ({renderer})")]
    MissingExtension {
        /// The extension.
        extension: &'static str,
        /// The GL renderer string.
        renderer: String,
    },

    /// A GL call reported an error.
    #[error("GL: {call} failed with GL error 0x{code:04x}")]
    Gl {
        /// The call or step.
        call: &'static str,
        /// `glGetError`'s code.
        code: u32,
    },

    /// A shader failed to compile or link (a bug or an incapable driver).
    #[error("GL shader {stage}: {log}")]
    Shader {
        /// Vertex, fragment or link.
        stage: &'static str,
        /// The driver's info log.
        log: String,
    },

    /// The dma-buf could not be imported as an EGLImage.
    #[error(
        "EGLImage import of a {width}x{height} {format:?} dma-buf (pitch {pitch}, offsets {offsets:?}) failed: {error}"
    )]
    Import {
        /// Pixel format.
        format: PixelFormat,
        /// Width in pixels.
        width: usize,
        /// Height in pixels.
        height: usize,
        /// Row pitch of plane 0 in bytes.
        pitch: usize,
        /// Plane offsets in bytes.
        offsets: Vec<usize>,
        /// EGL's error name.
        error: String,
    },

    /// The GL thread has exited (its `Gpu` handles were dropped, or it failed).
    #[error("the GL thread has exited")]
    Disconnected,

    /// A job panicked on the GL thread (a bug): the thread caught it, freed
    /// its cached images and targets, and refuses every later call that would
    /// use its GL context, whose state the panic left unknown. PBO maps,
    /// unmaps and deletes of tensors made before still free their buffers.
    /// Make a new [`Gpu`](crate::Gpu) to carry on.
    #[error("the GPU is poisoned: its GL thread panicked in `{job}` ({message}); make a new Gpu")]
    Poisoned {
        /// The job that panicked (`convert`, `PBO map`, ...).
        job: &'static str,
        /// The panic's message.
        message: String,
    },

    /// A call that waits on the GL thread, made from the GL thread itself
    /// (it would never be answered).
    #[error("{call} called on the GL thread itself would wait for itself")]
    OnGlThread {
        /// The call.
        call: &'static str,
    },

    /// A whole batch where one image is needed.
    #[error("the {role} is a batch of {batch} images: convert one element (`tensor.batch(n)`) at a time")]
    Batched {
        /// Source or destination.
        role: &'static str,
        /// Images in the batch.
        batch: usize,
    },

    /// A PBO tensor made by another [`Gpu`](crate::Gpu): its buffer name means
    /// nothing in this context.
    #[error("the {role} is PBO {buffer} of another Gpu (GL names are per context)")]
    ForeignPbo {
        /// Source or destination.
        role: &'static str,
        /// The PBO's name in its own context.
        buffer: u32,
    },

    /// A PBO the CPU has mapped cannot be used by GL meanwhile.
    #[error("the {role} PBO {buffer} is mapped by the CPU: drop its map first")]
    PboMapped {
        /// Source or destination.
        role: &'static str,
        /// The PBO.
        buffer: u32,
    },

    /// An fd could not be duplicated for an import.
    #[error("cannot dup the {what} fd: {source}")]
    Dup {
        /// Which fd.
        what: &'static str,
        /// The OS error.
        source: std::io::Error,
    },

    /// A format the operation does not take in that role.
    #[error("{format:?} is not supported as a {role} of {operation}")]
    UnsupportedFormat {
        /// The format.
        format: PixelFormat,
        /// Source or destination.
        role: &'static str,
        /// The operation.
        operation: &'static str,
    },

    /// A tensor that is not an image where an image is needed.
    #[error(
        "the {role} of {operation} must be an image tensor (shape {shape:?} has no pixel format)"
    )]
    NotAnImage {
        /// Source or destination.
        role: &'static str,
        /// The operation.
        operation: &'static str,
        /// The tensor's shape.
        shape: Vec<usize>,
    },

    /// A size the format or the operation cannot take (odd 4:2:0 sizes, widths
    /// the packed RGB writer cannot address).
    #[error("{what}: {width}x{height} {format:?} — {reason}")]
    BadSize {
        /// Which tensor or region.
        what: &'static str,
        /// The format.
        format: PixelFormat,
        /// Width in pixels.
        width: usize,
        /// Height in pixels.
        height: usize,
        /// What it must be.
        reason: &'static str,
    },

    /// A source crop outside the source image.
    #[error("crop {crop:?} is outside the {width}x{height} source")]
    CropOutOfBounds {
        /// The crop asked for.
        crop: Region,
        /// Source width.
        width: usize,
        /// Source height.
        height: usize,
    },

    /// Memory the operation cannot use in that role.
    #[error("{memory} memory cannot be the {role} of {operation}: {reason}")]
    UnsupportedMemory {
        /// The memory kind.
        memory: TensorMemory,
        /// Source or destination.
        role: &'static str,
        /// The operation.
        operation: &'static str,
        /// Why not.
        reason: &'static str,
    },

    /// A model-input destination that is not what the
    /// [`ModelWrite`](crate::ModelWrite) describes (element type, shape,
    /// batch index, packing) or that the GPU cannot lay out as RGBA8 texels
    /// (its elements do not start on a multiple of their size in the buffer).
    #[error("model-input destination {shape:?} {dtype:?}: {reason}")]
    ModelDestination {
        /// Its shape.
        shape: Vec<usize>,
        /// Its element type.
        dtype: DType,
        /// What it must be.
        reason: &'static str,
    },

    /// A [`ModelResample::Area`](crate::ModelResample::Area) write whose
    /// footprint needs more bilinear samples across or down than the
    /// sampling pass's loop bound ([`AREA_MAX_SAMPLES`](crate::AREA_MAX_SAMPLES)):
    /// refused rather than averaged over part of the footprint.
    #[error(
        "area resampling of {width}x{height} source pixels onto {columns}x{rows} model pixels needs {samples:?} bilinear samples a model pixel across and down, past the limit of {max} each way (a downscale of at most {max_scale}x per axis): crop or scale the source first"
    )]
    AreaFootprint {
        /// The sampled source rectangle's width, in source pixels.
        width: f64,
        /// Its height.
        height: f64,
        /// The model pixels it fills across.
        columns: usize,
        /// And down.
        rows: usize,
        /// The bilinear samples a model pixel would take, across and down.
        samples: (usize, usize),
        /// The most the shader takes each way.
        max: usize,
        /// The widest footprint that fits, in source pixels.
        max_scale: usize,
    },

    /// An error from a tensor (map, view, fd).
    #[error(transparent)]
    Tensor(#[from] zerocam_tensor::Error),
}

/// Results of the GPU path.
pub type Result<T, E = GpuError> = std::result::Result<T, E>;
