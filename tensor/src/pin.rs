//! [`HostPin`]: the stable CPU address of a tensor's memory, for runtimes that
//! keep a pointer (an inference engine's external tensors, a C API), and
//! [`CpuAccess`], the coherency bracket that goes with it.
//!
//! Heap memory never moves, and fd-backed memory (shared memory, dma-bufs) is
//! mapped once for the buffer's life (see `storage/fd.rs`), so the address a
//! map sees is the same for every map. A pin keeps the buffer alive (an `Arc`),
//! so the address stays valid as long as the pin, whatever happens to the
//! tensors. A pin records no borrow: it does not conflict with maps or with a
//! device, and it does not run the dma-buf sync bracket — code that reads or
//! writes through the address brackets that access with
//! [`HostPin::cpu_access`], which is an ordinary borrow (it conflicts with
//! writable maps and with a device that owns the buffer).

use std::fmt;
use std::ptr::NonNull;
use std::sync::Arc;

use crate::buffer::Buffer;
use crate::geometry::Span;
use crate::storage::Storage;
use crate::{Access, Element, Error, Result, Tensor, TensorMemory};

/// The alignment every storage guarantees for its base address.
const BASE_ALIGN: usize = 64;

/// A stable host address of a tensor's bytes. Made by [`Tensor::pin_host`].
///
/// ```
/// use zerocam_tensor::{Access, Tensor, TensorMemory};
/// let t = Tensor::<u8>::new(&[4, 16], Some(TensorMemory::Shm), None)?;
/// let pin = t.pin_host()?;
/// {
///     let _bracket = pin.cpu_access(Access::Write)?;
///     // SAFETY (of the example): the pin keeps 64 bytes valid at `ptr`, and
///     // the bracket holds the only writable borrow of them.
///     unsafe { pin.ptr().as_ptr().write(7) };
/// }
/// assert_eq!(t.map_read()?[0], 7);
/// assert_eq!(t.map_read()?.as_ptr(), pin.ptr().as_ptr().cast_const());
/// # Ok::<(), zerocam_tensor::Error>(())
/// ```
pub struct HostPin {
    buffer: Arc<Buffer>,
    span: Span,
    ptr: NonNull<u8>,
}

// SAFETY: the pin is an address plus an `Arc` of a `Send + Sync` buffer; it
// gives no access by itself (reading or writing through the address is the
// caller's unsafe code, bracketed by `cpu_access`).
unsafe impl Send for HostPin {}
// SAFETY: as above: `&HostPin` only hands out the address and borrows.
unsafe impl Sync for HostPin {}

impl HostPin {
    /// The address of the tensor's first element. Valid for `len()` bytes while
    /// this pin lives; the bytes follow the tensor's strides (padding included).
    pub fn ptr(&self) -> NonNull<u8> {
        self.ptr
    }

    /// Bytes from the first element to the end of the last (padding included).
    pub fn len(&self) -> usize {
        self.span.end - self.span.start
    }

    /// Where the pinned span starts in its buffer: `ptr() - buffer_offset()`
    /// is the address of the whole buffer, mapped for its
    /// [`buffer_len`](HostPin::buffer_len) bytes while the pin lives (what a
    /// runtime that registers memory once per buffer, like CUDA's
    /// `cuMemHostRegister`, needs for every view of one buffer).
    pub fn buffer_offset(&self) -> usize {
        self.span.start
    }

    /// The length of the whole buffer the span lies in.
    pub fn buffer_len(&self) -> usize {
        self.buffer.len()
    }

    /// Whether the memory may be written (a dma-buf exported or opened
    /// read-only may not).
    pub fn writable(&self) -> bool {
        self.buffer.writable()
    }

    /// Whether the span is empty (never: empty tensors are refused).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The largest power of two (at most 64) that divides the address.
    pub fn alignment(&self) -> usize {
        let addr = self.ptr.as_ptr() as usize;
        BASE_ALIGN.min(1 << addr.trailing_zeros().min(BASE_ALIGN.trailing_zeros()))
    }

    /// The memory kind.
    pub fn memory(&self) -> TensorMemory {
        self.buffer.memory()
    }

    /// Starts CPU access to the pinned bytes with `access` (for a dma-buf,
    /// `DMA_BUF_IOCTL_SYNC` START now and END when the guard drops) and records
    /// it like a map: it fails with [`Error::MapConflict`] while a conflicting
    /// map or device borrow is alive.
    ///
    /// # Errors
    /// [`Error::MapConflict`], [`Error::ReadOnly`], [`Error::DmaBufSync`].
    pub fn cpu_access(&self, access: Access) -> Result<CpuAccess> {
        self.buffer.acquire(self.span, access)?;
        Ok(CpuAccess {
            buffer: self.buffer.clone(),
            span: self.span,
            access,
            open: true,
        })
    }
}

