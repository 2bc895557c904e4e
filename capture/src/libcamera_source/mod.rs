//! libcamera cameras (feature `libcamera`): Raspberry Pi and other ISP-based
//! boards, and libcamera's virtual camera.
//!
//! [`LibcameraSource`] is a [`FrameSource`](crate::FrameSource) like the V4L2
//! [`Stream`](crate::Stream): each completed request's buffer planes go
//! through the same [`ImportCache`](zerocam_cache::ImportCache), keyed on each
//! plane's `(st_dev, st_ino, offset)`, and come out as the same
//! [`Frame`](crate::Frame); dropping the frame queues its request again.
//! Planes that share one dma-buf (libcamera's usual NV12 layout) are one
//! import with a plane offset; planes in distinct dma-bufs are composed with
//! `Tensor::from_planes` (the stream's format is then NV12M/NV16M). Over F
//! frames from B buffers, the cache imports B × (dma-bufs per buffer) times.
//!
//! Metadata a pipeline handler leaves empty (libcamera 0.4.0's virtual camera
//! writes none) is filled by zerocam and flagged in
//! [`Frame::synthesized`](crate::Frame::synthesized).
//!
//! All libcamera calls run on one thread of zerocam's (libcamera allows one
//! `CameraManager` per process), started on first use; the manager runs only
//! while a camera is open or being listed.

#[cfg(feature = "libcamera")]
mod camera;
// Without the feature, built only for their unit tests.
#[cfg_attr(not(feature = "libcamera"), allow(dead_code))]
mod events;
#[cfg_attr(not(feature = "libcamera"), allow(dead_code))]
mod frames;
mod layout;
mod metadata;
#[cfg(feature = "libcamera")]
mod setup;
#[cfg_attr(not(feature = "libcamera"), allow(dead_code))]
mod slots;
#[cfg(feature = "libcamera")]
mod source;
#[cfg(feature = "libcamera")]
mod worker;

#[cfg(feature = "libcamera")]
pub use source::{libcamera_cameras, LibcameraSource};

/// Lowers libcamera's own log to errors (its INFO and WARN lines go to
/// stderr, which would break a command line tool's one-line errors), unless
/// `LIBCAMERA_LOG_LEVELS` is set. libcamera reads the variable when its
/// logger starts: call this before the first libcamera call, while the
/// program is still single-threaded (it sets an environment variable).
#[cfg(feature = "libcamera")]
pub fn quiet_libcamera_log() {
    if std::env::var_os("LIBCAMERA_LOG_LEVELS").is_none() {
        std::env::set_var("LIBCAMERA_LOG_LEVELS", "*:ERROR");
    }
}

use nix::errno::Errno;

use crate::CaptureError;
#[cfg(feature = "libcamera")]
use crate::{CaptureFormat, FourCc};

/// The prefix of libcamera camera names (`libcamera:<id>`).
#[cfg(feature = "libcamera")]
pub(crate) const LIBCAMERA: &str = "libcamera";

/// The error of libcamera call `operation` on `camera` (`libcamera:<id>`, or
/// `libcamera` for the thread and the manager), failed with `errno`.
pub(crate) fn call_failed(camera: &str, operation: &'static str, errno: Errno) -> CaptureError {
    CaptureError::Libcamera {
        camera: camera.into(),
        operation,
        errno,
    }
}

/// A libcamera camera: its id, what it says about itself, its formats.
#[cfg(feature = "libcamera")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibcameraCamera {
    /// libcamera's camera id (give it to [`LibcameraConfig::camera`]).
    pub id: String,
    /// The `Model` property, when the camera has one.
    pub model: Option<String>,
    /// The `Location` property: `front`, `back` or `external`.
    pub location: Option<String>,
    /// The formats of its first stream (video-recording role, else
    /// viewfinder, else still capture).
    pub formats: Vec<LibcameraFormat>,
}

/// One stream format a libcamera camera offers.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg(feature = "libcamera")]
pub struct LibcameraFormat {
    /// libcamera's (DRM) fourcc: DRM `RGB888` (`RG24`) is V4L2's `BGR3`.
    pub fourcc: FourCc,
    /// libcamera's name of it (`NV12`, `RGB888`).
    pub name: String,
    /// The zerocam capture format it is, if zerocam captures it.
    pub capture: Option<CaptureFormat>,
    /// The discrete sizes listed (may be empty when only a range is given).
    pub sizes: Vec<(u32, u32)>,
    /// The smallest size.
    pub min: (u32, u32),
    /// The largest size.
    pub max: (u32, u32),
}

/// How to open a libcamera camera.
#[cfg(feature = "libcamera")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibcameraConfig {
    /// The camera id; `None` for the first camera.
    pub camera: Option<String>,
    /// The format (NV12M/NV16M ask for NV12/NV16: libcamera decides where the
    /// planes go, and [`FrameSource::stream_format`](crate::FrameSource::stream_format) says).
    pub format: CaptureFormat,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Buffers (at least 2; libcamera may give more, see
    /// [`LibcameraSource::adjustments`]).
    pub buffers: u32,
    /// Run the configuration libcamera adjusts a format or size to instead of
    /// failing with [`CaptureError::ConfigAdjusted`](crate::CaptureError::ConfigAdjusted).
    pub accept_adjusted: bool,
}

#[cfg(feature = "libcamera")]
impl LibcameraConfig {
    /// The first camera, `format` at `width`x`height`, 4 buffers, no adjustments accepted.
    pub fn new(format: CaptureFormat, width: u32, height: u32) -> LibcameraConfig {
        LibcameraConfig {
            camera: None,
            format,
            width,
            height,
            buffers: 4,
            accept_adjusted: false,
        }
    }
}
