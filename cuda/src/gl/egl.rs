//! Path (b): EGLImage interop. The attached GPU's EGLImage of a dma-buf
//! image — the one its import cache holds — is registered once
//! (`cuGraphicsEGLRegisterImage`); its planes are pitch-linear device
//! pointers (`cuGraphicsResourceGetMappedEglFrame`), read and checked
//! against the tensor on every map (`egl_frame`).

use std::sync::{Arc, Weak};

use zerocam_cache::ImageKey;
use zerocam_gpu::SharedEglImage;
use zerocam_tensor::{Access, ImagePlacement, Tensor};

use super::egl_frame::{self, EglPlanes};
use super::{caches, register, Counters, Registration};
use crate::cuda::StreamRef;
use crate::device::Device;
use crate::driver::ffi;
use crate::map::{CudaMap, CudaPath, CudaPlane, MapGeometry};
use crate::{Cuda, CudaError, Result};

impl Cuda {
    /// Path (b): the dma-buf image `tensor` through the attached GPU's
    /// EGLImage of it, registered once with `cuGraphicsEGLRegisterImage`; the
    /// planes are pitch-linear device pointers (`cuGraphicsResourceGetMappedEglFrame`).
    /// The Jetson path for camera buffers. A view maps as the part of its
    /// root image it covers.
    ///
    /// # Errors
    /// [`CudaError::UnsupportedMemory`] without an attached GPU or for other
    /// memory; the GPU's import error; [`CudaError::Mismatch`] when the driver
    /// gives a block-linear (array) frame (saying how to get a pitch-linear
    /// one), fewer planes than the image has, another size, or a colour
    /// format of other planes.
    pub fn map_egl(&self, tensor: &Tensor<u8>, access: Access) -> Result<CudaMap> {
        let gpu = self.egl_gpu(tensor.memory(), "EGLImage interop")?;
        let placement = tensor.placement().ok_or(CudaError::UnsupportedMemory {
            memory: tensor.memory(),
            path: "EGLImage interop",
            reason: "not an image tensor",
        })?;
        let borrow = tensor.device_borrow(access)?;
        let key = ImageKey {
            buffer: tensor.buffer_identity().id(),
            geometry: (placement.root, placement.frame),
        };
        let (id, device, stream, counters) = (
            self.id(),
            Arc::clone(self.device()),
            self.stream_ref().clone(),
            self.interop_counters(),
        );
        let (src, alive) = (tensor.clone(), tensor.buffer_identity().weak());
        let frame_device = Arc::clone(&device);
        let (resource, users) = gpu.run_on_gl_thread("CUDA map of an EGLImage", move |th| {
            let image = if caches(th, id).images.contains(&key) {
                None // registered: the GPU's cache is not asked
            } else {
                Some(th.egl_image(&src)?)
            };
            let c = caches(th, id);
            let mut retired = Vec::new();
            let entry = c.images.get_or_insert_with(
                key,
                alive,
                || register_image(&device, &stream, image, counters),
                &mut retired,
            );
            let found = entry.map(|e| (e.resource, Arc::clone(&e.users)));
            c.retire_images(retired);
            found
        })??;
        // Read on every map, after the registration: the driver may move
        // the image between uses.
        let frame = egl_frame::read(&frame_device, resource)?;
        egl_frame::check(&frame, &placement.root)?;
        let planes = planes(tensor, &placement, &frame)?;
        let geometry = MapGeometry {
            device_ptr: planes[0].device_ptr,
            host_ptr: None,
            len: planes[0].len,
            shape: tensor.shape().to_vec(),
            strides: None,
            dtype: zerocam_tensor::DType::U8,
            planes,
            path: CudaPath::EglImage,
        };
        Ok(self.interop_map(geometry, access, borrow, gpu, resource, false, users))
    }
}

/// On the GL thread: registers `image`.
fn register_image(
    device: &Arc<Device>,
    stream: &StreamRef,
    image: Option<SharedEglImage>,
    counters: Weak<Counters>,
) -> Result<Registration<SharedEglImage>> {
    let image = image.ok_or(CudaError::Mismatch {
        call: "cuGraphicsEGLRegisterImage",
        what: "no EGLImage to register".into(),
    })?;
    let resource = register(device, "cuGraphicsEGLRegisterImage", |d, out| {
        // SAFETY: a live EGLImage (held by the registration) and a valid out-pointer.
        unsafe {
            (d.api.cuGraphicsEGLRegisterImage)(out, image.as_ptr(), ffi::GRAPHICS_REGISTER_NONE)
        }
    })?;
    Ok(Registration::new(
        device, stream, resource, counters, true, image,
    ))
}

/// The planes of `tensor` (a view maps as its part of the root) in `frame`,
/// which `egl_frame::check` accepted.
fn planes(
    tensor: &Tensor<u8>,
    placement: &ImagePlacement,
    frame: &EglPlanes,
) -> Result<Vec<CudaPlane>> {
    let root = placement.root;
    let count = root.format.plane_count();
    let pitch = frame.pitch as usize;
    let mut planes = Vec::with_capacity(count);
    for (i, root_plane) in root.planes().iter().enumerate() {
        let plane = tensor.plane(i)?;
        // The view's offset in its root plane, as (row, byte in row).
        let stride = root_plane.stride.max(1);
        let inside = plane
            .plane_offset()
            .saturating_sub(root_plane.offset + placement.frame * root.batch_stride);
        let device_ptr = frame.ptrs[i] + ((inside / stride) * pitch + inside % stride) as u64;
        let rows = plane.shape().first().copied().unwrap_or(0);
        let row_bytes: usize = plane.shape().iter().skip(1).product();
        planes.push(CudaPlane {
            device_ptr,
            pitch,
            shape: plane.shape().to_vec(),
            len: rows.saturating_sub(1) * pitch + row_bytes,
        });
    }
    Ok(planes)
}
