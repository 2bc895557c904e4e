//! The plan of a model-input conversion ([`Gpu::convert_model`](crate::Gpu::convert_model)),
//! worked out before any GL: the destination tensor checked against the
//! [`ModelInput`], its bytes laid out as a grid of RGBA8 texels (one batch
//! element a band of whole rows), and the values the write shader needs.
//!
//! Each texel holds 4 bytes: one `f32`, two `f16` or four `u8`/`i8` elements,
//! consecutive in the tensor. The shader finds the elements' `(c, y, x)` from
//! the texel's index in its batch element, so any grid width that tiles the
//! element works; a row of the image (NHWC) or of one channel plane (NCHW) is
//! the natural one.

use zerocam_tensor::{DType, Element, PixelFormat, Region, Tensor};

use crate::model::{Fit, FitPlacement, ModelInput, ModelLayout, SourceRect};
use crate::plan::{source, ConvertOptions, Pack, Plan, Rect, TargetGrid};
use crate::{GpuError, Result};

/// What the model write shader computes, besides the source.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ModelDraw {
    /// The sampled source rectangle, in pixels of the source's root frame.
    pub source: SourceRect,
    /// The model pixels it fills (the rest is pad).
    pub target: Region,
    /// Model width and height.
    pub size: (usize, usize),
    /// Texels per grid row.
    pub grid_width: usize,
    /// `value[c] = (matrix * rgb)[c] + bias[c]` for `rgb` in 0..1: the
    /// [`ModelInput::affine`] with the channel order folded in, column major.
    pub matrix: [f32; 9],
    pub bias: [f32; 3],
    /// The letterbox bars' values (output order, final).
    pub pad: [f32; 3],
    /// Integer outputs are rounded and clamped to this.
    pub range: (f32, f32),
}

/// The shaders' code of a model write: `3 + 2 * dtype + layout` with dtype
/// 0 `u8`, 1 `i8`, 2 `f16`, 3 `f32` and layout 0 NCHW, 1 NHWC.
pub(crate) fn pack_code(dtype: DType, layout: ModelLayout) -> Option<i32> {
    let d = match dtype {
        DType::U8 => 0,
        DType::I8 => 1,
        DType::F16 => 2,
        DType::F32 => 3,
        _ => return None,
    };
    Some(3 + 2 * d + i32::from(layout == ModelLayout::Nhwc))
}

/// The model element type and layout of a pack code of 3 or more.
pub(crate) fn unpack_code(code: i32) -> (i32, i32) {
    ((code - 3) / 2, (code - 3) % 2)
}

/// Texels per grid row and rows per batch element: the smallest run of whole
/// image rows (NHWC) or channel-plane rows (NCHW) that fills whole texels.
fn grid_shape(input: &ModelInput, elem: usize) -> Option<(usize, usize)> {
    let (w, h) = (input.width(), input.height());
    let (row_bytes, rows) = match input.layout() {
        ModelLayout::Nchw => (w * elem, 3 * h),
        ModelLayout::Nhwc => (3 * w * elem, h),
    };
    [1, 2, 4]
        .into_iter()
        .find(|&k| (k * row_bytes) % 4 == 0 && rows % k == 0)
        .map(|k| (k * row_bytes / 4, rows / k))
}

/// Checks `dst` against `input` and lays out the grid and the rectangle of
/// batch element `index`.
fn target<T: Element>(
    dst: &Tensor<T>,
    input: &ModelInput,
    index: usize,
) -> Result<(TargetGrid, Rect, i32)> {
    let expected = input.element_type();
    if T::DTYPE != expected {
        return Err(GpuError::ModelDType {
            expected,
            found: T::DTYPE,
        });
    }
    let shape = input.shape();
    if dst.shape() != shape {
        return Err(GpuError::ModelShape {
            expected: shape.to_vec(),
            found: dst.shape().to_vec(),
        });
    }
    let batch = input.batch_size();
    if index >= batch {
        return Err(GpuError::BatchIndexOutOfRange { index, batch });
    }
    let refuse = |reason| GpuError::ModelDestination {
        shape: shape.to_vec(),
        dtype: expected,
        reason,
    };
    let elem = expected.size();
    let mut contiguous = [0; 4];
    let mut acc = elem;
    for (s, d) in contiguous.iter_mut().zip(shape).rev() {
        *s = acc;
        acc *= d;
    }
    if dst.strides().as_deref() != Some(&contiguous[..]) {
        return Err(refuse("it must be contiguous (row-major, no views)"));
    }
    let start = dst.plane_offset();
    if start % 4 != 0 {
        return Err(refuse(
            "it must start at a multiple of 4 bytes in its buffer",
        ));
    }
    let (grid_width, rows) = grid_shape(input, elem).ok_or_else(|| {
        refuse("the bytes of each row, or of 2 or 4 rows, must be a multiple of 4 (width x 3 x element size for NHWC, width x element size for NCHW)")
    })?;
    let code = pack_code(expected, input.layout()).ok_or(GpuError::ModelDType {
        expected,
        found: T::DTYPE,
    })?;
    let grid = TargetGrid {
        start,
        stride: grid_width * 4,
        rows: rows * batch,
    };
    let rect = Rect {
        x: 0,
        y: rows * index,
        width: grid_width,
        height: rows,
        pack: Pack::Model(code),
    };
    Ok((grid, rect, code))
}

