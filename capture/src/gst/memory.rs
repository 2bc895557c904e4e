//! A GStreamer buffer's memory as a tensor, without a copy: a dma-buf is
//! imported through the source's [`ImportCache`] (once per pool buffer), a
//! system-memory buffer is wrapped read-only ([`Tensor::from_external`]).
//! And the other way, a frame buffer's fd as a `GstMemory` that keeps a
//! value alive until GStreamer frees it ([`fd_memory`]).

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

/// What kind of file a frame buffer's fd is, for [`fd_memory`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FdMemoryKind {
    /// A dma-buf: the memory is a `GstDmaBufMemory` (`GstDmaBufAllocator`),
    /// which elements that import dma-bufs (`v4l2h264enc
    /// output-io-mode=dmabuf-import`, `vpuenc_h264`, NVMM converters) take
    /// without a copy, and whose CPU maps GStreamer brackets with
    /// `DMA_BUF_IOCTL_SYNC`. GStreamer does not check that the fd is one:
    /// the caller knows (a tensor's `TensorMemory::Dma`).
    DmaBuf,
    /// A memfd (or any other mappable file that is not a dma-buf): the
    /// memory is a plain `GstFdMemory` (`GstFdAllocator`, no flags), mapped
    /// by GStreamer with `mmap(MAP_SHARED)`. Dma-buf importers see it as
    /// not theirs and copy it, as they would system memory.
    Memfd,
}

/// The quark the value a memory keeps alive is attached under.
const KEEP_QUARK: &str = "zerocam-keep";

/// `fd` (a dma-buf as `GstDmaBufMemory`; see [`fd_memory`]) as a read-only
/// `GstMemory` over bytes `offset..offset + size` of its file, keeping
/// `keep` alive until GStreamer frees the memory.
///
/// # Errors
/// As [`fd_memory`].
pub fn dmabuf_memory<K: Send + 'static>(
    fd: std::os::fd::OwnedFd,
    offset: usize,
    size: usize,
    keep: K,
) -> std::result::Result<gst::Memory, super::GstError> {
    fd_memory(fd, FdMemoryKind::DmaBuf, offset, size, keep)
}

