//! The GPU crate's GL edge: small safe wrappers around the raw GL calls, one
//! file for each kind of object they touch. Every function expects the GL
//! thread's context to be current (the GL thread's invariant); every other
//! module of the crate calls GL only through these.
//!
//! A wrapper that reads or writes client memory takes it as a slice and checks
//! its length against what GL will touch before GL is called, so no caller
//! can make GL read or write outside it; the pixel store state those lengths
//! depend on (unpack and pack row lengths, alignment, the bound unpack or
//! pack buffer) is set by the wrapper that reads or writes, before it does;
//! no wrapper sets the skip parameters.

mod buffers;
mod draw;
mod errors;
mod programs;
mod readback;
mod textures;
mod upload;

pub use buffers::{
    copy_buffer_range, delete_buffers, is_buffer, map_pack_buffer, new_pack_buffer,
    new_pack_buffer_uninit, pack_buffer_mapped, unmap_pack_buffer,
};
pub use draw::{
    bind_framebuffer, color_mask, delete_framebuffer, disable, draw_triangle, finish, framebuffer,
    viewport,
};
pub use errors::{check, clear_errors, string};
pub use programs::{
    delete_program, program, uniform, uniform_1i, uniform_2f, uniform_2i, uniform_3f, uniform_4f,
    uniform_4i, uniform_mat3, use_program,
};
#[cfg(feature = "fault-injection")]
pub use readback::leave_pack_state_dirty;
pub use readback::{PixelRect, Readback};
pub use textures::{
    active_texture, bind_texture, delete_textures, max_texture_size, tex_storage_2d, texture,
    texture_nearest, TEXTURE_EXTERNAL_OES,
};
pub use upload::{upload_texture, TexUpload, UploadFrom};

#[cfg(test)]
mod tests;
