//! The C API's value types — element types, memory kinds, pixel formats —
//! as `uint32_t` constants (a C caller can pass any value: each is checked,
//! never transmuted into a Rust enum), and their Rust counterparts.

use ::zerocam_tensor::{DType, PixelFormat, TensorMemory};

use crate::status::CapiError;

/// An element type: one of the `ZEROCAM_DTYPE_*` values.
#[allow(non_camel_case_types)]
pub type zerocam_dtype = u32;
/// `uint8_t`.
pub const ZEROCAM_DTYPE_U8: zerocam_dtype = 0;
/// `int8_t`.
pub const ZEROCAM_DTYPE_I8: zerocam_dtype = 1;
/// `uint16_t`.
pub const ZEROCAM_DTYPE_U16: zerocam_dtype = 2;
/// `int16_t`.
pub const ZEROCAM_DTYPE_I16: zerocam_dtype = 3;
/// `uint32_t`.
pub const ZEROCAM_DTYPE_U32: zerocam_dtype = 4;
/// `int32_t`.
pub const ZEROCAM_DTYPE_I32: zerocam_dtype = 5;
/// IEEE half (`_Float16`).
pub const ZEROCAM_DTYPE_F16: zerocam_dtype = 6;
/// `float`.
pub const ZEROCAM_DTYPE_F32: zerocam_dtype = 7;
/// `double`.
pub const ZEROCAM_DTYPE_F64: zerocam_dtype = 8;

/// Where a tensor's bytes live: one of the `ZEROCAM_MEMORY_*` values.
#[allow(non_camel_case_types)]
pub type zerocam_memory = u32;
/// Let zerocam choose: a dma-buf heap, else shared memory, else the heap
/// (`ZEROCAM_FORCE_MEM=1` forces the heap).
pub const ZEROCAM_MEMORY_AUTO: zerocam_memory = 0;
/// The process heap: no fd.
pub const ZEROCAM_MEMORY_MEM: zerocam_memory = 1;
/// Shared memory (a sealed memfd): an fd another process can map.
pub const ZEROCAM_MEMORY_SHM: zerocam_memory = 2;
/// A dma-buf (from `/dev/dma_heap`, or imported): devices use it without a copy.
pub const ZEROCAM_MEMORY_DMA: zerocam_memory = 3;
/// An OpenGL pixel buffer (made by zerocam's GPU path, never by `zerocam_tensor_new`).
pub const ZEROCAM_MEMORY_PBO: zerocam_memory = 4;

/// A pixel format: one of the `ZEROCAM_FORMAT_*` values.
#[allow(non_camel_case_types)]
pub type zerocam_pixel_format = u32;
/// Not an image (a plain tensor).
pub const ZEROCAM_FORMAT_NONE: zerocam_pixel_format = 0;
/// 8-bit R, G, B.
pub const ZEROCAM_FORMAT_RGB: zerocam_pixel_format = 1;
/// 8-bit B, G, R.
pub const ZEROCAM_FORMAT_BGR: zerocam_pixel_format = 2;
/// 8-bit R, G, B, A.
pub const ZEROCAM_FORMAT_RGBA: zerocam_pixel_format = 3;
/// 8-bit B, G, R, A.
pub const ZEROCAM_FORMAT_BGRA: zerocam_pixel_format = 4;
/// 8-bit grey.
pub const ZEROCAM_FORMAT_GREY: zerocam_pixel_format = 5;
/// YUYV 4:2:2, packed.
pub const ZEROCAM_FORMAT_YUYV: zerocam_pixel_format = 6;
/// UYVY 4:2:2, packed.
pub const ZEROCAM_FORMAT_UYVY: zerocam_pixel_format = 7;
/// NV12: a Y plane, then interleaved UV at half height.
pub const ZEROCAM_FORMAT_NV12: zerocam_pixel_format = 8;
/// NV16: a Y plane, then interleaved UV at full height.
pub const ZEROCAM_FORMAT_NV16: zerocam_pixel_format = 9;
/// R, G and B planes one after another.
pub const ZEROCAM_FORMAT_PLANAR_RGB: zerocam_pixel_format = 10;

/// The most dimensions a tensor has here (`shape`, `strides` arrays).
pub const ZEROCAM_MAX_DIMS: usize = 8;

