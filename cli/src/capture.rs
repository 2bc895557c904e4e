//! `zerocam capture`: a PNG snapshot or raw frames.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Duration;

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

/// Captures `frames` frames to `output` (`.png`: the last frame as RGB;
/// anything else: every frame's raw planes back to back). Returns what it did.
pub fn capture(spec: &SourceSpec, frames: usize, output: &Path) -> Result<String, CliError> {
    let png = output
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("png"));
    let mut opened = open(spec)?;
    let mut report = format!("{}\n", opened.description);
    let mut file = BufWriter::new(File::create(output).map_err(|e| CliError::Output {
        path: output.to_path_buf(),
        source: e,
    })?);
    let mut last = None;
    let mut bytes = 0;
    for _ in 0..frames.max(1) {
        let f = opened.source.next_frame(Duration::from_secs(5))?;
        if !png {
            bytes += write_raw(&mut file, f.tensor())?;
        }
        last = Some(f);
    }
    let Some(frame) = last else {
        return Ok(report);
    };
    let t = frame.tensor();
    let (w, h) = (t.width().unwrap_or(0), t.height().unwrap_or(0));
    if png {
        let rgb = to_rgb(t, frame.color_spec())?;
        let mut enc = png::Encoder::new(&mut file, w as u32, h as u32);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        enc.write_header()
            .and_then(|mut wr| wr.write_image_data(&rgb))
            .map_err(|e| CliError::Png(e.to_string()))?;
        report += &format!(
            "wrote {} ({w}x{h} RGB PNG of frame {}, its YCbCr read as {})\n",
            output.display(),
            frame.sequence(),
            frame.color_spec()
        );
    } else {
        report += &format!(
            "wrote {} ({} frames, {bytes} bytes raw)\n",
            output.display(),
            frames.max(1)
        );
    }
    file.flush()?;
    Ok(report)
}
