//! What a failed ioctl means, typed per operation, so that no caller decodes
//! an errno itself. An errno that means the same to several ioctls is the
//! same variant in each enum: `Disconnected` for `ENODEV`/`ENXIO` (the device
//! went away) in all of them, `Io` for vb2's fatal queue error (`EIO` from
//! `VIDIOC_QBUF` and `VIDIOC_DQBUF` until `VIDIOC_STREAMOFF`). An ioctl whose
//! errnos mean nothing more than that ([`IoctlError`]: `STREAMON`/`STREAMOFF`,
//! `QUERYBUF`, `EXPBUF` and the rest) keeps every other errno as it came
//! (`Other`). The enumerations (`VIDIOC_ENUM_FMT`, `_FRAMESIZES`,
//! `_FRAMEINTERVALS`, `VIDIOC_QUERYCTRL` with `NEXT_CTRL`, `VIDIOC_QUERYMENU`)
//! answer `Ok(None)` for `EINVAL`, past the last item (or one a menu skips).

use std::path::Path;

use nix::errno::Errno;

use crate::CaptureError;

/// A failed ioctl with no errno of its own meaning beyond a vanished device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum IoctlError {
    /// `ENODEV` or `ENXIO`: the device went away.
    #[error("device disconnected ({0})")]
    Disconnected(Errno),
    /// Any other errno.
    #[error("{0}")]
    Other(Errno),
}

impl From<Errno> for IoctlError {
    fn from(errno: Errno) -> IoctlError {
        match errno {
            Errno::ENODEV | Errno::ENXIO => IoctlError::Disconnected(errno),
            errno => IoctlError::Other(errno),
        }
    }
}

impl IoctlError {
    /// The errno the kernel gave.
    pub fn errno(self) -> Errno {
        match self {
            IoctlError::Disconnected(errno) | IoctlError::Other(errno) => errno,
        }
    }

    /// The crate's error for `ioctl` on the device at `path`:
    /// [`CaptureError::Disconnected`] or [`CaptureError::Ioctl`].
    pub fn into_capture(self, path: &Path, ioctl: &'static str) -> CaptureError {
        match self {
            IoctlError::Disconnected(errno) => CaptureError::Disconnected {
                path: path.to_path_buf(),
                errno,
            },
            IoctlError::Other(errno) => CaptureError::Ioctl {
                path: path.to_path_buf(),
                ioctl,
                errno,
            },
        }
    }
}

/// `VIDIOC_QUERYCAP` failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum QuerycapError {
    /// `ENOTTY` or `EINVAL`: the node is not a V4L2 device.
    #[error("not a V4L2 device ({0})")]
    NotV4l2(Errno),
    /// Any other errno.
    #[error("{0}")]
    Other(Errno),
}

impl From<Errno> for QuerycapError {
    fn from(errno: Errno) -> QuerycapError {
        match errno {
            Errno::ENOTTY | Errno::EINVAL => QuerycapError::NotV4l2(errno),
            errno => QuerycapError::Other(errno),
        }
    }
}

/// `VIDIOC_QBUF` failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum QbufError {
    /// `ENODEV` or `ENXIO`: the device went away.
    #[error("device disconnected ({0})")]
    Disconnected(Errno),
    /// `EIO`: the queue is in vb2's fatal error state until `STREAMOFF`.
    #[error("the queue has a fatal error (EIO)")]
    Io,
    /// Plane handles the wrapper refuses before any call: none, more than
    /// [`MAX_PLANES`](super::raw::MAX_PLANES), or more than one on a
    /// single-planar queue.
    #[error("{planes} DMABUF plane handles for a queue that takes 1..={max}")]
    BadPlanes {
        /// Handles given.
        planes: usize,
        /// Handles the queue takes at most.
        max: usize,
    },
    /// Any other errno.
    #[error("{0}")]
    Other(Errno),
}

impl From<Errno> for QbufError {
    fn from(errno: Errno) -> QbufError {
        match errno {
            Errno::EIO => QbufError::Io,
            errno => match IoctlError::from(errno) {
                IoctlError::Disconnected(errno) => QbufError::Disconnected(errno),
                IoctlError::Other(errno) => QbufError::Other(errno),
            },
        }
    }
}

