//! Frames say how their YCbCr is to be read, on vivid in the kernel lab
//! (`cargo lab -p zerocam-capture --test lab_capture_color`): vivid's
//! "Colorspace", "Y'CbCr Encoding" and "Quantization" controls change both
//! what its format reports (`colorspace`, `ycbcr_enc`, `quantization`) and
//! the samples it generates, and its YCbCr formats take a colour asked for
//! in `VIDIOC_S_FMT` (`Device::set_format_color`). Each case checks the spec the format and the
//! frames carry, and that vivid's 100% red is that spec's red (within 1.5:
//! vivid's arithmetic lands a little under the exact values, 75 for full
//! range's 76.2). The specs' reds are 10 or more apart in some component.
#![cfg(feature = "lab")]
#![allow(missing_docs, clippy::unwrap_used)] // tests may panic

mod vivid_common;
use vivid_common::{lock, red_device, MULTI, SINGLE, WAIT};

use zerocam_capture::{CaptureError, CaptureFormat, Device, FrameSource, Stream, StreamConfig};
use zerocam_tensor::{ColorSpec, Matrix, Range};

/// Puts vivid's colour controls back to their defaults when dropped (even
/// on a failed assertion): the other lab tests run in the same boot. Each is
/// set to another item first: setting a control to its current value does
/// nothing, and a colour asked for in `S_FMT` stays until a control changes.
struct DefaultColour(&'static str);

impl Drop for DefaultColour {
    fn drop(&mut self) {
        // No panic here: it may run while a failed assertion unwinds.
        let restored = Device::open(self.0).and_then(|d| {
            for (control, other, default) in [
                ("Colorspace", "Rec. 709", "sRGB"),
                ("Y'CbCr Encoding", "ITU-R 601", "Default"),
                ("Quantization", "Limited Range", "Default"),
            ] {
                d.set_menu(control, other)?;
                d.set_menu(control, default)?;
            }
            Ok(())
        });
        if let Err(e) = restored {
            eprintln!("{}: vivid's colour controls not restored: {e}", self.0);
        }
    }
}

/// `(Kr, Kb)` of BT.601, BT.709 and BT.2020.
const BT601: (f64, f64) = (0.299, 0.114);
const BT709: (f64, f64) = (0.2126, 0.0722);
const BT2020: (f64, f64) = (0.2627, 0.0593);

/// The weights of `matrix`.
fn weights(matrix: Matrix) -> (f64, f64) {
    match matrix {
        Matrix::Bt601 => BT601,
        Matrix::Bt709 => BT709,
    }
}

/// 8-bit Y, Cb, Cr of pure red (R' = 1, G' = B' = 0) with weights `(kr, kb)`
/// in `range`: Y' = Kr, Cb' = -Kr / (2 (1 - Kb)), Cr' = 1/2.
fn red((kr, kb): (f64, f64), range: Range) -> [f64; 3] {
    let (y, cb, cr) = (kr, -kr / (2.0 * (1.0 - kb)), 0.5);
    match range {
        Range::Limited => [16.0 + 219.0 * y, 128.0 + 224.0 * cb, 128.0 + 224.0 * cr],
        Range::Full => [
            255.0 * y,
            128.0 + 255.0 * cb,
            (128.0 + 255.0 * cr).min(255.0),
        ],
    }
}

/// One setting of vivid's colour controls (menu items) and the spec it means.
struct Case {
    colorspace: &'static str,
    encoding: &'static str,
    quantization: &'static str,
    want: ColorSpec,
    /// The weights vivid encodes with, when they are not `want`'s: BT.2020,
    /// which zerocam reads with BT.709's (the nearest it has).
    encoded_with: Option<(f64, f64)>,
}

const CASES: [Case; 6] = [
    Case {
        colorspace: "sRGB", // vivid's default
        encoding: "Default",
        quantization: "Default",
        want: ColorSpec::BT601_LIMITED,
        encoded_with: None,
    },
    Case {
        colorspace: "Rec. 709",
        encoding: "Default",
        quantization: "Default",
        want: ColorSpec::BT709_LIMITED,
        encoded_with: None,
    },
    Case {
        colorspace: "sRGB",
        encoding: "Rec. 709",
        quantization: "Default",
        want: ColorSpec::BT709_LIMITED,
        encoded_with: None,
    },
    Case {
        colorspace: "sRGB",
        encoding: "Default",
        quantization: "Full Range",
        want: ColorSpec::BT601_FULL,
        encoded_with: None,
    },
    Case {
        colorspace: "SMPTE 170M",
        encoding: "Default",
        quantization: "Default",
        want: ColorSpec::BT601_LIMITED,
        encoded_with: None,
    },
    Case {
        // No BT.2020 equations in zerocam: read as BT.709, the nearest.
        colorspace: "BT.2020",
        encoding: "Default",
        quantization: "Default",
        want: ColorSpec::BT709_LIMITED,
        encoded_with: Some(BT2020),
    },
];

/// Y, Cb, Cr of the first pixel pair of a YUYV or NV12M frame.
fn first_sample(frame: &zerocam_capture::Frame) -> [u8; 3] {
    let t = frame.tensor();
    if t.plane_count() == 1 {
        let m = t.map_read().unwrap();
        [m[0], m[1], m[3]] // Y0 U Y1 V
    } else {
        let y = t.plane(0).unwrap().map_read().unwrap()[0];
        let c = t.plane(1).unwrap();
        let m = c.map_read().unwrap();
        [y, m[0], m[1]]
    }
}

fn check_cases(path: &'static str, format: &str) -> Vec<String> {
    let format: CaptureFormat = format.parse().unwrap();
    let _g = lock(path);
    let _restore = DefaultColour(path);
    let mut seen = Vec::new();
    for case in CASES {
        let what = format!(
            "{path} {}: colorspace {}, encoding {}, quantization {}",
            format.name, case.colorspace, case.encoding, case.quantization
        );
        let mut d = red_device(path);
        d.set_menu("Colorspace", case.colorspace).unwrap();
        d.set_menu("Y'CbCr Encoding", case.encoding).unwrap();
        d.set_menu("Quantization", case.quantization).unwrap();
        let set = d.set_format(format, 320, 180).unwrap();
        assert_eq!(set.color, case.want, "{what}: S_FMT's reply");
        assert_eq!(d.format().unwrap().color, case.want, "{what}: G_FMT");
        let mut s = Stream::new(d, StreamConfig::default()).unwrap();
        assert_eq!(s.stream_format().color, case.want, "{what}: the stream");
        for _ in 0..3 {
            let f = s.next_frame(WAIT).unwrap();
            assert_eq!(f.color_spec(), case.want, "{what}: the frame");
            let got = check_red(&f, case.want, case.encoded_with, &what);
            seen.push(format!("{what}: {} red {got:?}", case.want));
        }
    }
    seen
}

/// Checks that `frame`'s first pixel pair is red in `spec` (within 1.5),
/// encoded with `spec`'s matrix or, when vivid's differs, `encoded_with`.
fn check_red(
    frame: &zerocam_capture::Frame,
    spec: ColorSpec,
    encoded_with: Option<(f64, f64)>,
    what: &str,
) -> [u8; 3] {
    let got = first_sample(frame);
    let encoded_with = encoded_with.unwrap_or(weights(spec.matrix));
    let want = red(encoded_with, spec.range);
    for (c, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (f64::from(*g) - w).abs() <= 1.5,
            "{what}: component {c} is {g}, red with weights {encoded_with:?} \
             in {spec} is {w:.1} ({got:?})"
        );
    }
    got
}

