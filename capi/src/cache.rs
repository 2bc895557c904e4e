//! The import cache as a C object: a dma-buf seen before (by its kernel
//! identity and offset, whatever the fd number) gives back the same tensor,
//! so what keys on the tensor's buffer id downstream (the GPU's EGLImage
//! cache) keeps hitting. What a GStreamer element or a decoder loop needs.

use std::ffi::c_int;
use std::sync::{Mutex, MutexGuard};

use ::zerocam_tensor::{dup_fd_number, ImageLayout, Tensor, TensorDyn};
use zerocam_cache::{DmaBufKey, ImportCache};

use crate::ffi::{call, fd_stat, handle, id, read, Out};
use crate::handle::{self as table, Kind, Object};
use crate::status::{zerocam_status, CapiError};
use crate::tensor::{caller_fd, new_handle, zerocam_tensor};
use crate::values::{format_of, zerocam_pixel_format};

/// The most buffers a cache keeps (its table is made at this size up front:
/// a hostile capacity must not reserve the address space).
const MAX_CAPACITY: usize = 4096;

/// An import cache. Lifetime: references (`zerocam_import_cache_ref` /
/// `_unref`); its entries go with the last one, tensors handed out live on.
/// Calls on one cache are serialized. Opaque.
#[allow(non_camel_case_types)]
pub struct zerocam_import_cache {
    _opaque: [u8; 0],
}

/// How an image lies in an imported buffer, from its start (the import's
/// `offset`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct zerocam_image_layout {
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
    /// Pixel format (not `ZEROCAM_FORMAT_NONE`).
    pub format: zerocam_pixel_format,
    /// Bytes from one row to the next; 0 for packed rows.
    pub row_stride: usize,
    /// Bytes from the image's start to its second plane (NV12's UV); 0 for
    /// a plane right after the first.
    pub plane_offset: usize,
}

/// A cache's counters.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct zerocam_cache_stats {
    /// Lookups that found their buffer.
    pub hits: u64,
    /// Lookups that imported (each a dup and a map).
    pub misses: u64,
    /// Entries dropped to make room.
    pub evictions: u64,
    /// Entries dropped by `zerocam_import_cache_clear`.
    pub invalidated: u64,
    /// Entries held now.
    pub live: usize,
}

/// The cache behind handle `c`, locked, run through `f`.
fn with_cache<R>(
    c: *const zerocam_import_cache,
    f: impl FnOnce(&mut ImportCache) -> Result<R, CapiError>,
) -> Result<R, CapiError> {
    let object = table::get(id(c), Kind::Cache, "cache")?;
    let Object::Cache(cache) = &*object else {
        return Err(CapiError::Panic("the table's kind check failed".into()));
    };
    let mut guard: MutexGuard<'_, ImportCache> = table::lock(cache, "cache")?;
    f(&mut guard)
}

/// Makes a cache of at most `capacity` buffers (least recently used first
/// out). Size it at least a pool's buffers × planes, or it re-imports
/// every cycle.
///
/// # Safety
/// `out` is NULL or valid for a write.
///
/// # Errors
/// `ZEROCAM_ERROR_INVALID_ARGUMENT` for a capacity of 0 or above 4096.
#[no_mangle]
pub unsafe extern "C" fn zerocam_import_cache_new(
    capacity: usize,
    out: *mut *mut zerocam_import_cache,
) -> zerocam_status {
    call("zerocam_import_cache_new", || {
        let out = Out::new(out, "out")?;
        if !(1..=MAX_CAPACITY).contains(&capacity) {
            return Err(CapiError::InvalidArgument(format!(
                "capacity {capacity} is not 1..={MAX_CAPACITY} buffers"
            )));
        }
        let cache = Object::Cache(Mutex::new(ImportCache::new(capacity)));
        let h = handle(table::insert(cache)?);
        // SAFETY: the caller's promise for `out`.
        unsafe { out.write(h) };
        Ok(())
    })
}

