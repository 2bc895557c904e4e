//! [`M2mEncoder`]: the stateful encoder of the kernel's "Memory-to-Memory
//! Stateful Video Encoder Interface" (dev-encoder.rst): CAPTURE (coded)
//! format first, then OUTPUT (raw) format, buffers on both queues, both
//! streamed; frames in on OUTPUT, packets out of CAPTURE; a drain with
//! `V4L2_ENC_CMD_STOP` until the buffer flagged `V4L2_BUF_FLAG_LAST`.

use std::collections::VecDeque;
use std::path::Path;
use std::time::{Duration, Instant};

use super::error::{on, M2mError};
use super::identity::IdentityIndex;
use super::layout::{DriverLayout, InputLayout};
use super::mmap_queue::{request, MmapQueue};
use super::node::{Node, STEP_TIMEOUT};
use super::output_queue::{OutputMemory, OutputQueue};
use super::{set_format, FormatWant, M2mConfig, M2mStats, Packet};
use crate::v4l2::ioctl::{calls, raw, DqbufError};
use crate::{FourCc, Frame};

/// A V4L2 memory-to-memory encoder fed [`Frame`]s.
#[derive(Debug)]
pub struct M2mEncoder {
    node: Node,
    config: M2mConfig,
    input: InputLayout,
    layout: DriverLayout,
    output: OutputQueue,
    capture: MmapQueue,
    /// (timestamp in µs as the driver carries it, pts, sequence) of queued frames.
    pending: VecDeque<(u64, Duration, u32)>,
    stats: M2mStats,
    /// `LAST` seen on a CAPTURE buffer since the last drain began.
    last_seen: bool,
    /// `V4L2_EVENT_EOS` seen since the last drain began.
    eos_seen: bool,
    /// The encoder once kept a frame past [`PACKET_WAIT`] (lookahead,
    /// reordering): `encode` no longer waits for each frame's packet.
    holds_frames: bool,
}

/// The most frames waiting for their packet that are remembered.
const MAX_PENDING: usize = 64;

/// How long `encode` waits for the packet of the frame it was given, so
/// that the packet leaves with that call and not with the next frame's (a
/// frame interval of latency for every viewer). A hardware encoder without
/// lookahead gives it within milliseconds.
const PACKET_WAIT: Duration = Duration::from_millis(200);

