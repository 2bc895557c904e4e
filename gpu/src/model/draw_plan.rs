//! The draw plan of a model write ([`Gpu::write_model`](crate::Gpu::write_model)),
//! worked out before any GL: the destination tensor checked against the
//! [`ModelWrite`], its bytes laid out as a grid of RGBA8 texels, the grid
//! rectangles of one batch element, and the values the write shader needs.
//!
//! Each texel holds 4 bytes: one `f32`, two `f16` or four `u8`/`i8` elements,
//! consecutive in the tensor. The shader finds each element's `(c, y, x)`
//! from its index in its batch element, so any grid width works: a row of
//! one channel plane (NCHW) or of the image (NHWC), rounded up to a pitch a
//! GPU renders a linear dma-buf with (256 bytes). A batch element is the
//! byte range `b0..b1` of the tensor: when it fills whole grid rows it is one
//! rectangle; when it does not (odd sizes: a `u8` 63x37, an `f16` 3x5, or a
//! start inside a texel) it is at most five — a first texel it shares with
//! its neighbour, the rest of that row, the whole rows, the start of the last
//! row, a last shared texel — and the shared texels write only this element's
//! bytes (a colour mask when drawing, a byte-exact copy when reading back).

use zerocam_tensor::{DType, Element, PixelFormat, Region, Tensor};

use super::{ChannelLayout, ModelResample, ModelWrite, SampleRect, AREA_MAX_SAMPLES};
use crate::draw_plan::{source, ConvertOptions, DrawPlan, Pack, Rect, Rects, TargetGrid};
use crate::{GpuError, Result};

/// What the model write shader computes, besides the source.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ModelDraw {
    /// The sampled source rectangle, in pixels of the source's root frame.
    pub source: SampleRect,
    /// The model pixels it fills (the rest is pad).
    pub target: Region,
    /// Model width and height.
    pub size: (usize, usize),
    /// Texels per grid row.
    pub grid_width: usize,
    /// Elements in the grid before the batch element's first: element `k`
    /// of the batch element lies in byte `k - first` of grid texel
    /// `(k + first) / per texel`.
    pub first: i32,
    /// `value[c] = (matrix * rgb)[c] + bias[c]` for `rgb` in 0..1, column
    /// major ([`ModelWrite::matrix`]).
    pub matrix: [f32; 9],
    pub bias: [f32; 3],
    /// The letterbox bars' values (output order, final).
    pub pad: [f32; 3],
    /// Integer outputs are rounded and clamped to this.
    pub range: (f32, f32),
    /// The sampling pass's program code ([`sample_code`]).
    pub sample: i32,
    /// Bilinear or area averages.
    pub resample: ModelResample,
    /// For Area, the bilinear samples a model pixel's footprint takes
    /// across and down in luma (source pixel) texels ([`area_samples`]: 0
    /// for one); (0, 0) for Bilinear.
    pub area_samples: (usize, usize),
}

/// The shaders' code of a model write: `3 + 2 * dtype + layout` with dtype
/// 0 `u8`, 1 `i8`, 2 `f16`, 3 `f32` and layout 0 NCHW, 1 NHWC.
pub(crate) fn pack_code(dtype: DType, layout: ChannelLayout) -> Option<i32> {
    let d = match dtype {
        DType::U8 => 0,
        DType::I8 => 1,
        DType::F16 => 2,
        DType::F32 => 3,
        _ => return None,
    };
    Some(3 + 2 * d + i32::from(layout == ChannelLayout::Interleaved))
}

/// The shaders' code of a model write's sampling pass for `f16`/`f32`
/// outputs (the values as computed).
pub(crate) const SAMPLE_FLOAT: i32 = 11;
/// The shaders' code of a model write's sampling pass for `u8`/`i8` outputs
/// (the values rounded and clamped).
pub(crate) const SAMPLE_ROUNDED: i32 = 12;
/// [`SAMPLE_FLOAT`] with [`ModelResample::Area`].
pub(crate) const SAMPLE_FLOAT_AREA: i32 = 13;
/// [`SAMPLE_ROUNDED`] with [`ModelResample::Area`].
pub(crate) const SAMPLE_ROUNDED_AREA: i32 = 14;

/// Every sampling pass's code.
#[cfg(all(test, feature = "gl"))]
pub(crate) const SAMPLE_CODES: [i32; 4] = [
    SAMPLE_FLOAT,
    SAMPLE_ROUNDED,
    SAMPLE_FLOAT_AREA,
    SAMPLE_ROUNDED_AREA,
];

