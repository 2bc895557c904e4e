//! [`Mp4Writer`]: H.264 packets into an MP4 file (the `mp4` crate's boxes).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use mp4::{AvcConfig, FourCC, MediaConfig, Mp4Config, Mp4Sample, TrackConfig, TrackType};

use super::nal::{self, AUD, PPS, SPS};
use super::{ContainerError, ContainerWriter};
use crate::{Codec, Packet};

/// The MP4 time base of the movie and its track: 90 kHz, the clock of
/// MPEG video (a 30 fps frame is 3000 ticks).
pub const MP4_TIMESCALE: u32 = 90_000;

/// A sample held until the next packet says how long it lasts.
#[derive(Debug)]
struct Pending {
    /// Length-prefixed NAL units (avcC's 4-byte lengths).
    data: Vec<u8>,
    /// Ticks since the first sample.
    start: u64,
    keyframe: bool,
}

/// An MP4 file of one H.264 track.
///
/// The track's `avcC` is made from the SPS and PPS of the first keyframe
/// (packets before it are dropped); samples are the packets' NAL units
/// length-prefixed (SPS, PPS and access unit delimiters stay out of them),
/// keyframes are sync samples (`stss`). Times: 90 kHz ticks, the first
/// packet's timestamp is 0 and each sample lasts until the next packet's
/// timestamp (the last one as long as the one before it, or `1/fps`); the
/// file's duration is thus the capture's, not `frames / fps`.
///
/// A sample is written when the next one arrives (to know its duration),
/// in one-second chunks; [`finish`](ContainerWriter::finish) writes the
/// held sample and the `moov` index of every sample written so far, so a
/// recording cut short by an error plays up to it — as long as the `moov`
/// itself can still be written (not on a disk that is full: then the file
/// has its samples but no index, and needs a repair tool such as
/// `untrunc`).
pub struct Mp4Writer {
    path: PathBuf,
    width: u16,
    height: u16,
    fps: u32,
    mp4: Option<mp4::Mp4Writer<BufWriter<File>>>,
    track: bool,
    first_pts: Option<Duration>,
    pending: Option<Pending>,
    last_duration: Option<u32>,
    samples: u64,
    bytes: u64,
    dropped: u64,
    finished: Option<u64>,
}

impl std::fmt::Debug for Mp4Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mp4Writer")
            .field("path", &self.path)
            .field("size", &(self.width, self.height))
            .field("samples", &self.samples)
            .field("bytes", &self.bytes)
            .finish()
    }
}

/// The header bytes `write_start` writes: `ftyp` (8 + 8 + 4 brands) and
/// the `mdat` and `wide` headers.
const HEADER_BYTES: u64 = 16 + 4 * 4 + 8 + 8;

impl Mp4Writer {
    /// Creates `path` (replacing a file there) for `codec` frames of
    /// `width`x`height` at `fps` (the last sample's duration when there is
    /// nothing else to go by).
    ///
    /// # Errors
    /// [`ContainerError::Codec`] for anything but H.264,
    /// [`ContainerError::Size`] past 65535, [`ContainerError::Io`] when the
    /// file cannot be created.
    pub fn create(
        path: &Path,
        codec: Codec,
        width: usize,
        height: usize,
        fps: u32,
    ) -> Result<Mp4Writer, ContainerError> {
        if codec != Codec::H264 {
            return Err(ContainerError::Codec {
                path: path.to_path_buf(),
                container: "MP4",
                holds: "H.264",
                codec,
            });
        }
        let (Ok(w), Ok(h)) = (u16::try_from(width), u16::try_from(height)) else {
            return Err(ContainerError::Size {
                path: path.to_path_buf(),
                width,
                height,
            });
        };
        let file = File::create(path).map_err(|e| ContainerError::io(path, e))?;
        let brands = ["isom", "iso2", "avc1", "mp41"];
        let config = Mp4Config {
            major_brand: FourCC::from(*b"isom"),
            minor_version: 512,
            compatible_brands: brands
                .iter()
                .map(|b| FourCC::from(b.as_bytes().first_chunk::<4>().copied().unwrap_or(*b"isom")))
                .collect(),
            timescale: MP4_TIMESCALE,
        };
        let mp4 = mp4::Mp4Writer::write_start(BufWriter::new(file), &config)
            .map_err(|e| mp4_err(path, e))?;
        Ok(Mp4Writer {
            path: path.to_path_buf(),
            width: w,
            height: h,
            fps: fps.max(1),
            mp4: Some(mp4),
            track: false,
            first_pts: None,
            pending: None,
            last_duration: None,
            samples: 0,
            bytes: HEADER_BYTES,
            dropped: 0,
            finished: None,
        })
    }

