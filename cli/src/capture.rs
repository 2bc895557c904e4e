//! `zerocam capture`: a PNG or JPEG snapshot of the last frame, or raw
//! frames. The output's kind comes from its extension
//! ([`OutputKind`]), checked with its directory before the source is
//! opened: a name zerocam does not write, or a place it cannot write to,
//! fails with nothing opened and nothing created.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Duration;

use zerocam_encode::jpeg::{check_quality, JpegEncoder};
use zerocam_encode::output_kind::OutputKind;
use zerocam_tensor::Tensor;

use crate::convert::to_rgb;
use crate::CliError;
use zerocam_capture::open::{open, SourceSpec};

/// Writes every plane's rows without their padding.
fn write_raw(out: &mut impl Write, t: &Tensor<u8>) -> Result<usize, CliError> {
    let (mut n, mut failed) = (0, None);
    for p in 0..t.plane_count() {
        crate::convert::rows(t, p, |_, row| {
            if failed.is_none() {
                failed = out.write_all(row).err();
                n += row.len();
            }
        })?;
    }
    failed.map_or(Ok(n), |e| Err(e.into()))
}

/// `output`'s failure as the CLI's error.
fn output_error(output: &Path, source: std::io::Error) -> CliError {
    CliError::Output {
        path: output.to_path_buf(),
        source,
    }
}

/// Fails unless `output` can be created: its directory exists, is a
/// directory, and is writable; `output` itself is not a directory.
fn check_writable(output: &Path) -> Result<(), CliError> {
    let dir = match output.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let meta = std::fs::metadata(dir).map_err(|e| output_error(output, e))?;
    if !meta.is_dir() {
        let e = std::io::Error::new(
            std::io::ErrorKind::NotADirectory,
            format!("{} is not a directory", dir.display()),
        );
        return Err(output_error(output, e));
    }
    if output.is_dir() {
        let e = std::io::Error::new(std::io::ErrorKind::IsADirectory, "it is a directory");
        return Err(output_error(output, e));
    }
    nix::unistd::access(dir, nix::unistd::AccessFlags::W_OK)
        .map_err(|e| output_error(output, std::io::Error::from(e)))
}

/// Captures `frames` frames to `output`, whose extension says what it
/// holds: `.png` the last frame as RGB, `.jpg`/`.jpeg` the last frame as a
/// JPEG at `quality` (1..=100, from its YCbCr planes), `.raw`/`.yuv` every
/// frame's planes back to back. Returns what it did.
///
/// # Errors
/// Before anything is opened or created: [`CliError::Encode`] for another
/// extension (naming the ones written) or a quality outside 1..=100,
/// [`CliError::Output`] for a place that cannot be written. Then the
/// source's, the encoder's and the file's failures; a file left half
/// written by a failure is removed.
pub fn capture(
    spec: &SourceSpec,
    frames: usize,
    output: &Path,
    quality: i64,
) -> Result<String, CliError> {
    let kind = OutputKind::of(output)?;
    let quality = check_quality(quality).map_err(zerocam_encode::EncodeError::from)?;
    check_writable(output)?;
    let mut opened = open(spec)?;
    let report = format!("{}\n", opened.description);
    let frames = frames.max(1);
    let written = match kind {
        OutputKind::Raw => {
            let file = File::create(output).map_err(|e| output_error(output, e))?;
            let mut file = BufWriter::new(file);
            let mut bytes = 0;
            let mut run = || -> Result<(), CliError> {
                for _ in 0..frames {
                    let f = opened.source.next_frame(Duration::from_secs(5))?;
                    bytes += write_raw(&mut file, f.tensor())?;
                }
                file.flush().map_err(|e| output_error(output, e))
            };
            run().inspect_err(|_| {
                let _ = std::fs::remove_file(output);
            })?;
            format!("{frames} frames, {bytes} bytes raw")
        }
        OutputKind::Png | OutputKind::Jpeg => {
            let mut last = None;
            for _ in 0..frames {
                last = Some(opened.source.next_frame(Duration::from_secs(5))?);
            }
            let Some(frame) = last else {
                return Ok(report);
            };
            let t = frame.tensor();
            let (w, h) = (t.width().unwrap_or(0), t.height().unwrap_or(0));
            let spec = frame.color_spec();
            let (bytes, what) = if kind == OutputKind::Png {
                let rgb = to_rgb(t, spec)?;
                let mut png = Vec::new();
                let mut enc = png::Encoder::new(&mut png, w as u32, h as u32);
                enc.set_color(png::ColorType::Rgb);
                enc.set_depth(png::BitDepth::Eight);
                enc.write_header()
                    .and_then(|mut wr| wr.write_image_data(&rgb))
                    .map_err(|e| CliError::Png(e.to_string()))?;
                (png, format!("{w}x{h} RGB PNG"))
            } else {
                let jpeg = JpegEncoder::new(quality)?.encode(&frame)?.to_vec();
                (jpeg, format!("{w}x{h} JPEG at quality {quality}"))
            };
            std::fs::write(output, &bytes).map_err(|e| {
                let _ = std::fs::remove_file(output);
                output_error(output, e)
            })?;
            format!(
                "{what} of frame {}, its YCbCr read as {spec}, {} bytes",
                frame.sequence(),
                bytes.len()
            )
        }
    };
    log::debug!("capture: wrote {} as {}", output.display(), kind.name());
    Ok(format!("{report}wrote {} ({written})\n", output.display()))
}
