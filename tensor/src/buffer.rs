//! [`Buffer`]: a storage plus its access record, so safe code never holds a
//! writable slice that aliases another map of the same bytes — through this
//! tensor, another import of the same file, or a device.

use std::os::fd::BorrowedFd;
use std::ptr::NonNull;
use std::sync::Arc;

use crate::access::Tracker;
use crate::geometry::Span;
use crate::storage::Storage;
use crate::{Access, Error, FdIdentity, Result, TensorMemory};

/// One allocation or import, shared (through `Arc`) by every tensor viewing it.
#[derive(Debug)]
pub(crate) struct Buffer {
    // Declared first: the storage (and its fd) outlives the access record.
    tracker: Arc<Tracker>,
    storage: Arc<dyn Storage>,
}

impl Buffer {
    pub fn new(storage: impl Storage + 'static) -> Buffer {
        Buffer {
            tracker: Tracker::of(storage.fd_identity()),
            storage: Arc::new(storage),
        }
    }

    pub fn len(&self) -> usize {
        self.storage.len()
    }

    pub fn memory(&self) -> TensorMemory {
        self.storage.memory()
    }

    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.storage.fd()
    }

    pub fn fd_identity(&self) -> Option<FdIdentity> {
        self.storage.fd_identity()
    }

    pub fn tracker(&self) -> &Arc<Tracker> {
        &self.tracker
    }

    /// The storage alone (what a [`MemoryHold`](crate::MemoryHold) keeps).
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }

    pub fn is_external(&self) -> bool {
        self.storage.external()
    }

    pub fn writable(&self) -> bool {
        self.storage.writable()
    }

    pub fn pbo(&self) -> Option<(u32, usize)> {
        self.storage.pbo()
    }

    /// Records a map of `span` and starts CPU access. Fails if the span is not
    /// inside the buffer, or a map that writes would overlap another borrow.
    pub fn acquire(&self, span: Span, access: Access) -> Result<NonNull<u8>> {
        if span.start > span.end || span.end > self.len() {
            return Err(Error::BufferTooSmall {
                needed: span.end,
                available: self.len(),
            });
        }
        if access.writes() && !self.storage.writable() {
            return Err(Error::ReadOnly { requested: access });
        }
        self.tracker.borrow(span, access)?;
        // The sync ioctl may wait on fences: no lock is held across it.
        self.storage.begin_cpu_access(access).inspect_err(|_| {
            self.tracker.release(span, access);
        })
    }

    /// Ends the access recorded by `acquire(span, access)`.
    pub fn release(&self, span: Span, access: Access) -> Result<()> {
        let ended = self.storage.end_cpu_access(access);
        self.tracker.release(span, access);
        ended
    }
}
