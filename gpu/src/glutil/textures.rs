//! Texture names: making, binding, deleting, immutable storage, and the
//! size limit.

/// `GL_TEXTURE_EXTERNAL_OES` (OES_EGL_image_external).
pub const TEXTURE_EXTERNAL_OES: u32 = 0x8D65;

/// A new texture bound at `target` with linear filtering and edge clamping.
pub fn texture(target: u32) -> u32 {
    let mut t = 0;
    // SAFETY: plain GL calls on a current context.
    unsafe {
        gl::GenTextures(1, &mut t);
        gl::BindTexture(target, t);
        gl::TexParameteri(target, gl::TEXTURE_MIN_FILTER, gl::LINEAR as i32);
        gl::TexParameteri(target, gl::TEXTURE_MAG_FILTER, gl::LINEAR as i32);
        gl::TexParameteri(target, gl::TEXTURE_WRAP_S, gl::CLAMP_TO_EDGE as i32);
        gl::TexParameteri(target, gl::TEXTURE_WRAP_T, gl::CLAMP_TO_EDGE as i32);
    }
    t
}

/// A new texture bound at `target` with nearest filtering and edge clamping:
/// what an integer texture needs to be complete (it cannot be filtered).
pub fn texture_nearest(target: u32) -> u32 {
    let t = texture(target);
    // SAFETY: parameters of the texture just bound, on a current context.
    unsafe {
        gl::TexParameteri(target, gl::TEXTURE_MIN_FILTER, gl::NEAREST as i32);
        gl::TexParameteri(target, gl::TEXTURE_MAG_FILTER, gl::NEAREST as i32);
    }
    t
}

/// Deletes textures.
pub fn delete_textures(names: &[u32]) {
    if names.is_empty() {
        return;
    }
    // SAFETY: deleting names (0 and unknown names are ignored by GL).
    unsafe { gl::DeleteTextures(names.len() as i32, names.as_ptr()) };
}

/// Allocates immutable storage for the 2D texture bound at `GL_TEXTURE_2D`:
/// one level of `format` (`glTexStorage2D`).
pub fn tex_storage_2d(format: u32, width: i32, height: i32) {
    // SAFETY: values only; GL validates them and reads no client memory.
    unsafe { gl::TexStorage2D(gl::TEXTURE_2D, 1, format, width, height) };
}

/// `GL_MAX_TEXTURE_SIZE` (0 if GL does not say).
pub fn max_texture_size() -> i32 {
    let mut max = 0;
    // SAFETY: GL writes one integer into `max`, a live local.
    unsafe { gl::GetIntegerv(gl::MAX_TEXTURE_SIZE, &mut max) };
    max
}

/// Makes texture unit `unit` the active one (`glActiveTexture`).
pub fn active_texture(unit: u32) {
    // SAFETY: an enum argument only; GL validates it.
    unsafe { gl::ActiveTexture(gl::TEXTURE0 + unit) };
}

/// Binds `texture` at `target` on the active unit (`glBindTexture`).
pub fn bind_texture(target: u32, texture: u32) {
    // SAFETY: binding a name reads no client memory; GL validates it.
    unsafe { gl::BindTexture(target, texture) };
}
