//! The staged path: a frame the driver will not register, copied into a
//! device buffer of its own.
//!
//! NVIDIA's kernel module registers host memory by pinning its pages; a
//! mapping of pages it cannot pin (`VM_PFNMAP`/`VM_IO`: the DMA heap's
//! system heap, vb2-dma-contig buffers, udmabuf) is refused with
//! `CUDA_ERROR_INVALID_VALUE` on a discrete GPU since driver 550 (its
//! `follow_pfn` fallback is gone from modern kernels). Such a frame cannot
//! reach the device without a copy, so [`HostPath::Auto`] copies it: the
//! buffer's CPU mapping is copied with `cuMemcpyHtoDAsync` on the handle's
//! stream into device memory allocated once per physical buffer (cached like
//! a registration, freed when the buffer's tensors are gone), inside the
//! buffer's CPU read bracket. Never silent: each buffer's first refusal is
//! logged, the copies and bytes are counted ([`CudaStats`]), and the map
//! says [`CudaPath::Staged`]. A staged map is a copy for the device to read:
//! read-write is refused.
//!
//! [`CudaStats`]: crate::CudaStats
//! [`CudaPath::Staged`]: crate::CudaPath::Staged

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use zerocam_cache::{GpuCacheStats, GpuImageCache, ImageKey};
use zerocam_tensor::{Access, Element, Tensor};

use crate::device::Device;
use crate::host::{key_of, HostKey};
use crate::map::{CudaMap, CudaPath, Keep};
use crate::planes::PlaneLayout;
use crate::{Cuda, CudaError, HostRegisterError, Result};

/// How [`Cuda::map`] takes heap, shared-memory and dma-buf tensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HostPath {
    /// Host registration (path a); where the driver or the device refuses
    /// it, the staged copy. The default.
    #[default]
    Auto,
    /// Host registration only: a refusal is the error.
    Register,
    /// Always the staged copy (no registration).
    Staged,
}

/// A device buffer mirroring one host buffer.
pub(crate) struct StagedBuffer {
    device: Arc<Device>,
    dptr: u64,
}

impl Drop for StagedBuffer {
    fn drop(&mut self) {
        // No driver call in a fork() child: the parent's memory is the parent's.
        if let Ok(_current) = self.device.enter() {
            // SAFETY: allocated by `alloc`, freed once here; no map of it is
            // alive (each holds this buffer).
            let _ = unsafe { (self.device.driver.api.cuMemFree_v2)(self.dptr) };
        }
    }
}

type StagedCache = GpuImageCache<HostKey, Arc<StagedBuffer>>;

/// A handle's staged buffers, policy and counters.
pub(crate) struct Staging {
    cache: Mutex<StagedCache>,
    policy: AtomicU8,
    copies: AtomicU64,
    bytes: AtomicU64,
}

impl Staging {
    pub(crate) fn new() -> Staging {
        Staging {
            cache: Mutex::new(GpuImageCache::new(crate::cuda::CACHE_CAPACITY)),
            policy: AtomicU8::new(0),
            copies: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
        }
    }

    fn cache(&self) -> MutexGuard<'_, StagedCache> {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Drops the buffers whose tensors are all gone (outside the lock).
    pub(crate) fn sweep(&self) {
        let dead = self.cache().sweep();
        drop(dead);
    }

    /// Drops every cached buffer (maps alive keep theirs).
    pub(crate) fn clear(&self) {
        let all = self.cache().clear();
        drop(all);
    }

    /// (allocations and reuses, copies, bytes copied).
    pub(crate) fn stats(&self) -> (GpuCacheStats, u64, u64) {
        (
            self.cache().stats(),
            self.copies.load(Ordering::Relaxed),
            self.bytes.load(Ordering::Relaxed),
        )
    }

    pub(crate) fn policy(&self) -> HostPath {
        match self.policy.load(Ordering::Relaxed) {
            1 => HostPath::Register,
            2 => HostPath::Staged,
            _ => HostPath::Auto,
        }
    }
}

/// Whether `e`, the error of a host registration, is a refusal the staged
/// copy answers: the driver's `INVALID_VALUE` (memory it cannot pin) or
/// `NOT_SUPPORTED`, or the device's attributes saying no.
pub(crate) fn refused(e: &CudaError) -> bool {
    match e {
        CudaError::Driver { call, code, .. } => {
            *call == "cuMemHostRegister_v2" && matches!(*code, 1 | 801)
        }
        CudaError::HostRegister(h) => matches!(
            h,
            HostRegisterError::Unsupported { .. } | HostRegisterError::ReadOnlyUnsupported { .. }
        ),
        _ => false,
    }
}

