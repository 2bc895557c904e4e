//! Video on the CPU: H.264 (Cisco's OpenH264, built from the `openh264` crate's
//! bundled source) where no hardware encoder is present: [`SoftwareH264`].
//!
//! - `h264`: the encoder, its rate control from
//!   [`EncoderConfig`](crate::encoder::EncoderConfig), Annex-B packets out.
//! - `planes`: a frame's planes as OpenH264's I420 input (`YUVSource`),
//!   with the reused scratch that NV12's interleaved chroma is split into.
//! - `mjpeg`: [`SoftwareMjpeg`], a JPEG per frame (libjpeg-turbo).

mod h264;
mod mjpeg;
mod planes;
#[cfg(test)]
mod starved;

pub use h264::SoftwareH264;
pub use mjpeg::SoftwareMjpeg;

/// The software encoder failed; each variant names the values.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SoftwareError {
    /// OpenH264 refused a call.
    #[error("OpenH264 failed to {during}: {message}")]
    OpenH264 {
        /// What it was doing ("initialize", "encode frame 12").
        during: String,
        /// What it said.
        message: String,
    },
    /// A pixel format OpenH264's input cannot be made from.
    #[error(
        "the software H.264 encoder takes NV12, NV16, YUYV, UYVY and GREY frames, not {format}"
    )]
    Format {
        /// The frame's format.
        format: String,
    },
    /// A size H.264 4:2:0 or OpenH264 cannot take.
    #[error("{width}x{height}: OpenH264 encodes even sizes up to 3840x2160 (or 2160x3840)")]
    Size {
        /// Width in pixels.
        width: usize,
        /// Height in pixels.
        height: usize,
    },
    /// A frame of another size than the first.
    #[error("frame {sequence} is {width}x{height}, the stream is {stream_width}x{stream_height}")]
    SizeChanged {
        /// The frame's sequence number.
        sequence: u32,
        /// Its width.
        width: usize,
        /// Its height.
        height: usize,
        /// The stream's width (the first frame's).
        stream_width: usize,
        /// The stream's height.
        stream_height: usize,
    },
    /// A plane's memory is shorter than its rows need.
    #[error("plane {plane} has {len} bytes, fewer than {rows} rows of {row} bytes {stride} apart")]
    ShortPlane {
        /// The plane index.
        plane: usize,
        /// Its mapped bytes.
        len: usize,
        /// Rows.
        rows: usize,
        /// Bytes read per row.
        row: usize,
        /// Bytes from one row to the next.
        stride: usize,
    },
    /// Reading the frame's planes failed (a map refused).
    #[error("reading the frame's planes: {0}")]
    Tensor(#[from] zerocam_tensor::Error),
}
