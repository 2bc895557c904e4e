//! Small GL helpers for the GL thread: error checks, strings, shader programs,
//! textures and framebuffers. Every function expects the thread's context to be
//! current (the GL thread's invariant).

use std::ffi::CString;

use crate::{GpuError, Result};

/// `GL_TEXTURE_EXTERNAL_OES` (OES_EGL_image_external).
pub const TEXTURE_EXTERNAL_OES: u32 = 0x8D65;

/// `glGetString(name)` as a String (empty if GL returns NULL).
pub fn string(name: u32) -> String {
    // SAFETY: the context is current; glGetString returns NULL or a static
    // NUL-terminated string owned by GL.
    unsafe {
        let p = gl::GetString(name);
        if p.is_null() {
            return String::new();
        }
        std::ffi::CStr::from_ptr(p.cast())
            .to_string_lossy()
            .into_owned()
    }
}

/// Forgets pending GL errors (at most 32: a lost context may repeat one forever).
pub fn clear_errors() {
    for _ in 0..32 {
        // SAFETY: glGetError has no preconditions beyond a current context.
        if unsafe { gl::GetError() } == gl::NO_ERROR {
            break;
        }
    }
}

/// Fails with the first pending GL error, naming `call`.
pub fn check(call: &'static str) -> Result<()> {
    // SAFETY: glGetError has no preconditions beyond a current context.
    let code = unsafe { gl::GetError() };
    if code == gl::NO_ERROR {
        return Ok(());
    }
    // Drain the rest so the next check starts clean.
    clear_errors();
    Err(GpuError::Gl { call, code })
}

fn info_log(object: u32, program: bool) -> String {
    let mut len = 0;
    let mut buf = vec![0u8; 4096];
    // SAFETY: `object` is a live shader/program; GL writes at most buf.len() bytes.
    unsafe {
        if program {
            gl::GetProgramInfoLog(object, buf.len() as i32, &mut len, buf.as_mut_ptr().cast());
        } else {
            gl::GetShaderInfoLog(object, buf.len() as i32, &mut len, buf.as_mut_ptr().cast());
        }
    }
    buf.truncate(usize::try_from(len).unwrap_or(0));
    String::from_utf8_lossy(&buf).into_owned()
}

fn compile(kind: u32, source: &str, stage: &'static str) -> Result<u32> {
    let src = CString::new(source).map_err(|_| GpuError::Shader {
        stage,
        log: "source contains a NUL".into(),
    })?;
    // SAFETY: plain GL calls on a current context; `src` outlives ShaderSource.
    unsafe {
        let shader = gl::CreateShader(kind);
        gl::ShaderSource(shader, 1, &src.as_ptr(), std::ptr::null());
        gl::CompileShader(shader);
        let mut ok = 0;
        gl::GetShaderiv(shader, gl::COMPILE_STATUS, &mut ok);
        if ok == 0 {
            let log = info_log(shader, false);
            gl::DeleteShader(shader);
            return Err(GpuError::Shader { stage, log });
        }
        Ok(shader)
    }
}

/// Compiles and links a program from a vertex and a fragment shader.
pub fn program(vertex: &str, fragment: &str) -> Result<u32> {
    let vs = compile(gl::VERTEX_SHADER, vertex, "vertex")?;
    let fs = match compile(gl::FRAGMENT_SHADER, fragment, "fragment") {
        Ok(fs) => fs,
        Err(e) => {
            // SAFETY: `vs` is a live shader.
            unsafe { gl::DeleteShader(vs) };
            return Err(e);
        }
    };
    // SAFETY: plain GL calls on live shader objects.
    unsafe {
        let p = gl::CreateProgram();
        gl::AttachShader(p, vs);
        gl::AttachShader(p, fs);
        gl::LinkProgram(p);
        gl::DeleteShader(vs);
        gl::DeleteShader(fs);
        let mut ok = 0;
        gl::GetProgramiv(p, gl::LINK_STATUS, &mut ok);
        if ok == 0 {
            let log = info_log(p, true);
            gl::DeleteProgram(p);
            return Err(GpuError::Shader { stage: "link", log });
        }
        Ok(p)
    }
}

