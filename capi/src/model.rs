//! Model inputs: a frame (or an image tensor) converted to what a model
//! takes — size, NCHW or NHWC, float or int8/uint8, normalized, fitted — on
//! the GPU or the CPU, with the options of zerocam-gpu's `ModelInput`.

mod run;

pub use run::*;

use std::sync::Mutex;

use zerocam_preprocess::{
    Backend, ChannelOrder, Fit, ModelInput, ModelLayout, Preprocessor, Resample,
};

use crate::ffi::{call, handle, id, read, Out};
use crate::handle::{self as table, Kind, Object};
use crate::status::{zerocam_status, CapiError};
use crate::values::{dtype_of, zerocam_dtype, ZEROCAM_DTYPE_F32};

/// A preprocessor: frames in, model inputs out, from a ring of reused
/// destinations. Lifetime: references (`zerocam_preprocessor_ref` /
/// `_unref`); model inputs it handed out live on after it. Calls on one
/// preprocessor are serialized. Opaque.
#[allow(non_camel_case_types)]
pub struct zerocam_preprocessor {
    _opaque: [u8; 0],
}

/// The channel axis: one of the `ZEROCAM_LAYOUT_*` values.
#[allow(non_camel_case_types)]
pub type zerocam_model_layout = u32;
/// `[N, C, H, W]` (PyTorch, ONNX).
pub const ZEROCAM_LAYOUT_NCHW: zerocam_model_layout = 0;
/// `[N, H, W, C]` (TFLite, most NPUs).
pub const ZEROCAM_LAYOUT_NHWC: zerocam_model_layout = 1;

/// The colour order: one of the `ZEROCAM_CHANNELS_*` values.
#[allow(non_camel_case_types)]
pub type zerocam_channel_order = u32;
/// Red, green, blue.
pub const ZEROCAM_CHANNELS_RGB: zerocam_channel_order = 0;
/// Blue, green, red.
pub const ZEROCAM_CHANNELS_BGR: zerocam_channel_order = 1;

/// How a frame fits the input: one of the `ZEROCAM_FIT_*` values.
#[allow(non_camel_case_types)]
pub type zerocam_fit = u32;
/// Each axis scaled on its own (the aspect ratio changes).
pub const ZEROCAM_FIT_STRETCH: zerocam_fit = 0;
/// The centred rectangle of the input's aspect ratio, scaled to fill.
pub const ZEROCAM_FIT_CROP: zerocam_fit = 1;
/// The whole frame scaled to fit, centred, bars of colour `pad`.
pub const ZEROCAM_FIT_LETTERBOX: zerocam_fit = 2;

/// How the source is resampled: one of the `ZEROCAM_RESAMPLE_*` values.
#[allow(non_camel_case_types)]
pub type zerocam_resample = u32;
/// Bilinear (OpenCV's `INTER_LINEAR`, GPU texture sampling).
pub const ZEROCAM_RESAMPLE_BILINEAR: zerocam_resample = 0;
/// Area averaging on a shrunk axis (OpenCV's `INTER_AREA`, PIL's `BOX`),
/// bilinear on an enlarged one: no aliasing on a large downscale.
pub const ZEROCAM_RESAMPLE_AREA: zerocam_resample = 1;

/// Where a preprocessor converts: one of the `ZEROCAM_DEVICE_*` values.
#[allow(non_camel_case_types)]
pub type zerocam_device = u32;
/// The GPU where it is a real one, else the CPU.
pub const ZEROCAM_DEVICE_AUTO: zerocam_device = 0;
/// The CPU.
pub const ZEROCAM_DEVICE_CPU: zerocam_device = 1;
/// The GPU, whatever its renderer.
pub const ZEROCAM_DEVICE_GPU: zerocam_device = 2;

