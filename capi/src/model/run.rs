//! Running a preprocessor: a frame (all of it or a crop, with where it
//! landed), an image tensor, or a batch of frames into a model input.

use ::zerocam_tensor::{ColorSpec, Region, Tensor};
use zerocam_preprocess::{FitPlacement, PreprocessError, Preprocessor, SourceImage, SourceRect};

use super::zerocam_preprocessor;
use crate::capture::{with_frame, zerocam_frame};
use crate::ffi::{call, id, read, slice, Out};
use crate::handle::{self as table, Kind, Object};
use crate::status::{zerocam_status, CapiError};
use crate::tensor::{new_handle, tensor_of, zerocam_tensor};

/// A rectangle of pixels.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct zerocam_region {
    /// First column.
    pub x: usize,
    /// First row.
    pub y: usize,
    /// Columns.
    pub width: usize,
    /// Rows.
    pub height: usize,
}

/// Where a frame landed in a model input: the frame rectangle that was
/// sampled and the model pixels it fills. A point `(x, y)` of the model's
/// output, in model pixels, is at
/// `source_x + (x - target_x) * source_width / target_width` (and the same
/// for y) in the frame (`zerocam_placement_to_frame`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct zerocam_placement {
    /// The sampled rectangle's left edge, frame pixels.
    pub source_x: f64,
    /// Its top edge.
    pub source_y: f64,
    /// Its width.
    pub source_width: f64,
    /// Its height.
    pub source_height: f64,
    /// The model pixels it fills: first column.
    pub target_x: usize,
    /// First row.
    pub target_y: usize,
    /// Columns.
    pub target_width: usize,
    /// Rows.
    pub target_height: usize,
    /// The model input's width.
    pub model_width: usize,
    /// The model input's height.
    pub model_height: usize,
}

impl From<&FitPlacement> for zerocam_placement {
    fn from(p: &FitPlacement) -> zerocam_placement {
        zerocam_placement {
            source_x: p.source.x,
            source_y: p.source.y,
            source_width: p.source.width,
            source_height: p.source.height,
            target_x: p.target.x,
            target_y: p.target.y,
            target_width: p.target.width,
            target_height: p.target.height,
            model_width: p.model.0,
            model_height: p.model.1,
        }
    }
}

/// `f` on the preprocessor behind `p`, locked.
fn with_preprocessor<R>(
    p: *mut zerocam_preprocessor,
    f: impl FnOnce(&mut Preprocessor) -> Result<R, PreprocessError>,
) -> Result<R, CapiError> {
    let object = table::get(id(p), Kind::Preprocessor, "preprocessor")?;
    let Object::Preprocessor(pre) = &*object else {
        return Err(CapiError::Panic("the table's kind check failed".into()));
    };
    let mut pre = table::lock(pre, "preprocessor")?;
    f(&mut pre).map_err(|e| match e {
        PreprocessError::RingFull { depth } => CapiError::Busy(format!(
            "all {depth} model inputs of the preprocessor's ring are held: unref one \
             (or make the preprocessor with zerocam_preprocessor_new_with_ring_depth)"
        )),
        e => e.into(),
    })
}

