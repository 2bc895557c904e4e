//! `zerocam view`'s HTTP side against hostile and slow clients, on loopback:
//! every bad request a 4xx (counted, logged), the token enforced, a stalled
//! viewer dropped and a vanished one forgotten, connections over the limit
//! refused at once, and the capture's frame rate untouched throughout.
#![allow(clippy::unwrap_used)]

mod common;
mod view;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use view::{read_reply, request, View};
use zerocam_net::view::{post_detections, Detections};

/// `raw` sent to the view; the reply's status.
fn status(view: &View, raw: &[u8]) -> u16 {
    let mut s = TcpStream::connect(&view.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    // The server may answer (and close) before reading everything.
    let _ = s.write_all(raw);
    read_reply(&mut s).0
}

#[test]
fn bad_requests_are_4xx_and_the_capture_goes_on() {
    let view = View::start("640x480", &[]);
    let frames0 = view.wait_stats("frames", |s| s["stream"]["frames"].as_u64() > Some(0))["stream"]
        ["frames"]
        .as_u64()
        .unwrap();
    let long_header = format!("GET / HTTP/1.1\r\nX-Long: {}\r\n\r\n", "a".repeat(9000));
    let many_headers = format!(
        "GET / HTTP/1.1\r\n{}\r\n",
        (0..40).map(|i| format!("X-{i}: 1\r\n")).collect::<String>()
    );
    let big_body = format!(
        "POST /detections HTTP/1.1\r\nContent-Length: {}\r\n\r\n",
        1 << 20
    );
    let cases: [(&[u8], u16); 9] = [
        (long_header.as_bytes(), 431),
        (many_headers.as_bytes(), 431),
        (b"POST /detections HTTP/1.1\r\n\r\n", 411),
        (
            b"POST /detections HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
            411,
        ),
        (big_body.as_bytes(), 413),
        (
            b"POST /detections HTTP/1.1\r\nContent-Length: 5\r\n\r\n{nope",
            400,
        ),
        (b"PUT / HTTP/1.1\r\n\r\n", 405),
        (b"GET /etc/passwd HTTP/1.1\r\n\r\n", 404),
        (b"\x16\x03\x01\x02\x00 not http\r\n\r\n", 400),
    ];
    for (raw, want) in cases {
        let got = status(&view, raw);
        assert_eq!(
            got,
            want,
            "{:?}",
            String::from_utf8_lossy(&raw[..raw.len().min(60)])
        );
    }
    // A request that never completes: 408 once its time is up.
    let mut slow = TcpStream::connect(&view.addr).unwrap();
    slow.write_all(b"GET / HTTP/1.1\r\nHost:").unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let started = Instant::now();
    assert_eq!(read_reply(&mut slow).0, 408);
    assert!(
        started.elapsed() >= Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    // A post with a box of no size is refused by name.
    let post = r#"{"sequence": 1, "boxes": [{"x": 0, "y": 0, "w": 1, "h": -1}]}"#;
    let (code, body) = request(
        &view.addr,
        &format!(
            "POST /detections HTTP/1.1\r\nContent-Length: {}\r\n\r\n{post}",
            post.len()
        ),
    );
    assert_eq!(code, 400, "{}", String::from_utf8_lossy(&body));
    assert!(String::from_utf8_lossy(&body).contains("box 0: \"h\""));
    let s = view.stats();
    assert_eq!(s["view"]["bad_requests"], 11, "{s}");
    assert!(s["stream"]["frames"].as_u64().unwrap() > frames0, "{s}");
    let fps = view.fps_over(Duration::from_secs(3));
    assert!(
        fps > 25.0,
        "the capture at {fps:.1} fps after the bad requests"
    );
}

#[test]
fn the_token_is_asked_of_every_route() {
    let view = View::start("640x480", &["--token", "s3cret-token"]);
    assert_eq!(view.get("/").0, 401);
    assert_eq!(view.get("/stats").0, 401);
    assert_eq!(view.get("/stream.mjpg").0, 401);
    assert_eq!(view.get("/?token=s3cret-tokem").0, 401);
    assert_eq!(view.get("/?token=s3cret-token").0, 200);
    let (code, _) = request(
        &view.addr,
        "GET /stats HTTP/1.1\r\nAuthorization: Bearer s3cret-token\r\n\r\n",
    );
    assert_eq!(code, 200);
    let post = |token| post_detections(&view.addr, token, &Detections::default());
    assert!(post(None).unwrap_err().to_string().contains("401"));
    post(Some("s3cret-token")).unwrap();
    let (_, body) = view.get("/stats?token=s3cret-token");
    let s: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(s["view"]["unauthorized"], 5, "{s}");
    assert_eq!(s["view"]["detections"], 1, "{s}");
}

#[test]
fn a_stalled_viewer_is_dropped_and_a_vanished_one_forgotten() {
    let view = View::start("1280x720", &["--quality", "95"]);
    // Vanished: reads one part, then goes.
    {
        let mut s = TcpStream::connect(&view.addr).unwrap();
        s.write_all(b"GET /stream.mjpg HTTP/1.1\r\n\r\n").unwrap();
        let mut buf = [0u8; 4096];
        assert!(s.read(&mut buf).unwrap() > 0);
    }
    view.wait_stats("the vanished viewer forgotten", |s| {
        s["view"]["viewers"] == 0 && s["stream"]["fps"].as_f64() > Some(0.0)
    });
    // Stalled: asks for the stream and never reads.
    let mut stalled = TcpStream::connect(&view.addr).unwrap();
    stalled
        .write_all(b"GET /stream.mjpg HTTP/1.1\r\n\r\n")
        .unwrap();
    let frames = |s: &serde_json::Value| s["stream"]["frames"].as_u64().unwrap();
    let (t0, f0) = (Instant::now(), frames(&view.stats()));
    let deadline = t0 + Duration::from_secs(40);
    let s = loop {
        let s = view.stats();
        if s["view"]["viewers_stalled"] == 1 {
            break s;
        }
        assert!(Instant::now() < deadline, "never dropped: {s}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(s["view"]["viewers"], 0, "{s}");
    // Over the whole stall (its write timeout included), on average.
    let fps = (frames(&s) - f0) as f64 / t0.elapsed().as_secs_f64();
    assert!(
        fps > 25.0,
        "the capture at {fps:.1} fps while a viewer stalled"
    );
    drop(stalled);
}

#[test]
fn connections_over_the_limit_are_refused_at_once() {
    let view = View::start("640x480", &[]);
    // 64 connections that send nothing (each held up to the request timeout).
    let idle: Vec<_> = (0..64)
        .map(|_| TcpStream::connect(&view.addr).unwrap())
        .collect();
    view::wait_until("64 connections open", || {
        // The 65th is answered before it says anything.
        let mut s = TcpStream::connect(&view.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        read_reply(&mut s).0 == 503
    });
    drop(idle);
    view.wait_stats("connections back", |s| {
        s["view"]["connections"].as_u64() <= Some(1)
    });
    let s = view.stats();
    assert!(s["view"]["refused"].as_u64() >= Some(1), "{s}");
    assert_eq!(view.get("/").0, 200);
}

#[test]
fn viewers_over_the_limit_get_503_and_do_not_count() {
    let view = View::start("640x480", &[]);
    let open_stream = || {
        let mut s = TcpStream::connect(&view.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(b"GET /stream.mjpg HTTP/1.1\r\n\r\n").unwrap();
        let mut head = [0u8; 12];
        s.read_exact(&mut head).unwrap();
        (s, String::from_utf8_lossy(&head).to_string())
    };
    let streams: Vec<_> = (0..32).map(|_| open_stream()).collect();
    assert!(streams.iter().all(|(_, h)| h == "HTTP/1.1 200"));
    let (_, head) = open_stream();
    assert_eq!(head, "HTTP/1.1 503");
    let s = view.stats();
    assert_eq!(s["view"]["viewers"], 32, "{s}");
    assert!(s["view"]["refused"].as_u64() >= Some(1), "{s}");
    drop(streams);
    view.wait_stats("the viewers gone", |s| s["view"]["viewers"] == 0);
}
