//! JPEG straight from a frame's YCbCr planes (libjpeg-turbo), no RGB pass.
//!
//! [`JpegEncoder`] hands libjpeg-turbo's planar compression
//! (`tj3CompressFromYUVPlanes8`) the frame's own planes: 4:2:0 for NV12 and
//! I420 ([`YuvPlanes`]), 4:2:2 for NV16, YUYV and UYVY. The luma plane is
//! read in place, rows at their stride, when nothing has to change in it;
//! the chroma is gathered into scratch planes the encoder keeps (NV12's
//! interleaved CbCr split into Cb and Cr, YUYV's picked out), so repeated
//! frames allocate nothing after the first. RGB, BGR, RGBA, BGRA and GREY
//! frames go through libjpeg-turbo's ordinary compression.
//!
//! # Colour
//!
//! A JPEG (JFIF) file has no colour tag: every decoder reads its YCbCr as
//! BT.601 **full** range. Cameras mostly deliver BT.601 or BT.709 **limited**
//! range, and written as they are such samples decode washed out (black at
//! 16, white at 235) or with shifted hues. So the encoder converts the
//! samples to BT.601 full range on the way, from the frame's
//! [`ColorSpec`]:
//!
//! - BT.601 full: nothing to do; the luma plane is compressed in place.
//! - BT.601 limited (the usual camera, the pattern source): a range
//!   expansion, one table lookup per sample, fused with the chroma split
//!   (the luma plane is then copied through its table).
//! - BT.709 (limited or full): the matrix changes too; luma takes a little
//!   of each pixel's chroma (nearest sample, as zerocam's RGB conversion
//!   reads it), in fixed point.
//!
//! The decoded picture is then the one `zerocam capture -o x.png` writes
//! for the same frame, within the JPEG's loss.

mod color;
mod decode;
mod encoder;
mod source;
#[cfg(test)]
mod tests;

pub use decode::{decode_rgb, psnr, RgbImage, Upsampling};
pub use encoder::JpegEncoder;

use zerocam_capture::Frame;
use zerocam_tensor::{ColorSpec, PixelFormat, Tensor};

/// The quality [`JpegEncoder`]s are made with when the caller has no
/// opinion (`zerocam capture --quality`, Python's `frame.jpeg()`).
pub const DEFAULT_QUALITY: u8 = 85;

/// JPEG compression failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JpegError {
    /// A quality outside 1..=100.
    #[error("JPEG quality {quality} is outside 1..=100")]
    Quality {
        /// The quality asked for.
        quality: i64,
    },
    /// A pixel format the encoder does not take.
    #[error(
        "JPEG from {format} frames is not supported (zerocam writes JPEG from \
         NV12, NV16, YUYV, UYVY, RGB, BGR, RGBA, BGRA and GREY frames, and I420 planes)"
    )]
    Format {
        /// The frame's format.
        format: PixelFormat,
    },
    /// The tensor is not a single image (no image layout, or a batch).
    #[error("JPEG needs an image tensor, got shape {shape:?}")]
    NotImage {
        /// The tensor's shape.
        shape: Vec<usize>,
    },
    /// A size JPEG cannot hold (each side 1..=65535), or an odd width of a
    /// packed 4:2:2 format (YUYV, UYVY pair their pixels).
    #[error("a {width}x{height} {format} image cannot be written as JPEG ({why})")]
    Size {
        /// The width.
        width: usize,
        /// The height.
        height: usize,
        /// The format (`I420` for [`YuvPlanes`]).
        format: String,
        /// Why not.
        why: &'static str,
    },
    /// A plane whose memory does not hold its rows.
    #[error(
        "the {plane} plane has {len} bytes: too few for {rows} rows of {width} samples \
         {stride} bytes apart (or its stride is under its row)"
    )]
    Plane {
        /// Which plane (`Y`, `Cb`, `Cr`, `CbCr`, `packed`).
        plane: &'static str,
        /// Its bytes.
        len: usize,
        /// Its row stride.
        stride: usize,
        /// Samples per row.
        width: usize,
        /// Rows.
        rows: usize,
    },
    /// Reading the frame's memory failed (its map, the dma-buf sync).
    #[error(transparent)]
    Tensor(#[from] zerocam_tensor::Error),
    /// libjpeg-turbo refused.
    #[error("libjpeg-turbo: {0}")]
    Turbo(#[from] turbojpeg::Error),
}

/// How a [`YuvPlanes`] image's chroma is subsampled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Chroma {
    /// Half width, half height (I420, YV12 with the planes swapped).
    Yuv420,
    /// Half width, full height (I422).
    Yuv422,
}

/// An image of three separate 8-bit planes, Y, Cb and Cr (I420: 4:2:0;
/// I422: 4:2:2), each with its own row stride, as
/// [`JpegEncoder::encode_planes`] takes it. The chroma planes have
/// `ceil(width / 2)` samples per row and `ceil(height / 2)` rows (4:2:0) or
/// `height` rows (4:2:2).
#[derive(Debug, Clone, Copy)]
pub struct YuvPlanes<'a> {
    /// Luma rows, `y_stride` bytes apart.
    pub y: &'a [u8],
    /// Bytes from one luma row to the next.
    pub y_stride: usize,
    /// Cb rows.
    pub cb: &'a [u8],
    /// Bytes from one Cb row to the next.
    pub cb_stride: usize,
    /// Cr rows.
    pub cr: &'a [u8],
    /// Bytes from one Cr row to the next.
    pub cr_stride: usize,
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
    /// The chroma subsampling.
    pub chroma: Chroma,
}

/// `quality` as libjpeg-turbo's, or [`JpegError::Quality`] outside 1..=100.
///
/// # Errors
/// [`JpegError::Quality`] naming it.
pub fn check_quality(quality: i64) -> Result<u8, JpegError> {
    match u8::try_from(quality) {
        Ok(q @ 1..=100) => Ok(q),
        _ => Err(JpegError::Quality { quality }),
    }
}

/// The JPEG of `frame` at `quality` (1..=100), its YCbCr read with the
/// frame's [`color_spec`](Frame::color_spec). For many frames keep a
/// [`JpegEncoder`] instead: it reuses its buffers.
///
/// # Errors
/// [`JpegError::Quality`], [`JpegError::Format`] for formats it does not
/// take, [`JpegError::Tensor`] when the frame's memory cannot be read.
pub fn encode_frame(frame: &Frame, quality: u8) -> Result<Vec<u8>, JpegError> {
    Ok(JpegEncoder::new(quality)?.encode(frame)?.to_vec())
}

/// The JPEG of image tensor `tensor` at `quality`, its YCbCr read as
/// `color` (`None`: BT.601 limited range, V4L2's default).
///
/// # Errors
/// As [`encode_frame`], and [`JpegError::NotImage`] for a tensor without an
/// image layout.
pub fn encode_tensor(
    tensor: &Tensor<u8>,
    color: Option<ColorSpec>,
    quality: u8,
) -> Result<Vec<u8>, JpegError> {
    Ok(JpegEncoder::new(quality)?
        .encode_tensor(tensor, color.unwrap_or_default())?
        .to_vec())
}
