//! Camera → zerocam model input → MediaPipe BlazeFace (LiteRT) → faces in
//! frame pixels, one line per frame. Feature `litert`.
//!
//! ```sh
//! . examples/model-env        # LiteRT, the model and a test image in python/.venv
//! cargo run --release -p zerocam-examples --features litert --bin face_detect -- \
//!     [/dev/videoN | pattern] [--image PNG] [--model short|full|PATH] [--frames N] [--threshold T] \
//!     [--preprocess-on auto|gpu|cpu] [--view ADDR:PORT]
//! ```
//!
//! With no device, the pattern camera (1280x720 NV12); with `--image`, a PNG
//! as every frame. Each line: the frame, its faces as `score [x0, y0, x1, y1]`
//! in frame pixels, and the time of each step (`--no-timings` leaves them out).

#![deny(unsafe_code)]

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use zerocam::capture::open::{open, SourceSpec};
use zerocam::net::view::{post_detections, Detection, Detections};
use zerocam::preprocess::Backend;
use zerocam::tensor::ColorSpec;
use zerocam_examples::face::{
    describe, describe_keypoints, locate_model, FaceDetector, FrameFace, Timings,
};
use zerocam_examples::still::read_png;

/// BlazeFace face detection on camera frames or a PNG.
#[derive(Parser, Debug)]
#[command(name = "face_detect")]
struct Args {
    /// A V4L2 device, `pattern`, or none: the first camera, else the pattern.
    device: Option<String>,
    /// `short` (128x128), `full` (192x192) or a `.tflite` path.
    #[arg(long, default_value = "short")]
    model: String,
    /// Frames to process.
    #[arg(long, default_value_t = 10)]
    frames: u64,
    /// A PNG to use as every frame instead of a camera.
    #[arg(long, conflicts_with = "device")]
    image: Option<std::path::PathBuf>,
    /// Minimum score (default: MediaPipe's, 0.5 short range, 0.6 full range).
    #[arg(long)]
    threshold: Option<f32>,
    /// Also print each face's six keypoints.
    #[arg(long)]
    keypoints: bool,
    /// Where model inputs are made: `auto` (the GPU where it is real
    /// hardware, else the CPU), `gpu` or `cpu`.
    #[arg(long, default_value = "auto", value_parser = ["auto", "gpu", "cpu"])]
    preprocess_on: String,
    /// Leave the timings out (for output that is the same run after run).
    #[arg(long)]
    no_timings: bool,
    /// Post each frame's boxes to a live view (`zerocam view` or `serve
    /// --http`) at ADDR:PORT, drawn there over the frame of that sequence.
    /// Read the view's own frames (`unix:SOCKET` of a `zerocam serve
    /// --socket SOCKET --http ...`) so the sequences are the same.
    #[arg(long)]
    view: Option<String>,
    /// The view's token, if it wants one.
    #[arg(long, requires = "view")]
    view_token: Option<String>,
}

