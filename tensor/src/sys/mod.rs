//! The syscall edge: every `unsafe` block of the crate that touches the kernel
//! lives in this module (mmap, the dma-buf sync ioctl, the dup of an fd
//! number). The crate's other `unsafe` edge modules are
//! [`crate::storage::heap`] (the aligned heap allocation), `map.rs` (the
//! map-to-slice step), `pin.rs` (pins), and the two that only declare an
//! `unsafe` contract for someone else to keep: `unchecked.rs` (the caller of
//! `from_fd_unchecked`) and `storage/pbo_ops.rs` (the implementor of
//! `PboOps`).

pub(crate) mod dmabuf;
pub(crate) mod fd;
pub(crate) mod mmap;
