//! JPEG compression time of a 1080p frame of the pattern source with
//! [`JpegEncoder`] (libjpeg-turbo from the YCbCr planes, buffers reused):
//!
//! ```text
//! cargo run --release -p zerocam-encode --example jpeg_bench [ITERATIONS] [QUALITY]
//! ```
//!
//! Prints, per format and colour spec, the min, median and mean time per
//! frame, the frames per second (of the median) on one core and the JPEG's
//! size.

use std::time::{Duration, Instant};

use zerocam_capture::{FrameSource, PatternConfig, PatternSource};
use zerocam_encode::jpeg::JpegEncoder;
use zerocam_tensor::ColorSpec;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let iterations: usize = args.next().map_or(Ok(200), |a| a.parse())?;
    let quality: u8 = args.next().map_or(Ok(85), |a| a.parse())?;
    let (w, h) = (1920, 1080);
    println!("JPEG of a {w}x{h} pattern frame at quality {quality}, {iterations} iterations each");
    for (name, spec) in [
        ("NV12", None),
        ("NV12", Some(ColorSpec::BT601_FULL)),
        ("NV12", Some(ColorSpec::BT709_LIMITED)),
        ("YUYV", None),
        ("RGB24", None),
    ] {
        let mut source = PatternSource::new(PatternConfig::new(name.parse()?, w, h))?;
        let frame = source.next_frame(Duration::from_secs(1))?;
        let spec = spec.unwrap_or(frame.color_spec());
        let mut jpeg = JpegEncoder::new(quality)?;
        let size = jpeg.encode_tensor(frame.tensor(), spec)?.len();
        let mut times = Vec::with_capacity(iterations);
        for _ in 0..iterations {
            let t = Instant::now();
            jpeg.encode_tensor(frame.tensor(), spec)?;
            times.push(t.elapsed());
        }
        times.sort();
        let (min, median) = (times[0], times[times.len() / 2]);
        let mean = times.iter().sum::<Duration>() / times.len().max(1) as u32;
        println!(
            "{name:5} read as {:22} min {:6.2} ms  median {:6.2} ms  mean {:6.2} ms  {:6.1} fps  {:7} bytes",
            spec.to_string(),
            min.as_secs_f64() * 1e3,
            median.as_secs_f64() * 1e3,
            mean.as_secs_f64() * 1e3,
            1.0 / median.as_secs_f64(),
            size
        );
    }
    Ok(())
}
