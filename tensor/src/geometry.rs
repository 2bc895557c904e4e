//! Where a tensor's elements lie in its buffer(s): the byte arithmetic behind
//! shapes, strides, views, batches and planes. Pure logic, no memory access.

use smallvec::{smallvec, SmallVec};

use crate::format::ResolvedLayout;
use crate::placement::RootLayout;
use crate::{Error, ImageLayout, PixelFormat, Region, Result};

/// Dimensions or byte strides; inline up to rank 4 so views do not allocate.
pub(crate) type Dims = SmallVec<[usize; 4]>;

/// A strided array: element 0 at `offset` bytes, `strides` in bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ArrayGeom {
    pub offset: usize,
    pub shape: Dims,
    pub strides: Dims,
    pub elem: usize,
}

/// One plane of an image: which buffer, where, and how its rows lie (the
/// public [`PlanePlacement`], used as is).
pub(crate) use crate::placement::PlanePlacement as PlaneGeom;

/// An image (possibly batched) whose planes may sit in different buffers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ImageGeom {
    pub format: PixelFormat,
    pub width: usize,
    pub height: usize,
    pub batch: usize,
    pub batch_stride: usize,
    pub planes: [PlaneGeom; 3],
    pub elem: usize,
    /// The image this one was cut from (itself for an allocation or import).
    pub root: RootLayout,
    /// Where this image sits in `root`.
    pub origin: Origin,
}

/// A view's place in its root: batch element `frame`, top-left pixel `(x, y)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Origin {
    pub frame: usize,
    pub x: usize,
    pub y: usize,
}

/// The geometry of a tensor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Geometry {
    Array(ArrayGeom),
    Image(ImageGeom),
}

/// The byte range of buffer 0 a CPU map covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub start: usize,
    pub end: usize,
}

impl ArrayGeom {
    /// A C-contiguous array at `offset`; errors on empty or overflowing shapes.
    pub fn contiguous(shape: &[usize], elem: usize, offset: usize) -> Result<ArrayGeom> {
        if shape.is_empty() || shape.contains(&0) {
            return Err(Error::EmptyShape {
                shape: shape.to_vec(),
            });
        }
        let mut strides: Dims = smallvec![0; shape.len()];
        let mut acc = elem;
        for (s, &d) in strides.iter_mut().zip(shape).rev() {
            *s = acc;
            acc = acc.checked_mul(d).ok_or(Error::ShapeOverflow {
                shape: shape.to_vec(),
                elem_size: elem,
            })?;
        }
        acc.checked_add(offset).ok_or(Error::ShapeOverflow {
            shape: shape.to_vec(),
            elem_size: elem,
        })?;
        Ok(ArrayGeom {
            offset,
            shape: shape.into(),
            strides,
            elem,
        })
    }

    fn span(&self) -> Span {
        let extent: usize = self
            .shape
            .iter()
            .zip(&self.strides)
            .map(|(&d, &s)| (d - 1) * s)
            .sum();
        Span {
            start: self.offset,
            end: self.offset + extent + self.elem,
        }
    }

    fn view(&self, r: Region) -> Result<ArrayGeom> {
        if self.shape.len() < 2 {
            return Err(Error::NotTwoDimensional {
                shape: self.shape.to_vec(),
            });
        }
        check_region(r, self.shape[1], self.shape[0])?;
        let mut g = self.clone();
        g.offset += r.y * self.strides[0] + r.x * self.strides[1];
        g.shape[0] = r.height;
        g.shape[1] = r.width;
        Ok(g)
    }

    fn batch(&self, n: usize) -> Result<ArrayGeom> {
        let batch = self.shape[0];
        if n >= batch {
            return Err(Error::BatchIndexOutOfBounds { index: n, batch });
        }
        let mut g = self.clone();
        g.offset += n * self.strides[0];
        if g.shape.len() == 1 {
            g.shape[0] = 1;
        } else {
            g.shape.remove(0);
            g.strides.remove(0);
        }
        Ok(g)
    }
}

fn check_region(r: Region, width: usize, height: usize) -> Result<()> {
    if r.width == 0 || r.height == 0 {
        return Err(Error::EmptyRegion { region: r });
    }
    if !r.fits(width, height) {
        return Err(Error::RegionOutOfBounds {
            region: r,
            width,
            height,
        });
    }
    Ok(())
}

