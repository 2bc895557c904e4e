//! [`PboOps`], the GL side of a PBO tensor. It is an `unsafe trait`: the
//! tensor's CPU maps turn the pointer its [`map`](PboOps::map) returns into
//! slices (`map.rs`) and trust it to stay valid until
//! [`unmap`](PboOps::unmap), which only the implementor (the GL backend) can
//! promise. That declaration is why this module is an `unsafe` edge module;
//! it holds the trait and nothing else, no `unsafe` block.

use std::fmt::Debug;
use std::ptr::NonNull;

use crate::{Access, Result};

/// The GL operations a PBO tensor needs, implemented by the GL backend.
///
/// Errors: [`Error::PboDisconnected`](crate::Error::PboDisconnected) once the
/// GL thread that owns the buffer has exited, [`Error::Pbo`](crate::Error::Pbo)
/// (saying what failed) for any other failure of a GL call.
///
/// # Safety
/// A pointer returned by [`map`](PboOps::map) must stay valid for reads and
/// writes of `len` bytes, 64-byte aligned, until the matching
/// [`unmap`](PboOps::unmap) returns, and the memory must not be otherwise
/// accessed by GL meanwhile.
pub unsafe trait PboOps: Send + Sync + Debug {
    /// Maps `len` bytes of buffer `buffer` (`glMapBufferRange`) for `access`.
    fn map(&self, buffer: u32, len: usize, access: Access) -> Result<NonNull<u8>>;
    /// Unmaps it (`glUnmapBuffer`).
    fn unmap(&self, buffer: u32) -> Result<()>;
    /// Deletes it (`glDeleteBuffers`); called once, when the last tensor drops.
    fn delete(&self, buffer: u32);
    /// Which GL context owns the buffer: buffer names are per context, so a GL
    /// side checks this before using a tensor's buffer by name. Any value the
    /// GL side can recognise as its own (0 by default: unknown).
    fn owner(&self) -> usize {
        0
    }
}
