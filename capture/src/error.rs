//! The capture crate's error type.

use std::path::PathBuf;
use std::time::Duration;

use nix::errno::Errno;

use crate::v4l2::{BufferPlan, FormatProblem};
use crate::FourCc;

/// What went wrong opening, configuring or streaming from a camera. Every
/// variant names the device and the values involved.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CaptureError {
    /// The device node does not exist.
    #[error("{path}: no such device")]
    NoDevice {
        /// The path tried.
        path: PathBuf,
    },

    /// The device node could not be opened (permissions, busy, not a V4L2 node).
    #[error("{path}: cannot open: {errno}")]
    Open {
        /// The path tried.
        path: PathBuf,
        /// The errno of `open` or `VIDIOC_QUERYCAP`.
        errno: Errno,
    },

    /// The node is not a V4L2 device (`VIDIOC_QUERYCAP` refused).
    #[error("{path} is not a V4L2 device (VIDIOC_QUERYCAP: {errno})")]
    NotV4l2 {
        /// The path opened.
        path: PathBuf,
        /// The errno of `VIDIOC_QUERYCAP`.
        errno: Errno,
    },

    /// The device cannot capture video by streaming.
    #[error("{path} ({card}) is not a streaming video capture device (device caps {caps:#010x})")]
    NotCapture {
        /// The device.
        path: PathBuf,
        /// Its card name.
        card: String,
        /// Its device capabilities.
        caps: u32,
    },

    /// A pixel format the device does not offer, or that zerocam cannot describe.
    #[error("{path}: format {fourcc} is not supported (device offers: {offered})")]
    UnsupportedFormat {
        /// The device.
        path: PathBuf,
        /// The format asked for.
        fourcc: FourCc,
        /// The formats the device offers, comma separated.
        offered: String,
    },

    /// A colour the driver does not produce for a format: it offers no
    /// conversion to a requested Y'CbCr encoding and quantization
    /// (`V4L2_FMT_FLAG_CSC_YCBCR_ENC`, `_QUANTIZATION`), or set another.
    #[error("{path}: {fourcc} cannot be captured as {asked}: {reason}")]
    UnsupportedColor {
        /// The device.
        path: PathBuf,
        /// The format.
        fourcc: FourCc,
        /// The colour asked for.
        asked: zerocam_tensor::ColorSpec,
        /// Why: the flags missing, or what the driver set instead.
        reason: String,
    },

    /// A size the driver would not set.
    #[error("{path}: {fourcc} {width}x{height} is not supported (the driver offered {got_width}x{got_height})")]
    UnsupportedSize {
        /// The device.
        path: PathBuf,
        /// The format.
        fourcc: FourCc,
        /// Width asked for.
        width: u32,
        /// Height asked for.
        height: u32,
        /// Width the driver chose instead.
        got_width: u32,
        /// Height the driver chose instead.
        got_height: u32,
    },

    /// The driver's format reply does not describe whole frames that fit
    /// their buffers (see [`FormatReply::stream_format`](crate::v4l2::FormatReply::stream_format)).
    #[error("{path}: the driver's format {fourcc} {width}x{height} cannot be used: {problem}")]
    BadFormat {
        /// The device.
        path: PathBuf,
        /// The driver's `pixelformat`.
        fourcc: FourCc,
        /// The driver's width.
        width: u32,
        /// The driver's height.
        height: u32,
        /// What is wrong, with the values.
        problem: FormatProblem,
    },

    /// The driver granted a buffer count (`VIDIOC_REQBUFS`) outside what the
    /// stream needs: fewer than its minimum plus the frames the caller holds,
    /// or more than [`MAX_BUFFERS`](crate::v4l2::MAX_BUFFERS).
    #[error("{path}: the driver granted {} buffers, outside {}..={}: {plan}", .plan.granted, .plan.needed(), crate::v4l2::MAX_BUFFERS)]
    BufferGrant {
        /// The device.
        path: PathBuf,
        /// What was asked for and why, and what was granted.
        plan: BufferPlan,
    },

    /// The driver stopped the queue on a fatal error (vb2's
    /// `vb2_queue_error`: `VIDIOC_DQBUF` and `VIDIOC_QBUF` answer `EIO` until
    /// `STREAMOFF`). The stream has stopped itself;
    /// [`Stream::start`](crate::Stream::start) tries again.
    #[error("{path}: the driver reported a fatal streaming error ({ioctl}: {errno}); the stream is stopped, start it again to recover")]
    StreamFailed {
        /// The device.
        path: PathBuf,
        /// The ioctl that said so (`VIDIOC_DQBUF`, or `VIDIOC_QBUF` when a
        /// frame's buffer went back).
        ioctl: &'static str,
        /// Its errno (`EIO`).
        errno: Errno,
    },

    /// Fewer buffers granted than a stream needs: libcamera streams (a V4L2
    /// stream reports [`CaptureError::BufferGrant`] with its plan).
    #[error("{path}: {requested} buffers requested, the driver granted {granted}; at least 2 are needed")]
    TooFewBuffers {
        /// The device.
        path: PathBuf,
        /// Buffers asked for.
        requested: u32,
        /// Buffers granted.
        granted: u32,
    },

    /// The driver does not accept the buffer mode.
    #[error("{path}: buffer mode {mode} is not supported: {reason}")]
    UnsupportedMode {
        /// The device.
        path: PathBuf,
        /// The mode.
        mode: &'static str,
        /// Why.
        reason: String,
    },

    /// No frame arrived in time.
    #[error("{path}: no frame within {timeout:?}")]
    Timeout {
        /// The device (or `pattern`).
        path: PathBuf,
        /// The timeout waited.
        timeout: Duration,
    },

    /// Every buffer is held by the caller: nothing can be dequeued until a frame drops.
    #[error("{path}: all {buffers} buffers are held by the caller; drop a frame to capture more")]
    NoFreeBuffer {
        /// The device.
        path: PathBuf,
        /// Buffers of the stream.
        buffers: usize,
    },

    /// Frames are still out (the operation needs every buffer back).
    #[error("{path}: {held} frame(s) still held; drop them first")]
    FramesHeld {
        /// The device.
        path: PathBuf,
        /// Frames out.
        held: usize,
    },

    /// The stream is not running.
    #[error("{path}: the stream is stopped")]
    NotStreaming {
        /// The device.
        path: PathBuf,
    },

    /// The device went away (unplugged, driver unbound).
    #[error("{path}: device disconnected ({errno})")]
    Disconnected {
        /// The device.
        path: PathBuf,
        /// The errno that said so.
        errno: Errno,
    },

    /// The driver flagged a dequeued buffer as corrupt (`V4L2_BUF_FLAG_ERROR`).
    #[error("{path}: buffer {index} (sequence {sequence}) came back with an error flag")]
    BufferError {
        /// The device.
        path: PathBuf,
        /// The buffer index.
        index: u32,
        /// Its sequence number.
        sequence: u32,
    },

    /// An ioctl failed.
    #[error("{path}: {ioctl} failed: {errno}")]
    Ioctl {
        /// The device.
        path: PathBuf,
        /// The ioctl.
        ioctl: &'static str,
        /// Its errno.
        errno: Errno,
    },

    /// A control name the device does not have.
    #[error("{path}: no control named {name:?}")]
    NoSuchControl {
        /// The device.
        path: PathBuf,
        /// The name asked for.
        name: String,
    },

    /// No libcamera camera is present.
    #[error("libcamera: no camera found")]
    NoCamera,

    /// A libcamera camera id that is not present.
    #[error("libcamera: no camera {id:?} (present: {available})")]
    UnknownCamera {
        /// The id asked for.
        id: String,
        /// The ids present, comma separated (never empty: with no camera at
        /// all the error is [`CaptureError::NoCamera`]).
        available: String,
    },

    /// A Zenoh session, topic or sample failed (`zenoh:KEY`, feature `zenoh`).
    #[cfg(feature = "zenoh")]
    #[error(transparent)]
    Zenoh(#[from] crate::zenoh_source::ZenohError),
    /// A GStreamer pipeline failed (`gst:PIPELINE`, feature `gstreamer`).
    #[cfg(feature = "gstreamer")]
    #[error(transparent)]
    Gst(#[from] crate::gst::GstError),

    /// A libcamera call failed.
    #[error("{camera}: libcamera {operation} failed: {errno}")]
    Libcamera {
        /// `libcamera:<id>`, or `libcamera` before a camera is chosen.
        camera: String,
        /// What was being done (`acquire`, `configure`, `start`, …).
        operation: &'static str,
        /// The errno libcamera returned.
        errno: Errno,
    },

    /// libcamera rejected a stream configuration outright.
    #[error("{camera}: libcamera rejected the configuration {asked}")]
    ConfigInvalid {
        /// `libcamera:<id>`.
        camera: String,
        /// The configuration asked for, e.g. `NV12 640x480, 4 buffers`.
        asked: String,
    },

    /// libcamera would only run a stream configuration after changing it.
    #[error("{camera}: libcamera adjusted the configuration {asked} to {got} (ask for that instead, or set accept_adjusted)")]
    ConfigAdjusted {
        /// `libcamera:<id>`.
        camera: String,
        /// The configuration asked for.
        asked: String,
        /// What libcamera would run instead.
        got: String,
    },

    /// A setting zerocam does not apply to libcamera cameras (yet), refused
    /// rather than ignored.
    #[error("{camera}: {what} is not supported for libcamera cameras")]
    LibcameraUnsupported {
        /// `libcamera:<id>`, or `libcamera` for the first camera.
        camera: String,
        /// What was asked for, e.g. `a frame rate (--fps)`.
        what: &'static str,
    },

    /// A libcamera request completed without a frame (cancelled, or its buffer failed).
    #[error("{camera}: request for buffer {index} failed: {status}")]
    RequestFailed {
        /// `libcamera:<id>`.
        camera: String,
        /// The buffer index.
        index: usize,
        /// What libcamera said (`cancelled`, `buffer error`, or the errno of re-queueing it).
        status: String,
    },

    /// A bad argument (not a device's fault).
    #[error("{0}")]
    InvalidArgument(#[from] ArgumentError),

    /// A tensor could not be made from a buffer.
    #[error("{path}: {source}")]
    Tensor {
        /// The device.
        path: PathBuf,
        /// The tensor error.
        source: zerocam_tensor::Error,
    },

    /// A buffer cannot be shared with other processes read-only
    /// ([`FrameSource::read_only_planes`](crate::FrameSource::read_only_planes)).
    #[error("{path}: buffer {index} cannot be shared read-only: {reason}")]
    NotShareable {
        /// The device.
        path: PathBuf,
        /// The buffer index.
        index: usize,
        /// Why.
        reason: String,
    },

    /// Subscribing to a publisher's frames failed
    /// ([`Subscriber`](crate::share::Subscriber)): the connection, the
    /// publisher's end, or what it sent.
    #[error(transparent)]
    Share(#[from] crate::share::SubscribeError),
}

/// An argument that is wrong whatever the device.
#[derive(Debug, thiserror::Error, PartialEq)]
#[non_exhaustive]
pub enum ArgumentError {
    /// A format name zerocam does not know.
    #[error("unknown format {:?} (known: {})", .0, crate::CaptureFormat::names())]
    UnknownFormat(String),
    /// A size that is not `WIDTHxHEIGHT` of positive numbers.
    #[error("bad size {0:?}: expected WIDTHxHEIGHT, e.g. 1280x720")]
    BadSize(String),
    /// A frame rate that is not a positive number.
    #[error("bad frame rate {0}: expected a positive number of frames per second")]
    BadFrameRate(f64),
    /// Zero buffers.
    #[error("buffer count {0} is too small: at least 2 are needed")]
    TooFewBuffers(u32),
    /// More buffers than zerocam keeps ([`MAX_BUFFERS`](crate::v4l2::MAX_BUFFERS)).
    #[error("buffer count {0} is too large: at most {max} are kept", max = crate::v4l2::MAX_BUFFERS)]
    TooManyBuffers(u32),
    /// A hold count of zero ([`StreamConfig::hold`](crate::StreamConfig::hold)).
    #[error("hold count 0: a frame is held from next_frame until it drops, so at least 1")]
    ZeroHold,
    /// A `zenoh:` spec's parameters are not `connect=`, `listen=`, `config=`.
    #[error(transparent)]
    ZenohSpec(#[from] crate::zenoh_source::ZenohSpecError),
    /// A source this build of zerocam does not include.
    #[error("{what} needs zerocam built with the cargo feature `{feature}`")]
    FeatureMissing {
        /// What was asked for, e.g. `libcamera:Virtual0`.
        what: String,
        /// The feature that provides it.
        feature: &'static str,
    },
    /// A size the pattern source cannot draw.
    #[error("the pattern source cannot make {format} {width}x{height}: {reason}")]
    PatternSize {
        /// The format's name.
        format: &'static str,
        /// Width asked for.
        width: u32,
        /// Height asked for.
        height: u32,
        /// Why not.
        reason: &'static str,
    },
}

impl CaptureError {
    /// The errno behind the error, if the kernel gave one.
    pub fn errno(&self) -> Option<Errno> {
        match self {
            CaptureError::Open { errno, .. }
            | CaptureError::Disconnected { errno, .. }
            | CaptureError::StreamFailed { errno, .. }
            | CaptureError::Ioctl { errno, .. }
            | CaptureError::Libcamera { errno, .. } => Some(*errno),
            CaptureError::NoDevice { .. } => Some(Errno::ENOENT),
            _ => None,
        }
    }
}

/// The result type of the capture crate.
pub type Result<T, E = CaptureError> = std::result::Result<T, E>;