impl Cuda {
    /// How heap, shared-memory and dma-buf tensors reach the device (see
    /// [`HostPath`]; [`Auto`](HostPath::Auto) by default).
    pub fn set_host_path(&self, path: HostPath) {
        let v = match path {
            HostPath::Auto => 0,
            HostPath::Register => 1,
            HostPath::Staged => 2,
        };
        self.staging().policy.store(v, Ordering::Relaxed);
    }

    /// The staged path: every buffer `tensor` spans copied into its device
    /// buffer (allocated on the buffer's first copy), inside the buffer's
    /// CPU read bracket, then the device's read borrow.
    pub(crate) fn map_staged<T: Element>(
        &self,
        tensor: &Tensor<T>,
        access: Access,
    ) -> Result<CudaMap> {
        if access.writes() {
            return Err(CudaError::UnsupportedMemory {
                memory: tensor.memory(),
                path: "a staged copy",
                reason: "a staged map is a copy of the buffer for the device to read: map it \
                         with Access::Read (the driver refused to register it, so the device \
                         cannot write the buffer itself)",
            });
        }
        self.staging().sweep();
        let layout = PlaneLayout::of(tensor, |plane, _pin, key| {
            let buffer = self.staged_buffer(plane, key)?;
            // The CPU read bracket (a dma-buf's sync) around the copy.
            let read = plane.map_read()?;
            self.copy_in(&buffer, key)?;
            drop(read);
            let base = buffer.dptr;
            Ok((buffer, base))
        })?;
        let borrow = tensor.device_borrow(Access::Read)?;
        let (geometry, buffers) = layout.into_geometry(tensor, CudaPath::Staged);
        let keep = Keep::Staged { _buffers: buffers };
        Ok(CudaMap::assemble(
            geometry,
            self,
            Access::Read,
            borrow,
            keep,
        ))
    }

    /// Whether the buffer `tensor` starts in has a staged buffer already
    /// (its registration was refused before: not asked again every frame).
    pub(crate) fn staged_before<T: Element>(&self, tensor: &Tensor<T>) -> bool {
        // Nothing staged (every buffer registered, the usual case): no pin,
        // which for a dma-buf is a sync pair, on the frame's path.
        if self.staging().cache().stats().live == 0 {
            return false;
        }
        let plane = if tensor.format().is_some() {
            tensor.plane(0)
        } else {
            Ok(tensor.clone())
        };
        let Ok(pin) = plane.and_then(|p| p.pin_host()) else {
            return false;
        };
        let key = ImageKey {
            buffer: tensor.buffer_identity().id(),
            geometry: key_of(&pin, !pin.writable()),
        };
        self.staging().cache().contains(&key)
    }

    /// The device buffer of the host buffer `key` of `tensor`: cached, or
    /// allocated now.
    fn staged_buffer<T: Element>(
        &self,
        tensor: &Tensor<T>,
        key: HostKey,
    ) -> Result<Arc<StagedBuffer>> {
        let key = ImageKey {
            buffer: tensor.buffer_identity().id(),
            geometry: key,
        };
        let mut retired = Vec::new();
        let found = self
            .staging()
            .cache()
            .get_or_insert_with(
                key,
                tensor.buffer_identity().weak(),
                || self.alloc(key.geometry.len).map(Arc::new),
                &mut retired,
            )
            .map(Arc::clone);
        drop(retired);
        found
    }

    /// `cuMemAlloc` of `len` bytes.
    fn alloc(&self, len: usize) -> Result<StagedBuffer> {
        let device = self.device();
        let _current = device.enter()?;
        let mut dptr = 0;
        // SAFETY: a valid out-pointer; the context is current.
        device.driver.check("cuMemAlloc_v2", unsafe {
            (device.driver.api.cuMemAlloc_v2)(&mut dptr, len)
        })?;
        log::info!("CUDA: a {len}-byte device buffer for a buffer the driver would not register (staged copies)");
        Ok(StagedBuffer {
            device: Arc::clone(device),
            dptr,
        })
    }

    /// Copies the host buffer `key` (mapped, its read bracket open) into
    /// `buffer` on the handle's stream, and waits for it.
    fn copy_in(&self, buffer: &StagedBuffer, key: HostKey) -> Result<()> {
        let device = self.device();
        {
            let _current = device.enter()?;
            // SAFETY: `key.base..+len` is the buffer's persistent CPU mapping
            // (pinned by the caller's tensor), the device buffer has `len`
            // bytes; the copy is waited for below, before the bracket ends.
            device.driver.check("cuMemcpyHtoDAsync_v2", unsafe {
                (device.driver.api.cuMemcpyHtoDAsync_v2)(
                    buffer.dptr,
                    key.base as *const std::ffi::c_void,
                    key.len,
                    self.stream_ref().handle(),
                )
            })?;
        }
        self.stream_ref().synchronize()?;
        let s = self.staging();
        s.copies.fetch_add(1, Ordering::Relaxed);
        s.bytes.fetch_add(key.len as u64, Ordering::Relaxed);
        Ok(())
    }
}