impl M2mEncoder {
    /// Opens the encoder at `path` for frames like `first` (not encoded:
    /// give it to [`encode`](Self::encode)), negotiating the CAPTURE format
    /// (the codec) and then the OUTPUT format (the frame's pixels, size and
    /// strides), and starts both queues.
    ///
    /// Frames are imported (`DMABUF`) unless the encoder cannot take them as
    /// they are (format, strides, offsets, no dma-buf, `DMABUF` refused) or
    /// [`M2mConfig::force_copy`]; then they are copied, with a log line saying why.
    ///
    /// # Errors
    /// [`M2mError::NotM2m`], [`M2mError::NoCodec`], [`M2mError::FormatRefused`]
    /// naming both formats, [`M2mError::BadFrame`], buffer grants out of
    /// bounds, ioctl failures.
    pub fn open(path: &Path, config: M2mConfig, first: &Frame) -> Result<M2mEncoder, M2mError> {
        let node = Node::open(path)?;
        let bad = |reason: String| M2mError::BadFrame {
            path: path.to_path_buf(),
            reason,
        };
        let input = InputLayout::of(first.tensor())
            .ok_or_else(|| bad("the frame's tensor is no whole image".into()))?;
        let offered = node.formats(node.cap_type)?;
        if !offered.iter().any(|(f, _)| *f == config.codec) {
            return Err(M2mError::NoCodec {
                path: path.to_path_buf(),
                queue: "CAPTURE",
                fourcc: config.codec,
                offered: list(&offered),
            });
        }
        // CAPTURE first: the coded format sets what OUTPUT offers.
        set_format(
            &node,
            node.cap_type,
            &FormatWant {
                fourcc: config.codec,
                width: input.width,
                height: input.height,
                strides: &[],
                queue: "CAPTURE",
                check_size: false,
            },
        )?;
        let raw_offered = node.formats(node.out_type)?;
        let exact = input.fourcc(input.buffers);
        let single = input.fourcc(1);
        let has = |f: Option<FourCc>| f.filter(|f| raw_offered.iter().any(|(o, _)| o == f));
        let fourcc = has(exact)
            .or_else(|| has(single))
            .ok_or_else(|| M2mError::NoCodec {
                path: path.to_path_buf(),
                queue: "OUTPUT",
                fourcc: exact.unwrap_or(FourCc(*b"????")),
                offered: list(&raw_offered),
            })?;
        let strides: Vec<u32> = if Some(fourcc) == exact && input.buffers > 1 {
            input.planes.iter().map(|p| p.2 as u32).collect()
        } else {
            vec![input.planes[0].2 as u32]
        };
        let f = set_format(
            &node,
            node.out_type,
            &FormatWant {
                fourcc,
                width: input.width,
                height: input.height,
                strides: &strides,
                queue: "OUTPUT",
                check_size: true,
            },
        )?;
        let layout = DriverLayout::of(&f).ok_or_else(|| bad("no OUTPUT format reply".into()))?;
        if (layout.width, layout.height) != (input.width, input.height) {
            crop(&node, input.width, input.height, &layout);
        }
        let mut why_copy = if config.force_copy {
            Some("copy mode forced by the configuration".to_string())
        } else {
            layout.import_mismatch(&input)
        };
        let mut output = None;
        if why_copy.is_none() {
            match request(
                &node,
                node.out_type,
                "OUTPUT",
                raw::MEMORY_DMABUF,
                config.output_buffers,
            )? {
                Some(granted) => {
                    output = Some(OutputQueue::Import {
                        index: IdentityIndex::new(granted),
                        held: (0..granted).map(|_| None).collect(),
                        lengths: vec![Vec::new(); granted as usize],
                    })
                }
                None => why_copy = Some("the driver refuses DMABUF on OUTPUT".into()),
            }
        }
        let output = match (output, why_copy) {
            (Some(o), _) => o,
            (None, why) => {
                log::warn!(
                    "{}: frames are copied into the encoder's buffers, not imported: {}",
                    path.display(),
                    why.as_deref().unwrap_or("unknown")
                );
                let count = config.max_in_flight.max(1) + 1;
                OutputQueue::Copy(MmapQueue::new(
                    &node,
                    node.out_type,
                    "OUTPUT",
                    count,
                    layout.planes.len(),
                )?)
            }
        };
        let mut capture =
            MmapQueue::new(&node, node.cap_type, "CAPTURE", config.capture_buffers, 1)?;
        for i in 0..capture.buffers.len() as u32 {
            capture.queue(&node, i, &[0], Duration::ZERO)?;
        }
        node.subscribe(raw::EVENT_EOS, "EOS")?;
        node.subscribe(raw::EVENT_SOURCE_CHANGE, "source change")?;
        let mut enc = M2mEncoder {
            node,
            config,
            input,
            layout,
            output,
            capture,
            pending: VecDeque::new(),
            stats: M2mStats::default(),
            last_seen: false,
            eos_seen: false,
            holds_frames: false,
        };
        if let Some(b) = enc.config.bitrate {
            enc.set_bitrate(b)?;
        }
        if let Some(g) = enc.config.gop {
            enc.set_gop(g)?;
        }
        enc.node.stream(enc.node.out_type, true)?;
        enc.node.stream(enc.node.cap_type, true)?;
        log::info!(
            "{}: {} encoder ({}), {} {}x{} in by {:?}",
            path.display(),
            enc.config.codec,
            enc.node.driver,
            enc.layout.fourcc,
            enc.layout.width,
            enc.layout.height,
            enc.output.memory()
        );
        Ok(enc)
    }

    /// How frames reach the encoder.
    pub fn memory(&self) -> OutputMemory {
        self.output.memory()
    }

    /// The node's path.
    pub fn path(&self) -> &Path {
        &self.node.path
    }

    /// The driver's name.
    pub fn driver(&self) -> &str {
        &self.node.driver
    }

    /// The counts so far.
    pub fn stats(&self) -> M2mStats {
        let mut s = self.stats;
        s.imports = self.output.imports(self.input.buffers);
        s
    }

    /// Sets the bit rate (bits per second) now, streaming or not; a driver
    /// without `V4L2_CID_MPEG_VIDEO_BITRATE` logs and ignores it (`Ok(false)`).
    pub fn set_bitrate(&mut self, bps: u32) -> Result<bool, M2mError> {
        let v = i32::try_from(bps).unwrap_or(i32::MAX);
        self.node
            .set_control(raw::CID_MPEG_VIDEO_BITRATE, "bitrate", v)
    }

    /// Sets the GOP size now; `Ok(false)` with a log line when the driver lacks it.
    pub fn set_gop(&mut self, frames: u32) -> Result<bool, M2mError> {
        let v = i32::try_from(frames).unwrap_or(i32::MAX);
        self.node
            .set_control(raw::CID_MPEG_VIDEO_GOP_SIZE, "GOP size", v)
    }

