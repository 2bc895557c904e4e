//! LiteRT's input buffer lent to zerocam: the model input is written where
//! LiteRT reads it, with no copy in between.
//!
//! `litert` 0.2.1 binds only buffers LiteRT allocates (there is no way to
//! hand it caller memory), so the lending goes the other way: the address of
//! LiteRT's own host buffer, read under its write lock, is wrapped once as a
//! writable zerocam tensor ([`Tensor::from_external_mut`]). Each frame takes
//! the write lock again, checks that LiteRT still has the buffer at that
//! address, and has zerocam write it while the lock is held.

use litert::TensorBuffer;
use zerocam::tensor::{ExternalMemoryMut, Tensor, TensorDyn};

/// The bytes of a LiteRT host buffer that [`LentInput`]'s owner keeps alive.
struct LitertBytes {
    address: usize,
    len: usize,
}

// SAFETY: `address..address + len` is the host memory of a LiteRT
// `TensorBuffer` that `LentInput` owns alongside this tensor and drops only
// after it (or leaks, if a handle of the tensor escaped: see `Drop`); zerocam
// writes it only inside `LentInput::write`, under LiteRT's write lock.
unsafe impl ExternalMemoryMut for LitertBytes {
    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above: live host memory of `len` bytes, not null.
        unsafe { std::slice::from_raw_parts_mut(self.address as *mut u8, self.len) }
    }
}

/// A LiteRT input buffer and the zerocam tensor over its memory.
pub(crate) struct LentInput {
    /// Over `buffer`'s memory; dropped first.
    tensor: Option<TensorDyn>,
    address: usize,
    /// LiteRT's buffer (`CompiledModel::run` takes it as a one-element slice).
    buffer: Vec<TensorBuffer>,
}

/// Why LiteRT's input buffer cannot be lent.
#[derive(Debug, thiserror::Error)]
pub enum LendError {
    /// LiteRT's lock failed.
    #[error("LiteRT: {0}")]
    Litert(#[from] litert::Error),
    /// zerocam refused the memory (size, alignment).
    #[error(transparent)]
    Tensor(#[from] zerocam::tensor::Error),
    /// LiteRT handed the buffer out at another address than when it was lent.
    #[error("LiteRT's input buffer moved from {lent:#x} to {now:#x}")]
    Moved {
        /// The address wrapped.
        lent: usize,
        /// The address the lock gave now.
        now: usize,
    },
}

impl LentInput {
    /// Lends `buffer` (f32 elements, `shape`) to zerocam.
    pub(crate) fn new(mut buffer: TensorBuffer, shape: &[usize]) -> Result<LentInput, LendError> {
        let (address, len) = {
            let g = buffer.lock_for_write::<f32>()?;
            (g.as_ptr() as usize, std::mem::size_of_val(&*g))
        };
        let bytes = LitertBytes { address, len };
        let tensor = Tensor::<f32>::from_external_mut(bytes, shape, None)?;
        Ok(LentInput {
            tensor: Some(TensorDyn::F32(tensor)),
            address,
            buffer: vec![buffer],
        })
    }

    /// The zerocam tensor over LiteRT's input.
    pub(crate) fn tensor(&self) -> Option<&TensorDyn> {
        self.tensor.as_ref()
    }

    /// `write(tensor)` under LiteRT's write lock, once LiteRT's buffer is
    /// checked to be where it was lent.
    pub(crate) fn write<R, E: From<LendError>>(
        &mut self,
        write: impl FnOnce(&TensorDyn) -> Result<R, E>,
    ) -> Result<R, E> {
        let Some(buffer) = self.buffer.first_mut() else {
            return Err(LendError::Moved {
                lent: self.address,
                now: 0,
            }
            .into());
        };
        let guard = buffer.lock_for_write::<f32>().map_err(LendError::from)?;
        let now = guard.as_ptr() as usize;
        let Some(tensor) = self.tensor.as_ref().filter(|_| now == self.address) else {
            return Err(LendError::Moved {
                lent: self.address,
                now,
            }
            .into());
        };
        let r = write(tensor);
        drop(guard);
        r
    }

    /// LiteRT's input buffers, for `CompiledModel::run`.
    pub(crate) fn buffers(&mut self) -> &mut [TensorBuffer] {
        &mut self.buffer
    }
}

impl Drop for LentInput {
    fn drop(&mut self) {
        let escaped = self.tensor.take().is_some_and(|t| t.handle_count() > 1);
        if escaped {
            // A clone of the tensor outlives this: LiteRT's buffer must too
            // (kept, never freed: a leak rather than a dangling tensor).
            std::mem::forget(std::mem::take(&mut self.buffer));
        }
    }
}
