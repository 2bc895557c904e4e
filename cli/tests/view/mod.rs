//! A `zerocam view` process and plain HTTP to it, for the view's tests.
#![allow(dead_code, clippy::unwrap_used)] // each test binary uses its part

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A running `zerocam view`.
pub struct View {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
}

impl View {
    /// `zerocam view pattern --size SIZE --http 127.0.0.1:PORT` plus `extra`,
    /// once it has said where the page is.
    pub fn start(size: &str, extra: &[&str]) -> View {
        View::start_device("pattern", size, extra)
    }

    /// [`View::start`] of `device` (`pattern:stamp`, say).
    pub fn start_device(device: &str, size: &str, extra: &[&str]) -> View {
        // Port 0: the system picks it (no race with another test for it),
        // and the first line says which.
        let mut child = Command::new(env!("CARGO_BIN_EXE_zerocam"))
            .args(["view", device, "--size", size, "--http", "127.0.0.1:0"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let addr = loop {
            let line = lines.next().expect("zerocam view ended").unwrap();
            if let Some(url) = line.strip_prefix("live view at http://") {
                break url.split('/').next().unwrap().to_owned();
            }
        };
        // Keep reading its status lines so it never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        View { child, addr }
    }

    /// `GET path`: the status and body.
    pub fn get(&self, path: &str) -> (u16, Vec<u8>) {
        request(
            &self.addr,
            &format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n"),
        )
    }

    /// `GET /stats`, as JSON.
    pub fn stats(&self) -> Value {
        let (status, body) = self.get("/stats");
        assert_eq!(status, 200);
        serde_json::from_slice(&body).unwrap()
    }

    /// The capture's frames a second over `window`, from its frame counter
    /// (an average, not one second's figure).
    pub fn fps_over(&self, window: Duration) -> f64 {
        let frames = |s: &Value| s["stream"]["frames"].as_u64().unwrap_or(0);
        let (t0, f0) = (Instant::now(), frames(&self.stats()));
        std::thread::sleep(window);
        let f1 = frames(&self.stats());
        (f1 - f0) as f64 / t0.elapsed().as_secs_f64()
    }

    /// Waits until `check(stats)` holds (10 s at most).
    pub fn wait_stats(&self, what: &str, check: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let s = self.stats();
            if check(&s) {
                return s;
            }
            assert!(Instant::now() < deadline, "{what}: {s}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for View {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends `raw` to `addr` and reads the whole reply: its status and body.
pub fn request(addr: &str, raw: &str) -> (u16, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(raw.as_bytes()).unwrap();
    read_reply(&mut s)
}

/// Reads a reply to the end: its status and body.
pub fn read_reply(s: &mut TcpStream) -> (u16, Vec<u8>) {
    let mut reply = Vec::new();
    s.read_to_end(&mut reply).unwrap();
    let end = reply
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no reply head: {:?}", String::from_utf8_lossy(&reply)));
    let head = String::from_utf8_lossy(&reply[..end]).to_string();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, reply[end + 4..].to_vec())
}

/// Waits until `check()` holds (10 s at most).
pub fn wait_until(what: &str, check: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check() {
        assert!(Instant::now() < deadline, "{what}: not in 10 s");
        std::thread::sleep(Duration::from_millis(100));
    }
}
