//! The ioctls a memory-to-memory codec adds: queueing an OUTPUT buffer with
//! its payload and timestamp, encoder commands, events and extended controls.

use std::os::fd::{AsRawFd, BorrowedFd};
use std::time::Duration;

use nix::errno::Errno;

use super::super::error::{IoctlError, QbufError};
use super::super::raw;
use super::super::QbufPlanes;
use super::attach_planes;

/// [`VIDIOC_QBUF`](https://docs.kernel.org/userspace-api/media/v4l/vidioc-qbuf.html)
/// of buffer `index` of a codec queue: like [`qbuf`](super::qbuf), plus the
/// bytes used per plane (`bytes_used`, one per memory plane; what an OUTPUT
/// buffer carries) and the `timestamp` the driver copies to the CAPTURE
/// buffer made from it. Each `bytes_used` must fit its plane's length
/// ([`QbufError::BadPlanes`] when more planes are given than the queue takes).
#[doc(alias = "VIDIOC_QBUF")]
pub fn qbuf_payload(
    fd: BorrowedFd<'_>,
    type_: u32,
    index: u32,
    handles: QbufPlanes<'_>,
    bytes_used: &[u32],
    timestamp: Duration,
) -> Result<(), QbufError> {
    let multi = raw::is_mplane(type_);
    let max = if multi { raw::MAX_PLANES } else { 1 };
    let given = match handles {
        QbufPlanes::Mmap => bytes_used.len(),
        QbufPlanes::DmaBuf(planes) => planes.len(),
    };
    if given == 0 || given > max || bytes_used.len() != given {
        return Err(QbufError::BadPlanes { planes: given, max });
    }
    let mut planes = [raw::Plane::default(); raw::MAX_PLANES];
    let memory = match handles {
        QbufPlanes::Mmap => raw::MEMORY_MMAP,
        QbufPlanes::DmaBuf(_) => raw::MEMORY_DMABUF,
    };
    let mut b = raw::Buffer::new(type_, memory, index);
    b.timestamp = raw::Timeval {
        tv_sec: i64::try_from(timestamp.as_secs()).unwrap_or(i64::MAX),
        tv_usec: i64::from(timestamp.subsec_micros()),
    };
    if multi {
        for (p, used) in planes.iter_mut().zip(bytes_used) {
            p.bytesused = *used;
        }
        if let QbufPlanes::DmaBuf(given) = handles {
            for (p, h) in planes.iter_mut().zip(given) {
                p.m.fd = h.fd.as_raw_fd();
                p.length = h.length;
            }
        }
        attach_planes(&mut b, &mut planes);
        b.length = given as u32;
    } else {
        b.bytesused = bytes_used[0];
        if let QbufPlanes::DmaBuf(given) = handles {
            b.m.fd = given[0].fd.as_raw_fd();
            b.length = given[0].length;
        }
    }
    call!(raw::vidioc_qbuf, fd, &mut b)?;
    Ok(())
}

/// [`VIDIOC_ENCODER_CMD`](https://docs.kernel.org/userspace-api/media/v4l/vidioc-encoder-cmd.html):
/// `V4L2_ENC_CMD_STOP` (drain) or `V4L2_ENC_CMD_START` (resume after a drain).
#[doc(alias = "VIDIOC_ENCODER_CMD")]
pub fn encoder_cmd(fd: BorrowedFd<'_>, cmd: u32) -> Result<(), IoctlError> {
    let mut c = raw::EncoderCmd {
        cmd,
        ..Default::default()
    };
    call!(raw::vidioc_encoder_cmd, fd, &mut c)?;
    Ok(())
}

/// [`VIDIOC_SUBSCRIBE_EVENT`](https://docs.kernel.org/userspace-api/media/v4l/vidioc-subscribe-event.html)
/// of event `type_` (`V4L2_EVENT_EOS`, `V4L2_EVENT_SOURCE_CHANGE`).
#[doc(alias = "VIDIOC_SUBSCRIBE_EVENT")]
pub fn subscribe_event(fd: BorrowedFd<'_>, type_: u32) -> Result<(), IoctlError> {
    let s = raw::EventSubscription {
        type_,
        ..Default::default()
    };
    call!(raw::vidioc_subscribe_event, fd, &s)?;
    Ok(())
}

/// [`VIDIOC_DQEVENT`](https://docs.kernel.org/userspace-api/media/v4l/vidioc-dqevent.html):
/// the next pending event's type and its first payload word (the changes
/// of a source change); `None` when none is pending (`ENOENT`).
#[doc(alias = "VIDIOC_DQEVENT")]
pub fn dqevent(fd: BorrowedFd<'_>) -> Result<Option<(u32, u32)>, IoctlError> {
    let mut e = raw::Event::default();
    match call!(raw::vidioc_dqevent, fd, &mut e) {
        Ok(()) => Ok(Some((e.type_, (e.u[0] & 0xffff_ffff) as u32))),
        Err(Errno::ENOENT) => Ok(None),
        Err(errno) => Err(errno.into()),
    }
}

/// [`VIDIOC_S_EXT_CTRLS`](https://docs.kernel.org/userspace-api/media/v4l/vidioc-g-ext-ctrls.html)
/// of one integer control `id` to `value` (its current value).
#[doc(alias = "VIDIOC_S_EXT_CTRLS")]
pub fn s_ext_ctrl(fd: BorrowedFd<'_>, id: u32, value: i32) -> Result<(), IoctlError> {
    let mut c = raw::ExtControl {
        id,
        value64: i64::from(value),
        ..Default::default()
    };
    let mut cs = raw::ExtControls {
        which: raw::CTRL_WHICH_CUR_VAL,
        count: 1,
        error_idx: 0,
        request_fd: 0,
        reserved: 0,
        controls: &mut c,
    };
    call!(raw::vidioc_s_ext_ctrls, fd, &mut cs)?;
    Ok(())
}

/// [`VIDIOC_S_SELECTION`](https://docs.kernel.org/userspace-api/media/v4l/vidioc-g-selection.html)
/// of the crop rectangle `(0, 0, width, height)` of queue `type_` (given
/// single-planar: the core maps the multi-planar types to them): the
/// rectangle the driver set.
#[doc(alias = "VIDIOC_S_SELECTION")]
pub fn s_crop(
    fd: BorrowedFd<'_>,
    type_: u32,
    width: u32,
    height: u32,
) -> Result<(u32, u32), IoctlError> {
    let type_ = match type_ {
        raw::BUF_TYPE_VIDEO_OUTPUT_MPLANE => raw::BUF_TYPE_VIDEO_OUTPUT,
        raw::BUF_TYPE_VIDEO_CAPTURE_MPLANE => raw::BUF_TYPE_VIDEO_CAPTURE,
        t => t,
    };
    let mut s = raw::Selection {
        type_,
        target: raw::SEL_TGT_CROP,
        r: raw::Rect {
            left: 0,
            top: 0,
            width,
            height,
        },
        ..Default::default()
    };
    call!(raw::vidioc_s_selection, fd, &mut s)?;
    Ok((s.r.width, s.r.height))
}
