//! A tensor's planes laid over the buffers they lie in: the walk the
//! host-registered and the staged path share. Each buffer is made ready once
//! (an NV12 image's two planes lie in one buffer, NV12M's in two), while the
//! first plane in it is pinned.

use zerocam_tensor::{Element, HostPin, Tensor};

use crate::host::{key_of, HostKey};
use crate::map::{row_pitch, CudaPath, CudaPlane, MapGeometry};
use crate::Result;

/// A tensor's planes on the device, and what backs the buffers they lie in.
pub(crate) struct PlaneLayout<B> {
    /// What backs each buffer, in the order the planes first meet them.
    buffers: Vec<B>,
    /// Each plane at its buffer's device address plus its offset there.
    planes: Vec<CudaPlane>,
    /// The first plane's CPU address.
    host_ptr: u64,
}

impl<B> PlaneLayout<B> {
    /// Lays out `tensor`'s planes (an array tensor is one). `backing` is
    /// called once per buffer, with the first plane in it pinned and the
    /// buffer's cache key, and returns what backs the buffer and the device
    /// address of its start.
    pub(crate) fn of<T: Element>(
        tensor: &Tensor<T>,
        mut backing: impl FnMut(&Tensor<T>, &HostPin, HostKey) -> Result<(B, u64)>,
    ) -> Result<Self> {
        let image = tensor.format().is_some();
        let count = if image { tensor.plane_count() } else { 1 };
        let mut bases: Vec<(HostKey, u64)> = Vec::with_capacity(2);
        let mut buffers = Vec::with_capacity(2);
        let mut planes = Vec::with_capacity(count);
        let mut host_ptr = 0;
        for i in 0..count {
            let plane = if image {
                tensor.plane(i)?
            } else {
                tensor.clone()
            };
            let pin = plane.pin_host()?;
            let key = key_of(&pin, !pin.writable());
            let base = match bases.iter().find(|(k, _)| *k == key) {
                Some(&(_, base)) => base,
                None => {
                    let (buffer, base) = backing(&plane, &pin, key)?;
                    bases.push((key, base));
                    buffers.push(buffer);
                    base
                }
            };
            let offset = pin.buffer_offset();
            if i == 0 {
                host_ptr = (key.base + offset) as u64;
            }
            planes.push(CudaPlane {
                device_ptr: base + offset as u64,
                pitch: row_pitch(&plane, pin.len()),
                shape: plane.shape().to_vec(),
                len: pin.len(),
            });
        }
        Ok(Self {
            buffers,
            planes,
            host_ptr,
        })
    }

    /// The map's geometry over these planes, and what backs them. A CPU
    /// address only on the host-registered path (a staged copy has none the
    /// device reads).
    pub(crate) fn into_geometry<T: Element>(
        self,
        tensor: &Tensor<T>,
        path: CudaPath,
    ) -> (MapGeometry, Vec<B>) {
        let first = &self.planes[0];
        let len = match self.planes.last() {
            // One buffer: from the first plane's start to the last one's end.
            Some(last) if self.buffers.len() == 1 => {
                (last.device_ptr + last.len as u64 - first.device_ptr) as usize
            }
            // Two buffers (NV12M): the first plane's range.
            _ => first.len,
        };
        let geometry = MapGeometry {
            device_ptr: first.device_ptr,
            host_ptr: (path == CudaPath::HostRegistered).then_some(self.host_ptr),
            len,
            shape: tensor.shape().to_vec(),
            strides: tensor.strides(),
            dtype: T::DTYPE,
            planes: self.planes,
            path,
        };
        (geometry, self.buffers)
    }
}
