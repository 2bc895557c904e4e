//! The syscall edge: every `unsafe` block of the crate that touches the kernel
//! lives in this module (mmap, the dma-buf sync ioctl) or in
//! [`crate::storage::heap`] (the aligned heap allocation).

pub(crate) mod dmabuf;
pub(crate) mod fd;
pub(crate) mod mmap;
