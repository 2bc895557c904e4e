//! Opening what the CLI captures from: a V4L2 device,
//! `libcamera:<id>`, `unix:<socket>`, `gst:<pipeline>`, or the built-in
//! pattern source when no camera is given or present. The opener is
//! [`zerocam_capture::open`] (the C API opens specs with it too); here it
//! first quiets libcamera's log, so the CLI's errors stay one line.

use zerocam_capture::{BufferMode, CaptureError};

/// The V4L2 capture devices present (see [`zerocam_capture::capture_devices`]).
pub use zerocam_capture::capture_devices;
pub use zerocam_capture::open::{Opened, SourceSpec};

/// Opens `spec` ([`zerocam_capture::open::open`]).
///
/// # Errors
/// The device's errors (missing, not a camera, unsupported format or size).
pub fn open(spec: &SourceSpec) -> Result<Opened, CaptureError> {
    open_or_fall_back(spec, None)
}

/// Opens `spec`, falling back to `fallback` where the device cannot do
/// `spec.mode` ([`zerocam_capture::open::open_or_fall_back`]).
///
/// # Errors
/// As [`open`].
pub fn open_or_fall_back(
    spec: &SourceSpec,
    fallback: Option<BufferMode>,
) -> Result<Opened, CaptureError> {
    #[cfg(feature = "libcamera")]
    zerocam_capture::quiet_libcamera_log();
    zerocam_capture::open::open_or_fall_back(spec, fallback)
}
