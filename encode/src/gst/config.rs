//! [`SinkConfig`] and [`SinkStats`]: how a [`FrameSink`](super::FrameSink)
//! queues frames, and what it has done.

use std::time::Duration;

/// How a [`FrameSink`](super::FrameSink) queues and times frames.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinkConfig {
    /// The frame rate in the caps, frames per second (buffer times come from
    /// the frames' own timestamps).
    pub fps: u32,
    /// Frames the `appsrc` may queue before a push waits for room.
    pub max_queued: u32,
    /// How long a push waits for room before it drops the frame
    /// ([`GstEncodeError::NotKeepingUp`](super::GstEncodeError::NotKeepingUp)).
    pub wait: Duration,
    /// Copy every frame into system memory (its lease ends at once) instead
    /// of lending the frame's own buffer until GStreamer frees it: for
    /// sources with few buffers feeding pipelines that hold many. Counted.
    pub copy: bool,
    /// How long [`FrameSink::finish`](super::FrameSink::finish) waits for end-of-stream.
    pub eos_wait: Duration,
}

impl Default for SinkConfig {
    fn default() -> SinkConfig {
        SinkConfig {
            fps: 30,
            max_queued: 2,
            wait: Duration::from_secs(2),
            copy: false,
            eos_wait: Duration::from_secs(30),
        }
    }
}

/// What a [`FrameSink`](super::FrameSink) has done, counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SinkStats {
    /// Frames pushed into the pipeline.
    pub pushed: u64,
    /// Frames whose own buffers were lent to GStreamer (no copy).
    pub lent: u64,
    /// The `GstMemory`s those frames were lent as: one per buffer of a
    /// frame (one for NV12 in one dma-buf or memfd, two for NV12M).
    pub memories_lent: u64,
    /// Of those, `GstDmaBufMemory` over a dup of a dma-buf's fd (V4L2
    /// buffers, dma-heap tensors): what dma-buf importers take as it is.
    pub dmabuf_memories: u64,
    /// Of those, `GstFdMemory` over a dup of a memfd's fd (the pattern
    /// source, shared-memory tensors): mapped by GStreamer, copied by
    /// dma-buf importers as system memory would be.
    pub fd_memories: u64,
    /// Of those, wrapped CPU maps: heap tensors, which have no fd (and any
    /// fd GStreamer's allocator refused, with a warning in the log). An
    /// element that imports dma-bufs copies these.
    pub mapped_memories: u64,
    /// Frames copied into system memory (see [`SinkConfig::copy`]).
    pub copied: u64,
    /// Frames dropped because the pipeline was not keeping up.
    pub dropped: u64,
    /// Frames GStreamer still holds (their leases not yet returned).
    pub outstanding: u64,
    /// Frames GStreamer still held when the pipeline the sink made had
    /// stopped (an element leaked their buffers): their leases were ended
    /// then, and counted here.
    pub taken_back: u64,
}
