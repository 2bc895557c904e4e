//! CPU conversion of a frame to packed RGB8, for PNG snapshots.

use zerocam_gpu::{ColorSpec, YcbcrToRgb};
use zerocam_tensor::{PixelFormat, Result, Tensor};

/// Reads plane `p` of `frame` row by row, padding skipped: `f(row_index, row_bytes)`.
pub(crate) fn rows(frame: &Tensor<u8>, p: usize, mut f: impl FnMut(usize, &[u8])) -> Result<()> {
    let plane = frame.plane(p)?;
    let (n, len) = (plane.shape()[0], plane.shape()[1]);
    let stride = plane.strides().map_or(len, |s| s[0]);
    let m = plane.map_read()?;
    for r in 0..n {
        f(r, &m[r * stride..r * stride + len]);
    }
    Ok(())
}

/// The frame as packed RGB8, `width * height * 3` bytes, from any capture
/// format (NV12, NV16, YUYV, UYVY, RGB, BGR, GREY), its YCbCr read with
/// `color` (the frame's `Frame::color_spec`) by zerocam-gpu's CPU reference
/// of the GPU conversion.
pub fn to_rgb(frame: &Tensor<u8>, color: ColorSpec) -> Result<Vec<u8>> {
    let (w, h) = (frame.width().unwrap_or(0), frame.height().unwrap_or(0));
    let format = frame
        .format()
        .ok_or(zerocam_tensor::Error::UnsupportedFormat {
            format: PixelFormat::Grey,
            operation: "to_rgb of a tensor that is not an image",
        })?;
    let mut out = vec![0u8; w * h * 3];
    let px = |out: &mut Vec<u8>, y: usize, x: usize, rgb: [u8; 3]| {
        out[(y * w + x) * 3..(y * w + x) * 3 + 3].copy_from_slice(&rgb);
    };
    match format {
        PixelFormat::Rgb => rows(frame, 0, |y, r| {
            out[y * w * 3..(y + 1) * w * 3].copy_from_slice(r)
        })?,
        PixelFormat::Bgr => rows(frame, 0, |y, r| {
            for (x, s) in r.chunks(3).enumerate() {
                px(&mut out, y, x, [s[2], s[1], s[0]]);
            }
        })?,
        PixelFormat::Grey => rows(frame, 0, |y, r| {
            for (x, &g) in r.iter().enumerate() {
                px(&mut out, y, x, [g, g, g]);
            }
        })?,
        PixelFormat::Yuyv => rows(frame, 0, |y, r| {
            for (i, q) in r.chunks(4).enumerate() {
                px(&mut out, y, 2 * i, color.to_rgb(q[0], q[1], q[3]));
                px(&mut out, y, 2 * i + 1, color.to_rgb(q[2], q[1], q[3]));
            }
        })?,
        PixelFormat::Uyvy => rows(frame, 0, |y, r| {
            for (i, q) in r.chunks(4).enumerate() {
                px(&mut out, y, 2 * i, color.to_rgb(q[1], q[0], q[2]));
                px(&mut out, y, 2 * i + 1, color.to_rgb(q[3], q[0], q[2]));
            }
        })?,
        PixelFormat::Nv12 | PixelFormat::Nv16 => {
            let vsub = h / format.plane_rows(1, h).max(1);
            let mut luma = vec![0u8; w * h];
            rows(frame, 0, |y, r| luma[y * w..(y + 1) * w].copy_from_slice(r))?;
            rows(frame, 1, |cy, r| {
                for dy in 0..vsub {
                    let y = cy * vsub + dy;
                    for x in 0..w {
                        let c = x & !1;
                        px(
                            &mut out,
                            y,
                            x,
                            color.to_rgb(luma[y * w + x], r[c], r[c + 1]),
                        );
                    }
                }
            })?;
        }
        other => {
            return Err(zerocam_tensor::Error::UnsupportedFormat {
                format: other,
                operation: "to_rgb",
            })
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_capture_format_of_the_pattern_converts_to_the_same_picture() {
        use std::time::Duration;
        use zerocam_capture::{FrameSource, PatternConfig, PatternSource, CAPTURE_FORMATS};
        let rgb_of = |name: &str| {
            let format = CAPTURE_FORMATS
                .into_iter()
                .find(|f| f.name == name)
                .unwrap();
            let mut s = PatternSource::new(PatternConfig::new(format, 64, 16)).unwrap();
            let f = s.next_frame(Duration::from_secs(1)).unwrap();
            to_rgb(f.tensor(), f.color_spec()).unwrap()
        };
        let yuyv = rgb_of("YUYV");
        for name in ["UYVY", "NV16", "NV16M"] {
            assert_eq!(rgb_of(name), yuyv, "{name} is YUYV's picture");
        }
        assert_eq!(rgb_of("NV12M"), rgb_of("NV12"));
        assert_eq!(rgb_of("BGR24"), rgb_of("RGB24"));
    }

    #[test]
    fn the_pattern_bars_come_back_with_the_frames_colour_spec() {
        use std::time::Duration;
        use zerocam_capture::pattern::BARS_RGB;
        use zerocam_capture::{FrameSource, PatternConfig, PatternSource};
        let format = "YUYV".parse().unwrap();
        // 8 bars of 8 pixels: sample each bar's middle on row 3 (frame 0's
        // bars start at x = 0; its white line is row 0).
        let mut s = PatternSource::new(PatternConfig::new(format, 64, 4)).unwrap();
        let f = s.next_frame(Duration::from_secs(1)).unwrap();
        assert_eq!(f.sequence(), 0);
        let rgb = to_rgb(f.tensor(), f.color_spec()).unwrap();
        for (i, want) in BARS_RGB.iter().enumerate() {
            let x = 3 * 64 + i * 8 + 4;
            let got = &rgb[x * 3..x * 3 + 3];
            for c in 0..3 {
                assert!(
                    got[c].abs_diff(want[c]) <= 1,
                    "bar {i}: {got:?} vs {want:?}"
                );
            }
        }
        // Read as BT.709 instead, the same samples are another picture.
        let wrong = to_rgb(f.tensor(), ColorSpec::BT709_LIMITED).unwrap();
        assert_ne!(wrong, rgb);
    }
}
