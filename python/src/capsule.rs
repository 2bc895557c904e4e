//! The `__zerocam_tensor__` capsule: passing a tensor between extension
//! modules (each PyO3 module has its own `Tensor` class, so `isinstance`
//! across modules fails; the capsule does not).
//!
//! Protocol (ABI version 1):
//! - `obj.__zerocam_tensor__()` returns a `PyCapsule` named
//!   `"zerocam.tensor.v1"` whose pointer is a [`ZerocamTensorV1`] (C layout,
//!   below).
//! - The capsule owns the struct and `fd` (a `dup` of the buffer's fd made for
//!   this capsule): its destructor closes `fd` and frees the struct. A
//!   consumer that keeps the buffer `dup`s `fd` (never takes it) and must not
//!   keep the pointer past the capsule's life.
//! - Only fd-backed memory (shared memory, dma-buf) can be passed: heap
//!   tensors raise `BufferError` (use `__dlpack__` for those).
//! - An import treats `fd` as `Tensor.from_fd` treats any fd: it duplicates
//!   the number with `F_DUPFD_CLOEXEC` (a closed one raises `EBADF`) and takes
//!   only a dma-buf or a memfd that cannot shrink (sealing a sealable one);
//!   any other file is refused, naming what it is.
//! - Arrays: `shape`/`strides` (bytes) from `byte_offset` in the fd.
//!   Images (`format[0] != 0`): `format` names the `zerocam.PixelFormat`, and
//!   `width`, `height`, `row_stride` and `byte_offset` describe it; `shape`
//!   and `strides` are the image tensor's, so they also carry a batch (a
//!   leading `N`, `strides[0]` apart) and the plane step of `PLANAR_RGB`
//!   (the stride of its plane dim). An import rebuilds the image from these
//!   and refuses a capsule whose shape or strides differ from the rebuilt ones.

use std::ffi::{c_void, CStr};
use std::os::fd::{AsRawFd, IntoRawFd};

use pyo3::ffi;
use pyo3::prelude::*;
use zerocam_tensor::{DType, ImageLayout, TensorDyn};

use crate::dlpack::{dl_dtype, DLDataType};
use crate::errors::{import_err, invalid, tensor_err, MapConflict};
use crate::format::PixelFormat;
use crate::tensor::dup_fd;

/// The capsule name.
pub const NAME: &CStr = c"zerocam.tensor.v1";
const MAX_DIMS: usize = 8;

/// What the capsule points to (C layout; see the module docs).
#[repr(C)]
pub struct ZerocamTensorV1 {
    /// 1.
    pub abi_version: u32,
    /// A dup of the buffer's fd, owned by the capsule.
    pub fd: i32,
    /// Element type (DLPack code and bits).
    pub dtype: DLDataType,
    /// Number of dims (≤ 8).
    pub ndim: u32,
    /// Offset of the first element in the fd, bytes.
    pub byte_offset: u64,
    /// Shape (first `ndim` entries).
    pub shape: [i64; MAX_DIMS],
    /// Byte strides (first `ndim` entries).
    pub strides: [i64; MAX_DIMS],
    /// Pixel format name (NUL-terminated; empty for arrays).
    pub format: [u8; 16],
    /// Image width (0 for arrays).
    pub width: u32,
    /// Image height (0 for arrays).
    pub height: u32,
    /// Image row stride in bytes (0 for arrays).
    pub row_stride: u32,
}

unsafe extern "C" fn destructor(capsule: *mut ffi::PyObject) {
    // SAFETY: CPython calls this once with our capsule; its pointer is the
    // boxed struct made in `export`, and the fd is owned by it.
    unsafe {
        let p = ffi::PyCapsule_GetPointer(capsule, NAME.as_ptr()).cast::<ZerocamTensorV1>();
        if p.is_null() {
            ffi::PyErr_Clear();
            return;
        }
        let b = Box::from_raw(p);
        if b.fd >= 0 {
            libc::close(b.fd);
        }
    }
}

