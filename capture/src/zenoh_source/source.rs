//! [`ZenohSource`]: JPEG frames from a Zenoh topic, decoded into RGB frames
//! of the source's own memfd buffers.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zenoh::handlers::{RingChannel, RingChannelHandler};
use zenoh::pubsub::Subscriber;
use zenoh::sample::Sample;
use zenoh::{Session, Wait};
use zerocam_tensor::{ColorSpec, PixelFormat, Tensor, TensorMemory};

mod intake;

use super::picture::{decode_error, jpeg_size, Kind, Unit, H264};
use super::{open_session, Attachment, Role, ZenohError, ZenohOptions, MAX_MESSAGE};
use crate::frame::plane_memory::PlaneMemory;
use crate::frame::plane_memory::PlaneSource;
use crate::frame::slot::{read_only_planes_of, OwnedSlots, Slot};
use crate::frame::Clock;
use crate::frame::{lock, FrameMeta, Placement, Synthesized};
use crate::v4l2::ioctl::raw;
use crate::{
    CaptureError, CaptureFormat, Colorimetry, Frame, FrameSource, PlaneLayout, Result, SharedPlane,
    StreamFormat, StreamStats, CAPTURE_FORMATS,
};

/// What an H.264 stream without colour information is: BT.601, limited.
const H264_COLORIMETRY: Colorimetry = Colorimetry {
    colorspace: raw::COLORSPACE_SMPTE170M,
    ycbcr_enc: raw::YCBCR_ENC_601,
    quantization: raw::QUANTIZATION_LIM_RANGE,
};

/// What a decoded JPEG is: sRGB, full range (JFIF).
const JPEG_COLORIMETRY: Colorimetry = Colorimetry {
    colorspace: raw::COLORSPACE_SRGB,
    ycbcr_enc: raw::YCBCR_ENC_DEFAULT,
    quantization: raw::QUANTIZATION_FULL_RANGE,
};

/// A forward step in a sender's sample numbers above this is a new count
/// (a restart, or a forged number), not that many losses.
const MAX_GAP: u64 = 1 << 16;

/// A backward step in a sender's numbers of at most this is a late sample
/// (skipped); a larger one is a new count.
const MAX_BACKSTEP: u64 = 1 << 10;

/// Rows are padded to this many bytes, as the pattern source's are.
const ROW_ALIGN: usize = 64;

/// Samples waiting in the subscriber: when the source is read slower than
/// they come, the oldest are dropped (and counted lost), never queued
/// without bound (at most this many times the largest payload taken).
/// Eight, a quarter of a second at 30 fps: an H.264 stream that loses one
/// access unit loses every picture to the next keyframe (a GOP), so a
/// reader held up for a moment (a loaded machine) must not lose any. A
/// JPEG stream is read at its newest instead (each picture stands alone).
const QUEUE: usize = 8;

/// Refused samples are logged at most once per this (with the count since
/// the last line): a sender flooding bad samples cannot flood the log.
const WARN_EVERY: Duration = Duration::from_secs(1);

/// How to set up a [`ZenohSource`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZenohSourceConfig {
    /// The key expression of a `sensor_msgs/msg/CompressedImage` topic
    /// (e.g. `rt/camera/jpeg`).
    pub key: String,
    /// The session.
    pub options: ZenohOptions,
    /// Frame buffers (at least 2).
    pub buffers: u32,
    /// How long [`ZenohSource::new`] waits for the first sample, which
    /// gives the stream its size.
    pub first_sample: Duration,
    /// The largest payload taken.
    pub max_payload: usize,
    /// The most pixels a picture may have: the first sample sizes the
    /// buffers, so a sender's header alone cannot make the source allocate
    /// gigabytes.
    pub max_pixels: u64,
}

/// [`ZenohSourceConfig::max_pixels`]' default: 4K UHD (24 MiB an RGB buffer).
pub const MAX_PIXELS: u64 = 3840 * 2160;

impl ZenohSourceConfig {
    /// `key` on zerocam's default session, 4 buffers, 5 s for the first
    /// sample, payloads up to [`MAX_MESSAGE`], pictures up to
    /// [`MAX_PIXELS`].
    pub fn new(key: impl Into<String>) -> ZenohSourceConfig {
        ZenohSourceConfig {
            key: key.into(),
            options: ZenohOptions::default(),
            buffers: 4,
            first_sample: Duration::from_secs(5),
            max_payload: MAX_MESSAGE,
            max_pixels: MAX_PIXELS,
        }
    }
}