/// A model's input tensor. Start from `zerocam_model_input_init` (the
/// defaults) and change what the model needs. The value a model sees for a
/// pixel value `p` (0..=255) is `x = (p / 255 - mean) / std` (or `p / 255`
/// without mean/std); for F32/F16 `x`; for U8/I8 with a quantization
/// `round(x / scale) + zero_point`, clamped; without one `p` (U8) or
/// `p - 128` (I8).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct zerocam_model_input {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Images per tensor (the leading dimension): 1 for
    /// `zerocam_preprocessor_run`, N for `zerocam_preprocessor_run_batch`
    /// of N frames.
    pub batch: u32,
    /// `ZEROCAM_DTYPE_U8`, `_I8`, `_F16` or `_F32`.
    pub dtype: zerocam_dtype,
    /// NCHW or NHWC.
    pub layout: zerocam_model_layout,
    /// RGB or BGR.
    pub channels: zerocam_channel_order,
    /// Nonzero when `mean` and `std` apply.
    pub has_mean_std: u8,
    /// Per-channel mean, in the 0..1 range (ImageNet: 0.485, 0.456, 0.406).
    pub mean: [f32; 3],
    /// Per-channel standard deviation (ImageNet: 0.229, 0.224, 0.225).
    pub std: [f32; 3],
    /// Nonzero when `scale` and `zero_point` apply (integer dtypes only).
    pub has_quantization: u8,
    /// The real value of one integer step.
    pub scale: f32,
    /// The integer that stands for 0.0.
    pub zero_point: i32,
    /// Stretch, crop or letterbox.
    pub fit: zerocam_fit,
    /// The letterbox bars' RGB colour.
    pub pad: [u8; 3],
    /// Bilinear or area resampling.
    pub resample: zerocam_resample,
}

/// Fills `input` with the defaults for a `width`x`height` input: batch 1,
/// NCHW, F32, RGB, values `p / 255`, stretched.
///
/// # Safety
/// `input` is NULL or valid for a write of a `zerocam_model_input`.
#[no_mangle]
pub unsafe extern "C" fn zerocam_model_input_init(
    input: *mut zerocam_model_input,
    width: u32,
    height: u32,
) -> zerocam_status {
    call("zerocam_model_input_init", || {
        let out = Out::new(input, "input")?;
        let defaults = zerocam_model_input {
            width,
            height,
            batch: 1,
            dtype: ZEROCAM_DTYPE_F32,
            layout: ZEROCAM_LAYOUT_NCHW,
            channels: ZEROCAM_CHANNELS_RGB,
            has_mean_std: 0,
            mean: [0.0; 3],
            std: [1.0; 3],
            has_quantization: 0,
            scale: 1.0,
            zero_point: 0,
            fit: ZEROCAM_FIT_STRETCH,
            pad: [0; 3],
            resample: ZEROCAM_RESAMPLE_BILINEAR,
        };
        // SAFETY: the caller's promise for `input`.
        unsafe { out.write(defaults) };
        Ok(())
    })
}

/// `m` as a checked [`ModelInput`].
fn model_input(m: &zerocam_model_input) -> Result<ModelInput, CapiError> {
    let bad = |what: &str, v: u32| {
        CapiError::InvalidArgument(format!(
            "{what} {v} is not a ZEROCAM_{}_* value",
            what.to_uppercase()
        ))
    };
    let layout = match m.layout {
        ZEROCAM_LAYOUT_NCHW => ModelLayout::Nchw,
        ZEROCAM_LAYOUT_NHWC => ModelLayout::Nhwc,
        v => return Err(bad("layout", v)),
    };
    let channels = match m.channels {
        ZEROCAM_CHANNELS_RGB => ChannelOrder::Rgb,
        ZEROCAM_CHANNELS_BGR => ChannelOrder::Bgr,
        v => return Err(bad("channels", v)),
    };
    let fit = match m.fit {
        ZEROCAM_FIT_STRETCH => Fit::Stretch,
        ZEROCAM_FIT_CROP => Fit::Crop,
        ZEROCAM_FIT_LETTERBOX => Fit::Letterbox { pad: m.pad },
        v => return Err(bad("fit", v)),
    };
    let mut input = ModelInput::new(m.width as usize, m.height as usize)?
        .batch(m.batch as usize)?
        .with_layout(layout)
        .with_channels(channels)
        .dtype(dtype_of(m.dtype)?)?;
    if m.has_quantization != 0 {
        input = input.quantization(m.scale, m.zero_point)?;
    }
    if m.has_mean_std != 0 {
        input = input.mean_std(m.mean, m.std)?;
    }
    let resample = match m.resample {
        ZEROCAM_RESAMPLE_BILINEAR => Resample::Bilinear,
        ZEROCAM_RESAMPLE_AREA => Resample::Area,
        v => return Err(bad("resample", v)),
    };
    Ok(input.fit(fit).resample(resample))
}

/// The ring depth `zerocam_preprocessor_new` gives: how many of its model
/// inputs may be held at once.
pub const ZEROCAM_DEFAULT_RING_DEPTH: usize = 3;

