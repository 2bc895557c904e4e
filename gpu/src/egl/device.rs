//! EGL devices (`EGL_EXT_device_enumeration` + `EGL_EXT_device_query`) and
//! a display on a chosen one (`EGL_EXT_platform_device`).
//!
//! Why: through glvnd, the surfaceless platform a plain [`Gpu::new`] opens
//! is whichever vendor library answers first. On a machine with NVIDIA's
//! driver and Mesa both installed (or a container without NVIDIA's graphics
//! libraries) that can be Mesa, and CUDA's GL/EGL interop then fails, or is
//! handed a Mesa image. NVIDIA's EGL lists each GPU as a device carrying
//! `EGL_NV_device_cuda`, whose `EGL_CUDA_DEVICE_NV` is the CUDA ordinal: a
//! display on that device is on the GPU CUDA uses ([`EglDisplay::CudaDevice`]).
//!
//! [`Gpu::new`]: crate::Gpu::new

use std::ffi::{c_char, c_void, CStr};

use khronos_egl as egl;

use super::{has, proc, Egl};
use crate::{GpuError, Result};

/// `EGL_PLATFORM_DEVICE_EXT`.
const PLATFORM_DEVICE: egl::Enum = 0x313F;
/// `EGL_DRM_DEVICE_FILE_EXT` (`EGL_EXT_device_drm`).
const DRM_DEVICE_FILE: egl::Int = 0x3233;
/// `EGL_DRM_RENDER_NODE_FILE_EXT` (`EGL_EXT_device_drm_render_node`).
const DRM_RENDER_NODE_FILE: egl::Int = 0x3377;
/// `EGL_CUDA_DEVICE_NV` (`EGL_NV_device_cuda`).
const CUDA_DEVICE_NV: egl::Int = 0x323A;
/// Devices listed at most (a machine has a handful).
const MAX_DEVICES: usize = 32;

type QueryDevices = unsafe extern "system" fn(egl::Int, *mut *mut c_void, *mut egl::Int) -> u32;
type QueryDeviceString = unsafe extern "system" fn(*mut c_void, egl::Int) -> *const c_char;
type QueryDeviceAttrib = unsafe extern "system" fn(*mut c_void, egl::Int, *mut isize) -> u32;
type GetPlatformDisplay = unsafe extern "system" fn(u32, *mut c_void, *const i32) -> *mut c_void;

/// Which EGL display the GL thread opens ([`Gpu::with_display`](crate::Gpu::with_display)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EglDisplay {
    /// Mesa's surfaceless platform where the client offers it, else the
    /// default display: what [`Gpu::new`](crate::Gpu::new) opens.
    #[default]
    Auto,
    /// The device at this index of [`egl_devices`].
    Device(usize),
    /// The device NVIDIA's EGL reports as this CUDA device ordinal
    /// (`EGL_CUDA_DEVICE_NV`): the GL thread for CUDA interop.
    CudaDevice(i32),
}

/// One EGL device, as [`egl_devices`] lists it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EglDevice {
    /// Its index in the list (for [`EglDisplay::Device`]).
    pub index: usize,
    /// Its device extensions.
    pub extensions: String,
    /// The DRM primary node (`EGL_EXT_device_drm`).
    pub drm_device: Option<String>,
    /// The DRM render node (`EGL_EXT_device_drm_render_node`).
    pub render_node: Option<String>,
    /// The CUDA device ordinal (`EGL_NV_device_cuda`: NVIDIA's EGL).
    pub cuda_device: Option<i32>,
    /// A software renderer (`EGL_MESA_device_software`: llvmpipe).
    pub software: bool,
}

impl std::fmt::Display for EglDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "device {}", self.index)?;
        if let Some(c) = self.cuda_device {
            write!(f, " (CUDA device {c})")?;
        }
        if self.software {
            write!(f, " (software)")?;
        }
        if let Some(n) = self.render_node.as_ref().or(self.drm_device.as_ref()) {
            write!(f, " {n}")?;
        }
        Ok(())
    }
}

/// The entry points of device enumeration and query.
struct DeviceApi {
    query_devices: QueryDevices,
    query_string: QueryDeviceString,
    query_attrib: QueryDeviceAttrib,
}

impl DeviceApi {
    /// The entry points, or what is missing.
    fn load(egl: &Egl, client: &str) -> Result<DeviceApi> {
        let enumerable = has(client, "EGL_EXT_device_base")
            || (has(client, "EGL_EXT_device_enumeration") && has(client, "EGL_EXT_device_query"));
        let missing = |extension| GpuError::MissingExtension {
            extension,
            renderer: "the EGL client".into(),
        };
        if !enumerable {
            return Err(missing("EGL_EXT_device_enumeration"));
        }
        // SAFETY: the names are EXT_device_enumeration's and
        // EXT_device_query's entry points, the types their eglext.h prototypes.
        let (devices, string, attrib) = unsafe {
            (
                proc::<QueryDevices>(egl, "eglQueryDevicesEXT"),
                proc::<QueryDeviceString>(egl, "eglQueryDeviceStringEXT"),
                proc::<QueryDeviceAttrib>(egl, "eglQueryDeviceAttribEXT"),
            )
        };
        match (devices, string, attrib) {
            (Some(query_devices), Some(query_string), Some(query_attrib)) => Ok(DeviceApi {
                query_devices,
                query_string,
                query_attrib,
            }),
            _ => Err(missing("EGL_EXT_device_query")),
        }
    }

