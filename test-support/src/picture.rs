//! What a viewer sees, checked against what was captured: a stamped
//! pattern's frames (the spec `pattern:stamp`) decoded by FFmpeg, a decoder
//! zerocam did not write, then each picture's stamp read back
//! ([`read_stamp`]) and its PSNR taken against the source's own picture of
//! that frame, regenerated from the stamp ([`PatternSource::luma`]).

use std::process::Command;

use zerocam_capture::pattern::stamp::{read_stamp, Stamp};
use zerocam_capture::PatternSource;

/// The luma of each picture FFmpeg decodes from `input` (a file or a URL,
/// with `before_input` as FFmpeg options for it, e.g. `-rtsp_transport
/// tcp`), at most `max` of them, each `width` x `height` bytes.
///
/// # Panics
/// Where ffmpeg cannot run ("install ffmpeg") or fails (that is the check).
#[allow(clippy::unwrap_used)] // a test helper: failing loudly is the point
pub fn ffmpeg_luma(
    before_input: &[&str],
    input: &str,
    width: usize,
    height: usize,
    max: usize,
) -> Vec<Vec<u8>> {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = Command::new("ffmpeg")
        .args(["-nostdin", "-v", "error"])
        .args(before_input)
        .args(["-i", input, "-frames:v", &max.to_string()])
        // Each decoded picture once, as it came: no frame rate conversion
        // (which repeats or drops pictures to fill a constant rate).
        .args(["-fps_mode", "passthrough"])
        // 4:2:0 YCbCr, whose Y is the luma as encoded (FFmpeg's `gray` is
        // full range: limited-range luma would come out stretched).
        .args(["-f", "rawvideo", "-pix_fmt", "yuv420p", "-"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("ffmpeg could not run ({e}): install ffmpeg"));
    let mut stderr = child.stderr.take().unwrap();
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    // One picture at a time, its luma kept: not every picture's 4:2:0
    // bytes at once (300 at 720p would be 415 MB).
    let size = width * height;
    let mut picture = vec![0; size + 2 * (width / 2) * (height / 2)];
    let mut stdout = child.stdout.take().unwrap();
    let mut luma = Vec::new();
    let mut filled = 0;
    loop {
        let n = stdout.read(&mut picture[filled..]).unwrap();
        if n == 0 {
            break;
        }
        filled += n;
        if filled == picture.len() {
            luma.push(picture[..size].to_vec());
            filled = 0;
        }
    }
    assert_eq!(
        filled, 0,
        "ffmpeg {input}: {filled} bytes after the last whole {width}x{height} 4:2:0 picture"
    );
    let status = child.wait().unwrap();
    let errors = errors.join().unwrap();
    assert!(status.success(), "ffmpeg {input}: {errors}");
    luma
}

/// PSNR of `a` against `b` (the same size), in dB; infinite when equal.
pub fn psnr(a: &[u8], b: &[u8]) -> f64 {
    assert_eq!(a.len(), b.len(), "pictures of different sizes");
    let sum: f64 = a
        .iter()
        .zip(b)
        .map(|(&x, &y)| (f64::from(x) - f64::from(y)).powi(2))
        .sum();
    let mse = sum / a.len().max(1) as f64;
    if mse == 0.0 {
        f64::INFINITY
    } else {
        10.0 * (255.0f64 * 255.0 / mse).log10()
    }
}

/// What the decoded pictures were.
#[derive(Debug, Clone, PartialEq)]
pub struct Pictures {
    /// Each readable picture's stamp, in decoding order.
    pub stamps: Vec<Stamp>,
    /// Pictures whose stamp could not be read.
    pub unreadable: usize,
    /// Each readable picture's PSNR against the source's picture of it.
    pub psnr: Vec<f64>,
}

impl Pictures {
    /// Reads each picture's stamp and measures it against `source`'s
    /// picture of that frame (`source` has the size and format the
    /// stamped frames had, and stamps).
    pub fn check(luma: &[Vec<u8>], source: &PatternSource, width: usize, height: usize) -> Self {
        let mut out = Pictures {
            stamps: Vec::new(),
            unreadable: 0,
            psnr: Vec::new(),
        };
        for picture in luma {
            let Some(stamp) = read_stamp(picture, width, height, width) else {
                out.unreadable += 1;
                continue;
            };
            let Some(want) = source.luma(stamp.sequence, Some(&stamp)) else {
                out.unreadable += 1;
                continue;
            };
            out.psnr.push(psnr(picture, &want));
            out.stamps.push(stamp);
        }
        out
    }

    /// The sequence numbers read, in order.
    pub fn sequences(&self) -> Vec<u32> {
        self.stamps.iter().map(|s| s.sequence).collect()
    }

    /// The lowest PSNR (infinite when there is none).
    pub fn min_psnr(&self) -> f64 {
        self.psnr.iter().copied().fold(f64::INFINITY, f64::min)
    }

    /// Whether the sequences only go up (no repeat, no step back).
    pub fn increasing(&self) -> bool {
        self.stamps
            .windows(2)
            .all(|w| w[1].sequence > w[0].sequence)
    }
}
