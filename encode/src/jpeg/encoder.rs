//! [`JpegEncoder`]: a libjpeg-turbo compressor and the scratch planes and
//! output buffer it reuses from frame to frame.

use turbojpeg::{Compressor, Image, Subsamp, YuvPlanesImage};
use zerocam_capture::Frame;
use zerocam_tensor::{ColorSpec, PixelFormat, Tensor};

use super::color::Transform;
use super::source::{mix, Layout, Plane, Source};
use super::{check_quality, Chroma, JpegError, YuvPlanes};

/// JPEG's largest side.
const MAX_SIDE: usize = 65_535;

/// Compresses frames to JPEG at one quality, reusing its scratch planes and
/// output buffer: after the first frame of a size, encoding allocates
/// nothing.
///
/// ```no_run
/// use std::time::Duration;
/// use zerocam_capture::{FrameSource, PatternConfig, PatternSource};
/// use zerocam_encode::jpeg::JpegEncoder;
/// let mut source = PatternSource::new(PatternConfig::new("NV12".parse()?, 640, 480))?;
/// let mut jpeg = JpegEncoder::new(85)?;
/// let frame = source.next_frame(Duration::from_secs(1))?;
/// std::fs::write("snap.jpg", jpeg.encode(&frame)?)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct JpegEncoder {
    quality: u8,
    compressor: Compressor,
    /// The transform to JFIF's colour and the spec it was made for.
    transform: Option<(ColorSpec, Transform)>,
    y: Vec<u8>,
    cb: Vec<u8>,
    cr: Vec<u8>,
    out: Vec<u8>,
}

impl std::fmt::Debug for JpegEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JpegEncoder")
            .field("quality", &self.quality)
            .field("out_capacity", &self.out.len())
            .finish()
    }
}

impl JpegEncoder {
    /// An encoder at `quality` (1..=100; [`DEFAULT_QUALITY`](super::DEFAULT_QUALITY) is 85).
    ///
    /// # Errors
    /// [`JpegError::Quality`] outside 1..=100, [`JpegError::Turbo`] when
    /// libjpeg-turbo cannot make a compressor.
    pub fn new(quality: u8) -> Result<JpegEncoder, JpegError> {
        let quality = check_quality(i64::from(quality))?;
        let mut compressor = Compressor::new()?;
        compressor.set_quality(i32::from(quality))?;
        Ok(JpegEncoder {
            quality,
            compressor,
            transform: None,
            y: Vec::new(),
            cb: Vec::new(),
            cr: Vec::new(),
            out: Vec::new(),
        })
    }

    /// The quality it compresses at.
    pub fn quality(&self) -> u8 {
        self.quality
    }

    /// Compresses at `quality` (1..=100) from now on, keeping its buffers.
    ///
    /// # Errors
    /// [`JpegError::Quality`] outside 1..=100 (the quality is then
    /// unchanged), [`JpegError::Turbo`].
    pub fn set_quality(&mut self, quality: u8) -> Result<(), JpegError> {
        let quality = check_quality(i64::from(quality))?;
        if quality != self.quality {
            self.compressor.set_quality(i32::from(quality))?;
            self.quality = quality;
        }
        Ok(())
    }

    /// The JPEG of `frame`, its YCbCr read with its
    /// [`color_spec`](Frame::color_spec); valid until the next call.
    ///
    /// # Errors
    /// [`JpegError::Format`] for formats it does not take,
    /// [`JpegError::Tensor`] when the frame's memory cannot be read,
    /// [`JpegError::Turbo`] when libjpeg-turbo fails.
    pub fn encode(&mut self, frame: &Frame) -> Result<&[u8], JpegError> {
        self.encode_tensor(frame.tensor(), frame.color_spec())
    }

