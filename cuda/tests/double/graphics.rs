//! GL buffer and EGLImage interop: registration, map/unmap, mapped pointers
//! and frames.

use std::ffi::{c_int, c_uint, c_void, CString};

use crate::{
    entry, fresh_handle, nonnull, put, sys, CuResult, Kind, Resource, State, ALREADY_MAPPED,
    DEFAULT_EGL_FRAME, DEFAULT_GL_BUFFER_SIZE, INVALID_HANDLE, INVALID_VALUE, NOT_MAPPED,
};

/// NONE | READ_ONLY | WRITE_DISCARD are 0, 1, 2.
const MAX_GRAPHICS_FLAGS: c_uint = 2;
/// Mapped GL buffer `b` lives at `GL_BASE + b * GL_STRIDE` (fake device memory).
const GL_BASE: u64 = 0x7000_0000_0000;
const GL_STRIDE: u64 = 0x1_0000_0000;
/// EGL plane `i` of image `a` is at `a + EGL_PLANE_STRIDE * (i + 1)`.
const EGL_PLANE_STRIDE: usize = 0x1000;

/// `CUeglFrame`.
#[repr(C)]
pub struct CuEglFrame {
    planes: [*mut c_void; 3],
    width: c_uint,
    height: c_uint,
    depth: c_uint,
    pitch: c_uint,
    plane_count: c_uint,
    num_channels: c_uint,
    frame_type: c_int,
    egl_color_format: c_int,
    cu_format: c_int,
}

fn gl_address(buffer: c_uint) -> u64 {
    GL_BASE.wrapping_add(u64::from(buffer).wrapping_mul(GL_STRIDE))
}

/// Whether `[src, src + bytes)` lies in a mapped GL buffer's fake range.
pub(crate) fn in_mapped_gl_buffer(st: &State, src: u64, bytes: usize) -> bool {
    let Some(end) = src.checked_add(bytes.max(1) as u64) else {
        return false;
    };
    st.resources.values().any(|res| match res.kind {
        Kind::Gl(buffer) if res.mapped => {
            let base = gl_address(buffer);
            let size = st
                .gl_sizes
                .get(&buffer)
                .or_else(|| st.gl_sizes.get(&0))
                .copied()
                .unwrap_or(DEFAULT_GL_BUFFER_SIZE);
            base <= src
                && base
                    .checked_add(size as u64)
                    .is_some_and(|limit| end <= limit)
        }
        _ => false,
    })
}

// ---------------------------------------------------------------------------
// glIsBuffer, if the process has GL
// ---------------------------------------------------------------------------

type GlIsBuffer = unsafe extern "C" fn(c_uint) -> u8;

/// Calls `glIsBuffer` from the symbol `sym` (non-null).
fn call_is_buffer(sym: *mut c_void, buffer: c_uint) -> bool {
    // SAFETY: `sym` is a non-null address of `glIsBuffer`, whose C signature is
    // `GLboolean glIsBuffer(GLuint)` (GLboolean: unsigned char).
    let is_buffer = unsafe { std::mem::transmute::<*mut c_void, GlIsBuffer>(sym) };
    // SAFETY: glIsBuffer takes no pointers; without a current GL context GL's
    // dispatch makes it a no-op returning false.
    unsafe { is_buffer(buffer) != 0 }
}

/// `glIsBuffer(buffer)`, resolved in the global scope or in an already
/// loaded GLES library (`$ZEROCAM_GLES_LIBRARY`, then `libGLESv2.so.2`; opened
/// with RTLD_NOLOAD, so the double never loads GL itself). None: no GL.
fn gl_is_buffer(buffer: c_uint) -> Option<bool> {
    let name = c"glIsBuffer";
    // SAFETY: a lookup in the global scope with a NUL-terminated name.
    let sym = unsafe { sys::dlsym(sys::RTLD_DEFAULT, name.as_ptr()) };
    if !sym.is_null() {
        return Some(call_is_buffer(sym, buffer));
    }
    let mut libraries: Vec<CString> = Vec::new();
    if let Some(path) = std::env::var_os("ZEROCAM_GLES_LIBRARY") {
        libraries.extend(CString::new(path.into_encoded_bytes()).ok());
    }
    libraries.push(c"libGLESv2.so.2".to_owned());
    for library in &libraries {
        // SAFETY: RTLD_NOLOAD only returns a handle to a library that is
        // already loaded (no initialisers run); the name is NUL-terminated.
        let handle = unsafe { sys::dlopen(library.as_ptr(), sys::RTLD_NOW | sys::RTLD_NOLOAD) };
        if handle.is_null() {
            continue;
        }
        // SAFETY: `handle` is a live dlopen handle; the name is NUL-terminated.
        let sym = unsafe { sys::dlsym(handle, name.as_ptr()) };
        let result = (!sym.is_null()).then(|| call_is_buffer(sym, buffer));
        // SAFETY: drops the reference the NOLOAD dlopen above took; the
        // library's owner still holds its own.
        unsafe { sys::dlclose(handle) };
        if result.is_some() {
            return result;
        }
    }
    None
}

