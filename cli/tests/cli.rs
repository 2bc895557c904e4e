//! The `zerocam` CLI on the host, where there is no camera: every subcommand
//! runs on the pattern source and says so; errors are one line, non-zero.
#![allow(clippy::unwrap_used)] // tests may panic

mod common;

use common::fails;

fn stdout(args: &[&str]) -> String {
    common::run_ok("zerocam", args)
}

#[test]
fn list_says_there_is_no_camera() {
    let out = stdout(&["list"]);
    assert!(
        out.lines()
            .next()
            .unwrap()
            .contains("no V4L2 capture device found"),
        "{out}"
    );
    assert!(out.contains("DMA heaps:"), "{out}");
}

#[test]
fn capture_writes_a_png_of_the_pattern() {
    let dir = std::env::temp_dir().join(format!("zerocam-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let png = dir.join("x.png");
    let out = stdout(&[
        "capture",
        "--format",
        "NV12",
        "--size",
        "320x240",
        "--frames",
        "1",
        "-o",
        png.to_str().unwrap(),
    ]);
    assert!(
        out.lines()
            .next()
            .unwrap()
            .contains("built-in pattern source"),
        "{out}"
    );
    assert!(
        out.contains("RGB PNG of frame 0, its YCbCr read as BT.601 limited range"),
        "the pattern's colour spec: {out}"
    );
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&png).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (320, 240));
    // Frame 0: bar 5 (red) spans x 200..240; row 100 is away from the white line.
    let px = |x: usize, y: usize| &buf[(y * 320 + x) * 3..(y * 320 + x) * 3 + 3];
    assert_eq!(
        px(220, 100),
        &[254, 0, 0],
        "BT.601 red (81, 90, 240) back to RGB"
    );
    assert_eq!(px(10, 100), &[255, 255, 255]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn capture_raw_writes_every_frame_without_padding() {
    let dir = std::env::temp_dir().join(format!("zerocam-raw-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let raw = dir.join("x.raw");
    stdout(&[
        "capture",
        "pattern",
        "--format",
        "NV16M",
        "--size",
        "64x32",
        "--frames",
        "3",
        "-o",
        raw.to_str().unwrap(),
    ]);
    assert_eq!(std::fs::metadata(&raw).unwrap().len(), 3 * 64 * 32 * 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bench_json_counts_imports_once_per_buffer_plane() {
    let out = stdout(&[
        "bench",
        "--json",
        "--format",
        "NV12M",
        "--size",
        "640x480",
        "--frames",
        "120",
        "--buffers",
        "3",
    ]);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["frames"], 120);
    assert_eq!(v["imports"], 6, "3 buffers x 2 planes");
    assert_eq!(v["cache_hits"], 120 * 2 - 6);
    assert_eq!(v["dropped"], 0);
    for key in [
        "fps",
        "seconds",
        "overhead_us_median",
        "overhead_us_p99",
        "latency_us_median",
        "latency_us_p99",
        "cpu_us_per_frame",
    ] {
        assert!(v[key].as_f64().unwrap() > 0.0, "{key}: {v}");
    }
    assert!(v["source"].as_str().unwrap().contains("pattern"));
}

#[test]
fn bench_text_starts_with_the_source() {
    let out = stdout(&["bench", "--frames", "20"]);
    assert!(
        out.lines()
            .next()
            .unwrap()
            .contains("built-in pattern source"),
        "{out}"
    );
    assert!(
        out.contains("imports 4 (buffers 4 x planes 1), cache hits 16"),
        "{out}"
    );
    // "20 frames in 0.67 s (30.0 fps)": the time and the rate, each with its unit.
    let line = out.lines().find(|l| l.contains(" frames in ")).unwrap();
    let (count, rest) = line.split_once(" frames in ").unwrap();
    let (secs, fps) = rest.split_once(" s (").unwrap();
    assert_eq!(count, "20", "{line}");
    let secs: f64 = secs.parse().unwrap();
    let fps: f64 = fps.strip_suffix(" fps)").unwrap().parse().unwrap();
    // The seconds are rounded to 0.01 s: frames = fps x seconds within that.
    assert!(
        fps > 0.0 && (fps * secs - 20.0).abs() <= fps * 0.005 + 0.1,
        "{line}"
    );
}

#[test]
fn bad_arguments_are_one_line_errors() {
    assert!(fails(&["bench", "--size", "12x"]).contains("bad size \"12x\""));
    assert!(fails(&["bench", "--format", "MJPG"]).contains("unknown format \"MJPG\""));
    assert!(fails(&["bench", "/dev/video-nope"]).contains("/dev/video-nope: no such device"));
    assert!(fails(&["info", "/dev/null"]).contains("not a V4L2 device"));
    assert!(fails(&["bench", "--size", "63x32"]).contains("63x32"));
    assert!(fails(&["bench", "--memory", "usrptr"]).contains("expected mmap or dmabuf"));
    // Zenoh's flags beside a source that is not zenoh: (and no serve
    // --zenoh) would do nothing: refused, not ignored.
    let err = fails(&["bench", "pattern", "--connect", "tcp/127.0.0.1:7447"]);
    assert!(err.contains("are for zenoh: sources"), "{err}");
    assert!(fails(&["frobnicate"]).contains("frobnicate"));
    // clap's own errors keep the words that say what is wrong.
    let missing = fails(&["capture", "--format", "XYZ"]);
    assert!(
        missing.contains("required arguments were not provided: --output <OUTPUT>"),
        "{missing}"
    );
    assert!(
        fails(&["bench", "--frames", "x"]).contains("invalid value 'x' for '--frames <FRAMES>'")
    );
    assert!(fails(&["bench", "--nope"]).contains("unexpected argument '--nope'"));
}

#[test]
fn no_subcommand_probes_memory() {
    let out = stdout(&[]);
    assert!(out.contains("mapping address moved: false"), "{out}");
}
