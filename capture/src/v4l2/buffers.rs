//! Setting up a stream's buffers: the count ([`BufferPlan`]), `VIDIOC_REQBUFS`,
//! then exporting the driver's buffers (MMAP + EXPBUF) or allocating zerocam's
//! pool (DMABUF).

use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;

use zerocam_tensor::{FdIdentity, Tensor, TensorMemory};

use crate::frame::plane_memory::{PlaneMemory, PlaneSource};
use crate::frame::slot::Slot;
use crate::v4l2::ioctl::error::{IoctlError, ReqbufsError};
use crate::v4l2::ioctl::{calls, raw};
use crate::v4l2::plan::{DriverMinimum, CID_MIN_BUFFERS_FOR_CAPTURE};
use crate::v4l2::{BufferPlan, FormatProblem};
use crate::{BufferMode, CaptureError, Device, Result, StreamConfig, StreamFormat};

/// A stream's buffers, set up and not queued yet.
pub(crate) struct Buffers {
    pub format: StreamFormat,
    pub plan: BufferPlan,
    pub slots: Vec<Slot>,
}

/// Reads the device's format and minimum buffer count, requests the buffers
/// and exports or allocates each. On a failure after `VIDIOC_REQBUFS` the
/// buffers are freed again (`REQBUFS` 0), so the device can be used again.
pub(crate) fn set_up(device: &Device, config: &StreamConfig) -> Result<Buffers> {
    let driver = DriverMinimum::from_g_ctrl(
        calls::g_ctrl(device.fd(), CID_MIN_BUFFERS_FOR_CAPTURE).map_err(IoctlError::errno),
    );
    let plan = BufferPlan::new(config.buffers, config.hold, driver)?;
    let format = device.format()?;
    let buf_type = device.info().api.buf_type();
    let memory = config.mode.memory();
    let req =
        calls::reqbufs(device.fd(), buf_type, memory, plan.requested).map_err(|e| {
            match (config.mode, e) {
                (BufferMode::DmaBuf, ReqbufsError::Unsupported) => CaptureError::UnsupportedMode {
                    path: device.path().to_path_buf(),
                    mode: config.mode.name(),
                    reason: "the driver refuses V4L2_MEMORY_DMABUF".into(),
                },
                (_, e) => e
                    .ioctl_error()
                    .into_capture(device.path(), "VIDIOC_REQBUFS"),
            }
        })?;
    let made = make_slots(device, &format, config, plan, req.count);
    match made {
        Ok((plan, slots)) => Ok(Buffers {
            format,
            plan,
            slots,
        }),
        Err(e) => {
            // The slots made so far (their exported fds) are gone: the driver
            // frees the buffers. Nothing to add if even that fails: the next
            // REQBUFS on the device reports it.
            let _ = calls::reqbufs(device.fd(), buf_type, memory, 0);
            Err(e)
        }
    }
}

/// The slots of `granted` buffers, if the plan can run with that many.
fn make_slots(
    device: &Device,
    format: &StreamFormat,
    config: &StreamConfig,
    plan: BufferPlan,
    granted: u32,
) -> Result<(BufferPlan, Vec<Slot>)> {
    let plan = plan
        .granted(granted)
        .map_err(|plan| CaptureError::BufferGrant {
            path: device.path().to_path_buf(),
            plan,
        })?;
    let buf_type = device.info().api.buf_type();
    let slots = (0..granted)
        .map(|index| {
            let planes = match config.mode {
                BufferMode::Mmap => {
                    export_planes(device, format, buf_type, index, config.read_only)?
                }
                BufferMode::DmaBuf => allocate_planes(device, format, config, index)?,
            };
            Ok(Slot::new(planes))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((plan, slots))
}

/// `(st_dev, st_ino)` of an exported buffer, read once at set-up.
fn fd_identity(path: &Path, fd: BorrowedFd<'_>) -> Result<FdIdentity> {
    FdIdentity::of(fd).map_err(|errno| CaptureError::Ioctl {
        path: path.to_path_buf(),
        ioctl: "fstat of an exported buffer",
        errno,
    })
}

/// Exports each plane of driver buffer `index` once (`VIDIOC_QUERYBUF`,
/// `VIDIOC_EXPBUF`), `O_RDONLY` when `read_only`.
pub(crate) fn export_planes(
    device: &Device,
    format: &StreamFormat,
    buf_type: u32,
    index: u32,
    read_only: bool,
) -> Result<Vec<PlaneMemory>> {
    let lengths = calls::querybuf(device.fd(), buf_type, raw::MEMORY_MMAP, index)
        .map_err(device.ioctl_error("VIDIOC_QUERYBUF"))?;
    let buffer_planes = if buf_type == raw::BUF_TYPE_VIDEO_CAPTURE_MPLANE {
        format.planes.len()
    } else {
        1
    };
    lengths
        .into_iter()
        .take(buffer_planes)
        .zip(&format.planes)
        .enumerate()
        .map(|(p, (length, layout))| {
            if length < layout.size {
                return Err(CaptureError::BadFormat {
                    path: device.path().to_path_buf(),
                    fourcc: format.format.fourcc,
                    width: format.width,
                    height: format.height,
                    problem: FormatProblem::BufferTooSmall {
                        index,
                        plane: p,
                        length,
                        size: layout.size,
                    },
                });
            }
            let fd = calls::expbuf(device.fd(), buf_type, index, p as u32, read_only)
                .map_err(device.ioctl_error("VIDIOC_EXPBUF"))?;
            let file = fd_identity(device.path(), fd.as_fd())?;
            Ok(PlaneMemory {
                source: PlaneSource::Exported(fd),
                file,
                length: length as usize,
            })
        })
        .collect()
}

/// Allocates each plane of pool buffer `index` from the DMA heap.
pub(crate) fn allocate_planes(
    device: &Device,
    format: &StreamFormat,
    config: &StreamConfig,
    index: u32,
) -> Result<Vec<PlaneMemory>> {
    let unsupported = |reason: String| CaptureError::UnsupportedMode {
        path: device.path().to_path_buf(),
        mode: BufferMode::DmaBuf.name(),
        reason,
    };
    format
        .planes
        .iter()
        .enumerate()
        .map(|(p, layout)| {
            let name = format!("{}:{index}.{p}", device.path().display());
            let len = layout.size as usize;
            let built = if config.read_only {
                zerocam_tensor::allocate_read_only(len, config.dma_heap.as_deref())
                    .and_then(|fd| Tensor::<u8>::from_fd(fd, &[len], Some(&name)))
            } else {
                let mut b = Tensor::<u8>::builder(&[len])
                    .memory(TensorMemory::Dma)
                    .name(&name);
                if let Some(heap) = &config.dma_heap {
                    b = b.dma_heap(heap);
                }
                b.build()
            };
            let t = built.map_err(|e| match e {
                zerocam_tensor::Error::DmaUnavailable { .. }
                | zerocam_tensor::Error::UnknownHeap { .. } => unsupported(e.to_string()),
                source => CaptureError::Tensor {
                    path: device.path().to_path_buf(),
                    source,
                },
            })?;
            PlaneMemory::owned(t).ok_or_else(|| unsupported("the pool buffer has no fd".into()))
        })
        .collect()
}
