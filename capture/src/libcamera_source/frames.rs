//! The source's side of a libcamera stream: its buffers as memory planes, the
//! import cache, the counters, and turning a completion into a [`Frame`].

use std::path::PathBuf;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use zerocam_cache::{DmaBufKey, ImportCache};
use zerocam_tensor::{ImageLayout, Tensor};

use super::layout::BufferLayout;
use super::metadata::{MetadataFixer, RawMetadata};
use super::setup::{BufferPlanes, Configured};
use super::worker::{CamKey, Cmd, Completion};
use crate::frame::Requeue;
use crate::planes::{frame_tensor, Composed, PlaneMemory, PlaneSource};
use crate::{CaptureError, Frame, Result, StreamFormat};

/// One buffer, as the source sees it.
#[derive(Debug)]
pub(crate) struct Slot {
    /// One memory plane per distinct dma-buf (one for libcamera's usual NV12).
    planes: Vec<PlaneMemory>,
    layout: BufferLayout,
    /// libcamera's plane lengths (for `bytes_used` when it reports none).
    lengths: Vec<usize>,
    pub held: bool,
    composed: Composed,
}

impl Slot {
    /// The buffer's memory planes: one per dma-buf the layout uses, each a
    /// dup of libcamera's fd kept for the stream's life.
    pub fn new(buffer: BufferPlanes) -> Slot {
        let BufferPlanes {
            fds,
            planes,
            layout,
        } = buffer;
        let lengths = planes.iter().map(|p| p.length).collect();
        let mut fds: Vec<Option<_>> = fds.into_iter().map(Some).collect();
        let mut memory = |index: usize, extent: usize| {
            let fd = fds.get_mut(index).and_then(Option::take)?;
            Some(PlaneMemory {
                source: PlaneSource::Exported(fd),
                file: planes.get(index)?.file,
                length: extent,
            })
        };
        let memory_planes = match layout {
            BufferLayout::OneFile { plane, extent, .. } => {
                memory(plane, extent).into_iter().collect()
            }
            BufferLayout::TwoFiles { planes } => planes
                .iter()
                .filter_map(|&(index, _, end)| memory(index, end))
                .collect(),
        };
        Slot {
            planes: memory_planes,
            layout,
            lengths,
            held: false,
            composed: Composed::default(),
        }
    }
}

/// The mutable part of a source.
#[derive(Debug)]
pub(crate) struct State {
    pub key: CamKey,
    pub slots: Vec<Slot>,
    pub cache: ImportCache,
    pub format: StreamFormat,
    pub stride: usize,
    pub fixer: MetadataFixer,
    pub streaming: bool,
    /// False once the camera is closed (a failed reconfigure).
    pub open: bool,
    pub frames: u64,
    pub dropped: u64,
    pub errors: u64,
}

impl State {
    /// The state of a freshly configured (and started) camera.
    pub fn new(configured: Configured, cache: ImportCache) -> State {
        let Configured {
            key,
            format,
            stride,
            buffers,
            ..
        } = configured;
        State {
            key,
            slots: buffers.into_iter().map(Slot::new).collect(),
            cache,
            format,
            stride,
            fixer: MetadataFixer::default(),
            streaming: true,
            open: true,
            frames: 0,
            dropped: 0,
            errors: 0,
        }
    }

    /// The frame tensor of buffer `index`, through the cache.
    fn tensor(&mut self, index: usize) -> zerocam_tensor::Result<Tensor<u8>> {
        let State {
            slots,
            cache,
            format,
            stride,
            ..
        } = self;
        let Some(slot) = slots.get_mut(index) else {
            return Err(zerocam_tensor::Error::NoFd {
                memory: zerocam_tensor::TensorMemory::Dma,
            });
        };
        match slot.layout {
            BufferLayout::OneFile {
                start,
                plane_offset,
                ..
            } => {
                let pixel = format.format.pixel;
                let (w, h) = (format.width as usize, format.height as usize);
                let mut layout = ImageLayout::new(w, h, pixel)
                    .with_row_stride((*stride).max(pixel.plane_row_samples(0, w)))
                    .with_start_offset(start);
                if let Some(offset) = plane_offset {
                    layout = layout.with_plane_offset(offset);
                }
                let Some(p) = slot.planes.first() else {
                    return Err(zerocam_tensor::Error::NoFd {
                        memory: zerocam_tensor::TensorMemory::Dma,
                    });
                };
                cache.get_or_import(DmaBufKey::new(p.file, start), || {
                    p.import()?.with_image(layout)
                })
            }
            BufferLayout::TwoFiles { planes } => frame_tensor(
                cache,
                format,
                &slot.planes,
                &[planes[0].1, planes[1].1],
                &mut slot.composed,
            ),
        }
    }
}

/// What frames share with their source: the state, and the way to the
/// libcamera thread to queue their request again.
#[derive(Debug)]
pub(crate) struct Shared {
    pub name: PathBuf,
    pub worker: Sender<Cmd>,
    state: Mutex<State>,
}

impl Shared {
    pub fn new(name: PathBuf, worker: Sender<Cmd>, state: State) -> Shared {
        Shared {
            name,
            worker,
            state: Mutex::new(state),
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn camera(&self) -> String {
        self.name.display().to_string()
    }

    /// Hands buffer `index` back to the libcamera thread without a frame.
    pub fn give_back(&self, st: &mut State, index: usize) {
        if let Some(s) = st.slots.get_mut(index) {
            s.held = false;
        }
        let _ = self.worker.send(Cmd::Requeue(st.key, index));
    }

    /// The frame of completion `c`, or the error it carries.
    pub fn frame(self: &Arc<Self>, c: Completion, woke: Instant) -> Result<Frame> {
        let mut st = self.lock();
        let index = c.index;
        let raw: RawMetadata = match c.outcome {
            super::worker::Outcome::Frame(raw) => raw,
            super::worker::Outcome::Failed(why) => {
                st.errors += 1;
                self.give_back(&mut st, index);
                return Err(CaptureError::RequestFailed {
                    camera: self.camera(),
                    index,
                    status: why.to_owned(),
                });
            }
            super::worker::Outcome::QueueFailed(errno) => {
                st.errors += 1;
                return Err(CaptureError::RequestFailed {
                    camera: self.camera(),
                    index,
                    status: format!("queueing the request again failed: {errno}"),
                });
            }
        };
        let tensor = match st.tensor(index) {
            Ok(t) => t,
            Err(source) => {
                self.give_back(&mut st, index);
                return Err(CaptureError::Tensor {
                    path: self.name.clone(),
                    source,
                });
            }
        };
        let lengths = st
            .slots
            .get(index)
            .map(|s| s.lengths.clone())
            .unwrap_or_default();
        let meta = st.fixer.fix(&raw, &lengths, c.completed);
        st.dropped += meta.dropped;
        st.frames += 1;
        if let Some(s) = st.slots.get_mut(index) {
            s.held = true;
        }
        drop(st);
        Ok(Frame {
            tensor,
            sequence: meta.sequence,
            timestamp: meta.timestamp,
            bytes_used: meta.bytes_used,
            index,
            overhead: woke.elapsed(),
            synthesized: meta.synthesized,
            owner: self.clone(),
        })
    }
}

impl Requeue for Shared {
    fn requeue(&self, index: usize) {
        let mut st = self.lock();
        self.give_back(&mut st, index);
    }
}
