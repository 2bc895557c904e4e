//! # zerocam-cache
//!
//! The import cache between a camera's buffers and the tensors handed to the
//! user. A V4L2 driver cycles a handful of buffers; every frame names one of
//! them by fd. Importing it anew every frame (a new tensor, a new mapping, a new
//! [`BufferIdentity`](zerocam_tensor::BufferIdentity)) defeats every cache
//! downstream, so [`ImportCache`] (`import_cache.rs`) imports each
//! `(st_dev, st_ino, plane_offset)` once, keeps the tensor — and with it the
//! fd, so the inode cannot be recycled under the entry — and lays each
//! lookup's image layout on it. Never keyed on an fd number: the kernel
//! reuses those.
//!
//! ```
//! use zerocam_cache::{DmaBufKey, ImportCache};
//! use zerocam_tensor::{ImageLayout, PixelFormat, Tensor, TensorMemory};
//!
//! let buffer = Tensor::<u8>::new(&[4096], Some(TensorMemory::Shm), None)?;
//! let key = DmaBufKey::of(&buffer).expect("shm has an fd");
//! let layout = ImageLayout::new(64, 64, PixelFormat::Grey);
//! let mut cache = ImportCache::new(8);
//! for _ in 0..10 {
//!     let import = || Tensor::from_fd(buffer.clone_fd()?, &[4096], None);
//!     let t = cache.get_image(key, layout, import)?;
//!     assert_eq!(t.fd_identity(), buffer.fd_identity());
//! }
//! let stats = cache.stats();
//! assert_eq!((stats.misses, stats.hits, stats.live), (1, 9, 1));
//! # Ok::<(), zerocam_tensor::Error>(())
//! ```
//!
//! [`GpuImageCache`] (`gpu_image_cache.rs`) is the GPU side's cache: an
//! import of a tensor (an EGLImage, a render target) per
//! [`BufferIdentity`](zerocam_tensor::BufferIdentity) and geometry.

#![forbid(unsafe_code)]

mod gpu_image_cache;
mod import_cache;

pub use gpu_image_cache::{GpuCacheStats, GpuImageCache, ImageKey};
pub use import_cache::{CacheStats, DmaBufKey, ImportCache};
