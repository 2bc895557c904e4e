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
//!
//! `buffer.rs` is path (c), `egl.rs` path (b); this module holds what they
//! share: the registrations, the GL-side caches and the map's hold on them.

mod buffer;
mod egl;
mod egl_frame;
mod registration;

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use zerocam_cache::GpuImageCache;
use zerocam_gpu::{GlThread, Gpu, SharedEglImage, WeakGpu};
use zerocam_tensor::{Access, DeviceBorrow, Element, MemoryHold, RootLayout, Tensor, TensorMemory};

pub(crate) use registration::{Counters, Registration, Users};

use crate::cuda::{StreamRef, CACHE_CAPACITY};
use crate::device::Device;
use crate::driver::ffi::CuHandle;
use crate::map::{CudaMap, Keep, MapGeometry};
use crate::{Cuda, CudaError, CudaStats, Result};

/// The GL threads a [`Cuda`] handle is attached to, held weakly (an
/// attachment does not keep a GL thread alive: when its last `Gpu` goes,
/// the thread ends and frees this handle's registrations first), and the
/// handle's interop counters.
#[derive(Debug, Default)]
pub(crate) struct Attachments {
    gpus: Vec<WeakGpu>,
    pub counters: Arc<Counters>,
}

impl Attachments {
    /// The live attached GPUs, most recently attached first.
    fn live(&self) -> impl Iterator<Item = Gpu> + '_ {
        self.gpus.iter().rev().filter_map(WeakGpu::upgrade)
    }

    /// Whether a live GPU that imports dma-bufs is attached (a frame's
    /// path choice).
    #[cfg(feature = "capture")]
    pub fn has_egl(&self) -> bool {
        self.live().any(|g| g.info().dma_buf_import)
    }

    /// Forgets every attachment; the live GPUs, to detach from.
    pub fn take_live(&mut self) -> Vec<Gpu> {
        let live = self.live().collect();
        self.gpus.clear();
        live
    }
}

/// The GL-side key of a PBO registration: the buffer name and length.
pub(super) type GlKey = (u32, usize);
/// The GL-side key of an EGLImage registration: the root image and batch element.
pub(super) type EglKey = (RootLayout, usize);

/// One [`Cuda`] handle's registrations on one GL thread.
pub(crate) struct Caches {
    pub buffers: GpuImageCache<GlKey, Registration<MemoryHold>>,
    pub images: GpuImageCache<EglKey, Registration<SharedEglImage>>,
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
    pub fn retire_buffers(&mut self, retired: Vec<Registration<MemoryHold>>) {
        self.deferred_buffers.extend(retired);
        self.deferred_buffers.retain(Registration::in_use);
    }

    pub fn retire_images(&mut self, retired: Vec<Registration<SharedEglImage>>) {
        self.deferred_images.extend(retired);
        self.deferred_images.retain(Registration::in_use);
    }

