//! What the libcamera thread and a source tell each other, free of libcamera
//! types (so the source's side, `frames.rs`, is unit-tested on the host).

use std::os::fd::OwnedFd;
use std::time::Duration;

use nix::errno::Errno;

use super::layout::{BufferLayout, LcPlane};
use super::metadata::RawMetadata;
use crate::StreamFormat;

/// A camera opened by the libcamera thread.
pub(crate) type CamKey = u64;

/// How a request came back.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// A frame, with what libcamera said about it.
    Frame(RawMetadata),
    /// libcamera completed it without a frame (its request status).
    Failed(&'static str),
    /// Queueing it again failed; the request waits, not queued.
    QueueFailed(Errno),
}

/// A completed (or failed) request of buffer `index`, for the source.
#[derive(Debug)]
pub(crate) struct Completion {
    pub index: usize,
    pub outcome: Outcome,
    /// `CLOCK_MONOTONIC` when libcamera completed it.
    pub completed: Duration,
}

/// What a source receives from the libcamera thread.
#[derive(Debug)]
pub(crate) enum Event {
    /// A request came back.
    Completion(Completion),
    /// libcamera said the camera was disconnected: nothing more will come.
    Disconnected,
}

/// One buffer's planes: dups of libcamera's fds (kept for the stream's life,
/// imported on cache misses), what they hold, and how they form the image.
#[derive(Debug)]
pub(crate) struct BufferPlanes {
    /// One per libcamera plane, in order.
    pub fds: Vec<OwnedFd>,
    /// One per libcamera plane, in order.
    pub planes: Vec<LcPlane>,
    /// How the planes form the image.
    pub layout: BufferLayout,
}

/// A configured camera, as the source needs it.
#[derive(Debug)]
pub(crate) struct Configured {
    /// The camera's key on the libcamera thread.
    pub key: CamKey,
    /// libcamera's camera id.
    pub id: String,
    /// `libcamera:<id>`.
    pub name: String,
    /// The format frames come in (each plane's `bytes_per_line` is
    /// libcamera's `StreamConfiguration::stride`).
    pub format: StreamFormat,
    /// The buffers.
    pub buffers: Vec<BufferPlanes>,
    /// What libcamera changed in the configuration asked for.
    pub adjustments: Vec<String>,
}
