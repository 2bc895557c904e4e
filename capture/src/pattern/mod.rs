//! [`PatternSource`]: zerocam's built-in camera for machines without one.
//! Like libcamera's virtual camera, it is a real source, not a test double:
//! its buffers are memfds, real fds with real inodes.

pub mod stamp;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zerocam_tensor::{PixelFormat, Tensor, TensorMemory};

use self::stamp::Stamp;
use crate::frame::plane_memory::{PlaneMemory, PlaneSource};
use crate::frame::slot::{read_only_planes_of, OwnedSlots, Slot};
use crate::frame::stats::monotonic_now;
use crate::frame::{lock, FrameMeta, Placement, Synthesized};
use crate::v4l2::ioctl::raw;
use crate::{
    ArgumentError, CaptureError, CaptureFormat, Colorimetry, Frame, FrameSource, PlaneLayout,
    Result, SharedPlane, StreamFormat, StreamStats, CAPTURE_FORMATS,
};

/// The eight bars, left to right: white, yellow, cyan, green, magenta, red,
/// blue, black.
pub const BARS_RGB: [[u8; 3]; 8] = [
    [255, 255, 255],
    [255, 255, 0],
    [0, 255, 255],
    [0, 255, 0],
    [255, 0, 255],
    [255, 0, 0],
    [0, 0, 255],
    [0, 0, 0],
];

/// The colour fields the pattern source describes its frames with, as a
/// webcam (and vivid) would: colorspace sRGB, encoding and quantization
/// "default". By the V4L2 rules its YCbCr frames are BT.601 limited range,
/// which is how [`rgb_to_yuv`] draws them, and its RGB frames full range.
const PATTERN_COLORIMETRY: Colorimetry = Colorimetry {
    colorspace: raw::COLORSPACE_SRGB,
    ycbcr_enc: raw::YCBCR_ENC_DEFAULT,
    quantization: raw::QUANTIZATION_DEFAULT,
};

/// BT.601 limited-range Y, Cb, Cr of an RGB colour: how the pattern source
/// draws its YCbCr formats (their [`Frame::color_spec`] is
/// [`ColorSpec::BT601_LIMITED`](zerocam_tensor::ColorSpec::BT601_LIMITED)).
pub fn rgb_to_yuv([r, g, b]: [u8; 3]) -> [u8; 3] {
    let (r, g, b) = (f64::from(r), f64::from(g), f64::from(b));
    let y = 16.0 + (65.481 * r + 128.553 * g + 24.966 * b) / 255.0;
    let cb = 128.0 + (-37.797 * r - 74.203 * g + 112.0 * b) / 255.0;
    let cr = 128.0 + (112.0 * r - 93.786 * g - 18.214 * b) / 255.0;
    [y.round() as u8, cb.round() as u8, cr.round() as u8]
}

/// Rows are padded to this many bytes, as drivers do.
const ROW_ALIGN: usize = 64;

/// How to set up a pattern source.
#[derive(Debug, Clone, PartialEq)]
pub struct PatternConfig {
    /// The format to produce.
    pub format: CaptureFormat,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Frames per second to pace at; `None` produces frames as fast as asked.
    pub fps: Option<f64>,
    /// Buffers (at least 2).
    pub buffers: u32,
    /// Whether each frame carries its [`Stamp`] (its sequence number and
    /// capture time) in its top-left corner ([`stamp`]); the spec
    /// `pattern:stamp` turns it on.
    pub stamp: bool,
}

impl PatternConfig {
    /// `format` at `width`x`height`, unpaced, 4 buffers.
    pub fn new(format: CaptureFormat, width: u32, height: u32) -> PatternConfig {
        PatternConfig {
            format,
            width,
            height,
            fps: None,
            buffers: 4,
            stamp: false,
        }
    }
}