/// Frames from a Zenoh topic of JPEG `CompressedImage`s, as RGB (full
/// range, sRGB) frames of the first sample's size.
///
/// - [`Frame::sequence`] is the capture's sequence number where the sender
///   is zerocam (its attachment), else the source's own count.
/// - [`Frame::timestamp`] is the message's stamp: the sender's
///   `CLOCK_REALTIME` at capture (ROS's clock), not this machine's
///   `CLOCK_MONOTONIC`.
/// - [`StreamStats::dropped`] counts samples lost between two that came
///   (from the sender's numbering), [`StreamStats::late`] samples older
///   than one already shown (dropped), [`StreamStats::rejected`] samples
///   that were malformed, too large, not JPEG, or of another size (each
///   logged; [`ZenohSource::last_error`] keeps the last).
pub struct ZenohSource {
    // Declared before the session: the subscriber goes first.
    subscriber: Subscriber<RingChannelHandler<Sample>>,
    session: Session,
    shared: Arc<Mutex<OwnedSlots>>,
    format: StreamFormat,
    path: PathBuf,
    key: String,
    max_payload: usize,
    kind: Kind,
    decompressor: turbojpeg::Decompressor,
    h264: Option<H264>,
    pending: Option<Sample>,
    last: Option<(u32, u64)>,
    sequence: u32,
    late: u64,
    rejected: u64,
    last_error: Option<ZenohError>,
    /// When a refused sample was last logged, and how many since.
    warned: Option<Instant>,
    unlogged: u64,
}

impl std::fmt::Debug for ZenohSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZenohSource")
            .field("key", &self.key)
            .field("format", &self.format)
            .finish_non_exhaustive()
    }
}

fn tensor_error(path: &Path, source: zerocam_tensor::Error) -> CaptureError {
    CaptureError::Tensor {
        path: path.to_path_buf(),
        source,
    }
}

