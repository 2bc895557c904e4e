//! What a conversion will do, worked out on the caller's thread before any GL:
//! the source rectangle, the destination's render-target grid and the
//! rectangles to draw. Pure arithmetic with typed errors, tested without GL.

use zerocam_tensor::{ImagePlacement, PixelFormat, Region, RootLayout, Tensor};

use crate::{ColorSpec, GpuError, Result};

const OP: &str = "convert";

/// How a dma-buf source is brought to the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ImportPolicy {
    /// Import dma-bufs as EGLImages where EGL offers it; where the import
    /// fails, upload through a CPU map instead (counted in
    /// [`GpuStats::uploads`](crate::GpuStats::uploads)).
    #[default]
    Auto,
    /// Import dma-bufs, or fail with [`GpuError::Import`].
    Require,
    /// Always upload through a CPU map.
    Never,
}

/// Options of [`Gpu::convert`](crate::Gpu::convert).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ConvertOptions {
    /// The part of the source to convert (relative to the source tensor);
    /// `None` for all of it. It is scaled to the destination's size.
    pub crop: Option<Region>,
    /// The YUV colour space of the source (ignored for RGB sources).
    pub color: ColorSpec,
    /// How dma-buf sources (and destinations) reach the GPU.
    pub import: ImportPolicy,
}

/// How a destination texel's four bytes are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pack {
    /// One RGBA pixel.
    Rgba,
    /// Four consecutive bytes of packed RGB.
    Rgb,
    /// Channel `c` of four consecutive pixels (one plane of planar RGB).
    Channel(u32),
    /// Model-input elements (`crate::model::draw_plan::pack_code`).
    Model(i32),
}

impl Pack {
    /// The shaders' `PACK` code.
    pub fn code(self) -> i32 {
        match self {
            Pack::Rgba => 0,
            Pack::Rgb => 1,
            Pack::Channel(_) => 2,
            Pack::Model(code) => code,
        }
    }
}

/// A rectangle of the render-target grid, in texels (x) and rows (y).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rect {
    pub x: usize,
    pub y: usize,
    pub width: usize,
    pub height: usize,
    pub pack: Pack,
    /// The bytes `start..end` of each texel that are written: `(0, 4)`, or
    /// fewer in the one-texel rectangles where a model input's batch element
    /// begins or ends inside a texel (the rest belongs to its neighbours).
    pub bytes: (usize, usize),
}

impl Rect {
    /// Whether every byte of its texels is written.
    pub fn whole_texels(&self) -> bool {
        self.bytes == (0, 4)
    }
}

/// At most [`Rects::CAPACITY`] rectangles, held inline: a plan allocates
/// nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rects {
    items: [Option<Rect>; Rects::CAPACITY],
    len: usize,
}

impl Rects {
    /// Three planes of planar RGB; five pieces of a model batch element
    /// (two partial texels, two partial rows, the whole rows between).
    pub const CAPACITY: usize = 5;

    pub fn new() -> Rects {
        Rects {
            items: [None; Rects::CAPACITY],
            len: 0,
        }
    }

    /// Adds `r`; the callers never add more than [`CAPACITY`](Rects::CAPACITY)
    /// (a debug assertion; a release build drops the extra).
    pub fn push(&mut self, r: Rect) {
        debug_assert!(
            self.len < Rects::CAPACITY,
            "more than {} rectangles",
            Rects::CAPACITY
        );
        if let Some(slot) = self.items.get_mut(self.len) {
            *slot = Some(r);
            self.len += 1;
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &Rect> {
        self.items[..self.len].iter().flatten()
    }

    pub fn first(&self) -> Option<&Rect> {
        self.iter().next()
    }
}

/// The destination as a grid of RGBA8 texels: `stride / 4` wide, `rows` high,
/// starting at byte `start` of buffer 0. It alone decides the render target
/// (its size, and where an imported dma-buf starts), so it keys their cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct TargetGrid {
    pub start: usize,
    pub stride: usize,
    pub rows: usize,
}

impl TargetGrid {
    pub fn texels_wide(&self) -> usize {
        self.stride / 4
    }

    /// Byte offset (in buffer 0) of the first byte of `r`.
    pub fn byte_offset(&self, r: &Rect) -> usize {
        self.start + r.y * self.stride + r.x * 4
    }
}

/// Everything [`Gpu::convert`](crate::Gpu::convert) needs to know, checked.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DrawPlan {
    pub source: ImagePlacement,
    /// The source rectangle in pixels of the source's root frame.
    pub crop: Region,
    /// The destination's format and size, as its errors name them (a model
    /// input's texel grid reads as RGBA).
    pub target_label: (PixelFormat, usize, usize),
    pub grid: TargetGrid,
    pub rects: Rects,
    /// Output size in pixels.
    pub out: (usize, usize),
    /// What a model-input conversion writes (`None` for an image destination).
    pub model: Option<crate::model::draw_plan::ModelDraw>,
}

