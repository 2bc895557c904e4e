//! `Tensor.from_fd(fd, shape, dtype, unchecked=...)`'s import. With
//! `unchecked=True` a Python caller makes the promise that Rust's
//! `unsafe fn` [`TensorDyn::from_fd_unchecked`] asks of its caller — nobody
//! truncates the file while the tensor, a view, a map or an array of it lives
//! — so this is where the binding calls it, and why this module is an FFI
//! edge module (the crate allows `unsafe` only in those). The promise is
//! documented on `Tensor.from_fd` (`python/zerocam/_zerocam.pyi`) and in
//! `python/README.md`.

use std::os::fd::OwnedFd;

use zerocam_tensor::{DType, Result, TensorDyn};

/// `fd` as a C-contiguous tensor of `shape` and `dtype`: through the checked
/// [`TensorDyn::from_fd`] (a dma-buf or a memfd that cannot shrink), or, when
/// the Python caller passed `unchecked=True`, any mappable file.
pub fn import(fd: OwnedFd, shape: &[usize], dtype: DType, unchecked: bool) -> Result<TensorDyn> {
    if !unchecked {
        return TensorDyn::from_fd(fd, shape, dtype, None);
    }
    // SAFETY: `unchecked=True` is the Python caller's promise, documented as
    // the Rust function's `# Safety`: nobody truncates the file while any
    // tensor, view, map or array of it lives.
    unsafe { TensorDyn::from_fd_unchecked(fd, shape, dtype, None) }
}
