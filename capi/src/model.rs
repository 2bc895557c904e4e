//! Model inputs: a frame (or an image tensor) converted to what a model
//! takes — size, NCHW or NHWC, float or int8/uint8, normalized, fitted — on
//! the GPU or the CPU, with the options of zerocam-gpu's `ModelInput`.

use std::sync::{Mutex, PoisonError};

use ::zerocam_tensor::{ColorSpec, Region, Tensor};
use zerocam_gpu::{
    ChannelOrder, Device, Fit, FitPlacement, ModelInput, ModelLayout, Preprocessor, SourceRect,
};

use crate::capture::{with_frame, zerocam_frame};
use crate::ffi::{call, handle, id, read, slice, Out};
use crate::handle::{self as table, Kind, Object};
use crate::status::{zerocam_status, CapiError};
use crate::tensor::{
    dtype_of, new_handle, tensor_of, zerocam_dtype, zerocam_tensor, ZEROCAM_DTYPE_F32,
};

/// A preprocessor: frames in, model inputs out, from a ring of reused
/// destinations. Opaque; see `zerocam_preprocessor_ref` / `_unref`.
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
    /// Images per tensor (the leading dimension); 1 here (one frame per run).
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
    Ok(input.fit(fit))
}

/// Makes a preprocessor of `input` on `device` (`ZEROCAM_DEVICE_AUTO`: the
/// GPU where it is a real one, else the CPU).
///
/// # Safety
/// `input` is NULL or valid for a read; `out` is NULL or valid for a write.
///
/// # Errors
/// `ZEROCAM_ERROR_INVALID_ARGUMENT` for the input's options (a 0 size, a
/// quantization on a float dtype, a std of 0, …) or a bad device;
/// `ZEROCAM_ERROR_UNSUPPORTED` for `ZEROCAM_DEVICE_GPU` without a GPU.
#[no_mangle]
pub unsafe extern "C" fn zerocam_preprocessor_new(
    input: *const zerocam_model_input,
    device: zerocam_device,
    out: *mut *mut zerocam_preprocessor,
) -> zerocam_status {
    call("zerocam_preprocessor_new", || {
        let out = Out::new(out, "out")?;
        // SAFETY: the caller's promise for `input`.
        let input = model_input(&unsafe { read(input, "input") }?)?;
        let device = match device {
            ZEROCAM_DEVICE_AUTO => Device::Auto,
            ZEROCAM_DEVICE_CPU => Device::Cpu,
            ZEROCAM_DEVICE_GPU => Device::Gpu,
            v => {
                return Err(CapiError::InvalidArgument(format!(
                    "device {v} is not a ZEROCAM_DEVICE_* value (0..=2)"
                )))
            }
        };
        let pre = Preprocessor::new(input, device)?;
        let object = Object::Preprocessor(Box::new(Mutex::new(pre)));
        // SAFETY: the caller's promise for `out`.
        unsafe { out.write(handle(table::insert(object))) };
        Ok(())
    })
}

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

/// Runs the preprocessor behind `p` on `sources` read as `color`, each
/// cropped by `crop`: the model input and where the first source landed.
fn run(
    p: *mut zerocam_preprocessor,
    sources: &[&Tensor<u8>],
    crop: Option<Region>,
    color: ColorSpec,
) -> Result<(*mut zerocam_tensor, FitPlacement), CapiError> {
    let object = table::get(id(p), Kind::Preprocessor, "preprocessor")?;
    let Object::Preprocessor(pre) = &*object else {
        return Err(CapiError::Panic("the table's kind check failed".into()));
    };
    let done = pre
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .run_batch(sources, crop, color, |_, _| {})?;
    Ok((new_handle(done.tensor), done.placement))
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
        let (image, color) = with_frame(frame, |f| Ok((f.tensor().clone(), f.color_spec())))?;
        let (result, _) = run(preprocessor, &[&image], None, color)?;
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
        let image: Tensor<u8> = t.try_into()?;
        let (result, _) = run(preprocessor, &[&image], None, ColorSpec::default())?;
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
        let (image, color) = with_frame(frame, |f| Ok((f.tensor().clone(), f.color_spec())))?;
        let (result, placed) = run(preprocessor, &[&image], crop, color)?;
        if let Ok(placement) = Out::new(placement, "placement") {
            // SAFETY: not NULL; the caller's promise for `placement`.
            unsafe { placement.write(zerocam_placement::from(&placed)) };
        }
        // SAFETY: the caller's promise for `out`.
        unsafe { out.write(result) };
        Ok(())
    })
}

/// Converts `count` frames (the model input's batch) into the batch
/// elements of one model input tensor, each read in the first frame's
/// colour space: a new handle, as `zerocam_preprocessor_run`.
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
    frames: *const *const zerocam_frame,
    count: usize,
    out: *mut *mut zerocam_tensor,
) -> zerocam_status {
    call("zerocam_preprocessor_run_batch", || {
        let out = Out::new(out, "out")?;
        // SAFETY: the caller's promise for `frames`.
        let handles = unsafe { slice(frames, count, "frames") }?;
        let mut images = Vec::with_capacity(count);
        let mut color = ColorSpec::default();
        for (i, &f) in handles.iter().enumerate() {
            let (image, c) = with_frame(f, |f| Ok((f.tensor().clone(), f.color_spec())))?;
            if i == 0 {
                color = c;
            }
            images.push(image);
        }
        let refs: Vec<&Tensor<u8>> = images.iter().collect();
        let (result, _) = run(preprocessor, &refs, None, color)?;
        // SAFETY: the caller's promise for `out`.
        unsafe { out.write(result) };
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
