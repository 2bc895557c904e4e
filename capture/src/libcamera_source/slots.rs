//! A libcamera source's buffers as the source sees them: each a
//! [`crate::frame::slot::Slot`] (memory planes, state, the camera's borrows while
//! queued) with where libcamera's planes lie in it, and the import cache that
//! turns a buffer into a frame tensor.

use zerocam_cache::{CacheStats, ImportCache};
use zerocam_tensor::Tensor;

use super::events::{BufferPlanes, CamKey};
use super::layout::BufferLayout;
use super::metadata::MetadataFixer;
use crate::frame::plane_memory::{PlaneMemory, PlaneSource};
use crate::frame::stats::Counters;
use crate::frame::Placement;
use crate::StreamFormat;

/// One buffer.
#[derive(Debug)]
pub(crate) struct Slot {
    /// The buffer's slot: one memory plane per distinct dma-buf (one for
    /// libcamera's usual NV12), and its state.
    pub core: crate::frame::slot::Slot,
    pub layout: BufferLayout,
    /// The sum of libcamera's plane lengths (`bytes_used` when it reports none).
    pub length: usize,
}

impl Slot {
    /// The buffer's memory planes: one per dma-buf the layout uses, each a
    /// dup of libcamera's fd kept for the stream's life; `Idle`.
    pub fn new(buffer: BufferPlanes) -> Slot {
        let BufferPlanes {
            fds,
            planes,
            layout,
        } = buffer;
        let length = planes.iter().map(|p| p.length).sum();
        let mut fds: Vec<Option<_>> = fds.into_iter().map(Some).collect();
        let mut memory = |index: usize, extent: usize| {
            let fd = fds.get_mut(index).and_then(Option::take)?;
            Some(PlaneMemory {
                source: PlaneSource::Exported(fd),
                file: planes.get(index)?.file,
                length: extent,
            })
        };
        let memory_planes: Vec<PlaneMemory> = match layout {
            BufferLayout::OneFile { plane, extent, .. } => {
                memory(plane, extent).into_iter().collect()
            }
            BufferLayout::TwoFiles { planes } => planes
                .iter()
                .filter_map(|&(index, _, end)| memory(index, end))
                .collect(),
        };
        Slot {
            core: crate::frame::slot::Slot::new(memory_planes),
            layout,
            length,
        }
    }
}

/// The mutable part of a source.
#[derive(Debug)]
pub(crate) struct State {
    pub key: CamKey,
    pub slots: Vec<Slot>,
    pub cache: ImportCache,
    /// The counters of the caches replaced by a reconfigure.
    pub carried: CacheStats,
    pub fixer: MetadataFixer,
    pub streaming: bool,
    /// False once the camera is closed (a failed reconfigure).
    pub open: bool,
    /// libcamera said the camera went away.
    pub disconnected: bool,
    pub counters: Counters,
}

impl State {
    /// The state of freshly configured camera `key`, started with every
    /// request of `buffers` queued: each buffer is borrowed by the camera
    /// from here on.
    ///
    /// # Errors
    /// A borrow that fails (a CPU map of a buffer just allocated: cannot
    /// happen, as no tensor of it exists yet).
    pub fn new(
        key: CamKey,
        buffers: Vec<BufferPlanes>,
        cache: ImportCache,
    ) -> zerocam_tensor::Result<State> {
        let mut slots: Vec<Slot> = buffers.into_iter().map(Slot::new).collect();
        for s in &mut slots {
            s.core.lend()?;
        }
        Ok(State {
            key,
            slots,
            cache,
            carried: CacheStats::default(),
            fixer: MetadataFixer::default(),
            streaming: true,
            open: true,
            disconnected: false,
            counters: Counters::default(),
        })
    }

    /// A reconfigured camera's state goes on counting from `old`'s: frames,
    /// drops, errors and the import counters.
    pub fn go_on_from(&mut self, old: &State) {
        self.carried = old.cache_stats();
        self.counters = old.counters;
    }

    /// The import counters since open, across reconfigures (`live`: now).
    pub fn cache_stats(&self) -> CacheStats {
        let now = self.cache.stats();
        let c = &self.carried;
        CacheStats {
            hits: now.hits + c.hits,
            misses: now.misses + c.misses,
            evictions: now.evictions + c.evictions,
            invalidated: now.invalidated + c.invalidated,
            live: now.live,
        }
    }

    /// Frames out.
    pub fn held(&self) -> usize {
        self.slots.iter().filter(|s| s.core.is_held()).count()
    }

    /// The frame tensor of buffer `index` in `format`, through the cache, and
    /// where it lies in the buffer.
    pub fn tensor(
        &mut self,
        format: &StreamFormat,
        index: usize,
    ) -> zerocam_tensor::Result<(Tensor<u8>, Placement)> {
        let State { slots, cache, .. } = self;
        let slot = slots.get_mut(index).ok_or(zerocam_tensor::Error::NoFd {
            memory: zerocam_tensor::TensorMemory::Dma,
        })?;
        let (offsets, chroma_offset) = match slot.layout {
            BufferLayout::OneFile {
                start,
                plane_offset,
                ..
            } => ([start, 0], plane_offset),
            BufferLayout::TwoFiles { planes } => ([planes[0].1, planes[1].1], None),
        };
        let t = slot.core.tensor(cache, format, &offsets, chroma_offset)?;
        Ok((t, Placement::new(&offsets, chroma_offset)))
    }
}
