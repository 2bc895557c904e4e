//! The `zerocam` command line tool's subcommands, as a library its binary
//! (`src/main.rs`) and its tests call: `list`, `info`, `capture`, `bench`,
//! `serve`, `probe`, `record`, `doctor`. Sources are opened by spec with
//! [`zerocam_capture::open`], as the C API and Python open them (the binary
//! quiets libcamera's log first).

#![deny(unsafe_code)]

pub mod bench;
pub mod capture;
pub mod convert;
pub mod doctor;
pub mod libcamera;
pub mod list;
pub mod outputs;
pub mod probe;
pub mod record;
pub mod rtsp;
pub mod serve;
pub mod view;
pub mod zenoh;

/// What a CLI command can fail with; printed as one line.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A capture error (device, format, size, timeout…).
    #[error(transparent)]
    Capture(#[from] zerocam_capture::CaptureError),
    /// Serving frames to other processes failed (the socket, the source).
    #[error(transparent)]
    Share(#[from] zerocam_capture::share::PublishError),
    /// A bad argument.
    #[error(transparent)]
    Argument(#[from] zerocam_capture::ArgumentError),
    /// A tensor error.
    #[error(transparent)]
    Tensor(#[from] zerocam_tensor::Error),
    /// The output file could not be written.
    #[error("cannot write {path}: {source}")]
    Output {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Writing failed.
    #[error("write failed: {0}")]
    Io(#[from] std::io::Error),
    /// A bad combination of arguments.
    #[error("{0}")]
    Usage(String),
    /// PNG encoding failed.
    #[error("PNG encoding failed: {0}")]
    Png(String),
    /// Encoding failed, or an output name zerocam does not write (JPEG,
    /// the output's extension; zerocam-encode's errors).
    #[error(transparent)]
    Encode(#[from] zerocam_encode::EncodeError),
}

impl From<zerocam_encode::jpeg::JpegError> for CliError {
    fn from(e: zerocam_encode::jpeg::JpegError) -> CliError {
        CliError::Encode(e.into())
    }
}
