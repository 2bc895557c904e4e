//! The EGL edge: the library loaded at run time, a surfaceless display (or
//! one on a chosen EGL device, `device`), a GLES 3 context made current on
//! the GL thread, and the image extension entry points.

mod device;
mod image;

use std::ffi::c_void;
use std::rc::Rc;
use std::sync::OnceLock;

use khronos_egl as egl;

use crate::{GpuError, Result};

pub use device::{egl_devices, EglDevice, EglDisplay};
pub(crate) use image::EglImage;
use image::ImageBook;

/// `libEGL.so.1` unless `ZEROCAM_EGL_LIBRARY` names another (tests use it to
/// prove a missing EGL is a typed error).
pub const EGL_LIBRARY_ENV: &str = "ZEROCAM_EGL_LIBRARY";
/// `libGLESv2.so.2` unless `ZEROCAM_GLES_LIBRARY` names another.
pub const GLES_LIBRARY_ENV: &str = "ZEROCAM_GLES_LIBRARY";

pub(crate) type Egl = egl::DynamicInstance<egl::EGL1_4>;

const PLATFORM_SURFACELESS_MESA: egl::Enum = 0x31DD;
pub(crate) const LINUX_DMA_BUF_EXT: egl::Enum = 0x3270;
const OPENGL_ES3_BIT: egl::Int = 0x40;

type CreateImageKhr = unsafe extern "system" fn(
    *mut c_void,
    *mut c_void,
    u32,
    *mut c_void,
    *const i32,
) -> *mut c_void;
type DestroyImageKhr = unsafe extern "system" fn(*mut c_void, *mut c_void) -> u32;
type GetPlatformDisplayExt = unsafe extern "system" fn(u32, *mut c_void, *const i32) -> *mut c_void;
type ImageTargetTexture = unsafe extern "system" fn(u32, *mut c_void);

/// What the display and context offer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GpuInfo {
    /// `GL_VENDOR`.
    pub vendor: String,
    /// `GL_RENDERER` (e.g. `llvmpipe (LLVM 19.1.7, 256 bits)`, `zink Vulkan 1.3(...)`).
    pub renderer: String,
    /// `GL_VERSION`.
    pub version: String,
    /// The EGL platform in use (`surfaceless`, `device` or `default`).
    pub platform: &'static str,
    /// `EGL_VENDOR` of the display (`NVIDIA`, `Mesa Project`): whose EGL
    /// the GL thread runs on, which CUDA's GL/EGL interop needs to be NVIDIA's.
    pub egl_vendor: String,
    /// The EGL device of a display opened on one ([`EglDisplay::Device`],
    /// [`EglDisplay::CudaDevice`]).
    pub device: Option<EglDevice>,
    /// `EGL_EXT_image_dma_buf_import`: dma-buf frames can be imported as EGLImages.
    pub dma_buf_import: bool,
    /// `EGL_EXT_image_dma_buf_import_modifiers`.
    pub dma_buf_modifiers: bool,
    /// `GL_OES_EGL_image_external_essl3` (sampling YUV EGLImages from GLSL ES 3).
    pub image_external: bool,
}

/// The EGL display and current GLES context of the GL thread.
pub(crate) struct EglContext {
    egl: Egl,
    display: egl::Display,
    context: egl::Context,
    surface: Option<egl::Surface>,
    create_image: Option<CreateImageKhr>,
    /// Shared with every image made here; `None` without `EGL_KHR_image_base`.
    images: Option<Rc<ImageBook>>,
    image_target_texture: Option<ImageTargetTexture>,
    pub info: GpuInfo,
}

fn egl_err(call: &'static str, e: egl::Error) -> GpuError {
    GpuError::Egl {
        call,
        error: format!("{e:?}"),
    }
}

fn has(extensions: &str, name: &str) -> bool {
    extensions.split_ascii_whitespace().any(|e| e == name)
}

fn load_egl() -> Result<Egl> {
    let name = std::env::var(EGL_LIBRARY_ENV).unwrap_or_else(|_| "libEGL.so.1".into());
    // SAFETY: loading the system's EGL library; khronos-egl resolves the EGL 1.4
    // entry points and checks they are all present.
    unsafe { Egl::load_required_from_filename(&name) }.map_err(|e| GpuError::EglUnavailable {
        reason: format!("{name}: {e}"),
    })
}