impl ImageGeom {
    /// The geometry of `layout` in buffer 0, for `elem`-byte samples.
    pub fn from_layout(layout: &ImageLayout, elem: usize) -> Result<ImageGeom> {
        let ResolvedLayout {
            row_stride,
            plane_step,
            frame_bytes,
        } = layout.resolve(elem)?;
        // Every offset below is at most this checked total: no sum can overflow.
        layout.size_bytes(elem)?;
        let mut planes = [PlaneGeom::default(); 3];
        for (i, p) in planes
            .iter_mut()
            .enumerate()
            .take(layout.format.plane_count())
        {
            *p = PlaneGeom {
                buffer: 0,
                offset: layout.start_offset + i * plane_step,
                stride: row_stride,
            };
        }
        Ok(ImageGeom::root(
            layout.format,
            (layout.width, layout.height),
            (layout.batch, frame_bytes),
            planes,
            elem,
        ))
    }

    /// A root image (not a view): `size` is `(width, height)`, `batch` is
    /// `(count, stride in bytes)`.
    pub fn root(
        format: PixelFormat,
        (width, height): (usize, usize),
        (batch, batch_stride): (usize, usize),
        planes: [PlaneGeom; 3],
        elem: usize,
    ) -> ImageGeom {
        ImageGeom {
            format,
            width,
            height,
            batch,
            batch_stride,
            planes,
            elem,
            root: RootLayout::new(format, (width, height), (batch, batch_stride), planes, elem),
            origin: Origin::default(),
        }
    }

    pub fn plane_count(&self) -> usize {
        self.format.plane_count()
    }

    fn planes(&self) -> &[PlaneGeom] {
        &self.planes[..self.plane_count()]
    }

    fn plane_rows(&self, i: usize) -> usize {
        self.format.plane_rows(i, self.height)
    }

    fn plane_row_bytes(&self, i: usize) -> usize {
        self.format.plane_row_samples(i, self.width) * self.elem
    }

    /// Buffers the planes live in (1 or 2).
    pub fn buffer_count(&self) -> usize {
        // Views and batch elements keep their root's planes' buffers.
        self.root.buffer_count()
    }

    /// `dims` with the batch's `lead` (its size or its stride) in front when batched.
    fn batched(&self, lead: usize, dims: &[usize]) -> Dims {
        let mut d: Dims = SmallVec::new();
        if self.batch > 1 {
            d.push(lead);
        }
        d.extend_from_slice(dims);
        d
    }

    pub fn shape(&self) -> Dims {
        let (w, h) = (self.width, self.height);
        match self.format {
            PixelFormat::Nv12 => self.batched(self.batch, &[h + h / 2, w]),
            PixelFormat::Nv16 => self.batched(self.batch, &[2 * h, w]),
            PixelFormat::PlanarRgb => self.batched(self.batch, &[3, h, w]),
            f => self.batched(self.batch, &[h, w, f.samples_per_pixel()]),
        }
    }

    /// Byte strides matching [`shape`](Self::shape), when the planes are evenly spaced
    /// in one buffer (always true of packed formats).
    pub fn strides(&self) -> Option<Dims> {
        let p = self.planes();
        let e = self.elem;
        let rs = p[0].stride;
        // Planes after the first must follow it in one buffer at one step.
        let step = match p.get(1) {
            Some(p1) => p1.offset.checked_sub(p[0].offset)?,
            None => 0,
        };
        let even = p.windows(2).all(|w| {
            w[1].buffer == w[0].buffer
                && w[1].stride == rs
                && w[1].offset.checked_sub(w[0].offset) == Some(step)
        });
        if !even {
            return None;
        }
        match self.format {
            PixelFormat::Nv12 | PixelFormat::Nv16 => {
                (step == rs * self.height).then(|| self.batched(self.batch_stride, &[rs, e]))
            }
            PixelFormat::PlanarRgb => Some(self.batched(self.batch_stride, &[step, rs, e])),
            f => Some(self.batched(self.batch_stride, &[rs, f.samples_per_pixel() * e, e])),
        }
    }

