//! [`Cuda`]: one device, its stream, and the caches of what has been
//! registered with it, keyed like the GPU crate's EGLImage cache
//! ([`BufferIdentity`](zerocam_tensor::BufferIdentity) + geometry) and swept
//! when the identity dies.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use zerocam_cache::{GpuCacheStats, GpuImageCache, ImageKey};
use zerocam_tensor::{Access, Element, Tensor, TensorDyn, TensorMemory};

use crate::device::Device;
use crate::host::{HostKey, HostRegistration};
use crate::map::{CudaMap, CudaPath, Keep};
use crate::planes::PlaneLayout;
pub(crate) use crate::stream::StreamRef;
use crate::{CudaError, CudaInfo, Driver, Result};

/// Registrations kept per cache (the GPU crate keeps as many EGLImages).
pub(crate) const CACHE_CAPACITY: usize = 32;

type HostCache = GpuImageCache<HostKey, Arc<HostRegistration>>;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A CUDA device with the tensors registered on it.
///
/// Cheap to clone (one `Arc`); every clone shares the caches. A buffer is
/// registered the first time it is mapped and stays registered while its
/// tensors live (up to 32 buffers per path, least recently used evicted), so
/// a camera cycling N buffers costs N registrations, whatever the number of
/// frames.
///
/// ```no_run
/// use zerocam_cuda::Cuda;
/// use zerocam_tensor::{Access, Tensor, TensorMemory};
/// let cuda = Cuda::new()?; // CudaError::Unavailable without a driver
/// let t = Tensor::<u8>::new(&[480, 640, 3], Some(TensorMemory::Shm), None)?;
/// let map = cuda.map(&t, Access::Read)?;
/// println!("{:#x} {} bytes, stream {:?}", map.device_ptr(), map.len(), map.stream());
/// # Ok::<(), zerocam_cuda::CudaError>(())
/// ```
#[derive(Clone)]
pub struct Cuda {
    inner: Arc<Inner>,
}

struct Inner {
    /// Process-unique: names this handle's caches on a GL thread.
    #[cfg_attr(not(feature = "gl"), allow(dead_code))]
    id: u64,
    // First: registrations and staged buffers go before the stream and the
    // context.
    host: Mutex<HostCache>,
    staging: crate::staged::Staging,
    #[cfg(feature = "gl")]
    pub(crate) gl: Mutex<crate::gl::Attachments>,
    stream: StreamRef,
    info: CudaInfo,
    host_unregistered: Arc<AtomicU64>,
    maps: AtomicU64,
    device: Arc<Device>,
}

impl std::fmt::Debug for Cuda {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cuda")
            .field("info", &self.inner.info)
            .finish()
    }
}

/// The counters of a [`Cuda`] handle.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CudaStats {
    /// Maps made (every path).
    pub maps: u64,
    /// Path (a): `imports` is the number of `cuMemHostRegister` calls that
    /// succeeded (or found the buffer registered by another library), `hits`
    /// the maps that found their buffer registered.
    pub host: GpuCacheStats,
    /// Path (a): `cuMemHostUnregister` calls that succeeded.
    pub host_unregistered: u64,
    /// Path (c): GL buffer registrations (`cuGraphicsGLRegisterBuffer`).
    pub gl_buffers: GpuCacheStats,
    /// Path (c): GL buffer registrations released.
    pub gl_unregistered: u64,
    /// Path (b): EGLImage registrations (`cuGraphicsEGLRegisterImage`).
    pub egl_images: GpuCacheStats,
    /// Path (b): EGLImage registrations released.
    pub egl_unregistered: u64,
    /// Paths (b) and (c): registrations whose unregister failed; their GL
    /// buffer or EGLImage was leaked rather than freed under CUDA.
    pub interop_leaked: u64,
    /// The staged path: `imports` is the device buffers allocated (one per
    /// host buffer the driver would not register), `hits` the maps that
    /// found theirs.
    pub staged: GpuCacheStats,
    /// The staged path: buffers copied to the device (one per buffer per map).
    pub staged_copies: u64,
    /// The staged path: bytes copied to the device.
    pub staged_bytes: u64,
}

impl Cuda {
    /// Device 0 of the process's driver ([`Driver::shared`]).
    ///
    /// # Errors
    /// [`CudaError::Unavailable`] without a driver library;
    /// [`CudaError::NoDevice`]; a driver error.
    pub fn new() -> Result<Cuda> {
        Cuda::with_driver(Driver::shared()?, 0)
    }

    /// Device `ordinal` of the driver library at `library` (a test double,
    /// or a driver outside the loader's path).
    ///
    /// # Errors
    /// As [`new`](Cuda::new).
    pub fn with_library(library: impl AsRef<Path>, ordinal: i32) -> Result<Cuda> {
        Cuda::with_driver(Driver::load(library)?, ordinal)
    }