/// Makes a preprocessor of `input` on `device` (`ZEROCAM_DEVICE_AUTO`: the
/// GPU where it is a real one, else the CPU), with a ring of
/// `ZEROCAM_DEFAULT_RING_DEPTH` (3) model inputs: a fourth run while three
/// are held is `ZEROCAM_ERROR_BUSY`.
///
/// # Safety
/// `input` is NULL or valid for a read; `out` is NULL or valid for a write.
///
/// # Errors
/// `ZEROCAM_ERROR_INVALID_ARGUMENT` for the input's options (a 0 size, a
/// quantization on a float dtype, a std of 0, …) or a bad device;
/// `ZEROCAM_ERROR_UNSUPPORTED` for `ZEROCAM_DEVICE_GPU` without a GPU.
/// Sizes are checked when a run allocates its tensor (`ZEROCAM_ERROR_IO`
/// when the memory cannot be had).
#[no_mangle]
pub unsafe extern "C" fn zerocam_preprocessor_new(
    input: *const zerocam_model_input,
    device: zerocam_device,
    out: *mut *mut zerocam_preprocessor,
) -> zerocam_status {
    call("zerocam_preprocessor_new", || {
        // SAFETY: the caller's promises, passed on.
        unsafe { new(input, device, ZEROCAM_DEFAULT_RING_DEPTH, out) }
    })
}

/// As `zerocam_preprocessor_new`, with a ring of `ring_depth` model inputs
/// (allocated as they are first needed).
///
/// # Safety
/// As `zerocam_preprocessor_new`.
///
/// # Errors
/// As `zerocam_preprocessor_new`; `ZEROCAM_ERROR_INVALID_ARGUMENT` for a
/// depth of 0.
#[no_mangle]
pub unsafe extern "C" fn zerocam_preprocessor_new_with_ring_depth(
    input: *const zerocam_model_input,
    device: zerocam_device,
    ring_depth: usize,
    out: *mut *mut zerocam_preprocessor,
) -> zerocam_status {
    call("zerocam_preprocessor_new_with_ring_depth", || {
        // SAFETY: the caller's promises, passed on.
        unsafe { new(input, device, ring_depth, out) }
    })
}

/// The body of both constructors.
///
/// # Safety
/// `input` is NULL or valid for a read; `out` is NULL or valid for a write.
unsafe fn new(
    input: *const zerocam_model_input,
    device: zerocam_device,
    ring_depth: usize,
    out: *mut *mut zerocam_preprocessor,
) -> Result<(), CapiError> {
    let out = Out::new(out, "out")?;
    // SAFETY: the caller's promise for `input`.
    let input = model_input(&unsafe { read(input, "input") }?)?;
    let device = match device {
        ZEROCAM_DEVICE_AUTO => Backend::Auto,
        ZEROCAM_DEVICE_CPU => Backend::Cpu,
        ZEROCAM_DEVICE_GPU => Backend::Gpu,
        v => {
            return Err(CapiError::InvalidArgument(format!(
                "device {v} is not a ZEROCAM_DEVICE_* value (0..=2)"
            )))
        }
    };
    let pre = Preprocessor::new(input, device)?.with_ring_depth(ring_depth)?;
    let object = Object::Preprocessor(Box::new(Mutex::new(pre)));
    let h = handle(table::insert(object)?);
    // SAFETY: the caller's promise for `out`.
    unsafe { out.write(h) };
    Ok(())
}

/// Adds a reference to `preprocessor`.
///
/// # Safety
/// None beyond a handle's.
#[no_mangle]
pub unsafe extern "C" fn zerocam_preprocessor_ref(
    preprocessor: *mut zerocam_preprocessor,
) -> zerocam_status {
    call("zerocam_preprocessor_ref", || {
        table::add_ref(id(preprocessor), Kind::Preprocessor, "preprocessor")
    })
}

/// Drops a reference to `preprocessor`; after the last one it goes (model
/// inputs handed out live on).
///
/// # Safety
/// None beyond a handle's.
#[no_mangle]
pub unsafe extern "C" fn zerocam_preprocessor_unref(
    preprocessor: *mut zerocam_preprocessor,
) -> zerocam_status {
    call("zerocam_preprocessor_unref", || {
        drop(table::release(
            id(preprocessor),
            Kind::Preprocessor,
            "preprocessor",
        )?);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_headers_default_ring_depth_is_the_preprocessors() {
        assert_eq!(
            super::ZEROCAM_DEFAULT_RING_DEPTH,
            zerocam_preprocess::DEFAULT_RING_DEPTH
        );
    }
}