impl EglContext {
    /// Loads EGL, opens the display `which` names (for `Auto` the
    /// surfaceless display, the default one where Mesa's surfaceless
    /// platform is absent), creates a GLES 3 context and makes it current on
    /// the calling thread, then loads the GL functions.
    pub fn new(which: EglDisplay) -> Result<EglContext> {
        let egl = load_egl()?;
        let client = device::client_extensions(&egl);
        let (display, platform, on_device) = match which {
            EglDisplay::Auto => {
                let (d, platform) = open_display(&egl, &client)?;
                (d, platform, None)
            }
            _ => {
                let (d, dev) = device::open_device_display(&egl, &client, which)?;
                (d, "device", Some(dev))
            }
        };
        egl.initialize(display)
            .map_err(|e| egl_err("eglInitialize", e))?;
        egl.bind_api(egl::OPENGL_ES_API)
            .map_err(|e| egl_err("eglBindAPI", e))?;
        let ext = egl
            .query_string(Some(display), egl::EXTENSIONS)
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let egl_vendor = egl
            .query_string(Some(display), egl::VENDOR)
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let surfaceless = has(&ext, "EGL_KHR_surfaceless_context");
        let config = choose_config(&egl, display, surfaceless)?;
        let context = egl
            .create_context(
                display,
                config,
                None,
                &[egl::CONTEXT_MAJOR_VERSION, 3, egl::NONE],
            )
            .map_err(|e| egl_err("eglCreateContext", e))?;
        let surface = if surfaceless {
            None
        } else {
            let s = egl
                .create_pbuffer_surface(
                    display,
                    config,
                    &[egl::WIDTH, 1, egl::HEIGHT, 1, egl::NONE],
                )
                .map_err(|e| {
                    let _ = egl.destroy_context(display, context);
                    egl_err("eglCreatePbufferSurface", e)
                })?;
            Some(s)
        };
        let mut ctx = EglContext {
            egl,
            display,
            context,
            surface,
            create_image: None,
            images: None,
            image_target_texture: None,
            info: GpuInfo {
                platform,
                egl_vendor,
                device: on_device,
                dma_buf_import: has(&ext, "EGL_EXT_image_dma_buf_import"),
                dma_buf_modifiers: has(&ext, "EGL_EXT_image_dma_buf_import_modifiers"),
                ..GpuInfo::default()
            },
        };
        ctx.egl
            .make_current(display, surface, surface, Some(context))
            .map_err(|e| egl_err("eglMakeCurrent", e))?;
        load_gl(&ctx.egl)?;
        let gl_ext = crate::glutil::string(gl::EXTENSIONS);
        ctx.info.vendor = crate::glutil::string(gl::VENDOR);
        ctx.info.renderer = crate::glutil::string(gl::RENDERER);
        ctx.info.version = crate::glutil::string(gl::VERSION);
        // The shaders are GLSL ES 3.00: they need the essl3 flavour.
        ctx.info.image_external = has(&gl_ext, "GL_OES_EGL_image_external_essl3");
        if has(&ext, "EGL_KHR_image_base") {
            // SAFETY: the names are the KHR_image_base entry points and the
            // types their prototypes from eglext.h.
            let (create, destroy) = unsafe {
                (
                    proc(&ctx.egl, "eglCreateImageKHR"),
                    proc::<DestroyImageKhr>(&ctx.egl, "eglDestroyImageKHR"),
                )
            };
            // An image is only made where it can also be destroyed.
            if let Some(destroy) = destroy {
                ctx.create_image = create;
                ctx.images = Some(ImageBook::new(display.as_ptr(), destroy));
            }
        }
        if has(&gl_ext, "GL_OES_EGL_image") {
            // SAFETY: the OES_EGL_image entry point with its gl2ext.h prototype.
            ctx.image_target_texture = unsafe { proc(&ctx.egl, "glEGLImageTargetTexture2DOES") };
        }
        Ok(ctx)
    }

    /// Binds `image` to the texture bound at `target` (`glEGLImageTargetTexture2DOES`).
    pub fn bind_image_to_texture(&self, target: u32, image: &EglImage) -> Result<()> {
        let f = self
            .image_target_texture
            .ok_or_else(|| GpuError::MissingExtension {
                extension: "GL_OES_EGL_image",
                renderer: self.info.renderer.clone(),
            })?;
        // SAFETY: the context is current on this thread, a texture is bound at
        // `target` and `image` is a live EGLImage of this display.
        unsafe { f(target, image.as_ptr()) };
        crate::glutil::check("glEGLImageTargetTexture2DOES")
    }
}

impl Drop for EglContext {
    fn drop(&mut self) {
        // Not eglTerminate: the display is shared by every context in the process.
        let _ = self.egl.make_current(self.display, None, None, None);
        let _ = self.egl.destroy_context(self.display, self.context);
        if let Some(s) = self.surface.take() {
            let _ = self.egl.destroy_surface(self.display, s);
        }
        let _ = self.egl.release_thread();
    }
}

