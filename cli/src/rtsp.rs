//! `zerocam serve --rtsp ADDR:PORT/PATH`: the capture's frames as H.264
//! over RTSP (zerocam-net's `RtspServer`, through GStreamer's RTSP
//! server), alone or beside the Unix socket, Zenoh and the live view from
//! the same capture. Encoded only while a client plays. Without the cargo
//! feature `gstreamer`, `--rtsp` is refused with a message naming it.

use std::net::{Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::sync::{Arc, Mutex};

use zerocam_capture::{Frame, FrameSource};
use zerocam_encode::EncoderChoice;

use crate::CliError;

/// The mount path when `--rtsp` names none.
pub const DEFAULT_PATH: &str = "/cam";

/// What `--rtsp` serves, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RtspServe {
    /// Where to listen (127.0.0.1 unless the user names another address).
    pub addr: SocketAddr,
    /// The mount path (`/cam`).
    pub path: String,
    /// The H.264 encoder (`--rtsp-encoder`).
    pub encoder: EncoderChoice,
    /// Frames between keyframes (`--gop`).
    pub gop: u32,
}

impl RtspServe {
    /// Reads `--rtsp`'s `ADDR:PORT/PATH`, `ADDR:PORT` or `PORT[/PATH]`
    /// (127.0.0.1, path `/cam` when not given).
    ///
    /// # Errors
    /// [`CliError::Usage`] naming the text when it is none of those.
    pub fn parse(text: &str, encoder: EncoderChoice, gop: u32) -> Result<RtspServe, CliError> {
        let bad = || {
            CliError::Usage(format!(
                "--rtsp {text:?}: expected ADDR:PORT/PATH (127.0.0.1:8554/cam), ADDR:PORT or PORT"
            ))
        };
        // The path starts at the first '/' after the port (IPv6 addresses
        // are bracketed: `[::1]:8554/cam`).
        let after_host = text.rfind(']').map_or(0, |i| i + 1);
        let (host, path) = match text[after_host..].find('/') {
            Some(i) => text.split_at(after_host + i),
            None => (text, DEFAULT_PATH),
        };
        let addr = match host.parse::<u16>() {
            Ok(port) => SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
            Err(_) => host
                .to_socket_addrs()
                .ok()
                .and_then(|mut a| a.next())
                .ok_or_else(bad)?,
        };
        Ok(RtspServe {
            addr,
            path: path.to_owned(),
            encoder,
            gop,
        })
    }
}

/// The RTSP side of `serve`: a server, or (without the feature) nothing.
pub struct RtspSide {
    #[cfg(feature = "gstreamer")]
    server: zerocam_net::rtsp::RtspServer,
    /// Encoding errors so far (each logged).
    errors: u64,
}

impl RtspSide {
    /// Binds the address and starts the server. `borrowed`: each frame
    /// goes on to another consumer after (the socket's clients, Zenoh), so
    /// H.264 is encoded in software (an encoder that keeps nothing);
    /// `auto` becomes `software`.
    ///
    /// # Errors
    /// [`CliError::Usage`]: the server's errors (address, path, bind, a
    /// GStreamer element missing); a hardware or GStreamer encoder with
    /// `borrowed`; without the feature `gstreamer`, always.
    #[cfg(feature = "gstreamer")]
    pub fn new(serve: &RtspServe, borrowed: bool) -> Result<RtspSide, CliError> {
        let c = &serve.encoder;
        let encoder = match borrowed {
            true => c.for_borrowed_frames().ok_or_else(|| {
                CliError::Usage(format!(
                    "--rtsp-encoder {c}: with --socket or --zenoh too, each frame goes on to \
                     them, so RTSP's H.264 is encoded in software (--rtsp-encoder software or auto)"
                ))
            })?,
            false => c.clone(),
        };
        let config = zerocam_net::rtsp::RtspConfig {
            encoder,
            gop: serve.gop,
            ..zerocam_net::rtsp::RtspConfig::new(serve.addr, &serve.path)
        };
        let server = zerocam_net::rtsp::RtspServer::start(&config)
            .map_err(|e| CliError::Usage(format!("--rtsp: {e}")))?;
        Ok(RtspSide { server, errors: 0 })
    }