/// `fd` as a read-only `GstMemory` of `kind` over bytes
/// `offset..offset + size` of its file (the memory's `maxsize` is the whole
/// file, so an importer sees the buffer's real length), without a copy.
///
/// The memory owns `fd` (pass a `dup` of the frame buffer's fd): GStreamer
/// closes it, and unmaps what it mapped, when it frees the memory. `keep`
/// (a frame's lease) is attached to the memory itself (mini-object qdata)
/// and dropped exactly when GStreamer frees it: after the last buffer holding
/// it, a copy of that buffer (which shares the memory) or a sub-memory
/// `gst_memory_share` made (which holds its parent) is gone. A deep copy
/// (`gst_memory_copy`) is GStreamer's own bytes and does not hold it.
///
/// The memory is flagged `READONLY`: an element that would write into it
/// copies it first.
///
/// # Errors
/// [`GstError::Init`](super::GstError::Init) when GStreamer cannot start;
/// [`GstError::Element`](super::GstError::Element)
/// naming the allocator when the file's size is unknown, the range does
/// not fit in it, or the allocator refuses the fd. `keep` is dropped on
/// error (and `fd` closed).
pub fn fd_memory<K: Send + 'static>(
    fd: std::os::fd::OwnedFd,
    kind: FdMemoryKind,
    offset: usize,
    size: usize,
    keep: K,
) -> std::result::Result<gst::Memory, super::GstError> {
    use gst::glib::translate::IntoGlib;
    use gst_alloc::prelude::*;
    use std::os::fd::{FromRawFd, IntoRawFd, OwnedFd};

    gst::init().map_err(|e| super::GstError::Init {
        message: e.message().to_owned(),
    })?;
    let element = match kind {
        FdMemoryKind::DmaBuf => "GstDmaBufAllocator",
        FdMemoryKind::Memfd => "GstFdAllocator",
    };
    let refuse = |message: String| super::GstError::Element {
        element: element.into(),
        message,
    };
    let file = zerocam_tensor::capsule::file_size(&fd)
        .ok_or_else(|| refuse(format!("fd {} has no size (lseek failed)", fd.as_raw_fd())))?;
    let end = offset
        .checked_add(size)
        .filter(|&end| end <= file && size > 0);
    let (Some(_), Ok(start)) = (end, isize::try_from(offset)) else {
        return Err(refuse(format!(
            "bytes {offset}..+{size} do not fit in the {file}-byte file of fd {}",
            fd.as_raw_fd()
        )));
    };
    let raw = fd.into_raw_fd();
    let made = match kind {
        FdMemoryKind::DmaBuf => {
            // SAFETY: `raw` is an open fd this function owns (just taken out
            // of an `OwnedFd`); on success the memory owns it and closes it
            // when freed, and nothing here uses it after.
            unsafe { dmabuf_allocator().alloc_dmabuf(raw, file) }
        }
        FdMemoryKind::Memfd => {
            // SAFETY: as above; `NONE`: the memory closes the fd and maps it
            // shared.
            unsafe { fd_allocator().alloc_fd(raw, file, gst_alloc::FdMemoryFlags::NONE) }
        }
    };
    let mut memory = match made {
        Ok(m) => m,
        Err(e) => {
            // SAFETY: the allocator refused the fd (its argument checks
            // failed before it took it): it is still ours, closed here.
            drop(unsafe { OwnedFd::from_raw_fd(raw) });
            return Err(refuse(format!("fd {raw} of {file} bytes refused: {e}")));
        }
    };
    let mem = memory
        .get_mut()
        .map(|m| m.as_mut_ptr())
        .ok_or_else(|| refuse("a memory just made is not writable (shared)".into()))?;
    let quark = gst::glib::Quark::from_str(KEEP_QUARK).into_glib();
    let keep = Box::into_raw(Box::new(keep));
    // SAFETY: `mem` is the memory just made, of which this function holds
    // the only reference (`get_mut` succeeded), so nothing else reads its
    // fields meanwhile. `start + size <= maxsize` (checked above) is what
    // `gst_memory_resize` asks. The qdata takes ownership of the box:
    // `drop_boxed::<K>` frees it exactly once, when the memory is freed (or
    // if the quark were set again, which nothing does).
    unsafe {
        (*mem).mini_object.flags |= gst::ffi::GST_MEMORY_FLAG_READONLY;
        gst::ffi::gst_memory_resize(mem, start, size);
        gst::ffi::gst_mini_object_set_qdata(
            mem.cast::<gst::ffi::GstMiniObject>(),
            quark,
            keep.cast(),
            Some(drop_boxed::<K>),
        );
    }
    log::trace!(
        "{element}: memory over bytes {offset}..{} of a {file}-byte file",
        offset + size
    );
    Ok(memory)
}

/// The one dma-buf allocator every memory is made with (made once, not per
/// frame).
fn dmabuf_allocator() -> &'static gst_alloc::DmaBufAllocator {
    static ALLOCATOR: std::sync::OnceLock<gst_alloc::DmaBufAllocator> = std::sync::OnceLock::new();
    ALLOCATOR.get_or_init(gst_alloc::DmaBufAllocator::new)
}

/// The one fd allocator every memfd memory is made with.
fn fd_allocator() -> &'static gst_alloc::FdAllocator {
    static ALLOCATOR: std::sync::OnceLock<gst_alloc::FdAllocator> = std::sync::OnceLock::new();
    ALLOCATOR.get_or_init(gst_alloc::FdAllocator::new)
}