    /// The bytes of buffer 0 holding the image (all its planes in buffer 0).
    pub fn span(&self) -> Span {
        let end = (0..self.plane_count())
            .filter(|&i| self.planes[i].buffer == 0)
            .map(|i| {
                let p = self.planes[i];
                p.offset + (self.plane_rows(i) - 1) * p.stride + self.plane_row_bytes(i)
            })
            .max()
            .unwrap_or(self.planes[0].offset);
        Span {
            start: self.planes[0].offset,
            end: end + (self.batch - 1) * self.batch_stride,
        }
    }

    fn view(&self, r: Region) -> Result<ImageGeom> {
        check_region(r, self.width, self.height)?;
        let (hsub, vsub) = self.format.subsampling();
        if !r.x.is_multiple_of(hsub)
            || !r.width.is_multiple_of(hsub)
            || !r.y.is_multiple_of(vsub)
            || !r.height.is_multiple_of(vsub)
        {
            return Err(Error::RegionNotAligned {
                region: r,
                format: self.format,
                hsub,
                vsub,
            });
        }
        let mut g = self.clone();
        let sample_bytes = self.format.samples_per_pixel() * self.elem;
        for (i, p) in g.planes.iter_mut().enumerate().take(self.plane_count()) {
            let rows_skipped = self.format.plane_rows(i, r.y);
            p.offset += rows_skipped * p.stride + r.x * sample_bytes;
        }
        g.width = r.width;
        g.height = r.height;
        g.origin.x += r.x;
        g.origin.y += r.y;
        Ok(g)
    }

    fn batch(&self, n: usize) -> Result<ImageGeom> {
        if n >= self.batch {
            return Err(Error::BatchIndexOutOfBounds {
                index: n,
                batch: self.batch,
            });
        }
        let mut g = self.clone();
        for p in g.planes.iter_mut() {
            p.offset += n * self.batch_stride;
        }
        g.batch = 1;
        g.origin.frame += n;
        Ok(g)
    }

    /// Plane `i` as a 2-D array of samples, `[N?, rows, samples per row]`,
    /// and the buffer it lives in.
    pub fn plane(&self, i: usize) -> Result<(usize, ArrayGeom)> {
        if i >= self.plane_count() {
            return Err(Error::NoSuchPlane {
                index: i,
                planes: self.plane_count(),
            });
        }
        let p = self.planes[i];
        let rows = self.plane_rows(i);
        let samples = self.format.plane_row_samples(i, self.width);
        let mut shape: Dims = smallvec![rows, samples];
        let mut strides: Dims = smallvec![p.stride, self.elem];
        if self.batch > 1 {
            shape.insert(0, self.batch);
            strides.insert(0, self.batch_stride);
        }
        Ok((
            p.buffer,
            ArrayGeom {
                offset: p.offset,
                shape,
                strides,
                elem: self.elem,
            },
        ))
    }
}

impl Geometry {
    pub fn shape(&self) -> Dims {
        match self {
            Geometry::Array(a) => a.shape.clone(),
            Geometry::Image(i) => i.shape(),
        }
    }

    pub fn strides(&self) -> Option<Dims> {
        match self {
            Geometry::Array(a) => Some(a.strides.clone()),
            Geometry::Image(i) => i.strides(),
        }
    }

    pub fn span(&self) -> Span {
        match self {
            Geometry::Array(a) => a.span(),
            Geometry::Image(i) => i.span(),
        }
    }

    /// Byte offset of the first element in buffer 0.
    pub fn offset(&self) -> usize {
        self.span().start
    }

    pub fn buffer_count(&self) -> usize {
        match self {
            Geometry::Array(_) => 1,
            Geometry::Image(i) => i.buffer_count(),
        }
    }

    pub fn view(&self, r: Region) -> Result<Geometry> {
        Ok(match self {
            Geometry::Array(a) => Geometry::Array(a.view(r)?),
            Geometry::Image(i) => Geometry::Image(i.view(r)?),
        })
    }

    pub fn batch(&self, n: usize) -> Result<Geometry> {
        Ok(match self {
            Geometry::Array(a) => Geometry::Array(a.batch(n)?),
            Geometry::Image(i) => Geometry::Image(i.batch(n)?),
        })
    }

