//! [`M2mDecoder`]: a minimal stateful decoder (dev-decoder.rst): coded bytes
//! copied into OUTPUT (`MMAP`) buffers; on the first `V4L2_EVENT_SOURCE_CHANGE`
//! the CAPTURE queue is set to the picture format asked for and started;
//! decoded pictures are copied out. Enough to check an encoder's output
//! (vicodec's FWHT); not a player.

use std::path::Path;
use std::time::{Duration, Instant};

use super::error::{on, M2mError};
use super::layout::DriverLayout;
use super::mmap_queue::MmapQueue;
use super::node::{Node, STEP_TIMEOUT};
use super::{set_format, FormatWant};
use crate::v4l2::ioctl::{calls, raw, DqbufError};
use crate::FourCc;

/// A decoded picture, copied out of the decoder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedPicture {
    /// The bytes of plane 0 (all planes of a one-buffer format).
    pub data: Vec<u8>,
    /// The CAPTURE format.
    pub fourcc: FourCc,
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
    /// Bytes between rows of the first plane.
    pub bytes_per_line: u32,
    /// The timestamp the packet was queued with.
    pub timestamp: Duration,
}

/// A stateful decoder.
#[derive(Debug)]
pub struct M2mDecoder {
    node: Node,
    picture: FourCc,
    output: MmapQueue,
    capture: Option<(MmapQueue, DriverLayout)>,
    eos: bool,
}

impl M2mDecoder {
    /// Opens the decoder at `path` for `codec` `width`x`height` on OUTPUT,
    /// pictures of `picture` format out.
    pub fn open(
        path: &Path,
        codec: FourCc,
        picture: FourCc,
        width: u32,
        height: u32,
    ) -> Result<M2mDecoder, M2mError> {
        let node = Node::open(path)?;
        set_format(
            &node,
            node.out_type,
            &FormatWant {
                fourcc: codec,
                width,
                height,
                strides: &[],
                queue: "OUTPUT",
                check_size: true,
            },
        )?;
        let output = MmapQueue::new(&node, node.out_type, "OUTPUT", 4, 1)?;
        node.subscribe(raw::EVENT_SOURCE_CHANGE, "source change")?;
        node.subscribe(raw::EVENT_EOS, "EOS")?;
        node.stream(node.out_type, true)?;
        Ok(M2mDecoder {
            node,
            picture,
            output,
            capture: None,
            eos: false,
        })
    }

    /// Decodes one coded frame; returns the pictures ready.
    pub fn decode(
        &mut self,
        data: &[u8],
        timestamp: Duration,
    ) -> Result<Vec<DecodedPicture>, M2mError> {
        let mut out = Vec::new();
        let deadline = Instant::now() + STEP_TIMEOUT;
        let index = loop {
            self.step(&mut out)?;
            if let Some(i) = self.output.free() {
                break i;
            }
            self.wait(deadline)?;
        };
        let plane = &self.output.buffers[index as usize][0];
        if data.len() > plane.length as usize {
            return Err(M2mError::Payload {
                path: self.node.path.clone(),
                queue: "OUTPUT",
                index,
                plane: 0,
                bytes: data.len() as u64,
                length: u64::from(plane.length),
            });
        }
        {
            let mut m = plane
                .tensor
                .map_write()
                .map_err(|source| M2mError::Tensor {
                    path: self.node.path.clone(),
                    source,
                })?;
            m[..data.len()].copy_from_slice(data);
        }
        self.output
            .queue(&self.node, index, &[data.len() as u32], timestamp)?;
        self.step(&mut out)?;
        Ok(out)
    }

    /// Waits until at least one picture more is out (or `timeout`).
    pub fn wait_picture(&mut self, timeout: Duration) -> Result<Vec<DecodedPicture>, M2mError> {
        let mut out = Vec::new();
        let deadline = Instant::now() + timeout;
        while out.is_empty() {
            self.step(&mut out)?;
            if out.is_empty() {
                self.wait(deadline)?;
            }
        }
        Ok(out)
    }