    /// Asks for the next frame queued to be encoded as a keyframe
    /// (`V4L2_CID_MPEG_VIDEO_FORCE_KEY_FRAME`); `Ok(false)` with a log line
    /// when the driver lacks the control.
    pub fn request_keyframe(&mut self) -> Result<bool, M2mError> {
        self.node
            .set_control(raw::CID_MPEG_VIDEO_FORCE_KEY_FRAME, "force key frame", 1)
    }

    /// Encodes `frame`, holding its lease until the encoder is done reading
    /// it (imported) or giving it back at once (copied); returns the packets
    /// ready now.
    ///
    /// # Errors
    /// [`M2mError::BadFrame`] for a frame of another geometry, ioctl
    /// failures, [`M2mError::Timeout`] when the encoder gives no buffer back.
    pub fn encode(&mut self, frame: Frame) -> Result<Vec<Packet>, M2mError> {
        let here = InputLayout::of(frame.tensor());
        if here
            .as_ref()
            .map(|h| (h.pixel, h.width, h.height, h.buffers))
            != Some((
                self.input.pixel,
                self.input.width,
                self.input.height,
                self.input.buffers,
            ))
        {
            return Err(M2mError::BadFrame {
                path: self.node.path.clone(),
                reason: format!(
                    "not the {:?} {}x{} the encoder was opened for",
                    self.input.pixel, self.input.width, self.input.height
                ),
            });
        }
        let mut packets = Vec::new();
        self.stats.frames_in += 1;
        let key = micros(frame.timestamp());
        let meta = (key, frame.timestamp(), frame.sequence());
        let mut frame = Some(frame);
        let deadline = Instant::now() + STEP_TIMEOUT;
        loop {
            self.poll_once(&mut packets)?;
            let full = self.output.in_flight() >= self.config.max_in_flight.max(1) as usize;
            if !full
                && self
                    .output
                    .queue(&self.node, &mut frame, &self.input, &self.layout)?
            {
                break;
            }
            self.wait(deadline, "an OUTPUT buffer given back")?;
        }
        if self.output.memory() == OutputMemory::Copy {
            self.stats.copied_frames += 1;
        }
        if self.pending.len() >= MAX_PENDING {
            self.pending.pop_front();
        }
        self.pending.push_back(meta);
        self.poll_once(&mut packets)?;
        self.wait_for_packet(key, &mut packets)?;
        Ok(packets)
    }

    /// Waits up to [`PACKET_WAIT`] until the packet of the frame queued
    /// with `key` is among `packets`. An encoder that keeps it longer holds
    /// frames by design: said once in the log, and not waited for again.
    fn wait_for_packet(&mut self, key: u64, packets: &mut Vec<Packet>) -> Result<(), M2mError> {
        if self.holds_frames {
            return Ok(());
        }
        let deadline = Instant::now() + PACKET_WAIT;
        while self.pending.iter().any(|p| p.0 == key) {
            if Instant::now() >= deadline {
                self.holds_frames = true;
                log::info!(
                    "{}: no packet {} ms after its frame: the encoder holds frames, and its packets leave with later ones",
                    self.node.path.display(),
                    PACKET_WAIT.as_millis()
                );
                break;
            }
            self.node.wait(deadline)?;
            if self.poll_once(packets)? {
                break;
            }
        }
        Ok(())
    }

    /// Drains: `V4L2_ENC_CMD_STOP`, then every packet until the CAPTURE
    /// buffer flagged `LAST` (or `V4L2_EVENT_EOS` and `EPIPE`); then
    /// `V4L2_ENC_CMD_START`, so more frames may follow.
    pub fn drain(&mut self) -> Result<Vec<Packet>, M2mError> {
        let mut packets = Vec::new();
        self.last_seen = false;
        self.eos_seen = false;
        calls::encoder_cmd(self.node.fd(), raw::ENC_CMD_STOP)
            .map_err(on(&self.node.path, "VIDIOC_ENCODER_CMD (STOP)"))?;
        let deadline = Instant::now() + STEP_TIMEOUT;
        while !self.last_seen {
            if self.poll_once(&mut packets)? {
                break;
            }
            if !self.last_seen {
                self.wait(deadline, "the drain's LAST buffer")?;
            }
        }
        // Whatever OUTPUT buffers remain done.
        while self.output.reclaim(&self.node)? {}
        self.stats.drains += 1;
        if self.last_seen {
            self.stats.last_flags += 1;
        }
        if self.eos_seen {
            self.stats.eos_events += 1;
        }
        calls::encoder_cmd(self.node.fd(), raw::ENC_CMD_START)
            .map_err(on(&self.node.path, "VIDIOC_ENCODER_CMD (START)"))?;
        Ok(packets)
    }

