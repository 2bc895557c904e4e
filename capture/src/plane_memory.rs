//! A buffer's memory planes: where each plane's memory comes from (an fd
//! exported once by the driver, or a tensor zerocam allocated), its file's
//! identity, and its import — shared by the V4L2 stream, the pattern source
//! and the libcamera source.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use zerocam_tensor::{FdIdentity, Tensor};

/// Where a plane's memory comes from.
#[derive(Debug)]
pub(crate) enum PlaneSource {
    /// A dma-buf fd exported once with `VIDIOC_EXPBUF`.
    Exported(OwnedFd),
    /// A tensor zerocam allocated (DMA heap pool, pattern memfds).
    Owned(Box<Tensor<u8>>),
}

/// One memory plane of one buffer.
#[derive(Debug)]
pub(crate) struct PlaneMemory {
    pub source: PlaneSource,
    /// `(st_dev, st_ino)` of the plane's file, read once at set-up.
    pub file: FdIdentity,
    pub length: usize,
}

impl PlaneMemory {
    /// All of tensor `t` as a plane zerocam owns; `None` when it has no fd.
    pub fn owned(t: Tensor<u8>) -> Option<PlaneMemory> {
        Some(PlaneMemory {
            file: t.fd_identity()?,
            length: t.len(),
            source: PlaneSource::Owned(Box::new(t)),
        })
    }

    /// The plane's fd, borrowed (to queue it, or import it).
    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        match &self.source {
            PlaneSource::Exported(fd) => Some(fd.as_fd()),
            PlaneSource::Owned(t) => t.fd(),
        }
    }

    /// The whole plane as a `[length]` tensor: a new import of an exported fd,
    /// or a handle on the owned tensor.
    pub(crate) fn import(&self) -> zerocam_tensor::Result<Tensor<u8>> {
        match &self.source {
            PlaneSource::Exported(fd) => {
                Tensor::from_fd(zerocam_tensor::dup_fd(fd.as_fd())?, &[self.length], None)
            }
            PlaneSource::Owned(t) => Ok(Tensor::clone(t)),
        }
    }
}