    /// Sweeps both caches (entries whose tensors died) and the deferred ones.
    pub fn sweep(&mut self) {
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

/// This handle's caches on the GL thread, swept (every map sweeps first).
pub(super) fn caches<'t>(th: &'t mut GlThread<'_>, id: u64) -> &'t mut Caches {
    let c = th
        .extension::<CudaOnGl>()
        .0
        .entry(id)
        .or_insert_with(Caches::new);
    c.sweep();
    c
}

impl Cuda {
    /// Attaches the GL thread of `gpu` (weakly: it does not keep the thread
    /// alive): PBO tensors of it map by GL buffer interop, and
    /// [`map_egl`](Cuda::map_egl) imports dma-bufs through its EGLImage
    /// cache. A handle may be attached to several GPUs; attaching one twice
    /// changes nothing.
    ///
    /// CUDA's GL and EGL interop needs the GL thread on NVIDIA's own EGL: a
    /// GPU on another vendor's (`GpuInfo::egl_vendor`, e.g. Mesa picked by
    /// glvnd) is attached, and a warning logged; its maps will fail or hand
    /// CUDA another driver's image. [`Cuda::interop_gpu`] makes one on the
    /// right EGL device.
    pub fn attach_gpu(&self, gpu: &Gpu) {
        let vendor = &gpu.info().egl_vendor;
        if !vendor.contains("NVIDIA") {
            log::warn!(
                "attaching a GL thread on {vendor:?} EGL (renderer {:?}) to CUDA device {}: \
                 CUDA's GL/EGL interop needs NVIDIA's EGL (Cuda::interop_gpu opens it)",
                gpu.info().renderer,
                self.info().ordinal
            );
        }
        let mut a = self.gl_slot();
        a.gpus.retain(|g| g.upgrade().is_some());
        let token = gpu.owner_token();
        if !a.live().any(|g| g.owner_token() == token) {
            a.gpus.push(gpu.downgrade());
        }
    }

    /// A GL thread for this device's interop, attached: on the EGL device
    /// NVIDIA's EGL reports as this CUDA device (`EGL_CUDA_DEVICE_NV`,
    /// [`EglDisplay::CudaDevice`](zerocam_gpu::EglDisplay::CudaDevice)),
    /// whatever vendor glvnd would pick for the surfaceless platform. Where
    /// no EGL device is this CUDA device (Mesa's EGL, a container without
    /// NVIDIA's graphics libraries) it falls back to [`Gpu::new`], logging
    /// why; the GPU's `GpuInfo::egl_vendor` and `device` say which it got.
    ///
    /// # Errors
    /// The GPU's error when neither display can be opened.
    pub fn interop_gpu(&self) -> std::result::Result<Gpu, zerocam_gpu::GpuError> {
        let ordinal = self.info().ordinal;
        let gpu = match Gpu::with_display(zerocam_gpu::EglDisplay::CudaDevice(ordinal)) {
            Ok(gpu) => gpu,
            Err(e) => {
                log::warn!("no EGL display on CUDA device {ordinal} ({e}); using the default one");
                Gpu::new()?
            }
        };
        self.attach_gpu(&gpu);
        Ok(gpu)
    }

    /// The attached GPU whose GL thread owns PBO `tensor`.
    pub(super) fn gpu_of_pbo<T: Element>(
        &self,
        tensor: &Tensor<T>,
        path: &'static str,
    ) -> Result<Gpu> {
        let a = self.gl_slot();
        let found = a.live().find(|g| g.owns_pbo(tensor));
        found.ok_or(CudaError::UnsupportedMemory {
            memory: TensorMemory::Pbo,
            path,
            reason: "no GPU attached (Cuda::attach_gpu) owns this PBO",
        })
    }

    /// The most recently attached live GPU that imports dma-bufs.
    pub(super) fn egl_gpu(&self, memory: TensorMemory, path: &'static str) -> Result<Gpu> {
        let a = self.gl_slot();
        let found = a.live().find(|g| g.info().dma_buf_import);
        found.ok_or(CudaError::UnsupportedMemory {
            memory,
            path,
            reason: "no attached GPU imports dma-bufs (Cuda::attach_gpu)",
        })
    }

    pub(super) fn interop_counters(&self) -> std::sync::Weak<Counters> {
        Arc::downgrade(&self.gl_slot().counters)
    }
}

/// Bytes from a tensor's first element to the end of its last.
pub(super) fn span_len<T: Element>(t: &Tensor<T>) -> usize {
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
pub(super) fn register(
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
pub(super) fn map_resource(
    device: &Device,
    resource: usize,
    stream: &StreamRef,
) -> Result<(u64, usize)> {
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

pub(super) fn unmap_resource(device: &Device, resource: usize, stream: &StreamRef) {
    let d = &device.driver;
    if let Ok(_current) = device.enter() {
        let mut r = resource as CuHandle;
        // SAFETY: a resource mapped by `map_resource` on this stream.
        let _ = unsafe { (d.api.cuGraphicsUnmapResources)(1, &mut r, stream.handle()) };
    }
}

impl Cuda {
    /// A map of an interop `resource` (GL `mapped` per use, or EGL), holding
    /// a user of its registration.
    #[allow(clippy::too_many_arguments)] // the parts of one map, each once
    pub(super) fn interop_map(
        &self,
        geometry: MapGeometry,
        access: Access,
        borrow: DeviceBorrow,
        gpu: Gpu,
        resource: usize,
        mapped: bool,
        users: Arc<Users>,
    ) -> CudaMap {
        let keep = Keep::Interop {
            _map: InteropMap {
                gpu,
                cuda: self.clone(),
                resource,
                mapped,
                users: Some(users),
            },
        };
        CudaMap::assemble(geometry, self, access, borrow, keep)
    }
}

/// A [`CudaMap`]'s hold on a GL-side registration: on drop, the GL thread
/// unmaps the resource (GL buffers) and releases the registration's user.
/// It holds the [`Cuda`] handle (its caches outlive every map of them) and
/// the `Gpu` (its GL thread outlives the map).
pub(crate) struct InteropMap {
    gpu: Gpu,
    cuda: Cuda,
    resource: usize,
    mapped: bool,
    users: Option<Arc<Users>>,
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
            let gone = users
                .as_ref()
                .is_some_and(|u| u.gone.load(Ordering::Acquire));
            if mapped && !gone {
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
    on_gl(cuda, "CUDA sweep", |_| {});
}

pub(crate) fn clear(cuda: &Cuda) {
    on_gl(cuda, "CUDA clear", Caches::clear);
}

/// Runs `f` on this handle's (swept) caches on every attached GL thread.
fn on_gl(cuda: &Cuda, job: &'static str, f: fn(&mut Caches)) {
    let gpus: Vec<Gpu> = cuda.gl_slot().live().collect();
    let id = cuda.id();
    for gpu in gpus {
        let _ = gpu.run_on_gl_thread(job, move |th| f(caches(th, id)));
    }
}

pub(crate) fn fill_stats(cuda: &Cuda, stats: &mut CudaStats) {
    let (gpus, counters): (Vec<Gpu>, _) = {
        let a = cuda.gl_slot();
        (a.live().collect(), Arc::clone(&a.counters))
    };
    let id = cuda.id();
    for gpu in gpus {
        let got = gpu.run_on_gl_thread("CUDA stats", move |th| {
            let c = caches(th, id);
            (c.buffers.stats(), c.images.stats())
        });
        if let Ok((b, i)) = got {
            add(&mut stats.gl_buffers, b);
            add(&mut stats.egl_images, i);
        }
    }
    stats.gl_unregistered = counters.gl_unregistered.load(Ordering::Relaxed);
    stats.egl_unregistered = counters.egl_unregistered.load(Ordering::Relaxed);
    stats.interop_leaked = counters.leaked.load(Ordering::Relaxed);
}

fn add(total: &mut zerocam_cache::GpuCacheStats, s: zerocam_cache::GpuCacheStats) {
    total.hits += s.hits;
    total.imports += s.imports;
    total.evictions += s.evictions;
    total.swept += s.swept;
    total.live += s.live;
}

/// Forgets a dropped [`Cuda`] handle's caches on `gpu`'s GL thread
/// (unregistering them there).
pub(crate) fn detach(gpu: &Gpu, id: u64) {
    let _ = gpu.queue_on_gl_thread("CUDA detach", move |th| {
        th.extension::<CudaOnGl>().0.remove(&id);
    });
}