/// `dtype` as a [`DType`].
pub(crate) fn dtype_of(dtype: zerocam_dtype) -> Result<DType, CapiError> {
    Ok(match dtype {
        ZEROCAM_DTYPE_U8 => DType::U8,
        ZEROCAM_DTYPE_I8 => DType::I8,
        ZEROCAM_DTYPE_U16 => DType::U16,
        ZEROCAM_DTYPE_I16 => DType::I16,
        ZEROCAM_DTYPE_U32 => DType::U32,
        ZEROCAM_DTYPE_I32 => DType::I32,
        ZEROCAM_DTYPE_F16 => DType::F16,
        ZEROCAM_DTYPE_F32 => DType::F32,
        ZEROCAM_DTYPE_F64 => DType::F64,
        other => {
            return Err(CapiError::InvalidArgument(format!(
                "dtype {other} is not a ZEROCAM_DTYPE_* value (0..=8)"
            )))
        }
    })
}

/// The C value of `dtype`.
pub(crate) fn c_dtype(dtype: DType) -> zerocam_dtype {
    match dtype {
        DType::U8 => ZEROCAM_DTYPE_U8,
        DType::I8 => ZEROCAM_DTYPE_I8,
        DType::U16 => ZEROCAM_DTYPE_U16,
        DType::I16 => ZEROCAM_DTYPE_I16,
        DType::U32 => ZEROCAM_DTYPE_U32,
        DType::I32 => ZEROCAM_DTYPE_I32,
        DType::F16 => ZEROCAM_DTYPE_F16,
        DType::F32 => ZEROCAM_DTYPE_F32,
        DType::F64 => ZEROCAM_DTYPE_F64,
    }
}

/// `format` as a [`PixelFormat`] (`None` for `ZEROCAM_FORMAT_NONE`).
pub(crate) fn format_of(format: zerocam_pixel_format) -> Result<Option<PixelFormat>, CapiError> {
    let index = usize::try_from(format).unwrap_or(usize::MAX);
    match index {
        0 => Ok(None),
        i => C_FORMATS.get(i - 1).copied().map(Some).ok_or_else(|| {
            CapiError::InvalidArgument(format!(
                "format {format} is not a ZEROCAM_FORMAT_* value (0..={})",
                C_FORMATS.len()
            ))
        }),
    }
}

/// The C value of `format`.
pub(crate) fn c_format(format: Option<PixelFormat>) -> zerocam_pixel_format {
    format
        .and_then(|f| C_FORMATS.iter().position(|&c| c == f))
        .map_or(ZEROCAM_FORMAT_NONE, |i| i as u32 + 1)
}

/// The formats in `ZEROCAM_FORMAT_*` order, from 1.
const C_FORMATS: [PixelFormat; 10] = [
    PixelFormat::Rgb,
    PixelFormat::Bgr,
    PixelFormat::Rgba,
    PixelFormat::Bgra,
    PixelFormat::Grey,
    PixelFormat::Yuyv,
    PixelFormat::Uyvy,
    PixelFormat::Nv12,
    PixelFormat::Nv16,
    PixelFormat::PlanarRgb,
];

/// `memory` as a [`TensorMemory`] (`None` for auto).
pub(crate) fn memory_of(memory: zerocam_memory) -> Result<Option<TensorMemory>, CapiError> {
    Ok(match memory {
        ZEROCAM_MEMORY_AUTO => None,
        ZEROCAM_MEMORY_MEM => Some(TensorMemory::Mem),
        ZEROCAM_MEMORY_SHM => Some(TensorMemory::Shm),
        ZEROCAM_MEMORY_DMA => Some(TensorMemory::Dma),
        ZEROCAM_MEMORY_PBO => {
            return Err(CapiError::Unsupported(
                "memory ZEROCAM_MEMORY_PBO: GL buffers are made by zerocam's GPU path, not here"
                    .into(),
            ))
        }
        other => {
            return Err(CapiError::InvalidArgument(format!(
                "memory {other} is not a ZEROCAM_MEMORY_* value (0..=4)"
            )))
        }
    })
}

/// The C value of `memory`.
pub(crate) fn c_memory(memory: TensorMemory) -> zerocam_memory {
    match memory {
        TensorMemory::Mem => ZEROCAM_MEMORY_MEM,
        TensorMemory::Shm => ZEROCAM_MEMORY_SHM,
        TensorMemory::Dma => ZEROCAM_MEMORY_DMA,
        TensorMemory::Pbo => ZEROCAM_MEMORY_PBO,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pixel_format_has_a_c_value_and_back() {
        // The C list is spelled out (its order is the ABI); a format added
        // to zerocam-tensor must get a C value too.
        for f in PixelFormat::ALL {
            let c = c_format(Some(f));
            assert_ne!(
                c, ZEROCAM_FORMAT_NONE,
                "{f:?} has no ZEROCAM_FORMAT_* value"
            );
            assert_eq!(format_of(c).ok().flatten(), Some(f));
        }
    }
}