    /// Every device's handle and description.
    fn list(&self) -> Result<Vec<(*mut c_void, EglDevice)>> {
        let mut handles = [std::ptr::null_mut(); MAX_DEVICES];
        let mut n: egl::Int = 0;
        // SAFETY: room for MAX_DEVICES handles, as the first argument says.
        let ok =
            unsafe { (self.query_devices)(MAX_DEVICES as egl::Int, handles.as_mut_ptr(), &mut n) };
        if ok == 0 {
            return Err(GpuError::Egl {
                call: "eglQueryDevicesEXT",
                error: "EGL_FALSE".into(),
            });
        }
        let n = usize::try_from(n).unwrap_or(0).min(MAX_DEVICES);
        Ok(handles[..n]
            .iter()
            .enumerate()
            .map(|(index, &h)| (h, self.describe(index, h)))
            .collect())
    }

    /// A device string, `None` where the device has none.
    fn string(&self, device: *mut c_void, name: egl::Int) -> Option<String> {
        // SAFETY: a device handle EGL listed; the string is EGL's, read at once.
        let s = unsafe { (self.query_string)(device, name) };
        // SAFETY: a non-NULL result is a NUL-terminated string owned by EGL.
        (!s.is_null()).then(|| unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned())
    }

    fn describe(&self, index: usize, device: *mut c_void) -> EglDevice {
        let extensions = self.string(device, egl::EXTENSIONS).unwrap_or_default();
        let mut d = EglDevice {
            index,
            software: has(&extensions, "EGL_MESA_device_software"),
            ..EglDevice::default()
        };
        if has(&extensions, "EGL_EXT_device_drm") {
            d.drm_device = self.string(device, DRM_DEVICE_FILE);
        }
        if has(&extensions, "EGL_EXT_device_drm_render_node") {
            d.render_node = self.string(device, DRM_RENDER_NODE_FILE);
        }
        if has(&extensions, "EGL_NV_device_cuda") {
            let mut value: isize = -1;
            // SAFETY: a device handle EGL listed and a valid out-pointer.
            let ok = unsafe { (self.query_attrib)(device, CUDA_DEVICE_NV, &mut value) };
            d.cuda_device = (ok != 0).then(|| i32::try_from(value).ok()).flatten();
        }
        d.extensions = extensions;
        d
    }
}

/// The client extensions of `egl` (no display).
pub(super) fn client_extensions(egl: &Egl) -> String {
    egl.query_string(None, egl::EXTENSIONS)
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The EGL devices of this machine, in EGL's order (loads EGL).
///
/// # Errors
/// [`GpuError::EglUnavailable`] without EGL, [`GpuError::MissingExtension`]
/// where the client cannot enumerate devices.
pub fn egl_devices() -> Result<Vec<EglDevice>> {
    let egl = super::load_egl()?;
    let api = DeviceApi::load(&egl, &client_extensions(&egl))?;
    Ok(api.list()?.into_iter().map(|(_, d)| d).collect())
}

/// A display on the device `which` names (not [`EglDisplay::Auto`]).
pub(super) fn open_device_display(
    egl: &Egl,
    client: &str,
    which: EglDisplay,
) -> Result<(egl::Display, EglDevice)> {
    let api = DeviceApi::load(egl, client)?;
    if !has(client, "EGL_EXT_platform_device") {
        return Err(GpuError::MissingExtension {
            extension: "EGL_EXT_platform_device",
            renderer: "the EGL client".into(),
        });
    }
    let devices = api.list()?;
    let found = devices.iter().find(|(_, d)| match which {
        EglDisplay::Device(i) => d.index == i,
        EglDisplay::CudaDevice(c) => d.cuda_device == Some(c),
        EglDisplay::Auto => false,
    });
    let Some((handle, device)) = found else {
        let listed: Vec<String> = devices.iter().map(|(_, d)| d.to_string()).collect();
        return Err(GpuError::NoEglDevice {
            wanted: format!("{which:?}"),
            devices: if listed.is_empty() {
                "none".into()
            } else {
                listed.join(", ")
            },
        });
    };
    // SAFETY: EXT_platform_base's entry point with its eglext.h prototype.
    let get: Option<GetPlatformDisplay> = unsafe { proc(egl, "eglGetPlatformDisplayEXT") };
    let get = get.ok_or(GpuError::MissingExtension {
        extension: "EGL_EXT_platform_base",
        renderer: "the EGL client".into(),
    })?;
    let attrs = [egl::NONE];
    // SAFETY: the device platform takes an EGLDeviceEXT EGL listed as its
    // native display; the attribute list is EGL_NONE-terminated.
    let d = unsafe { get(PLATFORM_DEVICE, *handle, attrs.as_ptr()) };
    if d.is_null() {
        return Err(GpuError::Egl {
            call: "eglGetPlatformDisplayEXT",
            error: format!("no display on {device}"),
        });
    }
    // SAFETY: a non-NULL display returned by EGL.
    Ok((unsafe { egl::Display::from_ptr(d) }, device.clone()))
}
