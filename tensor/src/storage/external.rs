//! Memory someone else owns: a mapped GStreamer buffer, a decoder's output,
//! an array of another library. [`ExternalMemory`] is the owner's promise;
//! [`Tensor::from_external`] wraps it, read-only and without a copy, and
//! keeps the owner alive as long as any tensor, view or map of it.
//! [`ExternalMemoryMut`] is the promise of an owner that lends its bytes to
//! be written (a model runtime's input buffer, a numpy array), which
//! [`Tensor::from_external_mut`](crate::Tensor::from_external_mut) wraps
//! writable.

use std::ptr::NonNull;

use super::Storage;
use crate::{Access, Error, Result, TensorMemory};

/// Bytes owned by a value that keeps them valid and unchanged while it lives.
///
/// # Safety
/// Implementors promise that, from the moment the value is boxed by
/// [`Tensor::from_external`](crate::Tensor::from_external) until it drops:
/// - every call of [`bytes`](ExternalMemory::bytes) returns the same slice
///   (address and length), whatever address the value itself has;
/// - nothing writes those bytes (through this value or any other path);
/// - they stay readable from any thread (the type is `Send + Sync`).
///
/// A read-only map of a GStreamer buffer that holds its buffer qualifies: the
/// buffer's memory cannot be written or recycled while a map of it lives.
pub unsafe trait ExternalMemory: Send + Sync + 'static {
    /// The bytes (valid and unchanged while `self` lives).
    fn bytes(&self) -> &[u8];
}

/// Bytes owned by a value that lends them to be written: a model runtime's
/// input tensor, a numpy array's memory, a buffer of another library.
///
/// # Safety
/// Implementors promise that, from the moment the value is boxed by
/// [`Tensor::from_external_mut`](crate::Tensor::from_external_mut) until it
/// drops:
/// - [`bytes_mut`](ExternalMemoryMut::bytes_mut), called once, returns a
///   slice that stays valid at that address and length (whatever address
///   the value itself has);
/// - nothing else writes those bytes, or reads them while a writable map of
///   the tensor is open: the owner's other users (the model's `run`) take
///   turns with zerocam's writes, ordered by the caller;
/// - they stay readable and writable from any thread (the type is
///   `Send + Sync`).
pub unsafe trait ExternalMemoryMut: Send + Sync + 'static {
    /// The bytes, lent for writing (called once).
    fn bytes_mut(&mut self) -> &mut [u8];
}

/// An [`ExternalMemory`] or [`ExternalMemoryMut`] owner and the slice it
/// gave, read once.
pub(crate) struct ExternalStorage {
    ptr: NonNull<u8>,
    len: usize,
    writable: bool,
    // Dropped last: the bytes above are its.
    _owner: Box<dyn Send + Sync>,
}

impl std::fmt::Debug for ExternalStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExternalStorage")
            .field("ptr", &self.ptr)
            .field("len", &self.len)
            .finish()
    }
}

// SAFETY: the pointer is into bytes the owner keeps valid (unchanged, or
// written only through this storage's maps) and usable from any thread while
// it lives (`ExternalMemory`'s and `ExternalMemoryMut`'s contracts), and the
// owner is `Send + Sync`.
unsafe impl Send for ExternalStorage {}
// SAFETY: as above: shared access reads; writes go through a writable map,
// which the buffer layer gives one at a time.
unsafe impl Sync for ExternalStorage {}

impl ExternalStorage {
    /// Boxes `owner` and reads its slice once, checked to be non-empty and
    /// aligned to `align`.
    pub fn new(owner: Box<dyn ExternalMemory>, align: usize) -> Result<ExternalStorage> {
        let bytes = owner.bytes();
        let (ptr, len) = (bytes.as_ptr(), bytes.len());
        ExternalStorage::checked(ptr.cast_mut(), len, align, false, owner)
    }

    /// Boxes a writable `owner` and reads its slice once, checked as
    /// [`new`](ExternalStorage::new).
    pub fn new_mut(mut owner: Box<dyn ExternalMemoryMut>, align: usize) -> Result<ExternalStorage> {
        let bytes = owner.bytes_mut();
        let (ptr, len) = (bytes.as_mut_ptr(), bytes.len());
        ExternalStorage::checked(ptr, len, align, true, owner)
    }

    fn checked(
        ptr: *mut u8,
        len: usize,
        align: usize,
        writable: bool,
        owner: Box<dyn Send + Sync>,
    ) -> Result<ExternalStorage> {
        if len == 0 {
            return Err(Error::BufferTooSmall {
                needed: 1,
                available: 0,
            });
        }
        if !(ptr as usize).is_multiple_of(align.max(1)) {
            return Err(Error::Misaligned {
                address: ptr as usize,
                alignment: align,
            });
        }
        // A slice's pointer is never null.
        let ptr = NonNull::new(ptr).ok_or(Error::BufferTooSmall {
            needed: 1,
            available: 0,
        })?;
        Ok(ExternalStorage {
            ptr,
            len,
            writable,
            _owner: owner,
        })
    }
}

impl Storage for ExternalStorage {
    fn memory(&self) -> TensorMemory {
        TensorMemory::Mem
    }

    fn len(&self) -> usize {
        self.len
    }

    fn writable(&self) -> bool {
        self.writable
    }

    fn begin_cpu_access(&self, _access: Access) -> Result<NonNull<u8>> {
        Ok(self.ptr)
    }

    fn end_cpu_access(&self, _access: Access) -> Result<()> {
        Ok(())
    }

    fn external(&self) -> bool {
        true
    }
}
