//! The test's own account of where a tensor's elements lie, derived from the
//! public API only — `placement()` (root planes, batch stride, frame, region),
//! `shape()`, `strides()`, `plane_offset()` — and a format table written here,
//! not from the crate's geometry code.

use std::collections::BTreeSet;

use zerocam_tensor::{Element, ImagePlacement, PixelFormat, Region, Tensor};

/// An element's place: the index of its buffer in the tensor's buffer list
/// (0, or 1 for the chroma of a two-buffer image) and its byte offset there.
pub type Place = (usize, usize);

/// More elements than this is a failure: every buffer here is at most
/// [`super::CAP`] bytes, and elements do not alias.
const MAX_ELEMENTS: usize = 1 << 17;

/// Samples per pixel of the packed plane; 1 for each plane of a planar format.
pub fn samples_per_pixel(f: PixelFormat) -> Option<usize> {
    Some(match f {
        PixelFormat::Rgb | PixelFormat::Bgr => 3,
        PixelFormat::Rgba | PixelFormat::Bgra => 4,
        PixelFormat::Yuyv | PixelFormat::Uyvy => 2,
        PixelFormat::Grey | PixelFormat::Nv12 | PixelFormat::Nv16 | PixelFormat::PlanarRgb => 1,
        _ => return None,
    })
}

/// Planes of the format.
pub fn planes(f: PixelFormat) -> usize {
    match f {
        PixelFormat::Nv12 | PixelFormat::Nv16 => 2,
        PixelFormat::PlanarRgb => 3,
        _ => 1,
    }
}

/// `(horizontal, vertical)` chroma subsampling: the alignment of a region.
pub fn subsampling(f: PixelFormat) -> (usize, usize) {
    match f {
        PixelFormat::Nv12 => (2, 2),
        PixelFormat::Nv16 | PixelFormat::Yuyv | PixelFormat::Uyvy => (2, 1),
        _ => (1, 1),
    }
}

/// Rows of plane `i` covering pixel rows `0..y`: NV12's chroma has one row
/// per two pixel rows.
pub fn plane_rows(f: PixelFormat, i: usize, y: usize) -> usize {
    if f == PixelFormat::Nv12 && i == 1 {
        y / 2
    } else {
        y
    }
}

/// Samples of plane `i` covering pixel columns `0..x` (the interleaved CbCr
/// row of NV12/NV16 has one sample per pixel).
pub fn plane_samples(f: PixelFormat, x: usize) -> Option<usize> {
    x.checked_mul(samples_per_pixel(f)?)
}

/// The shape an image of `format`, `width`x`height`, `frames` frames has
/// (`None` if it overflows).
pub fn image_shape(
    format: PixelFormat,
    width: usize,
    height: usize,
    frames: usize,
) -> Option<Vec<usize>> {
    let mut shape = if frames > 1 { vec![frames] } else { vec![] };
    match format {
        PixelFormat::Nv12 => shape.extend([height.checked_add(height / 2)?, width]),
        PixelFormat::Nv16 => shape.extend([height.checked_mul(2)?, width]),
        PixelFormat::PlanarRgb => shape.extend([3, height, width]),
        f => shape.extend([height, width, samples_per_pixel(f)?]),
    }
    Some(shape)
}

/// The elements of plane `i` of an image placed as `p`, with `elem`-byte samples.
pub fn image_plane_places(p: &ImagePlacement, i: usize, elem: usize) -> Result<Vec<Place>, String> {
    let f = p.root.format;
    let plane = p
        .root
        .planes()
        .get(i)
        .ok_or_else(|| format!("the root has no plane {i}: {p:?}"))?;
    let Region {
        x,
        y,
        width,
        height,
    } = p.region;
    let rows = plane_rows(f, i, height);
    let samples = plane_samples(f, width).ok_or("row samples overflow")?;
    let first_row = plane_rows(f, i, y);
    let first_sample = plane_samples(f, x).ok_or("first sample overflows")?;
    let overflow = || format!("plane {i} of {p:?} overflows usize");
    let first = (|| {
        plane
            .offset
            .checked_add(p.frame.checked_mul(p.root.batch_stride)?)?
            .checked_add(first_row.checked_mul(plane.stride)?)?
            .checked_add(first_sample.checked_mul(elem)?)
    })()
    .ok_or_else(overflow)?;
    let count = (|| rows.checked_mul(samples)?.checked_mul(p.frames))().ok_or_else(overflow)?;
    if count > MAX_ELEMENTS {
        return Err(format!("plane {i} of {p:?} claims {count} elements"));
    }
    let mut out = Vec::with_capacity(count);
    for k in 0..p.frames {
        for r in 0..rows {
            for s in 0..samples {
                let at = (|| {
                    first
                        .checked_add(k.checked_mul(p.root.batch_stride)?)?
                        .checked_add(r.checked_mul(plane.stride)?)?
                        .checked_add(s.checked_mul(elem)?)
                })()
                .ok_or_else(overflow)?;
                out.push((plane.buffer, at));
            }
        }
    }
    Ok(out)
}