    pub fn image(&self) -> Option<&ImageGeom> {
        match self {
            Geometry::Image(i) => Some(i),
            Geometry::Array(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nv12(w: usize, h: usize) -> ImageGeom {
        ImageGeom::from_layout(&ImageLayout::new(w, h, PixelFormat::Nv12), 1).unwrap()
    }

    #[test]
    fn contiguous_strides_are_c_order() {
        let a = ArrayGeom::contiguous(&[2, 3, 4], 4, 0).unwrap();
        assert_eq!(a.strides.as_slice(), &[48, 16, 4]);
        assert_eq!(a.span(), Span { start: 0, end: 96 });
    }

    #[test]
    fn array_view_then_view_adds_offsets() {
        let a = ArrayGeom::contiguous(&[10, 10, 3], 1, 0).unwrap();
        let v = a.view(Region::new(2, 3, 5, 5)).unwrap();
        let vv = v.view(Region::new(1, 1, 2, 2)).unwrap();
        assert_eq!(vv.offset, (3 + 1) * 30 + (2 + 1) * 3);
        assert_eq!(vv.shape.as_slice(), &[2, 2, 3]);
    }

    #[test]
    fn array_batch_drops_the_leading_dim() {
        let a = ArrayGeom::contiguous(&[4, 2, 3], 2, 0).unwrap();
        let b = a.batch(3).unwrap();
        assert_eq!((b.offset, b.shape.as_slice()), (3 * 12, &[2usize, 3][..]));
        assert!(matches!(
            a.batch(4),
            Err(Error::BatchIndexOutOfBounds { index: 4, batch: 4 })
        ));
    }

    #[test]
    fn nv12_view_moves_both_planes() {
        let g = nv12(64, 32);
        let v = g.view(Region::new(8, 4, 16, 8)).unwrap();
        assert_eq!(v.planes[0].offset, 4 * 64 + 8);
        assert_eq!(v.planes[1].offset, 64 * 32 + 2 * 64 + 8);
        assert_eq!(v.shape().as_slice(), &[12, 16]);
        assert_eq!(
            v.strides(),
            None,
            "a view's chroma no longer follows its luma"
        );
        assert_eq!(g.strides().unwrap().as_slice(), &[64, 1]);
    }

    #[test]
    fn nv12_odd_region_is_refused() {
        let e = nv12(64, 32).view(Region::new(1, 0, 4, 4)).unwrap_err();
        assert!(
            matches!(
                e,
                Error::RegionNotAligned {
                    hsub: 2,
                    vsub: 2,
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn padded_rgb_span_stops_at_the_last_pixel() {
        let l = ImageLayout::new(4, 3, PixelFormat::Rgb).with_row_stride(16);
        let g = ImageGeom::from_layout(&l, 1).unwrap();
        assert_eq!(
            g.span(),
            Span {
                start: 0,
                end: 2 * 16 + 12
            }
        );
        assert_eq!(g.strides().unwrap().as_slice(), &[16, 3, 1]);
    }

    #[test]
    fn batched_planar_rgb() {
        let l = ImageLayout::new(4, 2, PixelFormat::PlanarRgb).with_batch(3);
        let g = ImageGeom::from_layout(&l, 4).unwrap();
        assert_eq!(g.shape().as_slice(), &[3, 3, 2, 4]);
        assert_eq!(g.strides().unwrap().as_slice(), &[96, 32, 16, 4]);
        let b = g.batch(2).unwrap();
        assert_eq!(b.planes[0].offset, 192);
        assert_eq!(b.shape().as_slice(), &[3, 2, 4]);
        assert!(g.batch(3).is_err());
    }

    #[test]
    fn unbatched_image_batch_zero_is_the_whole_image() {
        let g = nv12(8, 8);
        assert_eq!(g.batch(0).unwrap(), g);
        assert!(matches!(
            g.batch(1),
            Err(Error::BatchIndexOutOfBounds { index: 1, batch: 1 })
        ));
    }

    #[test]
    fn region_overflow_is_out_of_bounds_not_a_panic() {
        let g = nv12(8, 8);
        let e = g.view(Region::new(usize::MAX - 1, 0, 4, 2)).unwrap_err();
        assert!(matches!(e, Error::RegionOutOfBounds { .. }));
    }

    #[test]
    fn plane_of_nv12_is_half_height() {
        let (buf, p) = nv12(16, 8).plane(1).unwrap();
        assert_eq!(
            (buf, p.offset, p.shape.as_slice()),
            (0, 128, &[4usize, 16][..])
        );
    }
}