/// Looks up an extension entry point and gives it its prototype.
///
/// # Safety
/// `F` must be the function pointer type of `name`'s prototype.
unsafe fn proc<F: Copy>(egl: &Egl, name: &str) -> Option<F> {
    let f = egl.get_proc_address(name)?;
    if std::mem::size_of::<F>() != std::mem::size_of_val(&f) {
        return None;
    }
    // SAFETY: both are function pointers of one size; the caller names the type.
    Some(unsafe { std::mem::transmute_copy::<extern "system" fn(), F>(&f) })
}

/// A config for a GLES 3 context: one that says ES 3, else one that says
/// ES 2 (Mesa's surfaceless configs before 23 only say ES 2; the context
/// version is asked for separately).
fn choose_config(egl: &Egl, display: egl::Display, surfaceless: bool) -> Result<egl::Config> {
    for bit in [OPENGL_ES3_BIT, egl::OPENGL_ES2_BIT] {
        // EGL_SURFACE_TYPE defaults to windows, which surfaceless has none of.
        let surface_type = if surfaceless {
            egl::DONT_CARE
        } else {
            egl::PBUFFER_BIT
        };
        let attrs = [
            egl::RENDERABLE_TYPE,
            bit,
            egl::SURFACE_TYPE,
            surface_type,
            egl::NONE,
        ];
        if let Some(c) = egl
            .choose_first_config(display, &attrs)
            .map_err(|e| egl_err("eglChooseConfig", e))?
        {
            return Ok(c);
        }
    }
    Err(GpuError::Egl {
        call: "eglChooseConfig",
        error: "no GLES config".into(),
    })
}

fn open_display(egl: &Egl, client: &str) -> Result<(egl::Display, &'static str)> {
    if has(client, "EGL_MESA_platform_surfaceless") && has(client, "EGL_EXT_platform_base") {
        // SAFETY: the EXT_platform_base entry point with its eglext.h prototype.
        let get: Option<GetPlatformDisplayExt> = unsafe { proc(egl, "eglGetPlatformDisplayEXT") };
        if let Some(get) = get {
            let attrs = [egl::NONE];
            // SAFETY: the surfaceless platform takes EGL_DEFAULT_DISPLAY (NULL) as
            // its native display; the attribute list is EGL_NONE-terminated.
            let d = unsafe {
                get(
                    PLATFORM_SURFACELESS_MESA,
                    std::ptr::null_mut(),
                    attrs.as_ptr(),
                )
            };
            if !d.is_null() {
                // SAFETY: a non-NULL display returned by EGL.
                return Ok((unsafe { egl::Display::from_ptr(d) }, "surfaceless"));
            }
        }
    }
    // SAFETY: EGL_DEFAULT_DISPLAY is always a valid argument.
    unsafe { egl.get_display(egl::DEFAULT_DISPLAY) }
        .map(|d| (d, "default"))
        .ok_or_else(|| GpuError::Egl {
            call: "eglGetDisplay",
            error: "no display".into(),
        })
}

/// Loads the GL entry points once per process: from the GLES library, else
/// through `eglGetProcAddress`.
fn load_gl(egl: &Egl) -> Result<()> {
    static LOADED: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    LOADED
        .get_or_init(|| {
            let name = std::env::var(GLES_LIBRARY_ENV).unwrap_or_else(|_| "libGLESv2.so.2".into());
            // SAFETY: loading the system's GLES library (its initialisers are the
            // vendor's); it is kept loaded for the life of the process.
            let lib =
                unsafe { libloading::Library::new(&name) }.map_err(|e| format!("{name}: {e}"))?;
            let lib: &'static libloading::Library = Box::leak(Box::new(lib));
            gl::load_with(|symbol| {
                // SAFETY: a symbol lookup; the pointer is only called through
                // the `gl` crate's prototype of that same symbol.
                let from_lib = unsafe { lib.get::<*const c_void>(symbol.as_bytes()) }
                    .ok()
                    .map(|s| *s);
                from_lib
                    .filter(|p| !p.is_null())
                    .or_else(|| egl.get_proc_address(symbol).map(|f| f as *const c_void))
                    .unwrap_or(std::ptr::null())
            });
            for (loaded, what) in [
                (gl::ReadPixels::is_loaded(), "glReadPixels"),
                (gl::MapBufferRange::is_loaded(), "glMapBufferRange"),
                (gl::CreateShader::is_loaded(), "glCreateShader"),
            ] {
                if !loaded {
                    return Err(format!("{name} has no {what}"));
                }
            }
            Ok(())
        })
        .clone()
        .map_err(|reason| GpuError::EglUnavailable { reason })
}
