//! The `zerocam` subcommands.

pub mod bench;
pub mod capture;
pub mod libcamera;
pub mod list;
pub mod serve;