/// The built-in pattern camera: memfd buffers through the same import cache
/// and [`Frame`] API as a V4L2 stream, padded rows like a driver's, scrolling
/// colour bars (BT.601 limited range for YUV) and a white line moving down, in
/// any of zerocam's capture formats, as its frames'
/// [`Frame::color_spec`] says.
#[derive(Debug)]
pub struct PatternSource {
    shared: Arc<Mutex<OwnedSlots>>,
    format: StreamFormat,
    /// Per plane: a row of bars, and a row of the white line.
    rows: Vec<Vec<u8>>,
    white: Vec<Vec<u8>>,
    interval: Option<Duration>,
    next_due: Instant,
    sequence: u32,
    /// The stamp's block size, when each frame carries one.
    stamp_block: Option<usize>,
    path: PathBuf,
}

fn pattern_error(source: zerocam_tensor::Error) -> CaptureError {
    CaptureError::Tensor {
        path: PathBuf::from("pattern"),
        source,
    }
}

fn unsupported(format: CaptureFormat) -> CaptureError {
    CaptureError::UnsupportedFormat {
        path: PathBuf::from("pattern"),
        fourcc: format.fourcc,
        offered: CaptureFormat::names(),
    }
}

fn bad_size(format: CaptureFormat, width: u32, height: u32, reason: &'static str) -> CaptureError {
    ArgumentError::PatternSize {
        format: format.name,
        width,
        height,
        reason,
    }
    .into()
}

impl PatternSource {
    /// Allocates the buffers (shared memory) and gets ready to draw.
    ///
    /// # Errors
    /// [`CaptureError::InvalidArgument`] for fewer than 2 buffers or more than
    /// [`MAX_BUFFERS`](crate::v4l2::MAX_BUFFERS), or a bad frame rate; [`CaptureError::UnsupportedSize`] for a size the format cannot have
    /// (odd sizes with subsampled chroma, zero).
    pub fn new(config: PatternConfig) -> Result<PatternSource> {
        let PatternConfig {
            format,
            width,
            height,
            fps,
            buffers,
            stamp,
        } = config;
        OwnedSlots::check_count(buffers)?;
        let interval = match fps {
            Some(f) if f.is_finite() && f > 0.0 => Some(
                Duration::try_from_secs_f64(1.0 / f).map_err(|_| ArgumentError::BadFrameRate(f))?,
            ),
            Some(f) => return Err(ArgumentError::BadFrameRate(f).into()),
            None => None,
        };
        if !CAPTURE_FORMATS.contains(&format) {
            return Err(unsupported(format));
        }
        let (hsub, vsub) = format.pixel.subsampling();
        let (w, h) = (width as usize, height as usize);
        let bad = |reason| bad_size(format, width, height, reason);
        if w == 0 || h == 0 {
            return Err(bad("width and height must be non-zero"));
        }
        if w % hsub != 0 || h % vsub != 0 {
            return Err(bad("the chroma subsampling needs even sizes"));
        }
        let stamp_block = match stamp {
            true => {
                Some(stamp::block_size(w, h).ok_or_else(|| bad("a stamp needs 64x48 at least"))?)
            }
            false => None,
        };
        let rows = plane_rows(format, w, |x| BARS_RGB[(x % w) * 8 / w])?;
        let white = plane_rows(format, w, |_| [255; 3])?;
        let pixel = format.pixel;
        let too_big = || bad("a plane would exceed 4 GiB");
        let stride = pixel
            .plane_row_samples(0, w)
            .checked_next_multiple_of(ROW_ALIGN)
            .ok_or_else(too_big)?;
        let plane_bytes = |i: usize| {
            stride
                .checked_mul(pixel.plane_rows(i, h))
                .and_then(|b| u32::try_from(b).ok())
        };
        let u32_stride = u32::try_from(stride).map_err(|_| too_big())?;
        let mut sizes = (0..pixel.plane_count()).map(plane_bytes);
        // NV12M/NV16M: a buffer per colour plane; else one holding them all.
        let sizes: Vec<u32> = if format.memory_planes == 2 {
            sizes.collect::<Option<_>>().ok_or_else(too_big)?
        } else {
            let total = sizes.try_fold(0u32, |acc, b| acc.checked_add(b?));
            vec![total.ok_or_else(too_big)?]
        };
        let planes = sizes.into_iter().map(|size| PlaneLayout {
            bytes_per_line: u32_stride,
            size,
        });
        let stream_format = StreamFormat {
            format,
            width,
            height,
            planes: planes.collect(),
            color: PATTERN_COLORIMETRY.color_spec(pixel),
        };
        let no_fd = || {
            pattern_error(zerocam_tensor::Error::NoFd {
                memory: TensorMemory::Shm,
            })
        };
        let mut slots = Vec::with_capacity(buffers as usize);
        for index in 0..buffers {
            let plane = |(p, layout): (usize, &PlaneLayout)| {
                let name = format!("pattern:{index}.{p}");
                let size = [layout.size as usize];
                let t = Tensor::new(&size, Some(TensorMemory::Shm), Some(&name));
                PlaneMemory::owned(t.map_err(pattern_error)?).ok_or_else(no_fd)
            };
            let planes = stream_format.planes.iter().enumerate().map(plane);
            slots.push(Slot::new(planes.collect::<Result<_>>()?));
        }
        let planes = stream_format.planes.len();
        Ok(PatternSource {
            shared: Arc::new(Mutex::new(OwnedSlots::new(slots, planes))),
            rows,
            white,
            format: stream_format,
            interval,
            next_due: Instant::now(),
            sequence: 0,
            stamp_block,
            path: PathBuf::from("pattern"),
        })
    }