/// Runs the preprocessor behind `p` on `sources`: the model input and where
/// the first source landed.
fn run(
    p: *mut zerocam_preprocessor,
    sources: &[SourceImage<'_>],
) -> Result<(*mut zerocam_tensor, FitPlacement), CapiError> {
    let done = with_preprocessor(p, |pre| pre.run_batch(sources, |_, _| {}))?;
    Ok((new_handle(done.tensor)?, done.placement))
}

/// One frame's tensor and colour spec.
fn frame_image(frame: *const zerocam_frame) -> Result<(Tensor<u8>, ColorSpec), CapiError> {
    with_frame(frame, |f| Ok((f.tensor().clone(), f.color_spec())))
}

/// The batch of the preprocessor behind `p`.
fn batch_of(p: *mut zerocam_preprocessor) -> Result<usize, CapiError> {
    let object = table::get(id(p), Kind::Preprocessor, "preprocessor")?;
    let Object::Preprocessor(pre) = &*object else {
        return Err(CapiError::Panic("the table's kind check failed".into()));
    };
    let batch = table::lock(pre, "preprocessor")?.input().batch_size();
    Ok(batch)
}

/// `crop` checked against a `width`x`height` frame.
fn crop_in(crop: Option<Region>, width: usize, height: usize) -> Result<Option<Region>, CapiError> {
    match crop {
        Some(r) if !r.fits(width, height) => Err(CapiError::OutOfBounds(format!(
            "crop {}x{} at ({}, {}) is past the {width}x{height} frame",
            r.width, r.height, r.x, r.y
        ))),
        Some(r) if r.width == 0 || r.height == 0 => Err(CapiError::InvalidArgument(format!(
            "crop {}x{} at ({}, {}) is empty",
            r.width, r.height, r.x, r.y
        ))),
        other => Ok(other),
    }
}

/// The crop region at `crop` (NULL: none).
///
/// # Safety
/// `crop` is NULL or valid for a read.
unsafe fn crop_of(crop: *const zerocam_region) -> Result<Option<Region>, CapiError> {
    if crop.is_null() {
        return Ok(None);
    }
    // SAFETY: not NULL; this fn's contract.
    let r = unsafe { read(crop, "crop") }?;
    Ok(Some(Region::new(r.x, r.y, r.width, r.height)))
}

/// Converts `frame` (read in its own colour space) into the model's input
/// tensor: a new handle on the next free tensor of the preprocessor's ring,
/// held until unref'd (the ring reuses it after).
///
/// # Safety
/// `out` is NULL or valid for a write.
///
/// # Errors
/// `ZEROCAM_ERROR_BUSY` when every ring tensor is still held;
/// `ZEROCAM_ERROR_UNSUPPORTED` for a frame format neither device takes.
#[no_mangle]
pub unsafe extern "C" fn zerocam_preprocessor_run(
    preprocessor: *mut zerocam_preprocessor,
    frame: *const zerocam_frame,
    out: *mut *mut zerocam_tensor,
) -> zerocam_status {
    call("zerocam_preprocessor_run", || {
        let out = Out::new(out, "out")?;
        let (image, color) = frame_image(frame)?;
        let (result, _) = run(preprocessor, &[SourceImage::new(&image).with_color(color)])?;
        // SAFETY: the caller's promise for `out`.
        unsafe { out.write(result) };
        Ok(())
    })
}

/// As `zerocam_preprocessor_run`, from a `uint8` image tensor (YUV read as
/// BT.601 limited range).
///
/// # Safety
/// `out` is NULL or valid for a write.
///
/// # Errors
/// As `zerocam_preprocessor_run`; `ZEROCAM_ERROR_INVALID_ARGUMENT` for a
/// tensor that is not a `uint8` image.
#[no_mangle]
pub unsafe extern "C" fn zerocam_preprocessor_run_tensor(
    preprocessor: *mut zerocam_preprocessor,
    image: *const zerocam_tensor,
    out: *mut *mut zerocam_tensor,
) -> zerocam_status {
    call("zerocam_preprocessor_run_tensor", || {
        let out = Out::new(out, "out")?;
        let t = tensor_of(image, "image")?;
        if t.format().is_none() {
            return Err(CapiError::InvalidArgument(format!(
                "image: a {} tensor of shape {:?} is not an image (no pixel format)",
                t.dtype().name(),
                t.shape()
            )));
        }
        let image: Tensor<u8> = t.try_into()?;
        let (result, _) = run(preprocessor, &[SourceImage::new(&image)])?;
        // SAFETY: the caller's promise for `out`.
        unsafe { out.write(result) };
        Ok(())
    })
}

/// As `zerocam_preprocessor_run`, converting only `crop` of the frame (in
/// its pixels; NULL for all of it), and telling where it landed in the
/// model input (`placement` may be NULL): what maps a detection back to
/// frame pixels.
///
/// # Safety
/// `crop` is NULL or valid for a read; `out` is NULL or valid for a write;
/// `placement` is NULL or valid for a write.
///
/// # Errors
/// As `zerocam_preprocessor_run`; `ZEROCAM_ERROR_OUT_OF_BOUNDS` for a crop
/// past the frame.
#[no_mangle]
pub unsafe extern "C" fn zerocam_preprocessor_run_crop(
    preprocessor: *mut zerocam_preprocessor,
    frame: *const zerocam_frame,
    crop: *const zerocam_region,
    out: *mut *mut zerocam_tensor,
    placement: *mut zerocam_placement,
) -> zerocam_status {
    call("zerocam_preprocessor_run_crop", || {
        let out = Out::new(out, "out")?;
        // SAFETY: the caller's promise for `crop`.
        let crop = unsafe { crop_of(crop) }?;
        let (image, color) = frame_image(frame)?;
        let size = (image.width().unwrap_or(0), image.height().unwrap_or(0));
        let crop = crop_in(crop, size.0, size.1)?;
        let source = SourceImage::new(&image).with_crop(crop).with_color(color);
        let (result, placed) = run(preprocessor, &[source])?;
        if let Ok(placement) = Out::new(placement, "placement") {
            // SAFETY: not NULL; the caller's promise for `placement`.
            unsafe { placement.write(zerocam_placement::from(&placed)) };
        }
        // SAFETY: the caller's promise for `out`.
        unsafe { out.write(result) };
        Ok(())
    })
}

/// Converts `count` frames (the model input's batch: one a camera) into
/// the batch elements of one model input tensor, each read in its own
/// frame's colour space: a new handle, as `zerocam_preprocessor_run`.
///
/// # Safety
/// `frames` is NULL or valid for reads of `count` handles; `out` is NULL or
/// valid for a write.
///
/// # Errors
/// `ZEROCAM_ERROR_INVALID_ARGUMENT` when `count` is not the input's batch;
/// as `zerocam_preprocessor_run` otherwise.
#[no_mangle]
pub unsafe extern "C" fn zerocam_preprocessor_run_batch(
    preprocessor: *mut zerocam_preprocessor,
    frames: *const *mut zerocam_frame,
    count: usize,
    out: *mut *mut zerocam_tensor,
) -> zerocam_status {
    call("zerocam_preprocessor_run_batch", || {
        let out = Out::new(out, "out")?;
        // The count is checked against the batch before `frames` is read.
        let batch = batch_of(preprocessor)?;
        if count != batch {
            return Err(CapiError::InvalidArgument(format!(
                "count {count}: the model input's batch is {batch}"
            )));
        }
        // SAFETY: the caller's promise for `frames`, for this count.
        let handles = unsafe { slice(frames, count, "frames") }?;
        let images = handles
            .iter()
            .map(|&f| frame_image(f))
            .collect::<Result<Vec<_>, _>>()?;
        let sources: Vec<SourceImage<'_>> = images
            .iter()
            .map(|(t, color)| SourceImage::new(t).with_color(*color))
            .collect();
        let (result, _) = run(preprocessor, &sources)?;
        // SAFETY: the caller's promise for `out`.
        unsafe { out.write(result) };
        Ok(())
    })
}

/// As `zerocam_preprocessor_run_crop`, writing into the caller's `dst`
/// instead of the ring: a tensor of the model input's shape and dtype, such
/// as `zerocam_tensor_wrap` of a model runtime's input buffer, so the model
/// reads it without a copy. The ring is not used; `dst` stays the caller's.
///
/// # Safety
/// `crop` is NULL or valid for a read; `placement` is NULL or valid for a
/// write.
///
/// # Errors
/// `ZEROCAM_ERROR_INVALID_ARGUMENT` for a `dst` of another shape or dtype
/// (both named in `zerocam_last_error_message`), or a batched model input;
/// as `zerocam_preprocessor_run_crop` otherwise.
#[no_mangle]
pub unsafe extern "C" fn zerocam_preprocessor_run_into(
    preprocessor: *mut zerocam_preprocessor,
    frame: *const zerocam_frame,
    crop: *const zerocam_region,
    dst: *const zerocam_tensor,
    placement: *mut zerocam_placement,
) -> zerocam_status {
    call("zerocam_preprocessor_run_into", || {
        // SAFETY: the caller's promise for `crop`.
        let crop = unsafe { crop_of(crop) }?;
        let dst = tensor_of(dst, "dst")?;
        let (image, color) = frame_image(frame)?;
        let size = (image.width().unwrap_or(0), image.height().unwrap_or(0));
        let crop = crop_in(crop, size.0, size.1)?;
        let (placed, _) =
            with_preprocessor(preprocessor, |pre| pre.run_into(&image, crop, color, &dst))?;
        if let Ok(placement) = Out::new(placement, "placement") {
            // SAFETY: not NULL; the caller's promise for `placement`.
            unsafe { placement.write(zerocam_placement::from(&placed)) };
        }
        Ok(())
    })
}

/// Splits the CPU path's rows of each image over `threads` threads (1 to 8,
/// clamped; a pool made now, the old one ended); the output is the same
/// bits on any number. A new preprocessor uses the cores the process may
/// use, at most 8.
///
/// # Errors
/// `ZEROCAM_ERROR_INVALID_ARGUMENT` for 0.
#[no_mangle]
pub extern "C" fn zerocam_preprocessor_set_threads(
    preprocessor: *mut zerocam_preprocessor,
    threads: usize,
) -> zerocam_status {
    call("zerocam_preprocessor_set_threads", || {
        if threads == 0 {
            return Err(CapiError::InvalidArgument(
                "threads 0: give at least 1".into(),
            ));
        }
        with_preprocessor(preprocessor, |pre| {
            pre.set_threads(threads);
            Ok(())
        })
    })
}

/// The threads the CPU path splits each image's rows over.
///
/// # Safety
/// `out` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zerocam_preprocessor_threads(
    preprocessor: *mut zerocam_preprocessor,
    out: *mut usize,
) -> zerocam_status {
    call("zerocam_preprocessor_threads", || {
        let out = Out::new(out, "out")?;
        let n = with_preprocessor(preprocessor, |pre| Ok(pre.threads()))?;
        // SAFETY: the caller's promise for `out`.
        unsafe { out.write(n) };
        Ok(())
    })
}