/// The location of uniform `name` in `program` (-1 if unused).
pub fn uniform(program: u32, name: &str) -> i32 {
    let Ok(n) = CString::new(name) else {
        return -1;
    };
    // SAFETY: `program` is a linked program; `n` is NUL-terminated.
    unsafe { gl::GetUniformLocation(program, n.as_ptr()) }
}

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

/// Deletes textures.
pub fn delete_textures(names: &[u32]) {
    if names.is_empty() {
        return;
    }
    // SAFETY: deleting names (0 and unknown names are ignored by GL).
    unsafe { gl::DeleteTextures(names.len() as i32, names.as_ptr()) };
}

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

/// Waits until every GL command issued so far has completed (`glFinish`).
pub fn finish() {
    // SAFETY: glFinish takes no arguments and touches no client memory.
    unsafe { gl::Finish() };
}

/// Deletes a program (0 and unknown names are ignored by GL).
pub fn delete_program(program: u32) {
    // SAFETY: deleting a name; GL ignores 0 and names it does not know.
    unsafe { gl::DeleteProgram(program) };
}

/// Deletes buffer objects (0 and unknown names are ignored by GL).
pub fn delete_buffers(names: &[u32]) {
    if names.is_empty() {
        return;
    }
    let count = i32::try_from(names.len()).unwrap_or(i32::MAX);
    // SAFETY: GL reads `count` <= names.len() names from the live slice.
    unsafe { gl::DeleteBuffers(count, names.as_ptr()) };
}

/// A new `GL_PIXEL_PACK_BUFFER` holding a copy of `data` (`usage` as for
/// `glBufferData`), left unbound. Check [`check`] for allocation failure.
pub fn new_pack_buffer(data: &[u8], usage: u32) -> u32 {
    let size = isize::try_from(data.len()).unwrap_or(isize::MAX);
    let mut b = 0;
    // SAFETY: GL writes one name into `b`; glBufferData reads at most `size`
    // (<= data.len()) bytes from the live slice and copies them.
    unsafe {
        gl::GenBuffers(1, &mut b);
        gl::BindBuffer(gl::PIXEL_PACK_BUFFER, b);
        gl::BufferData(gl::PIXEL_PACK_BUFFER, size, data.as_ptr().cast(), usage);
        gl::BindBuffer(gl::PIXEL_PACK_BUFFER, 0);
    }
    b
}

/// Maps the first `len` bytes of pack buffer `buffer` with `access` bits
/// (`glMapBufferRange`); NULL if GL refused (see [`check`]). The pointer is
/// only dereferenced by whoever holds the map, until [`unmap_pack_buffer`].
pub fn map_pack_buffer(buffer: u32, len: usize, access: u32) -> *mut std::ffi::c_void {
    let len = isize::try_from(len).unwrap_or(isize::MAX);
    // SAFETY: binding and mapping a name read no client memory; GL validates
    // the name, range and bits (an error, not UB), and nothing is dereferenced.
    unsafe {
        gl::BindBuffer(gl::PIXEL_PACK_BUFFER, buffer);
        let p = gl::MapBufferRange(gl::PIXEL_PACK_BUFFER, 0, len, access);
        gl::BindBuffer(gl::PIXEL_PACK_BUFFER, 0);
        p
    }
}

/// Unmaps pack buffer `buffer` (`glUnmapBuffer`): false if its contents were lost.
pub fn unmap_pack_buffer(buffer: u32) -> bool {
    // SAFETY: binding and unmapping a name touch no client memory; GL
    // validates the name. A CPU map of it ends here, as its owner asked.
    let ok = unsafe {
        gl::BindBuffer(gl::PIXEL_PACK_BUFFER, buffer);
        let ok = gl::UnmapBuffer(gl::PIXEL_PACK_BUFFER);
        gl::BindBuffer(gl::PIXEL_PACK_BUFFER, 0);
        ok
    };
    ok != gl::FALSE
}

