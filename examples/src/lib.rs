//! Code shared by zerocam's example binaries and the `zerocam` CLI.

pub mod probe;

pub use zerocam_tensor as tensor;