fn image(t: &Tensor<u8>, role: &'static str) -> Result<ImagePlacement> {
    let p = t.placement().ok_or_else(|| GpuError::NotAnImage {
        role,
        operation: OP,
        shape: t.shape().to_vec(),
    })?;
    if p.frames > 1 {
        return Err(GpuError::Batched {
            role,
            batch: p.frames,
        });
    }
    Ok(p)
}

fn bad(what: &'static str, format: PixelFormat, r: Region, reason: &'static str) -> GpuError {
    GpuError::BadSize {
        what,
        format,
        width: r.width,
        height: r.height,
        reason,
    }
}

/// Checks a source and returns its placement and the crop in root pixels.
pub(crate) fn source(src: &Tensor<u8>, crop: Option<Region>) -> Result<(ImagePlacement, Region)> {
    let p = image(src, "source")?;
    let format = p.root.format;
    if matches!(format, PixelFormat::PlanarRgb) {
        return Err(GpuError::UnsupportedFormat {
            format,
            role: "source",
            operation: OP,
        });
    }
    let (hsub, vsub) = format.subsampling();
    let root = Region::new(0, 0, p.root.width, p.root.height);
    if p.root.width % hsub != 0 || p.root.height % vsub != 0 {
        return Err(bad(
            "source",
            format,
            root,
            "chroma-subsampled sources need even sizes",
        ));
    }
    let view = p.region;
    let crop = crop.unwrap_or(Region::new(0, 0, view.width, view.height));
    if crop.width == 0 || crop.height == 0 || !crop.fits(view.width, view.height) {
        return Err(GpuError::CropOutOfBounds {
            crop,
            width: view.width,
            height: view.height,
        });
    }
    let abs = Region::new(view.x + crop.x, view.y + crop.y, crop.width, crop.height);
    Ok((p, abs))
}

/// The part of `src` a conversion samples, relative to `src`: `crop`, or
/// all of it; checked as [`Gpu::convert`](crate::Gpu::convert) checks a
/// source (an image of a format it reads, even sizes where chroma is
/// subsampled, the crop inside). Pure arithmetic, no GL: a caller that
/// places the source itself (a model input's fit) starts here.
///
/// # Errors
/// [`GpuError::NotAnImage`], [`GpuError::UnsupportedFormat`],
/// [`GpuError::BadSize`], [`GpuError::CropOutOfBounds`].
pub fn source_region(src: &Tensor<u8>, crop: Option<Region>) -> Result<Region> {
    let (p, abs) = source(src, crop)?;
    let view = p.region;
    Ok(Region::new(
        abs.x - view.x,
        abs.y - view.y,
        abs.width,
        abs.height,
    ))
}

/// Checks a destination and lays out its grid and rectangles.
pub(crate) fn target(dst: &Tensor<u8>) -> Result<(RootLayout, TargetGrid, Rects)> {
    let p = image(dst, "destination")?;
    let root = p.root;
    let r = p.region;
    let (bytes_per_pixel, pack) = match root.format {
        PixelFormat::Rgba => (4, None),
        PixelFormat::Rgb => (3, Some(Pack::Rgb)),
        PixelFormat::PlanarRgb => (1, None),
        format => {
            return Err(GpuError::UnsupportedFormat {
                format,
                role: "destination",
                operation: OP,
            })
        }
    };
    let planes = root.planes();
    let stride = planes[0].stride;
    if stride % 4 != 0 {
        return Err(bad(
            "destination",
            root.format,
            r,
            "the row stride must be a multiple of 4 bytes",
        ));
    }
    if bytes_per_pixel != 4 && (r.x % 4 != 0 || r.width % 4 != 0) {
        return Err(bad(
            "destination",
            root.format,
            r,
            "RGB and planar RGB destinations need x and width multiples of 4 pixels",
        ));
    }
    let start = planes[0].offset;
    let frame_offset = p.frame * root.batch_stride;
    let rows_between = |offset: usize| -> Result<usize> {
        let d = offset - start;
        if !d.is_multiple_of(stride) {
            return Err(bad(
                "destination",
                root.format,
                r,
                "planes and batch elements must start on a row boundary",
            ));
        }
        Ok(d / stride)
    };
    let mut rects = Rects::new();
    for (c, plane) in planes.iter().enumerate() {
        let pack = match root.format {
            PixelFormat::PlanarRgb => Pack::Channel(c as u32),
            _ => pack.unwrap_or(Pack::Rgba),
        };
        rects.push(Rect {
            x: r.x * bytes_per_pixel / 4,
            y: rows_between(plane.offset + frame_offset)? + r.y,
            width: r.width * bytes_per_pixel / 4,
            height: r.height,
            pack,
            bytes: (0, 4),
        });
    }
    let last = planes.last().map_or(start, |p| p.offset);
    let rows = rows_between(last + (root.batch - 1) * root.batch_stride)? + root.height;
    Ok((
        root,
        TargetGrid {
            start,
            stride,
            rows,
        },
        rects,
    ))
}

