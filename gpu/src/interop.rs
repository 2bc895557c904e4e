//! Hooks for device APIs that share the GL thread's buffers and images
//! (zerocam-cuda's GL buffer and EGLImage interop): run code on the GL
//! thread with its context current, keep state there that is freed before
//! the thread's images, PBOs and context, and reach the EGLImage the import
//! cache holds for a dma-buf tensor.
//!
//! The GPU crate knows nothing of CUDA: an extension is any `'static` value,
//! kept per type.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::ffi::c_void;
use std::rc::Rc;

use zerocam_tensor::{Element, Tensor, TensorMemory};

use crate::egl::EglImage;
use crate::state::GlState;
use crate::{ColorSpec, Gpu, GpuError, Result};

/// The extension values of one GL thread, by type.
#[derive(Default)]
pub(crate) struct Extensions(HashMap<TypeId, Box<dyn Any>>);

impl Extensions {
    /// Drops every extension (first thing in the GL state's teardown).
    pub fn clear(&mut self) {
        self.0.clear();
    }
}

/// The GL thread, as a job sent with [`Gpu::run_on_gl_thread`] sees it: the
/// context is current on this thread for the job's length.
pub struct GlThread<'a> {
    st: &'a mut GlState,
}

impl GlThread<'_> {
    /// The GL thread's value of type `E`, made with `E::default()` on first
    /// use. Extensions are dropped on the GL thread, context current, before
    /// its cached images, PBOs and the context itself — when the last `Gpu`
    /// handle drops, or when a panicking job poisons the thread — so an
    /// extension that registered a GL object with another API releases it
    /// while the object still exists.
    pub fn extension<E: Any + Default>(&mut self) -> &mut E {
        let slot = self
            .st
            .extensions
            .0
            .entry(TypeId::of::<E>())
            .or_insert_with(|| Box::new(E::default()));
        match slot.downcast_mut::<E>() {
            Some(e) => e,
            // Keyed by `TypeId::of::<E>()`: the value is an `E`.
            None => unreachable!("an extension slot holds another type"),
        }
    }

    /// The EGLImage of the dma-buf tensor `src` (the root image of the batch
    /// element it is cut from), from the import cache
    /// [`Gpu::convert`] uses, imported on a miss with default colour hints.
    ///
    /// # Errors
    /// [`GpuError::UnsupportedMemory`] for other memory; [`GpuError::NotAnImage`];
    /// [`GpuError::MissingExtension`] without dma-buf import; [`GpuError::Import`].
    pub fn egl_image(&mut self, src: &Tensor<u8>) -> Result<SharedEglImage> {
        if src.memory() != TensorMemory::Dma {
            return Err(GpuError::UnsupportedMemory {
                memory: src.memory(),
                role: "source",
                operation: "EGLImage interop",
                reason: "only a dma-buf can be imported",
            });
        }
        let placement = src.placement().ok_or_else(|| GpuError::NotAnImage {
            role: "source",
            operation: "EGLImage interop",
            shape: src.shape().to_vec(),
        })?;
        if !self.st.egl.info.dma_buf_import {
            return Err(GpuError::MissingExtension {
                extension: "EGL_EXT_image_dma_buf_import",
                renderer: self.st.egl.info.renderer.clone(),
            });
        }
        let image = crate::source::cached_import(
            self.st,
            src,
            placement.root,
            placement.frame,
            ColorSpec::default(),
        )?;
        Ok(SharedEglImage(Rc::clone(&image.image)))
    }

    /// Whether the GL buffer `buffer` exists in this context (`glIsBuffer`).
    pub fn is_buffer(&self, buffer: u32) -> bool {
        crate::glutil::is_buffer(buffer)
    }
}

/// An EGLImage shared with the GL thread's import cache: it is destroyed when
/// the cache and every `SharedEglImage` of it have let go. Neither `Send` nor
/// `Sync`: it lives on the GL thread (in an [extension](GlThread::extension)).
#[derive(Debug, Clone)]
pub struct SharedEglImage(Rc<EglImage>);

impl SharedEglImage {
    /// The `EGLImageKHR` handle (for `cuGraphicsEGLRegisterImage`).
    pub fn as_ptr(&self) -> *mut c_void {
        self.0.as_ptr()
    }
}

/// A [`Gpu`] that does not keep its GL thread alive: [`upgrade`](WeakGpu::upgrade)
/// gives the handle back while another one lives. Made by [`Gpu::downgrade`],
/// for registries that find the `Gpu` of a PBO tensor ([`Gpu::owns_pbo`])
/// without extending its life.
#[derive(Debug, Clone)]
pub struct WeakGpu {
    link: std::sync::Weak<crate::gpu::Link>,
    info: std::sync::Arc<crate::GpuInfo>,
}

impl WeakGpu {
    /// The `Gpu`, while any handle of it lives.
    pub fn upgrade(&self) -> Option<Gpu> {
        Some(Gpu::from_parts(
            self.link.upgrade()?,
            std::sync::Arc::clone(&self.info),
        ))
    }
}

impl Gpu {
    /// A [`WeakGpu`] of this handle.
    pub fn downgrade(&self) -> WeakGpu {
        WeakGpu {
            link: self.weak_link(),
            info: self.info_arc(),
        }
    }

    /// Runs `f` on the GL thread, its context current, and returns the result
    /// (the hook device interop such as zerocam-cuda uses).
    ///
    /// # Errors
    /// [`GpuError::Disconnected`] if the thread has exited;
    /// [`GpuError::Poisoned`] once a job has panicked (this one included);
    /// [`GpuError::OnGlThread`] when called from the GL thread itself.
    pub fn run_on_gl_thread<R: Send + 'static>(
        &self,
        job: &'static str,
        f: impl FnOnce(&mut GlThread<'_>) -> R + Send + 'static,
    ) -> Result<R> {
        self.link().call(job, move |st| f(&mut GlThread { st }))
    }

    /// Queues `f` on the GL thread without waiting; it runs even after a panic
    /// poisoned the thread, so it must only free or count (an unmap, an
    /// unregister). Jobs run in the order they are queued, before any job a
    /// later call queues (a PBO's delete, say).
    ///
    /// # Errors
    /// [`GpuError::Disconnected`] if the thread has exited.
    pub fn queue_on_gl_thread(
        &self,
        job: &'static str,
        f: impl FnOnce(&mut GlThread<'_>) + Send + 'static,
    ) -> Result<()> {
        self.link().send(job, move |st| f(&mut GlThread { st }))
    }

    /// Whether `tensor` is a PBO of this `Gpu`'s GL thread.
    pub fn owns_pbo<T: Element>(&self, tensor: &Tensor<T>) -> bool {
        tensor.pbo_owner() == Some(self.owner_token())
    }
}