/// Whether `code` is a sampling pass's ([`SAMPLE_FLOAT`], [`SAMPLE_ROUNDED`]
/// and their Area codes).
pub(crate) fn is_sample_code(code: i32) -> bool {
    (SAMPLE_FLOAT..=SAMPLE_ROUNDED_AREA).contains(&code)
}

/// Whether sampling pass `code` averages footprints ([`ModelResample::Area`]).
pub(crate) fn is_area_code(code: i32) -> bool {
    code == SAMPLE_FLOAT_AREA || code == SAMPLE_ROUNDED_AREA
}

/// Whether sampling pass `code` rounds and clamps its values (`u8`/`i8`).
pub(crate) fn is_rounded_code(code: i32) -> bool {
    code == SAMPLE_ROUNDED || code == SAMPLE_ROUNDED_AREA
}

/// The sampling pass's code for outputs of `dtype` resampled as `resample`.
pub(crate) fn sample_code(dtype: DType, resample: ModelResample) -> i32 {
    let rounded = matches!(dtype, DType::U8 | DType::I8);
    match (rounded, resample) {
        (true, ModelResample::Bilinear) => SAMPLE_ROUNDED,
        (false, ModelResample::Bilinear) => SAMPLE_FLOAT,
        (true, ModelResample::Area) => SAMPLE_ROUNDED_AREA,
        (false, ModelResample::Area) => SAMPLE_FLOAT_AREA,
    }
}

/// The bilinear samples one axis of an Area footprint `texels` plane texels
/// long takes: 0 where the plane is not shrunk along it (`texels <= 1`:
/// one sample, the bilinear tap at the footprint's centre), else half the
/// texels it can touch (`ceil(texels) + 1`, from a fractional start),
/// rounded up: each sample weighs two adjacent texels.
pub(crate) fn area_samples(texels: f64) -> usize {
    if texels > 1.0 {
        // `as` saturates: an absurd footprint stays absurd, not wrapped.
        (texels.ceil() as usize).saturating_add(1).div_ceil(2)
    } else {
        0
    }
}

/// The samples across and down of an Area write's footprint in luma (source
/// pixel) texels, the widest of any plane's: refused past
/// [`AREA_MAX_SAMPLES`] either way.
fn area_luma_samples(write: &ModelWrite) -> Result<(usize, usize)> {
    let t = write.target;
    let (w, h) = (write.source.width, write.source.height);
    let samples = (
        area_samples(w / t.width as f64),
        area_samples(h / t.height as f64),
    );
    if samples.0 > AREA_MAX_SAMPLES || samples.1 > AREA_MAX_SAMPLES {
        return Err(GpuError::AreaFootprint {
            width: w,
            height: h,
            columns: t.width,
            rows: t.height,
            samples,
            max: AREA_MAX_SAMPLES,
            max_scale: 2 * AREA_MAX_SAMPLES - 1,
        });
    }
    Ok(samples)
}

/// Whether `code` is a model write's packing pass's ([`pack_code`]).
pub(crate) fn is_pack_code(code: i32) -> bool {
    (3..=10).contains(&code)
}

/// The model element type and layout of a pack code (3 to 10).
pub(crate) fn unpack_code(code: i32) -> (i32, i32) {
    ((code - 3) / 2, (code - 3) % 2)
}

/// Texels per grid row of a render target that is a linear dma-buf: rows
/// of a multiple of 256 bytes, the pitch GPUs render linear images with
/// (lavapipe, through zink, crashes importing a 60- or 252-byte pitch; 32,
/// 64 and 192 render).
const GRID_ALIGN: usize = 64;

/// Texels per grid row: one row of a channel plane (NCHW) or of the image
/// (NHWC), rounded up to [`GRID_ALIGN`] texels. Batch elements that fill
/// whole rows are one rectangle each (a 640x640 `f32`, a 224x224 `f32`);
/// others are a few more.
fn grid_width(write: &ModelWrite, elem: usize) -> usize {
    let (width, _) = write.size;
    let row_bytes = match write.layout {
        ChannelLayout::Planes => width * elem,
        ChannelLayout::Interleaved => 3 * width * elem,
    };
    row_bytes.div_ceil(4).next_multiple_of(GRID_ALIGN)
}