/// The tensor of the bytes at `offset` in dma-buf `fd`, laid out as
/// `layout` (for NULL: the `length` bytes as a one-row grey image, shape
/// `[1, length, 1]`), of which the import spans `length` bytes: the cached one when the
/// cache has seen this buffer at this offset — by its kernel identity
/// `(st_dev, st_ino)`, whatever the fd's number — else a new import (the fd
/// is dup'd and checked as by `zerocam_tensor_from_fd`), cached. A hit costs
/// one `fstat`, no dup, no map, and gives the same buffer id as before.
/// A new handle; the cache keeps its own reference.
///
/// # Safety
/// `layout` is NULL or valid for a read; `out` is NULL or valid for a write.
///
/// # Errors
/// `ZEROCAM_ERROR_BAD_FD` for a closed fd, a file that is not a dma-buf or
/// an unshrinkable memfd, or one shorter than `offset + length`;
/// `ZEROCAM_ERROR_INVALID_ARGUMENT` for a `length` of 0 or a layout that
/// needs more than `length` bytes (nothing is imported or cached then).
#[no_mangle]
pub unsafe extern "C" fn zerocam_import_cache_get_or_import(
    cache: *mut zerocam_import_cache,
    fd: c_int,
    offset: usize,
    length: usize,
    layout: *const zerocam_image_layout,
    out: *mut *mut zerocam_tensor,
) -> zerocam_status {
    call("zerocam_import_cache_get_or_import", || {
        let out = Out::new(out, "out")?;
        let layout = if layout.is_null() {
            None
        } else {
            // SAFETY: not NULL; the caller's promise for `layout`.
            Some(unsafe { read(layout, "layout") }?)
        };
        if length == 0 {
            return Err(CapiError::InvalidArgument(
                "length 0: an import spans at least one byte".into(),
            ));
        }
        let end = offset.checked_add(length).ok_or_else(|| {
            CapiError::InvalidArgument(format!("offset {offset} + length {length} overflows"))
        })?;
        let image = match layout {
            Some(l) => {
                let image = image_layout(l)?;
                let need = image.size_bytes(1)?;
                if need > length {
                    return Err(CapiError::InvalidArgument(format!(
                        "layout {}x{} {} needs {need} bytes, more than length {length}",
                        l.width,
                        l.height,
                        image.format.name()
                    )));
                }
                image.with_start_offset(offset)
            }
            // Plain bytes: one row of `length` grey samples.
            None => ImageLayout::new(length, 1, ::zerocam_tensor::PixelFormat::Grey)
                .with_start_offset(offset),
        };
        let (file, size) = fd_stat(fd)?;
        let size = usize::try_from(size).unwrap_or(usize::MAX);
        if size != 0 && end > size {
            return Err(CapiError::FdTooSmall { fd, size, end });
        }
        let key = DmaBufKey::new(file, offset);
        // A miss imports the whole file (what `st_size` says; `end` where a
        // dma-buf reports none), so a later lookup of this buffer with
        // another length or layout finds all of it.
        let import = || -> Result<Tensor<u8>, CapiError> {
            let dup = dup_fd_number(fd).map_err(|e| caller_fd(e, fd))?;
            Tensor::from_fd(dup, &[size.max(end)], None).map_err(|e| caller_fd(e, fd))
        };
        let tensor = with_cache(cache, |c| c.get_image(key, image, import))?;
        let h = new_handle(TensorDyn::from(tensor))?;
        // SAFETY: the caller's promise for `out`.
        unsafe { out.write(h) };
        Ok(())
    })
}

/// `l` as an [`ImageLayout`].
fn image_layout(l: zerocam_image_layout) -> Result<ImageLayout, CapiError> {
    let format = format_of(l.format)?
        .ok_or_else(|| CapiError::InvalidArgument("layout format ZEROCAM_FORMAT_NONE".into()))?;
    let mut image = ImageLayout::new(l.width, l.height, format);
    if l.row_stride != 0 {
        image = image.with_row_stride(l.row_stride);
    }
    if l.plane_offset != 0 {
        image = image.with_plane_offset(l.plane_offset);
    }
    Ok(image)
}

/// The cache's counters.
///
/// # Safety
/// `out` is NULL or valid for a write of a `zerocam_cache_stats`.
#[no_mangle]
pub unsafe extern "C" fn zerocam_import_cache_get_stats(
    cache: *const zerocam_import_cache,
    out: *mut zerocam_cache_stats,
) -> zerocam_status {
    call("zerocam_import_cache_get_stats", || {
        let out = Out::new(out, "out")?;
        let s = with_cache(cache, |c| Ok(c.stats()))?;
        let stats = zerocam_cache_stats {
            hits: s.hits,
            misses: s.misses,
            evictions: s.evictions,
            invalidated: s.invalidated,
            live: s.live,
        };
        // SAFETY: the caller's promise for `out`.
        unsafe { out.write(stats) };
        Ok(())
    })
}

/// Drops every entry (when the buffers go away: a pool's end, a stream's
/// stop). Tensors handed out live on.
///
/// # Safety
/// None beyond a handle's.
#[no_mangle]
pub unsafe extern "C" fn zerocam_import_cache_clear(
    cache: *mut zerocam_import_cache,
) -> zerocam_status {
    call("zerocam_import_cache_clear", || {
        with_cache(cache, |c| {
            c.invalidate();
            Ok(())
        })
    })
}

/// Adds a reference to `cache`.
///
/// # Safety
/// None beyond a handle's.
#[no_mangle]
pub unsafe extern "C" fn zerocam_import_cache_ref(
    cache: *mut zerocam_import_cache,
) -> zerocam_status {
    call("zerocam_import_cache_ref", || {
        table::add_ref(id(cache), Kind::Cache, "cache")
    })
}

/// Drops a reference to `cache`; after the last one the cache and its
/// entries go (tensors handed out live on).
///
/// # Safety
/// None beyond a handle's.
#[no_mangle]
pub unsafe extern "C" fn zerocam_import_cache_unref(
    cache: *mut zerocam_import_cache,
) -> zerocam_status {
    call("zerocam_import_cache_unref", || {
        drop(table::release(id(cache), Kind::Cache, "cache")?);
        Ok(())
    })
}
