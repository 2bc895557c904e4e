//! `zerocam serve --rtsp ADDR:PORT/PATH`: the capture's frames as H.264
//! over RTSP (zerocam-net's `RtspServer`, through GStreamer's RTSP
//! server), alone or beside the Unix socket, Zenoh and the live view from
//! the same capture, with the one H.264 encoder they share. Encoded only
//! while a client (or a Zenoh subscriber) wants it. Without the cargo
//! feature `gstreamer`, `--rtsp` is refused with a message naming it.

use std::net::{Ipv4Addr, SocketAddr, ToSocketAddrs};

use zerocam_encode::EncoderChoice;
use zerocam_net::outputs::Output;

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

/// The RTSP server of `serve`, one output of the capture: it takes the
/// stream's H.264 from the encoder every output shares.
///
/// # Errors
/// [`CliError::Usage`]: the server's errors (address, path, bind, a
/// GStreamer element missing); without the feature `gstreamer`, always.
#[cfg(feature = "gstreamer")]
pub fn server(serve: &RtspServe) -> Result<Box<dyn Output>, CliError> {
    let config = zerocam_net::rtsp::RtspConfig {
        encoder: serve.encoder.clone(),
        gop: serve.gop,
        ..zerocam_net::rtsp::RtspConfig::new(serve.addr, &serve.path)
    };
    let server = zerocam_net::rtsp::RtspServer::start(&config)
        .map_err(|e| CliError::Usage(format!("--rtsp: {e}")))?;
    Ok(Box::new(server))
}

/// Without the feature: refused.
///
/// # Errors
/// Always [`CliError::Usage`].
#[cfg(not(feature = "gstreamer"))]
pub fn server(_serve: &RtspServe) -> Result<Box<dyn Output>, CliError> {
    Err(CliError::Usage(
        "--rtsp needs zerocam built with the cargo feature `gstreamer` \
         (cargo build --release -p zerocam-cli --features gstreamer)"
            .into(),
    ))
}

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
