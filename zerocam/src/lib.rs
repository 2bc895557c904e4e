//! # zerocam
//!
//! Camera frames as zero-copy tensors, and model inputs made from them. A
//! frame goes from the camera driver to the CPU, the GPU (EGL), CUDA or a
//! model's input without a copy and without re-importing the same buffer
//! every frame. This crate is the one dependency an app needs: it re-exports
//! the crates below it, by what they hold, and [`prelude`] brings in what a
//! camera-to-inference program uses.
//!
//! ```
//! use std::time::Duration;
//! use zerocam::prelude::*;
//!
//! // "pattern" is the built-in camera; "/dev/video0", "libcamera:<id>",
//! // "unix:<socket>" and "gst:<pipeline>" open the others.
//! let mut camera = zerocam::open("pattern")?;
//! println!("{}", camera.description); // what was opened, in words
//! let input = ModelInput::new(224, 224)?
//!     .mean_std([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])?
//!     .fit(Fit::Crop);
//! let mut preprocessor = Preprocessor::new(input, Backend::Auto)?;
//! for _ in 0..3 {
//!     let frame = camera.next_frame(Duration::from_secs(1))?;
//!     let input = preprocessor.run(frame.tensor(), None, frame.color_spec())?;
//!     assert_eq!(input.tensor.shape(), &[1, 3, 224, 224]);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! | module | crate | what |
//! | --- | --- | --- |
//! | [`tensor`] | `zerocam-tensor` | the zero-copy tensor: heap, shared memory, DMA-BUF and GL PBO memory, maps, views, identities |
//! | [`cache`] | `zerocam-cache` | the import caches: a dma-buf imported once, found again by inode |
//! | [`capture`] | `zerocam-capture` | sources (V4L2, libcamera, GStreamer, Zenoh, the pattern, another process's frames), frames, sharing |
//! | [`preprocess`] | `zerocam-preprocess` | model inputs: `ModelInput`, `Fit`, `Preprocessor` on the CPU or (feature `gpu`) the GPU |
//! | [`gpu`] | `zerocam-gpu` | the GL thread, EGLImage import, `convert` (feature `gpu`) |
//! | `cuda` | `zerocam-cuda` | tensors and frames as CUDA device pointers (feature `cuda`) |
//! | [`encode`] | `zerocam-encode` | frames out: JPEG, H.264 (V4L2 memory-to-memory, OpenH264, GStreamer), MP4 (feature `encode`) |
//! | `net` | `zerocam-net` | frames off the machine: the live view, Zenoh topics, RTSP (features `view`, `zenoh`, `rtsp`) |
//!
//! The outputs a frame can take, and where each lives:
//!
//! | output | where | feature |
//! | --- | --- | --- |
//! | other processes on the board (a Unix socket, the frames' own fds) | `capture::share::Publisher` | always |
//! | a file (MP4, Annex B) | `encode::recorder::Recorder` | `encode` |
//! | the live view (MJPEG over HTTP) | `net::view::ViewServer` | `view` |
//! | Zenoh topics (JPEG, H.264, camera info as ROS 2 messages) | `net::zenoh::ZenohPublisher` | `zenoh` |
//! | RTSP (H.264) | `net::rtsp::RtspServer` | `rtsp` |
//!
//! Features: `gpu` (default), `encode` (default), `cuda`, `libcamera`,
//! `gstreamer`, `view`, `zenoh`, `rtsp`.

#![deny(unsafe_code)]

pub mod prelude;

pub use zerocam_cache as cache;
pub use zerocam_capture as capture;
#[cfg(feature = "cuda")]
pub use zerocam_cuda as cuda;
/// Frames out: JPEG, H.264 on a V4L2 memory-to-memory encoder or in
/// software, GStreamer encoders (feature `gstreamer`), and a
/// [`Recorder`](encode::Recorder) that writes MP4 files (feature `encode`,
/// on by default).
#[cfg(feature = "encode")]
pub use zerocam_encode as encode;
/// The GPU path: the GL thread on surfaceless EGL, PBO tensors, dma-buf
/// frames imported once as EGLImages, `convert` (feature `gpu`).
#[cfg(feature = "gpu")]
pub use zerocam_gpu as gpu;
/// Frames off the machine: the live view in the browser (`view`), a
/// camera's topics on Zenoh (`zenoh`), RTSP (`rtsp`); each a feature of
/// this crate.
#[cfg(any(feature = "view", feature = "zenoh", feature = "rtsp"))]
pub use zerocam_net as net;
pub use zerocam_tensor as tensor;

pub use zerocam_capture::{CaptureError, Frame, FrameSource};

/// Model inputs made from frames: what a model takes
/// ([`ModelInput`](preprocess::ModelInput): size, layout, element type,
/// normalization or quantization, how the frame fits), and the
/// [`Preprocessor`](preprocess::Preprocessor) that makes them on the CPU or
/// the GPU into a ring of reused tensors.
pub use zerocam_preprocess as preprocess;
/// Opens a source by its spec, as the `zerocam` CLI, the C API and Python
/// do: `"pattern"` (the built-in pattern camera), a V4L2 device path
/// (`"/dev/video0"`), `"libcamera:<id>"` (feature `libcamera`),
/// `"unix:<socket>"` (frames another process serves: `zerocam serve`),
/// `"zenoh:<key>"` (feature `zenoh`) or `"gst:<pipeline>"` (feature
/// `gstreamer`); each with its defaults (NV12 or the device's current format
/// and size, 4 buffers). What it gives is the source (it is a
/// [`FrameSource`]) and what was opened, in words:
/// [`description`](capture::open::Opened::description), e.g.
/// `/dev/video0 (vivid): NV12 1280x720, mmap`.
/// [`capture::open::open`] takes a [`SourceSpec`](capture::open::SourceSpec)
/// with every option.
///
/// # Errors
/// The source's errors: a missing device, not a camera, a format or size it
/// cannot give, no publisher at the socket, a spec whose feature is not
/// built.
pub fn open(spec: &str) -> Result<capture::open::Opened, CaptureError> {
    let spec = capture::open::SourceSpec::new(Some(spec.to_owned()));
    capture::open::open(&spec)
}

/// README.md's Rust examples, compiled and run as doc-tests of the crate
/// they are written against.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeExamples;
