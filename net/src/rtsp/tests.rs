//! The server's own tests: paths, and a drop that frees its port and thread.
use std::net::SocketAddr;

use super::media::check_path;
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
