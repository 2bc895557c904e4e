//! [`Node`]: an open memory-to-memory device node, its two queues' types and
//! formats, polling, events and controls.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{open, OFlag};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::stat::Mode;

use super::error::{on, M2mError};
use crate::v4l2::ioctl::{c_str, calls, raw};
use crate::FourCc;

/// What a poll of a node found ready.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Ready {
    /// A CAPTURE buffer is done (`POLLIN`).
    pub capture: bool,
    /// An OUTPUT buffer is done (`POLLOUT`).
    pub output: bool,
    /// An event is pending (`POLLPRI`).
    pub event: bool,
    /// `POLLERR`: a queue is not streaming or has no buffers queued.
    pub error: bool,
}

/// An open M2M node.
#[derive(Debug)]
pub(crate) struct Node {
    pub path: PathBuf,
    fd: OwnedFd,
    /// `V4L2_BUF_TYPE_VIDEO_OUTPUT` or `_MPLANE`.
    pub out_type: u32,
    /// `V4L2_BUF_TYPE_VIDEO_CAPTURE` or `_MPLANE`.
    pub cap_type: u32,
    /// Driver name.
    pub driver: String,
}

impl Node {
    /// Opens `path` non-blocking and checks it is a streaming M2M device.
    pub fn open(path: &Path) -> Result<Node, M2mError> {
        let flags = OFlag::O_RDWR | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
        let fd = open(path, flags, Mode::empty()).map_err(|errno| M2mError::Open {
            path: path.to_path_buf(),
            errno,
        })?;
        let cap = calls::querycap(fd.as_fd()).map_err(|e| {
            let errno = match e {
                crate::v4l2::ioctl::error::QuerycapError::NotV4l2(e)
                | crate::v4l2::ioctl::error::QuerycapError::Other(e) => e,
            };
            M2mError::ioctl(path, "VIDIOC_QUERYCAP", errno)
        })?;
        let caps = if cap.capabilities & raw::CAP_DEVICE_CAPS != 0 {
            cap.device_caps
        } else {
            cap.capabilities
        };
        let (out_type, cap_type) = if caps & raw::CAP_VIDEO_M2M_MPLANE != 0 {
            (
                raw::BUF_TYPE_VIDEO_OUTPUT_MPLANE,
                raw::BUF_TYPE_VIDEO_CAPTURE_MPLANE,
            )
        } else if caps & raw::CAP_VIDEO_M2M != 0 {
            (raw::BUF_TYPE_VIDEO_OUTPUT, raw::BUF_TYPE_VIDEO_CAPTURE)
        } else {
            return Err(M2mError::NotM2m {
                path: path.to_path_buf(),
                card: c_str(&cap.card),
                caps,
            });
        };
        if caps & raw::CAP_STREAMING == 0 {
            return Err(M2mError::NotM2m {
                path: path.to_path_buf(),
                card: c_str(&cap.card),
                caps,
            });
        }
        Ok(Node {
            path: path.to_path_buf(),
            fd,
            out_type,
            cap_type,
            driver: c_str(&cap.driver),
        })
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The formats of queue `type_` and whether each is compressed.
    pub fn formats(&self, type_: u32) -> Result<Vec<(FourCc, bool)>, M2mError> {
        let mut out = Vec::new();
        // Bounded: no driver lists more than a few dozen formats.
        while out.len() < 256 {
            let Some(d) = calls::enum_fmt(self.fd(), type_, out.len() as u32)
                .map_err(on(&self.path, "VIDIOC_ENUM_FMT"))?
            else {
                break;
            };
            out.push((
                FourCc::from_u32(d.pixelformat),
                d.flags & raw::FMT_FLAG_COMPRESSED != 0,
            ));
        }
        Ok(out)
    }

    /// `VIDIOC_G_FMT` of queue `type_`.
    pub fn g_fmt(&self, type_: u32) -> Result<raw::Format, M2mError> {
        calls::g_fmt(self.fd(), type_).map_err(on(&self.path, "VIDIOC_G_FMT"))
    }

    /// `VIDIOC_S_FMT`: the driver's answer.
    pub fn s_fmt(&self, f: raw::Format) -> Result<raw::Format, M2mError> {
        calls::s_fmt(self.fd(), f).map_err(on(&self.path, "VIDIOC_S_FMT"))
    }

    /// `VIDIOC_STREAMON`/`STREAMOFF` of queue `type_`.
    pub fn stream(&self, type_: u32, on_: bool) -> Result<(), M2mError> {
        let name = if on_ {
            "VIDIOC_STREAMON"
        } else {
            "VIDIOC_STREAMOFF"
        };
        calls::stream(self.fd(), type_, on_).map_err(on(&self.path, name))
    }

    /// Subscribes to `type_`; a driver without the event is logged, not an error.
    pub fn subscribe(&self, type_: u32, name: &str) -> Result<bool, M2mError> {
        match calls::subscribe_event(self.fd(), type_) {
            Ok(()) => Ok(true),
            Err(e) if matches!(e.errno(), Errno::EINVAL | Errno::ENOTTY) => {
                log::debug!("{}: no {name} event ({})", self.path.display(), e.errno());
                Ok(false)
            }
            Err(e) => Err(M2mError::ioctl(
                &self.path,
                "VIDIOC_SUBSCRIBE_EVENT",
                e.errno(),
            )),
        }
    }

    /// The next pending event `(type, payload word)`, if any.
    pub fn dqevent(&self) -> Result<Option<(u32, u32)>, M2mError> {
        calls::dqevent(self.fd()).map_err(on(&self.path, "VIDIOC_DQEVENT"))
    }

    /// Sets integer control `id` (`S_EXT_CTRLS`, `S_CTRL` where the driver
    /// lacks the former); `false` with a log line when the driver has no such
    /// control or refuses the value.
    pub fn set_control(&self, id: u32, name: &str, value: i32) -> Result<bool, M2mError> {
        let r = calls::s_ext_ctrl(self.fd(), id, value).or_else(|e| {
            if e.errno() == Errno::ENOTTY {
                calls::s_ctrl(self.fd(), id, value)
            } else {
                Err(e)
            }
        });
        match r {
            Ok(()) => Ok(true),
            Err(e) if matches!(e.errno(), Errno::EINVAL | Errno::ENOTTY | Errno::ERANGE) => {
                log::info!(
                    "{}: {name} = {value} not set: the driver has no such control or refuses it ({}); ignored",
                    self.path.display(),
                    e.errno()
                );
                Ok(false)
            }
            Err(e) => Err(M2mError::ioctl(&self.path, "VIDIOC_S_EXT_CTRLS", e.errno())),
        }
    }

    /// Polls for done buffers on both queues and events until `deadline`.
    pub fn wait(&self, deadline: Instant) -> Result<Ready, M2mError> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let ms = i32::try_from(left.as_millis()).unwrap_or(i32::MAX);
            let wait = PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX);
            let mut fds = [PollFd::new(
                self.fd(),
                PollFlags::POLLIN | PollFlags::POLLOUT | PollFlags::POLLPRI,
            )];
            match poll(&mut fds, wait) {
                Ok(_) => {
                    let r = fds[0].revents().unwrap_or(PollFlags::empty());
                    return Ok(Ready {
                        capture: r.contains(PollFlags::POLLIN),
                        output: r.contains(PollFlags::POLLOUT),
                        event: r.contains(PollFlags::POLLPRI),
                        error: r.contains(PollFlags::POLLERR),
                    });
                }
                Err(Errno::EINTR) => continue,
                Err(errno) => return Err(M2mError::ioctl(&self.path, "poll", errno)),
            }
        }
    }
}

/// The default wait for one step of a codec (a buffer done, a drain).
pub(crate) const STEP_TIMEOUT: Duration = Duration::from_secs(5);
