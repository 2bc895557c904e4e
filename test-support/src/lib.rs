//! # zerocam-test-support
//!
//! What zerocam's tests share across crates, as a crate rather than files
//! included by `#[path]`: [`alloc`], a global allocator that counts
//! allocations (a test binary installs it with `#[global_allocator]`),
//! `cmd` (feature `cmd`), a package's binaries run from its tests,
//! `lab` (feature `lab`), what lab tests share (one test at a time, fd
//! counts, EGL on zink), `gl` (feature `gl`), a `Gpu` on zink, `vivid` (feature `vivid`), vivid streams of solid
//! red, [`media`], video files read back through `ffprobe`, `picture`
//! (feature `picture`), what FFmpeg decodes checked against the stamped
//! pattern, and
//! `cuda_double` (feature `cuda-double`), which
//! builds and loads the CUDA driver test double; `browser` (feature `browser`), a headless Chromium over the DevTools Protocol, and [`netns`], a test run again inside a private network namespace. Its own tests check that the docs still say what the
//! workspace is (`tests/docs_*.rs`). Never a dependency of a product.

#![deny(unsafe_code)]

#[allow(unsafe_code)] // a GlobalAlloc is an unsafe impl by nature
pub mod alloc;
#[cfg(feature = "browser")]
pub mod browser;
#[cfg(feature = "cmd")]
pub mod cmd;
#[cfg(feature = "cuda-double")]
#[allow(unsafe_code)] // the FFI edge: the double's exported functions
pub mod cuda_double;
#[cfg(feature = "gl")]
pub mod gl;
#[cfg(feature = "lab")]
pub mod lab;
pub mod media;
pub mod netns;
#[cfg(feature = "picture")]
pub mod picture;
#[cfg(feature = "vivid")]
pub mod vivid;
