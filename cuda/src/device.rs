//! [`Device`]: one CUDA device's primary context, retained for as long as
//! anything registered on it lives, and [`CudaInfo`], what it can do.

use std::ffi::{c_char, c_int, CStr};
use std::sync::Arc;

use crate::driver::ffi::{self, CuDevice, CuHandle};
use crate::{CudaError, Driver, Result};

/// One device and its retained primary context (the context the runtime API
/// and libraries such as TensorRT and PyTorch use, so pointers are shared).
pub(crate) struct Device {
    pub driver: Arc<Driver>,
    pub device: CuDevice,
    context: CuHandle,
}

// SAFETY: a primary context is a process-wide object the driver lets any
// thread make current; the handle is only passed to driver calls.
unsafe impl Send for Device {}
// SAFETY: as above; `&Device` only pushes the context for a call.
unsafe impl Sync for Device {}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device")
            .field("device", &self.device)
            .finish()
    }
}

impl Device {
    /// Device `ordinal` of `driver`, its primary context retained.
    pub fn open(driver: Arc<Driver>, ordinal: i32) -> Result<Device> {
        driver.check_process()?;
        let count = driver.device_count()?;
        if ordinal < 0 || ordinal >= count {
            return Err(CudaError::NoDevice { ordinal, count });
        }
        let mut device = 0;
        // SAFETY: a valid out-pointer and an ordinal below the count.
        driver.check("cuDeviceGet", unsafe {
            (driver.api.cuDeviceGet)(&mut device, ordinal)
        })?;
        let mut context = std::ptr::null_mut();
        // SAFETY: a valid out-pointer and device; released in `Drop`.
        driver.check("cuDevicePrimaryCtxRetain", unsafe {
            (driver.api.cuDevicePrimaryCtxRetain)(&mut context, device)
        })?;
        Ok(Device {
            driver,
            device,
            context,
        })
    }

    /// The primary context's handle as a number: equal for every `Device`
    /// of one device in the process (one primary context per device).
    pub fn context_id(&self) -> usize {
        self.context as usize
    }

