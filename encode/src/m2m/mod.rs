//! A V4L2 memory-to-memory encoder as a [`VideoEncoder`](crate::VideoEncoder).

/// The memory-to-memory encoder failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum M2mError {}
