//! `zerocam_tensor_wrap`: the caller's memory (a model runtime's input
//! tensor: `TfLiteTensorData`, `Ort::Value::GetTensorMutableData`, a
//! TensorRT binding's host buffer) as a writable tensor, without a copy, so
//! `zerocam_preprocessor_run_into` writes the model's input where the model
//! reads it.

use std::ffi::c_void;

use ::zerocam_tensor::{f16, DType, ExternalMemoryMut, Tensor, TensorDyn};

use crate::ffi::{call, Out};
use crate::status::{zerocam_status, CapiError};
use crate::tensor::{new_handle, shape_arg, zerocam_tensor};
use crate::values::{dtype_of, zerocam_dtype};

/// Called once when the last handle, view and map of a wrapped tensor is
/// gone, with the `user` pointer given to `zerocam_tensor_wrap`.
pub type zerocam_release_fn = Option<unsafe extern "C" fn(user: *mut c_void)>;

/// The caller's bytes and how to give them back.
struct Lent {
    data: usize,
    size: usize,
    release: zerocam_release_fn,
    user: usize,
}

// SAFETY: `zerocam_tensor_wrap`'s contract: `data..data + size` stays
// valid and writable, and nobody else touches it while zerocam writes it,
// until `release` is called (from `Drop`, after the last handle).
unsafe impl ExternalMemoryMut for Lent {
    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above; `data` is not NULL (checked before wrapping).
        unsafe { std::slice::from_raw_parts_mut(self.data as *mut u8, self.size) }
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        if let Some(release) = self.release {
            // SAFETY: the caller's callback, called once, with its own pointer.
            unsafe { release(self.user as *mut c_void) };
        }
    }
}

/// Wraps `size` bytes at `data` — memory the caller owns, such as a model
/// runtime's input tensor — as a writable, C-contiguous tensor of `ndim`
/// dimensions `shape` and `dtype`, without a copy. `release(user)` (may be
/// NULL) is called once when the last handle, view and map of it is gone
/// (also when wrapping fails); until then the memory must stay valid, and
/// the caller must not read or write it while zerocam writes it (a call
/// such as `zerocam_preprocessor_run_into` returns when it is done).
///
/// # Safety
/// `data` is valid for reads and writes of `size` bytes until `release` is
/// called; `shape` is NULL or valid for reads of `ndim` values; `out` is
/// NULL or valid for a write.
///
/// # Errors
/// `ZEROCAM_ERROR_NULL_ARGUMENT` for a NULL `data`;
/// `ZEROCAM_ERROR_INVALID_ARGUMENT` for a bad dtype or shape, fewer bytes
/// than the shape needs, or `data` misaligned for the dtype.
#[no_mangle]
pub unsafe extern "C" fn zerocam_tensor_wrap(
    data: *mut c_void,
    size: usize,
    shape: *const usize,
    ndim: usize,
    dtype: zerocam_dtype,
    release: zerocam_release_fn,
    user: *mut c_void,
    out: *mut *mut zerocam_tensor,
) -> zerocam_status {
    // Given back on every path, once: it owns the caller's memory now.
    let lent = Lent {
        data: data as usize,
        size,
        release,
        user: user as usize,
    };
    call("zerocam_tensor_wrap", move || {
        let out = Out::new(out, "out")?;
        if lent.data == 0 {
            return Err(CapiError::Null { what: "data" });
        }
        // SAFETY: the caller's promise for `shape`.
        let shape = unsafe { shape_arg(shape, ndim) }?;
        let t = match dtype_of(dtype)? {
            DType::U8 => Tensor::<u8>::from_external_mut(lent, shape, None).map(TensorDyn::U8),
            DType::I8 => Tensor::<i8>::from_external_mut(lent, shape, None).map(TensorDyn::I8),
            DType::U16 => Tensor::<u16>::from_external_mut(lent, shape, None).map(TensorDyn::U16),
            DType::I16 => Tensor::<i16>::from_external_mut(lent, shape, None).map(TensorDyn::I16),
            DType::U32 => Tensor::<u32>::from_external_mut(lent, shape, None).map(TensorDyn::U32),
            DType::I32 => Tensor::<i32>::from_external_mut(lent, shape, None).map(TensorDyn::I32),
            DType::F16 => Tensor::<f16>::from_external_mut(lent, shape, None).map(TensorDyn::F16),
            DType::F32 => Tensor::<f32>::from_external_mut(lent, shape, None).map(TensorDyn::F32),
            DType::F64 => Tensor::<f64>::from_external_mut(lent, shape, None).map(TensorDyn::F64),
        }
        .map_err(|e| CapiError::InvalidArgument(format!("data ({size} bytes): {e}")))?;
        let h = new_handle(t)?;
        // SAFETY: the caller's promise for `out`.
        unsafe { out.write(h) };
        Ok(())
    })
}
