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
pub fn ffmpeg_luma(
    before_input: &[&str],
    input: &str,
    width: usize,
    height: usize,
    max: usize,
) -> Vec<Vec<u8>> {
    let mut decoder = DecodedPictures::spawn(before_input, input, width, height, max);
    let luma = std::iter::from_fn(|| decoder.next_picture().map(|(luma, _)| luma)).collect();
    decoder.finish();
    luma
}

/// A decoder we did not write (FFmpeg, or GStreamer's `gst-launch-1.0`)
/// decoding a stream to raw 4:2:0 on its standard output, read one picture
/// at a time as it comes out: each picture's luma and the moment it was
/// read whole (for a latency, with
/// [`Stamp::age`](zerocam_capture::pattern::stamp::Stamp::age) taken then).
pub struct DecodedPictures {
    child: std::process::Child,
    stdout: std::process::ChildStdout,
    errors: Option<std::thread::JoinHandle<String>>,
    input: String,
    size: usize,
    picture: Vec<u8>,
    ended: bool,
}

impl DecodedPictures {
    /// Starts `ffmpeg` on `input` as [`ffmpeg_luma`] does; with `input`
    /// `pipe:0` its standard input is left open for [`Self::stdin`].
    ///
    /// # Panics
    /// Where ffmpeg cannot run ("install ffmpeg").
    pub fn spawn(
        before_input: &[&str],
        input: &str,
        width: usize,
        height: usize,
        max: usize,
    ) -> Self {
        use std::process::Stdio;
        let mut cmd = Command::new("ffmpeg");
        cmd.args(["-nostdin", "-v", "error"])
            .args(before_input)
            .args(["-i", input, "-frames:v", &max.to_string()])
            // Each decoded picture once, as it came: no frame rate conversion
            // (which repeats or drops pictures to fill a constant rate).
            .args(["-fps_mode", "passthrough"])
            // Each picture written out as soon as it is decoded.
            .args(["-flush_packets", "1"])
            // 4:2:0 YCbCr, whose Y is the luma as encoded (FFmpeg's `gray` is
            // full range: limited-range luma would come out stretched).
            .args(["-f", "rawvideo", "-pix_fmt", "yuv420p", "-"])
            .stdin(if input == "pipe:0" {
                Stdio::piped()
            } else {
                Stdio::null()
            });
        Self::from_command(cmd, input, width, height)
    }

    /// GStreamer's `gst-launch-1.0 -q` running `pipeline` (a source and a
    /// decoder, e.g. `rtspsrc location=… ! rtph264depay ! h264parse !
    /// openh264dec`), its pictures converted to I420 and written to its
    /// standard output as they come (`fdsink`, not synchronised to a clock).
    ///
    /// # Panics
    /// Where gst-launch-1.0 cannot run.
    pub fn gstreamer(pipeline: &str, width: usize, height: usize) -> Self {
        let mut cmd = Command::new("gst-launch-1.0");
        cmd.arg("-q")
            .args(pipeline.split_whitespace())
            .args(["!", "videoconvert", "!", "video/x-raw,format=I420"])
            .args(["!", "fdsink", "fd=1", "sync=false"])
            .stdin(std::process::Stdio::null());
        Self::from_command(cmd, pipeline, width, height)
    }

    /// `cmd`, a decoder writing `width` x `height` 4:2:0 pictures to its
    /// standard output, started; `input` names it in messages.
    #[allow(clippy::unwrap_used)] // a test helper: failing loudly is the point
    fn from_command(mut cmd: Command, input: &str, width: usize, height: usize) -> Self {
        use std::io::Read;
        use std::process::Stdio;
        let program = cmd.get_program().to_string_lossy().into_owned();
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{program} could not run ({e}): install it"));
        let mut stderr = child.stderr.take().unwrap();
        let errors = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        let stdout = child.stdout.take().unwrap();
        DecodedPictures {
            child,
            stdout,
            errors: Some(errors),
            input: input.to_owned(),
            size: width * height,
            picture: vec![0; width * height + 2 * (width / 2) * (height / 2)],
            ended: false,
        }
    }

    /// FFmpeg's standard input, once (with `input` `pipe:0`).
    pub fn stdin(&mut self) -> Option<std::process::ChildStdin> {
        self.child.stdin.take()
    }

    /// The next picture's luma and when it was read whole, or `None` at
    /// the decoder's end.
    ///
    /// # Panics
    /// When the decoder's output ends inside a picture.
    #[allow(clippy::unwrap_used)]
    pub fn next_picture(&mut self) -> Option<(Vec<u8>, std::time::Instant)> {
        use std::io::Read;
        if self.ended {
            return None;
        }
        let mut filled = 0;
        while filled < self.picture.len() {
            let n = self.stdout.read(&mut self.picture[filled..]).unwrap();
            if n == 0 {
                self.ended = true;
                assert_eq!(
                    filled, 0,
                    "{}: {filled} bytes after the last whole 4:2:0 picture",
                    self.input
                );
                return None;
            }
            filled += n;
        }
        Some((
            self.picture[..self.size].to_vec(),
            std::time::Instant::now(),
        ))
    }

    /// Waits for the decoder to end.
    ///
    /// # Panics
    /// When it failed (with what it said).
    #[allow(clippy::unwrap_used)]
    pub fn finish(mut self) {
        drop(self.child.stdin.take());
        let status = self.child.wait().unwrap();
        let errors = self
            .errors
            .take()
            .map(|e| e.join().unwrap())
            .unwrap_or_default();
        assert!(status.success(), "{}: {errors}", self.input);
    }
}

impl Drop for DecodedPictures {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
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
