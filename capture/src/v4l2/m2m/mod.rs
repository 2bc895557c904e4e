//! Memory-to-memory codecs: [`M2mEncoder`], the kernel's stateful encoder
//! interface fed the capture's own dma-bufs (each capture buffer imported
//! once, at an OUTPUT index of its own, and its [`Frame`](crate::Frame)
//! lease held until the encoder gives it back; a logged, counted copy where
//! the encoder cannot import), [`M2mDecoder`], a minimal stateful decoder
//! (coded bytes in, pictures copied out), and [`find_encoders`].
//! See docs/v4l2-layer.md ("Memory-to-memory encoder").

mod decoder;
mod encoder;
mod error;
mod identity;
mod layout;
mod mmap_queue;
mod node;
mod output_queue;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use decoder::{DecodedPicture, M2mDecoder};
pub use encoder::M2mEncoder;
pub use error::M2mError;
pub use output_queue::OutputMemory;

use crate::v4l2::ioctl::raw;
use crate::FourCc;
use node::Node;

/// How to open an [`M2mEncoder`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct M2mConfig {
    /// The coded format on the CAPTURE queue (`H264`, `FWHT`, ...).
    pub codec: FourCc,
    /// Bit rate, bits per second (`None`: the driver's default).
    pub bitrate: Option<u32>,
    /// Frames between keyframes (`None`: the driver's default).
    pub gop: Option<u32>,
    /// OUTPUT indices for imported buffers: at least the capture stream's
    /// buffer count, so each keeps its own (default 16, at most
    /// [`MAX_BUFFERS`](crate::v4l2::MAX_BUFFERS)).
    pub output_buffers: u32,
    /// CAPTURE (coded) buffers (default 4).
    pub capture_buffers: u32,
    /// Frames with the encoder at once: `encode` waits for one back beyond
    /// this (default 2; keep it below the capture stream's hold).
    pub max_in_flight: u32,
    /// Copy every frame into the encoder's buffers even where it could
    /// import them (for comparisons).
    pub force_copy: bool,
}

impl M2mConfig {
    /// `codec` at the driver's defaults, importing.
    pub fn new(codec: FourCc) -> M2mConfig {
        M2mConfig {
            codec,
            bitrate: None,
            gop: None,
            output_buffers: 16,
            capture_buffers: 4,
            max_in_flight: 2,
            force_copy: false,
        }
    }
}

/// What an [`M2mEncoder`] has done, counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct M2mStats {
    /// Frames given to `encode`.
    pub frames_in: u64,
    /// Packets out.
    pub packets_out: u64,
    /// Coded bytes out.
    pub bytes_out: u64,
    /// Buffer planes imported (a buffer kept at its index counts once).
    pub imports: u64,
    /// Frames copied into the encoder's buffers.
    pub copied_frames: u64,
    /// Drains completed.
    pub drains: u64,
    /// Drains that ended on a CAPTURE buffer flagged `V4L2_BUF_FLAG_LAST`.
    pub last_flags: u64,
    /// Drains during which `V4L2_EVENT_EOS` came.
    pub eos_events: u64,
}

/// One coded frame (for H.264/HEVC one access unit), from this encoder or
/// any of zerocam-encode's (which re-exports it as `zerocam_encode::Packet`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    /// The coded bytes (Annex-B for H.264/HEVC).
    pub data: Vec<u8>,
    /// The source frame's capture time (`CLOCK_MONOTONIC`).
    pub pts: Duration,
    /// A frame a decoder can start at (IDR for H.264; here,
    /// `V4L2_BUF_FLAG_KEYFRAME`).
    pub keyframe: bool,
    /// The source frame's sequence number.
    pub sequence: u32,
}

