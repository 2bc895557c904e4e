//! [`OutputQueue`]: the encoder's OUTPUT (raw picture) queue. In
//! [`OutputMemory::Import`] the frames' own dma-bufs are queued
//! (`V4L2_MEMORY_DMABUF`), each physical buffer at its own index
//! ([`IdentityIndex`]), and the frame (the capture lease) is held until the
//! driver gives the buffer back. In [`OutputMemory::Copy`] frames are copied
//! into driver buffers (`MMAP`) and given back at once.

use zerocam_tensor::Tensor;

use super::error::{on, M2mError};
use super::identity::IdentityIndex;
use super::layout::{copy_frame, DriverLayout, InputLayout};
use super::mmap_queue::MmapQueue;
use super::node::Node;
use crate::v4l2::ioctl::{calls, raw, DmaBufPlane, QbufPlanes};
use crate::Frame;

/// How frames reach the encoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputMemory {
    /// The frame's dma-bufs, imported once per buffer (`V4L2_MEMORY_DMABUF`).
    Import,
    /// Copied into the encoder's own buffers (`V4L2_MEMORY_MMAP`).
    Copy,
}

/// The OUTPUT queue.
#[derive(Debug)]
pub(crate) enum OutputQueue {
    Import {
        index: IdentityIndex,
        /// The frame held at each index while the driver has it.
        held: Vec<Option<Frame>>,
        /// The dma-buf lengths of each index's planes (read at bind).
        lengths: Vec<Vec<u32>>,
    },
    Copy(MmapQueue),
}

impl OutputQueue {
    /// The memory mode.
    pub fn memory(&self) -> OutputMemory {
        match self {
            OutputQueue::Import { .. } => OutputMemory::Import,
            OutputQueue::Copy(_) => OutputMemory::Copy,
        }
    }

    /// Buffers with the driver.
    pub fn in_flight(&self) -> usize {
        match self {
            OutputQueue::Import { held, .. } => held.iter().filter(|h| h.is_some()).count(),
            OutputQueue::Copy(q) => q.queued.iter().filter(|q| **q).count(),
        }
    }

    /// Imports made (buffer planes bound to an index).
    pub fn imports(&self, planes: usize) -> u64 {
        match self {
            OutputQueue::Import { index, .. } => index.binds * planes as u64,
            OutputQueue::Copy(_) => 0,
        }
    }

    /// Dequeues one done OUTPUT buffer (its frame given back); `false` when
    /// none is done.
    pub fn reclaim(&mut self, node: &Node) -> Result<bool, M2mError> {
        let memory = match self {
            OutputQueue::Import { .. } => raw::MEMORY_DMABUF,
            OutputQueue::Copy(_) => raw::MEMORY_MMAP,
        };
        let d = match calls::dqbuf_flags(node.fd(), node.out_type, memory) {
            Ok((d, _)) => d,
            Err(crate::v4l2::ioctl::DqbufError::NotReady) => return Ok(false),
            Err(crate::v4l2::ioctl::DqbufError::Other(nix::errno::Errno::EPIPE)) => {
                return Ok(false)
            }
            Err(e) => return Err(on(&node.path, "VIDIOC_DQBUF (OUTPUT)")(e)),
        };
        match self {
            OutputQueue::Import { held, .. } => {
                if let Some(h) = held.get_mut(d.index as usize) {
                    // The capture buffer goes back to the camera here.
                    drop(h.take());
                }
            }
            OutputQueue::Copy(q) => {
                if let Some(h) = q.queued.get_mut(d.index as usize) {
                    *h = false;
                }
            }
        }
        Ok(true)
    }

    /// Queues `frame` (imported or copied) with the driver's `layout`;
    /// `Ok(false)` when no index is free (wait for one and try again).
    pub fn queue(
        &mut self,
        node: &Node,
        frame: &mut Option<Frame>,
        input: &InputLayout,
        layout: &DriverLayout,
    ) -> Result<bool, M2mError> {
        let Some(f) = frame.as_ref() else {
            return Ok(true);
        };
        let ts = f.timestamp();
        let used: Vec<u32> = layout.planes.iter().map(|p| p.1).collect();
        match self {
            OutputQueue::Import {
                index,
                held,
                lengths,
            } => {
                let id = f.tensor().buffer_identity().id();
                let Some(slot) =
                    index.slot(id, |i| held.get(i as usize).is_some_and(Option::is_some))
                else {
                    return Ok(false);
                };
                let i = slot.index as usize;
                let tensors = plane_tensors(f, input.buffers);
                let fds = tensors
                    .iter()
                    .map(|t| t.fd())
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| M2mError::BadFrame {
                        path: node.path.clone(),
                        reason: "a dma-buf frame without an fd on a plane".into(),
                    })?;
                if slot.new {
                    lengths[i] = fds
                        .iter()
                        .map(|fd| {
                            zerocam_tensor::capsule::file_size(fd)
                                .and_then(|l| u32::try_from(l).ok())
                                .unwrap_or(0)
                        })
                        .collect();
                    log::debug!(
                        "{}: buffer {id} imported at OUTPUT index {i}",
                        node.path.display()
                    );
                }
                let mut planes = Vec::with_capacity(fds.len());
                for (p, (fd, &length)) in fds.iter().zip(&lengths[i]).enumerate() {
                    let need = used.get(p).copied().unwrap_or(0);
                    if need > length {
                        return Err(M2mError::Payload {
                            path: node.path.clone(),
                            queue: "OUTPUT",
                            index: slot.index,
                            plane: p,
                            bytes: u64::from(need),
                            length: u64::from(length),
                        });
                    }
                    planes.push(DmaBufPlane { fd: *fd, length });
                }
                calls::qbuf_payload(
                    node.fd(),
                    node.out_type,
                    slot.index,
                    QbufPlanes::DmaBuf(&planes),
                    &used,
                    ts,
                )
                .map_err(on(&node.path, "VIDIOC_QBUF (OUTPUT, DMABUF)"))?;
                held[i] = frame.take();
            }
            OutputQueue::Copy(q) => {
                let Some(index) = q.free() else {
                    return Ok(false);
                };
                let bufs = &q.buffers[index as usize];
                let mut maps = bufs
                    .iter()
                    .map(|p| p.tensor.map_write())
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|source| M2mError::Tensor {
                        path: node.path.clone(),
                        source,
                    })?;
                let mut dst: Vec<&mut [u8]> = maps.iter_mut().map(|m| &mut m[..]).collect();
                copy_frame(f, input, layout, &mut dst).map_err(|reason| M2mError::BadFrame {
                    path: node.path.clone(),
                    reason,
                })?;
                drop(dst);
                drop(maps);
                q.queue(node, index, &used, ts)?;
                // Copied: the capture buffer goes back at once.
                drop(frame.take());
            }
        }
        Ok(true)
    }

    /// Gives every held frame back (after `STREAMOFF`).
    pub fn release_all(&mut self) {
        match self {
            OutputQueue::Import { held, .. } => held.iter_mut().for_each(|h| drop(h.take())),
            OutputQueue::Copy(q) => q.queued.iter_mut().for_each(|q| *q = false),
        }
    }
}

/// A tensor per memory plane of the frame (its fd is that buffer's).
fn plane_tensors(f: &Frame, buffers: usize) -> Vec<Tensor<u8>> {
    let t = f.tensor();
    if buffers < 2 {
        return vec![t.clone()];
    }
    (0..buffers).filter_map(|i| t.plane(i).ok()).collect()
}
