//! [`Registration`]: one graphics resource registered with CUDA, and what
//! keeps its GL object alive until CUDA has let go of it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use crate::cuda::StreamRef;
use crate::device::Device;
use crate::driver::ffi::{self, CuHandle};

/// Unregistrations counted from the GL thread (one set per [`Cuda`](crate::Cuda) handle).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub gl_unregistered: AtomicU64,
    pub egl_unregistered: AtomicU64,
    /// Unregistrations that failed: their GL object was leaked, not freed.
    pub leaked: AtomicU64,
}

/// The live maps of a registration (one `Arc` each, plus the
/// registration's own), and whether the registration is gone: a map whose
/// registration was torn down under it (the GL thread poisoned or ending)
/// must not unmap the freed handle.
#[derive(Debug, Default)]
pub(crate) struct Users {
    pub gone: AtomicBool,
}

/// A registered graphics resource and what keeps its GL object alive
/// (`K`: the PBO's `MemoryHold` or the `SharedEglImage`). Lives and drops on
/// the GL thread.
pub(crate) struct Registration<K> {
    pub device: Arc<Device>,
    pub stream: StreamRef,
    pub resource: usize,
    pub users: Arc<Users>,
    counter: Weak<Counters>,
    is_egl: bool,
    /// Taken in `drop`: released after the unregister, leaked if it failed.
    keep: Option<K>,
}

impl<K> Registration<K> {
    /// A registration of `resource` (GL buffer interop, or EGL when `is_egl`)
    /// that keeps `keep` until it is unregistered.
    pub fn new(
        device: &Arc<Device>,
        stream: &StreamRef,
        resource: usize,
        counter: Weak<Counters>,
        is_egl: bool,
        keep: K,
    ) -> Registration<K> {
        Registration {
            device: Arc::clone(device),
            stream: stream.clone(),
            resource,
            users: Arc::default(),
            counter,
            is_egl,
            keep: Some(keep),
        }
    }

    /// Whether a [`CudaMap`](crate::CudaMap) uses it now.
    pub fn in_use(&self) -> bool {
        Arc::strong_count(&self.users) > 1
    }
}

impl<K> Drop for Registration<K> {
    fn drop(&mut self) {
        let d = &self.device.driver;
        let mut unregistered = false;
        if let Ok(_current) = self.device.enter() {
            if self.in_use() {
                // Torn down under a live map (the GL thread poisoned or
                // ending): let the device finish with it, unmap a GL buffer,
                // and tell the map not to unmap again.
                let _ = self.stream.synchronize();
                if !self.is_egl {
                    let mut r = self.resource as CuHandle;
                    // SAFETY: a resource mapped by the live map, on this stream.
                    let _ = unsafe {
                        (d.api.cuGraphicsUnmapResources)(1, &mut r, self.stream.handle())
                    };
                }
                self.users.gone.store(true, Ordering::Release);
            }
            // SAFETY: registered once by `register`, unregistered once here,
            // on the GL thread, while `keep` holds the GL object.
            let code = unsafe { (d.api.cuGraphicsUnregisterResource)(self.resource as CuHandle) };
            unregistered = code == ffi::CUDA_SUCCESS;
        }
        let counter = self.counter.upgrade();
        if unregistered {
            if let Some(c) = &counter {
                let n = if self.is_egl {
                    &c.egl_unregistered
                } else {
                    &c.gl_unregistered
                };
                n.fetch_add(1, Ordering::Relaxed);
            }
        } else {
            // CUDA may still reference the object: leaking it is safe,
            // freeing it is not.
            std::mem::forget(self.keep.take());
            if let Some(c) = &counter {
                c.leaked.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}
