//! Python bindings for zerocam.
//!
//! Skeleton only: the PyO3 extension lands with its own issue.

pub use zerocam_tensor as tensor;
