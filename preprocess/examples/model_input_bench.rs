//! Figures of the CPU model-input path ([`CpuPreprocessor`]), from a
//! 1280x720 NV12 frame, centre-cropped to 640x640:
//! - a 1x3x640x640 f32 NCHW input normalized with ImageNet's mean/std;
//! - a 1x640x640x3 u8 NHWC input (plain RGB);
//! - the other element types, a letterbox, and area resampling;
//! - the f32 input from a 1280x720 YUYV frame (packed 4:2:2, as USB cameras
//!   give) and from an RGB one.
//!
//! Per case: the fastest and median time over `RUNS` runs (default 60) after
//! 5 warm-up runs, and the allocations per frame in steady state (counted
//! by this example's global allocator over every thread; the example fails
//! if any case allocates), the median of a `memset` of the output's bytes in
//! the same run (the floor), and the OpenCV + numpy code that makes the same
//! tensor. Then four cameras: one batch-4 call against four batch-1 calls,
//! each into the caller's tensors (`Preprocessor::run_batch_into`,
//! `run_into`).
//!
//! `ZEROCAM_THREADS=N cargo run --release -p zerocam-preprocess --example model_input_bench [RUNS] [FILTER]`
//!
//! `ZEROCAM_THREADS` splits each image's rows over N threads (default 1);
//! `FILTER` runs only the cases whose name contains it (`f32`, `u8`, ...).

use std::time::{Duration, Instant};

use zerocam_preprocess::{
    Backend, CpuPreprocessor, Fit, ModelInput, ModelLayout, Preprocessor, Resample, SourceImage,
};
use zerocam_tensor::ColorSpec;
use zerocam_tensor::{DType, PixelFormat, Tensor, TensorDyn, TensorMemory};

// Counts every allocation of the process (all_threads).
use zerocam_test_support::alloc as counting_alloc;
#[global_allocator]
static ALLOC: counting_alloc::Counting = counting_alloc::Counting;

const MEAN: [f32; 3] = [0.485, 0.456, 0.406];
const STD: [f32; 3] = [0.229, 0.224, 0.225];

/// The OpenCV + numpy steps shared by every case: the NV12 frame (a
/// 1080x1280 u8 array) to RGB, the centre 720x720, resized bilinearly.
const OPENCV_RGB: &str = "rgb = cv2.resize(cv2.cvtColor(nv12, cv2.COLOR_YUV2RGB_NV12)\
                          [:, 280:1000], (640, 640), interpolation=cv2.INTER_LINEAR)";

/// The same from a YUYV frame (`yuyv`: a 720x1280x2 u8 array).
const OPENCV_RGB_YUYV: &str = "rgb = cv2.resize(cv2.cvtColor(yuyv, cv2.COLOR_YUV2RGB_YUYV)\
                               [:, 280:1000], (640, 640), interpolation=cv2.INTER_LINEAR)";

/// The same from an RGB frame (`frame`: a 720x1280x3 u8 array).
const OPENCV_RGB_RGB: &str = "rgb = cv2.resize(frame[:, 280:1000], (640, 640), \
                              interpolation=cv2.INTER_LINEAR)";

/// One benchmark case: its name, its input, and the OpenCV + numpy code that
/// makes the same tensor from `rgb` (after [`OPENCV_RGB`], unless it says
/// otherwise).
struct Case {
    name: &'static str,
    /// The frame's format (1280x720).
    source: PixelFormat,
    input: ModelInput,
    opencv: &'static str,
}

/// The letterbox's `rgb`: the whole frame scaled to 640x360, bars above and
/// below.
const OPENCV_LETTERBOX: &str = "rgb = cv2.copyMakeBorder(cv2.resize(cv2.cvtColor(nv12, \
    cv2.COLOR_YUV2RGB_NV12), (640, 360), interpolation=cv2.INTER_LINEAR), 140, 140, 0, 0, \
    cv2.BORDER_CONSTANT, value=(114, 114, 114))";

/// The f32 ImageNet input's last OpenCV + numpy step.
const OPENCV_IMAGENET: &str =
    "((rgb.astype(np.float32) / 255 - mean) / std).transpose(2, 0, 1)[None]";