    /// Without the feature: refused.
    ///
    /// # Errors
    /// Always [`CliError::Usage`].
    #[cfg(not(feature = "gstreamer"))]
    pub fn new(_serve: &RtspServe, _borrowed: bool) -> Result<RtspSide, CliError> {
        Err(CliError::Usage(
            "--rtsp needs zerocam built with the cargo feature `gstreamer` \
             (cargo build --release -p zerocam-cli --features gstreamer)"
                .into(),
        ))
    }

    /// The line announcing the URL, e.g. `RTSP at rtsp://127.0.0.1:8554/cam
    /// (H.264: software, opened when a client comes)`.
    pub fn describe(&self) -> String {
        #[cfg(feature = "gstreamer")]
        {
            format!(
                "RTSP at {} (H.264: {})",
                self.server.url(),
                self.server.encoder()
            )
        }
        #[cfg(not(feature = "gstreamer"))]
        String::new()
    }

    /// Encodes `frame` for the clients when any plays (an error is logged
    /// and counted: it does not stop the capture or the other consumers).
    pub fn frame(&mut self, frame: &Frame, source: &dyn FrameSource) {
        let _ = source;
        #[cfg(feature = "gstreamer")]
        if let Err(e) = self.server.push(frame) {
            self.failed(&e);
        }
        #[cfg(not(feature = "gstreamer"))]
        let _ = frame;
    }

    /// As [`frame`](Self::frame), handing the frame over (the encoder may
    /// keep it: a hardware encoder imports the capture's dma-buf).
    pub fn frame_owned(&mut self, frame: Frame, source: &dyn FrameSource) {
        let _ = source;
        #[cfg(feature = "gstreamer")]
        if let Err(e) = self.server.push_owned(frame) {
            self.failed(&e);
        }
        #[cfg(not(feature = "gstreamer"))]
        drop(frame);
    }

    /// Counts an error, logged at 1, 2, 4, 8... errors: a failing encoder
    /// cannot flood the log at the frame rate.
    #[cfg(feature = "gstreamer")]
    fn failed(&mut self, e: &dyn std::fmt::Display) {
        self.errors += 1;
        if self.errors.is_power_of_two() {
            log::warn!("rtsp: {e} ({} errors so far)", self.errors);
        }
    }

    /// The server's counters as a status line.
    pub fn status(&self) -> String {
        #[cfg(feature = "gstreamer")]
        {
            let s = self.server.stats();
            format!(
                "rtsp: clients {}, frames {}, not encoded (no client) {}, \
                 not encoded (a slow client) {}, sent {} \
                 (keyframes {}, encoders opened {}, keyframe requests {}, medias {}), \
                 dropped {}, errors {}",
                s.clients,
                s.frames,
                s.idle,
                s.congested,
                s.sent,
                s.keyframes,
                s.opened,
                s.requested,
                s.media,
                s.dropped,
                self.errors
            )
        }
        #[cfg(not(feature = "gstreamer"))]
        format!("rtsp: errors {}", self.errors)
    }
}

/// The RTSP side, shared by the tapped source and `serve`'s status lines.
pub type SharedRtsp = Arc<Mutex<RtspSide>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() -> Result<(), CliError> {
        let a = RtspServe::parse("127.0.0.1:8554/cam", EncoderChoice::Auto, 30)?;
        assert_eq!(
            (a.addr, a.path.as_str()),
            (SocketAddr::from(([127, 0, 0, 1], 8554)), "/cam")
        );
        let a = RtspServe::parse("8555", EncoderChoice::Auto, 30)?;
        assert_eq!(
            (a.addr, a.path.as_str()),
            (SocketAddr::from(([127, 0, 0, 1], 8555)), DEFAULT_PATH)
        );
        let a = RtspServe::parse("0.0.0.0:8554/a/b", EncoderChoice::Software, 10)?;
        assert_eq!((a.addr.port(), a.path.as_str()), (8554, "/a/b"));
        let a = RtspServe::parse("[::1]:8554/cam", EncoderChoice::Auto, 30)?;
        assert_eq!((a.addr.is_ipv6(), a.path.as_str()), (true, "/cam"));
        for bad in ["", "cam", "127.0.0.1", "127.0.0.1:x/cam", "/cam"] {
            assert!(
                matches!(
                    RtspServe::parse(bad, EncoderChoice::Auto, 30),
                    Err(CliError::Usage(_))
                ),
                "{bad}"
            );
        }
        Ok(())
    }
}