    /// Packets dropped because no keyframe had come yet.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Adds the track, its avcC from `packet`'s SPS and PPS.
    fn add_track(&mut self, packet: &Packet) -> Result<(), ContainerError> {
        let find = |k: u8| nal::units(&packet.data).find(|u| nal::kind(u) == k);
        let missing = |what| ContainerError::NoParameterSets {
            path: self.path.clone(),
            sequence: packet.sequence,
            missing: what,
        };
        // The avcC takes profile, compatibility and level from SPS bytes 1..4.
        let sps = find(SPS)
            .filter(|s| s.len() >= 4)
            .ok_or_else(|| missing("SPS"))?;
        let pps = find(PPS).ok_or_else(|| missing("PPS"))?;
        let avc = AvcConfig {
            width: self.width,
            height: self.height,
            seq_param_set: sps.to_vec(),
            pic_param_set: pps.to_vec(),
        };
        let track = TrackConfig {
            track_type: TrackType::Video,
            timescale: MP4_TIMESCALE,
            language: "und".into(),
            media_conf: MediaConfig::AvcConfig(avc),
        };
        if let Some(mp4) = self.mp4.as_mut() {
            mp4.add_track(&track).map_err(|e| mp4_err(&self.path, e))?;
        }
        self.track = true;
        Ok(())
    }

    /// Writes the held sample, lasting `duration` ticks.
    fn flush_pending(&mut self, duration: u32) -> Result<(), ContainerError> {
        let (Some(p), Some(mp4)) = (self.pending.take(), self.mp4.as_mut()) else {
            return Ok(());
        };
        let len = p.data.len() as u64;
        let sample = Mp4Sample {
            start_time: p.start,
            duration,
            rendering_offset: 0,
            is_sync: p.keyframe,
            bytes: p.data.into(),
        };
        mp4.write_sample(1, &sample)
            .map_err(|e| mp4_err(&self.path, e))?;
        self.last_duration = Some(duration);
        self.samples += 1;
        self.bytes += len;
        Ok(())
    }
}

/// `pts` - `first` in 90 kHz ticks.
fn ticks(pts: Duration, first: Duration) -> u64 {
    let d = pts.saturating_sub(first);
    u64::try_from(d.as_nanos() * u128::from(MP4_TIMESCALE) / 1_000_000_000).unwrap_or(u64::MAX)
}

/// An `mp4` crate error: its I/O errors as [`ContainerError::Io`] (with the
/// errno: `ENOSPC` for a full disk).
fn mp4_err(path: &Path, e: mp4::Error) -> ContainerError {
    match e {
        mp4::Error::IoError(source) => ContainerError::io(path, source),
        source => ContainerError::Mp4 {
            path: path.to_path_buf(),
            source,
        },
    }
}

/// The packet's NAL units, length-prefixed, without SPS, PPS and AUD.
fn avcc_sample(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len());
    for unit in nal::units(data).filter(|u| !matches!(nal::kind(u), SPS | PPS | AUD)) {
        out.extend_from_slice(&(unit.len() as u32).to_be_bytes());
        out.extend_from_slice(unit);
    }
    out
}

impl ContainerWriter for Mp4Writer {
    fn write(&mut self, packet: &Packet) -> Result<(), ContainerError> {
        if self.finished.is_some() {
            return Err(ContainerError::Finished {
                path: self.path.clone(),
            });
        }
        if !self.track {
            if !packet.keyframe {
                self.dropped += 1;
                log::debug!(
                    "{}: packet {} dropped: no keyframe yet",
                    self.path.display(),
                    packet.sequence
                );
                return Ok(());
            }
            self.add_track(packet)?;
        }
        let first = *self.first_pts.get_or_insert(packet.pts);
        let start = ticks(packet.pts, first);
        if let Some(p) = &self.pending {
            let duration = u32::try_from(start.saturating_sub(p.start))
                .unwrap_or(u32::MAX)
                .max(1);
            self.flush_pending(duration)?;
        }
        self.pending = Some(Pending {
            data: avcc_sample(&packet.data),
            start,
            keyframe: packet.keyframe,
        });
        Ok(())
    }

    fn finish(&mut self) -> Result<u64, ContainerError> {
        if let Some(size) = self.finished {
            return Ok(size);
        }
        let last = self.last_duration.unwrap_or(MP4_TIMESCALE / self.fps);
        self.flush_pending(last)?;
        let Some(mut mp4) = self.mp4.take() else {
            return Ok(self.bytes);
        };
        if !self.track {
            log::warn!(
                "{}: no keyframe came: the MP4 has no video track",
                self.path.display()
            );
        }
        mp4.write_end().map_err(|e| mp4_err(&self.path, e))?;
        let mut file = mp4.into_writer();
        file.flush()
            .map_err(|e| ContainerError::io(&self.path, e))?;
        let size = file
            .get_ref()
            .metadata()
            .map_err(|e| ContainerError::io(&self.path, e))?
            .len();
        self.bytes = size;
        self.finished = Some(size);
        Ok(size)
    }

    fn bytes(&self) -> u64 {
        self.bytes
    }

    fn samples(&self) -> u64 {
        self.samples + u64::from(self.pending.is_some())
    }

    fn path(&self) -> &Path {
        &self.path
    }
}
