//! GL errors and strings: draining and checking `glGetError`, `glGetString`.

use crate::{GpuError, Result};

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

/// `v` as the `GLint`/`GLsizei` argument of `what`; a value past `i32::MAX`
/// is refused before GL is called, as GL would refuse it (`INVALID_VALUE`).
pub(super) fn int(what: &'static str, v: usize) -> Result<i32> {
    i32::try_from(v).map_err(|_| GpuError::Gl {
        call: what,
        code: gl::INVALID_VALUE,
    })
}
