//! Setting up a stream's buffers: exporting the driver's (MMAP + EXPBUF) or
//! allocating zerocam's pool (DMABUF).

use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;

use zerocam_tensor::{FdIdentity, Tensor, TensorMemory};

use crate::planes::{PlaneMemory, PlaneSource};
use crate::v4l2::{ioctl, raw};
use crate::{BufferMode, CaptureError, Device, Result, StreamConfig, StreamFormat};

/// `(st_dev, st_ino)` of an exported buffer, read once at set-up.
fn fd_identity(path: &Path, fd: BorrowedFd<'_>) -> Result<FdIdentity> {
    FdIdentity::of(fd).map_err(|errno| CaptureError::Ioctl {
        path: path.to_path_buf(),
        ioctl: "fstat of an exported buffer",
        errno,
    })
}

/// Exports each plane of driver buffer `index` once (`VIDIOC_QUERYBUF`, `VIDIOC_EXPBUF`).
pub(crate) fn export_planes(
    device: &Device,
    format: &StreamFormat,
    buf_type: u32,
    index: u32,
) -> Result<Vec<PlaneMemory>> {
    let mut planes = [raw::Plane::default(); raw::MAX_PLANES];
    let b = ioctl::querybuf(device.fd(), buf_type, raw::MEMORY_MMAP, index, &mut planes)
        .map_err(device.ioctl_error("VIDIOC_QUERYBUF"))?;
    let lengths: Vec<usize> = if buf_type == raw::BUF_TYPE_VIDEO_CAPTURE_MPLANE {
        planes[..format.planes.len()]
            .iter()
            .map(|p| p.length as usize)
            .collect()
    } else {
        vec![b.length as usize]
    };
    lengths
        .into_iter()
        .enumerate()
        .map(|(p, length)| {
            let fd = ioctl::expbuf(device.fd(), buf_type, index, p as u32)
                .map_err(device.ioctl_error("VIDIOC_EXPBUF"))?;
            let file = fd_identity(device.path(), fd.as_fd())?;
            Ok(PlaneMemory {
                source: PlaneSource::Exported(fd),
                file,
                length,
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
            let mut b = Tensor::<u8>::builder(&[layout.size as usize])
                .memory(TensorMemory::Dma)
                .name(&format!("{}:{index}.{p}", device.path().display()));
            if let Some(heap) = &config.dma_heap {
                b = b.dma_heap(heap);
            }
            let t = b.build().map_err(|e| match e {
                zerocam_tensor::Error::DmaUnavailable { .. }
                | zerocam_tensor::Error::UnknownHeap { .. } => unsupported(e.to_string()),
                source => CaptureError::Tensor {
                    path: device.path().to_path_buf(),
                    source,
                },
            })?;
            let file = t
                .fd_identity()
                .ok_or_else(|| unsupported("the pool buffer has no fd".into()))?;
            Ok(PlaneMemory {
                source: PlaneSource::Owned(Box::new(t)),
                file,
                length: layout.size as usize,
            })
        })
        .collect()
}
