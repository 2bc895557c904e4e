//! Shared code for zerocam's example binaries.
//!
//! Skeleton only: the CLI and the i.MX examples land with their own issue.

pub use zerocam_tensor as tensor;