fn cases() -> Result<Vec<Case>, Box<dyn std::error::Error>> {
    let base = || ModelInput::new(640, 640).map(|i| i.fit(Fit::Crop));
    let imagenet = || base()?.dtype(DType::F32)?.mean_std(MEAN, STD);
    Ok(vec![
        Case {
            source: PixelFormat::Nv12,
            name: "1x3x640x640 f32 NCHW, ImageNet mean/std",
            input: imagenet()?,
            opencv: OPENCV_IMAGENET,
        },
        Case {
            source: PixelFormat::Nv12,
            name: "1x640x640x3 u8 NHWC (RGB)",
            input: base()?.dtype(DType::U8)?.with_layout(ModelLayout::Nhwc),
            opencv: "rgb[None]",
        },
        Case {
            source: PixelFormat::Nv12,
            name: "1x3x640x640 u8 NCHW (RGB)",
            input: base()?.dtype(DType::U8)?,
            opencv: "rgb.transpose(2, 0, 1)[None].copy()",
        },
        Case {
            source: PixelFormat::Nv12,
            name: "1x640x640x3 i8 NHWC, scale 1/255 zero point -128",
            input: base()?
                .dtype(DType::I8)?
                .with_layout(ModelLayout::Nhwc)
                .quantization(1.0 / 255.0, -128)?,
            opencv: "(rgb.astype(np.int16) - 128).astype(np.int8)[None]",
        },
        Case {
            source: PixelFormat::Nv12,
            name: "1x3x640x640 f16 NCHW, ImageNet mean/std",
            input: base()?.dtype(DType::F16)?.mean_std(MEAN, STD)?,
            opencv: "((rgb.astype(np.float32) / 255 - mean) / std).astype(np.float16)\
                     .transpose(2, 0, 1)[None]",
        },
        Case {
            source: PixelFormat::Nv12,
            name: "1x3x640x640 f32 NCHW area, ImageNet mean/std",
            input: base()?
                .dtype(DType::F32)?
                .mean_std(MEAN, STD)?
                .resample(Resample::Area),
            opencv: "the same with interpolation=cv2.INTER_AREA, then \
                     ((rgb.astype(np.float32) / 255 - mean) / std).transpose(2, 0, 1)[None]",
        },
        Case {
            source: PixelFormat::Nv12,
            name: "1x3x640x640 f32 NCHW letterbox (YOLO), 0..1",
            input: ModelInput::new(640, 640)?.fit(Fit::Letterbox { pad: [114; 3] }),
            opencv: "(rgb.astype(np.float32) / 255).transpose(2, 0, 1)[None]",
        },
        Case {
            source: PixelFormat::Yuyv,
            name: "1x3x640x640 f32 NCHW from YUYV, ImageNet mean/std",
            input: imagenet()?,
            opencv: OPENCV_IMAGENET,
        },
        Case {
            source: PixelFormat::Rgb,
            name: "1x3x640x640 f32 NCHW from RGB, ImageNet mean/std",
            input: imagenet()?,
            opencv: OPENCV_IMAGENET,
        },
    ])
}

/// A 1280x720 frame of `format`, its bytes a fixed pattern.
fn frame(format: PixelFormat) -> Result<Tensor<u8>, Box<dyn std::error::Error>> {
    let t = Tensor::<u8>::image(1280, 720, format, Some(TensorMemory::Mem))?;
    let mut m = t.map()?;
    for (i, b) in m.iter_mut().enumerate() {
        *b = (16 + (i * 7 + i / 1280 * 3) % 220) as u8;
    }
    m.finish()?;
    Ok(t)
}

/// Times `case` and returns its allocations per frame in steady state.
fn bench(case: &Case, src: &Tensor<u8>, runs: usize) -> Result<usize, Box<dyn std::error::Error>> {
    let input = &case.input;
    let dst = TensorDyn::new(
        &input.shape(),
        input.element_type(),
        Some(TensorMemory::Mem),
        None,
    )?;
    let mut pre = CpuPreprocessor::with_threads(threads());
    let color = ColorSpec::default();
    for _ in 0..5 {
        pre.convert(src, None, color, input, &dst, 0)?;
    }
    let bytes = input.shape().iter().product::<usize>() * input.element_type().size();
    let mut floor = vec![1u8; bytes];
    let mut times: Vec<Duration> = Vec::with_capacity(runs);
    let mut memsets: Vec<Duration> = Vec::with_capacity(runs);
    let before = counting_alloc::all_threads();
    for _ in 0..runs {
        let start = Instant::now();
        pre.convert(src, None, color, input, &dst, 0)?;
        times.push(start.elapsed());
        let start = Instant::now();
        floor.fill(0);
        std::hint::black_box(&mut floor);
        memsets.push(start.elapsed());
    }
    let allocations = counting_alloc::all_threads() - before;
    times.sort();
    memsets.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let per_frame = usize::try_from(allocations)
        .unwrap_or(usize::MAX)
        .div_ceil(runs);
    println!(
        "{}: fastest {:.2} ms, median {:.2} ms over {runs} runs, {per_frame} allocations/frame",
        case.name,
        ms(times[0]),
        ms(times[runs / 2]),
    );
    let (median, memset) = (times[runs / 2], memsets[runs / 2]);
    println!(
        "  memset of the output ({bytes} bytes): median {:.3} ms; zerocam {:.1}x it",
        ms(memset),
        median.as_secs_f64() / memset.as_secs_f64().max(1e-9)
    );
    let rgb = match (input.fit_mode(), case.source) {
        (Fit::Letterbox { .. }, _) => OPENCV_LETTERBOX,
        (_, PixelFormat::Yuyv) => OPENCV_RGB_YUYV,
        (_, PixelFormat::Rgb) => OPENCV_RGB_RGB,
        _ => OPENCV_RGB,
    };
    println!("  OpenCV + numpy: {rgb}; {}", case.opencv);
    Ok(per_frame)
}

