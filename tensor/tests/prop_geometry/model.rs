//! What each operation should answer, from the documented rules: `Some` when
//! it must succeed, `None` when it must be an error. Written here from the docs
//! (`ImageLayout`, `Tensor::view`/`batch`/`plane`/`with_image`/`from_planes`),
//! not from the crate's code.

use zerocam_tensor::{Element, ImageLayout, PixelFormat, Region, Tensor, TensorMemory};

use super::oracle::{plane_rows, plane_samples, planes, subsampling};

/// A layout's needs in bytes: `end`, one past its last addressed byte (a
/// buffer needs no more); `size`, what `size_bytes` reports (every frame whole,
/// start offset included). `None` when the layout is invalid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayoutNeeds {
    pub end: usize,
    pub size: usize,
}

/// The needs of `l` for `elem`-byte samples laid `base` bytes into a buffer.
pub fn layout_needs(l: &ImageLayout, elem: usize, base: usize) -> Option<LayoutNeeds> {
    let f = l.format;
    let (hsub, vsub) = subsampling(f);
    if l.width == 0
        || l.height == 0
        || l.batch == 0
        || !l.width.is_multiple_of(hsub)
        || !l.height.is_multiple_of(vsub)
    {
        return None;
    }
    let row_bytes = plane_samples(f, l.width)?.checked_mul(elem)?;
    let stride = l.row_stride.unwrap_or(row_bytes);
    if stride < row_bytes || !stride.is_multiple_of(elem) {
        return None;
    }
    let start = base.checked_add(l.start_offset)?;
    if start % elem != 0 {
        return None;
    }
    let n = planes(f);
    let first_plane = stride.checked_mul(l.height)?;
    // A single plane has no second plane to place: its plane offset is unused.
    let step = if n == 1 {
        0
    } else {
        l.plane_offset.unwrap_or(first_plane)
    };
    if n > 1 && (step < first_plane || step % elem != 0) {
        return None;
    }
    let last_rows = plane_rows(f, n - 1, l.height);
    let frame = step
        .checked_mul(n - 1)?
        .checked_add(stride.checked_mul(last_rows)?)?;
    let size = frame.checked_mul(l.batch)?.checked_add(start)?;
    // Below `size`: no overflow.
    let end = start + (l.batch - 1) * frame + step * (n - 1) + (last_rows - 1) * stride + row_bytes;
    Some(LayoutNeeds { end, size })
}

/// Whether `t` is a C-contiguous array (what `with_image` accepts).
pub fn is_contiguous<T: Element>(t: &Tensor<T>) -> bool {
    let Some(strides) = t.strides().filter(|_| t.placement().is_none()) else {
        return false;
    };
    let mut expect = size_of::<T>();
    for (&s, &d) in strides.iter().zip(t.shape()).rev() {
        if s != expect {
            return false;
        }
        expect = expect.saturating_mul(d);
    }
    true
}

/// The frame a region is cut from: an image's pixels, an array's dims 0 and 1.
pub fn frame_size<T: Element>(t: &Tensor<T>) -> Option<(usize, usize)> {
    match (t.width(), t.height(), t.shape()) {
        (Some(w), Some(h), _) => Some((w, h)),
        (None, None, [h, w, ..]) => Some((*w, *h)),
        _ => None,
    }
}

/// Whether `view(r)` must succeed.
pub fn view_ok<T: Element>(t: &Tensor<T>, r: Region) -> bool {
    let Some((w, h)) = frame_size(t) else {
        return false;
    };
    let (hsub, vsub) = t.format().map_or((1, 1), subsampling);
    r.width > 0
        && r.height > 0
        && r.x.checked_add(r.width).is_some_and(|e| e <= w)
        && r.y.checked_add(r.height).is_some_and(|e| e <= h)
        && r.x.is_multiple_of(hsub)
        && r.width.is_multiple_of(hsub)
        && r.y.is_multiple_of(vsub)
        && r.height.is_multiple_of(vsub)
}

/// Whether `batch(n)` must succeed.
pub fn batch_ok<T: Element>(t: &Tensor<T>, n: usize) -> bool {
    match t.placement() {
        Some(p) => n < p.frames,
        None => n < t.shape()[0],
    }
}

/// Whether `plane(i)` must succeed.
pub fn plane_ok<T: Element>(t: &Tensor<T>, i: usize) -> bool {
    match t.format() {
        Some(f) => i < planes(f),
        None => i == 0,
    }
}

/// Whether `with_image(l)` must succeed, and the needs of the image.
pub fn with_image_ok<T: Element>(t: &Tensor<T>, l: &ImageLayout) -> Option<LayoutNeeds> {
    if !is_contiguous(t) {
        return None;
    }
    let e = size_of::<T>();
    let available = t.plane_offset() + t.len() * e;
    layout_needs(l, e, t.plane_offset()).filter(|n| n.end <= available)
}

/// Whether `from_fd(clone_fd(), dims)` must succeed, given the file's length.
pub fn reimport_ok<T: Element>(t: &Tensor<T>, buffers: usize, dims: &[usize], len: usize) -> bool {
    t.memory() == TensorMemory::Shm
        && buffers == 1
        && !dims.is_empty()
        && !dims.contains(&0)
        && dims
            .iter()
            .try_fold(size_of::<T>(), |n, &d| n.checked_mul(d))
            .is_some_and(|bytes| bytes <= len)
}

/// Whether `from_planes(luma, chroma, format)` must succeed; `one_buffer`
/// when both are views of one allocation or import.
pub fn from_planes_ok<T: Element>(
    format: PixelFormat,
    luma: &Tensor<T>,
    chroma: &Tensor<T>,
    one_buffer: bool,
) -> bool {
    let e = size_of::<T>();
    let two_d = |t: &Tensor<T>| match (t.placement(), t.shape(), t.strides().as_deref()) {
        (None, &[rows, samples], Some(&[stride, inner])) if inner == e => {
            Some((rows, samples, stride, t.plane_offset()))
        }
        _ => None,
    };
    let (Some((h, w, y_stride, y_off)), Some((ch, cw, _, c_off))) = (two_d(luma), two_d(chroma))
    else {
        return false;
    };
    if !matches!(format, PixelFormat::Nv12 | PixelFormat::Nv16) {
        return false;
    }
    let (hsub, vsub) = subsampling(format);
    let luma_end = y_off + (h - 1) * y_stride + w * e;
    w % hsub == 0
        && h % vsub == 0
        && [ch, cw] == [plane_rows(format, 1, h), w]
        && (!one_buffer || c_off >= luma_end)
}
