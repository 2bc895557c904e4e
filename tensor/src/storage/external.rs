//! Memory someone else owns: a mapped GStreamer buffer, a decoder's output,
//! an array of another library. [`ExternalMemory`] is the owner's promise;
//! [`Tensor::from_external`] wraps it, read-only and without a copy, and
//! keeps the owner alive as long as any tensor, view or map of it.

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

/// An [`ExternalMemory`] owner and the slice it gave, read once.
pub(crate) struct ExternalStorage {
    ptr: NonNull<u8>,
    len: usize,
    // Dropped last: the bytes above are its.
    _owner: Box<dyn ExternalMemory>,
}

impl std::fmt::Debug for ExternalStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExternalStorage")
            .field("ptr", &self.ptr)
            .field("len", &self.len)
            .finish()
    }
}

// SAFETY: the pointer is into bytes the owner keeps valid, unchanged and
// readable from any thread while it lives (`ExternalMemory`'s contract), and
// the owner is `Send + Sync`.
unsafe impl Send for ExternalStorage {}
// SAFETY: as above: shared access only reads.
unsafe impl Sync for ExternalStorage {}

impl ExternalStorage {
    /// Boxes `owner` and reads its slice once, checked to be non-empty and
    /// aligned to `align`.
    pub fn new(owner: Box<dyn ExternalMemory>, align: usize) -> Result<ExternalStorage> {
        let bytes = owner.bytes();
        let (ptr, len) = (bytes.as_ptr(), bytes.len());
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
        let ptr = NonNull::new(ptr.cast_mut()).ok_or(Error::BufferTooSmall {
            needed: 1,
            available: 0,
        })?;
        Ok(ExternalStorage {
            ptr,
            len,
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
        false
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
