//! Paths (b) and (c), through zerocam-gpu's GL thread:
//! - (c) **GL buffer interop**: a PBO tensor (a `convert` output) is
//!   registered once with `cuGraphicsGLRegisterBuffer` and mapped per use
//!   (`cuGraphicsMapResources` / `cuGraphicsResourceGetMappedPointer`), on
//!   the GL thread with its context current, as the interop spec asks.
//! - (b) **EGLImage interop**: a dma-buf tensor's EGLImage — the one the GPU
//!   crate's import cache holds — is registered once with
//!   `cuGraphicsEGLRegisterImage`; `cuGraphicsResourceGetMappedEglFrame`
//!   gives its planes as pitch-linear device pointers (Jetson's camera path).
//!
//! The registrations live on the GL thread, in a cache per [`Cuda`] handle
//! kept as a GL-thread extension, keyed on the tensor's identity + geometry
//! and swept when the identity dies. Each holds what it registered (the
//! PBO's [`MemoryHold`], the [`SharedEglImage`]) and unregisters in its
//! `Drop` before letting it go, so `glDeleteBuffers` and `eglDestroyImage`
//! come after the unregister in every order; the GL thread drops extensions
//! before its own images and buffers. A registration that is evicted or
//! swept while a [`CudaMap`] still uses it waits (`deferred`) until that map
//! drops.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use zerocam_cache::{GpuImageCache, ImageKey};
use zerocam_gpu::{GlThread, Gpu, SharedEglImage};
use zerocam_tensor::{Access, Element, MemoryHold, RootLayout, Tensor, TensorMemory};

use crate::cuda::{StreamRef, CACHE_CAPACITY};
use crate::device::Device;
use crate::driver::ffi::{self, CuEglFrame, CuHandle};
use crate::map::{CudaMap, CudaPath, CudaPlane, Keep};
use crate::{Cuda, CudaError, CudaStats, Result};

/// A [`Cuda`] handle's link to a GL thread.
#[derive(Debug, Clone)]
pub(crate) struct GlAttachment {
    pub gpu: Gpu,
    counters: Arc<Counters>,
}

/// Unregistrations counted from the GL thread.
#[derive(Debug, Default)]
struct Counters {
    gl_unregistered: AtomicU64,
    egl_unregistered: AtomicU64,
}

/// A registered graphics resource and what keeps its GL object alive
/// (`K`: the PBO's [`MemoryHold`] or the [`SharedEglImage`]).
struct Registration<K> {
    device: Arc<Device>,
    resource: usize,
    /// One more holder per live [`CudaMap`] of it.
    users: Arc<()>,
    /// `egl` frames: the planes, fixed for the registration's life.
    frame: Option<EglPlanes>,
    counter: Weak<Counters>,
    is_egl: bool,
    // Last: dropped after the unregister.
    _keep: K,
}

impl<K> Registration<K> {
    fn in_use(&self) -> bool {
        Arc::strong_count(&self.users) > 1
    }
}