    /// Device `ordinal` of `driver`.
    ///
    /// # Errors
    /// [`CudaError::NoDevice`]; a driver error.
    pub fn with_driver(driver: Arc<Driver>, ordinal: i32) -> Result<Cuda> {
        let device = Arc::new(Device::open(driver, ordinal)?);
        let info = device.info(ordinal)?;
        let stream = StreamRef::create(&device)?;
        Ok(Cuda {
            inner: Arc::new(Inner {
                id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                host: Mutex::new(GpuImageCache::new(CACHE_CAPACITY)),
                staging: crate::staged::Staging::new(),
                #[cfg(feature = "gl")]
                gl: Mutex::default(),
                stream,
                info,
                host_unregistered: Arc::new(AtomicU64::new(0)),
                maps: AtomicU64::new(0),
                device,
            }),
        })
    }

    /// Runs `f` with the device's primary context current on this thread
    /// (pushed before, popped after): for driver calls of your own, or a
    /// library that expects a current context (TensorRT, cuBLAS).
    ///
    /// # Errors
    /// The driver's error when the context cannot be made current.
    pub fn with_current<R>(&self, f: impl FnOnce() -> R) -> Result<R> {
        let _current = self.inner.device.enter()?;
        Ok(f())
    }

    /// What the device is and can do.
    pub fn info(&self) -> &CudaInfo {
        &self.inner.info
    }

    /// The driver library.
    pub fn driver(&self) -> &Arc<Driver> {
        &self.inner.device.driver
    }

    /// The handle's non-blocking `CUstream` (every map's
    /// [`stream`](CudaMap::stream)).
    pub fn stream(&self) -> *mut std::ffi::c_void {
        self.inner.stream.handle()
    }

    #[cfg_attr(not(feature = "gl"), allow(dead_code))]
    pub(crate) fn id(&self) -> u64 {
        self.inner.id
    }

    #[cfg_attr(not(feature = "gl"), allow(dead_code))]
    pub(crate) fn device(&self) -> &Arc<Device> {
        &self.inner.device
    }

    #[cfg_attr(not(feature = "gl"), allow(dead_code))]
    pub(crate) fn stream_ref(&self) -> &StreamRef {
        &self.inner.stream
    }

    #[cfg(feature = "gl")]
    pub(crate) fn gl_slot(&self) -> MutexGuard<'_, crate::gl::Attachments> {
        self.inner.gl.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn staging(&self) -> &crate::staged::Staging {
        &self.inner.staging
    }

    fn host_cache(&self) -> MutexGuard<'_, HostCache> {
        self.inner
            .host
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Maps `tensor` into the device for `access`: heap, shared memory and
    /// dma-buf tensors by host registration (path a), PBO tensors by GL
    /// buffer interop (path c, once a GPU is attached with
    /// [`attach_gpu`](Cuda::attach_gpu)). A buffer is registered once; later
    /// maps of it (any view) are cache hits.
    ///
    /// # Errors
    /// [`CudaError::UnsupportedMemory`] (a PBO without an attached GPU);
    /// [`zerocam_tensor::Error::MapConflict`] while a conflicting CPU map is
    /// alive; [`zerocam_tensor::Error::ReadOnly`] for a write map of read-only
    /// memory; [`CudaError::HostRegister`] where the device cannot register
    /// the buffer; the driver's error (e.g. a dma-buf it cannot register).
    pub fn map<T: Element>(&self, tensor: &Tensor<T>, access: Access) -> Result<CudaMap> {
        let map = match (tensor.memory(), self.inner.staging.policy()) {
            (TensorMemory::Pbo, _) => self.map_gl_buffer(tensor, access)?,
            (_, crate::HostPath::Staged) => self.map_staged(tensor, access)?,
            (_, crate::HostPath::Register) => self.map_host(tensor, access)?,
            (_, crate::HostPath::Auto) if !access.writes() && self.staged_before(tensor) => {
                self.map_staged(tensor, access)?
            }
            (memory, crate::HostPath::Auto) => match self.map_host(tensor, access) {
                Err(e) if crate::staged::refused(&e) && !access.writes() => {
                    log::warn!("CUDA would not register this {memory} buffer ({e}): copying it to the device instead (the staged path)");
                    self.map_staged(tensor, access)?
                }
                other => other?,
            },
        };
        self.inner.maps.fetch_add(1, Ordering::Relaxed);
        Ok(map)
    }