/// The `/dev/video*` memory-to-memory nodes with `codec` on their CAPTURE
/// queue and a raw (uncompressed) format on OUTPUT: encoders of `codec`, in
/// node order.
pub fn find_encoders(codec: FourCc) -> Vec<PathBuf> {
    video_nodes()
        .into_iter()
        .filter(|p| {
            let Ok(node) = Node::open(p) else {
                return false;
            };
            let coded = node
                .formats(node.cap_type)
                .is_ok_and(|f| f.iter().any(|(c, _)| *c == codec));
            let raw_in = node
                .formats(node.out_type)
                .is_ok_and(|f| f.iter().any(|(_, compressed)| !compressed));
            coded && raw_in
        })
        .collect()
}

/// `/dev/video*`, in node number order.
fn video_nodes() -> Vec<PathBuf> {
    let mut paths: Vec<(u32, PathBuf)> = std::fs::read_dir("/dev")
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter_map(|p| {
                    let n = p
                        .file_name()?
                        .to_str()?
                        .strip_prefix("video")?
                        .parse()
                        .ok()?;
                    Some((n, p))
                })
                .collect()
        })
        .unwrap_or_default();
    paths.sort();
    paths.into_iter().map(|(_, p)| p).collect()
}

/// `VIDIOC_S_FMT` of `fourcc` `width`x`height` on queue `type_` (strides per
/// memory plane where given), checked: another format or size is
/// [`M2mError::FormatRefused`] naming both. An encoder's CAPTURE queue takes
/// its size from OUTPUT (dev-encoder.rst), so there only the format is
/// checked (`check_size` false); elsewhere the driver may pad the size to
/// its alignment (the coded size), never shrink it.
pub(crate) fn set_format(
    node: &Node,
    type_: u32,
    want: &FormatWant<'_>,
) -> Result<raw::Format, M2mError> {
    let &FormatWant {
        fourcc,
        width,
        height,
        strides,
        queue,
        check_size,
    } = want;
    let mut f = node.g_fmt(type_)?;
    if let Some(mut mp) = f.pix_mp() {
        mp.pixelformat = fourcc.to_u32();
        mp.width = width;
        mp.height = height;
        mp.field = raw::FIELD_NONE;
        mp.num_planes = strides.len().clamp(1, raw::MAX_PLANES) as u8;
        for (p, s) in mp.plane_fmt.iter_mut().zip(strides) {
            p.bytesperline = *s;
        }
        f.fmt.pix_mp = mp;
    } else if let Some(mut p) = f.pix() {
        p.pixelformat = fourcc.to_u32();
        p.width = width;
        p.height = height;
        p.field = raw::FIELD_NONE;
        p.bytesperline = strides.first().copied().unwrap_or(0);
        p.sizeimage = 0;
        f.fmt.pix = p;
    }
    let got = node.s_fmt(f)?;
    let (gf, gw, gh) = got
        .pix_mp()
        .map(|m| (m.pixelformat, m.width, m.height))
        .or_else(|| got.pix().map(|p| (p.pixelformat, p.width, p.height)))
        .unwrap_or((0, 0, 0));
    let got_fourcc = FourCc::from_u32(gf);
    if got_fourcc != fourcc || (check_size && (gw < width || gh < height)) {
        return Err(M2mError::FormatRefused {
            path: node.path.clone(),
            queue,
            asked: fourcc,
            width,
            height,
            got: got_fourcc,
            got_width: gw,
            got_height: gh,
        });
    }
    Ok(got)
}

/// A format to set on a codec queue ([`set_format`]).
pub(crate) struct FormatWant<'a> {
    pub fourcc: FourCc,
    pub width: u32,
    pub height: u32,
    /// `bytesperline` per memory plane (none: the driver's choice).
    pub strides: &'a [u32],
    /// `OUTPUT` or `CAPTURE`, for errors.
    pub queue: &'static str,
    /// Whether the size must come back (at least) as asked.
    pub check_size: bool,
}

/// Whether `path` is a memory-to-memory node (for listings).
pub fn is_m2m(path: &Path) -> bool {
    Node::open(path).is_ok()
}
