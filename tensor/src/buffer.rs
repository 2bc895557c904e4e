//! [`Buffer`]: a storage plus the record of which of its bytes are mapped how,
//! so safe code never holds a writable slice that aliases another map.

use std::os::fd::BorrowedFd;
use std::ptr::NonNull;
use std::sync::{Mutex, PoisonError};

use crate::geometry::Span;
use crate::storage::Storage;
use crate::{Access, Error, FdIdentity, Result, TensorMemory};

#[derive(Debug, Clone, Copy)]
struct Borrow {
    span: Span,
    access: Access,
}

/// One allocation or import, shared (through `Arc`) by every tensor viewing it.
#[derive(Debug)]
pub(crate) struct Buffer {
    storage: Box<dyn Storage>,
    borrows: Mutex<Vec<Borrow>>,
}

impl Buffer {
    pub fn new(storage: impl Storage + 'static) -> Buffer {
        Buffer {
            storage: Box::new(storage),
            borrows: Mutex::new(Vec::new()),
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

    /// Records a map of `span` and starts CPU access. Fails if a writable map
    /// would overlap another map of the same bytes.
    pub fn acquire(&self, span: Span, access: Access) -> Result<NonNull<u8>> {
        if access.writes() && !self.storage.writable() {
            return Err(Error::ReadOnly { requested: access });
        }
        let mut borrows = self.borrows.lock().unwrap_or_else(PoisonError::into_inner);
        let clash = borrows.iter().find(|b| {
            b.span.start < span.end
                && span.start < b.span.end
                && (b.access.writes() || access.writes())
        });
        if let Some(b) = clash {
            return Err(Error::MapConflict {
                start: span.start,
                end: span.end,
                held: b.access,
                requested: access,
            });
        }
        let base = self.storage.begin_cpu_access(access)?;
        borrows.push(Borrow { span, access });
        Ok(base)
    }

    /// Ends the access recorded by `acquire(span, access)`.
    pub fn release(&self, span: Span, access: Access) -> Result<()> {
        let mut borrows = self.borrows.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(i) = borrows
            .iter()
            .position(|b| b.span == span && b.access == access)
        {
            borrows.swap_remove(i);
        }
        drop(borrows);
        self.storage.end_cpu_access(access)
    }
}
