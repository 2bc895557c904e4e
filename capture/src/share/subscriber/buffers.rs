//! The publisher's buffers as a subscriber holds them: one [`Slot`] per
//! buffer index whose fds came, each plane's fd checked and mapped once
//! (`Tensor::from_peer_fd`'s checks: a dma-buf or a sealed shmem memfd, told
//! apart before any call into the file's filesystem; only the span the
//! message gives is mapped, within the connection's caps), and every frame's
//! placement checked against them before a tensor is laid on.

use std::os::fd::{AsFd, OwnedFd};

use zerocam_cache::ImportCache;
use zerocam_tensor::{FdIdentity, Tensor};

use super::error::BufferProblem;
use crate::frame::plane_memory::{PlaneMemory, PlaneSource};
use crate::frame::slot::Slot;
use crate::share::socket::ReceivedFds;
use crate::share::wire::FrameMessage;
use crate::StreamFormat;

/// A problem with buffer plane `.0`.
pub(super) type PlaneError = (usize, BufferProblem);

/// The buffers of one connection, and the planes of the connection before it
/// (the same files come again on a reconnect: they are taken back rather
/// than mapped anew).
#[derive(Debug, Default)]
pub(super) struct Buffers {
    slots: Vec<Option<Slot>>,
    known: Vec<Tensor<u8>>,
    /// Bytes the connection's buffers map.
    mapped: u64,
}

/// The caps on what a connection maps.
#[derive(Debug, Clone, Copy)]
pub(super) struct Caps {
    /// The most bytes one buffer's planes span.
    pub frame: usize,
    /// The most bytes all the connection's buffers map.
    pub mapped: usize,
}

impl Buffers {
    /// A new connection with `count` buffers: the current planes become the
    /// known ones.
    pub fn restart(&mut self, count: usize) {
        let old = std::mem::take(&mut self.slots);
        self.known = old
            .into_iter()
            .flatten()
            .flat_map(|slot| slot.planes)
            .filter_map(|p| match p.source {
                PlaneSource::Owned(t) => Some(*t),
                PlaneSource::Exported(_) | PlaneSource::Lent(_) => None,
            })
            .collect();
        self.slots.resize_with(count, || None);
        self.mapped = 0;
    }

    /// The publisher's buffer count.
    pub fn count(&self) -> usize {
        self.slots.len()
    }

    /// The tensor of frame `f` in `format` through `cache`, after checking the
    /// message against its buffer; `fds` are the buffer's planes when the
    /// message carries them.
    pub fn frame_tensor(
        &mut self,
        cache: &mut ImportCache,
        format: &StreamFormat,
        f: &FrameMessage,
        fds: ReceivedFds,
        caps: Caps,
    ) -> Result<Tensor<u8>, PlaneError> {
        let buffers = self.slots.len();
        let slot = self.slots.get_mut(f.buffer as usize).ok_or((
            0,
            BufferProblem::IndexOutOfRange {
                buffers: buffers as u16,
            },
        ))?;
        let planes = f.spans().len();
        if f.carries_fds {
            if slot.is_some() {
                return Err((0, BufferProblem::FdsTwice));
            }
            if fds.len() != planes {
                let (expected, found) = (planes, fds.len());
                return Err((0, BufferProblem::FdCount { expected, found }));
            }
            // Before any fd is looked at: the bytes the buffer would map.
            let bytes = f
                .spans()
                .iter()
                .fold(0u64, |sum, s| sum.saturating_add(s.length));
            if bytes > caps.frame as u64 {
                let max = caps.frame;
                return Err((0, BufferProblem::FrameTooLarge { bytes, max }));
            }
            let total = self.mapped.saturating_add(bytes);
            if total > caps.mapped as u64 {
                let max = caps.mapped;
                return Err((0, BufferProblem::MappedTooMuch { bytes, total, max }));
            }
            let mut memory = Vec::with_capacity(planes);
            for (i, (fd, span)) in fds.into_iter().zip(f.spans()).enumerate() {
                let length = usize::try_from(span.length)
                    .ok()
                    .filter(|&l| l > 0 && l <= isize::MAX as usize)
                    .ok_or((
                        i,
                        BufferProblem::BadLength {
                            length: span.length,
                        },
                    ))?;
                memory.push(known_or_import(&mut self.known, fd, length).map_err(|p| (i, p))?);
            }
            *slot = Some(Slot::new(memory));
            self.mapped = total;
        } else if !fds.is_empty() {
            let found = fds.len();
            return Err((0, BufferProblem::FdCount { expected: 0, found }));
        }
        let slot = slot.as_mut().ok_or((0, BufferProblem::NoFds))?;
        let mut offsets = [0; crate::share::wire::MAX_PLANES];
        for (i, ((span, memory), layout)) in f
            .spans()
            .iter()
            .zip(&slot.planes)
            .zip(&format.planes)
            .enumerate()
        {
            if span.length != memory.length as u64 {
                let (length, was) = (span.length, memory.length);
                return Err((i, BufferProblem::LengthChanged { length, was }));
            }
            let end = u64::from(span.offset) + u64::from(layout.size);
            if end > span.length {
                let (offset, size, length) = (span.offset, layout.size, memory.length);
                return Err((
                    i,
                    BufferProblem::PlaneOutside {
                        offset,
                        size,
                        length,
                    },
                ));
            }
            offsets[i] = span.offset as usize;
        }
        let chroma = f.chroma_offset.map(|o| o as usize);
        slot.tensor(cache, format, &offsets[..planes], chroma)
            .map_err(|e| (0, e.into()))
    }
}

/// The plane of `fd`, `length` bytes: a `known` plane of the same file and
/// length (taken out of it), or `fd`'s first `length` bytes imported
/// (`Tensor::from_peer_fd`: a dma-buf or a sealed shmem memfd, known before
/// anything runs the file's filesystem code, and only the span mapped).
fn known_or_import(
    known: &mut Vec<Tensor<u8>>,
    fd: OwnedFd,
    length: usize,
) -> Result<PlaneMemory, BufferProblem> {
    // First the kind (no call into the file's filesystem): `fstat` on a FUSE
    // file whose server never answers would never return.
    zerocam_tensor::check_peer_fd(fd.as_fd())?;
    let file = FdIdentity::of(fd.as_fd()).map_err(BufferProblem::Fstat)?;
    let same = known
        .iter()
        .position(|t| t.fd_identity() == Some(file) && t.len() == length);
    let tensor = match same {
        Some(i) => known.swap_remove(i), // `fd` closes: the same file
        None => Tensor::from_peer_fd(fd, &[length], None)?,
    };
    PlaneMemory::owned(tensor).ok_or(BufferProblem::Tensor(zerocam_tensor::Error::NoFd {
        memory: zerocam_tensor::TensorMemory::Shm,
    }))
}