/// Whether pack buffer `buffer` is mapped (`GL_BUFFER_MAPPED`).
pub fn pack_buffer_mapped(buffer: u32) -> bool {
    let mut mapped = 0;
    // SAFETY: GL writes one integer into `mapped`, a live local.
    unsafe {
        gl::BindBuffer(gl::PIXEL_PACK_BUFFER, buffer);
        gl::GetBufferParameteriv(gl::PIXEL_PACK_BUFFER, gl::BUFFER_MAPPED, &mut mapped);
        gl::BindBuffer(gl::PIXEL_PACK_BUFFER, 0);
    }
    mapped != 0
}

/// Binds framebuffer `fb` at `target` (`glBindFramebuffer`).
pub fn bind_framebuffer(target: u32, fb: u32) {
    // SAFETY: binding a name reads no client memory; GL validates it.
    unsafe { gl::BindFramebuffer(target, fb) };
}

/// Makes `program` the current program (`glUseProgram`).
pub fn use_program(program: u32) {
    // SAFETY: binding a name reads no client memory; GL validates it.
    unsafe { gl::UseProgram(program) };
}

/// Disables capability `cap` (`glDisable`).
pub fn disable(cap: u32) {
    // SAFETY: an enum argument only; GL validates it.
    unsafe { gl::Disable(cap) };
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

/// Sets an `int`/sampler uniform of the current program (`glUniform1i`).
pub fn uniform_1i(location: i32, v: i32) {
    // SAFETY: values only; GL ignores location -1 and validates the rest.
    unsafe { gl::Uniform1i(location, v) };
}

/// Sets an `ivec2` uniform of the current program (`glUniform2i`).
pub fn uniform_2i(location: i32, x: i32, y: i32) {
    // SAFETY: values only; GL ignores location -1 and validates the rest.
    unsafe { gl::Uniform2i(location, x, y) };
}

/// Sets a `vec2` uniform of the current program (`glUniform2f`).
pub fn uniform_2f(location: i32, x: f32, y: f32) {
    // SAFETY: values only; GL ignores location -1 and validates the rest.
    unsafe { gl::Uniform2f(location, x, y) };
}

/// Sets a `vec3` uniform of the current program (`glUniform3fv`, count 1).
pub fn uniform_3f(location: i32, v: &[f32; 3]) {
    // SAFETY: GL reads exactly 3 floats (one vec3) from the live array.
    unsafe { gl::Uniform3fv(location, 1, v.as_ptr()) };
}

/// Sets a `vec4` uniform of the current program (`glUniform4fv`, count 1).
pub fn uniform_4f(location: i32, v: &[f32; 4]) {
    // SAFETY: GL reads exactly 4 floats (one vec4) from the live array.
    unsafe { gl::Uniform4fv(location, 1, v.as_ptr()) };
}

/// Sets a `mat3` uniform of the current program from 9 column-major floats
/// (`glUniformMatrix3fv`, count 1, not transposed).
pub fn uniform_mat3(location: i32, columns: &[f32; 9]) {
    // SAFETY: GL reads exactly 9 floats (one mat3) from the live array.
    unsafe { gl::UniformMatrix3fv(location, 1, gl::FALSE, columns.as_ptr()) };
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

/// Draws one triangle from vertices 0..3 (`glDrawArrays(GL_TRIANGLES, 0, 3)`);
/// the vertex shader makes the positions, so no vertex array is read.
pub fn draw_triangle() {
    // SAFETY: no vertex attribute array is enabled, so GL reads no client
    // memory; the current program generates the vertices from gl_VertexID.
    unsafe { gl::DrawArrays(gl::TRIANGLES, 0, 3) };
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

/// A new `GL_PIXEL_PACK_BUFFER` of `size` undefined bytes (`usage` as for
/// `glBufferData`), left unbound. Check [`check`] for allocation failure.
pub fn new_pack_buffer_uninit(size: isize, usage: u32) -> u32 {
    let mut b = 0;
    // SAFETY: GL writes one name into `b`; a NULL data pointer reads nothing.
    unsafe {
        gl::GenBuffers(1, &mut b);
        gl::BindBuffer(gl::PIXEL_PACK_BUFFER, b);
        gl::BufferData(gl::PIXEL_PACK_BUFFER, size, std::ptr::null(), usage);
        gl::BindBuffer(gl::PIXEL_PACK_BUFFER, 0);
    }
    b
}