    /// Draws frame `sequence` (and its stamp, if any) into the planes of a
    /// buffer.
    fn draw(
        &self,
        planes: &[PlaneMemory],
        sequence: u32,
        stamp: Option<&Stamp>,
    ) -> zerocam_tensor::Result<()> {
        let f = &self.format;
        let pixel = f.format.pixel;
        let h = f.height as usize;
        let stride = f.planes[0].bytes_per_line as usize;
        let count = pixel.plane_count();
        // Each memory buffer is mapped once: NV12M/NV16M hold one colour plane
        // each, a single buffer all of them, one after the other.
        for (b, memory) in planes.iter().enumerate() {
            let PlaneSource::Owned(t) = &memory.source else {
                continue;
            };
            let mut m = t.map_write()?;
            let colour = if b + 1 == planes.len() {
                b..count
            } else {
                b..b + 1
            };
            let mut start = 0;
            for p in colour {
                let rows = pixel.plane_rows(p, h);
                self.fill_plane(&mut m[start..], stride, p, sequence, stamp);
                start += rows * stride;
            }
        }
        Ok(())
    }

    /// Plane `p` of frame `sequence` into `dst` (`stride` bytes a row):
    /// the bars scrolled, the white line, the stamp when given.
    fn fill_plane(
        &self,
        dst: &mut [u8],
        stride: usize,
        p: usize,
        sequence: u32,
        stamp: Option<&Stamp>,
    ) {
        let f = &self.format;
        let pixel = f.format.pixel;
        let (w, h) = (f.width as usize, f.height as usize);
        let (hsub, _) = pixel.subsampling();
        // Scroll by 2 pixels a frame (even, for subsampled chroma).
        let shift = (2 * sequence as usize) % w / hsub * hsub;
        let line = (2 * sequence as usize) % h;
        let rows = pixel.plane_rows(p, h);
        let row_bytes = pixel.plane_row_samples(p, w);
        let bars = &self.rows[p][shift * pixel.samples_per_pixel()..][..row_bytes];
        let line_row = line * rows / h;
        for r in 0..rows {
            let src = if r == line_row {
                &self.white[p][..row_bytes]
            } else {
                bars
            };
            dst[r * stride..][..row_bytes].copy_from_slice(src);
        }
        if let (Some(stamp), Some(block)) = (stamp, self.stamp_block) {
            paint_stamp(dst, stride, pixel, p, stamp, block);
        }
    }

