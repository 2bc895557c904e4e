//! Helpers shared by the integration tests.
#![allow(dead_code, clippy::unwrap_used)]

use std::ffi::CString;
use std::os::fd::OwnedFd;

use nix::sys::memfd::{memfd_create, MFdFlags};
use nix::unistd::ftruncate;

/// A memfd of `len` bytes: a real fd with a real inode, like a driver's buffer.
pub fn memfd(len: usize) -> OwnedFd {
    let name = CString::new("zerocam-test").unwrap();
    let fd = memfd_create(
        name.as_c_str(),
        MFdFlags::MFD_CLOEXEC | MFdFlags::MFD_ALLOW_SEALING,
    )
    .unwrap();
    ftruncate(&fd, len as i64).unwrap();
    fd
}

/// Number of open fds of this process.
pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// A tensor from the system DMA heap (lab only: the host has no heap).
pub fn dma(shape: &[usize]) -> zerocam_tensor::Tensor<u8> {
    zerocam_tensor::Tensor::<u8>::builder(shape)
        .memory(zerocam_tensor::TensorMemory::Dma)
        .dma_heap("system")
        .build()
        .unwrap()
}