    fn wait(&self, deadline: Instant) -> Result<(), M2mError> {
        if Instant::now() >= deadline {
            return Err(M2mError::Timeout {
                path: self.node.path.clone(),
                what: "a decoder buffer",
                timeout: STEP_TIMEOUT,
            });
        }
        self.node.wait(deadline).map(drop)
    }

    /// Events (the source change sets CAPTURE up), OUTPUT buffers back,
    /// pictures out.
    fn step(&mut self, out: &mut Vec<DecodedPicture>) -> Result<(), M2mError> {
        while let Some((kind, _)) = self.node.dqevent()? {
            if kind == raw::EVENT_EOS {
                self.eos = true;
            }
            if kind == raw::EVENT_SOURCE_CHANGE && self.capture.is_none() {
                let f = self.node.g_fmt(self.node.cap_type)?;
                let l = DriverLayout::of(&f).ok_or_else(|| {
                    M2mError::ioctl(&self.node.path, "VIDIOC_G_FMT", nix::errno::Errno::EINVAL)
                })?;
                let f = set_format(
                    &self.node,
                    self.node.cap_type,
                    &FormatWant {
                        fourcc: self.picture,
                        width: l.width,
                        height: l.height,
                        strides: &[],
                        queue: "CAPTURE",
                        check_size: true,
                    },
                )?;
                let layout = DriverLayout::of(&f).ok_or_else(|| {
                    M2mError::ioctl(&self.node.path, "VIDIOC_S_FMT", nix::errno::Errno::EINVAL)
                })?;
                let mut q = MmapQueue::new(&self.node, self.node.cap_type, "CAPTURE", 4, 1)?;
                for i in 0..q.buffers.len() as u32 {
                    q.queue(&self.node, i, &[0], Duration::ZERO)?;
                }
                self.node.stream(self.node.cap_type, true)?;
                self.capture = Some((q, layout));
            }
        }
        loop {
            match calls::dqbuf_flags(self.node.fd(), self.node.out_type, raw::MEMORY_MMAP) {
                Ok((d, _)) => {
                    if let Some(q) = self.output.queued.get_mut(d.index as usize) {
                        *q = false;
                    }
                }
                Err(DqbufError::NotReady) | Err(DqbufError::Other(nix::errno::Errno::EPIPE)) => {
                    break
                }
                Err(e) => return Err(on(&self.node.path, "VIDIOC_DQBUF (OUTPUT)")(e)),
            }
        }
        let Some((q, layout)) = self.capture.as_mut() else {
            return Ok(());
        };
        loop {
            let (d, flags) =
                match calls::dqbuf_flags(self.node.fd(), self.node.cap_type, raw::MEMORY_MMAP) {
                    Ok(x) => x,
                    Err(DqbufError::NotReady)
                    | Err(DqbufError::Other(nix::errno::Errno::EPIPE)) => return Ok(()),
                    Err(e) => return Err(on(&self.node.path, "VIDIOC_DQBUF (CAPTURE)")(e)),
                };
            if let Some(s) = q.queued.get_mut(d.index as usize) {
                *s = false;
            }
            let p = d.planes[0];
            if p.bytes_used > 0 && flags & raw::BUF_FLAG_ERROR == 0 {
                out.push(DecodedPicture {
                    data: q.read(&self.node.path, d.index, p.data_offset, p.bytes_used)?,
                    fourcc: layout.fourcc,
                    width: layout.width,
                    height: layout.height,
                    bytes_per_line: layout.planes[0].0,
                    timestamp: d.timestamp,
                });
            }
            q.queue(&self.node, d.index, &[0], Duration::ZERO)?;
        }
    }
}

impl Drop for M2mDecoder {
    fn drop(&mut self) {
        // Nothing to report to: the fds close anyway.
        let _ = self.node.stream(self.node.out_type, false);
        let _ = self.node.stream(self.node.cap_type, false);
    }
}