/// `__zerocam_tensor__`.
pub fn export<'py>(py: Python<'py>, t: &TensorDyn) -> PyResult<Bound<'py, PyAny>> {
    let fd = t.clone_fd().map_err(|e| {
        MapConflict::new_err(format!(
            "no zerocam capsule for this tensor: {e}; use __dlpack__"
        ))
    })?;
    let strides = t.strides().ok_or_else(|| {
        invalid(format!(
            "a tensor of shape {:?} has no uniform strides: export each plane",
            t.shape()
        ))
    })?;
    let shape = t.shape();
    if shape.len() > MAX_DIMS {
        return Err(invalid(format!(
            "{} dims: the capsule holds at most {MAX_DIMS}",
            shape.len()
        )));
    }
    let mut s = ZerocamTensorV1 {
        abi_version: 1,
        fd: -1,
        dtype: dl_dtype(t.dtype()),
        ndim: shape.len() as u32,
        byte_offset: t.plane_offset() as u64,
        shape: [0; MAX_DIMS],
        strides: [0; MAX_DIMS],
        format: [0; 16],
        width: 0,
        height: 0,
        row_stride: 0,
    };
    for (i, (&d, &st)) in shape.iter().zip(&strides).enumerate() {
        s.shape[i] = d as i64;
        s.strides[i] = st as i64;
    }
    if let Some(f) = t.format() {
        let name = f.name().as_bytes();
        s.format[..name.len()].copy_from_slice(name);
        let field = |what: &str, v: Option<usize>| {
            let v = v.unwrap_or(0);
            u32::try_from(v)
                .map_err(|_| invalid(format!("image {what} {v} does not fit the capsule's u32")))
        };
        s.width = field("width", t.width())?;
        s.height = field("height", t.height())?;
        s.row_stride = field("row stride", t.row_stride())?;
    }
    s.fd = fd.into_raw_fd();
    let p = Box::into_raw(Box::new(s));
    // SAFETY: `p` is a live boxed struct, the name static; the destructor frees both.
    let cap = unsafe { ffi::PyCapsule_New(p.cast::<c_void>(), NAME.as_ptr(), Some(destructor)) };
    if cap.is_null() {
        // SAFETY: not handed to Python: free it here.
        unsafe {
            let b = Box::from_raw(p);
            libc::close(b.fd);
        }
    }
    // SAFETY: a new reference, or NULL with an error set.
    unsafe { Bound::from_owned_ptr_or_err(py, cap) }
}

fn dtype_of(d: DLDataType) -> Option<DType> {
    DType::ALL.into_iter().find(|&x| {
        let y = dl_dtype(x);
        y.code == d.code && y.bits == d.bits
    })
}

/// `Tensor.from_zerocam(obj)`: imports what `obj.__zerocam_tensor__()` hands over.
pub fn import(obj: &Bound<'_, PyAny>) -> PyResult<TensorDyn> {
    let cap = obj.call_method0("__zerocam_tensor__")?;
    // SAFETY: `PyCapsule_GetPointer` checks the type and the name (NULL and
    // an error otherwise); the struct lives as long as `cap`, held here.
    let p = unsafe { ffi::PyCapsule_GetPointer(cap.as_ptr(), NAME.as_ptr()) };
    if p.is_null() {
        return Err(
            PyErr::take(obj.py()).unwrap_or_else(|| invalid("not a zerocam.tensor.v1 capsule"))
        );
    }
    // SAFETY: as above; read only.
    let s = unsafe { &*p.cast::<ZerocamTensorV1>() };
    if s.abi_version != 1 || s.ndim == 0 || s.ndim as usize > MAX_DIMS {
        return Err(invalid(format!(
            "zerocam capsule: ABI {} with {} dims is not supported",
            s.abi_version, s.ndim
        )));
    }
    let dtype = dtype_of(s.dtype).ok_or_else(|| invalid("zerocam capsule: unknown dtype"))?;
    let fd = dup_fd(s.fd)?;
    let n = s.ndim as usize;
    let bad = || invalid("zerocam capsule: a dimension, stride or offset is out of range");
    let shape = s.shape[..n]
        .iter()
        .map(|&d| usize::try_from(d).ok().filter(|&d| d > 0))
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(bad)?;
    let strides = s.strides[..n]
        .iter()
        .map(|&st| usize::try_from(st).ok())
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(bad)?;
    let offset = usize::try_from(s.byte_offset).map_err(|_| bad())?;
    if s.format[0] != 0 {
        let name = CStr::from_bytes_until_nul(&s.format)
            .ok()
            .and_then(|n| n.to_str().ok())
            .ok_or_else(|| invalid("zerocam capsule: bad format name"))?;
        let format = PixelFormat::from_name(name)?.rust();
        // A file without a size (a pipe, a socket) gets one element: `from_fd`
        // then refuses it, naming what it is.
        let size = file_size(&fd).unwrap_or(dtype.size());
        let whole = TensorDyn::from_fd(fd, &[size / dtype.size()], dtype, None)
            .map_err(|e| import_err(e, s.fd))?;
        return import_image(whole, format, s, &shape, &strides, offset);
    }
    let contiguous = {
        let mut want = dtype.size();
        let mut ok = offset == 0;
        for (d, st) in shape.iter().zip(&strides).rev() {
            ok &= *st == want;
            want = want.saturating_mul(*d);
        }
        ok
    };
    if !contiguous {
        return Err(invalid(format!(
            "zerocam capsule: a strided or offset array (offset {offset}, shape {shape:?}, \
             strides {strides:?}) cannot be imported yet"
        )));
    }
    TensorDyn::from_fd(fd, &shape, dtype, None).map_err(|e| import_err(e, s.fd))
}

