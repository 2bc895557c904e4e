//! What a capture device's buffer queue supports, as `VIDIOC_REQBUFS` with a
//! count of 0 reports it (`V4L2_BUF_CAP_*`, Linux 4.20+): asked without
//! allocating a buffer, so `zerocam doctor` can tell, before any capture,
//! whether the driver imports dma-bufs.

use std::fmt;

use crate::v4l2::ioctl::{calls, raw};
use crate::{Device, Result};

/// `V4L2_BUF_CAP_SUPPORTS_MMAP`.
const SUPPORTS_MMAP: u32 = 1 << 0;
/// `V4L2_BUF_CAP_SUPPORTS_USERPTR`.
const SUPPORTS_USERPTR: u32 = 1 << 1;
/// `V4L2_BUF_CAP_SUPPORTS_DMABUF`.
const SUPPORTS_DMABUF: u32 = 1 << 2;
/// `V4L2_BUF_CAP_SUPPORTS_REQUESTS`.
const SUPPORTS_REQUESTS: u32 = 1 << 3;
/// `V4L2_BUF_CAP_SUPPORTS_ORPHANED_BUFS`.
const SUPPORTS_ORPHANED_BUFS: u32 = 1 << 4;

/// The memory kinds a device's capture queue takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufferSupport {
    /// Driver-allocated buffers (`V4L2_MEMORY_MMAP`), which zerocam exports
    /// as dma-bufs (`VIDIOC_EXPBUF`) in its default mode.
    pub mmap: bool,
    /// User pointers (`V4L2_MEMORY_USERPTR`; zerocam does not use them).
    pub userptr: bool,
    /// Imported dma-bufs (`V4L2_MEMORY_DMABUF`): zerocam's `dmabuf` mode,
    /// which captures into DMA-heap tensors.
    pub dmabuf: bool,
    /// The request API (`V4L2_BUF_CAP_SUPPORTS_REQUESTS`).
    pub requests: bool,
    /// Buffers may outlive the queue's `REQBUFS 0` while still mapped or
    /// exported (`V4L2_BUF_CAP_SUPPORTS_ORPHANED_BUFS`).
    pub orphaned: bool,
    /// The capability bits as the driver gave them.
    pub raw: u32,
}

impl BufferSupport {
    /// The bits of `caps` (`v4l2_requestbuffers.capabilities`).
    pub fn from_caps(caps: u32) -> BufferSupport {
        BufferSupport {
            mmap: caps & SUPPORTS_MMAP != 0,
            userptr: caps & SUPPORTS_USERPTR != 0,
            dmabuf: caps & SUPPORTS_DMABUF != 0,
            requests: caps & SUPPORTS_REQUESTS != 0,
            orphaned: caps & SUPPORTS_ORPHANED_BUFS != 0,
            raw: caps,
        }
    }
}

impl fmt::Display for BufferSupport {
    /// `mmap, dmabuf, orphaned` (what is supported, in that order).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = [
            (self.mmap, "mmap"),
            (self.userptr, "userptr"),
            (self.dmabuf, "dmabuf"),
            (self.requests, "requests"),
            (self.orphaned, "orphaned"),
        ];
        let on: Vec<&str> = names.iter().filter(|(b, _)| *b).map(|(_, n)| *n).collect();
        if on.is_empty() {
            f.write_str("none reported")
        } else {
            f.write_str(&on.join(", "))
        }
    }
}

impl Device {
    /// What the capture queue supports: `VIDIOC_REQBUFS` with a count of 0
    /// (which allocates nothing, and frees nothing when no buffers are
    /// allocated), asked with `V4L2_MEMORY_MMAP`.
    ///
    /// # Errors
    /// [`CaptureError::Ioctl`](crate::CaptureError) when the driver refuses
    /// (`EBUSY`: another process streams from the device).
    pub fn buffer_support(&self) -> Result<BufferSupport> {
        let r = calls::reqbufs(self.fd(), self.info().api.buf_type(), raw::MEMORY_MMAP, 0)
            .map_err(|e| e.ioctl_error().into_capture(self.path(), "VIDIOC_REQBUFS"))?;
        Ok(BufferSupport::from_caps(r.capabilities))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_are_named() {
        let s = BufferSupport::from_caps(SUPPORTS_MMAP | SUPPORTS_DMABUF | SUPPORTS_ORPHANED_BUFS);
        assert!(s.mmap && s.dmabuf && s.orphaned && !s.userptr && !s.requests);
        assert_eq!(s.to_string(), "mmap, dmabuf, orphaned");
        assert_eq!(BufferSupport::from_caps(0).to_string(), "none reported");
    }
}
