//! Files from encoded packets: MP4 and Annex-B.

/// Writing a container failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ContainerError {}
