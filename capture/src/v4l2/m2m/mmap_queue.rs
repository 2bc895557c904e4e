//! [`MmapQueue`]: a codec queue of driver-allocated buffers (`MMAP`), each
//! plane exported once (`VIDIOC_EXPBUF`) and mapped as a tensor, so the CPU
//! reads coded bytes out and copies frames in without an `mmap` of its own.

use zerocam_tensor::Tensor;

use super::error::{on, M2mError};
use super::node::Node;
use crate::v4l2::ioctl::{calls, raw, QbufPlanes};
use crate::v4l2::MAX_BUFFERS;

/// One mapped plane: its tensor and length.
#[derive(Debug)]
pub(crate) struct MappedPlane {
    pub tensor: Tensor<u8>,
    pub length: u32,
}

/// Driver buffers of one queue, mapped.
#[derive(Debug)]
pub(crate) struct MmapQueue {
    pub type_: u32,
    pub queue: &'static str,
    pub buffers: Vec<Vec<MappedPlane>>,
    /// Whether each buffer is with the driver.
    pub queued: Vec<bool>,
}

/// Asks `count` buffers of `memory` on `type_` and checks the grant is in
/// 1..=[`MAX_BUFFERS`]; `Ok(None)` when the driver refuses the memory (`EINVAL`).
pub(crate) fn request(
    node: &Node,
    type_: u32,
    queue: &'static str,
    memory: u32,
    count: u32,
) -> Result<Option<u32>, M2mError> {
    let r = match calls::reqbufs(node.fd(), type_, memory, count) {
        Ok(r) => r,
        Err(crate::v4l2::ioctl::error::ReqbufsError::Unsupported) => return Ok(None),
        Err(e) => return Err(on(&node.path, "VIDIOC_REQBUFS")(e)),
    };
    if r.count == 0 || r.count > MAX_BUFFERS {
        return Err(M2mError::BufferGrant {
            path: node.path.clone(),
            queue,
            asked: count,
            granted: r.count,
            max: MAX_BUFFERS,
        });
    }
    Ok(Some(r.count))
}

impl MmapQueue {
    /// `count` MMAP buffers of `planes` memory planes on `type_`, mapped.
    pub fn new(
        node: &Node,
        type_: u32,
        queue: &'static str,
        count: u32,
        planes: usize,
    ) -> Result<MmapQueue, M2mError> {
        let granted = request(node, type_, queue, raw::MEMORY_MMAP, count)?.ok_or_else(|| {
            M2mError::ioctl(&node.path, "VIDIOC_REQBUFS", nix::errno::Errno::EINVAL)
        })?;
        let planes = if raw::is_mplane(type_) { planes } else { 1 };
        let mut buffers = Vec::with_capacity(granted as usize);
        for index in 0..granted {
            let lengths = calls::querybuf(node.fd(), type_, raw::MEMORY_MMAP, index)
                .map_err(on(&node.path, "VIDIOC_QUERYBUF"))?;
            let mut mapped = Vec::with_capacity(planes);
            for (p, &length) in lengths.iter().take(planes).enumerate() {
                let fd = calls::expbuf(node.fd(), type_, index, p as u32, false)
                    .map_err(on(&node.path, "VIDIOC_EXPBUF"))?;
                let name = format!("{}:{queue}{index}.{p}", node.path.display());
                let tensor = Tensor::<u8>::from_fd(fd, &[length.max(1) as usize], Some(&name))
                    .map_err(|source| M2mError::Tensor {
                        path: node.path.clone(),
                        source,
                    })?;
                mapped.push(MappedPlane { tensor, length });
            }
            buffers.push(mapped);
        }
        Ok(MmapQueue {
            type_,
            queue,
            queued: vec![false; buffers.len()],
            buffers,
        })
    }

    /// A buffer not with the driver.
    pub fn free(&self) -> Option<u32> {
        self.queued.iter().position(|q| !q).map(|i| i as u32)
    }

    /// Queues buffer `index` with `bytes_used` per plane and `timestamp`.
    pub fn queue(
        &mut self,
        node: &Node,
        index: u32,
        bytes_used: &[u32],
        timestamp: std::time::Duration,
    ) -> Result<(), M2mError> {
        let planes = self
            .buffers
            .get(index as usize)
            .ok_or_else(|| M2mError::ioctl(&node.path, "VIDIOC_QBUF", nix::errno::Errno::EINVAL))?;
        for (p, (plane, used)) in planes.iter().zip(bytes_used).enumerate() {
            if *used > plane.length {
                return Err(M2mError::Payload {
                    path: node.path.clone(),
                    queue: self.queue,
                    index,
                    plane: p,
                    bytes: u64::from(*used),
                    length: u64::from(plane.length),
                });
            }
        }
        calls::qbuf_payload(
            node.fd(),
            self.type_,
            index,
            QbufPlanes::Mmap,
            bytes_used,
            timestamp,
        )
        .map_err(on(&node.path, "VIDIOC_QBUF"))?;
        self.queued[index as usize] = true;
        Ok(())
    }

    /// The bytes `offset..bytes_used` of plane 0 of buffer `index`, bounded by
    /// the plane's length.
    pub fn read(
        &self,
        path: &std::path::Path,
        index: u32,
        offset: u32,
        bytes_used: u32,
    ) -> Result<Vec<u8>, M2mError> {
        let plane = self
            .buffers
            .get(index as usize)
            .and_then(|b| b.first())
            .ok_or_else(|| M2mError::ioctl(path, "VIDIOC_DQBUF", nix::errno::Errno::EINVAL))?;
        if bytes_used > plane.length || offset > bytes_used {
            return Err(M2mError::Payload {
                path: path.to_path_buf(),
                queue: self.queue,
                index,
                plane: 0,
                bytes: u64::from(bytes_used),
                length: u64::from(plane.length),
            });
        }
        let m = plane.tensor.map_read().map_err(|source| M2mError::Tensor {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(m[offset as usize..bytes_used as usize].to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use zerocam_tensor::TensorMemory;

    fn queue() -> MmapQueue {
        let tensor = Tensor::<u8>::new(&[16], Some(TensorMemory::Mem), None).unwrap();
        {
            let mut m = tensor.map_write().unwrap();
            m.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
        }
        MmapQueue {
            type_: raw::BUF_TYPE_VIDEO_CAPTURE,
            queue: "CAPTURE",
            buffers: vec![vec![MappedPlane { tensor, length: 16 }]],
            queued: vec![false],
        }
    }

    #[test]
    fn reads_are_bounded_by_the_plane_length() {
        let q = queue();
        let p = Path::new("/dev/video9");
        assert_eq!(q.read(p, 0, 2, 5).unwrap(), [2, 3, 4]);
        assert_eq!(q.read(p, 0, 0, 16).unwrap().len(), 16);
        let past = q.read(p, 0, 0, 17).unwrap_err();
        assert!(
            matches!(
                past,
                M2mError::Payload {
                    bytes: 17,
                    length: 16,
                    ..
                }
            ),
            "{past}"
        );
        assert!(matches!(q.read(p, 0, 6, 5), Err(M2mError::Payload { .. })));
        assert!(matches!(q.read(p, 3, 0, 1), Err(M2mError::Ioctl { .. })));
        assert_eq!(q.free(), Some(0));
    }
}
