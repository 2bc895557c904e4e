//! Path (a): host registration. A tensor's persistent CPU mapping (heap,
//! shared memory, a dma-buf where the driver allows it) is page-locked and
//! mapped into the device with `cuMemHostRegister(DEVICEMAP)` once per
//! buffer, and its device address found with `cuMemHostGetDevicePointer`.
//!
//! On an integrated GPU (Jetson) the device reads the same DRAM: true zero
//! copy. On a discrete GPU it is mapped pinned memory: kernels read it over
//! PCIe, or a `cuMemcpy` moves it by DMA without the CPU.
//!
//! A [`HostRegistration`] holds the buffer's [`MemoryHold`] (so the mapping
//! outlives it) and unregisters in its `Drop` before the hold goes (or
//! leaks the hold when the unregister fails): the memory
//! is never unmapped while registered, whatever drops first. (A hold, not a
//! pin: the tensor's `handle_count` does not see it, so an output pool still
//! reuses a tensor that CUDA has registered.)

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};

use zerocam_tensor::{HostPin, MemoryHold};

use crate::device::Device;
use crate::driver::ffi;
use crate::Result;

/// What a host registration depends on besides the buffer identity: the
/// mapping's address and length (a two-buffer image has two), and whether it
/// was registered read-only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct HostKey {
    pub base: usize,
    pub len: usize,
    pub read_only: bool,
}

/// One buffer registered with the device.
pub(crate) struct HostRegistration {
    device: Arc<Device>,
    pub key: HostKey,
    pub device_base: u64,
    unregistered: Arc<AtomicU64>,
    /// The mapping: released after the unregister, leaked if it failed.
    hold: Option<MemoryHold>,
}

impl HostRegistration {
    /// The registration of the whole buffer `pin` lies in: the one alive in
    /// the process for that range on this device's context (another `Cuda`
    /// handle's, one evicted from a cache while a map still uses it, another
    /// import of the same mapping), or a new one keeping `hold` (of the same
    /// buffer). CUDA refuses to register a range twice, so there is one per
    /// range at a time.
    pub fn find_or_register(
        device: &Arc<Device>,
        pin: &HostPin,
        hold: MemoryHold,
        read_only: bool,
        unregistered: &Arc<AtomicU64>,
    ) -> Result<Arc<HostRegistration>> {
        let key = key_of(pin, read_only);
        let live_key = (device.context_id(), key.base, key.len);
        for _ in 0..1000 {
            let mut live = live_registrations();
            match live.get(&live_key).map(Weak::upgrade) {
                Some(Some(alive)) => return Ok(alive),
                // Its last holder is unregistering it now: wait for that.
                Some(None) => {
                    drop(live);
                    std::thread::yield_now();
                }
                None => {
                    let r = Arc::new(Self::register(device, key, hold, unregistered)?);
                    live.insert(live_key, Arc::downgrade(&r));
                    return Ok(r);
                }
            }
        }
        Err(crate::CudaError::Mismatch {
            call: "cuMemHostRegister_v2",
            what: format!("{:#x}+{} is still being unregistered", key.base, key.len),
        })
    }

    fn register(
        device: &Arc<Device>,
        key: HostKey,
        hold: MemoryHold,
        unregistered: &Arc<AtomicU64>,
    ) -> Result<HostRegistration> {
        let driver = &device.driver;
        let _current = device.enter()?;
        let mut flags = ffi::MEMHOSTREGISTER_DEVICEMAP;
        if key.read_only {
            flags |= ffi::MEMHOSTREGISTER_READ_ONLY;
        }
        let base = key.base as *mut std::ffi::c_void;
        // SAFETY: `base..base+len` is the buffer's mapping, kept mapped by
        // `hold` (moved into the registration) until after the unregister.
        driver.check("cuMemHostRegister_v2", unsafe {
            (driver.api.cuMemHostRegister_v2)(base, key.len, flags)
        })?;
        let mut device_base = 0;
        // SAFETY: a registered address and a valid out-pointer.
        let found = driver.check("cuMemHostGetDevicePointer_v2", unsafe {
            (driver.api.cuMemHostGetDevicePointer_v2)(&mut device_base, base, 0)
        });
        if let Err(e) = found {
            // SAFETY: registered just above, not handed out.
            let _ = unsafe { (driver.api.cuMemHostUnregister)(base) };
            return Err(e);
        }
        Ok(HostRegistration {
            device: Arc::clone(device),
            key,
            device_base,
            unregistered: Arc::clone(unregistered),
            hold: Some(hold),
        })
    }
}

/// Host registrations alive in the process, by (context, base, length).
type Live = HashMap<(usize, usize, usize), Weak<HostRegistration>>;

fn live_registrations() -> MutexGuard<'static, Live> {
    static LIVE: OnceLock<Mutex<Live>> = OnceLock::new();
    LIVE.get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

/// The cache key of the buffer `pin` lies in.
pub(crate) fn key_of(pin: &HostPin, read_only: bool) -> HostKey {
    HostKey {
        base: pin.ptr().as_ptr() as usize - pin.buffer_offset(),
        len: pin.buffer_len(),
        read_only,
    }
}

impl Drop for HostRegistration {
    fn drop(&mut self) {
        let driver = &self.device.driver;
        // Under the registry's lock: a new registration of the range waits
        // until this one is gone from the driver and from the registry.
        let mut live = live_registrations();
        let mut done = false;
        if let Ok(_current) = self.device.enter() {
            // SAFETY: registered by `register`, unregistered once here, while
            // `hold` still keeps it mapped.
            let code = unsafe { (driver.api.cuMemHostUnregister)(self.key.base as *mut _) };
            done = code == ffi::CUDA_SUCCESS;
        }
        live.remove(&(self.device.context_id(), self.key.base, self.key.len));
        if done {
            self.unregistered.fetch_add(1, Ordering::Relaxed);
        } else {
            // A context that cannot be made current (the driver torn down at
            // exit) or a failed unregister: the device may still reach the
            // memory, so it is leaked, never unmapped under it.
            std::mem::forget(self.hold.take());
        }
    }
}