/// The rectangles of a grid `width` texels wide that cover bytes `b0..b1`
/// (from the grid's start), each writing `pack`: at most five, see the
/// module's documentation.
fn span_rects(b0: usize, b1: usize, width: usize, pack: Pack) -> Rects {
    let mut rects = Rects::new();
    let rect = |texel: usize, texels: usize, height: usize, bytes| Rect {
        x: texel % width,
        y: texel / width,
        width: texels,
        height,
        pack,
        bytes,
    };
    let (mut g0, mut g1) = (b0 / 4, b1.div_ceil(4));
    if !b0.is_multiple_of(4) {
        let end = if g1 - g0 == 1 { b1 - 4 * g0 } else { 4 };
        rects.push(rect(g0, 1, 1, (b0 % 4, end)));
        g0 += 1;
    }
    let tail = (!b1.is_multiple_of(4) && g1 > g0).then(|| {
        g1 -= 1;
        rect(g1, 1, 1, (0, b1 % 4))
    });
    if g0 < g1 && g0 % width != 0 {
        let end = g1.min(g0.next_multiple_of(width));
        rects.push(rect(g0, end - g0, 1, (0, 4)));
        g0 = end;
    }
    let rows = (g1 - g0) / width;
    if rows > 0 {
        rects.push(rect(g0, width, rows, (0, 4)));
        g0 += rows * width;
    }
    if g0 < g1 {
        rects.push(rect(g0, g1 - g0, 1, (0, 4)));
    }
    if let Some(t) = tail {
        rects.push(t);
    }
    rects
}

/// Checks `dst` against `write`: its element type and shape, the batch
/// index, and each batch element packed (the batch stride may be larger, as
/// in a view of a wider batch). The caller's model description checks the
/// same with its own errors first; this guards the GL thread.
fn check<T: Element>(dst: &Tensor<T>, write: &ModelWrite, index: usize) -> Result<()> {
    let refuse = |reason| GpuError::ModelDestination {
        shape: dst.shape().to_vec(),
        dtype: T::DTYPE,
        reason,
    };
    if T::DTYPE != write.dtype {
        return Err(refuse("its element type is not the model write's"));
    }
    let shape = write.shape();
    if dst.shape() != shape {
        return Err(refuse("its shape is not the model write's"));
    }
    if index >= write.batch {
        return Err(refuse("the batch index is past its batch"));
    }
    let mut packed = [0; 4];
    let mut acc = T::DTYPE.size();
    for (s, d) in packed.iter_mut().zip(shape).rev() {
        *s = acc;
        acc *= d;
    }
    let batch_ok = write.batch == 1 || dst.stride(0).is_some_and(|s| s >= packed[0]);
    if !(batch_ok && (1..4).all(|axis| dst.stride(axis) == Some(packed[axis]))) {
        return Err(refuse(
            "each batch element must be packed (row-major, no gaps)",
        ));
    }
    Ok(())
}

/// Checks `dst` against `write` and lays out the grid, the rectangles of
/// batch element `index` and its [`ModelDraw::first`].
fn target<T: Element>(
    dst: &Tensor<T>,
    write: &ModelWrite,
    index: usize,
) -> Result<(TargetGrid, Rects, i32)> {
    check(dst, write, index)?;
    let dtype = write.dtype;
    let refuse = |reason| GpuError::ModelDestination {
        shape: write.shape().to_vec(),
        dtype,
        reason,
    };
    let code = pack_code(dtype, write.layout)
        .ok_or_else(|| refuse("its element type is not one of u8, i8, f16, f32"))?;
    let elem = dtype.size();
    let offset = dst.plane_offset();
    if !offset.is_multiple_of(elem) {
        return Err(refuse(
            "its elements must start on a multiple of their size in the buffer",
        ));
    }
    let (width, height) = write.size;
    let element_bytes = 3 * width * height * elem;
    let batch = write.batch;
    // Checked above: at least one element apart when batched.
    let batch_stride = match batch {
        1 => element_bytes,
        _ => dst.stride(0).unwrap_or(element_bytes),
    };
    // The grid starts on the 4-byte boundary at or before the tensor.
    let lead = offset % 4;
    let end = lead + (batch - 1) * batch_stride + element_bytes;
    if i32::try_from(end).is_err() {
        return Err(refuse(
            "it spans more than 2 GiB, past the shader's 32-bit element indices",
        ));
    }
    let grid_texels = grid_width(write, elem);
    let b0 = lead + index * batch_stride;
    let rects = span_rects(b0, b0 + element_bytes, grid_texels, Pack::Model(code));
    let grid = TargetGrid {
        start: offset - lead,
        stride: grid_texels * 4,
        rows: end.div_ceil(grid_texels * 4),
    };
    // `b0 / elem` is exact (`lead` and the stride are whole elements) and
    // below `end`, which fits an i32.
    Ok((grid, rects, (b0 / elem) as i32))
}

