//! `Tensor.from_array`: a numpy array's own memory as a writable tensor, without a copy, so a model
//! input is written straight into the array a runtime reads
//! (`Preprocessor(..)(frame, out=tensor)`).
//!
//! The array interface is read rather than the buffer protocol because the
//! published wheel targets the Python 3.9 limited API, which has no
//! `PyObject_GetBuffer`. The array is kept alive by the tensor; numpy
//! refuses to resize an array something else references, so its data stays
//! where the interface said.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use zerocam_tensor::{DType, ExternalMemoryMut, Tensor, TensorDyn};

use crate::convert::typestr;
use crate::errors::{invalid, tensor_err};

/// An array's data, lent for writing, and the array that owns it.
struct ArrayMemory {
    /// Keeps the array (and so its data) alive.
    _array: Py<PyAny>,
    address: usize,
    len: usize,
}

// SAFETY: `address..address + len` is the data of the C-contiguous, writable
// array held in `_array` (its `__array_interface__`, checked in
// `from_array`); the array cannot be resized or freed while referenced, and
// the Python caller promised (the method's docs) not to touch it while
// zerocam writes it.
unsafe impl ExternalMemoryMut for ArrayMemory {
    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above: `len` bytes of live, writable memory at
        // `address` (not null: checked), borrowed through `&mut self` only.
        unsafe { std::slice::from_raw_parts_mut(self.address as *mut u8, self.len) }
    }
}

/// The dtype of an array interface `typestr` (native little-endian, or
/// byte-order free for one-byte types).
fn dtype_of(s: &str) -> Option<DType> {
    DType::ALL.iter().copied().find(|&d| {
        let t = typestr(d);
        s == t || (s.starts_with('=') && s[1..] == t[1..])
    })
}

/// `obj`'s memory as a writable tensor of its shape and dtype (see the
/// module docs).
pub fn from_array(obj: &Bound<'_, PyAny>) -> PyResult<TensorDyn> {
    // Only numpy's own arrays: any other object's `__array_interface__`
    // could name an address it does not own, which would be written.
    let ndarray = obj.py().import("numpy")?.getattr("ndarray")?;
    if !obj.is_instance(&ndarray)? {
        return Err(invalid(format!(
            "{} is not a numpy array (numpy.ndarray): zerocam writes only into memory numpy owns or holds",
            obj.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        )));
    }
    let iface = obj.getattr("__array_interface__")?;
    let iface = iface.cast::<PyDict>()?;
    let get = |k: &str| -> PyResult<Bound<'_, PyAny>> {
        iface
            .get_item(k)?
            .ok_or_else(|| invalid(format!("__array_interface__ has no {k:?}")))
    };
    let shape: Vec<usize> = get("shape")?.extract()?;
    let ts: String = get("typestr")?.extract()?;
    let dtype = dtype_of(&ts).ok_or_else(|| {
        invalid(format!(
            "array typestr {ts:?} is not a zerocam dtype in native byte order"
        ))
    })?;
    if iface.get_item("mask")?.is_some_and(|m| !m.is_none()) {
        return Err(invalid("a masked array cannot be written through"));
    }
    let data = get("data")?;
    let data = data.cast::<PyTuple>().map_err(|_| {
        invalid("the array's data is not a (pointer, read-only) pair: give a numpy array")
    })?;
    let (address, readonly): (usize, bool) = data.extract()?;
    if readonly {
        return Err(invalid(
            "the array is read-only: zerocam writes model inputs into it",
        ));
    }
    let elem = dtype.size();
    let len = shape
        .iter()
        .try_fold(elem, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| invalid(format!("array shape {shape:?} overflows")))?;
    if let Some(strides) = iface.get_item("strides")?.filter(|s| !s.is_none()) {
        let strides: Vec<isize> = strides.extract()?;
        let mut want = elem;
        let mut packed = vec![0isize; shape.len()];
        for (s, &d) in packed.iter_mut().zip(&shape).rev() {
            *s = want as isize;
            want *= d;
        }
        let same = strides
            .iter()
            .zip(&packed)
            .zip(&shape)
            .all(|((a, b), &d)| d < 2 || a == b);
        if !same {
            return Err(invalid(format!(
                "array strides {strides:?} are not C-contiguous ({packed:?}): give np.ascontiguousarray(a)"
            )));
        }
    }
    if address == 0 || len == 0 {
        return Err(invalid(format!(
            "array of shape {shape:?} has no memory to write"
        )));
    }
    let owner = ArrayMemory {
        _array: obj.clone().unbind(),
        address,
        len,
    };
    macro_rules! wrap {
        ($($v:ident => $t:ty),*) => {
            match dtype {
                $(DType::$v => Tensor::<$t>::from_external_mut(owner, &shape, None).map(TensorDyn::$v),)*
            }
        };
    }
    wrap!(U8 => u8, I8 => i8, U16 => u16, I16 => i16, U32 => u32, I32 => i32,
          F16 => zerocam_tensor::f16, F32 => f32, F64 => f64)
    .map_err(tensor_err)
}