/// The image a capsule describes: its format fields (`format`, `width`,
/// `height`, `row_stride`, `byte_offset`) and what only the shape and strides
/// carry — a batch (one leading dim more than an image has) and the step
/// between the planes of a planar image (the stride of its plane dim). The
/// rebuilt image must have exactly the capsule's shape and strides, else the
/// import is refused: a producer's geometry is never reinterpreted.
fn import_image(
    whole: TensorDyn,
    format: zerocam_tensor::PixelFormat,
    s: &ZerocamTensorV1,
    shape: &[usize],
    strides: &[usize],
    offset: usize,
) -> PyResult<TensorDyn> {
    let (width, height, row_stride) = (s.width as usize, s.height as usize, s.row_stride as usize);
    let mut layout = ImageLayout::new(width, height, format)
        .with_row_stride(row_stride)
        .with_start_offset(offset);
    let build = |layout: ImageLayout| whole.clone().with_image(layout).map_err(tensor_err);
    if format == zerocam_tensor::PixelFormat::PlanarRgb && shape.len() >= 3 {
        // [N?, 3, H, W]: the plane dim's stride is the plane step.
        layout = layout.with_plane_offset(strides[shape.len() - 3]);
    }
    let mut t = build(layout)?;
    if shape.len() == t.shape().len() + 1 {
        t = build(layout.with_batch(shape[0]))?;
    }
    let got = t.strides();
    if t.shape() != shape || got.as_deref() != Some(strides) {
        return Err(invalid(format!(
            "zerocam capsule: a {width}x{height} {format} image with row stride {row_stride} \
             at offset {offset} has shape {:?} and strides {:?}, but the capsule gives shape \
             {shape:?} and strides {strides:?}: not imported",
            t.shape(),
            got.unwrap_or_default()
        )));
    }
    Ok(t)
}

/// The file's size, by `lseek`, with the file offset (shared with the
/// producer's fd) put back where it was; `None` when it has none. A dma-buf
/// answers only `SEEK_END` and `SEEK_SET` at offset 0 (`SEEK_CUR` is
/// `EINVAL`): its offset means nothing, and is put back at 0.
fn file_size(fd: &std::os::fd::OwnedFd) -> Option<usize> {
    let raw = fd.as_raw_fd();
    // SAFETY: lseek on an fd we own; no memory is touched.
    let here = unsafe { libc::lseek(raw, 0, libc::SEEK_CUR) };
    // SAFETY: as above.
    let end = unsafe { libc::lseek(raw, 0, libc::SEEK_END) };
    if end < 0 {
        return None;
    }
    // SAFETY: as above; back to the offset read first (0 for a dma-buf).
    unsafe { libc::lseek(raw, here.max(0), libc::SEEK_SET) };
    usize::try_from(end).ok()
}
