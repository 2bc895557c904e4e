//! [`M2mError`]: what a memory-to-memory codec refuses, each naming the
//! device node, and for ioctls the call and the errno's meaning.

use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::errno::Errno;

use crate::v4l2::ioctl::error::ReqbufsError;
use crate::v4l2::ioctl::{DqbufError, IoctlError, QbufError};
use crate::FourCc;

/// A memory-to-memory encoder or decoder failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum M2mError {
    /// Opening the node failed.
    #[error("{path}: cannot open: {errno} ({})", errno.desc())]
    Open {
        /// The node.
        path: PathBuf,
        /// What `open` said.
        errno: Errno,
    },
    /// The node is no memory-to-memory device with streaming I/O.
    #[error("{path}: {card:?} is not a memory-to-memory device (device caps {caps:#010x})")]
    NotM2m {
        /// The node.
        path: PathBuf,
        /// Its card name.
        card: String,
        /// Its capabilities.
        caps: u32,
    },
    /// The device went away (`ENODEV`/`ENXIO`) during `ioctl`.
    #[error("{path}: device disconnected during {ioctl} ({errno})")]
    Disconnected {
        /// The node.
        path: PathBuf,
        /// The ioctl.
        ioctl: &'static str,
        /// `ENODEV` or `ENXIO`.
        errno: Errno,
    },
    /// An ioctl failed.
    #[error("{path}: {ioctl} failed: {errno} ({})", errno.desc())]
    Ioctl {
        /// The node.
        path: PathBuf,
        /// The ioctl.
        ioctl: &'static str,
        /// Its errno.
        errno: Errno,
    },
    /// The codec is not among the formats of the queue it belongs on.
    #[error("{path}: no {fourcc} on its {queue} queue (it offers {offered})")]
    NoCodec {
        /// The node.
        path: PathBuf,
        /// `CAPTURE` for an encoder, `OUTPUT` for a decoder.
        queue: &'static str,
        /// The codec's format.
        fourcc: FourCc,
        /// What the queue offers, comma-separated.
        offered: String,
    },
    /// The driver answered `VIDIOC_S_FMT` with another format than asked.
    #[error(
        "{path}: the {queue} queue refuses {asked} {width}x{height}: the driver answered {got} {got_width}x{got_height}"
    )]
    FormatRefused {
        /// The node.
        path: PathBuf,
        /// `OUTPUT` or `CAPTURE`.
        queue: &'static str,
        /// The format asked for.
        asked: FourCc,
        /// Width asked.
        width: u32,
        /// Height asked.
        height: u32,
        /// The format the driver set instead.
        got: FourCc,
        /// Width it set.
        got_width: u32,
        /// Height it set.
        got_height: u32,
    },
    /// A frame the encoder cannot take at all (no format for its pixels,
    /// or not the geometry the encoder was opened with).
    #[error("{path}: cannot encode this frame: {reason}")]
    BadFrame {
        /// The node.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The driver granted a buffer count out of bounds.
    #[error("{path}: {queue} queue: asked {asked} buffers, the driver granted {granted} (1..={max} usable)")]
    BufferGrant {
        /// The node.
        path: PathBuf,
        /// `OUTPUT` or `CAPTURE`.
        queue: &'static str,
        /// Asked.
        asked: u32,
        /// Granted.
        granted: u32,
        /// The most zerocam takes.
        max: u32,
    },
    /// A payload that does not fit its buffer plane.
    #[error("{path}: {queue} buffer {index} plane {plane}: {bytes} bytes do not fit its {length}")]
    Payload {
        /// The node.
        path: PathBuf,
        /// `OUTPUT` or `CAPTURE`.
        queue: &'static str,
        /// Buffer index.
        index: u32,
        /// Plane.
        plane: usize,
        /// Bytes used (or offset plus bytes).
        bytes: u64,
        /// The plane's length.
        length: u64,
    },
    /// Mapping or importing a buffer failed.
    #[error("{path}: buffer memory: {source}")]
    Tensor {
        /// The node.
        path: PathBuf,
        /// What the tensor layer said.
        #[source]
        source: zerocam_tensor::Error,
    },
    /// Nothing came out in time.
    #[error("{path}: {what} did not happen within {timeout:?}")]
    Timeout {
        /// The node.
        path: PathBuf,
        /// What was waited for.
        what: &'static str,
        /// How long.
        timeout: Duration,
    },
}

impl M2mError {
    /// The error of `ioctl` on `path` failing with `errno`: `Disconnected`
    /// for `ENODEV`/`ENXIO`, `Ioctl` otherwise.
    pub fn ioctl(path: &Path, ioctl: &'static str, errno: Errno) -> M2mError {
        match errno {
            Errno::ENODEV | Errno::ENXIO => M2mError::Disconnected {
                path: path.to_path_buf(),
                ioctl,
                errno,
            },
            errno => M2mError::Ioctl {
                path: path.to_path_buf(),
                ioctl,
                errno,
            },
        }
    }

    /// The errno behind the error, when one is.
    pub fn errno(&self) -> Option<Errno> {
        match self {
            M2mError::Open { errno, .. }
            | M2mError::Disconnected { errno, .. }
            | M2mError::Ioctl { errno, .. } => Some(*errno),
            _ => None,
        }
    }
}

/// The errno of a typed ioctl error, for [`M2mError::ioctl`].
pub(crate) trait Errno_ {
    fn errno_of(self) -> Errno;
}

impl Errno_ for IoctlError {
    fn errno_of(self) -> Errno {
        self.errno()
    }
}

impl Errno_ for ReqbufsError {
    fn errno_of(self) -> Errno {
        self.ioctl_error().errno()
    }
}

impl Errno_ for QbufError {
    fn errno_of(self) -> Errno {
        match self {
            QbufError::Disconnected(e) | QbufError::Other(e) => e,
            QbufError::Io => Errno::EIO,
            QbufError::BadPlanes { .. } => Errno::EINVAL,
        }
    }
}

impl Errno_ for DqbufError {
    fn errno_of(self) -> Errno {
        match self {
            DqbufError::NotReady => Errno::EAGAIN,
            DqbufError::Io => Errno::EIO,
            DqbufError::Disconnected(e) | DqbufError::Other(e) => e,
        }
    }
}

/// `map_err` helper: the [`M2mError`] of `ioctl` on `path`.
pub(crate) fn on<'a, E: Errno_>(
    path: &'a Path,
    ioctl: &'static str,
) -> impl Fn(E) -> M2mError + 'a {
    move |e| M2mError::ioctl(path, ioctl, e.errno_of())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enodev_is_its_own_variant_and_messages_name_path_ioctl_and_meaning() {
        let p = Path::new("/dev/video9");
        let gone = M2mError::ioctl(p, "VIDIOC_QBUF", Errno::ENODEV);
        assert!(matches!(gone, M2mError::Disconnected { .. }), "{gone}");
        let e = on::<QbufError>(p, "VIDIOC_QBUF")(QbufError::Other(Errno::EINVAL));
        let s = e.to_string();
        assert!(
            s.contains("/dev/video9") && s.contains("VIDIOC_QBUF"),
            "{s}"
        );
        assert!(s.contains("Invalid argument"), "{s}");
        assert_eq!(e.errno(), Some(Errno::EINVAL));
        let r = on::<ReqbufsError>(p, "VIDIOC_REQBUFS")(ReqbufsError::Disconnected(Errno::ENXIO));
        assert!(matches!(
            r,
            M2mError::Disconnected {
                errno: Errno::ENXIO,
                ..
            }
        ));
    }
}