/// The destroy notify of [`fd_memory`]'s qdata: drops the boxed `K`.
unsafe extern "C" fn drop_boxed<K>(data: gst::glib::ffi::gpointer) {
    // SAFETY: `data` is the `Box<K>` `fd_memory` leaked into the qdata;
    // GStreamer calls this once, when the memory is freed.
    drop(unsafe { Box::from_raw(data.cast::<K>()) });
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests may panic

    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use gst_alloc::{DmaBufMemory, FdMemory};
    use zerocam_tensor::{FdIdentity, Tensor, TensorMemory};

    use super::*;

    /// Counts its drops.
    struct Keep(Arc<AtomicUsize>);

    impl Drop for Keep {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn memfd(len: usize) -> Tensor<u8> {
        let t = Tensor::<u8>::new(&[len], Some(TensorMemory::Shm), None).unwrap();
        {
            let mut map = t.map_write().unwrap();
            for (i, b) in map.iter_mut().enumerate() {
                *b = i as u8;
            }
        }
        t
    }

    #[test]
    fn the_keep_lives_as_long_as_the_memory_and_its_copies() {
        let t = memfd(8192);
        let dropped = Arc::new(AtomicUsize::new(0));
        let fd = t.clone_fd().unwrap();
        let memory = fd_memory(
            fd,
            FdMemoryKind::Memfd,
            100,
            5000,
            Keep(Arc::clone(&dropped)),
        )
        .unwrap();
        assert!(memory.is_memory_type::<FdMemory>());
        assert!(!memory.is_memory_type::<DmaBufMemory>());
        assert_eq!(
            (memory.offset(), memory.size(), memory.maxsize()),
            (100, 5000, 8192)
        );
        assert!(memory.flags().contains(gst::MemoryFlags::READONLY));
        let fd = memory.downcast_memory_ref::<FdMemory>().unwrap().fd();
        // SAFETY: the memory owns the fd and outlives this borrow.
        let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
        assert_eq!(
            FdIdentity::of(borrowed).ok(),
            t.fd_identity(),
            "the same file"
        );
        {
            let map = memory.map_readable().unwrap();
            assert_eq!((map[0], map[4999]), (100, (5099 % 256) as u8));
        }
        let mut buffer = gst::Buffer::new();
        buffer.get_mut().unwrap().append_memory(memory);
        let copy = buffer.copy();
        let part = buffer
            .copy_region(gst::BufferCopyFlags::MEMORY, 10..20)
            .unwrap();
        drop(buffer);
        assert_eq!(dropped.load(Ordering::SeqCst), 0, "a copy holds the memory");
        drop(copy);
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            0,
            "a sub-memory holds its parent"
        );
        assert_eq!(part.map_readable().unwrap()[0], 110);
        drop(part);
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            1,
            "dropped once, with the memory"
        );
    }

    #[test]
    fn a_dma_buf_kind_is_dma_buf_memory() {
        // The allocator does not look at the file: a memfd stands in for a
        // dma-buf here (the lab test feeds vivid's real ones).
        let t = memfd(4096);
        let dropped = Arc::new(AtomicUsize::new(0));
        let memory =
            dmabuf_memory(t.clone_fd().unwrap(), 0, 4096, Keep(Arc::clone(&dropped))).unwrap();
        assert!(memory.is_memory_type::<DmaBufMemory>());
        assert!(memory.downcast_memory_ref::<DmaBufMemory>().unwrap().fd() >= 0);
        drop(memory);
        assert_eq!(dropped.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_range_past_the_file_is_refused_and_the_keep_dropped() {
        let t = memfd(4096);
        let dropped = Arc::new(AtomicUsize::new(0));
        for (offset, size) in [(0, 4097), (4000, 97), (usize::MAX, 2), (0, 0)] {
            let fd = t.clone_fd().unwrap();
            let keep = Keep(Arc::clone(&dropped));
            let err = fd_memory(fd, FdMemoryKind::Memfd, offset, size, keep).unwrap_err();
            assert!(
                matches!(&err, super::super::GstError::Element { element, .. } if element == "GstFdAllocator"),
                "{err}"
            );
        }
        assert_eq!(dropped.load(Ordering::SeqCst), 4);
    }
}
