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
//! outlives it) and unregisters in its `Drop` before the hold goes: the memory
//! is never unmapped while registered, whatever drops first. (A hold, not a
//! pin: the tensor's `handle_count` does not see it, so an output pool still
//! reuses a tensor that CUDA has registered.)

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

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
    // Last: the mapping outlives the registration (unregistered in `drop`).
    _hold: MemoryHold,
}

// SAFETY: the addresses are plain numbers here (used only in driver calls);
// the pin and device are Send + Sync.
unsafe impl Send for HostRegistration {}
// SAFETY: as above; nothing is mutated through `&HostRegistration`.
unsafe impl Sync for HostRegistration {}

impl HostRegistration {
    /// Registers the whole buffer `pin` lies in; `hold` (of the same buffer)
    /// keeps it mapped.
    pub fn register(
        device: &Arc<Device>,
        pin: &HostPin,
        hold: MemoryHold,
        read_only: bool,
        unregistered: &Arc<AtomicU64>,
    ) -> Result<HostRegistration> {
        let key = key_of(pin, read_only);
        let driver = &device.driver;
        let _current = device.enter()?;
        let mut flags = ffi::MEMHOSTREGISTER_DEVICEMAP;
        if read_only {
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
            _hold: hold,
        })
    }
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
        // A context that cannot be made current (the driver torn down at
        // exit) leaves the memory registered; it is still unmapped after.
        if let Ok(_current) = self.device.enter() {
            // SAFETY: registered by `register`, unregistered once here, while
            // `_hold` still keeps it mapped.
            let code = unsafe { (driver.api.cuMemHostUnregister)(self.key.base as *mut _) };
            if code == ffi::CUDA_SUCCESS {
                self.unregistered.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}
