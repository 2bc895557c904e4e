//! Code shared by zerocam's example binaries (the `zerocam` command line
//! tool is a crate of its own, `cli/`).

#![deny(unsafe_code)]

pub mod blazeface;
mod example_main;
#[cfg(feature = "litert")]
pub mod face;
#[cfg(feature = "litert")]
#[allow(unsafe_code)] // LiteRT's input buffer lent to zerocam (`ExternalMemoryMut`)
mod litert_input;
pub mod still;

pub use example_main::example_main;
pub use zerocam::tensor;
