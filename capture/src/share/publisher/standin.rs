//! STAND-IN until part R merges: `FrameSource::read_only_planes`,
//! `SharedPlane` and `Frame::placement` as the design names them.
#![allow(missing_docs)]

use std::os::fd::{AsFd, OwnedFd};

use crate::{Frame, FrameSource, Result};

pub struct SharedPlane {
    pub fd: OwnedFd,
    pub length: usize,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Placement {
    pub offsets: [usize; 2],
    pub chroma_offset: Option<usize>,
}

pub(crate) trait StandInPlanes {
    fn read_only_planes_of(&self, frame: &Frame) -> Result<Vec<SharedPlane>>;
}

impl<S: FrameSource> StandInPlanes for S {
    fn read_only_planes_of(&self, frame: &Frame) -> Result<Vec<SharedPlane>> {
        inner(self.stream_format().format.memory_planes, frame).map_err(|source| {
            crate::CaptureError::Tensor {
                path: self.name().to_owned(),
                source,
            }
        })
    }
}

fn inner(planes: usize, frame: &Frame) -> zerocam_tensor::Result<Vec<SharedPlane>> {
    {
        let t = frame.tensor();
        let mut out = Vec::new();
        for p in 0..planes {
            let plane = if planes == 1 { t.clone() } else { t.plane(p)? };
            let fd = plane.fd().ok_or(zerocam_tensor::Error::NoFd {
                memory: plane.memory(),
            })?;
            let path = format!(
                "/proc/self/fd/{}",
                std::os::fd::AsRawFd::as_raw_fd(&fd.as_fd())
            );
            let file =
                std::fs::File::open(path).map_err(|e| zerocam_tensor::Error::DmaUnavailable {
                    reason: e.to_string(),
                })?;
            let length = file.metadata().map(|m| m.len() as usize).unwrap_or(0);
            out.push(SharedPlane {
                fd: file.into(),
                length,
            });
        }
        Ok(out)
    }
}

pub(crate) fn placement(_frame: &Frame) -> Placement {
    Placement::default()
}