/// Every spec asked for in `VIDIOC_S_FMT` is what the driver sets, the
/// frames say and the samples are. vivid keeps it for later plain `S_FMT`s
/// until its colour controls are set again.
fn check_requests(path: &'static str, format: &str) -> Vec<String> {
    let format: CaptureFormat = format.parse().unwrap();
    let _g = lock(path);
    let _restore = DefaultColour(path);
    let specs = [
        ColorSpec::BT709_LIMITED,
        ColorSpec::BT601_FULL,
        ColorSpec::BT601_LIMITED,
        ColorSpec::BT709_FULL,
    ];
    let mut seen = Vec::new();
    for spec in specs {
        let what = format!("{path} {} asked for {spec}", format.name);
        let mut d = red_device(path);
        let offered = d.formats().unwrap();
        assert!(
            offered
                .iter()
                .any(|f| f.fourcc == format.fourcc && f.sets_color),
            "{what}: vivid converts {} ({offered:?})",
            format.name
        );
        let set = d.set_format_color(format, 320, 180, spec).unwrap();
        assert_eq!(set.color, spec, "{what}: S_FMT's reply");
        let mut s = Stream::new(d, StreamConfig::default()).unwrap();
        let f = s.next_frame(WAIT).unwrap();
        assert_eq!(f.color_spec(), spec, "{what}: the frame");
        let got = check_red(&f, spec, None, &what);
        seen.push(format!("{what}: red {got:?}"));
    }
    let mut d = Device::open(path).unwrap();
    let plain = d.set_format(format, 320, 180).unwrap();
    assert_eq!(
        plain.color,
        ColorSpec::BT709_FULL,
        "{path}: the last asked, kept"
    );
    drop(DefaultColour(path));
    let plain = d.set_format(format, 320, 180).unwrap();
    assert_eq!(
        plain.color,
        ColorSpec::BT601_LIMITED,
        "{path}: the controls' again"
    );
    seen
}

