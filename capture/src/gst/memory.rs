//! A GStreamer buffer's memory as a tensor, without a copy: a dma-buf is
//! imported through the source's [`ImportCache`] (once per pool buffer), a
//! system-memory buffer is wrapped read-only ([`Tensor::from_external`]).

use std::os::fd::{AsRawFd, BorrowedFd};
use std::path::Path;

use gstreamer as gst;
use gstreamer_allocators as gst_alloc;
use std::collections::HashMap;

use zerocam_cache::{DmaBufKey, ImportCache};
use zerocam_tensor::{dup_fd, ExternalMemory, FdIdentity, ImageLayout, Tensor};

use crate::frame::plane_memory::{PlaneMemory, PlaneSource};
use crate::frame::tensor::{frame_tensor_at, Composed};
use crate::{CaptureError, PlaneLayout, Result, StreamFormat};

/// A readable map of a GStreamer buffer.
pub(crate) struct MappedFrame(gst::MappedBuffer<gst::buffer::Readable>);

// SAFETY: the map holds a reference to the buffer and keeps its memory mapped
// at one address until it drops, so `bytes` is the same slice on every call.
// Nothing writes it meanwhile: GStreamer maps a buffer (or memory) writable
// only when the mapper holds the one reference, and this map holds one. The
// bytes are plain memory readable from any thread; `MappedBuffer` is
// `Send + Sync`.
unsafe impl ExternalMemory for MappedFrame {
    fn bytes(&self) -> &[u8] {
        self.0.as_slice()
    }
}

/// The frame of a system-memory `buffer`, laid out as `image`.
pub(crate) fn wrap_system(
    path: &Path,
    buffer: gst::Buffer,
    image: ImageLayout,
) -> Result<Tensor<u8>> {
    let map = buffer.into_mapped_buffer_readable().map_err(|_| {
        CaptureError::from(super::GstError::Element {
            element: "appsink".into(),
            message: "a buffer could not be mapped for reading".into(),
        })
    })?;
    let len = map.len();
    let tensor =
        Tensor::from_external(MappedFrame(map), &[len], None).and_then(|t| t.with_image(image));
    tensor.map_err(|source| tensor_error(path, source))
}

fn tensor_error(path: &Path, source: zerocam_tensor::Error) -> CaptureError {
    CaptureError::Tensor {
        path: path.to_path_buf(),
        source,
    }
}

/// The dma-buf behind `memory`, if it is one: its fd (borrowed for the
/// memory's life) and where the memory's bytes start in it.
pub(crate) fn dma_buf(memory: &gst::MemoryRef) -> Option<(BorrowedFd<'_>, usize, usize)> {
    let dma = memory.downcast_memory_ref::<gst_alloc::DmaBufMemory>()?;
    let raw = dma.fd();
    if raw < 0 {
        return None;
    }
    // SAFETY: a dma-buf memory owns its fd and keeps it open while the memory
    // lives; the borrow is tied to `memory`'s.
    let fd = unsafe { BorrowedFd::borrow_raw(raw) };
    Some((fd, memory.offset(), memory.maxsize()))
}

/// The frame of a one-memory dma-buf buffer through `cache`: the fd is
/// imported once (keyed on its inode and the memory's offset), later frames
/// of the same pool buffer are hits with `image` laid on.
pub(crate) fn import_dma_buf(
    path: &Path,
    cache: &mut ImportCache,
    fd: BorrowedFd<'_>,
    offset: usize,
    maxsize: usize,
    image: ImageLayout,
) -> Result<Tensor<u8>> {
    let file = FdIdentity::of(fd).map_err(|errno| super::GstError::Element {
        element: "dma-buf memory".into(),
        message: format!("fstat of its fd failed: {errno}"),
    })?;
    // Sizes GStreamer reports are checked like any a peer sends: an overflow
    // is a typed error, and the import checks the fd's real size.
    let too_big = || {
        tensor_error(
            path,
            zerocam_tensor::Error::ShapeOverflow {
                shape: vec![offset, maxsize],
                elem_size: 1,
            },
        )
    };
    let len = offset.checked_add(maxsize).ok_or_else(too_big)?;
    let start = image.start_offset.checked_add(offset).ok_or_else(too_big)?;
    let image = image.with_start_offset(start);
    let import = || Tensor::from_fd(dup_fd(fd)?, &[len], None);
    cache
        .get_image(DmaBufKey::new(file, offset), image, import)
        .map_err(|source| tensor_error(path, source))
}

/// The frame of a buffer whose two planes are two dma-buf memories (NV12M,
/// NV16M from a multi-planar driver): each memory imported once through
/// `cache`, the two composed into one image (`from_planes`), the composition
/// kept per luma buffer in `composed` so its identity is stable too.
/// `offsets` are the planes' offsets in the buffer (video meta), `stride`
/// their row stride.
#[allow(clippy::too_many_arguments)] // one frame's parts, each once
pub(crate) fn import_two_dma_bufs(
    path: &Path,
    cache: &mut ImportCache,
    composed: &mut HashMap<FdIdentity, Composed>,
    buffer: &gst::BufferRef,
    format: &StreamFormat,
    stride: u32,
    offsets: &[usize],
) -> Result<Tensor<u8>> {
    let mut planes = Vec::with_capacity(2);
    let mut starts = Vec::with_capacity(2);
    let mut buffer_at = 0; // where memory i starts in the buffer's bytes
    for i in 0..2 {
        let memory = buffer.peek_memory(i);
        let (fd, offset, maxsize) = dma_buf(memory).ok_or_else(|| not_dma_buf(i))?;
        let file = FdIdentity::of(fd).map_err(|errno| super::GstError::Element {
            element: "dma-buf memory".into(),
            message: format!("fstat of its fd failed: {errno}"),
        })?;
        let in_memory = offsets
            .get(i)
            .copied()
            .unwrap_or(0)
            .saturating_sub(buffer_at);
        let too_big = || {
            tensor_error(
                path,
                zerocam_tensor::Error::ShapeOverflow {
                    shape: vec![offset, maxsize],
                    elem_size: 1,
                },
            )
        };
        starts.push(offset.checked_add(in_memory).ok_or_else(too_big)?);
        buffer_at = buffer_at.saturating_add(memory.size());
        planes.push(PlaneMemory {
            // The buffer holds the memory (and its fd) for this call: the fd
            // is dup'd only on a cache miss.
            source: PlaneSource::Lent(fd.as_raw_fd()),
            file,
            length: offset.checked_add(maxsize).ok_or_else(too_big)?,
        });
    }
    let plane_format = StreamFormat {
        planes: planes
            .iter()
            .map(|p| PlaneLayout {
                bytes_per_line: stride,
                size: u32::try_from(p.length).unwrap_or(u32::MAX),
            })
            .collect(),
        ..format.clone()
    };
    let slot = composed.entry(planes[0].file).or_default();
    frame_tensor_at(cache, &plane_format, &planes, &starts, None, slot)
        .map_err(|source| tensor_error(path, source))
}

fn not_dma_buf(i: usize) -> CaptureError {
    super::GstError::Element {
        element: "appsink".into(),
        message: format!("memory {i} of a two-memory buffer is not a dma-buf"),
    }
    .into()
}
