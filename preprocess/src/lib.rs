//! # zerocam-preprocess
//!
//! Model inputs: a model's input tensor described ([`ModelInput`]), how a
//! frame is fitted into it ([`Fit`], [`FitPlacement`]), and the paths that
//! make it from camera frames.
//!
//! - [`CpuPreprocessor`] (and [`convert_cpu`]) makes a [`ModelInput`] on the
//!   CPU, without EGL, sampling as the GPU does: each plane resampled
//!   bilinearly with half-pixel centres, then YUV → RGB, normalization,
//!   quantization and layout row by row into the mapped destination
//!   (vectorized loops: SSE2 on x86-64, NEON on aarch64).
//! - [`gpu::convert_model`] (feature `gpu`) makes the same input on the GPU:
//!   the input and its fit become zerocam-gpu's
//!   [`ModelWrite`](zerocam_gpu::ModelWrite), which the GL thread renders
//!   (`u8`, `i8`, `f16` or `f32`, NCHW or NHWC, mean/std or quantization,
//!   stretch, centre crop or letterbox, RGB or BGR, one batch element at a
//!   time, as RGBA8 texels on any GLES 3.0 driver).
//! - [`Preprocessor`] makes a stream of model inputs on a chosen [`Backend`]
//!   (`Auto`: the GPU where its renderer is hardware, the CPU without EGL,
//!   on a software rasterizer ([`is_software_renderer`]) and for a frame the
//!   GPU cannot take), into a ring of destinations reused only once nothing
//!   holds them (PBOs on the GPU, heap memory on the CPU; no allocation per
//!   frame in steady state).
//!
//! The description lives here, not in the GL crate, so the CPU path builds
//! without GL and a later backend (CUDA) takes the same description.
//!
//! ```no_run
//! use zerocam_preprocess::{Backend, Fit, ModelInput, Preprocessor};
//! use zerocam_tensor::{ColorSpec, PixelFormat, Tensor, TensorMemory};
//!
//! let input = ModelInput::new(224, 224)?
//!     .mean_std([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])?
//!     .fit(Fit::Crop);
//! let mut pre = Preprocessor::new(input, Backend::Auto)?;
//! let frame = Tensor::<u8>::image(1280, 720, PixelFormat::Nv12, Some(TensorMemory::Mem))?;
//! let out = pre.run(&frame, None, ColorSpec::default())?; // 1x3x224x224 f32
//! assert_eq!(out.tensor.shape(), [1, 3, 224, 224]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(unsafe_code)]

mod cpu;
mod destination;
mod error;
mod fit;
#[cfg(feature = "gpu")]
pub mod gpu;
mod input;
mod preprocessor;

#[cfg(test)]
use zerocam_test_support::alloc as test_alloc;
#[cfg(test)]
#[global_allocator]
static TEST_ALLOC: test_alloc::Counting = test_alloc::Counting;

pub use cpu::{convert_cpu, default_threads, CpuConvertError, CpuPreprocessor, MAX_THREADS};
pub use error::ModelInputError;
pub use fit::{Fit, FitPlacement, SourceRect};
pub use input::{ChannelOrder, ModelInput, ModelLayout, Quantization, Resample, MODEL_DTYPES};
pub use preprocessor::{
    is_software_renderer, Backend, BackendReason, ChosenBackend, PreprocessError, PreprocessStats,
    Preprocessed, Preprocessor, SourceImage, DEFAULT_RING_DEPTH,
};
