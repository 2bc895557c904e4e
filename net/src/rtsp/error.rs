//! [`RtspError`]: why the RTSP server did not start.

use std::net::SocketAddr;

/// Why an [`RtspServer`](super::RtspServer) did not start.
#[derive(Debug, thiserror::Error)]
pub enum RtspError {
    /// The mount path is not one RTSP URLs can carry.
    #[error(
        "RTSP path {path:?}: expected '/' then letters, digits and '-', '_', '.', '/' (e.g. /cam)"
    )]
    Path {
        /// The path given.
        path: String,
    },
    /// GStreamer could not be initialised.
    #[error("GStreamer: {reason}")]
    Init {
        /// GStreamer's message.
        reason: String,
    },
    /// An element the media needs is not installed.
    #[error(
        "GStreamer element {element:?} is missing (it comes with {package}); \
         the RTSP output needs it"
    )]
    MissingElement {
        /// The element's factory name.
        element: &'static str,
        /// Where it comes from.
        package: &'static str,
    },
    /// The address could not be bound.
    #[error("cannot serve RTSP at {addr}: {reason}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// GStreamer's message.
        reason: String,
    },
    /// The server's thread could not be started.
    #[error("cannot start the RTSP server's thread: {0}")]
    Thread(#[from] std::io::Error),
}
