//! `zerocam serve --zenoh`: the capture's frames as ROS 2 topics on Zenoh
//! (zerocam-net's `ZenohPublisher`, docs/network.md), alone or beside the
//! Unix socket from the same capture. Without the cargo feature `zenoh`,
//! `--zenoh` is refused with a message naming it.

use zerocam_capture::zenoh_source::ZenohOptions;
use zerocam_encode::EncoderChoice;
use zerocam_net::outputs::Output;

use crate::CliError;

/// What `--zenoh` publishes, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZenohServe {
    /// The session (`--zenoh-config`, `--connect`, `--listen`).
    pub options: ZenohOptions,
    /// The key prefix (`--topic`).
    pub prefix: String,
    /// The messages' `frame_id` (`--frame-id`).
    pub frame_id: String,
    /// JPEG quality (`--quality`).
    pub quality: u8,
    /// The encoder of `PREFIX/h264` (`--h264`; `None`: no H.264 topic).
    pub h264: Option<EncoderChoice>,
    /// Frames between H.264 keyframes (`--gop`).
    pub gop: u32,
}

/// The Zenoh publisher of `serve`, one output of the capture: it takes the
/// frames (JPEG, camera_info) and, with an H.264 topic, the stream's H.264
/// from the encoder every output shares.
///
/// # Errors
/// The session's and topics' errors; [`CliError::Usage`] without the
/// feature `zenoh`.
#[cfg(feature = "zenoh")]
pub fn publisher(serve: &ZenohServe) -> Result<Box<dyn Output>, CliError> {
    let config = zerocam_net::zenoh::ZenohPublisherConfig {
        options: serve.options.clone(),
        prefix: serve.prefix.clone(),
        frame_id: serve.frame_id.clone(),
        jpeg_quality: serve.quality,
        h264: serve.h264.clone(),
        gop: serve.gop,
    };
    let publisher = zerocam_net::zenoh::ZenohPublisher::new(&config)
        .map_err(|e| CliError::Usage(format!("--zenoh: {e}")))?;
    Ok(Box::new(publisher))
}

/// Without the feature: refused.
///
/// # Errors
/// Always [`CliError::Usage`].
#[cfg(not(feature = "zenoh"))]
pub fn publisher(_serve: &ZenohServe) -> Result<Box<dyn Output>, CliError> {
    Err(CliError::Usage(
        "--zenoh needs zerocam built with the cargo feature `zenoh` \
         (cargo build --release -p zerocam-cli --features zenoh)"
            .into(),
    ))
}
