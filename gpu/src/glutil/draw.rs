//! Draw state: framebuffers, viewport, colour mask, capabilities, the
//! one-triangle draw and `glFinish`.

use crate::{GpuError, Result};

/// A framebuffer with `texture` (a 2D texture) as colour attachment 0.
pub fn framebuffer(texture: u32) -> Result<u32> {
    let mut fb = 0;
    // SAFETY: plain GL calls on a current context with a live texture.
    unsafe {
        gl::GenFramebuffers(1, &mut fb);
        gl::BindFramebuffer(gl::FRAMEBUFFER, fb);
        gl::FramebufferTexture2D(
            gl::FRAMEBUFFER,
            gl::COLOR_ATTACHMENT0,
            gl::TEXTURE_2D,
            texture,
            0,
        );
        let status = gl::CheckFramebufferStatus(gl::FRAMEBUFFER);
        if status != gl::FRAMEBUFFER_COMPLETE {
            gl::DeleteFramebuffers(1, &fb);
            return Err(GpuError::Gl {
                call: "glCheckFramebufferStatus",
                code: status,
            });
        }
    }
    Ok(fb)
}

/// Deletes a framebuffer.
pub fn delete_framebuffer(fb: u32) {
    // SAFETY: deleting a name.
    unsafe { gl::DeleteFramebuffers(1, &fb) };
}

/// Binds framebuffer `fb` at `target` (`glBindFramebuffer`).
pub fn bind_framebuffer(target: u32, fb: u32) {
    // SAFETY: binding a name reads no client memory; GL validates it.
    unsafe { gl::BindFramebuffer(target, fb) };
}

/// Sets the viewport (`glViewport`).
pub fn viewport(x: i32, y: i32, width: i32, height: i32) {
    // SAFETY: values only; GL validates them.
    unsafe { gl::Viewport(x, y, width, height) };
}

/// Sets which colour channels (R, G, B, A) draws write (`glColorMask`).
pub fn color_mask(write: [bool; 4]) {
    let b = |w: bool| if w { gl::TRUE } else { gl::FALSE };
    // SAFETY: values only.
    unsafe { gl::ColorMask(b(write[0]), b(write[1]), b(write[2]), b(write[3])) };
}

/// Disables capability `cap` (`glDisable`).
pub fn disable(cap: u32) {
    // SAFETY: an enum argument only; GL validates it.
    unsafe { gl::Disable(cap) };
}

/// Draws one triangle from vertices 0..3 (`glDrawArrays(GL_TRIANGLES, 0, 3)`);
/// the vertex shader makes the positions, so no vertex array is read.
pub fn draw_triangle() {
    // SAFETY: no vertex attribute array is enabled, so GL reads no client
    // memory; the current program generates the vertices from gl_VertexID.
    unsafe { gl::DrawArrays(gl::TRIANGLES, 0, 3) };
}

/// Waits until every GL command issued so far has completed (`glFinish`).
pub fn finish() {
    // SAFETY: glFinish takes no arguments and touches no client memory.
    unsafe { gl::Finish() };
}