/// `faces` of the frame of `sequence` (a `size` picture) as a view's
/// detections.
fn detections(sequence: u64, size: (u32, u32), faces: &[FrameFace]) -> Detections {
    Detections {
        sequence: sequence as u32,
        size: Some(size),
        boxes: faces
            .iter()
            .map(|f| {
                let [x0, y0, x1, y1] = f.bbox;
                Detection {
                    x: x0,
                    y: y0,
                    w: x1 - x0,
                    h: y1 - y0,
                    score: Some(f64::from(f.score)),
                    label: "face".into(),
                }
            })
            .collect(),
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    if let Some(t) = args.threshold.filter(|t| !(0.0..=1.0).contains(t)) {
        return Err(format!("--threshold {t} is not within 0..=1").into());
    }
    let path = locate_model(&args.model)?;
    // Quiets LiteRT's INFO lines on stderr where libLiteRt exports its logger
    // control; the ai-edge-litert 2.1.4 wheel's does not (Unsupported), so
    // there they stay: stdout has only this example's lines.
    let _ = litert::set_global_log_severity(litert::LogSeverity::Warning);
    let device = match args.preprocess_on.as_str() {
        "gpu" => Backend::Gpu,
        "cpu" => Backend::Cpu,
        _ => Backend::Auto,
    };
    let mut detector = FaceDetector::open_on(&path, device)?;
    let threshold = args
        .threshold
        .unwrap_or(detector.model().default_threshold());
    let shape = detector.input().shape();
    println!(
        "model {} ({:?}): input {shape:?} f32 NHWC, mean = std = 0.5, letterbox; threshold {threshold}",
        path.display(),
        detector.model()
    );
    let pre = detector.preprocessor();
    println!(
        "model input on the {} ({})",
        pre.backend().name(),
        pre.reason()
    );
    let (mut still, mut camera) = (None, None);
    match &args.image {
        Some(png) => {
            let image = read_png(png)?;
            println!(
                "image {}: {}x{} RGB",
                png.display(),
                image.width().unwrap_or(0),
                image.height().unwrap_or(0)
            );
            still = Some(image);
        }
        None => {
            let opened = open(&SourceSpec::new(args.device.clone()))?;
            println!("{}", opened.description);
            camera = Some(opened);
        }
    }
    let mut total = Timings::default();
    let mut view_failed = false;
    for i in 0..args.frames {
        let frame = match camera.as_mut() {
            Some(c) => Some(c.source.next_frame(Duration::from_secs(5))?),
            None => None,
        };
        let (tensor, sequence, color) = match (&frame, &still) {
            (Some(f), _) => (f.tensor(), u64::from(f.sequence()), f.color_spec()),
            (None, Some(image)) => (image, i, ColorSpec::default()),
            (None, None) => return Err("no source".into()),
        };
        let size = match (&camera, &still) {
            (Some(c), _) => {
                let f = c.source.stream_format();
                (f.width, f.height)
            }
            (None, Some(image)) => (
                image.width().unwrap_or(0) as u32,
                image.height().unwrap_or(0) as u32,
            ),
            (None, None) => (0, 0),
        };
        let (faces, t) = detector.detect(tensor, color, threshold)?;
        if let Some(addr) = &args.view {
            // A view that went away does not stop the model: said once.
            let d = detections(sequence, size, faces);
            if let Err(e) = post_detections(addr, args.view_token.as_deref(), &d) {
                if !view_failed {
                    eprintln!("face_detect: {e} (the model goes on)");
                    view_failed = true;
                }
            }
        }
        let mut line = format!("frame {sequence}: {} face(s)", faces.len());
        for f in faces {
            line += &format!("  {}", describe(f));
        }
        if !args.no_timings {
            line += &format!(
                "  | preprocess {:.2} ms, inference {:.2} ms, decode {:.3} ms",
                ms(t.preprocess),
                ms(t.inference),
                ms(t.decode)
            );
        }
        println!("{line}");
        if args.keypoints {
            for f in faces {
                println!("  {}", describe_keypoints(f));
            }
        }
        if i > 0 {
            total.preprocess += t.preprocess;
            total.inference += t.inference;
            total.decode += t.decode;
        }
    }
    // A mean over more frames than a u32 counts is not worth a division by
    // zero or a wrong figure: none is printed then.
    let timed = u32::try_from(args.frames.saturating_sub(1))
        .ok()
        .filter(|&n| n > 0);
    if let (false, Some(n)) = (args.no_timings, timed) {
        println!(
            "mean of frames 1..{}: preprocess {:.2} ms, inference {:.2} ms, decode {:.3} ms",
            args.frames - 1,
            ms(total.preprocess / n),
            ms(total.inference / n),
            ms(total.decode / n)
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    #[cfg(feature = "libcamera")]
    zerocam::capture::quiet_libcamera_log();
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("face_detect: {e}");
            ExitCode::FAILURE
        }
    }
}
