//! [`Recorder`]: frames in, a file out.

/// Writes frames into a file (stub: filled in by the recorder's module).
#[derive(Debug)]
pub struct Recorder {}