    /// The luma plane (`width` x `height` bytes, no padding) of frame
    /// `sequence` as this source draws it, with `stamp` when the source
    /// stamps its frames: the picture a decoded frame is compared with
    /// (its PSNR). `None` for the RGB formats, which have no luma plane.
    pub fn luma(&self, sequence: u32, stamp: Option<&Stamp>) -> Option<Vec<u8>> {
        let f = &self.format;
        let (w, h) = (f.width as usize, f.height as usize);
        let pixel = f.format.pixel;
        let plane = |stride| {
            let mut dst = vec![0; stride * h];
            self.fill_plane(&mut dst, stride, 0, sequence, stamp);
            dst
        };
        match pixel {
            PixelFormat::Grey | PixelFormat::Nv12 | PixelFormat::Nv16 => Some(plane(w)),
            // Y at even bytes (YUYV) or odd ones (UYVY).
            PixelFormat::Yuyv | PixelFormat::Uyvy => {
                let first = usize::from(pixel == PixelFormat::Uyvy);
                Some(plane(2 * w).into_iter().skip(first).step_by(2).collect())
            }
            _ => None,
        }
    }

    /// Whether each frame carries its [`Stamp`].
    pub fn stamps(&self) -> bool {
        self.stamp_block.is_some()
    }
}

/// The stamp's blocks into plane `p` of a `pixel` picture: luma black (16)
/// or white (235), chroma neutral (128), or RGB black or white.
fn paint_stamp(
    dst: &mut [u8],
    stride: usize,
    pixel: PixelFormat,
    p: usize,
    stamp: &Stamp,
    block: usize,
) {
    let (_, vsub) = pixel.subsampling();
    for (x, y, side, white) in stamp::blocks(stamp, block) {
        let (luma, full) = if white { (235, 255) } else { (16, 0) };
        let rows = |vsub: usize| (y / vsub..(y + side) / vsub).map(|r| r * stride);
        match (pixel, p) {
            (PixelFormat::Grey | PixelFormat::Nv12 | PixelFormat::Nv16, 0) => {
                rows(1).for_each(|r| dst[r + x..][..side].fill(luma));
            }
            // The CbCr row: a byte per pixel, Cb and Cr of each pair.
            (PixelFormat::Nv12 | PixelFormat::Nv16, 1) => {
                rows(vsub).for_each(|r| dst[r + x..][..side].fill(128));
            }
            (PixelFormat::Yuyv | PixelFormat::Uyvy, 0) => {
                let pair = match pixel {
                    PixelFormat::Yuyv => [luma, 128],
                    _ => [128, luma],
                };
                for r in rows(1) {
                    for px in dst[r + 2 * x..][..2 * side].chunks_exact_mut(2) {
                        px.copy_from_slice(&pair);
                    }
                }
            }
            (PixelFormat::Rgb | PixelFormat::Bgr, 0) => {
                rows(1).for_each(|r| dst[r + 3 * x..][..3 * side].fill(full));
            }
            _ => {}
        }
    }
}

