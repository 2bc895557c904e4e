//! [`decode_rgb`]: a JPEG back to packed RGB (libjpeg-turbo), for checking
//! what was written against another picture of the same frame.

use super::JpegError;

/// A decoded image: packed 8-bit RGB, rows `width * 3` bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RgbImage {
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
    /// `width * height * 3` bytes, R, G, B.
    pub pixels: Vec<u8>,
}

/// How a decoder fills in the pixels between subsampled chroma samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Upsampling {
    /// libjpeg-turbo's default "fancy" upsampling (a triangle filter), what
    /// image viewers, Pillow and OpenCV show.
    #[default]
    Smooth,
    /// Each chroma sample repeated over its pixels: how zerocam's own RGB
    /// conversion (`zerocam capture -o x.png`, the GPU path) reads a
    /// frame's chroma, so the picture to compare a snapshot with.
    Nearest,
}

/// Decodes `jpeg` to packed RGB, its chroma upsampled as `upsampling` says.
///
/// # Errors
/// [`JpegError::Turbo`] when `jpeg` is not a JPEG libjpeg-turbo reads.
pub fn decode_rgb(jpeg: &[u8], upsampling: Upsampling) -> Result<RgbImage, JpegError> {
    let mut d = turbojpeg::Decompressor::new()?;
    d.set_fast_upsample(upsampling == Upsampling::Nearest)?;
    let header = d.read_header(jpeg)?;
    let (width, height) = (header.width, header.height);
    let mut pixels = vec![0; width * height * 3];
    let image = turbojpeg::Image {
        pixels: &mut pixels[..],
        width,
        pitch: width * 3,
        height,
        format: turbojpeg::PixelFormat::RGB,
    };
    d.decompress(jpeg, image)?;
    Ok(RgbImage {
        width,
        height,
        pixels,
    })
}

/// The peak signal-to-noise ratio of `a` against `b` in dB (8-bit
/// samples; `f64::INFINITY` when equal), or `None` when their lengths
/// differ or they are empty.
pub fn psnr(a: &[u8], b: &[u8]) -> Option<f64> {
    if a.len() != b.len() || a.is_empty() {
        return None;
    }
    let sum: f64 = a
        .iter()
        .zip(b)
        .map(|(&p, &q)| (f64::from(p) - f64::from(q)).powi(2))
        .sum();
    let mse = sum / a.len() as f64;
    Some(10.0 * (255.0f64 * 255.0 / mse).log10())
}
