//! A buffer's memory planes: where each plane's memory comes from (an fd
//! exported once by the driver, or a tensor zerocam allocated), its file's
//! identity, and its import — shared by the V4L2 stream, the pattern source
//! and the libcamera source.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use nix::fcntl::{fcntl, FcntlArg, OFlag};

use zerocam_tensor::{FdIdentity, Tensor};

/// Where a plane's memory comes from.
#[derive(Debug)]
pub(crate) enum PlaneSource {
    /// A dma-buf fd exported once with `VIDIOC_EXPBUF`.
    Exported(OwnedFd),
    /// A tensor zerocam allocated (DMA heap pool, pattern memfds).
    Owned(Box<Tensor<u8>>),
    /// An fd number another owner keeps open while the plane is used (a
    /// `GstMemory`'s, for one frame): dup'd only when it is imported, so a
    /// cache hit costs no `dup`/`close`. Whoever lends it keeps its owner
    /// alive until the plane is dropped (`GstSource` holds the buffer); a
    /// number closed meanwhile would make the import fail with `EBADF`.
    #[cfg_attr(not(feature = "gstreamer"), allow(dead_code))] // made by `GstSource` only
    Lent(std::os::fd::RawFd),
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
            PlaneSource::Lent(_) => None,
        }
    }

    /// A read-only fd of the plane's file, for another process: a dup when
    /// the plane's fd is already `O_RDONLY` (a read-only export or pool
    /// buffer), else the file re-opened `O_RDONLY` through `/proc/self/fd`
    /// (a memfd: the same inode, checked). `Err` says why not: a read-write
    /// dma-buf cannot be re-opened (`ENXIO`).
    pub fn read_only_fd(&self) -> Result<OwnedFd, String> {
        let fd = self.fd().ok_or("the plane has no fd")?;
        let flags = fcntl(fd, FcntlArg::F_GETFL).map_err(|e| format!("F_GETFL: {e}"))?;
        if OFlag::from_bits_truncate(flags) & OFlag::O_ACCMODE == OFlag::O_RDONLY {
            return zerocam_tensor::dup_fd(fd).map_err(|e| e.to_string());
        }
        let path = format!("/proc/self/fd/{}", fd.as_raw_fd());
        let reopened = std::fs::File::open(&path).map_err(|e| match e.raw_os_error() {
            Some(libc::ENXIO) => "a read-write dma-buf cannot be re-opened read-only \
                (stream with StreamConfig::read_only)"
                .to_owned(),
            _ => format!("re-opening it read-only: {e}"),
        })?;
        let reopened = OwnedFd::from(reopened);
        match FdIdentity::of(reopened.as_fd()) {
            Ok(id) if id == self.file => Ok(reopened),
            _ => Err("its re-opened file is another file".to_owned()),
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
            PlaneSource::Lent(raw) => {
                Tensor::from_fd(zerocam_tensor::dup_fd_number(*raw)?, &[self.length], None)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zerocam_tensor::TensorMemory;

    fn access_mode(fd: BorrowedFd<'_>) -> OFlag {
        let flags = fcntl(fd, FcntlArg::F_GETFL).unwrap();
        OFlag::from_bits_truncate(flags) & OFlag::O_ACCMODE
    }

    #[test]
    fn a_memfd_plane_is_shared_read_only_and_cannot_be_written_through_it() {
        let t = Tensor::<u8>::new(&[4096], Some(TensorMemory::Shm), None).unwrap();
        t.map_write().unwrap().fill(7);
        let plane = PlaneMemory::owned(t.clone()).unwrap();
        let ro = plane.read_only_fd().unwrap();
        assert_eq!(access_mode(ro.as_fd()), OFlag::O_RDONLY);
        assert_eq!(
            FdIdentity::of(ro.as_fd()).unwrap(),
            plane.file,
            "the same file"
        );
        // A read-only fd's plane shares by dup, still read-only.
        let again = PlaneMemory {
            file: plane.file,
            source: PlaneSource::Exported(ro),
            length: 4096,
        };
        let dup = again.read_only_fd().unwrap();
        assert_eq!(access_mode(dup.as_fd()), OFlag::O_RDONLY);
        let imported = Tensor::<u8>::from_fd(dup, &[4096], None).unwrap();
        assert!(imported.map_read().unwrap().iter().all(|&b| b == 7));
        assert!(matches!(
            imported.map_write(),
            Err(zerocam_tensor::Error::ReadOnly { .. })
        ));
    }

    #[test]
    fn a_pattern_source_shares_its_buffers_read_only_and_names_a_bad_index() {
        use crate::{CaptureError, FrameSource, PatternConfig, PatternSource};
        let source =
            PatternSource::new(PatternConfig::new("NV12M".parse().unwrap(), 64, 48)).unwrap();
        let planes = source.read_only_planes(3).unwrap();
        assert_eq!(planes.len(), 2, "one fd per memory plane");
        for p in &planes {
            assert_eq!(access_mode(p.fd.as_fd()), OFlag::O_RDONLY);
        }
        let e = source.read_only_planes(4).unwrap_err();
        assert!(
            matches!(e, CaptureError::NotShareable { index: 4, .. }),
            "{e}"
        );
    }
}