    /// The JPEG of image tensor `t`, its YCbCr read as `color` (ignored for
    /// RGB and GREY); valid until the next call. The planes are read under
    /// read maps (a dma-buf's CPU-access bracket), rows at their strides.
    ///
    /// # Errors
    /// As [`encode`](Self::encode); [`JpegError::NotImage`] for a tensor
    /// without an image layout or a batch of images.
    pub fn encode_tensor(&mut self, t: &Tensor<u8>, color: ColorSpec) -> Result<&[u8], JpegError> {
        let (Some(format), Some(width), Some(height)) = (t.format(), t.width(), t.height()) else {
            return Err(JpegError::NotImage {
                shape: t.shape().to_vec(),
            });
        };
        check_size(width, height, format.name())?;
        let len = match format {
            PixelFormat::Rgb
            | PixelFormat::Bgr
            | PixelFormat::Rgba
            | PixelFormat::Bgra
            | PixelFormat::Grey => {
                let p = t.plane(0)?;
                let (stride, row, rows) = plane_shape(&p)?;
                let m = p.map_read()?;
                let plane = Plane::new("packed", &m, stride, row, rows)?;
                let n = self.compress_packed(plane, format, width, height)?;
                m.finish()?;
                n
            }
            PixelFormat::Nv12 | PixelFormat::Nv16 => {
                let (pl, pc) = (t.plane(0)?, t.plane(1)?);
                let ((ys, yw, yr), (cs, cw, cr)) = (plane_shape(&pl)?, plane_shape(&pc)?);
                let (ml, mc) = (pl.map_read()?, pc.map_read()?);
                let y = Plane::new("Y", &ml, ys, yw, yr)?;
                let cbcr = Plane::new("CbCr", &mc, cs, cw.max(2), cr)?;
                let vsub = if format == PixelFormat::Nv12 { 2 } else { 1 };
                let src = Source {
                    layout: Layout::SemiPlanar { y, cbcr },
                    width,
                    height,
                    vsub,
                };
                let n = self.compress_source(&src, color)?;
                ml.finish()?;
                mc.finish()?;
                n
            }
            PixelFormat::Yuyv | PixelFormat::Uyvy => {
                if !width.is_multiple_of(2) {
                    return Err(JpegError::Size {
                        width,
                        height,
                        format: format.name().into(),
                        why: "an odd width: YUYV and UYVY pair their pixels",
                    });
                }
                let p = t.plane(0)?;
                let (stride, row, rows) = plane_shape(&p)?;
                let m = p.map_read()?;
                let order = if format == PixelFormat::Yuyv {
                    [0, 1, 2, 3]
                } else {
                    [1, 0, 3, 2]
                };
                let plane = Plane::new("packed", &m, stride, row.max(4), rows)?;
                let src = Source {
                    layout: Layout::Packed { plane, order },
                    width,
                    height,
                    vsub: 1,
                };
                let n = self.compress_source(&src, color)?;
                m.finish()?;
                n
            }
            other => return Err(JpegError::Format { format: other }),
        };
        Ok(&self.out[..len])
    }

    /// The JPEG of three separate planes (I420, I422), read as `color`;
    /// valid until the next call.
    ///
    /// # Errors
    /// [`JpegError::Size`] for sizes JPEG cannot hold, [`JpegError::Plane`]
    /// for a plane too short for its rows, [`JpegError::Turbo`].
    pub fn encode_planes(
        &mut self,
        p: &YuvPlanes<'_>,
        color: ColorSpec,
    ) -> Result<&[u8], JpegError> {
        let (name, vsub) = match p.chroma {
            Chroma::Yuv420 => ("I420", 2),
            Chroma::Yuv422 => ("I422", 1),
        };
        check_size(p.width, p.height, name)?;
        let (cw, ch) = (p.width.div_ceil(2), p.height.div_ceil(vsub));
        let src = Source {
            layout: Layout::Planar {
                y: Plane::new("Y", p.y, p.y_stride, p.width, p.height)?,
                cb: Plane::new("Cb", p.cb, p.cb_stride, cw, ch)?,
                cr: Plane::new("Cr", p.cr, p.cr_stride, cw, ch)?,
            },
            width: p.width,
            height: p.height,
            vsub,
        };
        let len = self.compress_source(&src, color)?;
        Ok(&self.out[..len])
    }

