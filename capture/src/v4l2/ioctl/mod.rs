//! zerocam's own typed V4L2 ioctl layer, on `nix`.
//!
//! Why not a crate: `v4l` has no multi-planar and no DMA-BUF support (its
//! issues #121 and #107); `v4l2r` generates its bindings with bindgen at build
//! time (libclang and the kernel headers of the target, awkward when cross
//! building for aarch64) and models a generic queue we would wrap anyway. The
//! subset a capture pipeline needs is small: the structures in [`raw`] (sizes
//! checked at compile time), one safe function per ioctl in [`calls`], and the
//! meaning of their errnos per operation in [`error`]. The buffer-queue ioctls
//! a stream makes per frame are behind [`BufferQueue`], so the queue logic
//! runs on the host against a fake device in tests.
//! See `docs/v4l2-layer.md`.

use std::fmt;
use std::os::fd::BorrowedFd;
use std::path::Path;
use std::time::Duration;

#[allow(unsafe_code)] // the syscall edge: each ioctl, with its SAFETY line
pub(crate) mod calls;
pub(crate) mod error;
#[cfg(test)]
pub(crate) mod fake;
#[cfg(test)]
mod queue_tests;
#[allow(unsafe_code)] // the syscall edge: the kernel's structures and the union reads
pub(crate) mod raw;

pub(crate) use error::{DqbufError, IoctlError, QbufError};

use crate::{BufferMode, Device};

/// The bytes of a kernel string field, up to its NUL.
pub(crate) fn c_str(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// The memory a buffer is queued with (`VIDIOC_QBUF`).
#[derive(Debug, Clone, Copy)]
pub(crate) enum QbufPlanes<'a> {
    /// `V4L2_MEMORY_MMAP`: the driver's own memory, nothing to pass.
    Mmap,
    /// `V4L2_MEMORY_DMABUF`: one dma-buf per plane.
    DmaBuf(&'a [DmaBufPlane<'a>]),
}

/// One plane of a `DMABUF` buffer: its dma-buf and the bytes the driver may use.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DmaBufPlane<'a> {
    pub fd: BorrowedFd<'a>,
    pub length: u32,
}

/// A buffer the driver is done with (`VIDIOC_DQBUF`), as plain values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Dequeued {
    /// The buffer's index.
    pub index: u32,
    /// The driver's frame counter (gaps are frames it dropped).
    pub sequence: u32,
    /// The capture time (`CLOCK_MONOTONIC` for vb2 drivers).
    pub timestamp: Duration,
    /// `V4L2_BUF_FLAG_ERROR`: the data is corrupt.
    pub error: bool,
    /// Per plane; a single-planar buffer fills plane 0 only (offset 0).
    pub planes: [DequeuedPlane; raw::MAX_PLANES],
}

/// What a dequeued plane holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct DequeuedPlane {
    /// Bytes of data, counted from the plane's start (offset included).
    pub bytes_used: u32,
    /// Where the data starts in the plane.
    pub data_offset: u32,
}

/// The ioctls a stream's buffer queue makes once it is set up: queue,
/// dequeue, start and stop. [`Device`] makes them on its fd; tests use
/// `fake::FakeDevice`. Each call takes `&self` and allocates nothing.
pub(crate) trait BufferQueue: Send + Sync + fmt::Debug + 'static {
    /// The device node's path, for errors.
    fn path(&self) -> &Path;
    /// [`calls::qbuf`] of buffer `index`.
    fn qbuf(&self, index: u32, planes: QbufPlanes<'_>) -> Result<(), QbufError>;
    /// [`calls::dqbuf`] of a buffer queued with `mode`'s memory.
    fn dqbuf(&self, mode: BufferMode) -> Result<Dequeued, DqbufError>;
    /// [`calls::stream`]: `VIDIOC_STREAMON` (`on`) or `VIDIOC_STREAMOFF`.
    fn stream(&self, on: bool) -> Result<(), IoctlError>;
}

impl BufferQueue for Device {
    fn path(&self) -> &Path {
        Device::path(self)
    }

    fn qbuf(&self, index: u32, planes: QbufPlanes<'_>) -> Result<(), QbufError> {
        calls::qbuf(self.fd(), self.info().api.buf_type(), index, planes)
    }

    fn dqbuf(&self, mode: BufferMode) -> Result<Dequeued, DqbufError> {
        calls::dqbuf(self.fd(), self.info().api.buf_type(), mode.memory())
    }

    fn stream(&self, on: bool) -> Result<(), IoctlError> {
        calls::stream(self.fd(), self.info().api.buf_type(), on)
    }
}
