//! A machine without EGL: `Gpu::new` is a typed error naming the library, not
//! a crash or a link failure. (Its own test binary: it sets the process's
//! environment.)
#![allow(clippy::unwrap_used)]

use zerocam_gpu::{Gpu, GpuError, EGL_LIBRARY_ENV};

#[test]
fn a_missing_egl_library_is_a_typed_error() {
    std::env::set_var(EGL_LIBRARY_ENV, "/nonexistent/libEGL.so.1");
    let e = Gpu::new().unwrap_err();
    assert!(matches!(e, GpuError::EglUnavailable { .. }), "{e}");
    assert!(e.to_string().contains("/nonexistent/libEGL.so.1"), "{e}");
}