    /// Compresses a YCbCr source into `out`; returns the JPEG's length.
    fn compress_source(&mut self, src: &Source<'_>, color: ColorSpec) -> Result<usize, JpegError> {
        if self.transform.as_ref().is_none_or(|(c, _)| *c != color) {
            log::debug!("JPEG: YCbCr read as {color}, written as BT.601 full range (JFIF)");
            self.transform = Some((color, Transform::to_jfif(color)));
        }
        let transform = self
            .transform
            .as_ref()
            .map_or(&Transform::Identity, |(_, t)| t);
        let d = src.dims();
        let [ly, lcb, lcr] = transform.affines();
        src.gather_chroma(&mut self.cb, &mut self.cr, [lcb, lcr]);
        let in_place = match transform {
            Transform::Identity => src.luma_in_place(),
            _ => None,
        };
        let (y, y_stride) = match in_place {
            Some(y) => y,
            None => {
                src.gather_luma(&mut self.y, ly);
                if let Transform::Mixed(m) = transform {
                    mix(m, d, src.vsub, &mut self.y, &mut self.cb, &mut self.cr);
                }
                (&self.y[..], d.luma_width)
            }
        };
        let subsamp = src.subsamp();
        grow(
            &mut self.out,
            turbojpeg::compressed_buf_len(src.width, src.height, subsamp)?,
        );
        let image = YuvPlanesImage {
            y_plane: y,
            u_plane: &self.cb[..],
            v_plane: &self.cr[..],
            width: src.width,
            height: src.height,
            y_stride,
            u_stride: d.chroma_width,
            v_stride: d.chroma_width,
            subsamp,
        };
        Ok(self
            .compressor
            .compress_yuv_planes_to_slice(&image, &mut self.out)?)
    }

    /// Compresses an RGB-family or GREY image (libjpeg-turbo converts RGB
    /// itself; 4:2:0 chroma); returns the JPEG's length.
    fn compress_packed(
        &mut self,
        plane: Plane<'_>,
        format: PixelFormat,
        width: usize,
        height: usize,
    ) -> Result<usize, JpegError> {
        let (pixel, subsamp) = match format {
            PixelFormat::Rgb => (turbojpeg::PixelFormat::RGB, Subsamp::Sub2x2),
            PixelFormat::Bgr => (turbojpeg::PixelFormat::BGR, Subsamp::Sub2x2),
            PixelFormat::Rgba => (turbojpeg::PixelFormat::RGBA, Subsamp::Sub2x2),
            PixelFormat::Bgra => (turbojpeg::PixelFormat::BGRA, Subsamp::Sub2x2),
            PixelFormat::Grey => (turbojpeg::PixelFormat::GRAY, Subsamp::Gray),
            other => return Err(JpegError::Format { format: other }),
        };
        let (data, stride, row) = plane.parts();
        if row < width * pixel.size() {
            return Err(JpegError::Plane {
                plane: "packed",
                len: data.len(),
                stride,
                width: width * pixel.size(),
                rows: height,
            });
        }
        self.compressor.set_subsamp(subsamp)?;
        grow(
            &mut self.out,
            turbojpeg::compressed_buf_len(width, height, subsamp)?,
        );
        let image = Image {
            pixels: data,
            width,
            pitch: stride,
            height,
            format: pixel,
        };
        Ok(self.compressor.compress_to_slice(image, &mut self.out)?)
    }
}

/// `(row stride, samples per row, rows)` of a 2-D plane tensor.
fn plane_shape(p: &Tensor<u8>) -> Result<(usize, usize, usize), JpegError> {
    match *p.shape() {
        [rows, row] => Ok((p.strides().map_or(row, |s| s[0]), row, rows)),
        _ => Err(JpegError::NotImage {
            shape: p.shape().to_vec(),
        }),
    }
}

/// Each side in 1..=65535.
fn check_size(width: usize, height: usize, format: &str) -> Result<(), JpegError> {
    if (1..=MAX_SIDE).contains(&width) && (1..=MAX_SIDE).contains(&height) {
        return Ok(());
    }
    Err(JpegError::Size {
        width,
        height,
        format: format.into(),
        why: "each side must be 1 to 65535 pixels",
    })
}

/// `out` at least `n` bytes long (libjpeg-turbo's worst case), grown only
/// when a larger frame comes.
fn grow(out: &mut Vec<u8>, n: usize) {
    if out.len() < n {
        out.resize(n, 0);
    }
}