/// The shader's affine: [`ModelInput::affine`] per output channel, reading
/// the RGB channel the channel order says, scaled for `rgb` in 0..1.
fn matrix(input: &ModelInput) -> ([f32; 9], [f32; 3]) {
    let affine = input.affine();
    let mut m = [0.0; 9];
    let mut bias = [0.0; 3];
    for (c, (gain, b)) in affine.into_iter().enumerate() {
        let rgb = match input.channels() {
            crate::ChannelOrder::Rgb => c,
            crate::ChannelOrder::Bgr => 2 - c,
        };
        m[rgb * 3 + c] = gain * 255.0; // column `rgb`, row `c`
        bias[c] = b;
    }
    (m, bias)
}

/// Plans `convert_model(src, dst, input, options, index)`; also returns the
/// placement in the source tensor's pixels.
pub(crate) fn plan<T: Element>(
    src: &Tensor<u8>,
    dst: &Tensor<T>,
    input: &ModelInput,
    options: &ConvertOptions,
    index: usize,
) -> Result<(Plan, FitPlacement)> {
    let (placement_src, crop) = source(src, options.crop)?;
    let view = placement_src.region;
    let relative = options
        .crop
        .unwrap_or(Region::new(0, 0, view.width, view.height));
    let placement = input.place(relative)?;
    let (grid, rect, _) = target(dst, input, index)?;
    let (matrix, bias) = matrix(input);
    let pad = match input.fit_mode() {
        Fit::Letterbox { pad } => input.pad_values(pad),
        Fit::Stretch | Fit::Crop => [0.0; 3],
    };
    let s = placement.source;
    let draw = ModelDraw {
        source: SourceRect {
            x: s.x + view.x as f64,
            y: s.y + view.y as f64,
            ..s
        },
        target: placement.target,
        size: (input.width(), input.height()),
        grid_width: grid.texels_wide(),
        matrix,
        bias,
        pad,
        range: input.value_range(),
    };
    let plan = Plan {
        source: placement_src,
        crop,
        target_label: (PixelFormat::Rgba, grid.texels_wide(), grid.rows),
        grid,
        rects: vec![rect],
        out: draw.size,
        model: Some(draw),
    };
    Ok((plan, placement))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use zerocam_tensor::{f16, ImageLayout, TensorMemory};

    fn nv12(w: usize, h: usize) -> Tensor<u8> {
        Tensor::builder_image(ImageLayout::new(w, h, PixelFormat::Nv12))
            .memory(TensorMemory::Mem)
            .build()
            .unwrap()
    }

    #[test]
    fn a_batch_element_is_a_band_of_whole_rows() {
        let input = ModelInput::new(640, 640).unwrap().batch(2).unwrap();
        let dst = Tensor::<f32>::new(&input.shape(), Some(TensorMemory::Mem), None).unwrap();
        let (grid, rect, code) = target(&dst, &input, 1).unwrap();
        assert_eq!((grid.stride, grid.rows), (2560, 3840));
        assert_eq!((rect.y, rect.width, rect.height), (1920, 640, 1920));
        assert_eq!(unpack_code(code), (3, 0));
        let nhwc = ModelInput::new(5, 4)
            .unwrap()
            .with_layout(ModelLayout::Nhwc)
            .dtype(DType::U8)
            .unwrap();
        // 15 bytes a row: four rows make 15 texels.
        assert_eq!(grid_shape(&nhwc, 1), Some((15, 1)));
    }

    #[test]
    fn mismatched_destinations_are_named() {
        let input = ModelInput::new(8, 8).unwrap().dtype(DType::F16).unwrap();
        let f32s = Tensor::<f32>::new(&[1, 3, 8, 8], Some(TensorMemory::Mem), None).unwrap();
        assert!(matches!(
            target(&f32s, &input, 0),
            Err(GpuError::ModelDType {
                expected: DType::F16,
                found: DType::F32
            })
        ));
        let wrong = Tensor::<f16>::new(&[1, 8, 8, 3], Some(TensorMemory::Mem), None).unwrap();
        let e = target(&wrong, &input, 0).unwrap_err();
        assert!(e.to_string().contains("[1, 8, 8, 3]"), "{e}");
        let right = Tensor::<f16>::new(&[1, 3, 8, 8], Some(TensorMemory::Mem), None).unwrap();
        assert!(matches!(
            target(&right, &input, 1),
            Err(GpuError::BatchIndexOutOfRange { index: 1, batch: 1 })
        ));
        let odd = ModelInput::new(3, 3).unwrap().dtype(DType::U8).unwrap();
        let t = Tensor::<u8>::new(&[1, 3, 3, 3], Some(TensorMemory::Mem), None).unwrap();
        assert!(matches!(
            target(&t, &odd, 0),
            Err(GpuError::ModelDestination { .. })
        ));
    }

    #[test]
    fn the_placement_is_in_source_pixels_the_shader_in_root_pixels() {
        let frame = nv12(1280, 720);
        let view = frame.view(Region::new(640, 0, 640, 720)).unwrap();
        let input = ModelInput::new(64, 64)
            .unwrap()
            .fit(Fit::Letterbox { pad: [114; 3] });
        let dst = Tensor::<f32>::new(&input.shape(), Some(TensorMemory::Mem), None).unwrap();
        let (plan, p) = plan(&view, &dst, &input, &ConvertOptions::default(), 0).unwrap();
        assert_eq!(p.source.x, 0.0);
        let m = plan.model.unwrap();
        assert_eq!((m.source.x, m.target), (640.0, p.target));
        assert!((m.pad[0] - 114.0 / 255.0).abs() < 1e-6);
    }

    #[test]
    fn bgr_reads_blue_into_channel_zero() {
        let input = ModelInput::new(4, 4)
            .unwrap()
            .with_channels(crate::ChannelOrder::Bgr);
        let (m, _) = matrix(&input);
        assert_eq!(m[2 * 3], 1.0, "column blue, row 0");
        assert_eq!(m[0], 0.0);
    }
}