impl ZenohSource {
    /// Opens a session, subscribes to `config.key`, and waits up to
    /// `config.first_sample` for a sample that gives the stream its size.
    ///
    /// # Errors
    /// [`ZenohError`] (as [`CaptureError::Zenoh`]): the session, the key,
    /// no good sample in time ([`ZenohError::NoSample`], or the last bad
    /// sample's error); too few or too many buffers.
    pub fn new(config: ZenohSourceConfig) -> Result<ZenohSource> {
        let ZenohSourceConfig {
            key,
            options,
            buffers,
            first_sample,
            max_payload,
            max_pixels,
        } = config;
        OwnedSlots::check_count(buffers)?;
        let session = open_session(&options, Role::Subscriber)?;
        let key_error = |e: zenoh::Error| ZenohError::Key {
            key: key.clone(),
            reason: e.to_string(),
        };
        let subscriber = session
            .declare_subscriber(key.as_str())
            .with(RingChannel::new(QUEUE))
            .wait()
            .map_err(key_error)?;
        let path = PathBuf::from(format!("zenoh:{key}"));
        // The first good sample: its kind is the topic's, its size (for
        // H.264, the first picture's) the stream's.
        let deadline = Instant::now() + first_sample;
        let mut last_error = None;
        let mut h264 = None;
        let (first, kind, width, height, last) = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            // Once the time is up, bad samples still queued are not read:
            // a flood of them cannot hold `new` past `first_sample`.
            let received = if left.is_zero() {
                Ok(None)
            } else {
                subscriber.recv_timeout(left)
            };
            let sample = match received {
                Ok(Some(s)) => s,
                Ok(None) => {
                    return Err(last_error
                        .unwrap_or(ZenohError::NoSample {
                            key,
                            waited: first_sample,
                            endpoints: options.connect_endpoints(Role::Subscriber),
                        })
                        .into())
                }
                Err(e) => {
                    return Err(ZenohError::Closed {
                        key,
                        reason: e.to_string(),
                    }
                    .into())
                }
            };
            let payload = sample.payload().to_bytes();
            let sized = Kind::of(&key, &sample, &payload).and_then(|kind| {
                let unit = Unit::read(kind, &key, &payload)?;
                match kind {
                    Kind::Jpeg => jpeg_size(&key, unit.data).map(|(w, h)| Some((kind, w, h))),
                    Kind::H264 => {
                        let decoder = match &mut h264 {
                            Some(d) => d,
                            None => h264.insert(H264::new(&key)?),
                        };
                        let picture = decoder.decode(&key, unit.data)?;
                        Ok(picture.map(|p| (kind, p.width, p.height)))
                    }
                }
            });
            let sized = sized.and_then(|s| match s {
                Some((_, w, h)) if u64::from(w) * u64::from(h) > max_pixels => {
                    Err(ZenohError::Decode {
                        key: key.clone(),
                        reason: format!(
                            "a {w}x{h} picture, more than the {max_pixels} pixels accepted"
                        ),
                    })
                }
                s => Ok(s),
            });
            match sized {
                // A JPEG is decoded again into a buffer; the first H.264
                // picture only sized the stream (the decoder keeps its state).
                Ok(Some((Kind::Jpeg, w, h))) => {
                    break (Some(sample.clone()), Kind::Jpeg, w, h, None)
                }
                // Its number counts the samples lost after it.
                Ok(Some((kind, w, h))) => {
                    let a = sample.attachment();
                    let number = a.and_then(|a| Attachment::from_bytes(&a.to_bytes()));
                    break (None, kind, w, h, number.map(|a| (a.instance, a.number)));
                }
                Ok(None) => {}
                Err(e) => {
                    log::warn!("{e}");
                    last_error = Some(e);
                }
            }
        };
        let format = match kind {
            Kind::Jpeg => rgb_format(width, height, &path)?,
            Kind::H264 => nv12_format(width, height, &path)?,
        };
        let slots = (0..buffers)
            .map(|index| {
                let name = format!("zenoh:{index}");
                let size = [format.planes[0].size as usize];
                let t = Tensor::new(&size, Some(TensorMemory::Shm), Some(&name))
                    .map_err(|e| tensor_error(&path, e))?;
                let plane = PlaneMemory::owned(t).ok_or_else(|| {
                    tensor_error(
                        &path,
                        zerocam_tensor::Error::NoFd {
                            memory: TensorMemory::Shm,
                        },
                    )
                })?;
                Ok(Slot::new(vec![plane]))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(ZenohSource {
            subscriber,
            session,
            shared: Arc::new(Mutex::new(OwnedSlots::new(slots, 1))),
            format,
            path,
            key,
            max_payload,
            kind,
            decompressor: turbojpeg::Decompressor::new()
                .map_err(|e| CaptureError::Zenoh(decode_error("", &e.to_string())))?,
            h264,
            pending: first,
            last,
            sequence: 0,
            late: 0,
            rejected: 0,
            last_error: None,
            warned: None,
            unlogged: 0,
        })
    }

    /// Logs a refused sample, at most once per [`WARN_EVERY`].
    fn warn_rejected(&mut self, e: &ZenohError) {
        let now = Instant::now();
        if self
            .warned
            .is_some_and(|t| now.duration_since(t) < WARN_EVERY)
        {
            self.unlogged += 1;
            return;
        }
        match std::mem::take(&mut self.unlogged) {
            0 => log::warn!("{e}"),
            n => log::warn!("{e} (and {n} more refused since the last line)"),
        }
        self.warned = Some(now);
    }

    /// The last sample refused ([`StreamStats::rejected`]), if any.
    pub fn last_error(&self) -> Option<&ZenohError> {
        self.last_error.as_ref()
    }

    /// The session (to declare more on it, or read its id).
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Decodes `sample` into a free buffer; `None` when it is late (older
    /// than one already shown: counted) or gave no picture (an H.264
    /// access unit of parameter sets only).
    fn take(&mut self, sample: &Sample) -> Result<Option<Frame>> {
        let key = self.key.clone();
        let Some(dropped) = self.numbered(sample) else {
            self.late += 1;
            return Ok(None);
        };
        let len = sample.payload().len();
        if len > self.max_payload {
            lock(&self.shared).counters.dropped += dropped;
            return Err(ZenohError::TooLarge {
                key,
                len,
                max: self.max_payload,
            }
            .into());
        }
        // Counted now: whatever becomes of this sample, those before it are lost.
        let mut st = lock(&self.shared);
        st.counters.dropped = st.counters.dropped.saturating_add(dropped);
        drop(st);
        let payload = sample.payload().to_bytes();
        let unit = Unit::read(self.kind, &key, &payload)?;
        let pitch = self.format.planes[0].bytes_per_line as usize;
        let shared = self.shared.clone();
        let mut guard = lock(&shared);
        let st = &mut *guard;
        let stream = (self.format.width, self.format.height);
        let size_changed = |(width, height): (u32, u32)| ZenohError::SizeChanged {
            key: key.clone(),
            width,
            height,
            stream_width: stream.0,
            stream_height: stream.1,
        };
        let written = match (self.kind, &mut self.h264) {
            (Kind::H264, Some(decoder)) => {
                let Some(picture) = decoder.decode(&key, unit.data)? else {
                    return Ok(None);
                };
                if (picture.width, picture.height) != stream {
                    return Err(size_changed((picture.width, picture.height)).into());
                }
                write_free_slot(st, &self.path, |pixels| {
                    picture.write_nv12(pixels, pitch);
                    Ok(())
                })?
            }
            _ => {
                let (width, height) = jpeg_size(&key, unit.data)?;
                if (width, height) != stream {
                    return Err(size_changed((width, height)).into());
                }
                let decompressor = &mut self.decompressor;
                write_free_slot(st, &self.path, |pixels| {
                    let image = turbojpeg::Image {
                        pixels,
                        width: width as usize,
                        pitch,
                        height: height as usize,
                        format: turbojpeg::PixelFormat::RGB,
                    };
                    decompressor
                        .decompress(unit.data, image)
                        .map_err(|e| decode_error(&key, &e.to_string()))
                })?
            }
        };
        let Some(index) = written else {
            // The sample is gone with nowhere to put it: a loss too.
            st.counters.dropped += 1;
            return Err(CaptureError::NoFreeBuffer {
                path: self.path.clone(),
                buffers: st.slots.len(),
            });
        };
        let slot = &mut st.slots[index];
        let ready = Instant::now();
        let tensor = slot
            .tensor(&mut st.cache, &self.format, &[0], None)
            .map_err(|e| tensor_error(&self.path, e))?;
        slot.hold();
        st.counters.frames += 1;
        drop(guard);
        let numbers = sample
            .attachment()
            .and_then(|a| Attachment::from_bytes(&a.to_bytes()));
        let (sequence, own) = match numbers {
            Some(a) => (a.sequence, false),
            None => (self.sequence, true),
        };
        self.sequence = self.sequence.wrapping_add(1);
        let stamp = unit.stamp.to_duration();
        let timestamp = stamp.unwrap_or_else(|| Clock::Realtime.now());
        let meta = FrameMeta {
            sequence,
            timestamp,
            bytes_used: self.format.planes[0].size as usize,
            synthesized: Synthesized {
                sequence: own,
                timestamp: stamp.is_none(),
                bytes_used: false,
            },
            placement: Placement::default(),
        };
        Ok(Some(Frame::new(
            shared,
            index,
            tensor,
            self.format.color,
            meta,
            ready,
        )))
    }
}

/// Writes a picture into the first free buffer (in order from the next
/// one, as a driver's queue cycles; a buffer whose old frame is still
/// mapped, a numpy view kept past its frame, is passed over); its index, or
/// `None` when every buffer is held.
fn write_free_slot(
    st: &mut OwnedSlots,
    path: &Path,
    mut write: impl FnMut(&mut [u8]) -> std::result::Result<(), ZenohError>,
) -> Result<Option<usize>> {
    for index in st.free_from(st.counters.frames as usize) {
        let PlaneSource::Owned(t) = &st.slots[index].planes[0].source else {
            continue;
        };
        let mut pixels = match t.map_write() {
            Ok(m) => m,
            Err(zerocam_tensor::Error::MapConflict { .. }) => continue,
            Err(e) => return Err(tensor_error(path, e)),
        };
        write(&mut pixels[..])?;
        return Ok(Some(index));
    }
    Ok(None)
}

/// The NV12 stream format of `width`x`height` H.264 pictures (one buffer,
/// Y then CbCr), BT.601 limited range: H.264's default without colour
/// information, and what OpenH264 puts out.
fn nv12_format(width: u32, height: u32, path: &Path) -> Result<StreamFormat> {
    let stride = (width as usize).next_multiple_of(ROW_ALIGN);
    let size = stride * height as usize * 3 / 2;
    let color = H264_COLORIMETRY.color_spec(PixelFormat::Nv12);
    one_plane_format(
        PixelFormat::Nv12,
        *b"NV12",
        (width, height),
        (stride, size),
        color,
        path,
    )
}

/// The RGB stream format of `width`x`height` frames (a JPEG topic's).
fn rgb_format(width: u32, height: u32, path: &Path) -> Result<StreamFormat> {
    let stride = (width as usize * 3).next_multiple_of(ROW_ALIGN);
    let size = stride * height as usize;
    let color = JPEG_COLORIMETRY.color_spec(PixelFormat::Rgb);
    one_plane_format(
        PixelFormat::Rgb,
        *b"RGB3",
        (width, height),
        (stride, size),
        color,
        path,
    )
}

/// A one-plane stream format of `pixel` (its capture format, one memory
/// plane) with `stride` and `size` bytes.
fn one_plane_format(
    pixel: PixelFormat,
    fourcc: [u8; 4],
    (width, height): (u32, u32),
    (stride, size): (usize, usize),
    color: ColorSpec,
    path: &Path,
) -> Result<StreamFormat> {
    let found = CAPTURE_FORMATS
        .iter()
        .find(|f| f.pixel == pixel && f.memory_planes == 1);
    let format = *found.ok_or_else(|| CaptureError::UnsupportedFormat {
        path: path.to_path_buf(),
        fourcc: crate::FourCc(fourcc),
        offered: CaptureFormat::names(),
    })?;
    Ok(StreamFormat {
        format,
        width,
        height,
        planes: vec![PlaneLayout {
            bytes_per_line: u32::try_from(stride).unwrap_or(u32::MAX),
            size: u32::try_from(size).unwrap_or(u32::MAX),
        }],
        color,
    })
}

impl FrameSource for ZenohSource {
    fn next_frame(&mut self, timeout: Duration) -> Result<Frame> {
        let deadline = Instant::now() + timeout;
        loop {
            let sample = match self.pending.take() {
                Some(s) => s,
                // Samples that keep coming late or refused do not hold the
                // caller past its timeout.
                None if Instant::now() >= deadline => {
                    return Err(CaptureError::Timeout {
                        path: self.path.clone(),
                        timeout,
                    })
                }
                None => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    match self.subscriber.recv_timeout(left) {
                        Ok(Some(s)) => s,
                        Ok(None) => {
                            return Err(CaptureError::Timeout {
                                path: self.path.clone(),
                                timeout,
                            })
                        }
                        Err(e) => {
                            return Err(ZenohError::Closed {
                                key: self.key.clone(),
                                reason: e.to_string(),
                            }
                            .into())
                        }
                    }
                }
            };
            // JPEGs stand alone: the newest waiting is shown, those before
            // it are skipped (counted lost by their numbers). H.264 is
            // decoded in order: each access unit needs the ones before.
            let sample = match self.kind {
                Kind::Jpeg => self.newest(sample),
                Kind::H264 => sample,
            };
            match self.take(&sample) {
                Ok(Some(f)) => return Ok(f),
                Ok(None) => {}
                Err(CaptureError::Zenoh(e)) => {
                    self.rejected += 1;
                    self.warn_rejected(&e);
                    self.last_error = Some(e);
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn stream_format(&self) -> &StreamFormat {
        &self.format
    }

    fn stats(&self) -> StreamStats {
        let st = lock(&self.shared);
        let mut stats = StreamStats::new(st.counters, st.slots.len(), 1, st.cache.stats());
        stats.late = self.late;
        stats.rejected = self.rejected;
        stats
    }

    fn name(&self) -> &Path {
        &self.path
    }

    fn read_only_planes(&self, index: usize) -> Result<Vec<SharedPlane>> {
        let st = lock(&self.shared);
        read_only_planes_of(&st.slots, index, &self.path)
    }

    /// The sender's stamps: its system clock.
    fn clock(&self) -> Clock {
        Clock::Realtime
    }
}