impl<K> Drop for Registration<K> {
    fn drop(&mut self) {
        let driver = &self.device.driver;
        if let Ok(_current) = self.device.enter() {
            // SAFETY: registered once by `register_*`, unregistered once here,
            // on the GL thread, while `_keep` holds the GL object.
            let code =
                unsafe { (driver.api.cuGraphicsUnregisterResource)(self.resource as CuHandle) };
            if let (ffi::CUDA_SUCCESS, Some(c)) = (code, self.counter.upgrade()) {
                let n = if self.is_egl {
                    &c.egl_unregistered
                } else {
                    &c.gl_unregistered
                };
                n.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// What `cuGraphicsResourceGetMappedEglFrame` said, as plain numbers.
#[derive(Debug, Clone, Copy, Default)]
struct EglPlanes {
    ptrs: [u64; 3],
    pitch: u32,
    plane_count: u32,
    frame_type: i32,
}

impl From<CuEglFrame> for EglPlanes {
    fn from(f: CuEglFrame) -> EglPlanes {
        EglPlanes {
            ptrs: f.planes.map(|p| p as u64),
            pitch: f.pitch,
            plane_count: f.plane_count,
            frame_type: f.frame_type,
        }
    }
}

/// The GL-side key of a PBO registration: the buffer name and length.
type GlKey = (u32, usize);
/// The GL-side key of an EGLImage registration: the root image and batch element.
type EglKey = (RootLayout, usize);

/// One [`Cuda`] handle's registrations on one GL thread.
struct Caches {
    buffers: GpuImageCache<GlKey, Registration<MemoryHold>>,
    images: GpuImageCache<EglKey, Registration<SharedEglImage>>,
    deferred_buffers: Vec<Registration<MemoryHold>>,
    deferred_images: Vec<Registration<SharedEglImage>>,
}

impl Caches {
    fn new() -> Caches {
        Caches {
            buffers: GpuImageCache::new(CACHE_CAPACITY),
            images: GpuImageCache::new(CACHE_CAPACITY),
            deferred_buffers: Vec::new(),
            deferred_images: Vec::new(),
        }
    }

    /// Takes retired registrations: unregistered now unless a map uses them.
    fn retire_buffers(&mut self, retired: Vec<Registration<MemoryHold>>) {
        self.deferred_buffers.extend(retired);
        self.deferred_buffers.retain(Registration::in_use);
    }

    fn retire_images(&mut self, retired: Vec<Registration<SharedEglImage>>) {
        self.deferred_images.extend(retired);
        self.deferred_images.retain(Registration::in_use);
    }

    fn sweep(&mut self) {
        let b = self.buffers.sweep();
        self.retire_buffers(b);
        let i = self.images.sweep();
        self.retire_images(i);
    }

    fn clear(&mut self) {
        let b = self.buffers.clear();
        self.retire_buffers(b);
        let i = self.images.clear();
        self.retire_images(i);
    }
}

/// The GL-thread extension: the caches of every [`Cuda`] handle attached.
#[derive(Default)]
struct CudaOnGl(HashMap<u64, Caches>);

fn caches<'t>(th: &'t mut GlThread<'_>, id: u64) -> &'t mut Caches {
    th.extension::<CudaOnGl>()
        .0
        .entry(id)
        .or_insert_with(Caches::new)
}

impl Cuda {
    /// Attaches the GL thread of `gpu`: PBO tensors of it map by GL buffer
    /// interop, and [`map_egl`](Cuda::map_egl) imports dma-bufs through its
    /// EGLImage cache. Replaces an earlier attachment.
    pub fn attach_gpu(&self, gpu: &Gpu) {
        *self.gl_slot() = Some(GlAttachment {
            gpu: gpu.clone(),
            counters: Arc::default(),
        });
    }

    fn attachment(&self, path: &'static str, memory: TensorMemory) -> Result<GlAttachment> {
        self.gl_slot().clone().ok_or(CudaError::UnsupportedMemory {
            memory,
            path,
            reason: "no GPU attached (Cuda::attach_gpu)",
        })
    }

    /// Path (c): a PBO tensor of the attached GPU, mapped on its GL thread.
    pub(crate) fn map_gl_buffer<T: Element>(
        &self,
        tensor: &Tensor<T>,
        access: Access,
    ) -> Result<CudaMap> {
        let gl = self.attachment("GL buffer interop", TensorMemory::Pbo)?;
        let buffer = tensor.pbo_buffer().ok_or(CudaError::UnsupportedMemory {
            memory: tensor.memory(),
            path: "GL buffer interop",
            reason: "not a PBO tensor",
        })?;
        if !gl.gpu.owns_pbo(tensor) {
            return Err(CudaError::UnsupportedMemory {
                memory: TensorMemory::Pbo,
                path: "GL buffer interop",
                reason: "the PBO belongs to another Gpu than the one attached",
            });
        }
        // While CUDA has the buffer mapped GL must not touch it: the
        // device's borrow is exclusive whatever `access` is, so CPU maps (GL
        // maps of the PBO) and conversions using it are refused meanwhile.
        let borrow = tensor.device_borrow(Access::ReadWrite)?;
        let hold = tensor.memory_hold();
        let buffer_len = hold.len();
        let (offset, len) = (tensor.plane_offset(), span_len(tensor));
        let key = ImageKey {
            buffer: tensor.buffer_identity().id(),
            geometry: (buffer, buffer_len),
        };
        let alive = tensor.buffer_identity().weak();
        let (id, stream) = (self.id(), self.stream_ref().clone());
        let (job_device, job_stream, counters) = (
            Arc::clone(self.device()),
            stream.clone(),
            Arc::downgrade(&gl.counters),
        );
        let (resource, device_base, users) =
            gl.gpu
                .run_on_gl_thread("CUDA map of a GL buffer", move |th| {
                    if !th.is_buffer(buffer) {
                        return Err(CudaError::Mismatch {
                            call: "cuGraphicsGLRegisterBuffer",
                            what: format!("GL buffer {buffer} does not exist on the GL thread"),
                        });
                    }
                    let c = caches(th, id);
                    let mut retired = Vec::new();
                    let entry = c.buffers.get_or_insert_with(
                        key,
                        alive,
                        || {
                            let resource =
                                register(&job_device, "cuGraphicsGLRegisterBuffer", |d, out| {
                                    // SAFETY: a buffer name of the current GL context (checked
                                    // with glIsBuffer above) and a valid out-pointer.
                                    unsafe {
                                        (d.api.cuGraphicsGLRegisterBuffer)(
                                            out,
                                            buffer,
                                            ffi::GRAPHICS_REGISTER_NONE,
                                        )
                                    }
                                })?;
                            Ok::<_, CudaError>(Registration {
                                device: Arc::clone(&job_device),
                                resource,
                                users: Arc::new(()),
                                frame: None,
                                counter: counters,
                                is_egl: false,
                                _keep: hold,
                            })
                        },
                        &mut retired,
                    );
                    let found = entry.map(|e| (e.resource, Arc::clone(&e.users)));
                    c.retire_buffers(retired);
                    let (resource, users) = found?;
                    let (base, size) = map_resource(&job_device, resource, &job_stream)?;
                    Ok((resource, base, size)).and_then(|(r, base, size)| {
                        if size < offset + len {
                            unmap_resource(&job_device, r, &job_stream);
                            return Err(CudaError::Mismatch {
                                call: "cuGraphicsResourceGetMappedPointer_v2",
                                what: format!(
                                    "{size} bytes of GL buffer {buffer}; the tensor needs {}",
                                    offset + len
                                ),
                            });
                        }
                        Ok((r, base, users))
                    })
                })??;
        let pitch = crate::map::row_pitch(tensor, len);
        let device_ptr = device_base + offset as u64;
        Ok(CudaMap {
            host_ptr: None,
            device_ptr,
            len,
            shape: tensor.shape().to_vec(),
            strides: tensor.strides(),
            dtype: T::DTYPE,
            planes: vec![CudaPlane {
                device_ptr,
                pitch,
                shape: tensor.shape().to_vec(),
                len,
            }],
            path: CudaPath::GlBuffer,
            access,
            stream,
            integrated: self.info().integrated,
            _borrow: borrow,
            _keep: Keep::Interop {
                _map: InteropMap {
                    gpu: gl.gpu,
                    cuda: self.clone(),
                    resource,
                    mapped: true,
                    users: Some(users),
                },
            },
            _not_sync: PhantomData,
        })
    }
}

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
    /// gives a block-linear (array) frame or other planes than the image's.
    pub fn map_egl(&self, tensor: &Tensor<u8>, access: Access) -> Result<CudaMap> {
        let gl = self.attachment("EGLImage interop", tensor.memory())?;
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
        let alive = tensor.buffer_identity().weak();
        let (id, device, counters) = (
            self.id(),
            Arc::clone(self.device()),
            Arc::downgrade(&gl.counters),
        );
        let src = tensor.clone();
        let (resource, frame, users) =
            gl.gpu
                .run_on_gl_thread("CUDA map of an EGLImage", move |th| {
                    let image = if caches(th, id).images.contains(&key) {
                        None
                    } else {
                        Some(th.egl_image(&src)?)
                    };
                    let c = caches(th, id);
                    let mut retired = Vec::new();
                    let entry = c.images.get_or_insert_with(
                        key,
                        alive,
                        || {
                            let image = image.ok_or(CudaError::Mismatch {
                                call: "cuGraphicsEGLRegisterImage",
                                what: "no EGLImage to register".into(),
                            })?;
                            let resource =
                                register(&device, "cuGraphicsEGLRegisterImage", |d, out| {
                                    // SAFETY: a live EGLImage (held by the registration) and a
                                    // valid out-pointer.
                                    unsafe {
                                        (d.api.cuGraphicsEGLRegisterImage)(
                                            out,
                                            image.as_ptr(),
                                            ffi::GRAPHICS_REGISTER_NONE,
                                        )
                                    }
                                })?;
                            let mut registration = Registration {
                                device: Arc::clone(&device),
                                resource,
                                users: Arc::new(()),
                                frame: None,
                                counter: counters,
                                is_egl: true,
                                _keep: image,
                            };
                            let mut frame = CuEglFrame::default();
                            let _current = device.enter()?;
                            // SAFETY: a registered resource and a valid out-pointer; on
                            // failure the registration drops (unregistered).
                            device
                                .driver
                                .check("cuGraphicsResourceGetMappedEglFrame", unsafe {
                                    (device.driver.api.cuGraphicsResourceGetMappedEglFrame)(
                                        &mut frame,
                                        resource as CuHandle,
                                        0,
                                        0,
                                    )
                                })?;
                            registration.frame = Some(frame.into());
                            Ok::<_, CudaError>(registration)
                        },
                        &mut retired,
                    );
                    let found = entry.map(|e| {
                        (
                            e.resource,
                            e.frame.unwrap_or_default(),
                            Arc::clone(&e.users),
                        )
                    });
                    c.retire_images(retired);
                    found
                })??;
        if frame.frame_type != ffi::EGL_FRAME_TYPE_PITCH {
            return Err(CudaError::Mismatch {
                call: "cuGraphicsResourceGetMappedEglFrame",
                what: "a block-linear (array) frame; zerocam maps pitch-linear images".into(),
            });
        }
        let root = placement.root;
        let count = root.format.plane_count();
        if (frame.plane_count as usize) < count || count > 3 {
            return Err(CudaError::Mismatch {
                call: "cuGraphicsResourceGetMappedEglFrame",
                what: format!(
                    "{} planes for a {} image of {count}",
                    frame.plane_count, root.format
                ),
            });
        }
        let pitch = frame.pitch as usize;
        let mut planes = Vec::with_capacity(count);
        for (i, root_plane) in root.planes().iter().enumerate() {
            let plane = tensor.plane(i)?;
            // The view's offset in its root plane, as (row, byte in row).
            let inside = plane
                .plane_offset()
                .saturating_sub(root_plane.offset + placement.frame * root.batch_stride);
            let (row, col) = (
                inside / root_plane.stride.max(1),
                inside % root_plane.stride.max(1),
            );
            let device_ptr = frame.ptrs[i] + (row * pitch + col) as u64;
            let rows = plane.shape().first().copied().unwrap_or(0);
            planes.push(CudaPlane {
                device_ptr,
                pitch,
                shape: plane.shape().to_vec(),
                len: rows.saturating_sub(1) * pitch
                    + plane.shape().iter().skip(1).product::<usize>(),
            });
        }
        Ok(CudaMap {
            host_ptr: None,
            device_ptr: planes[0].device_ptr,
            len: planes[0].len,
            shape: tensor.shape().to_vec(),
            strides: None,
            dtype: zerocam_tensor::DType::U8,
            planes,
            path: CudaPath::EglImage,
            access,
            stream: self.stream_ref().clone(),
            integrated: self.info().integrated,
            _borrow: borrow,
            _keep: Keep::Interop {
                _map: InteropMap {
                    gpu: gl.gpu,
                    cuda: self.clone(),
                    resource,
                    mapped: false,
                    users: Some(users),
                },
            },
            _not_sync: PhantomData,
        })
    }
}

/// Bytes from a tensor's first element to the end of its last.
fn span_len<T: Element>(t: &Tensor<T>) -> usize {
    match t.strides() {
        Some(strides) => {
            t.shape()
                .iter()
                .zip(&strides)
                .map(|(n, s)| (n - 1) * s)
                .sum::<usize>()
                + T::DTYPE.size()
        }
        None => t.size(),
    }
}

/// Runs a `cuGraphics*Register*` call with the context current.
fn register(
    device: &Device,
    call: &'static str,
    f: impl FnOnce(&crate::Driver, *mut CuHandle) -> i32,
) -> Result<usize> {
    let _current = device.enter()?;
    let mut resource: CuHandle = std::ptr::null_mut();
    device
        .driver
        .check(call, f(&device.driver, &mut resource))?;
    Ok(resource as usize)
}

/// Maps a registered GL buffer for the device; its address and size.
fn map_resource(device: &Device, resource: usize, stream: &StreamRef) -> Result<(u64, usize)> {
    let d = &device.driver;
    let _current = device.enter()?;
    let mut r = resource as CuHandle;
    // SAFETY: one registered resource, a stream of this context.
    d.check("cuGraphicsMapResources", unsafe {
        (d.api.cuGraphicsMapResources)(1, &mut r, stream.handle())
    })?;
    let (mut ptr, mut size) = (0u64, 0usize);
    // SAFETY: a mapped resource and valid out-pointers.
    let got = d.check("cuGraphicsResourceGetMappedPointer_v2", unsafe {
        (d.api.cuGraphicsResourceGetMappedPointer_v2)(&mut ptr, &mut size, r)
    });
    if let Err(e) = got {
        unmap_resource(device, resource, stream);
        return Err(e);
    }
    Ok((ptr, size))
}

fn unmap_resource(device: &Device, resource: usize, stream: &StreamRef) {
    let d = &device.driver;
    if let Ok(_current) = device.enter() {
        let mut r = resource as CuHandle;
        // SAFETY: a resource mapped by `map_resource` on this stream.
        let _ = unsafe { (d.api.cuGraphicsUnmapResources)(1, &mut r, stream.handle()) };
    }
}

/// A [`CudaMap`]'s hold on a GL-side registration: on drop, the GL thread
/// unmaps the resource (GL buffers) and releases the registration's user.
/// It holds the [`Cuda`] handle: its caches outlive every map of them.
pub(crate) struct InteropMap {
    gpu: Gpu,
    cuda: Cuda,
    resource: usize,
    mapped: bool,
    users: Option<Arc<()>>,
}

impl Drop for InteropMap {
    fn drop(&mut self) {
        let (device, stream, resource, mapped, users, id) = (
            Arc::clone(self.cuda.device()),
            self.cuda.stream_ref().clone(),
            self.resource,
            self.mapped,
            self.users.take(),
            self.cuda.id(),
        );
        // Queued: runs before any GL work queued later (the PBO's next use,
        // its delete). A GL thread that has exited took the context along.
        let _ = self.gpu.queue_on_gl_thread("CUDA unmap", move |th| {
            if mapped {
                unmap_resource(&device, resource, &stream);
            }
            drop(users);
            if let Some(c) = th.extension::<CudaOnGl>().0.get_mut(&id) {
                c.retire_buffers(Vec::new());
                c.retire_images(Vec::new());
            }
        });
    }
}

pub(crate) fn sweep(cuda: &Cuda) {
    on_gl(cuda, "CUDA sweep", Caches::sweep);
}

pub(crate) fn clear(cuda: &Cuda) {
    on_gl(cuda, "CUDA clear", Caches::clear);
}

fn on_gl(cuda: &Cuda, job: &'static str, f: fn(&mut Caches)) {
    let Some(gl) = cuda.gl_slot().clone() else {
        return;
    };
    let id = cuda.id();
    let _ = gl.gpu.run_on_gl_thread(job, move |th| f(caches(th, id)));
}

pub(crate) fn fill_stats(cuda: &Cuda, stats: &mut CudaStats) {
    let Some(gl) = cuda.gl_slot().clone() else {
        return;
    };
    let id = cuda.id();
    let caches_stats = gl.gpu.run_on_gl_thread("CUDA stats", move |th| {
        let c = caches(th, id);
        (c.buffers.stats(), c.images.stats())
    });
    if let Ok((buffers, images)) = caches_stats {
        stats.gl_buffers = buffers;
        stats.egl_images = images;
    }
    stats.gl_unregistered = gl.counters.gl_unregistered.load(Ordering::Relaxed);
    stats.egl_unregistered = gl.counters.egl_unregistered.load(Ordering::Relaxed);
}

/// Forgets a dropped [`Cuda`] handle's GL-side caches (unregistering them).
pub(crate) fn detach(gl: &GlAttachment, id: u64) {
    let _ = gl.gpu.queue_on_gl_thread("CUDA detach", move |th| {
        th.extension::<CudaOnGl>().0.remove(&id);
    });
}
