//! [`ZenohSource`]: JPEG frames from a Zenoh topic, decoded into RGB frames
//! of the source's own memfd buffers.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zenoh::handlers::{RingChannel, RingChannelHandler};
use zenoh::pubsub::Subscriber;
use zenoh::sample::Sample;
use zenoh::{Session, Wait};
use zerocam_tensor::{PixelFormat, Tensor, TensorMemory};

use super::{open_session, Attachment, Role, ZenohError, ZenohOptions, MAX_MESSAGE};
use crate::frame::plane_memory::PlaneMemory;
use crate::frame::slot::{read_only_planes_of, OwnedSlots, Slot};
use crate::frame::Clock;
use crate::frame::{lock, FrameMeta, Placement, Synthesized};
use crate::ros::{CompressedImage, Message};
use crate::v4l2::ioctl::raw;
use crate::{
    CaptureError, CaptureFormat, Colorimetry, Frame, FrameSource, PlaneLayout, Result, SharedPlane,
    StreamFormat, StreamStats, CAPTURE_FORMATS,
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
/// without bound.
const QUEUE: usize = 2;

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
    decompressor: turbojpeg::Decompressor,
    pending: Option<Sample>,
    last: Option<(u32, u64)>,
    sequence: u32,
    late: u64,
    rejected: u64,
    last_error: Option<ZenohError>,
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

fn decode_error(key: &str, e: &turbojpeg::Error) -> ZenohError {
    ZenohError::Decode {
        key: key.to_owned(),
        reason: e.to_string(),
    }
}

/// A `CompressedImage` payload's JPEG, checked.
fn jpeg_of<'a>(
    key: &str,
    payload: &'a [u8],
) -> std::result::Result<(CompressedImage<'a>, u32, u32), ZenohError> {
    let msg = CompressedImage::decode(payload).map_err(|source| ZenohError::Malformed {
        key: key.to_owned(),
        source,
    })?;
    if !msg.format.to_ascii_lowercase().contains("jpeg") {
        return Err(ZenohError::Format {
            key: key.to_owned(),
            format: msg.format.to_owned(),
        });
    }
    let header = turbojpeg::read_header(msg.data).map_err(|e| decode_error(key, &e))?;
    let size = |v: usize| u32::try_from(v).ok().filter(|&v| v > 0 && v <= 16384);
    match (size(header.width), size(header.height)) {
        (Some(w), Some(h)) => Ok((msg, w, h)),
        _ => Err(ZenohError::Decode {
            key: key.to_owned(),
            reason: format!("a {}x{} image", header.width, header.height),
        }),
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
        // The first good sample: its size is the stream's.
        let deadline = Instant::now() + first_sample;
        let mut last_error = None;
        let (first, width, height) = loop {
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
            match jpeg_of(&key, &payload) {
                Ok((_, w, h)) if u64::from(w) * u64::from(h) <= max_pixels => {
                    break (sample.clone(), w, h)
                }
                Ok((_, w, h)) => {
                    let e = ZenohError::Decode {
                        key: key.clone(),
                        reason: format!(
                            "a {w}x{h} picture, more than the {max_pixels} pixels accepted"
                        ),
                    };
                    log::warn!("{e}");
                    last_error = Some(e);
                }
                Err(e) => {
                    log::warn!("{e}");
                    last_error = Some(e);
                }
            }
        };
        let format = rgb_format(width, height, &path)?;
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
            decompressor: turbojpeg::Decompressor::new()
                .map_err(|e| CaptureError::Zenoh(decode_error("", &e)))?,
            pending: Some(first),
            last: None,
            sequence: 0,
            late: 0,
            rejected: 0,
            last_error: None,
        })
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
    /// than one already shown).
    fn take(&mut self, sample: &Sample) -> Result<Option<Frame>> {
        let key = self.key.clone();
        let numbers = sample
            .attachment()
            .and_then(|a| Attachment::from_bytes(&a.to_bytes()));
        let mut dropped = 0;
        if let Some(a) = numbers {
            if let Some((instance, last)) = self.last {
                // A number far from the last (forged, or a publisher that
                // restarted with the same instance) starts a new count,
                // never a huge loss or a stream of "late" samples.
                let step = a.number.wrapping_sub(last);
                let same = instance == a.instance;
                if same && (step == 0 || step > u64::MAX - MAX_BACKSTEP) {
                    return Ok(None);
                }
                if same && step <= MAX_GAP {
                    dropped = step - 1;
                }
            }
            self.last = Some((a.instance, a.number));
        }
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
        let (msg, width, height) = jpeg_of(&key, &payload)?;
        if (width, height) != (self.format.width, self.format.height) {
            return Err(ZenohError::SizeChanged {
                key,
                width,
                height,
                stream_width: self.format.width,
                stream_height: self.format.height,
            }
            .into());
        }
        let shared = self.shared.clone();
        let mut guard = lock(&shared);
        let st = &mut *guard;
        // Buffers cycle in order, as a driver's queue and the pattern's do:
        // each is imported once, and a frame's buffer is the oldest free one.
        // A free buffer whose old frame's tensor is still mapped (a numpy
        // view kept past the frame) is passed over, as the pattern does.
        let pitch = self.format.planes[0].bytes_per_line as usize;
        let mut decoded_into = None;
        for index in st.free_from(st.counters.frames as usize) {
            let slot = &st.slots[index];
            let crate::frame::plane_memory::PlaneSource::Owned(t) = &slot.planes[0].source else {
                continue;
            };
            let mut pixels = match t.map_write() {
                Ok(m) => m,
                Err(zerocam_tensor::Error::MapConflict { .. }) => continue,
                Err(e) => return Err(tensor_error(&self.path, e)),
            };
            let image = turbojpeg::Image {
                pixels: &mut pixels[..],
                width: width as usize,
                pitch,
                height: height as usize,
                format: turbojpeg::PixelFormat::RGB,
            };
            self.decompressor
                .decompress(msg.data, image)
                .map_err(|e| CaptureError::Zenoh(decode_error(&key, &e)))?;
            decoded_into = Some(index);
            break;
        }
        let Some(index) = decoded_into else {
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
        let (sequence, own) = match numbers {
            Some(a) => (a.sequence, false),
            None => (self.sequence, true),
        };
        self.sequence = self.sequence.wrapping_add(1);
        let stamp = msg.header.stamp.to_duration();
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

/// The RGB stream format of `width`x`height` frames.
fn rgb_format(width: u32, height: u32, path: &Path) -> Result<StreamFormat> {
    let rgb = CAPTURE_FORMATS.iter().find(|f| f.pixel == PixelFormat::Rgb);
    let format = *rgb.ok_or_else(|| CaptureError::UnsupportedFormat {
        path: path.to_path_buf(),
        fourcc: crate::FourCc(*b"RGB3"),
        offered: CaptureFormat::names(),
    })?;
    let stride = (width as usize * 3).next_multiple_of(ROW_ALIGN);
    let size = stride * height as usize;
    Ok(StreamFormat {
        format,
        width,
        height,
        planes: vec![PlaneLayout {
            bytes_per_line: u32::try_from(stride).unwrap_or(u32::MAX),
            size: u32::try_from(size).unwrap_or(u32::MAX),
        }],
        color: JPEG_COLORIMETRY.color_spec(PixelFormat::Rgb),
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
            match self.take(&sample) {
                Ok(Some(f)) => return Ok(f),
                Ok(None) => self.late += 1,
                Err(CaptureError::Zenoh(e)) => {
                    log::warn!("{e}");
                    self.rejected += 1;
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
