//! # zerocam-tensor
//!
//! Zero-copy tensors for camera-to-inference pipelines on Linux: one
//! [`Tensor<T>`] type over four kinds of memory — the process heap, shared
//! memory, DMA-BUF (from `/dev/dma_heap` or imported from a driver) and GL pixel
//! buffer objects — so the same value feeds CPU code, a GPU import, another
//! process or a V4L2 queue.
//!
//! What it does differently:
//! - **Persistent mapping.** An fd-backed buffer is `mmap`ed once and stays
//!   mapped; [`Tensor::map`] costs a `DMA_BUF_IOCTL_SYNC` pair on a dma-buf and
//!   nothing on shared memory, whatever the size.
//! - **Owned views.** [`Tensor::view`], [`Tensor::batch`] and [`Tensor::plane`]
//!   share the buffer and the [`BufferIdentity`], so a GPU cache imports a buffer
//!   once, and they error instead of clamping.
//! - **Import identity.** [`Tensor::fd_identity`] gives the kernel's
//!   `(st_dev, st_ino)` of the fd and [`Tensor::plane_offset`] the offset: the key
//!   an import cache needs so a camera buffer is imported once, not every frame.
//! - **Imports that cannot crash.** [`Tensor::from_fd`] takes only memory
//!   whose size cannot shrink under its mapping — dma-bufs, and memfds sealed
//!   with `F_SEAL_SHRINK` (it seals a sealable one) — and refuses any other
//!   file with a typed error naming its [`FdKind`], so a peer's `ftruncate`
//!   can never turn a later access into `SIGBUS`.
//!   [`Tensor::from_fd_unchecked`] (`unsafe`) takes any mappable file when the
//!   caller can promise that nobody truncates it.
//! - **Safe maps.** Writable maps never alias: overlapping maps of one file —
//!   through one tensor, two imports of it, or a device holding a
//!   [`DeviceBorrow`] — are refused with [`Error::MapConflict`].
//!
//! ## Quick start
//! ```
//! use zerocam_tensor::{PixelFormat, Region, Tensor, TensorMapTrait, TensorMemory};
//!
//! // A 640x480 RGB image in shared memory, a crop of it, and a CPU write.
//! let img = Tensor::<u8>::image(640, 480, PixelFormat::Rgb, Some(TensorMemory::Shm))?;
//! let crop = img.view(Region { x: 100, y: 50, width: 64, height: 32 })?;
//! {
//!     let mut m = crop.map()?;
//!     m.view_mut()?.fill(200); // only the crop's pixels, padding skipped
//! }
//! // Hand the buffer to another API or process, and take it back as a tensor.
//! let fd = img.clone_fd()?;
//! let again = Tensor::<u8>::from_fd(fd, &[480, 640, 3], None)?;
//! assert_eq!(again.fd_identity(), img.fd_identity());
//! assert_eq!(again.map_read()?.view()?[[50, 100, 0]], 200);
//! # Ok::<(), zerocam_tensor::Error>(())
//! ```
//!
//! ## Memory selection
//! An explicit [`TensorMemory`] is used as asked or fails with a typed error.
//! With `None`, allocation tries DMA (the heap named by `ZEROCAM_DMA_HEAP`,
//! else `linux,cma`, `reserved`, `system`), then shared memory, then the heap,
//! taking the first that succeeds; `ZEROCAM_TENSOR_FORCE_MEM=1` goes straight to
//! the heap.

#![deny(unsafe_code)]

mod access;
mod buffer;
pub mod capsule;
mod color;
mod dtype;
mod error;
mod fd;
mod format;
mod geometry;
mod identity;
#[allow(unsafe_code)] // the map-to-slice step
mod map;
mod memory;
#[allow(unsafe_code)] // pins: a stable CPU address for foreign code
mod pin;
mod placement;
mod planes;
mod region;
mod storage;
#[allow(unsafe_code)] // the syscall edge
mod sys;
mod tensor;
mod tensor_dyn;
mod traits;
#[allow(unsafe_code)] // the unchecked import's `unsafe fn`s: the caller's promise
mod unchecked;

pub use access::{DeviceBorrow, FileBorrows};
pub use color::{ColorSpec, Matrix, Range, YcbcrToRgb};
pub use dtype::{DType, Element};
pub use error::{Error, Result};
pub use fd::{check_peer_fd, dup_fd, dup_fd_number, FdKind};
pub use format::{ImageLayout, PixelFormat};
pub use half::f16;
pub use identity::{BufferIdentity, FdIdentity};
pub use map::{
    Access, MapMode, ReadOnly, ReadWrite, TensorMap, TensorMapTrait, Writable, WriteOnly,
};
pub use memory::{
    dma_heaps, is_dma_available, is_gpu_buffer_available, is_shm_available, TensorMemory,
    FORCE_MEM_ENV,
};
pub use pin::{CpuAccess, HostPin, MemoryHold};
pub use placement::{ImagePlacement, PlanePlacement, RootLayout};
pub use planes::PlaneDescriptor;
pub use region::Region;
pub use storage::dma_heap::{allocate_read_only, DEFAULT_HEAPS, HEAP_ENV};
pub use storage::external::{ExternalMemory, ExternalMemoryMut};
pub use storage::pbo_ops::PboOps;
pub use tensor::{Tensor, TensorBuilder};
pub use tensor_dyn::{DynMap, TensorDyn};
pub use traits::TensorTrait;
