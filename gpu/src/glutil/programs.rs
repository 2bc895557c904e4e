//! Shader programs: compiling and linking, using and deleting them, and
//! setting their uniforms.

use std::ffi::CString;

use crate::{GpuError, Result};

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

/// Deletes a program (0 and unknown names are ignored by GL).
pub fn delete_program(program: u32) {
    // SAFETY: deleting a name; GL ignores 0 and names it does not know.
    unsafe { gl::DeleteProgram(program) };
}

/// Makes `program` the current program (`glUseProgram`).
pub fn use_program(program: u32) {
    // SAFETY: binding a name reads no client memory; GL validates it.
    unsafe { gl::UseProgram(program) };
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

/// Sets an `ivec4` uniform of the current program (`glUniform4iv`, count 1).
pub fn uniform_4i(location: i32, v: &[i32; 4]) {
    // SAFETY: GL reads exactly 4 ints (one ivec4) from the live array.
    unsafe { gl::Uniform4iv(location, 1, v.as_ptr()) };
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
