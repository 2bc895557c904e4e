//! `TensorMemory::Pbo`: an OpenGL pixel buffer object owned by a GL thread.
//!
//! The tensor crate does not talk to GL. The GL backend implements [`PboOps`]
//! (typically by sending messages to its GL thread through a weak sender, so
//! the thread can exit while tensors live on). A map or unmap after that
//! thread has exited fails with [`Error::PboDisconnected`]; a GL call that
//! fails gives [`Error::Pbo`], saying what failed. The storage maps the PBO
//! on the first CPU access and unmaps it when the last one ends; an access
//! that asks for more than the mapping it would share (a write while the PBO
//! is mapped for reading) is refused with [`Error::Pbo`] too.

use std::ptr::NonNull;
use std::sync::atomic::AtomicPtr;
use std::sync::{Arc, Mutex, PoisonError};

use super::pbo_ops::PboOps;
use super::Storage;
use crate::{Access, Error, Result, TensorMemory};

/// The PBO's CPU mapping, shared by the accesses that overlap.
#[derive(Debug, Default)]
struct MapState {
    /// The mapped base (null while unmapped). An `AtomicPtr` only because it
    /// is a pointer that is `Send` and `Sync`, so the storage needs no
    /// `unsafe impl`: it is read and written through `get_mut` under the
    /// mutex. Valid while `users > 0`, per the [`PboOps`] contract.
    base: AtomicPtr<u8>,
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
        if let (Some(base), Some(held)) = (NonNull::new(*st.base.get_mut()), st.access) {
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
            base: AtomicPtr::new(base.as_ptr()),
            access: Some(access),
            users: 1,
        };
        Ok(base)
    }

    fn end_cpu_access(&self, _access: Access) -> Result<()> {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        st.users = st.users.saturating_sub(1);
        if st.users == 0 && !st.base.get_mut().is_null() {
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