    /// [`map`](Cuda::map) of a tensor of any element type (a model input from
    /// `Preprocessor::run`, say).
    ///
    /// # Errors
    /// As [`map`](Cuda::map).
    pub fn map_dyn(&self, tensor: &TensorDyn, access: Access) -> Result<CudaMap> {
        match tensor {
            TensorDyn::U8(t) => self.map(t, access),
            TensorDyn::I8(t) => self.map(t, access),
            TensorDyn::U16(t) => self.map(t, access),
            TensorDyn::I16(t) => self.map(t, access),
            TensorDyn::U32(t) => self.map(t, access),
            TensorDyn::I32(t) => self.map(t, access),
            TensorDyn::F16(t) => self.map(t, access),
            TensorDyn::F32(t) => self.map(t, access),
            TensorDyn::F64(t) => self.map(t, access),
            other => Err(CudaError::Mismatch {
                call: "Cuda::map_dyn",
                what: format!(
                    "a tensor of {} elements, which zerocam-cuda does not know",
                    other.dtype()
                ),
            }),
        }
    }

    #[cfg(not(feature = "gl"))]
    fn map_gl_buffer<T: Element>(&self, _tensor: &Tensor<T>, _access: Access) -> Result<CudaMap> {
        Err(CudaError::UnsupportedMemory {
            memory: TensorMemory::Pbo,
            path: "GL buffer interop",
            reason: "zerocam-cuda was built without its `gl` feature",
        })
    }

    /// Path (a) for any tensor: registers (or finds) every buffer it spans,
    /// one cache lookup per buffer (an NV12 image's two planes share one).
    pub(crate) fn map_host<T: Element>(
        &self,
        tensor: &Tensor<T>,
        access: Access,
    ) -> Result<CudaMap> {
        self.sweep_host();
        let layout = PlaneLayout::of(tensor, |plane, pin, key| {
            if access.writes() && !pin.writable() {
                return Err(zerocam_tensor::Error::ReadOnly { requested: access }.into());
            }
            let registration = self.register_host(plane, pin, key)?;
            let base = registration.device_base;
            Ok((registration, base))
        })?;
        // After the pins (a read bracket each): the device's borrow from now on.
        let borrow = tensor.device_borrow(access)?;
        let (geometry, registrations) = layout.into_geometry(tensor, CudaPath::HostRegistered);
        let keep = Keep::Host {
            _registrations: registrations,
        };
        Ok(CudaMap::assemble(geometry, self, access, borrow, keep))
    }

    /// The registration of the one buffer `tensor` (pinned as `pin`) lies
    /// in: cached, or registered now.
    fn register_host<T: Element>(
        &self,
        tensor: &Tensor<T>,
        pin: &zerocam_tensor::HostPin,
        key: HostKey,
    ) -> Result<Arc<HostRegistration>> {
        let key = ImageKey {
            buffer: tensor.buffer_identity().id(),
            geometry: key,
        };
        let mut retired = Vec::new();
        let found = self
            .host_cache()
            .get_or_insert_with(
                key,
                tensor.buffer_identity().weak(),
                || {
                    HostRegistration::find_or_register(
                        &self.inner.device,
                        &self.inner.info,
                        pin,
                        tensor.memory_hold(),
                        key.geometry.read_only,
                        &self.inner.host_unregistered,
                    )
                },
                &mut retired,
            )
            .map(Arc::clone);
        drop(retired); // unregistered outside the lock
        found
    }

    /// Drops the host registrations whose tensors are all gone (outside the lock).
    fn sweep_host(&self) {
        let dead = self.host_cache().sweep();
        drop(dead);
    }

    /// Drops the registrations whose tensors are all gone (also done before
    /// every map and by [`stats`](Cuda::stats)).
    pub fn sweep(&self) {
        self.sweep_host();
        self.inner.staging.sweep();
        #[cfg(feature = "gl")]
        crate::gl::sweep(self);
    }

    /// Drops every cached registration (maps alive keep theirs until they drop).
    pub fn clear(&self) {
        let all = self.host_cache().clear();
        drop(all);
        self.inner.staging.clear();
        #[cfg(feature = "gl")]
        crate::gl::clear(self);
    }

    /// The counters, after a sweep.
    pub fn stats(&self) -> CudaStats {
        self.sweep();
        let host = self.host_cache().stats();
        let (staged, staged_copies, staged_bytes) = self.inner.staging.stats();
        #[allow(unused_mut)]
        let mut stats = CudaStats {
            maps: self.inner.maps.load(Ordering::Relaxed),
            host,
            host_unregistered: self.inner.host_unregistered.load(Ordering::Relaxed),
            staged,
            staged_copies,
            staged_bytes,
            ..CudaStats::default()
        };
        #[cfg(feature = "gl")]
        crate::gl::fill_stats(self, &mut stats);
        stats
    }
}

#[cfg(feature = "gl")]
impl Drop for Inner {
    fn drop(&mut self) {
        let attached = self.gl.get_mut().unwrap_or_else(PoisonError::into_inner);
        for gpu in attached.take_live() {
            crate::gl::detach(&gpu, self.id);
        }
    }
}
