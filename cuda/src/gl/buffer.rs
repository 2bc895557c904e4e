//! Path (c): GL buffer interop. A PBO tensor of the attached GPU is
//! registered once (`cuGraphicsGLRegisterBuffer`) and mapped per use
//! (`cuGraphicsMapResources`), both on the GL thread, context current.

use std::sync::{Arc, Weak};

use zerocam_cache::ImageKey;
use zerocam_gpu::GlThread;
use zerocam_tensor::{Access, Element, MemoryHold, Tensor};

use super::{
    caches, map_resource, register, span_len, unmap_resource, Counters, GlKey, Registration, Users,
};
use crate::cuda::StreamRef;
use crate::device::Device;
use crate::driver::ffi;
use crate::map::{CudaMap, CudaPath, CudaPlane, MapGeometry};
use crate::{Cuda, CudaError, Result};

const PATH: &str = "GL buffer interop";

/// What the GL-thread job needs to register (on a miss) and map one buffer.
struct MapJob {
    id: u64,
    key: ImageKey<GlKey>,
    alive: Weak<()>,
    hold: MemoryHold,
    device: Arc<Device>,
    stream: StreamRef,
    counters: Weak<Counters>,
    /// The tensor's bytes end here: the mapped buffer must reach it.
    needed: usize,
}

impl Cuda {
    /// Path (c): a PBO tensor of the attached GPU, mapped on its GL thread.
    pub(crate) fn map_gl_buffer<T: Element>(
        &self,
        tensor: &Tensor<T>,
        access: Access,
    ) -> Result<CudaMap> {
        let buffer = tensor.pbo_buffer().ok_or(CudaError::UnsupportedMemory {
            memory: tensor.memory(),
            path: PATH,
            reason: "not a PBO tensor",
        })?;
        let gpu = self.gpu_of_pbo(tensor, PATH)?;
        // While CUDA has the buffer mapped GL must not touch it: the
        // device's borrow is exclusive whatever `access` is, so CPU maps (GL
        // maps of the PBO) and conversions using it are refused meanwhile.
        let borrow = tensor.device_borrow(Access::ReadWrite)?;
        let hold = tensor.memory_hold();
        let (offset, len) = (tensor.plane_offset(), span_len(tensor));
        let job = MapJob {
            id: self.id(),
            key: ImageKey {
                buffer: tensor.buffer_identity().id(),
                geometry: (buffer, hold.len()),
            },
            alive: tensor.buffer_identity().weak(),
            hold,
            device: Arc::clone(self.device()),
            stream: self.stream_ref().clone(),
            counters: self.interop_counters(),
            needed: offset + len,
        };
        let (resource, device_base, users) =
            gpu.run_on_gl_thread("CUDA map of a GL buffer", move |th| map_on_gl(th, job))??;
        let device_ptr = device_base + offset as u64;
        let geometry = MapGeometry {
            device_ptr,
            host_ptr: None,
            len,
            shape: tensor.shape().to_vec(),
            strides: tensor.strides(),
            dtype: T::DTYPE,
            planes: vec![CudaPlane {
                device_ptr,
                pitch: crate::map::row_pitch(tensor, len),
                shape: tensor.shape().to_vec(),
                len,
            }],
            path: CudaPath::GlBuffer,
        };
        Ok(self.interop_map(geometry, access, borrow, gpu, resource, true, users))
    }
}

/// On the GL thread: the buffer's registration (made on a miss), mapped;
/// its resource, device address and a user token.
fn map_on_gl(th: &mut GlThread<'_>, job: MapJob) -> Result<(usize, u64, Arc<Users>)> {
    let (buffer, _) = job.key.geometry;
    if !th.is_buffer(buffer) {
        return Err(CudaError::Mismatch {
            call: "cuGraphicsGLRegisterBuffer",
            what: format!("GL buffer {buffer} does not exist on the GL thread"),
        });
    }
    let c = caches(th, job.id);
    let mut retired = Vec::new();
    let (device, stream, hold, counters) = (&job.device, &job.stream, job.hold, job.counters);
    let entry = c.buffers.get_or_insert_with(
        job.key,
        job.alive,
        || {
            let resource = register(device, "cuGraphicsGLRegisterBuffer", |d, out| {
                // SAFETY: a buffer name of the current GL context (checked
                // with glIsBuffer above) and a valid out-pointer.
                unsafe {
                    (d.api.cuGraphicsGLRegisterBuffer)(out, buffer, ffi::GRAPHICS_REGISTER_NONE)
                }
            })?;
            let registration = Registration::new(device, stream, resource, counters, false, hold);
            Ok::<_, CudaError>(registration)
        },
        &mut retired,
    );
    let found = entry.map(|e| (e.resource, Arc::clone(&e.users)));
    c.retire_buffers(retired);
    let (resource, users) = found?;
    let (base, size) = map_resource(device, resource, &job.stream)?;
    if size < job.needed {
        unmap_resource(device, resource, &job.stream);
        return Err(CudaError::Mismatch {
            call: "cuGraphicsResourceGetMappedPointer_v2",
            what: format!(
                "{size} bytes of GL buffer {buffer}; the tensor needs {}",
                job.needed
            ),
        });
    }
    Ok((resource, base, users))
}