/// `VIDIOC_DQBUF` failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DqbufError {
    /// `EAGAIN`: no buffer is done yet (the fd is non-blocking).
    #[error("no buffer is ready (EAGAIN)")]
    NotReady,
    /// `ENODEV` or `ENXIO`: the device went away.
    #[error("device disconnected ({0})")]
    Disconnected(Errno),
    /// `EIO`: the queue is in vb2's fatal error state until `STREAMOFF`.
    #[error("the queue has a fatal error (EIO)")]
    Io,
    /// Any other errno.
    #[error("{0}")]
    Other(Errno),
}

impl From<Errno> for DqbufError {
    fn from(errno: Errno) -> DqbufError {
        match errno {
            Errno::EAGAIN => DqbufError::NotReady,
            Errno::EIO => DqbufError::Io,
            errno => match IoctlError::from(errno) {
                IoctlError::Disconnected(errno) => DqbufError::Disconnected(errno),
                IoctlError::Other(errno) => DqbufError::Other(errno),
            },
        }
    }
}

impl DqbufError {
    /// The failure as the queue handles it (the same as a `QBUF` failure with
    /// the same errno), or `None` for [`DqbufError::NotReady`].
    pub fn queue_error(self) -> Option<QbufError> {
        match self {
            DqbufError::NotReady => None,
            DqbufError::Disconnected(errno) => Some(QbufError::Disconnected(errno)),
            DqbufError::Io => Some(QbufError::Io),
            DqbufError::Other(errno) => Some(QbufError::Other(errno)),
        }
    }
}

/// `VIDIOC_REQBUFS` failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ReqbufsError {
    /// `EINVAL`: the driver does not support the buffer type or memory asked for.
    #[error("the buffer type or memory is not supported (EINVAL)")]
    Unsupported,
    /// `ENODEV` or `ENXIO`: the device went away.
    #[error("device disconnected ({0})")]
    Disconnected(Errno),
    /// Any other errno.
    #[error("{0}")]
    Other(Errno),
}

impl From<Errno> for ReqbufsError {
    fn from(errno: Errno) -> ReqbufsError {
        match IoctlError::from(errno) {
            IoctlError::Disconnected(errno) => ReqbufsError::Disconnected(errno),
            IoctlError::Other(Errno::EINVAL) => ReqbufsError::Unsupported,
            IoctlError::Other(errno) => ReqbufsError::Other(errno),
        }
    }
}

impl ReqbufsError {
    /// As an [`IoctlError`] (`Unsupported` is `Other(EINVAL)`).
    pub fn ioctl_error(self) -> IoctlError {
        match self {
            ReqbufsError::Unsupported => IoctlError::Other(Errno::EINVAL),
            ReqbufsError::Disconnected(errno) => IoctlError::Disconnected(errno),
            ReqbufsError::Other(errno) => IoctlError::Other(errno),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errnos_map_to_their_meaning_per_operation() {
        assert_eq!(DqbufError::from(Errno::EAGAIN), DqbufError::NotReady);
        assert_eq!(DqbufError::from(Errno::EIO), DqbufError::Io);
        assert_eq!(
            DqbufError::from(Errno::ENXIO),
            DqbufError::Disconnected(Errno::ENXIO)
        );
        assert_eq!(
            DqbufError::from(Errno::EINVAL),
            DqbufError::Other(Errno::EINVAL)
        );
        assert_eq!(QbufError::from(Errno::EIO), QbufError::Io);
        assert_eq!(
            QbufError::from(Errno::EAGAIN),
            QbufError::Other(Errno::EAGAIN),
            "EAGAIN means nothing special to QBUF"
        );
        assert_eq!(
            QbufError::from(Errno::ENODEV),
            QbufError::Disconnected(Errno::ENODEV)
        );
        assert_eq!(ReqbufsError::from(Errno::EINVAL), ReqbufsError::Unsupported);
        assert_eq!(
            IoctlError::from(Errno::EIO),
            IoctlError::Other(Errno::EIO),
            "EIO is fatal only to the queue ioctls"
        );
        assert_eq!(DqbufError::NotReady.queue_error(), None);
        assert_eq!(DqbufError::Io.queue_error(), Some(QbufError::Io));
    }
}
