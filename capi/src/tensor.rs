//! Tensors: made, imported from fds (one, or two planes), described, viewed,
//! batched, identified, and their fds cloned.

use std::ffi::c_int;
use std::os::fd::IntoRawFd;

use ::zerocam_tensor::{
    dup_fd_number, Error as TensorError, PlaneDescriptor, Region, Tensor, TensorDyn,
};

use crate::ffi::{call, handle, id, read, slice, Out};
use crate::handle::{self as table, Kind, Object};
use crate::status::{zerocam_status, CapiError};
use crate::values::{
    c_dtype, c_format, c_memory, dtype_of, format_of, memory_of, zerocam_dtype, zerocam_memory,
    zerocam_pixel_format, ZEROCAM_MAX_DIMS,
};

/// A tensor: shape, element type and memory (heap, shared memory, dma-buf,
/// GL buffer). Lifetime: each handle a call gives is one reference
/// (`zerocam_tensor_ref` adds one, `zerocam_tensor_unref` drops one); the
/// buffer lives while any tensor, view, batch element, map, frame or cache
/// entry of it does. Thread-safe. Opaque.
#[allow(non_camel_case_types)]
pub struct zerocam_tensor {
    _opaque: [u8; 0],
}

/// One plane of an image in an fd, for `zerocam_tensor_from_planes`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct zerocam_plane {
    /// The fd (dup'd: the caller keeps and closes its own).
    pub fd: c_int,
    /// Where the plane starts in the fd, bytes.
    pub offset: usize,
    /// Bytes from one row to the next; 0 for the row's own width.
    pub stride: usize,
}

/// What a tensor is, from `zerocam_tensor_get_info`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct zerocam_tensor_info {
    /// Element type.
    pub dtype: zerocam_dtype,
    /// Memory kind.
    pub memory: zerocam_memory,
    /// Dimensions used in `shape`.
    pub ndim: usize,
    /// The shape (`ndim` entries, the rest 0).
    pub shape: [usize; ZEROCAM_MAX_DIMS],
    /// Bytes the elements span.
    pub size: usize,
    /// The image's pixel format, `ZEROCAM_FORMAT_NONE` for a plain tensor.
    pub format: zerocam_pixel_format,
    /// Image width in pixels (0 for a plain tensor).
    pub width: usize,
    /// Image height in pixels (0 for a plain tensor).
    pub height: usize,
    /// Bytes from one image row to the next (0 for a plain tensor).
    pub row_stride: usize,
    /// Where the tensor starts in its buffer, bytes (the import's offset).
    pub plane_offset: usize,
    /// Planes (1 for a plain tensor).
    pub plane_count: usize,
}

/// The kernel identity of a tensor's fd: what an import cache keys on.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct zerocam_fd_identity {
    /// `st_dev` of the fd.
    pub st_dev: u64,
    /// `st_ino` of the fd.
    pub st_ino: u64,
    /// Where the tensor starts in it, bytes.
    pub plane_offset: u64,
}

/// The `ndim` extents at `shape`, `ndim` checked (1 to
/// [`ZEROCAM_MAX_DIMS`]) before anything is read.
///
/// # Safety
/// For `ndim` in that range, `shape` is NULL or valid for reads of `ndim`
/// values.
pub(crate) unsafe fn shape_arg<'a>(
    shape: *const usize,
    ndim: usize,
) -> Result<&'a [usize], CapiError> {
    if !(1..=ZEROCAM_MAX_DIMS).contains(&ndim) {
        return Err(CapiError::InvalidArgument(format!(
            "ndim {ndim} is not 1..={ZEROCAM_MAX_DIMS}"
        )));
    }
    // SAFETY: the caller's promise, for this `ndim`.
    unsafe { slice(shape, ndim, "shape") }
}

/// The tensor behind handle `t` (`what` in errors).
pub(crate) fn tensor_of(
    t: *const zerocam_tensor,
    what: &'static str,
) -> Result<TensorDyn, CapiError> {
    match &*table::get(id(t), Kind::Tensor, what)? {
        Object::Tensor(tensor) => Ok(tensor.clone()),
        _ => Err(CapiError::Panic("the table's kind check failed".into())),
    }
}

/// A new handle for `tensor`.
pub(crate) fn new_handle(tensor: TensorDyn) -> Result<*mut zerocam_tensor, CapiError> {
    Ok(handle(table::insert(Object::Tensor(tensor))?))
}