/// Plans `write_model(src, dst, write, options, index)`.
pub(crate) fn plan<T: Element>(
    src: &Tensor<u8>,
    dst: &Tensor<T>,
    write: &ModelWrite,
    options: &ConvertOptions,
    index: usize,
) -> Result<DrawPlan> {
    let (placement_src, crop) = source(src, options.crop)?;
    let view = placement_src.region;
    let (grid, rects, first) = target(dst, write, index)?;
    let area_samples = match write.resample {
        ModelResample::Bilinear => (0, 0),
        ModelResample::Area => area_luma_samples(write)?,
    };
    let s = write.source;
    let draw = ModelDraw {
        source: SampleRect {
            x: s.x + view.x as f64,
            y: s.y + view.y as f64,
            ..s
        },
        target: write.target,
        size: write.size,
        grid_width: grid.texels_wide(),
        first,
        matrix: write.matrix,
        bias: write.bias,
        pad: write.pad,
        range: write.range,
        sample: sample_code(write.dtype, write.resample),
        resample: write.resample,
        area_samples,
    };
    Ok(DrawPlan {
        source: placement_src,
        crop,
        target_label: (PixelFormat::Rgba, grid.texels_wide(), grid.rows),
        grid,
        rects,
        out: draw.size,
        model: Some(draw),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use zerocam_tensor::{f16, ImageLayout, TensorMemory};

    /// A write of `w`x`h` `dtype` planes, `batch` images, filling the input.
    fn write(w: usize, h: usize, dtype: DType, batch: usize) -> ModelWrite {
        ModelWrite {
            size: (w, h),
            batch,
            layout: ChannelLayout::Planes,
            dtype,
            matrix: [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
            bias: [0.0; 3],
            pad: [0.0; 3],
            range: (f32::MIN, f32::MAX),
            source: SampleRect {
                x: 0.0,
                y: 0.0,
                width: w as f64,
                height: h as f64,
            },
            target: Region::new(0, 0, w, h),
            resample: ModelResample::Bilinear,
        }
    }

    fn nv12(w: usize, h: usize) -> Tensor<u8> {
        Tensor::builder_image(ImageLayout::new(w, h, PixelFormat::Nv12))
            .memory(TensorMemory::Mem)
            .build()
            .unwrap()
    }

    /// A rectangle as `(x, y, width, height, bytes)`.
    type Piece = (usize, usize, usize, usize, (usize, usize));

    fn whole(x: usize, y: usize, width: usize, height: usize) -> Piece {
        (x, y, width, height, (0, 4))
    }

    fn pieces(rects: &Rects) -> Vec<Piece> {
        rects
            .iter()
            .map(|r| (r.x, r.y, r.width, r.height, r.bytes))
            .collect()
    }

    #[test]
    fn a_batch_element_of_whole_rows_is_one_band() {
        let input = write(640, 640, DType::F32, 2);
        let dst = Tensor::<f32>::new(&input.shape(), Some(TensorMemory::Mem), None).unwrap();
        let (grid, rects, first) = target(&dst, &input, 1).unwrap();
        assert_eq!((grid.stride, grid.rows), (2560, 3840));
        assert_eq!(pieces(&rects), [whole(0, 1920, 640, 1920)]);
        assert_eq!(first, 640 * 640 * 3);
        assert_eq!(rects.first().map(|r| r.pack), Some(Pack::Model(9)));
        assert_eq!(unpack_code(9), (3, 0));
        // 224 f32 rows are 896 bytes: 1024-byte grid rows, 588 an element.
        let input = write(224, 224, DType::F32, 1);
        let dst = Tensor::<f32>::new(&input.shape(), Some(TensorMemory::Mem), None).unwrap();
        let (grid, rects, _) = target(&dst, &input, 0).unwrap();
        assert_eq!((grid.stride, grid.rows), (1024, 588));
        assert_eq!(pieces(&rects), [whole(0, 0, 256, 588)]);
    }

    #[test]
    fn an_odd_batch_element_shares_its_end_texels_with_its_neighbours() {
        // u8 63x37 NCHW, batch 3: 6993 bytes an element, 256-byte grid rows.
        let input = write(63, 37, DType::U8, 3);
        let dst = Tensor::<u8>::new(&input.shape(), Some(TensorMemory::Mem), None).unwrap();
        let (grid, rects, first) = target(&dst, &input, 1).unwrap();
        assert_eq!((grid.stride, grid.rows), (256, 82));
        // Bytes 6993..13986: texel 1748 from its byte 1, texels 1749..3496,
        // texel 3496 to its byte 2.
        assert_eq!(
            pieces(&rects),
            [
                (20, 27, 1, 1, (1, 4)),
                whole(21, 27, 43, 1),
                whole(0, 28, 64, 26),
                whole(0, 54, 40, 1),
                (40, 54, 1, 1, (0, 2)),
            ]
        );
        assert_eq!(first, 6993);
    }

    #[test]
    fn the_pieces_of_a_batch_cover_every_byte_once() {
        // 27-byte elements in a grid 3 texels wide.
        let pack = Pack::Model(3);
        assert_eq!(
            pieces(&span_rects(27, 54, 3, pack)),
            [
                (0, 2, 1, 1, (3, 4)),
                whole(1, 2, 2, 1),
                whole(0, 3, 3, 1),
                whole(0, 4, 1, 1),
                (1, 4, 1, 1, (0, 2)),
            ]
        );
        assert_eq!(
            pieces(&span_rects(0, 27, 3, pack)),
            [whole(0, 0, 3, 2), (0, 2, 1, 1, (0, 3))]
        );
        // One texel holds the end of one element and the start of the next.
        assert_eq!(
            pieces(&span_rects(3, 6, 1, pack)),
            [(0, 0, 1, 1, (3, 4)), (0, 1, 1, 1, (0, 2))]
        );
        assert_eq!(pieces(&span_rects(5, 7, 4, pack)), [(1, 0, 1, 1, (1, 3))]);
        for (len, width, lead) in [(27, 3, 0), (3, 1, 0), (45, 5, 3), (6, 2, 2), (13, 4, 1)] {
            let mut owner = vec![0u32; 4 * 4 * width + 3 * len + 8];
            for n in 0..3 {
                let b0 = lead + n * len;
                for r in span_rects(b0, b0 + len, width, pack).iter() {
                    for y in r.y..r.y + r.height {
                        for x in r.x..r.x + r.width {
                            for b in r.bytes.0..r.bytes.1 {
                                owner[(y * width + x) * 4 + b] += 1 << (8 * n);
                            }
                        }
                    }
                }
            }
            for (i, &o) in owner.iter().enumerate() {
                let inside = (lead..lead + 3 * len).contains(&i);
                let want = if inside {
                    1 << (8 * ((i - lead) / len))
                } else {
                    0
                };
                assert_eq!(o, want, "byte {i} of {len}-byte elements, width {width}");
            }
        }
    }

    #[test]
    fn an_f16_element_of_odd_area_ends_half_way_into_a_texel() {
        // f16 1x1: 6 bytes, one whole texel and half of the next.
        let f16s = write(1, 1, DType::F16, 1);
        let dst = Tensor::<f16>::new(&f16s.shape(), Some(TensorMemory::Mem), None).unwrap();
        let (grid, rects, _) = target(&dst, &f16s, 0).unwrap();
        assert_eq!((grid.stride, grid.rows), (256, 1));
        assert_eq!(pieces(&rects), [whole(0, 0, 1, 1), (1, 0, 1, 1, (0, 2))]);
    }

    #[test]
    fn mismatched_destinations_are_named() {
        let input = write(8, 8, DType::F16, 1);
        let reason = |r: Result<(TargetGrid, Rects, i32)>| match r {
            Err(GpuError::ModelDestination { reason, .. }) => reason,
            other => panic!("{other:?}"),
        };
        let f32s = Tensor::<f32>::new(&[1, 3, 8, 8], Some(TensorMemory::Mem), None).unwrap();
        assert!(reason(target(&f32s, &input, 0)).contains("element type"));
        let wrong = Tensor::<f16>::new(&[1, 8, 8, 3], Some(TensorMemory::Mem), None).unwrap();
        let e = target(&wrong, &input, 0).unwrap_err();
        assert!(e.to_string().contains("[1, 8, 8, 3]"), "{e}");
        let right = Tensor::<f16>::new(&[1, 3, 8, 8], Some(TensorMemory::Mem), None).unwrap();
        assert!(reason(target(&right, &input, 1)).contains("batch index"));
    }

    #[test]
    fn a_batch_view_of_a_wider_tensor_keeps_its_stride() {
        // [2, 3, 2, 2] of a [2, 4, 2, 2]: from byte 4, elements 16 bytes
        // apart and 12 long.
        let wide = Tensor::<u8>::new(&[2, 4, 2, 2], Some(TensorMemory::Mem), None).unwrap();
        let view = wide.view(Region::new(1, 0, 3, 2)).unwrap();
        let input = write(2, 2, DType::U8, 2);
        let (grid, rects, first) = target(&view, &input, 1).unwrap();
        assert_eq!((grid.start, grid.stride, grid.rows), (4, 256, 1));
        assert_eq!(pieces(&rects), [whole(4, 0, 3, 1)]);
        assert_eq!(first, 16);
    }

    #[test]
    fn the_sampled_rectangle_is_in_source_pixels_the_shader_in_root_pixels() {
        let frame = nv12(1280, 720);
        let view = frame.view(Region::new(640, 0, 640, 720)).unwrap();
        let input = ModelWrite {
            target: Region::new(0, 4, 64, 56),
            pad: [0.5; 3],
            ..write(64, 64, DType::F32, 1)
        };
        let dst = Tensor::<f32>::new(&input.shape(), Some(TensorMemory::Mem), None).unwrap();
        let plan = plan(&view, &dst, &input, &ConvertOptions::default(), 0).unwrap();
        let m = plan.model.unwrap();
        assert_eq!((m.source.x, m.target), (640.0, input.target));
        assert_eq!(m.pad, [0.5; 3]);
    }

    #[test]
    fn an_area_write_counts_its_footprint_and_refuses_one_too_wide() {
        assert_eq!(area_samples(1.0), 0, "not shrunk: one centre sample");
        assert_eq!(area_samples(1280.0 / 192.0), 4, "6.67 texels: 8 touched");
        assert_eq!(area_samples(3.75), 3);
        assert_eq!(area_samples(31.0), AREA_MAX_SAMPLES);
        assert_eq!(area_samples(f64::INFINITY), usize::MAX / 2 + 1);
        let frame = nv12(1280, 720);
        let area = |w, h| ModelWrite {
            source: SampleRect {
                x: 0.0,
                y: 0.0,
                width: 1280.0,
                height: 720.0,
            },
            resample: ModelResample::Area,
            ..write(w, h, DType::U8, 1)
        };
        let opts = ConvertOptions::default();
        let input = area(192, 192);
        let dst = Tensor::<u8>::new(&input.shape(), Some(TensorMemory::Mem), None).unwrap();
        let m = plan(&frame, &dst, &input, &opts, 0).unwrap().model.unwrap();
        assert_eq!((m.sample, m.area_samples), (SAMPLE_ROUNDED_AREA, (4, 3)));
        let input = area(32, 32);
        let dst = Tensor::<u8>::new(&input.shape(), Some(TensorMemory::Mem), None).unwrap();
        match plan(&frame, &dst, &input, &opts, 0) {
            Err(GpuError::AreaFootprint { samples, max, .. }) => {
                assert_eq!((samples, max), ((21, 12), 16));
            }
            other => panic!("{other:?}"),
        }
    }

    /// The plan runs on the caller's thread every frame: no heap allocation
    /// (a view source, an odd batch element of five rectangles, a letterbox).
    #[test]
    fn a_plan_allocates_nothing() {
        let frame = nv12(1280, 720);
        let view = frame.view(Region::new(64, 32, 640, 480)).unwrap();
        let input = ModelWrite {
            target: Region::new(0, 4, 63, 29),
            ..write(63, 37, DType::U8, 3)
        };
        let dst = Tensor::<u8>::new(&input.shape(), Some(TensorMemory::Mem), None).unwrap();
        let opts = ConvertOptions::default();
        let (planned, allocations) =
            crate::test_alloc::allocations_during(|| plan(&view, &dst, &input, &opts, 1));
        let p = planned.unwrap();
        assert_eq!(p.rects.iter().count(), 5);
        assert_eq!(allocations, 0);
    }
}
