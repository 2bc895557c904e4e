//! CPU maps of tensors: the address, size, shape and byte strides, valid
//! until `zerocam_map_unmap`; a dma-buf's sync bracket opens at the map and
//! closes at the unmap.

use std::sync::Mutex;

use ::zerocam_tensor::Access;

use crate::ffi::{call, handle, id, Out};
use crate::handle::{self as table, Kind, Object};
use crate::status::{zerocam_status, CapiError};
use crate::tensor::{tensor_of, zerocam_tensor};
use crate::values::ZEROCAM_MAX_DIMS;

/// A live CPU map of a tensor. Lifetime: from `zerocam_tensor_map` to
/// `zerocam_map_unmap` (exactly once); it keeps its tensor alive, and its
/// address is valid until the unmap. Any thread may unmap it; reading and
/// writing the bytes from several threads is the caller's to order. Opaque.
#[allow(non_camel_case_types)]
pub struct zerocam_map {
    _opaque: [u8; 0],
}

/// What a map may do: one of the `ZEROCAM_ACCESS_*` values.
#[allow(non_camel_case_types)]
pub type zerocam_access = u32;
/// Read only.
pub const ZEROCAM_ACCESS_READ: zerocam_access = 1;
/// Write only (reads may see stale bytes on non-coherent memory).
pub const ZEROCAM_ACCESS_WRITE: zerocam_access = 2;
/// Read and write.
pub const ZEROCAM_ACCESS_READ_WRITE: zerocam_access = 3;

/// Where a map's bytes are, from `zerocam_tensor_map`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct zerocam_mapping {
    /// The first element; writable for a write or read-write map.
    pub data: *mut std::ffi::c_void,
    /// Bytes from the first element to the end of the last (row padding included).
    pub size: usize,
    /// Dimensions used in `shape` and `strides`.
    pub ndim: usize,
    /// The tensor's shape.
    pub shape: [usize; ZEROCAM_MAX_DIMS],
    /// Bytes from one element to the next along each dimension (row
    /// strides include padding).
    pub strides: [usize; ZEROCAM_MAX_DIMS],
}

/// `access` as an [`Access`].
fn access_of(access: zerocam_access) -> Result<Access, CapiError> {
    match access {
        ZEROCAM_ACCESS_READ => Ok(Access::Read),
        ZEROCAM_ACCESS_WRITE => Ok(Access::Write),
        ZEROCAM_ACCESS_READ_WRITE => Ok(Access::ReadWrite),
        other => Err(CapiError::InvalidArgument(format!(
            "access {other} is not ZEROCAM_ACCESS_READ (1), _WRITE (2) or _READ_WRITE (3)"
        ))),
    }
}

/// Maps `tensor` for the CPU with `access`: `out` says where its bytes are,
/// `out_map` is the map to end with `zerocam_map_unmap` (the map keeps the
/// tensor alive). Maps of one buffer follow the Rust rules: any number of
/// read maps, or one write map.
///
/// # Safety
/// `out_map` and `out` are NULL or valid for a write.
///
/// # Errors
/// `ZEROCAM_ERROR_BUSY` when a conflicting map (or a device's use) is live;
/// `ZEROCAM_ERROR_INVALID_ARGUMENT` for a bad access;
/// `ZEROCAM_ERROR_UNSUPPORTED` for an image whose two planes live in two
/// buffers (an NV12M frame) or a view of NV12/NV16 (no uniform strides):
/// map each `zerocam_tensor_plane`;
/// `ZEROCAM_ERROR_IO` when the dma-buf sync fails.
#[no_mangle]
pub unsafe extern "C" fn zerocam_tensor_map(
    tensor: *const zerocam_tensor,
    access: zerocam_access,
    out_map: *mut *mut zerocam_map,
    out: *mut zerocam_mapping,
) -> zerocam_status {
    call("zerocam_tensor_map", || {
        let out_map = Out::new(out_map, "out_map")?;
        let out = Out::new(out, "out")?;
        let access = access_of(access)?;
        let tensor = tensor_of(tensor, "tensor")?;
        if tensor.strides().is_none() {
            // An NV12/NV16 view: its chroma rows are not at one stride from
            // its luma rows, so shape and strides cannot say where they are.
            return Err(CapiError::Unsupported(format!(
                "a {}x{} {} view has no uniform strides: map each zerocam_tensor_plane",
                tensor.width().unwrap_or(0),
                tensor.height().unwrap_or(0),
                tensor.format().map_or("array", |f| f.name()),
            )));
        }
        let mut map = tensor.map_access(access)?;
        let data = match map.as_mut_ptr() {
            Some(p) => p.as_ptr(),
            None => map.ptr().as_ptr(),
        };
        let mut mapping = zerocam_mapping {
            data: data.cast(),
            size: map.len(),
            ndim: map.shape().len().min(ZEROCAM_MAX_DIMS),
            shape: [0; ZEROCAM_MAX_DIMS],
            strides: [0; ZEROCAM_MAX_DIMS],
        };
        for (d, &n) in mapping.shape.iter_mut().zip(map.shape()) {
            *d = n;
        }
        for (d, &s) in mapping
            .strides
            .iter_mut()
            .zip(map.strides_bytes().unwrap_or(&[]))
        {
            *d = s;
        }
        let handle = handle(table::insert(Object::Map(Mutex::new(Some(map))))?);
        // SAFETY: the caller's promise for `out` and `out_map`.
        unsafe {
            out.write(mapping);
            out_map.write(handle);
        }
        Ok(())
    })
}

/// Ends `map`: a dma-buf's sync bracket closes (its failure is reported),
/// the address is invalid after, and so is the handle.
///
/// # Safety
/// None beyond a handle's: an unknown or already-ended map is
/// `ZEROCAM_ERROR_INVALID_HANDLE`.
///
/// # Errors
/// `ZEROCAM_ERROR_IO` when the dma-buf sync END fails (the map ends anyway).
#[no_mangle]
pub unsafe extern "C" fn zerocam_map_unmap(map: *mut zerocam_map) -> zerocam_status {
    call("zerocam_map_unmap", || {
        let object = table::release(id(map), Kind::Map, "map")?;
        let Some(Object::Map(slot)) = object.as_deref() else {
            return Ok(()); // another reference still holds it (none are handed out)
        };
        let live = table::lock(slot, "map")?.take();
        match live {
            Some(m) => Ok(m.finish()?),
            None => Ok(()),
        }
    })
}