    /// Waits for something on either queue or an event until `deadline`.
    fn wait(&mut self, deadline: Instant, what: &'static str) -> Result<(), M2mError> {
        if Instant::now() >= deadline {
            return Err(M2mError::Timeout {
                path: self.node.path.clone(),
                what,
                timeout: STEP_TIMEOUT,
            });
        }
        self.node.wait(deadline).map(drop)
    }

    /// One non-blocking pass: events, done OUTPUT buffers, done CAPTURE
    /// buffers (packets, re-queued). `true` when CAPTURE answered `EPIPE`
    /// (the last buffer was already dequeued).
    fn poll_once(&mut self, packets: &mut Vec<Packet>) -> Result<bool, M2mError> {
        while let Some((kind, changes)) = self.node.dqevent()? {
            match kind {
                raw::EVENT_EOS => self.eos_seen = true,
                raw::EVENT_SOURCE_CHANGE => {
                    let f = self.node.g_fmt(self.node.cap_type)?;
                    log::info!(
                        "{}: source change (changes {changes:#x}): CAPTURE is now {:?}",
                        self.node.path.display(),
                        DriverLayout::of(&f)
                    );
                }
                _ => {}
            }
        }
        while self.output.reclaim(&self.node)? {}
        loop {
            let (d, flags) =
                match calls::dqbuf_flags(self.node.fd(), self.node.cap_type, raw::MEMORY_MMAP) {
                    Ok(x) => x,
                    Err(DqbufError::NotReady) => return Ok(false),
                    Err(DqbufError::Other(nix::errno::Errno::EPIPE)) => return Ok(true),
                    Err(e) => return Err(on(&self.node.path, "VIDIOC_DQBUF (CAPTURE)")(e)),
                };
            if let Some(q) = self.capture.queued.get_mut(d.index as usize) {
                *q = false;
            }
            let plane = d.planes[0];
            let last = flags & raw::BUF_FLAG_LAST != 0;
            if plane.bytes_used > 0 && flags & raw::BUF_FLAG_ERROR == 0 {
                let data = self.capture.read(
                    &self.node.path,
                    d.index,
                    plane.data_offset,
                    plane.bytes_used,
                )?;
                let key = micros(d.timestamp);
                let (pts, sequence) = match self.pending.iter().position(|p| p.0 == key) {
                    Some(i) => {
                        let (_, pts, seq) =
                            self.pending
                                .remove(i)
                                .unwrap_or((key, d.timestamp, d.sequence));
                        (pts, seq)
                    }
                    None => (d.timestamp, d.sequence),
                };
                self.stats.packets_out += 1;
                self.stats.bytes_out += data.len() as u64;
                packets.push(Packet {
                    data,
                    pts,
                    keyframe: flags & raw::BUF_FLAG_KEYFRAME != 0,
                    sequence,
                });
            } else if flags & raw::BUF_FLAG_ERROR != 0 {
                log::warn!(
                    "{}: the encoder flagged CAPTURE buffer {} as an error; dropped",
                    self.node.path.display(),
                    d.index
                );
            }
            if last {
                self.last_seen = true;
            }
            self.capture
                .queue(&self.node, d.index, &[0], Duration::ZERO)?;
            if last {
                return Ok(false);
            }
        }
    }
}

/// Sets the OUTPUT crop (the visible picture) to `width`x`height` inside the
/// coded size the driver padded to; a driver without it is logged (the
/// stream then codes the padding too).
fn crop(node: &Node, width: u32, height: u32, coded: &DriverLayout) {
    match calls::s_crop(node.fd(), node.out_type, width, height) {
        Ok(set) => log::debug!(
            "{}: coded {}x{}, visible {}x{}",
            node.path.display(),
            coded.width,
            coded.height,
            set.0,
            set.1
        ),
        Err(e) => log::warn!(
            "{}: coded {}x{} for a {width}x{height} picture and no crop ({}): the padding is coded too",
            node.path.display(),
            coded.width,
            coded.height,
            e.errno()
        ),
    }
}

/// A timestamp as V4L2 carries it (`timeval`: whole microseconds).
fn micros(t: Duration) -> u64 {
    t.as_secs() * 1_000_000 + u64::from(t.subsec_micros())
}

/// `NV12, FWHT` from an `ENUM_FMT` list.
fn list(formats: &[(FourCc, bool)]) -> String {
    let v: Vec<String> = formats.iter().map(|(f, _)| f.to_string()).collect();
    v.join(", ")
}

impl Drop for M2mEncoder {
    fn drop(&mut self) {
        // Nothing to report to: the fds close anyway.
        let _ = self.node.stream(self.node.out_type, false);
        let _ = self.node.stream(self.node.cap_type, false);
        self.output.release_all();
    }
}
