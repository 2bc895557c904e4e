//! The draw: one full-viewport triangle per destination rectangle.

use crate::glutil::{self, uniform, TEXTURE_EXTERNAL_OES};
use crate::plan::{Pack, Plan};
use crate::source::Bound;
use crate::target::Prepared;
use crate::Result;

/// Draws every rectangle of `plan` into `target`, sampling `source`.
pub(crate) fn draw(program: u32, plan: &Plan, source: &Bound, target: &Prepared) -> Result<()> {
    let offsets = source.color.offsets();
    let matrix = source.color.matrix_columns();
    let (out_w, out_h) = (plan.out.0 as f32, plan.out.1 as f32);
    // SAFETY: plain GL calls on the current context; the program, textures
    // and framebuffer are live objects of this context; the uniform arrays
    // outlive the calls.
    unsafe {
        gl::BindFramebuffer(gl::DRAW_FRAMEBUFFER, target.framebuffer);
        gl::UseProgram(program);
        gl::Disable(gl::BLEND);
        gl::Disable(gl::DEPTH_TEST);
        gl::Disable(gl::SCISSOR_TEST);
        let texture_target = if source.external {
            TEXTURE_EXTERNAL_OES
        } else {
            gl::TEXTURE_2D
        };
        for (unit, &texture) in source.textures.iter().enumerate() {
            if texture != 0 {
                gl::ActiveTexture(gl::TEXTURE0 + unit as u32);
                gl::BindTexture(texture_target, texture);
            }
        }
        gl::ActiveTexture(gl::TEXTURE0);
        gl::Uniform1i(uniform(program, "u_tex0"), 0);
        gl::Uniform1i(uniform(program, "u_tex1"), 1);
        gl::Uniform1i(uniform(program, "u_swap_rb"), i32::from(source.swap_rb));
        gl::UniformMatrix3fv(uniform(program, "u_yuv"), 1, gl::FALSE, matrix.as_ptr());
        gl::Uniform3fv(uniform(program, "u_yuv_offset"), 1, offsets.as_ptr());
        gl::Uniform4fv(uniform(program, "u_crop"), 1, source.crop.as_ptr());
        gl::Uniform2f(uniform(program, "u_out"), out_w, out_h);
        for r in &plan.rects {
            let channel = match r.pack {
                Pack::Channel(c) => c as i32,
                Pack::Rgba | Pack::Rgb => 0,
            };
            gl::Uniform1i(uniform(program, "u_channel"), channel);
            gl::Uniform2i(uniform(program, "u_origin"), r.x as i32, r.y as i32);
            gl::Viewport(r.x as i32, r.y as i32, r.width as i32, r.height as i32);
            gl::DrawArrays(gl::TRIANGLES, 0, 3);
        }
        gl::BindTexture(texture_target, 0);
    }
    glutil::check("glDrawArrays (convert)")
}
