//! zerocam's own typed V4L2 ioctl layer, on `nix`.
//!
//! Why not a crate: `v4l` has no multi-planar and no DMA-BUF support (its
//! issues #121 and #107); `v4l2r` generates its bindings with bindgen at build
//! time (libclang and the kernel headers of the target, awkward when cross
//! building for aarch64) and models a generic queue we would wrap anyway. The
//! subset a capture pipeline needs is small: the structures in [`raw`] (sizes
//! checked at compile time) and one safe function per ioctl in [`ioctl`].
//! See `docs/v4l2-layer.md`.

pub(crate) mod ioctl;
pub(crate) mod raw;

/// The bytes of a kernel string field, up to its NUL.
pub(crate) fn c_str(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}
