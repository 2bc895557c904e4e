//! [`ZenohError`]: what a Zenoh session, publisher or source can fail with.

use std::path::PathBuf;
use std::time::Duration;

use crate::ros::CdrError;

/// A Zenoh session, topic or sample that did not work.
#[derive(Debug, thiserror::Error)]
pub enum ZenohError {
    /// The Zenoh configuration file could not be read or parsed.
    #[error("Zenoh config file {path}: {reason}")]
    ConfigFile {
        /// The file.
        path: PathBuf,
        /// Zenoh's reason.
        reason: String,
    },
    /// A configuration value (an endpoint) Zenoh refused.
    #[error("Zenoh config `{key}` = {value}: {reason}")]
    Config {
        /// The configuration key.
        key: &'static str,
        /// The value given.
        value: String,
        /// Zenoh's reason.
        reason: String,
    },
    /// The session did not open (an endpoint could not be bound, a TLS
    /// file is missing).
    #[error("cannot open a Zenoh session: {reason}")]
    Session {
        /// Zenoh's reason.
        reason: String,
    },
    /// A key expression Zenoh refused, or a publisher/subscriber that could
    /// not be declared on it.
    #[error("Zenoh key `{key}`: {reason}")]
    Key {
        /// The key expression.
        key: String,
        /// Zenoh's reason.
        reason: String,
    },
    /// No sample came on the key in time (nothing publishes it, or no
    /// route to the publisher).
    #[error("no sample on Zenoh key `{key}` within {} ms (is a publisher reachable through {endpoints}?)", waited.as_millis())]
    NoSample {
        /// The key expression.
        key: String,
        /// How long the source waited.
        waited: Duration,
        /// The endpoints the session connects to.
        endpoints: String,
    },
    /// A sample whose payload is not the message the topic carries.
    #[error("malformed sample on Zenoh key `{key}`: {source}")]
    Malformed {
        /// The sample's key.
        key: String,
        /// What is wrong in the CDR.
        source: CdrError,
    },
    /// A sample too large to take.
    #[error("sample on Zenoh key `{key}` has {len} bytes, more than the {max} accepted")]
    TooLarge {
        /// The sample's key.
        key: String,
        /// Its payload length.
        len: usize,
        /// The bound.
        max: usize,
    },
    /// A `CompressedImage` in a format the source does not decode.
    #[error("Zenoh key `{key}` carries `{format}` images: only JPEG is decoded")]
    Format {
        /// The sample's key.
        key: String,
        /// The message's `format` field.
        format: String,
    },
    /// The JPEG did not decode.
    #[error("JPEG on Zenoh key `{key}` did not decode: {reason}")]
    Decode {
        /// The sample's key.
        key: String,
        /// libjpeg-turbo's reason.
        reason: String,
    },
    /// A frame of another size than the stream's first.
    #[error(
        "Zenoh key `{key}`: a {width}x{height} frame in a {stream_width}x{stream_height} stream"
    )]
    SizeChanged {
        /// The sample's key.
        key: String,
        /// The frame's width.
        width: u32,
        /// The frame's height.
        height: u32,
        /// The stream's width.
        stream_width: u32,
        /// The stream's height.
        stream_height: u32,
    },
    /// The session closed under the subscriber.
    #[error("the Zenoh subscriber on `{key}` closed: {reason}")]
    Closed {
        /// The key expression.
        key: String,
        /// Zenoh's reason.
        reason: String,
    },
}