/// The elements of a strided array: `offset + Σ index·stride`, in buffer 0.
pub fn strided_places(
    offset: usize,
    shape: &[usize],
    strides: &[usize],
) -> Result<Vec<Place>, String> {
    if shape.len() != strides.len() {
        return Err(format!(
            "shape {shape:?} and strides {strides:?} differ in rank"
        ));
    }
    let count = shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .filter(|&n| n <= MAX_ELEMENTS)
        .ok_or_else(|| format!("shape {shape:?} claims too many elements"))?;
    let mut out = Vec::with_capacity(count);
    let mut index = vec![0usize; shape.len()];
    for _ in 0..count {
        let at = index
            .iter()
            .zip(strides)
            .try_fold(offset, |acc, (&i, &s)| acc.checked_add(i.checked_mul(s)?))
            .ok_or_else(|| format!("offset {offset} strides {strides:?} overflow"))?;
        out.push((0, at));
        // The next index, last dimension fastest.
        for (i, &d) in index.iter_mut().zip(shape).rev() {
            *i += 1;
            if *i < d {
                break;
            }
            *i = 0;
        }
    }
    Ok(out)
}

/// Every element of `t`, derived from its public geometry, after checking
/// that its shape, strides, plane offset and placement agree with each other.
pub fn places<T: Element>(t: &Tensor<T>) -> Result<Vec<Place>, String> {
    let e = size_of::<T>();
    let Some(p) = t.placement() else {
        let strides = t
            .strides()
            .ok_or_else(|| format!("an array without strides: {t:?}"))?;
        return strided_places(t.plane_offset(), t.shape(), &strides);
    };
    let f = p.root.format;
    let expected = image_shape(f, p.region.width, p.region.height, p.frames);
    if Some(t.shape()) != expected.as_deref() {
        return Err(format!(
            "shape {:?}, expected {expected:?} for {p:?}",
            t.shape()
        ));
    }
    if (t.format(), t.width(), t.height()) != (Some(f), Some(p.region.width), Some(p.region.height))
    {
        return Err(format!("format/width/height of {t:?} disagree with {p:?}"));
    }
    if t.plane_count() != planes(f) || p.root.planes().len() != planes(f) {
        return Err(format!(
            "{t:?} has {} planes, {f} has {}",
            t.plane_count(),
            planes(f)
        ));
    }
    let mut all = Vec::new();
    for i in 0..planes(f) {
        all.extend(image_plane_places(&p, i, e)?);
    }
    if all.len() != t.len() {
        return Err(format!(
            "{} elements placed, shape {:?} has {}",
            all.len(),
            t.shape(),
            t.len()
        ));
    }
    if all.first().map(|&(_, o)| o) != Some(t.plane_offset()) {
        return Err(format!(
            "plane_offset {} is not the first element {:?}",
            t.plane_offset(),
            all.first()
        ));
    }
    if let Some(strides) = t.strides() {
        // Uniform strides must describe exactly the placed elements.
        let by_strides: BTreeSet<Place> = strided_places(t.plane_offset(), t.shape(), &strides)?
            .into_iter()
            .collect();
        let placed: BTreeSet<Place> = all.iter().copied().collect();
        if by_strides != placed {
            return Err(format!(
                "strides {strides:?} of {t:?} address other bytes than {p:?}"
            ));
        }
    }
    Ok(all)
}
