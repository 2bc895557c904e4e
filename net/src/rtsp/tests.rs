//! The server's own tests: paths, access units' stamps, and a drop that
//! frees its port and thread.
use std::net::SocketAddr;
use std::time::Duration;

use gstreamer::ClockTime;

use super::media::check_path;
use super::server::stamp;
use super::*;

#[test]
fn paths() {
    for good in ["/cam", "/a/b-c_d.1"] {
        assert!(check_path(good).is_ok(), "{good}");
    }
    for bad in ["", "/", "cam", "//cam", "/c m", "/cam?x", "/é"] {
        assert!(
            matches!(check_path(bad), Err(RtspError::Path { .. })),
            "{bad}"
        );
    }
}

/// Stamps keep the captures' spacing, never run ahead of the moment a
/// unit is handed over (a late first unit would hold back every later one
/// in the server's sinks), and stay in order.
#[test]
fn stamps_follow_captures_and_never_run_ahead() {
    let ms = |n: u64| ClockTime::from_mseconds(n);
    let at = |n: u64| Duration::from_millis(n);
    // The first unit captured at 1000 ms, handed over at running time 500
    // ms: an encoder's start made it 40 ms late.
    let mut base = (1, at(1000), ms(500));
    assert_eq!(stamp(&mut base, at(1000), Some(ms(500))), ms(500));
    // The next, captured 33 ms on, came only 5 ms after its capture: the
    // capture spacing would stamp it 533, ahead of its hand-over at 498.
    let second = stamp(&mut base, at(1033), Some(ms(498)));
    assert_eq!(second, ms(498));
    assert_eq!(base.2, ms(465), "the anchor moved back 35 ms");
    // Later units keep the captures' spacing from the moved anchor.
    assert_eq!(stamp(&mut base, at(1066), Some(ms(540))), ms(531));
    // A unit handed over late is stamped by its capture, not by `now`.
    assert_eq!(stamp(&mut base, at(1100), Some(ms(700))), ms(565));
    // No running time (the media not playing yet): capture spacing alone.
    assert_eq!(stamp(&mut base, at(1133), None), ms(598));
    // A capture time before the anchor's (a source's clock going back)
    // stamps at the anchor, never before it.
    assert_eq!(stamp(&mut base, at(900), Some(ms(800))), ms(465));
}

/// The thread named `zerocam-rtsp`s of this process.
fn rtsp_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.filter_map(|t| t.ok())
                .filter(|t| {
                    std::fs::read_to_string(t.path().join("comm"))
                        .is_ok_and(|c| c.trim() == "zerocam-rtsp")
                })
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn drop_frees_the_port_and_the_thread() -> Result<(), Box<dyn std::error::Error>> {
    let addr: SocketAddr = "127.0.0.1:0".parse()?;
    let server = RtspServer::start(&RtspConfig::new(addr, "/cam"))?;
    // The thread names itself once it runs.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while rtsp_threads() == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(rtsp_threads(), 1);
    let url = server.url().to_owned();
    let port: u16 = url
        .trim_start_matches("rtsp://127.0.0.1:")
        .trim_end_matches("/cam")
        .parse()?;
    assert_ne!(port, 0, "{url}");
    // A client that connects and says nothing.
    let client = std::net::TcpStream::connect(("127.0.0.1", port))?;
    // The same port taken twice: the second is refused by name.
    let again = RtspServer::start(&RtspConfig::new(
        SocketAddr::from(([127, 0, 0, 1], port)),
        "/cam",
    ));
    assert!(matches!(again, Err(RtspError::Bind { .. })), "{again:?}");
    drop(server);
    drop(client);
    // A joined thread's task entry goes a moment after the join returns.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while rtsp_threads() > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(rtsp_threads(), 0);
    std::net::TcpListener::bind(("127.0.0.1", port))?;
    Ok(())
}