/// Plans `convert(src, dst, options)`.
pub(crate) fn plan(
    src: &Tensor<u8>,
    dst: &Tensor<u8>,
    options: &ConvertOptions,
) -> Result<DrawPlan> {
    let (source, crop) = source(src, options.crop)?;
    let (target_root, grid, rects) = target(dst)?;
    let out = dst
        .placement()
        .map_or((0, 0), |p| (p.region.width, p.region.height));
    Ok(DrawPlan {
        source,
        crop,
        target_label: (target_root.format, target_root.width, target_root.height),
        grid,
        rects,
        out,
        model: None,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use zerocam_tensor::{ImageLayout, TensorMemory};

    fn img(w: usize, h: usize, f: PixelFormat) -> Tensor<u8> {
        Tensor::image(w, h, f, Some(TensorMemory::Mem)).unwrap()
    }

    #[test]
    fn rgb_destination_packs_four_bytes_a_texel() {
        let (_, grid, rects) = target(&img(640, 640, PixelFormat::Rgb)).unwrap();
        assert_eq!(
            (grid.stride, grid.rows, grid.texels_wide()),
            (1920, 640, 480)
        );
        assert_eq!(
            rects.iter().copied().collect::<Vec<_>>(),
            [Rect {
                x: 0,
                y: 0,
                width: 480,
                height: 640,
                pack: Pack::Rgb,
                bytes: (0, 4),
            }]
        );
    }

    #[test]
    fn a_batch_element_view_is_a_viewport_of_the_parent_grid() {
        let batch =
            Tensor::<u8>::builder_image(ImageLayout::new(64, 32, PixelFormat::Rgba).with_batch(3))
                .memory(TensorMemory::Mem)
                .build()
                .unwrap();
        let view = batch
            .batch(2)
            .unwrap()
            .view(Region::new(4, 8, 16, 16))
            .unwrap();
        let (root, grid, rects) = target(&view).unwrap();
        let (root0, grid0, _) = target(&batch.batch(0).unwrap()).unwrap();
        assert_eq!((root, grid), (root0, grid0));
        let e = target(&batch).unwrap_err();
        assert!(matches!(e, GpuError::Batched { batch: 3, .. }), "{e}");
        assert_eq!(grid.rows, 96);
        assert_eq!(
            rects.iter().copied().collect::<Vec<_>>(),
            [Rect {
                x: 4,
                y: 2 * 32 + 8,
                width: 16,
                height: 16,
                pack: Pack::Rgba,
                bytes: (0, 4),
            }]
        );
    }

    #[test]
    fn planar_rgb_draws_one_rectangle_a_plane() {
        let (_, grid, rects) = target(&img(8, 4, PixelFormat::PlanarRgb)).unwrap();
        assert_eq!(grid.rows, 12);
        let ys: Vec<_> = rects.iter().map(|r| (r.y, r.width, r.pack)).collect();
        assert_eq!(
            ys,
            [
                (0, 2, Pack::Channel(0)),
                (4, 2, Pack::Channel(1)),
                (8, 2, Pack::Channel(2))
            ]
        );
    }

    #[test]
    fn unaligned_rgb_views_and_formats_are_refused() {
        let rgb = img(64, 8, PixelFormat::Rgb);
        let e = target(&rgb.view(Region::new(2, 0, 8, 8)).unwrap()).unwrap_err();
        assert!(e.to_string().contains("multiples of 4"), "{e}");
        let e = target(&img(64, 8, PixelFormat::Nv12)).unwrap_err();
        assert!(
            matches!(
                e,
                GpuError::UnsupportedFormat {
                    role: "destination",
                    ..
                }
            ),
            "{e}"
        );
        let arr = Tensor::<u8>::new(&[8, 8, 3], Some(TensorMemory::Mem), None).unwrap();
        assert!(matches!(target(&arr), Err(GpuError::NotAnImage { .. })));
    }

    #[test]
    fn the_crop_is_relative_to_the_source_view() {
        let nv12 = img(64, 32, PixelFormat::Nv12);
        let view = nv12.view(Region::new(16, 8, 32, 16)).unwrap();
        let (_, crop) = source(&view, Some(Region::new(2, 2, 8, 8))).unwrap();
        assert_eq!(crop, Region::new(18, 10, 8, 8));
        let e = source(&view, Some(Region::new(30, 0, 8, 8))).unwrap_err();
        assert!(
            matches!(
                e,
                GpuError::CropOutOfBounds {
                    width: 32,
                    height: 16,
                    ..
                }
            ),
            "{e}"
        );
    }
}
