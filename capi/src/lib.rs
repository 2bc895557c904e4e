//! zerocam's C API: `libzerocam.so` and `libzerocam.a` (built as
//! `libzerocam_capi.*`, installed under the C name by `capi/install`), with
//! the header `include/zerocam.h` (generated from this crate by cbindgen; a test fails
//! when the checked-in header is stale).
//!
//! What C and C++ get, with Rust's checks:
//! - **tensors**: made, imported from a dma-buf or memfd (one fd, or two
//!   planes), mapped for the CPU, viewed, batched, identified, fds cloned;
//! - **the import cache**: a decoder's or a GStreamer element's dma-bufs
//!   imported once per buffer, found again by their kernel identity
//!   whatever the fd's number;
//! - **capture**: a source by spec, frames with a timeout, planes as tensors;
//! - **model inputs**: frames converted to a model's input tensor on the GPU
//!   or the CPU.
//!
//! Every call returns a status code (`ZEROCAM_OK` or `ZEROCAM_ERROR_*`),
//! `zerocam_last_error()` says what was wrong, naming the values. Handles
//! are ids checked against a live-object table: NULL, a handle of another
//! type, a double unref or a use after unref is an error code, never
//! undefined behaviour. No panic crosses the boundary. See `docs/c-api.md`.

// The C names (`zerocam_tensor`, `zerocam_status`) are the API.
#![allow(non_camel_case_types)]

// This whole crate is the FFI edge: every entry point is an `unsafe extern
// "C" fn` whose `unsafe` blocks write its `out` parameters (each with its
// `// SAFETY:` line); reading C memory and the one syscall live in `ffi.rs`.
mod cache;
mod capture;
mod ffi;
mod handle;
mod map;
mod model;
mod status;
mod tensor;
mod values;
mod wrap;

use std::ffi::{c_char, CStr};

pub use cache::*;
pub use capture::*;
pub use map::*;
pub use model::*;
pub use status::*;
pub use tensor::*;
pub use values::*;

/// The ABI version of this header: bumped when a function, struct or
/// constant changes incompatibly. A program built with one header checks
/// `zerocam_abi_version() == ZEROCAM_ABI_VERSION` at start-up.
pub const ZEROCAM_ABI_VERSION: u32 = 1;

/// The library's version, `"MAJOR.MINOR.PATCH"`.
const VERSION: &CStr =
    match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
        Ok(v) => v,
        Err(_) => c"unknown",
    };

/// The library's version (`"0.1.0"`): a static string, never free it.
#[no_mangle]
pub extern "C" fn zerocam_version() -> *const c_char {
    VERSION.as_ptr()
}

/// The library's ABI version: `ZEROCAM_ABI_VERSION` of the header it was
/// built with.
#[no_mangle]
pub extern "C" fn zerocam_abi_version() -> u32 {
    ZEROCAM_ABI_VERSION
}

/// Live handles of each type, for tests that check nothing leaks:
/// tensors, maps, caches, sources, frames, preprocessors.
#[doc(hidden)]
pub fn __live_handles() -> [usize; 6] {
    use handle::Kind;
    [
        Kind::Tensor,
        Kind::Map,
        Kind::Cache,
        Kind::Source,
        Kind::Frame,
        Kind::Preprocessor,
    ]
    .map(handle::live)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sonames_major_is_the_abi_version() {
        let build = include_str!("../build.rs");
        let soname = format!("-soname,libzerocam.so.{ZEROCAM_ABI_VERSION}\"");
        assert!(build.contains(&soname), "build.rs sets {soname}");
    }

    #[test]
    fn the_version_is_the_crates() {
        // SAFETY: zerocam_version returns a static NUL-terminated string.
        let v = unsafe { CStr::from_ptr(zerocam_version()) };
        assert_eq!(v.to_str().ok(), Some(env!("CARGO_PKG_VERSION")));
    }
}
