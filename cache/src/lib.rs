//! zerocam-cache: the import caches that keep a dma-buf imported once.
//!
//! Skeleton only: the `(st_dev, st_ino, plane_offset)` import cache lands with its
//! own issue, keyed on [`zerocam_tensor::FdIdentity`].

pub use zerocam_tensor as tensor;
