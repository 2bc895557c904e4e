//! # zerocam-gpu
//!
//! The GPU half of zerocam: camera frames reach GL without a copy and without a
//! per-frame re-import.
//!
//! - [`Gpu`] owns a GL thread with a surfaceless EGL context (EGL and GLES are
//!   loaded at run time: a machine without them gets
//!   [`GpuError::EglUnavailable`], not a link failure).
//! - [`Gpu::pbo_tensor`] / [`Gpu::pbo_image`] make tensors in GL pixel buffer
//!   objects (`TensorMemory::Pbo`); they map through the GL thread and survive
//!   it (maps then fail with `Error::PboDisconnected`).
//! - [`Gpu::convert`] turns NV12, NV16, YUYV, UYVY, RGB(A), BGR(A) or grey into
//!   RGB, RGBA or planar RGB with crop and bilinear resize, BT.601/BT.709 in
//!   limited or full range. A dma-buf source is imported once as an EGLImage
//!   (`EGL_EXT_image_dma_buf_import`) and cached on its
//!   [`BufferIdentity`](zerocam_tensor::BufferIdentity) and geometry, so B
//!   camera buffers make B imports however many frames flow; a destination view
//!   (a batch element, a tile) is a viewport of its parent's one render target.
//! - [`Gpu::write_model`] renders the same sources into one batch element of
//!   a model's input tensor as a [`ModelWrite`] describes it: `u8`, `i8`,
//!   `f16` or `f32`, planes or interleaved, an affine per channel, a fitted
//!   rectangle and pad; the elements' bytes are rendered as RGBA8 texels, so
//!   it runs on any GLES 3.0 driver. The model description itself (its
//!   normalization, fit, the CPU path and the backend choice) is
//!   zerocam-preprocess's, which makes a `ModelWrite` from it.
//! - A job that panics on the GL thread poisons the [`Gpu`]: its caller and
//!   every later call that would use the GL context get
//!   [`GpuError::Poisoned`] naming the job and the panic's message (never a
//!   hang or the panic itself); cached EGLImages are freed at once, and PBO
//!   tensors still unmap and free. Make a new `Gpu` to carry on.
//!
//!
//! Which dma-bufs a driver imports is the driver's call: 24-bit RGB/BGR
//! (`BG24`/`RG24`) is refused by many (zink among them, `EGL_BAD_MATCH`);
//! under [`ImportPolicy::Auto`] such a frame is uploaded instead and counted in
//! [`GpuStats::uploads`]. Imports always say `DRM_FORMAT_MOD_LINEAR` where the
//! display takes modifiers: a tensor's bytes are row-major.
//!
//! ```no_run
//! use zerocam_gpu::{ConvertOptions, Gpu};
//! use zerocam_tensor::{PixelFormat, Region, Tensor, TensorMemory};
//!
//! let gpu = Gpu::new()?;
//! let frame = Tensor::<u8>::image(1280, 720, PixelFormat::Nv12, Some(TensorMemory::Mem))?;
//! let input = Tensor::<u8>::image(640, 640, PixelFormat::Rgb, Some(TensorMemory::Mem))?;
//! let options = ConvertOptions { crop: Some(Region::new(280, 0, 720, 720)), ..Default::default() };
//! gpu.convert(&frame, &input, &options)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(unsafe_code)]

mod color;
mod draw_plan;
mod egl_attributes;
mod error;
mod model;

#[cfg(feature = "gl")]
#[allow(unsafe_code)] // the EGL FFI edge: loading EGL, its calls and EGLImages
mod egl;
#[cfg(feature = "fault-injection")]
mod fault;
#[cfg(feature = "gl")]
#[allow(unsafe_code)] // the GL FFI edge: every raw GL call, behind safe wrappers
mod glutil;
#[cfg(feature = "gl")]
mod gpu;
#[cfg(feature = "gl")]
mod interop;
#[cfg(feature = "gl")]
mod pbo;
#[cfg(feature = "gl")]
mod poison;
#[cfg(feature = "gl")]
mod render;
#[cfg(feature = "gl")]
mod shaders;
#[cfg(feature = "gl")]
mod source;
#[cfg(feature = "gl")]
mod state;
#[cfg(feature = "gl")]
mod target;

#[cfg(test)]
use zerocam_test_support::alloc as test_alloc;
#[cfg(test)]
#[global_allocator]
static TEST_ALLOC: test_alloc::Counting = test_alloc::Counting;

pub use color::{ColorSpec, Matrix, Range, YcbcrToRgb};
pub use draw_plan::{source_region, ConvertOptions, ImportPolicy};
pub use egl_attributes::drm_fourcc;
pub use error::{GpuError, Result};
pub use model::{
    ChannelLayout, ModelResample, ModelWrite, SampleRect, AREA_MAX_SAMPLES, WRITE_DTYPES,
};

#[cfg(feature = "gl")]
pub use egl::{egl_devices, EglDevice, EglDisplay, GpuInfo, EGL_LIBRARY_ENV, GLES_LIBRARY_ENV};
#[cfg(feature = "gl")]
pub use gpu::{Gpu, GpuStats};
#[cfg(feature = "gl")]
pub use interop::{GlThread, SharedEglImage, WeakGpu};
