//! `TensorMemory::Pbo`: an OpenGL pixel buffer object owned by a GL thread.
//!
//! The tensor crate does not talk to GL. The GL backend implements [`PboOps`]
//! (typically by sending messages to its GL thread through a weak sender, so
//! the thread can exit while tensors live on; later calls then fail with
//! [`Error::Pbo`]). The storage maps the PBO on the first CPU access and unmaps
//! it when the last one ends.

use std::fmt::Debug;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, PoisonError};

use super::Storage;
use crate::{Access, Error, Result, TensorMemory};

/// The GL operations a PBO tensor needs, implemented by the GL backend.
///
/// # Safety
/// A pointer returned by [`map`](PboOps::map) must stay valid for reads and
/// writes of `len` bytes, 64-byte aligned, until the matching
/// [`unmap`](PboOps::unmap) returns, and the memory must not be otherwise
/// accessed by GL meanwhile.
#[allow(unsafe_code)] // TODO(issue 14.3): move behind a safe wrapper
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

#[derive(Debug, Default)]
struct MapState {
    base: Option<NonNull<u8>>,
    access: Option<Access>,
    users: usize,
}

#[derive(Debug)]
pub(crate) struct PboStorage {
    ops: Arc<dyn PboOps>,
    buffer: u32,
    len: usize,
    state: Mutex<MapState>,
}

#[allow(unsafe_code)] // TODO(issue 14.3): move behind a safe wrapper
                      // SAFETY: the cached base pointer is only handed out under the state mutex and
                      // is valid while `users > 0`, per the `PboOps` contract.
unsafe impl Send for PboStorage {}
#[allow(unsafe_code)] // TODO(issue 14.3): move behind a safe wrapper
                      // SAFETY: as above.
unsafe impl Sync for PboStorage {}

impl PboStorage {
    pub fn new(ops: Arc<dyn PboOps>, buffer: u32, len: usize) -> PboStorage {
        PboStorage {
            ops,
            buffer,
            len,
            state: Mutex::default(),
        }
    }
}

impl Storage for PboStorage {
    fn memory(&self) -> TensorMemory {
        TensorMemory::Pbo
    }

    fn len(&self) -> usize {
        self.len
    }

    fn pbo(&self) -> Option<(u32, usize)> {
        Some((self.buffer, self.ops.owner()))
    }

    fn begin_cpu_access(&self, access: Access) -> Result<NonNull<u8>> {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if let (Some(base), Some(held)) = (st.base, st.access) {
            if !held.covers(access) {
                return Err(Error::Pbo {
                    buffer: self.buffer,
                    reason: format!("already mapped {held}, cannot also map {access}"),
                });
            }
            st.users += 1;
            return Ok(base);
        }
        let base = self.ops.map(self.buffer, self.len, access)?;
        *st = MapState {
            base: Some(base),
            access: Some(access),
            users: 1,
        };
        Ok(base)
    }

    fn end_cpu_access(&self, _access: Access) -> Result<()> {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        st.users = st.users.saturating_sub(1);
        if st.users == 0 && st.base.is_some() {
            *st = MapState::default();
            return self.ops.unmap(self.buffer);
        }
        Ok(())
    }
}

impl Drop for PboStorage {
    fn drop(&mut self) {
        self.ops.delete(self.buffer);
    }
}