impl State {
    /// Checks a GL buffer exists; counts `gl_checks_skipped` without GL.
    fn gl_buffer_exists(&mut self, buffer: c_uint) -> bool {
        gl_is_buffer(buffer).unwrap_or_else(|| {
            self.bump("gl_checks_skipped");
            true
        })
    }

    /// The registered resource behind a handle (INVALID_VALUE if null,
    /// INVALID_HANDLE if unknown).
    fn resource(&mut self, handle: *mut c_void) -> Result<&mut Resource, CuResult> {
        nonnull(handle)?;
        self.resources
            .get_mut(&(handle as usize))
            .ok_or(INVALID_HANDLE)
    }

    /// Registers a resource and writes its handle to `out`.
    ///
    /// # Safety
    /// `out` is non-null and writable.
    unsafe fn register(&mut self, out: *mut *mut c_void, kind: Kind) -> Result<(), CuResult> {
        let handle = fresh_handle();
        self.resources.insert(
            handle,
            Resource {
                kind,
                mapped: false,
            },
        );
        // SAFETY: `out` is non-null and writable (the caller's promise).
        unsafe { put(out, handle as *mut c_void) }
    }
}

// ---------------------------------------------------------------------------
// Registration
// ---------------------------------------------------------------------------

/// `cuGraphicsGLRegisterBuffer`: INVALID_VALUE when `glIsBuffer(buffer)` is
/// false (deleted, never bound, or no GL context current on this thread).
#[no_mangle]
pub unsafe extern "C" fn cuGraphicsGLRegisterBuffer(
    resource: *mut *mut c_void,
    buffer: c_uint,
    flags: c_uint,
) -> CuResult {
    entry("cuGraphicsGLRegisterBuffer", |st| {
        st.need_ctx()?;
        nonnull(resource)?;
        if buffer == 0 || flags > MAX_GRAPHICS_FLAGS || !st.gl_buffer_exists(buffer) {
            return Err(INVALID_VALUE);
        }
        // SAFETY: `resource` is non-null and writable (the caller's promise).
        unsafe { st.register(resource, Kind::Gl(buffer))? };
        st.event(format!("register_gl {buffer}"));
        Ok(())
    })
}

/// `cuGraphicsEGLRegisterImage`: records the image (no liveness check possible).
#[no_mangle]
pub unsafe extern "C" fn cuGraphicsEGLRegisterImage(
    resource: *mut *mut c_void,
    image: *mut c_void,
    flags: c_uint,
) -> CuResult {
    entry("cuGraphicsEGLRegisterImage", |st| {
        st.need_ctx()?;
        nonnull(resource)?;
        nonnull(image)?;
        if flags > MAX_GRAPHICS_FLAGS {
            return Err(INVALID_VALUE);
        }
        // SAFETY: `resource` is non-null and writable (the caller's promise).
        unsafe { st.register(resource, Kind::Egl(image as usize))? };
        st.event(format!("register_egl {:#x}", image as usize));
        Ok(())
    })
}

/// `cuGraphicsUnregisterResource`: unmaps a mapped resource but records
/// "unregister while mapped"; for GL buffers records "unregister after
/// glDeleteBuffers: <name>" when `glIsBuffer` says the buffer is gone.
#[no_mangle]
pub unsafe extern "C" fn cuGraphicsUnregisterResource(resource: *mut c_void) -> CuResult {
    entry("cuGraphicsUnregisterResource", |st| {
        st.need_ctx()?;
        let Resource { kind, mapped } = *st.resource(resource)?;
        st.resources.remove(&(resource as usize));
        if mapped {
            st.violation("unregister while mapped".to_owned());
        }
        match kind {
            Kind::Gl(buffer) => {
                if !st.gl_buffer_exists(buffer) {
                    st.violation(format!("unregister after glDeleteBuffers: {buffer}"));
                }
                st.event(format!("unregister_gl {buffer}"));
            }
            Kind::Egl(image) => st.event(format!("unregister_egl {image:#x}")),
        }
        Ok(())
    })
}

// ---------------------------------------------------------------------------
// Map / unmap and what a mapped resource exposes
// ---------------------------------------------------------------------------

/// Maps (`map`) or unmaps all of `resources[..count]`, or none: every handle
/// must be registered (INVALID_HANDLE) and unmapped (ALREADY_MAPPED) or
/// mapped (NOT_MAPPED); `stream` null or live. One "map"/"unmap" event each.
///
/// # Safety
/// `resources` is null or valid for `count` reads.
unsafe fn map_all(
    st: &mut State,
    count: c_uint,
    resources: *mut *mut c_void,
    stream: *mut c_void,
    map: bool,
) -> Result<(), CuResult> {
    st.need_ctx()?;
    nonnull(resources)?;
    if count == 0 {
        return Err(INVALID_VALUE);
    }
    st.need_stream(stream)?;
    // SAFETY: non-null and `count` handles long (the caller's promise).
    let handles = unsafe { std::slice::from_raw_parts(resources, count as usize) };
    for (i, &handle) in handles.iter().enumerate() {
        let mut mapped = st.resource(handle)?.mapped;
        if handles[..i].contains(&handle) {
            // Listed twice: its first mention already (un)mapped it.
            mapped = map;
        }
        if mapped == map {
            return Err(if map { ALREADY_MAPPED } else { NOT_MAPPED });
        }
    }
    for &handle in handles {
        st.resource(handle)?.mapped = map;
        st.event(if map { "map" } else { "unmap" }.to_owned());
    }
    Ok(())
}

