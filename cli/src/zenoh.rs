//! `zerocam serve --zenoh`: the capture's frames as ROS 2 topics on Zenoh
//! (zerocam-net's `ZenohPublisher`, docs/network.md), alone or beside the
//! Unix socket from the same capture. Without the cargo feature `zenoh`,
//! `--zenoh` is refused with a message naming it.

use std::sync::{Arc, Mutex};

use zerocam_capture::zenoh_source::ZenohOptions;
use zerocam_capture::{Frame, StreamFormat};

use crate::CliError;
use zerocam_encode::EncoderChoice;

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

/// The Zenoh side of `serve`: a publisher, or (without the feature) nothing.
pub struct ZenohSide {
    #[cfg(feature = "zenoh")]
    publisher: zerocam_net::zenoh::ZenohPublisher,
    /// Publishing errors so far (each logged).
    errors: u64,
}

impl ZenohSide {
    /// Opens the session and declares the topics. `borrowed`: the frames
    /// go on to the socket's clients after, so H.264 is encoded in software
    /// (an encoder that keeps nothing); `auto` becomes `software`.
    ///
    /// # Errors
    /// The session's and topics' errors; [`CliError::Usage`] without the
    /// feature `zenoh`, or for a hardware or GStreamer H.264 encoder with
    /// `borrowed`.
    #[cfg(feature = "zenoh")]
    pub fn new(serve: &ZenohServe, borrowed: bool) -> Result<ZenohSide, CliError> {
        let h264 = match (&serve.h264, borrowed) {
            (Some(c), true) => Some(c.for_borrowed_frames().ok_or_else(|| {
                CliError::Usage(format!(
                    "--h264 {c}: with --socket too, each frame goes on to the socket's clients, \
                     so Zenoh's H.264 is encoded in software (--h264 software or auto)"
                ))
            })?),
            (c, _) => c.clone(),
        };
        let config = zerocam_net::zenoh::ZenohPublisherConfig {
            options: serve.options.clone(),
            prefix: serve.prefix.clone(),
            frame_id: serve.frame_id.clone(),
            jpeg_quality: serve.quality,
            h264,
            gop: serve.gop,
        };
        let publisher = zerocam_net::zenoh::ZenohPublisher::new(&config)
            .map_err(|e| CliError::Usage(format!("--zenoh: {e}")))?;
        Ok(ZenohSide {
            publisher,
            errors: 0,
        })
    }

    /// Without the feature: refused.
    ///
    /// # Errors
    /// Always [`CliError::Usage`].
    #[cfg(not(feature = "zenoh"))]
    pub fn new(_serve: &ZenohServe, _borrowed: bool) -> Result<ZenohSide, CliError> {
        Err(CliError::Usage(
            "--zenoh needs zerocam built with the cargo feature `zenoh` \
             (cargo build --release -p zerocam-cli --features zenoh)"
                .into(),
        ))
    }

    /// What is published, for the first lines.
    pub fn describe(&self) -> String {
        #[cfg(feature = "zenoh")]
        {
            let h264 = self
                .publisher
                .h264_encoder()
                .unwrap_or_else(|| "off".into());
            format!(
                "publishing on Zenoh: {} (H.264: {h264})",
                self.publisher.keys()
            )
        }
        #[cfg(not(feature = "zenoh"))]
        String::new()
    }

    /// Publishes `frame` (an error is logged and counted: a network hiccup
    /// does not stop the capture or the socket's clients).
    pub fn publish(&mut self, frame: &Frame, format: &StreamFormat) {
        #[cfg(feature = "zenoh")]
        if let Err(e) = self.publisher.publish(frame, format) {
            self.errors += 1;
            log::warn!("zenoh: {e}");
        }
        #[cfg(not(feature = "zenoh"))]
        let _ = (frame, format);
    }

    /// Publishes `frame`, handing it over (the H.264 encoder may keep it:
    /// a hardware encoder imports the capture's dma-buf).
    pub fn publish_owned(&mut self, frame: Frame, format: &StreamFormat) {
        #[cfg(feature = "zenoh")]
        if let Err(e) = self.publisher.publish_owned(frame, format) {
            self.errors += 1;
            log::warn!("zenoh: {e}");
        }
        #[cfg(not(feature = "zenoh"))]
        let _ = (frame, format);
    }

    /// The publisher's counters as a status line.
    pub fn status(&self) -> String {
        #[cfg(feature = "zenoh")]
        {
            let s = self.publisher.stats();
            let per = s.encode.as_secs_f64() * 1e3 / s.jpeg.max(1) as f64;
            format!(
                "zenoh: frames {}, jpeg sent {}, not encoded (no subscriber) {}, \
                 camera_info sent {}, h264 sent {} ({} keyframes, encoders opened {}), \
                 errors {}, JPEG encode {per:.2} ms/frame",
                s.frames,
                s.jpeg,
                s.idle,
                s.camera_info,
                s.h264,
                s.h264_keyframes,
                s.h264_opened,
                self.errors
            )
        }
        #[cfg(not(feature = "zenoh"))]
        format!("zenoh: errors {}", self.errors)
    }
}

/// The Zenoh side, shared by the tapped source and `serve`'s status lines.
pub type SharedZenoh = Arc<Mutex<ZenohSide>>;