/// The frame pixel where model pixel (`x`, `y`) came from, by `placement`
/// (from `zerocam_preprocessor_run_crop`).
///
/// # Safety
/// `placement` is NULL or valid for a read; `frame_x` and `frame_y` are NULL
/// or valid for a write.
///
/// # Errors
/// `ZEROCAM_ERROR_INVALID_ARGUMENT` for a placement with an empty target.
#[no_mangle]
pub unsafe extern "C" fn zerocam_placement_to_frame(
    placement: *const zerocam_placement,
    x: f64,
    y: f64,
    frame_x: *mut f64,
    frame_y: *mut f64,
) -> zerocam_status {
    call("zerocam_placement_to_frame", || {
        let (out_x, out_y) = (Out::new(frame_x, "frame_x")?, Out::new(frame_y, "frame_y")?);
        // SAFETY: the caller's promise for `placement`.
        let p = unsafe { read(placement, "placement") }?;
        if p.target_width == 0 || p.target_height == 0 {
            return Err(CapiError::InvalidArgument(format!(
                "placement target {}x{} is empty",
                p.target_width, p.target_height
            )));
        }
        let fit = FitPlacement {
            source: SourceRect {
                x: p.source_x,
                y: p.source_y,
                width: p.source_width,
                height: p.source_height,
            },
            target: Region::new(p.target_x, p.target_y, p.target_width, p.target_height),
            model: (p.model_width, p.model_height),
        };
        let (fx, fy) = fit.to_frame(x, y);
        // SAFETY: the caller's promise for `frame_x` and `frame_y`.
        unsafe {
            out_x.write(fx);
            out_y.write(fy);
        }
        Ok(())
    })
}