/// `cuGraphicsMapResources`.
#[no_mangle]
pub unsafe extern "C" fn cuGraphicsMapResources(
    count: c_uint,
    resources: *mut *mut c_void,
    stream: *mut c_void,
) -> CuResult {
    // SAFETY: `resources` is null or `count` handles long (the caller's promise).
    entry("cuGraphicsMapResources", |st| unsafe {
        map_all(st, count, resources, stream, true)
    })
}

/// `cuGraphicsUnmapResources`.
#[no_mangle]
pub unsafe extern "C" fn cuGraphicsUnmapResources(
    count: c_uint,
    resources: *mut *mut c_void,
    stream: *mut c_void,
) -> CuResult {
    // SAFETY: `resources` is null or `count` handles long (the caller's promise).
    entry("cuGraphicsUnmapResources", |st| unsafe {
        map_all(st, count, resources, stream, false)
    })
}

/// `cuGraphicsResourceGetMappedPointer_v2`: a mapped GL buffer's fake device
/// range `0x7000_0000_0000 + name * 0x1_0000_0000` and its size
/// (`zcd_set_gl_buffer_size`, default 0x1000). NOT_MAPPED unless mapped;
/// INVALID_VALUE for an EGL resource.
#[no_mangle]
pub unsafe extern "C" fn cuGraphicsResourceGetMappedPointer_v2(
    dptr: *mut u64,
    size: *mut usize,
    resource: *mut c_void,
) -> CuResult {
    entry("cuGraphicsResourceGetMappedPointer_v2", |st| {
        st.need_ctx()?;
        nonnull(dptr)?;
        nonnull(size)?;
        let res = st.resource(resource)?;
        let Kind::Gl(buffer) = res.kind else {
            return Err(INVALID_VALUE);
        };
        if !res.mapped {
            return Err(NOT_MAPPED);
        }
        let bytes = st
            .gl_sizes
            .get(&buffer)
            .or_else(|| st.gl_sizes.get(&0))
            .copied()
            .unwrap_or(DEFAULT_GL_BUFFER_SIZE);
        // SAFETY: both are non-null and writable (the caller's promise).
        unsafe {
            put(dptr, gl_address(buffer))?;
            put(size, bytes)
        }
    })
}

/// `cuGraphicsResourceGetMappedEglFrame`: a pitch frame for an EGL resource
/// (mapped or not, as CUDA allows): planes at `image + 0x1000 * (i + 1)`,
/// sizes from `zcd_set_egl_frame` (default: 1 plane, zero sizes), depth 1,
/// 1 channel, cu_format UNSIGNED_INT8, egl_color_format 0. Index and mip
/// level must be 0.
#[no_mangle]
pub unsafe extern "C" fn cuGraphicsResourceGetMappedEglFrame(
    frame: *mut CuEglFrame,
    resource: *mut c_void,
    index: c_uint,
    mip: c_uint,
) -> CuResult {
    entry("cuGraphicsResourceGetMappedEglFrame", |st| {
        st.need_ctx()?;
        nonnull(frame)?;
        let Kind::Egl(image) = st.resource(resource)?.kind else {
            return Err(INVALID_VALUE);
        };
        if index != 0 || mip != 0 {
            return Err(INVALID_VALUE);
        }
        let config = st
            .egl_frames
            .get(&image)
            .or_else(|| st.egl_frames.get(&0))
            .copied()
            .unwrap_or(DEFAULT_EGL_FRAME);
        let mut planes = [std::ptr::null_mut(); 3];
        for (i, plane) in planes.iter_mut().enumerate().take(config.planes as usize) {
            *plane = image.wrapping_add(EGL_PLANE_STRIDE * (i + 1)) as *mut c_void;
        }
        let value = CuEglFrame {
            planes,
            width: config.width,
            height: config.height,
            depth: 1,
            pitch: config.pitch,
            plane_count: config.planes,
            num_channels: 1,
            frame_type: config.frame_type,
            egl_color_format: if config.color_format >= 0 {
                config.color_format
            } else {
                // CU_EGL_COLOR_FORMAT_YUV420_PLANAR, _SEMIPLANAR, RGBA.
                match config.planes {
                    3 => 0x00,
                    2 => 0x01,
                    _ => 0x07,
                }
            },
            cu_format: 0x01, // CU_AD_FORMAT_UNSIGNED_INT8
        };
        // SAFETY: `frame` is non-null and writable (the caller's promise).
        unsafe { put(frame, value) }
    })
}