/// One row of `colour(x)` for x in 0..2w (scrolling reads a window of it), for
/// each plane of a capture format (YCbCr as [`rgb_to_yuv`] gives it).
fn plane_rows(
    format: CaptureFormat,
    w: usize,
    colour: impl Fn(usize) -> [u8; 3],
) -> Result<Vec<Vec<u8>>> {
    let luma = |x: usize| rgb_to_yuv(colour(x))[0];
    // Cb on even samples, Cr on odd ones, both of the pair's left pixel.
    let chroma = |x: usize| rgb_to_yuv(colour(x & !1))[1 + x % 2];
    let two = 0..2 * w;
    Ok(match format.pixel {
        PixelFormat::Rgb => vec![two.flat_map(&colour).collect()],
        PixelFormat::Bgr => vec![two
            .flat_map(|x| {
                let [r, g, b] = colour(x);
                [b, g, r]
            })
            .collect()],
        PixelFormat::Grey => vec![two.map(luma).collect()],
        PixelFormat::Yuyv => vec![two.flat_map(|x| [luma(x), chroma(x)]).collect()],
        PixelFormat::Uyvy => vec![two.flat_map(|x| [chroma(x), luma(x)]).collect()],
        // NV12/NV16: Y row, then the CbCr row (Cb, Cr of each pixel pair).
        PixelFormat::Nv12 | PixelFormat::Nv16 => {
            vec![two.clone().map(luma).collect(), two.map(chroma).collect()]
        }
        // `new` admits only CAPTURE_FORMATS, all drawn above.
        _ => return Err(unsupported(format)),
    })
}

impl FrameSource for PatternSource {
    fn next_frame(&mut self, timeout: Duration) -> Result<Frame> {
        if let Some(interval) = self.interval {
            let now = Instant::now();
            if self.next_due > now {
                let wait = self.next_due - now;
                if wait > timeout {
                    std::thread::sleep(timeout);
                    return Err(CaptureError::Timeout {
                        path: self.path.clone(),
                        timeout,
                    });
                }
                std::thread::sleep(wait);
            }
            self.next_due = self.next_due.max(now) + interval;
        }
        let shared = self.shared.clone();
        let mut guard = lock(&shared);
        let st = &mut *guard;
        // Buffers cycle in order, as a driver's queue does.
        let sequence = self.sequence;
        // A stamped frame carries the time its drawing began, which its
        // metadata then gives too; otherwise the time it was drawn.
        let begun = self.stamp_block.map(|_| monotonic_now());
        let stamp = begun.map(|t| Stamp::new(sequence, t));
        let mut drawn_into = None;
        for index in st.free_from(sequence as usize) {
            match self.draw(&st.slots[index].planes, sequence, stamp.as_ref()) {
                Ok(()) => {
                    drawn_into = Some(index);
                    break;
                }
                // A map of an old frame's tensor still holds this buffer.
                Err(zerocam_tensor::Error::MapConflict { .. }) => continue,
                Err(e) => return Err(pattern_error(e)),
            }
        }
        let Some(index) = drawn_into else {
            return Err(CaptureError::NoFreeBuffer {
                path: self.path.clone(),
                buffers: st.slots.len(),
            });
        };
        let drawn = Instant::now();
        let slot = &mut st.slots[index];
        let offsets = &[0; 2][..slot.planes.len()];
        let tensor = slot.tensor(&mut st.cache, &self.format, offsets, None);
        let tensor = tensor.map_err(pattern_error)?;
        slot.hold();
        st.counters.frames += 1;
        self.sequence = self.sequence.wrapping_add(1);
        drop(guard);
        let meta = FrameMeta {
            sequence,
            timestamp: begun.unwrap_or_else(monotonic_now),
            bytes_used: self.format.planes.iter().map(|p| p.size as usize).sum(),
            synthesized: Synthesized::NONE,
            placement: Placement::default(),
        };
        let color = self.format.color;
        Ok(Frame::new(shared, index, tensor, color, meta, drawn))
    }

    fn stream_format(&self) -> &StreamFormat {
        &self.format
    }

    fn stats(&self) -> StreamStats {
        let st = lock(&self.shared);
        let planes = self.format.planes.len();
        StreamStats::new(st.counters, st.slots.len(), planes, st.cache.stats())
    }

    fn name(&self) -> &Path {
        &self.path
    }

    /// The buffer's memfds re-opened `O_RDONLY` (the same inodes).
    fn read_only_planes(&self, index: usize) -> Result<Vec<SharedPlane>> {
        let st = lock(&self.shared);
        read_only_planes_of(&st.slots, index, &self.path)
    }
}
