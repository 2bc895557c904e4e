//! zerocam-capture: V4L2 capture that queues DMA-BUF frames.
//!
//! Skeleton only: the capture layer lands with its own issue. It depends on
//! [`zerocam_tensor`] for the tensors each frame is handed out as.

pub use zerocam_tensor as tensor;
