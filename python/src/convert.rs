//! Python arguments to zerocam values: dtypes, access modes, memory kinds,
//! shapes. Every refusal names the value. And the one table of how each dtype
//! is spelled to numpy, the buffer protocol and DLPack.

use std::ffi::CStr;

use pyo3::prelude::*;
use zerocam_tensor::{Access, DType, TensorMemory};

use crate::errors::invalid;

/// `"uint8"`, `numpy.uint8` or `numpy.dtype("uint8")` → [`DType`].
pub fn dtype(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<DType> {
    let name: String = match obj.extract::<String>() {
        Ok(s) => s,
        Err(_) => py
            .import("numpy")?
            .call_method1("dtype", (obj,))
            .and_then(|d| d.getattr("name"))
            .and_then(|n| n.extract())
            .map_err(|_| invalid(format!("dtype {obj} is not a dtype")))?,
    };
    DType::from_name(&name).ok_or_else(|| {
        let names: Vec<&str> = DType::ALL.iter().map(|d| d.name()).collect();
        invalid(format!(
            "dtype {name:?} is not supported (supported: {})",
            names.join(", ")
        ))
    })
}

/// How one [`DType`] is spelled outside Rust.
pub struct DTypeCodes {
    /// numpy's array interface typestr (native byte order: little-endian).
    pub typestr: &'static str,
    /// The `struct`-module format of the buffer protocol.
    #[cfg_attr(not(feature = "buffer-protocol"), allow(dead_code))]
    pub buffer_format: &'static CStr,
}

/// The spellings of `dtype`: an arm per dtype, so a new one fails to build
/// here instead of passing as another type.
pub const fn codes(dtype: DType) -> DTypeCodes {
    let (typestr, buffer_format) = match dtype {
        DType::U8 => ("|u1", c"B"),
        DType::I8 => ("|i1", c"b"),
        DType::U16 => ("<u2", c"H"),
        DType::I16 => ("<i2", c"h"),
        DType::U32 => ("<u4", c"I"),
        DType::I32 => ("<i4", c"i"),
        DType::F16 => ("<f2", c"e"),
        DType::F32 => ("<f4", c"f"),
        DType::F64 => ("<f8", c"d"),
    };
    DTypeCodes {
        typestr,
        buffer_format,
    }
}

/// The numpy array interface typestr of `dtype`.
pub const fn typestr(dtype: DType) -> &'static str {
    codes(dtype).typestr
}

/// `"read"`, `"write"` or `"readwrite"` → [`Access`].
pub fn access(s: &str) -> PyResult<Access> {
    match s {
        "read" | "r" => Ok(Access::Read),
        "write" | "w" => Ok(Access::Write),
        "readwrite" | "rw" | "read-write" => Ok(Access::ReadWrite),
        _ => Err(invalid(format!(
            "access {s:?} is not one of \"read\", \"write\", \"readwrite\""
        ))),
    }
}

/// The Python name of an access mode.
pub fn access_name(a: Access) -> &'static str {
    match a {
        Access::Read => "read",
        Access::Write => "write",
        Access::ReadWrite => "readwrite",
    }
}

/// `None`, `"mem"`, `"shm"` or `"dma"` → memory kind.
pub fn memory(s: Option<&str>) -> PyResult<Option<TensorMemory>> {
    match s {
        None => Ok(None),
        Some("mem") => Ok(Some(TensorMemory::Mem)),
        Some("shm") => Ok(Some(TensorMemory::Shm)),
        Some("dma") => Ok(Some(TensorMemory::Dma)),
        Some(other) => Err(invalid(format!(
            "mem {other:?} is not one of None, \"mem\", \"shm\", \"dma\""
        ))),
    }
}

/// A shape of positive sizes.
pub fn shape(shape: Vec<i64>) -> PyResult<Vec<usize>> {
    if shape.is_empty() {
        return Err(invalid("shape () is empty: give at least one dimension"));
    }
    shape
        .iter()
        .map(|&d| {
            usize::try_from(d).ok().filter(|&d| d > 0).ok_or_else(|| {
                invalid(format!(
                    "shape {shape:?} has dimension {d}: sizes must be > 0"
                ))
            })
        })
        .collect()
}
