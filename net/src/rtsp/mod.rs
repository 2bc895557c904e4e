//! RTSP: a capture's frames as H.264 over RTSP, through GStreamer's RTSP
//! server (feature `gstreamer`).
//!
//! [`RtspServer`] mounts one path (`rtsp://127.0.0.1:8554/cam`) whose media
//! every client shares: an `appsrc` fed with zerocam's own H.264 access
//! units ([`zerocam_encode::encoder::open_encoder`]: a V4L2 memory-to-memory
//! encoder importing the capture's dma-bufs, GStreamer's, or OpenH264),
//! `h264parse` and `rtph264pay`. The encoder runs only while a client
//! plays (or a new media is being prepared for one), and stays open from
//! one client to the next: each new client has it make a keyframe, with
//! the parameter sets, so that client's first picture is whole (an encoder
//! that cannot make one on request is replaced by a fresh one). A client that reads too slowly never blocks the caller:
//! past a bounded queue, access units are dropped and counted, and the
//! stream restarts at a keyframe.
//!
//! The server runs its own GLib main context and loop on a thread of its
//! own; dropping the [`RtspServer`] closes the clients, removes the mount
//! and the listening socket and joins the thread.

mod error;
mod media;
mod server;
#[cfg(test)]
mod tests;

pub use error::RtspError;
pub use server::{RtspConfig, RtspServer, RtspStats};
