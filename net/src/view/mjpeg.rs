//! One MJPEG viewer: the newest picture each time, never a queue.

use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::request::{send_all, Refusal};
use super::server::Shared;

/// The multipart boundary.
const BOUNDARY: &str = "zerocamframe";

/// Counts a viewer for as long as it lives.
struct Viewer<'a>(&'a Shared);

impl Drop for Viewer<'_> {
    fn drop(&mut self) {
        if self.0.counters.viewers.fetch_sub(1, Ordering::Relaxed) == 1 {
            // Nobody watches: the next viewer starts with a fresh picture,
            // not one from before.
            self.0.lock().latest = None;
        }
    }
}

/// Streams pictures to `stream` until the viewer goes, stalls past the
/// write timeout, or the server stops. A viewer slower than the camera
/// skips pictures (counted); the producer never waits for it.
pub(super) fn stream(stream: &mut TcpStream, shared: &Arc<Shared>) -> Result<(), Refusal> {
    let c = &shared.counters;
    // Counted only once admitted: a refused viewer never makes the
    // producer encode.
    let max = shared.config.max_viewers;
    if c.viewers
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
            (n < max).then_some(n + 1)
        })
        .is_err()
    {
        return Err(Refusal::new(503, format!("{max} viewers already")));
    }
    let _viewer = Viewer(shared);
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: multipart/x-mixed-replace; boundary={BOUNDARY}\r\n\
         Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n"
    );
    if send_all(stream, head.as_bytes()).is_err() {
        return Ok(());
    }
    let mut last: Option<u64> = None;
    loop {
        let (picture, detections) = {
            let mut st = shared.lock();
            loop {
                if st.stopping {
                    return Ok(());
                }
                match &st.latest {
                    Some(p) if last != Some(p.number) => break (p.clone(), st.detections.clone()),
                    _ => {}
                }
                st = shared
                    .changed
                    .wait_timeout(st, Duration::from_secs(1))
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
            }
        };
        if let Some(l) = last {
            let skipped = picture.number.saturating_sub(l + 1);
            c.viewer_skips.fetch_add(skipped, Ordering::Relaxed);
        }
        last = Some(picture.number);
        let mut part = format!(
            "--{BOUNDARY}\r\nContent-Type: image/jpeg\r\nContent-Length: {}\r\nX-Sequence: {}\r\n",
            picture.jpeg.len(),
            picture.sequence
        );
        if let Some(d) = &detections {
            part += &format!("X-Detections: {d}\r\n");
        }
        part += "\r\n";
        let sent = send_all(stream, part.as_bytes())
            .and_then(|()| send_all(stream, &picture.jpeg))
            .and_then(|()| send_all(stream, b"\r\n"));
        match sent {
            Ok(()) => {
                c.parts_sent.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) {
                    c.viewers_stalled.fetch_add(1, Ordering::Relaxed);
                    shared.warn("a viewer stalled past the write timeout: dropped");
                }
                return Ok(());
            }
        }
    }
}
