//! Who is reading or writing which bytes of a buffer: the CPU through maps, or
//! a device through a [`DeviceBorrow`]. One record per kernel file, shared by
//! every import of it, so two tensors imported from one dma-buf cannot hand out
//! aliasing writable slices, and a buffer queued to a device cannot be mapped.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

use crate::geometry::Span;
use crate::{Access, Error, FdIdentity, Result};

#[derive(Debug, Clone, Copy)]
struct Borrow {
    span: Span,
    access: Access,
}

/// The live borrows of one file (or of one fd-less allocation).
#[derive(Debug)]
pub(crate) struct Tracker {
    file: Option<FdIdentity>,
    borrows: Mutex<Vec<Borrow>>,
}

fn registry() -> &'static Mutex<HashMap<FdIdentity, Weak<Tracker>>> {
    static FILES: OnceLock<Mutex<HashMap<FdIdentity, Weak<Tracker>>>> = OnceLock::new();
    FILES.get_or_init(Default::default)
}

impl Tracker {
    /// The tracker of `file`, shared with every other live import of it; a
    /// private one for memory without a file.
    pub fn of(file: Option<FdIdentity>) -> Arc<Tracker> {
        let Some(key) = file else {
            return Arc::new(Tracker {
                file,
                borrows: Mutex::new(Vec::new()),
            });
        };
        let mut files = registry().lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(t) = files.get(&key).and_then(Weak::upgrade) {
            return t;
        }
        let t = Arc::new(Tracker {
            file,
            borrows: Mutex::new(Vec::new()),
        });
        files.insert(key, Arc::downgrade(&t));
        t
    }

    /// Records a borrow of `span`, refusing one that overlaps another borrow
    /// where either writes.
    pub fn borrow(&self, span: Span, access: Access) -> Result<()> {
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
        borrows.push(Borrow { span, access });
        Ok(())
    }

    /// Forgets one borrow recorded as `(span, access)`.
    pub fn release(&self, span: Span, access: Access) {
        let mut borrows = self.borrows.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(i) = borrows
            .iter()
            .position(|b| b.span == span && b.access == access)
        {
            borrows.swap_remove(i);
        }
    }
}

impl Drop for Tracker {
    fn drop(&mut self) {
        if let Some(key) = self.file {
            let mut files = registry().lock().unwrap_or_else(PoisonError::into_inner);
            if files.get(&key).is_some_and(|w| w.strong_count() == 0) {
                files.remove(&key);
            }
        }
    }
}

/// The borrows of one kernel file — CPU maps of every tensor imported from
/// it, and device borrows — as a device driver's owner sees them.
///
/// A capture stream holds a [`DeviceBorrow`] on each buffer while the buffer is
/// queued to the driver: a CPU map of any tensor of that file then fails with
/// [`Error::MapConflict`] instead of reading bytes the device is writing, and a
/// buffer still mapped by the CPU cannot be queued until the map drops.
///
/// ```
/// use zerocam_tensor::{Access, Error, FileBorrows, Tensor, TensorMemory};
/// let t = Tensor::<u8>::new(&[64], Some(TensorMemory::Shm), None)?;
/// let file = FileBorrows::of(t.fd_identity().expect("shm has an fd"));
/// let device = file.device_borrow(Access::Write)?;
/// assert!(matches!(t.map_read(), Err(Error::MapConflict { .. })));
/// drop(device);
/// assert!(t.map_read().is_ok());
/// # Ok::<(), zerocam_tensor::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct FileBorrows(Arc<Tracker>);

impl FileBorrows {
    /// The record of `file`, shared with every tensor imported from it. Keeping
    /// the value keeps the record (and its borrows) alive.
    pub fn of(file: FdIdentity) -> FileBorrows {
        FileBorrows(Tracker::of(Some(file)))
    }

    /// Records that a device accesses the whole file with `access`.
    ///
    /// # Errors
    /// [`Error::MapConflict`] while a CPU map (or another device borrow)
    /// conflicts.
    pub fn device_borrow(&self, access: Access) -> Result<DeviceBorrow> {
        DeviceBorrow::new(&self.0, None, access)
    }
}

const WHOLE: Span = Span {
    start: 0,
    end: usize::MAX,
};

/// A device's access to a whole file, released on drop.
#[derive(Debug)]
#[must_use = "the borrow ends when this value drops"]
pub struct DeviceBorrow {
    tracker: Arc<Tracker>,
    /// The second file of a two-buffer image (NV12M), borrowed too.
    chroma: Option<Arc<Tracker>>,
    access: Access,
}

impl DeviceBorrow {
    /// Borrows the whole of `tracker`'s file (and `chroma`'s), all or nothing.
    pub(crate) fn new(
        tracker: &Arc<Tracker>,
        chroma: Option<&Arc<Tracker>>,
        access: Access,
    ) -> Result<DeviceBorrow> {
        tracker.borrow(WHOLE, access)?;
        if let Some(c) = chroma {
            c.borrow(WHOLE, access)
                .inspect_err(|_| tracker.release(WHOLE, access))?;
        }
        Ok(DeviceBorrow {
            tracker: tracker.clone(),
            chroma: chroma.cloned(),
            access,
        })
    }
}

impl Drop for DeviceBorrow {
    fn drop(&mut self) {
        self.tracker.release(WHOLE, self.access);
        if let Some(c) = &self.chroma {
            c.release(WHOLE, self.access);
        }
    }
}
