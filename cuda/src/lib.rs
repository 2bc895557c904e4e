//! # zerocam-cuda
//!
//! Tensors and camera frames as CUDA device memory, without a copy and
//! without registering the same buffer every frame.
//!
//! - **Loaded at run time.** The CUDA *driver* API (`libcuda.so.1`, which the
//!   NVIDIA driver installs; `ZEROCAM_CUDA_LIBRARY` names another) is opened
//!   with `dlopen` on first use. Nothing links CUDA at build time; a machine
//!   without it gets [`CudaError::Unavailable`] naming the library, and
//!   [`is_cuda_available`] says so up front. Failed calls carry their
//!   `cuGetErrorName` name ([`CudaError::Driver`]).
//! - **Registered once per buffer.** [`Cuda::map`] registers a tensor's
//!   buffer the first time and keeps the registration in a cache keyed like
//!   the GPU crate's EGLImage cache — the
//!   [`BufferIdentity`](zerocam_tensor::BufferIdentity) plus the geometry —
//!   swept when the identity dies. Three paths: (a) host registration of the
//!   persistent CPU mapping (`cuMemHostRegister`: heap, shared memory,
//!   dma-bufs where the driver allows it), (b) EGLImage interop for dma-buf
//!   frames (`cuGraphicsEGLRegisterImage`, Jetson), (c) GL buffer interop for
//!   PBO tensors (`cuGraphicsGLRegisterBuffer`, mapped per use on the GL
//!   thread).
//! - **Unregistered before freed.** Every registration holds the memory it
//!   registered ([`MemoryHold`](zerocam_tensor::MemoryHold),
//!   [`HostPin`](zerocam_tensor::HostPin)) and unregisters before letting it
//!   go: no munmap, `glDeleteBuffers` or `eglDestroyImage` of registered
//!   memory, whatever drops first.
//! - **[`CudaMap`]**: RAII, `Send` but not `Sync`: [`device_ptr`](CudaMap::device_ptr),
//!   [`len`](CudaMap::len), [`planes`](CudaMap::planes) with pitches, and the
//!   [`stream`](CudaMap::stream) to queue work on.
//!
//! docs/cuda.md has the design, the paths per board, and why
//! `cuImportExternalMemory` does not apply to foreign dma-bufs.

#![deny(unsafe_op_in_unsafe_fn)]

mod cuda;
mod device;
mod driver;
mod error;
#[cfg(feature = "capture")]
mod frame;
#[cfg(feature = "gl")]
mod gl;
mod host;
mod map;
mod planes;
mod probe;
mod staged;
mod stream;

pub use cuda::{Cuda, CudaStats};
pub use device::CudaInfo;
pub use driver::{default_library, is_cuda_available, Driver, DEFAULT_LIBRARY, LIBRARY_ENV};
pub use error::{CudaError, CudaUnavailable, HostRegisterError, Result};
#[cfg(feature = "capture")]
pub use frame::{CudaFrame, CudaFrameExt};
pub use map::{CudaMap, CudaPath, CudaPlane};
pub use probe::{probe, CudaFound, CudaProbe, InteropEgl, PathCheck};
pub use staged::HostPath;

/// docs/cuda.md's Rust example, compiled as a doc-test.
#[cfg(doctest)]
#[doc = include_str!("../../docs/cuda.md")]
struct CudaGuideExamples;
