//! A still image as a frame: a PNG file read into a packed RGB image tensor
//! (the examples' `--image`).

use std::path::{Path, PathBuf};

use zerocam::tensor::{PixelFormat, Tensor, TensorMemory};

/// Why a PNG could not be read.
#[derive(Debug, thiserror::Error)]
pub enum StillError {
    /// The file could not be opened.
    #[error("cannot open {path}: {source}")]
    Open {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// It is not a PNG this reads (8-bit after expansion; grey, grey+alpha,
    /// RGB, RGBA or palette).
    #[error("cannot decode {path} as a PNG: {reason}")]
    Decode {
        /// The file.
        path: PathBuf,
        /// What the decoder said.
        reason: String,
    },
    /// The tensor for it could not be made.
    #[error(transparent)]
    Tensor(#[from] zerocam::tensor::Error),
}

/// Reads the PNG at `path` into a packed `width`x`height` RGB image in heap
/// memory (palettes and 16-bit samples are reduced to 8-bit RGB, alpha is
/// dropped, grey is repeated in each channel).
///
/// # Errors
/// [`StillError::Open`] for a missing or unreadable file,
/// [`StillError::Decode`] for one that is not a PNG or has a layout it does
/// not read, [`StillError::Tensor`] if the tensor cannot be allocated.
pub fn read_png(path: &Path) -> Result<Tensor<u8>, StillError> {
    let file = std::fs::File::open(path).map_err(|source| StillError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    let bad = |reason: String| StillError::Decode {
        path: path.to_path_buf(),
        reason,
    };
    let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().map_err(|e| bad(e.to_string()))?;
    let size = reader
        .output_buffer_size()
        .ok_or_else(|| bad("the image is too large".into()))?;
    let mut buf = vec![0; size];
    let info = reader
        .next_frame(&mut buf)
        .map_err(|e| bad(e.to_string()))?;
    let channels = match (info.color_type, info.bit_depth) {
        (png::ColorType::Grayscale, png::BitDepth::Eight) => 1,
        (png::ColorType::GrayscaleAlpha, png::BitDepth::Eight) => 2,
        (png::ColorType::Rgb, png::BitDepth::Eight) => 3,
        (png::ColorType::Rgba, png::BitDepth::Eight) => 4,
        (color, depth) => return Err(bad(format!("{color:?} at {depth:?} after expansion"))),
    };
    let (w, h) = (info.width as usize, info.height as usize);
    let image = Tensor::<u8>::image(w, h, PixelFormat::Rgb, Some(TensorMemory::Mem))?;
    {
        let mut map = image.map_write()?;
        for (y, row) in buf.chunks_exact(info.line_size).take(h).enumerate() {
            let out = &mut map[y * w * 3..(y + 1) * w * 3];
            for (px, src) in out.chunks_exact_mut(3).zip(row.chunks_exact(channels)) {
                match channels {
                    1 | 2 => px.fill(src[0]),
                    _ => px.copy_from_slice(&src[..3]),
                }
            }
        }
        map.finish()?;
    }
    Ok(image)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn write(path: &Path, color: png::ColorType, w: u32, h: u32, data: &[u8]) {
        let file = std::fs::File::create(path).unwrap();
        let mut enc = png::Encoder::new(file, w, h);
        enc.set_color(color);
        enc.set_depth(png::BitDepth::Eight);
        enc.write_header().unwrap().write_image_data(data).unwrap();
    }

    #[test]
    fn rgb_rgba_and_grey_read_as_rgb() {
        let dir = std::env::temp_dir().join(format!("zerocam-still-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let rgb: Vec<u8> = (0..3 * 5 * 2).map(|v| v as u8 * 7).collect();
        let p = dir.join("rgb.png");
        write(&p, png::ColorType::Rgb, 5, 2, &rgb);
        let t = read_png(&p).unwrap();
        assert_eq!((t.width(), t.height()), (Some(5), Some(2)));
        assert_eq!(&t.map_read().unwrap()[..], &rgb[..]);
        let rgba: Vec<u8> = rgb.chunks(3).flat_map(|c| [c[0], c[1], c[2], 9]).collect();
        write(&p, png::ColorType::Rgba, 5, 2, &rgba);
        assert_eq!(&read_png(&p).unwrap().map_read().unwrap()[..], &rgb[..]);
        write(&p, png::ColorType::Grayscale, 2, 1, &[10, 200]);
        assert_eq!(
            &read_png(&p).unwrap().map_read().unwrap()[..],
            &[10, 10, 10, 200, 200, 200]
        );
        std::fs::write(&p, b"not a png").unwrap();
        let e = read_png(&p).unwrap_err();
        assert!(matches!(e, StillError::Decode { .. }), "{e}");
        let e = read_png(&dir.join("missing.png")).unwrap_err();
        assert!(e.to_string().starts_with("cannot open "), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
