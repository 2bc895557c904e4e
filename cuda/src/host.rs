//! Path (a): host registration. A tensor's persistent CPU mapping (heap,
//! shared memory, a dma-buf where the driver allows it) is page-locked and
//! mapped into the device with `cuMemHostRegister(DEVICEMAP)` once per
//! buffer, and its device address found with `cuMemHostGetDevicePointer`.
//!
//! On an integrated GPU (Jetson) the device reads the same DRAM: true zero
//! copy. On a discrete GPU it is mapped pinned memory: kernels read it over
//! PCIe, or a `cuMemcpy` moves it by DMA without the CPU.
//!
//! Before registering, the device's attributes say whether it may:
//! `CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED` must be 1, and a read-only
//! mapping is registered with `CU_MEMHOSTREGISTER_READ_ONLY` only where
//! `CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED` is 1 (else a typed
//! [`HostRegisterError`]). A buffer another library of the process has
//! registered already (`torch.pin_memory`, a GStreamer CUDA buffer pool:
//! `CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED`) is used through that
//! registration when it covers the whole buffer (`cuPointerGetAttribute`),
//! and left to its owner: never unregistered here.
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
use crate::{CudaInfo, HostRegisterError, Result};

// The pointer attributes read below are 64-bit values (`size_t` included).
const _: () = assert!(std::mem::size_of::<usize>() == 8);

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
    /// Registered by another library of the process: used, never unregistered.
    foreign: bool,
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
        info: &CudaInfo,
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
                    let r = Arc::new(Self::register(device, info, key, hold, unregistered)?);
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
        info: &CudaInfo,
        key: HostKey,
        hold: MemoryHold,
        unregistered: &Arc<AtomicU64>,
    ) -> Result<HostRegistration> {
        let flags = register_flags(info, key)?;
        let driver = &device.driver;
        let _current = device.enter()?;
        let base = key.base as *mut std::ffi::c_void;
        // SAFETY: `base..base+len` is the buffer's mapping, kept mapped by
        // `hold` (moved into the registration) until after the unregister.
        let code = unsafe { (driver.api.cuMemHostRegister_v2)(base, key.len, flags) };
        let (device_base, foreign) = if code == ffi::CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED {
            // Not ours (ours are found in the live table first): used as it is.
            let device_base = registered_elsewhere(device, key)?;
            log::info!(
                "{:#x}+{} is registered with CUDA elsewhere in the process: used, left to its owner",
                key.base,
                key.len
            );
            (device_base, true)
        } else {
            driver.check("cuMemHostRegister_v2", code)?;
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
            (device_base, false)
        };
        Ok(HostRegistration {
            device: Arc::clone(device),
            key,
            device_base,
            unregistered: Arc::clone(unregistered),
            foreign,
            hold: Some(hold),
        })
    }
}

/// The `cuMemHostRegister` flags for `key` on the device `info` describes:
/// `DEVICEMAP`, and `READ_ONLY` for a read-only mapping; refused where the
/// device's attributes say the driver would.
fn register_flags(info: &CudaInfo, key: HostKey) -> Result<std::ffi::c_uint, HostRegisterError> {
    let reported = |attribute, value: bool| {
        (!info.unknown_attributes.contains(&attribute)).then_some(i32::from(value))
    };
    // A driver older than attribute 99 (CUDA 11.0: JetPack 4's 10.2 among
    // them) registers host memory all the same (cuMemHostRegister is from
    // CUDA 4.0): it is tried there, and the driver's own error tells.
    let too_old_to_say = info
        .unknown_attributes
        .contains(&ffi::ATTR_HOST_REGISTER_SUPPORTED);
    if !info.host_register && !too_old_to_say {
        return Err(HostRegisterError::Unsupported {
            ordinal: info.ordinal,
            reported: reported(ffi::ATTR_HOST_REGISTER_SUPPORTED, info.host_register),
        });
    }
    if !key.read_only {
        return Ok(ffi::MEMHOSTREGISTER_DEVICEMAP);
    }
    if !info.read_only_host_register {
        return Err(HostRegisterError::ReadOnlyUnsupported {
            ordinal: info.ordinal,
            reported: reported(
                ffi::ATTR_READ_ONLY_HOST_REGISTER_SUPPORTED,
                info.read_only_host_register,
            ),
            base: key.base,
            len: key.len,
        });
    }
    Ok(ffi::MEMHOSTREGISTER_DEVICEMAP | ffi::MEMHOSTREGISTER_READ_ONLY)
}

/// The device address of `key`'s range, registered by another library of
/// the process, if that registration covers the whole range
/// (`CU_POINTER_ATTRIBUTE_RANGE_START_ADDR` / `RANGE_SIZE`, in the address
/// space of the pointer asked about) and maps it into the device
/// (`CU_POINTER_ATTRIBUTE_DEVICE_POINTER`). The context is current.
fn registered_elsewhere(device: &Device, key: HostKey) -> Result<u64, HostRegisterError> {
    let ask = |attribute, name| pointer_attribute(device, key, attribute, name);
    let start = ask(
        ffi::POINTER_ATTRIBUTE_RANGE_START_ADDR,
        "CU_POINTER_ATTRIBUTE_RANGE_START_ADDR",
    )?;
    let size = ask(
        ffi::POINTER_ATTRIBUTE_RANGE_SIZE,
        "CU_POINTER_ATTRIBUTE_RANGE_SIZE",
    )?;
    let (base, len) = (key.base as u64, key.len as u64);
    let covered = start <= base
        && base
            .checked_add(len)
            .is_some_and(|end| start.checked_add(size).is_some_and(|limit| end <= limit));
    if !covered {
        return Err(HostRegisterError::PartlyRegisteredElsewhere {
            base: key.base,
            len: key.len,
            start,
            size,
        });
    }
    ask(
        ffi::POINTER_ATTRIBUTE_DEVICE_POINTER,
        "CU_POINTER_ATTRIBUTE_DEVICE_POINTER",
    )
}

/// `cuPointerGetAttribute(attribute)` of `key.base`: one 64-bit value.
fn pointer_attribute(
    device: &Device,
    key: HostKey,
    attribute: std::ffi::c_int,
    name: &'static str,
) -> Result<u64, HostRegisterError> {
    let driver = &device.driver;
    let mut value: u64 = 0;
    // SAFETY: the attributes asked for (`ffi::POINTER_ATTRIBUTE_*`) each
    // write one 64-bit value through the valid out-pointer; the context is
    // current (the caller's).
    let code = unsafe {
        (driver.api.cuPointerGetAttribute)(
            (&raw mut value).cast(),
            attribute,
            key.base as ffi::CuDevicePtr,
        )
    };
    if code == ffi::CUDA_SUCCESS {
        return Ok(value);
    }
    Err(HostRegisterError::RegisteredElsewhereUnknown {
        base: key.base,
        len: key.len,
        attribute: name,
        error: driver.error_name(code),
    })
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
        if self.foreign {
            // Its owner unregisters it; the mapping is ours to release.
            live.remove(&(self.device.context_id(), self.key.base, self.key.len));
            return;
        }
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