/// `e`, naming the caller's fd number `fd` where it names the duplicate's
/// (and, for a file that can shrink, what a C caller can do about it).
pub(crate) fn caller_fd(mut e: TensorError, fd: c_int) -> CapiError {
    if let TensorError::ShrinkableFile { kind, .. } = e {
        return CapiError::BadFd(format!(
            "fd {fd} is {kind}: its size can shrink while it is mapped, and a read past a \
             truncated end would kill the process with SIGBUS, so it is not imported; pass a \
             dma-buf, or a memfd made with MFD_ALLOW_SEALING (sealed against shrinking on \
             import) or sealed with F_SEAL_SHRINK"
        ));
    }
    if let TensorError::BadFd { fd: number, .. }
    | TensorError::NotMappable { fd: number, .. }
    | TensorError::CannotSeal { fd: number, .. }
    | TensorError::ShrinkableFile { fd: number, .. } = &mut e
    {
        *number = fd;
    }
    CapiError::Tensor(e)
}

/// Makes a tensor of `ndim` dimensions `shape`, elements `dtype`, in `memory`.
///
/// # Safety
/// `shape` is NULL or valid for reads of `ndim` values; `out` is NULL or
/// valid for a write.
///
/// # Errors
/// `ZEROCAM_ERROR_INVALID_ARGUMENT` for a bad dtype, memory, 0 or more than
/// 8 dimensions, a 0 extent; `ZEROCAM_ERROR_UNSUPPORTED` for memory this
/// machine lacks (no DMA heap); `ZEROCAM_ERROR_IO` when allocation fails.
#[no_mangle]
pub unsafe extern "C" fn zerocam_tensor_new(
    shape: *const usize,
    ndim: usize,
    dtype: zerocam_dtype,
    memory: zerocam_memory,
    out: *mut *mut zerocam_tensor,
) -> zerocam_status {
    call("zerocam_tensor_new", || {
        let out = Out::new(out, "out")?;
        // SAFETY: the caller's promise for `shape`.
        let shape = unsafe { shape_arg(shape, ndim) }?;
        let tensor = TensorDyn::new(shape, dtype_of(dtype)?, memory_of(memory)?, None)?;
        let h = new_handle(tensor)?;
        // SAFETY: the caller's promise for `out`.
        unsafe { out.write(h) };
        Ok(())
    })
}

/// Imports `fd` as a tensor of `shape` and `dtype`, without a copy. The fd is
/// dup'd (the caller keeps and closes its own) and checked as in Rust: a
/// dma-buf, or a memfd that cannot shrink, large enough for the shape. A
/// sealable memfd is sealed against shrinking first (so its size cannot
/// change between the check and the map), and stays sealed even when the
/// import then fails.
///
/// # Safety
/// As [`zerocam_tensor_new`].
///
/// # Errors
/// `ZEROCAM_ERROR_BAD_FD` for a closed fd, a regular file, a memfd that can
/// shrink, a file too small; `ZEROCAM_ERROR_INVALID_ARGUMENT` for the shape
/// or dtype.
#[no_mangle]
pub unsafe extern "C" fn zerocam_tensor_from_fd(
    fd: c_int,
    shape: *const usize,
    ndim: usize,
    dtype: zerocam_dtype,
    out: *mut *mut zerocam_tensor,
) -> zerocam_status {
    call("zerocam_tensor_from_fd", || {
        let out = Out::new(out, "out")?;
        // SAFETY: the caller's promise for `shape`.
        let shape = unsafe { shape_arg(shape, ndim) }?;
        let dtype = dtype_of(dtype)?;
        let dup = dup_fd_number(fd).map_err(|e| caller_fd(e, fd))?;
        let tensor = TensorDyn::from_fd(dup, shape, dtype, None).map_err(|e| caller_fd(e, fd))?;
        let h = new_handle(tensor)?;
        // SAFETY: the caller's promise for `out`.
        unsafe { out.write(h) };
        Ok(())
    })
}