impl fmt::Debug for HostPin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostPin")
            .field("ptr", &self.ptr)
            .field("len", &self.len())
            .field("memory", &self.memory())
            .finish()
    }
}

/// An open CPU access to pinned memory, ended when dropped (or by
/// [`finish`](CpuAccess::finish), which reports a failed sync END).
#[must_use = "the access ends when this value drops"]
#[derive(Debug)]
pub struct CpuAccess {
    buffer: Arc<Buffer>,
    span: Span,
    access: Access,
    open: bool,
}

impl CpuAccess {
    /// The access it holds.
    pub fn access(&self) -> Access {
        self.access
    }

    /// Ends the access now, reporting a failed dma-buf sync END.
    ///
    /// # Errors
    /// [`Error::DmaBufSync`].
    pub fn finish(mut self) -> Result<()> {
        self.open = false;
        self.buffer.release(self.span, self.access)
    }
}

impl Drop for CpuAccess {
    fn drop(&mut self) {
        if self.open {
            // An END sync failure cannot be reported from drop; `finish` reports it.
            let _ = self.buffer.release(self.span, self.access);
        }
    }
}

/// Keeps a tensor's memory allocated — mapped, its fd open, its GL buffer
/// undeleted — without keeping its [`BufferIdentity`](crate::BufferIdentity)
/// alive. Made by [`Tensor::memory_hold`].
///
/// A device-side cache keyed on the identity holds one beside each import,
/// so when the tensors are gone the cache sees the identity die, unregisters
/// the import, and only then lets the memory go: a device never keeps
/// registered memory that has been freed, in whatever order the tensors, the
/// maps and the cache drop.
///
/// ```
/// use zerocam_tensor::{Tensor, TensorMemory};
/// let t = Tensor::<u8>::new(&[64], Some(TensorMemory::Shm), None)?;
/// let alive = t.buffer_identity().weak();
/// let hold = t.memory_hold();
/// drop(t);
/// assert!(alive.upgrade().is_none()); // the identity is gone...
/// assert_eq!(hold.len(), 64);        // ...the memory is not, until `hold` drops
/// # Ok::<(), zerocam_tensor::Error>(())
/// ```
/// A hold is not a handle: [`Tensor::handle_count`] does not count it, so
/// a pool that reuses outputs nobody holds is not fooled by a registration.
#[derive(Debug, Clone)]
pub struct MemoryHold {
    storages: [Option<Arc<dyn Storage>>; 2],
}

impl MemoryHold {
    /// The length of the (first) buffer held.
    pub fn len(&self) -> usize {
        self.storages[0].as_ref().map_or(0, |s| s.len())
    }

    /// Whether the held buffer is empty (never: empty tensors are refused).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The memory kind.
    pub fn memory(&self) -> Option<TensorMemory> {
        self.storages[0].as_ref().map(|s| s.memory())
    }
}

impl<T: Element> Tensor<T> {
    /// Holds the tensor's buffer(s) (both of a two-buffer image) allocated
    /// until the [`MemoryHold`] drops, without holding its identity.
    pub fn memory_hold(&self) -> MemoryHold {
        MemoryHold {
            storages: [
                Some(Arc::clone(self.buffer_arc().storage())),
                self.chroma_arc().map(|c| Arc::clone(c.storage())),
            ],
        }
    }

    /// Pins the tensor's memory: a stable host address of its first element that
    /// stays valid while the [`HostPin`] lives, across maps and whatever
    /// happens to the tensor handles.
    ///
    /// Finding the address takes one short read access (a sync READ bracket
    /// on a dma-buf), so it fails like [`map_read`](Tensor::map_read) while a
    /// device owns the buffer.
    ///
    /// # Errors
    /// [`Error::UnsupportedMemory`] for GL PBO memory (its address changes from
    /// map to map); [`Error::MultiBuffer`] for an image whose planes live in two
    /// buffers (pin each [`plane`](Tensor::plane)); [`Error::MapConflict`].
    pub fn pin_host(&self) -> Result<HostPin> {
        if self.memory() == TensorMemory::Pbo {
            return Err(Error::UnsupportedMemory {
                memory: TensorMemory::Pbo,
                reason: "a PBO has no stable host address; map it instead",
            });
        }
        if self.geometry().buffer_count() > 1 {
            return Err(Error::MultiBuffer {
                buffers: self.geometry().buffer_count(),
            });
        }
        let buffer = self.buffer_arc().clone();
        let span = self.geometry().span();
        let base = buffer.acquire(span, Access::Read)?;
        buffer.release(span, Access::Read)?;
        // SAFETY: `span` lies inside the buffer (checked by `acquire`), so the
        // offset stays inside the mapping; heap and fd storages keep `base` for
        // the buffer's life, which the `Arc` in the pin extends.
        let ptr = unsafe { base.add(span.start) };
        Ok(HostPin { buffer, span, ptr })
    }
}