    /// Makes the primary context current on this thread until the guard drops
    /// (push/pop: the caller's own current context is left as it was).
    pub fn enter(&self) -> Result<ContextGuard<'_>> {
        // Every call on a context comes through here: none in a forked child.
        self.driver.check_process()?;
        // SAFETY: a context retained by `self`.
        self.driver.check("cuCtxPushCurrent_v2", unsafe {
            (self.driver.api.cuCtxPushCurrent_v2)(self.context)
        })?;
        Ok(ContextGuard {
            device: self,
            _thread: std::marker::PhantomData,
        })
    }

    /// What the device is and can do.
    pub fn info(&self, ordinal: i32) -> Result<CudaInfo> {
        let mut name = [0 as c_char; 256];
        // SAFETY: the buffer's length is passed; the driver NUL-terminates.
        self.driver.check("cuDeviceGetName", unsafe {
            (self.driver.api.cuDeviceGetName)(name.as_mut_ptr(), name.len() as c_int, self.device)
        })?;
        name[name.len() - 1] = 0;
        // SAFETY: NUL-terminated within the buffer (forced above).
        let name = unsafe { CStr::from_ptr(name.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        let mut unknown = Vec::new();
        let mut a = |attribute| self.attribute(attribute, &mut unknown);
        let compute_capability = (
            a(ffi::ATTR_COMPUTE_CAPABILITY_MAJOR)?,
            a(ffi::ATTR_COMPUTE_CAPABILITY_MINOR)?,
        );
        let integrated = a(ffi::ATTR_INTEGRATED)? != 0;
        let can_map_host_memory = a(ffi::ATTR_CAN_MAP_HOST_MEMORY)? != 0;
        let unified_addressing = a(ffi::ATTR_UNIFIED_ADDRESSING)? != 0;
        let host_pointer_is_device_pointer =
            a(ffi::ATTR_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM)? != 0;
        let host_register = a(ffi::ATTR_HOST_REGISTER_SUPPORTED)? != 0;
        let read_only_host_register = a(ffi::ATTR_READ_ONLY_HOST_REGISTER_SUPPORTED)? != 0;
        Ok(CudaInfo {
            ordinal,
            name,
            compute_capability,
            integrated,
            can_map_host_memory,
            unified_addressing,
            host_pointer_is_device_pointer,
            host_register,
            read_only_host_register,
            unknown_attributes: unknown,
            driver_version: self.driver.version(),
        })
    }

    /// `cuDeviceGetAttribute(attribute)`. An attribute the driver does not
    /// know (`CUDA_ERROR_INVALID_VALUE`: the driver is older than it) reads
    /// as 0, unsupported, is logged and added to `unknown`; other failures
    /// are errors.
    fn attribute(&self, attribute: c_int, unknown: &mut Vec<i32>) -> Result<i32> {
        let mut value = 0;
        // SAFETY: a valid out-pointer, attribute and device.
        let code =
            unsafe { (self.driver.api.cuDeviceGetAttribute)(&mut value, attribute, self.device) };
        if code == ffi::CUDA_ERROR_INVALID_VALUE {
            log::warn!(
                "CUDA driver {} does not know {} ({attribute}): taken as unsupported",
                self.driver.version(),
                ffi::attribute_name(attribute)
            );
            unknown.push(attribute);
            return Ok(0);
        }
        self.driver
            .check("cuDeviceGetAttribute", code)
            .map(|()| value)
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        if self.driver.check_process().is_err() {
            return; // a fork() child: the parent's context is the parent's
        }
        // SAFETY: retained in `open`, released once here. A failure (the
        // driver already torn down at exit) leaves nothing to undo.
        let _ = unsafe { (self.driver.api.cuDevicePrimaryCtxRelease_v2)(self.device) };
    }
}

/// The primary context made current by [`Device::enter`]; popped on drop.
#[must_use = "the context is current only while the guard lives"]
pub(crate) struct ContextGuard<'d> {
    device: &'d Device,
    /// Not `Send`: popped on the thread that pushed.
    _thread: std::marker::PhantomData<*const ()>,
}

impl Drop for ContextGuard<'_> {
    fn drop(&mut self) {
        let mut popped = std::ptr::null_mut();
        // SAFETY: pops the context `enter` pushed on this thread (a guard is
        // not Send: it drops on the thread that pushed).
        let _ = unsafe { (self.device.driver.api.cuCtxPopCurrent_v2)(&mut popped) };
    }
}

/// One CUDA device: what it is and which zero-copy paths it offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaInfo {
    /// The ordinal.
    pub ordinal: i32,
    /// `cuDeviceGetName`, e.g. `Orin` or `NVIDIA H200`.
    pub name: String,
    /// (major, minor).
    pub compute_capability: (i32, i32),
    /// An integrated GPU sharing DRAM with the CPU (Jetson): host-registered
    /// memory is read in place, no PCIe.
    pub integrated: bool,
    /// Host memory can be mapped into the device's address space.
    pub can_map_host_memory: bool,
    /// One address space for host and device (pointers are tagged by value).
    pub unified_addressing: bool,
    /// A registered host pointer is also its device pointer.
    pub host_pointer_is_device_pointer: bool,
    /// Host memory can be registered (`cuMemHostRegister`, path a:
    /// `CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED`).
    pub host_register: bool,
    /// `CU_MEMHOSTREGISTER_READ_ONLY` is supported (read-only dma-bufs
    /// register: `CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED`).
    pub read_only_host_register: bool,
    /// The `CUdevice_attribute`s the driver did not know (it is older than
    /// them: 99 and 113 came with CUDA 11.0 and 11.1); each reads as 0, so
    /// what it tells is taken as unsupported.
    pub unknown_attributes: Vec<i32>,
    /// `cuDriverGetVersion`.
    pub driver_version: i32,
}