/// Imports a `width`x`height` NV12 or NV16 image from two planes (two fds,
/// or one fd at two offsets: the buffer is then mapped once), without a
/// copy; each fd is dup'd and checked as by `zerocam_tensor_from_fd`.
///
/// # Safety
/// `luma` and `chroma` are NULL or valid for a read; `out` as in
/// [`zerocam_tensor_new`].
///
/// # Errors
/// `ZEROCAM_ERROR_UNSUPPORTED` for another format; `ZEROCAM_ERROR_BAD_FD`
/// for an fd as in `zerocam_tensor_from_fd` or a plane past its fd's end;
/// `ZEROCAM_ERROR_INVALID_ARGUMENT` for a stride below the row.
#[no_mangle]
pub unsafe extern "C" fn zerocam_tensor_from_planes(
    width: usize,
    height: usize,
    format: zerocam_pixel_format,
    luma: *const zerocam_plane,
    chroma: *const zerocam_plane,
    out: *mut *mut zerocam_tensor,
) -> zerocam_status {
    call("zerocam_tensor_from_planes", || {
        let out = Out::new(out, "out")?;
        // SAFETY: the caller's promise for `luma` and `chroma`.
        let (luma, chroma) = unsafe { (read(luma, "luma")?, read(chroma, "chroma")?) };
        let format = format_of(format)?
            .ok_or_else(|| CapiError::InvalidArgument("format ZEROCAM_FORMAT_NONE".into()))?;
        let plane = |p: zerocam_plane| -> Result<PlaneDescriptor, CapiError> {
            let d =
                PlaneDescriptor::from_owned(dup_fd_number(p.fd).map_err(|e| caller_fd(e, p.fd))?)
                    .with_offset(p.offset);
            Ok(if p.stride == 0 {
                d
            } else {
                d.with_stride(p.stride)
            })
        };
        let tensor =
            Tensor::<u8>::import_planes(width, height, format, plane(luma)?, plane(chroma)?)?;
        let h = new_handle(tensor.into())?;
        // SAFETY: the caller's promise for `out`.
        unsafe { out.write(h) };
        Ok(())
    })
}

/// A new fd (close-on-exec) for the tensor's buffer, which the caller
/// closes: to queue it to V4L2, import it into EGL, pass it to another
/// process.
///
/// # Safety
/// `out_fd` is NULL or valid for a write.
///
/// # Errors
/// `ZEROCAM_ERROR_UNSUPPORTED` for heap or GL memory, or an image whose two
/// planes live in two buffers.
#[no_mangle]
pub unsafe extern "C" fn zerocam_tensor_clone_fd(
    tensor: *const zerocam_tensor,
    out_fd: *mut c_int,
) -> zerocam_status {
    call("zerocam_tensor_clone_fd", || {
        let out = Out::new(out_fd, "out_fd")?;
        let fd = tensor_of(tensor, "tensor")?.clone_fd()?;
        // SAFETY: the caller's promise for `out_fd`.
        unsafe { out.write(fd.into_raw_fd()) };
        Ok(())
    })
}

/// Describes `tensor`: dtype, memory, shape, size, and its image fields.
///
/// # Safety
/// `out` is NULL or valid for a write of a `zerocam_tensor_info`.
#[no_mangle]
pub unsafe extern "C" fn zerocam_tensor_get_info(
    tensor: *const zerocam_tensor,
    out: *mut zerocam_tensor_info,
) -> zerocam_status {
    call("zerocam_tensor_get_info", || {
        let out = Out::new(out, "out")?;
        let t = tensor_of(tensor, "tensor")?;
        let mut info = zerocam_tensor_info {
            dtype: c_dtype(t.dtype()),
            memory: c_memory(t.memory()),
            ndim: t.shape().len().min(ZEROCAM_MAX_DIMS),
            size: t.size(),
            format: c_format(t.format()),
            width: t.width().unwrap_or(0),
            height: t.height().unwrap_or(0),
            row_stride: t.row_stride().unwrap_or(0),
            plane_offset: t.plane_offset(),
            plane_count: t.plane_count(),
            ..Default::default()
        };
        for (d, &n) in info.shape.iter_mut().zip(t.shape()) {
            *d = n;
        }
        // SAFETY: the caller's promise for `out`.
        unsafe { out.write(info) };
        Ok(())
    })
}

/// A view of the `width`x`height` region at (`x`, `y`) of an image tensor
/// (rows and columns of a 2-D or 3-D tensor): the same buffer and buffer id,
/// no copy. A new handle.
///
/// # Safety
/// `out` is NULL or valid for a write.
///
/// # Errors
/// `ZEROCAM_ERROR_OUT_OF_BOUNDS` for a region past the tensor (never
/// clamped); `ZEROCAM_ERROR_INVALID_ARGUMENT` for an empty region or one
/// that splits a chroma sample.
#[no_mangle]
pub unsafe extern "C" fn zerocam_tensor_view(
    tensor: *const zerocam_tensor,
    x: usize,
    y: usize,
    width: usize,
    height: usize,
    out: *mut *mut zerocam_tensor,
) -> zerocam_status {
    call("zerocam_tensor_view", || {
        let out = Out::new(out, "out")?;
        let view = tensor_of(tensor, "tensor")?.view(Region::new(x, y, width, height))?;
        let h = new_handle(view)?;
        // SAFETY: the caller's promise for `out`.
        unsafe { out.write(h) };
        Ok(())
    })
}