#[test]
fn lab_capture_color_asked_for_in_s_fmt() {
    let mut seen = check_requests(SINGLE, "YUYV");
    seen.extend(check_requests(MULTI, "NV12M"));
    println!("{}", seen.join("\n"));
}

#[test]
fn lab_capture_color_a_format_without_conversion_is_a_typed_error() {
    let _g = lock(SINGLE);
    let mut d = Device::open(SINGLE).unwrap();
    let rgb: CaptureFormat = "RGB24".parse().unwrap();
    let desc = d.formats().unwrap();
    let desc = desc.iter().find(|f| f.fourcc == rgb.fourcc).unwrap();
    assert!(
        !desc.sets_color,
        "vivid converts no RGB format's Y'CbCr: {desc:?}"
    );
    let e = d
        .set_format_color(rgb, 320, 180, ColorSpec::BT709_FULL)
        .unwrap_err();
    assert!(
        matches!(
            &e,
            CaptureError::UnsupportedColor { asked, fourcc, .. }
                if *asked == ColorSpec::BT709_FULL && *fourcc == rgb.fourcc
        ),
        "{e}"
    );
    let msg = e.to_string();
    assert!(
        msg.contains("RGB3 cannot be captured as BT.709 full range")
            && msg.contains("V4L2_FMT_FLAG_CSC_YCBCR_ENC"),
        "{msg}"
    );
}

#[test]
fn lab_capture_color_follows_vivids_controls_single_planar() {
    let seen = check_cases(SINGLE, "YUYV");
    println!("{}", seen.join("\n"));
}

#[test]
fn lab_capture_color_follows_vivids_controls_multi_planar() {
    let seen = check_cases(MULTI, "NV12M");
    println!("{}", seen.join("\n"));
}

#[test]
fn the_reference_red_is_vivids_at_its_defaults() {
    // vivid's 100% red at its defaults, as lab_capture.rs reads it: BT.601
    // limited (81, 90, 239); the formula rounds Cr to 240.
    let [y, cb, cr] = red(BT601, Range::Limited);
    assert_eq!((y.round(), cb.round(), cr.round()), (81.0, 90.0, 240.0));
}
