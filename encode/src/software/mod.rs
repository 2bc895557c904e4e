//! H.264 on the CPU (OpenH264) where no hardware encoder is present.

/// The software encoder failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SoftwareError {}