/// Element `n` of the leading (batch) dimension: the same buffer, no copy.
/// A new handle.
///
/// # Safety
/// `out` is NULL or valid for a write.
///
/// # Errors
/// `ZEROCAM_ERROR_OUT_OF_BOUNDS` for `n` at or past the batch.
#[no_mangle]
pub unsafe extern "C" fn zerocam_tensor_batch(
    tensor: *const zerocam_tensor,
    n: usize,
    out: *mut *mut zerocam_tensor,
) -> zerocam_status {
    call("zerocam_tensor_batch", || {
        let out = Out::new(out, "out")?;
        let element = tensor_of(tensor, "tensor")?.batch(n)?;
        let h = new_handle(element)?;
        // SAFETY: the caller's promise for `out`.
        unsafe { out.write(h) };
        Ok(())
    })
}

/// Plane `index` of an image tensor (NV12's Y is 0, its UV 1; a packed
/// format's only plane is 0; a plain tensor is its own plane 0): the same
/// buffer, no copy, a 2-D or 3-D tensor with uniform strides that
/// `zerocam_tensor_map` can describe. A new handle.
///
/// # Safety
/// `out` is NULL or valid for a write.
///
/// # Errors
/// `ZEROCAM_ERROR_OUT_OF_BOUNDS` for an index at or past the plane count.
#[no_mangle]
pub unsafe extern "C" fn zerocam_tensor_plane(
    tensor: *const zerocam_tensor,
    index: usize,
    out: *mut *mut zerocam_tensor,
) -> zerocam_status {
    call("zerocam_tensor_plane", || {
        let out = Out::new(out, "out")?;
        let plane = tensor_of(tensor, "tensor")?.plane(index)?;
        let h = new_handle(plane)?;
        // SAFETY: the caller's promise for `out`.
        unsafe { out.write(h) };
        Ok(())
    })
}

/// The tensor's buffer id: the same for every handle, view and batch element
/// of one buffer for its whole life (what GPU caches key on), different for
/// another buffer.
///
/// # Safety
/// `out` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zerocam_tensor_buffer_id(
    tensor: *const zerocam_tensor,
    out: *mut u64,
) -> zerocam_status {
    call("zerocam_tensor_buffer_id", || {
        let out = Out::new(out, "out")?;
        let id = tensor_of(tensor, "tensor")?.buffer_identity().id();
        // SAFETY: the caller's promise for `out`.
        unsafe { out.write(id) };
        Ok(())
    })
}

/// The kernel identity of the tensor's fd, `(st_dev, st_ino)`, and where the
/// tensor starts in it: the same for every fd of one dma-buf.
///
/// # Safety
/// `out` is NULL or valid for a write of a `zerocam_fd_identity`.
///
/// # Errors
/// `ZEROCAM_ERROR_UNSUPPORTED` for a tensor without an fd (heap, GL).
#[no_mangle]
pub unsafe extern "C" fn zerocam_tensor_fd_identity(
    tensor: *const zerocam_tensor,
    out: *mut zerocam_fd_identity,
) -> zerocam_status {
    call("zerocam_tensor_fd_identity", || {
        let out = Out::new(out, "out")?;
        let t = tensor_of(tensor, "tensor")?;
        let file = t
            .fd_identity()
            .ok_or_else(|| CapiError::Unsupported(format!("a {} tensor has no fd", t.memory())))?;
        let identity = zerocam_fd_identity {
            st_dev: file.dev,
            st_ino: file.ino,
            plane_offset: t.plane_offset() as u64,
        };
        // SAFETY: the caller's promise for `out`.
        unsafe { out.write(identity) };
        Ok(())
    })
}

/// Adds a reference to `tensor` (each must be dropped by `zerocam_tensor_unref`).
///
/// # Safety
/// None beyond a handle's: any value is checked against the live-object table.
#[no_mangle]
pub unsafe extern "C" fn zerocam_tensor_ref(tensor: *mut zerocam_tensor) -> zerocam_status {
    call("zerocam_tensor_ref", || {
        table::add_ref(id(tensor), Kind::Tensor, "tensor")
    })
}

/// Drops a reference to `tensor`; the handle is invalid after its last one.
/// The buffer lives on while zerocam holds it (a frame, a cache, a map, a
/// view).
///
/// # Safety
/// None beyond a handle's: a released or unknown one is
/// `ZEROCAM_ERROR_INVALID_HANDLE`.
#[no_mangle]
pub unsafe extern "C" fn zerocam_tensor_unref(tensor: *mut zerocam_tensor) -> zerocam_status {
    call("zerocam_tensor_unref", || {
        drop(table::release(id(tensor), Kind::Tensor, "tensor")?);
        Ok(())
    })
}
