//! Fault injection for this crate's tests (feature `fault-injection`, which
//! only the crate's own dev-dependency on itself turns on): a panicking job, a
//! panic in the middle of the next conversion, and EGLImages of GL textures —
//! the images the host's EGL can make without dma-buf import. Not public API:
//! hidden from the docs, absent from normal builds.

use crate::egl::EglImage;
use crate::state::GlState;
use crate::{glutil, Gpu, GpuError, Result};

/// The GL thread's test-only state.
#[derive(Debug, Default)]
pub(crate) struct Faults {
    /// The message the next conversion panics with, after its draw.
    armed: Option<String>,
    /// Textures and the EGLImages made of them, held until released.
    held: Vec<(u32, EglImage)>,
}

impl Faults {
    /// Panics with the armed message, once.
    pub fn panic_if_armed(&mut self) {
        if let Some(message) = self.armed.take() {
            panic!("{message}");
        }
    }

    /// Deletes the held textures and destroys their images.
    pub fn release(&mut self) {
        for (texture, image) in self.held.drain(..) {
            glutil::delete_textures(&[texture]);
            drop(image);
        }
    }
}

/// A 4x4 RGBA8 texture and an EGLImage of it.
fn texture_image(st: &GlState) -> Result<(u32, EglImage)> {
    let texture = glutil::texture(gl::TEXTURE_2D);
    glutil::tex_storage_2d(gl::RGBA8, 4, 4);
    match st.egl.create_texture_image(texture) {
        Ok(image) => Ok((texture, image)),
        Err(error) => {
            glutil::delete_textures(&[texture]);
            Err(GpuError::Egl {
                call: "eglCreateImageKHR (EGL_GL_TEXTURE_2D_KHR)",
                error,
            })
        }
    }
}

/// Leaves GL state half-set, as a bug between two GL calls would (a bound
/// pack buffer, a pack row length, a bound texture, an
/// EGLImage in hand), then panics with `message`.
fn panic_mid_job(st: &mut GlState, message: String) -> Result<()> {
    let in_hand = texture_image(st)?;
    let pbo = st.pbos.first().copied().unwrap_or(0);
    glutil::leave_pack_state_dirty(pbo, 7);
    let _unwound_with = in_hand; // destroyed by the unwinding, not leaked
    panic!("{message}");
}

#[doc(hidden)]
impl Gpu {
    /// Test-only: runs a job that leaves GL state half-set and an EGLImage
    /// in hand, then panics with `message`. Returns what its caller gets.
    pub fn __inject_panic(&self, message: &str) -> Result<()> {
        let message = message.to_owned();
        self.link()
            .call("inject_panic", move |st| panic_mid_job(st, message))?
    }

    /// Test-only: the next [`convert`](Gpu::convert) panics with `message`
    /// after its draw (source bound or imported, target prepared, their
    /// device borrows held), before reading back.
    pub fn __panic_in_next_convert(&self, message: &str) -> Result<()> {
        let message = message.to_owned();
        self.link().call("arm a convert panic", move |st| {
            st.faults.armed = Some(message)
        })
    }

    /// Test-only: makes `n` EGLImages of GL textures, held by the GL thread
    /// until it frees its caches after a panic, or exits.
    pub fn __hold_texture_images(&self, n: usize) -> Result<()> {
        self.link().call("hold texture images", move |st| {
            for _ in 0..n {
                let held = texture_image(st)?;
                st.faults.held.push(held);
            }
            Ok(())
        })?
    }
}