/// `ZEROCAM_THREADS`, else 1.
fn threads() -> usize {
    std::env::var("ZEROCAM_THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(1)
}

/// Four cameras of `input`: one batch-4 call against four batch-1 calls,
/// each into the caller's tensors; returns the allocations per set.
fn cameras(
    label: &str,
    input: &ModelInput,
    src: &Tensor<u8>,
    runs: usize,
) -> Result<usize, Box<dyn std::error::Error>> {
    let four = input.clone().batch(4)?;
    let mem = Some(TensorMemory::Mem);
    let batch_dst = TensorDyn::new(&four.shape(), four.element_type(), mem, None)?;
    let single_dst: Vec<TensorDyn> = (0..4)
        .map(|_| TensorDyn::new(&input.shape(), input.element_type(), mem, None))
        .collect::<Result<_, _>>()?;
    let mut batch = Preprocessor::new(four, Backend::Cpu)?.with_threads(threads());
    let mut single = Preprocessor::new(input.clone(), Backend::Cpu)?.with_threads(threads());
    let sources = [SourceImage::new(src); 4];
    let color = ColorSpec::default();
    let mut one_call = || {
        batch
            .run_batch_into(&sources, &batch_dst, |_, _| {})
            .map(|_| ())
    };
    let mut four_calls = || {
        single_dst
            .iter()
            .try_for_each(|d| single.run_into(src, None, color, d).map(|_| ()))
    };
    for _ in 0..3 {
        one_call()?;
        four_calls()?;
    }
    let (mut a, mut b) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    let before = counting_alloc::all_threads();
    for _ in 0..runs {
        let start = Instant::now();
        one_call()?;
        a.push(start.elapsed());
        let start = Instant::now();
        four_calls()?;
        b.push(start.elapsed());
    }
    let allocations = counting_alloc::all_threads() - before;
    a.sort();
    b.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let per_set = usize::try_from(allocations)
        .unwrap_or(usize::MAX)
        .div_ceil(runs);
    println!(
        "4 cameras, {label}: one batch-4 call median {:.2} ms, four batch-1 calls {:.2} ms, \
         {per_set} allocations/set",
        ms(a[runs / 2]),
        ms(b[runs / 2])
    );
    Ok(per_set)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let runs = args
        .next()
        .map(|a| a.parse::<usize>())
        .transpose()?
        .unwrap_or(60)
        .max(1);
    let filter = args.next().unwrap_or_default();
    let src = frame(PixelFormat::Nv12)?;
    println!(
        "1280x720 NV12 (BT.601 limited; YUYV and RGB where named) -> centre crop 720x720 \
         -> 640x640, {} thread(s) (nv12 = the frame as a 1080x1280 u8 array; mean, std = \
         ImageNet's)",
        threads()
    );
    let mut allocating = Vec::new();
    let all = cases()?;
    for case in all.iter().filter(|c| c.name.contains(&filter)) {
        let own;
        let src = if case.source == PixelFormat::Nv12 {
            &src
        } else {
            own = frame(case.source)?;
            &own
        };
        if bench(case, src, runs)? > 0 {
            allocating.push(case.name);
        }
    }
    if "4 cameras".contains(&filter) || filter.is_empty() {
        for case in all.iter().take(2) {
            if cameras(case.name, &case.input, &src, runs)? > 0 {
                allocating.push(case.name);
            }
        }
    }
    if allocating.is_empty() {
        Ok(())
    } else {
        Err(format!("allocations in steady state: {allocating:?}").into())
    }
}
