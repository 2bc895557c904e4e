//! What the `Gpu::convert_model` tests share (host and lab): test frames,
//! destinations in memory or PBOs, their values as f64, and the comparison
//! with the f64 reference of `model_reference.rs` (which the including test
//! declares as `mod model_reference` beside this one).
#![allow(dead_code, clippy::unwrap_used)]

use zerocam_gpu::{ConvertOptions, Gpu};
use zerocam_preprocess::{ModelInput, ModelLayout};
use zerocam_tensor::ColorSpec;
use zerocam_tensor::{
    f16, DType, Element, ImageLayout, PixelFormat, Region, Tensor, TensorDyn, TensorMemory,
};

use crate::model_reference::{expected, max_error, Source};

pub const MEAN: [f32; 3] = [0.485, 0.456, 0.406];
pub const STD: [f32; 3] = [0.229, 0.224, 0.225];

/// A test frame of `format`, rows `stride` bytes apart (None: packed), with
/// smooth gradients and some texture in every byte (padding included).
pub fn frame(format: PixelFormat, w: usize, h: usize, stride: Option<usize>) -> Tensor<u8> {
    let mut layout = ImageLayout::new(w, h, format);
    if let Some(s) = stride {
        layout = layout.with_row_stride(s);
    }
    let t = Tensor::<u8>::builder_image(layout)
        .memory(TensorMemory::Mem)
        .build()
        .unwrap();
    {
        let mut m = t.map().unwrap();
        for (i, b) in m.iter_mut().enumerate() {
            *b = ((i % 97) * 2 + (i / 211) % 40 + (i * 7) % 13) as u8;
        }
    }
    t
}

/// A `w`x`h` input of `dtype` in `layout`.
pub fn input(w: usize, h: usize, dtype: DType, layout: ModelLayout) -> ModelInput {
    ModelInput::new(w, h)
        .unwrap()
        .dtype(dtype)
        .unwrap()
        .with_layout(layout)
}

/// The values of batch element `n` of `t` as f64, in the tensor's layout.
pub fn values<T: Element + Into<f64>>(t: &Tensor<T>, n: usize) -> Vec<f64> {
    let e = t.batch(n).unwrap();
    let m = e.map_read().unwrap();
    m.iter().map(|&v| v.into()).collect()
}

pub fn f16_values(t: &Tensor<f16>, n: usize) -> Vec<f64> {
    let e = t.batch(n).unwrap();
    let m = e.map_read().unwrap();
    m.iter().map(|v| f64::from(v.to_f32())).collect()
}

/// [`values`] of any model element type.
pub fn dyn_values(t: &TensorDyn, n: usize) -> Vec<f64> {
    match t {
        TensorDyn::U8(t) => values(t, n),
        TensorDyn::I8(t) => values(t, n),
        TensorDyn::F16(t) => f16_values(t, n),
        TensorDyn::F32(t) => values(t, n),
        other => panic!("not a model element type: {:?}", other.dtype()),
    }
}

/// What a destination is filled with before a conversion, per element type
/// (a value no test input produces where the tests look for it).
pub fn sentinel(dtype: DType) -> f64 {
    match dtype {
        DType::U8 => 90.0,
        DType::I8 => -90.0,
        _ => 7.0,
    }
}

fn fill<T: Element>(t: &Tensor<T>, v: T) -> Tensor<T> {
    t.map_write().unwrap().fill(v);
    t.clone()
}

/// A destination of `input`'s shape and type in `memory` (`Pbo`: a PBO of
/// `gpu`), every element [`sentinel`].
pub fn destination(gpu: &Gpu, input: &ModelInput, memory: TensorMemory) -> TensorDyn {
    let shape = input.shape();
    let dtype = input.element_type();
    if memory != TensorMemory::Pbo {
        let t = TensorDyn::new(&shape, dtype, Some(memory), None).unwrap();
        return fill_dyn(&t);
    }
    let t: TensorDyn = match dtype {
        DType::U8 => gpu.pbo_tensor::<u8>(&shape).unwrap().into(),
        DType::I8 => gpu.pbo_tensor::<i8>(&shape).unwrap().into(),
        DType::F16 => gpu.pbo_tensor::<f16>(&shape).unwrap().into(),
        _ => gpu.pbo_tensor::<f32>(&shape).unwrap().into(),
    };
    fill_dyn(&t)
}

/// Fills a model tensor with its type's [`sentinel`].
pub fn fill_dyn(t: &TensorDyn) -> TensorDyn {
    let s = sentinel(t.dtype());
    match t {
        TensorDyn::U8(t) => fill(t, s as u8).into(),
        TensorDyn::I8(t) => fill(t, s as i8).into(),
        TensorDyn::F16(t) => fill(t, f16::from_f64(s)).into(),
        TensorDyn::F32(t) => fill(t, s as f32).into(),
        other => panic!("not a model element type: {:?}", other.dtype()),
    }
}

/// The bound: 1 step for integers, 0.02 for (normalized) floats.
pub fn tolerance(input: &ModelInput) -> f64 {
    match input.element_type() {
        DType::U8 | DType::I8 => 1.0,
        _ => 0.02,
    }
}

/// The reference values of `src` (its `crop`, `None` for all of it) as
/// `input` describes, read with `color`.
pub fn reference(
    input: &ModelInput,
    src: &Tensor<u8>,
    crop: Option<Region>,
    color: ColorSpec,
) -> Vec<f64> {
    let source = Source::new(src, color.matrix, color.range);
    let crop = crop.unwrap_or(Region::new(
        0,
        0,
        src.width().unwrap(),
        src.height().unwrap(),
    ));
    let pad = input.fit_mode().pad();
    expected(input, &source, crop, pad)
}

/// Asserts that batch element `n` of `dst` is `src` converted as `input`
/// and `opts` say, within `bound` (at worst by `(c, y, x)` in the message).
pub fn assert_element(
    dst: &TensorDyn,
    n: usize,
    src: &Tensor<u8>,
    input: &ModelInput,
    opts: &ConvertOptions,
    bound: f64,
    what: &str,
) {
    let want = reference(input, src, opts.crop, opts.color);
    let (err, at) = max_error(input, &dyn_values(dst, n), &want);
    assert!(
        err <= bound,
        "{what}: element {n} of {:?} {:?} {:?} from {:?}: off by {err} at (c, y, x) {at:?}",
        input.shape(),
        input.element_type(),
        input.fit_mode(),
        src.format()
    );
}
