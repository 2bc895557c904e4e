//! Single-threaded figures of the CPU model-input path ([`CpuPreprocessor`]):
//! a 1280x720 NV12 frame, centre-cropped to 640x640,
//! - to a 1x3x640x640 f32 NCHW input normalized with ImageNet's mean/std;
//! - to a 1x640x640x3 u8 NHWC input.
//!
//! Median, fastest and 90th percentile over `RUNS` runs (default 60) after 5
//! warm-up runs: `cargo run --release -p zerocam-gpu --example model_input_bench [RUNS]`.

use std::time::{Duration, Instant};

use zerocam_gpu::{ColorSpec, CpuPreprocessor, Fit, ModelInput, ModelLayout};
use zerocam_tensor::{DType, PixelFormat, Tensor, TensorDyn, TensorMemory};

fn frame() -> Result<Tensor<u8>, Box<dyn std::error::Error>> {
    let t = Tensor::<u8>::image(1280, 720, PixelFormat::Nv12, Some(TensorMemory::Mem))?;
    let mut m = t.map()?;
    for (i, b) in m.iter_mut().enumerate() {
        *b = (16 + (i * 7 + i / 1280 * 3) % 220) as u8;
    }
    m.finish()?;
    Ok(t)
}

fn bench(
    name: &str,
    src: &Tensor<u8>,
    input: &ModelInput,
    runs: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let dst = TensorDyn::new(
        &input.shape(),
        input.element_type(),
        Some(TensorMemory::Mem),
        None,
    )?;
    let mut pre = CpuPreprocessor::new();
    let color = ColorSpec::default();
    for _ in 0..5 {
        pre.convert(src, None, color, input, &dst, 0)?;
    }
    let mut times: Vec<Duration> = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        pre.convert(src, None, color, input, &dst, 0)?;
        times.push(start.elapsed());
    }
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "{name}: median {:.2} ms, fastest {:.2} ms, p90 {:.2} ms over {runs} runs",
        ms(times[runs / 2]),
        ms(times[0]),
        ms(times[runs * 9 / 10]),
    );
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runs = std::env::args()
        .nth(1)
        .map(|a| a.parse::<usize>())
        .transpose()?
        .unwrap_or(60)
        .max(1);
    let src = frame()?;
    let f32_input = ModelInput::new(640, 640)?
        .dtype(DType::F32)?
        .mean_std([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])?
        .fit(Fit::Crop);
    let u8_input = ModelInput::new(640, 640)?
        .dtype(DType::U8)?
        .with_layout(ModelLayout::Nhwc)
        .fit(Fit::Crop);
    println!("1280x720 NV12 -> centre crop 720x720 -> 640x640, one thread");
    bench(
        "1x3x640x640 f32 NCHW, ImageNet mean/std",
        &src,
        &f32_input,
        runs,
    )?;
    bench("1x640x640x3 u8 NHWC", &src, &u8_input, runs)?;
    Ok(())
}
