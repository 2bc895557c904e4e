//! EGLImages: made by the GL thread's [`EglContext`], each destroyed exactly
//! once by its own `Drop`, and counted by the handles in existence.

use std::cell::Cell;
use std::ffi::c_void;
use std::ptr::NonNull;
use std::rc::Rc;

use khronos_egl as egl;

use super::{DestroyImageKhr, EglContext, LINUX_DMA_BUF_EXT};

/// The display and `eglDestroyImageKHR` of one context's images, and the
/// counts of images created and destroyed. Every [`EglImage`] holds it, so an
/// image can always destroy itself, whatever else is gone.
#[derive(Debug)]
pub(super) struct ImageBook {
    display: *mut c_void,
    destroy: DestroyImageKhr,
    created: Cell<u64>,
    destroyed: Cell<u64>,
}

/// An EGLImage. It is destroyed exactly once, by its `Drop`: whoever owns it
/// (a cache entry, a render target, a local while a panic unwinds) destroys it
/// by dropping it. Neither `Clone` nor `Send`: it lives and dies on the GL
/// thread.
pub(crate) struct EglImage {
    handle: NonNull<c_void>,
    book: Rc<ImageBook>,
}

impl std::fmt::Debug for EglImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("EglImage").field(&self.handle).finish()
    }
}

impl Drop for EglImage {
    fn drop(&mut self) {
        // SAFETY: `handle` was returned by eglCreateImageKHR on `display` and is
        // destroyed here only (this value is its one owner and drops once). The
        // display is never terminated (see `Drop for EglContext`) and libEGL is
        // loaded RTLD_NODELETE (khronos-egl's `load_required_from_filename` on
        // Linux), so `destroy` stays callable.
        let ok = unsafe { (self.book.destroy)(self.book.display, self.handle.as_ptr()) };
        if ok == egl::TRUE {
            self.book.destroyed.set(self.book.destroyed.get() + 1);
        }
    }
}

/// EGLImages of one context: alive now, created and destroyed since it began.
/// `live` is the number of [`EglImage`] values in existence (a reference
/// count), not a counter that calls add to and subtract from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ImageCounts {
    pub live: u64,
    pub created: u64,
    pub destroyed: u64,
}

impl ImageBook {
    pub(super) fn new(display: *mut c_void, destroy: DestroyImageKhr) -> Rc<ImageBook> {
        Rc::new(ImageBook {
            display,
            destroy,
            created: Cell::new(0),
            destroyed: Cell::new(0),
        })
    }
}

impl EglImage {
    /// The EGLImage handle, for EGL and GL calls that take one.
    pub(crate) fn as_ptr(&self) -> *mut c_void {
        self.handle.as_ptr()
    }
}

impl EglContext {
    /// Creates an EGLImage from a dma-buf described by `attribs`
    /// (`EGL_LINUX_DMA_BUF_EXT`, no context, no client buffer).
    pub fn create_dma_buf_image(&self, attribs: &[i32]) -> std::result::Result<EglImage, String> {
        if !self.info.dma_buf_import {
            return Err("EGL_EXT_image_dma_buf_import is not offered".into());
        }
        // SAFETY: EGL_EXT_image_dma_buf_import takes EGL_NO_CONTEXT and a NULL
        // client buffer; its fds stay open for the duration of the call.
        unsafe {
            self.create_image(
                std::ptr::null_mut(),
                LINUX_DMA_BUF_EXT,
                std::ptr::null_mut(),
                attribs,
            )
        }
    }

    /// Creates an EGLImage of level 0 of the 2D texture `texture` of this
    /// context (`EGL_KHR_gl_texture_2D_image`): how the host's EGL, which
    /// cannot import dma-bufs, makes images for the fault-injection tests.
    #[cfg(feature = "fault-injection")]
    pub fn create_texture_image(&self, texture: u32) -> std::result::Result<EglImage, String> {
        const GL_TEXTURE_2D_KHR: egl::Enum = 0x30B1;
        // SAFETY: KHR_gl_texture_2D_image takes this display's current context
        // and the texture's name as the client buffer; the attribute list is
        // EGL_NONE-terminated.
        unsafe {
            self.create_image(
                self.context.as_ptr(),
                GL_TEXTURE_2D_KHR,
                texture as usize as *mut c_void,
                &[egl::NONE],
            )
        }
    }

    /// `eglCreateImageKHR` on this display, the result owned by an
    /// [`EglImage`] (counted in [`image_counts`](Self::image_counts)).
    ///
    /// # Safety
    /// `context`, `target` and `buffer` must be a valid combination for
    /// `eglCreateImageKHR`, and `attribs`' values valid for `target`.
    unsafe fn create_image(
        &self,
        context: *mut c_void,
        target: egl::Enum,
        buffer: *mut c_void,
        attribs: &[i32],
    ) -> std::result::Result<EglImage, String> {
        let (Some(create), Some(book)) = (self.create_image, &self.images) else {
            return Err("EGL_KHR_image_base is not offered".into());
        };
        if attribs.last() != Some(&egl::NONE) {
            return Err("attribute list not terminated".into());
        }
        // SAFETY: a valid display; the caller vouches for the rest; `attribs`
        // is EGL_NONE-terminated.
        let image = unsafe {
            create(
                self.display.as_ptr(),
                context,
                target,
                buffer,
                attribs.as_ptr(),
            )
        };
        let Some(handle) = NonNull::new(image) else {
            let e = self.egl.get_error();
            return Err(e.map_or_else(|| "unknown EGL error".into(), |e| format!("{e:?}")));
        };
        book.created.set(book.created.get() + 1);
        Ok(EglImage {
            handle,
            book: Rc::clone(book),
        })
    }

    /// The EGLImages of this context: alive now (every [`EglImage`] value
    /// holds the book, this context one more reference), created, destroyed.
    pub fn image_counts(&self) -> ImageCounts {
        self.images
            .as_ref()
            .map_or_else(ImageCounts::default, |book| ImageCounts {
                live: (Rc::strong_count(book) - 1) as u64,
                created: book.created.get(),
                destroyed: book.destroyed.get(),
            })
    }
}
