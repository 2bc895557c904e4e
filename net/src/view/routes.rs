//! What each route answers.

use std::io::Read;
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use super::detections::Detections;
use super::mjpeg;
use super::request::{read_request, refuse, respond, Method, Refusal, Request};
use super::server::{stats_of, Shared};

/// The page: one static file, served from the binary.
const PAGE: &str = include_str!("page.html");

/// Answers 503 to a connection over the limit, without waiting on it.
pub(super) fn busy(stream: &mut TcpStream) {
    let _ = stream.set_write_timeout(Some(Duration::from_millis(100)));
    let _ = refuse(stream, &Refusal::new(503, "too many connections"));
    let _ = stream.shutdown(Shutdown::Write);
}

/// After a refusal: the response is sent, then what the client is still
/// sending is read and dropped for a moment (at most `LINGER_BYTES`, for
/// at most `LINGER`), so closing with unread input does not reset the
/// connection before the client has read why.
fn linger(stream: &mut TcpStream) {
    let _ = stream.shutdown(Shutdown::Write);
    let deadline = Instant::now() + LINGER;
    let mut buf = [0u8; 4096];
    let mut left = LINGER_BYTES;
    while left > 0 {
        let wait = deadline.saturating_duration_since(Instant::now());
        if wait.is_zero() || stream.set_read_timeout(Some(wait)).is_err() {
            return;
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => left = left.saturating_sub(n),
        }
    }
}

/// A "refusal" that means the response had begun when writing it failed
/// (the client went, or stalled): the connection is closed, nothing more
/// is written on it.
const CLOSED: u16 = 0;

/// A failed write of an answer already begun.
fn closed(_: std::io::Error) -> Refusal {
    Refusal::new(CLOSED, "the client went away mid-answer")
}

/// How long, and how much, a refused client's input is read and dropped.
const LINGER: Duration = Duration::from_secs(1);
const LINGER_BYTES: usize = 256 * 1024;

/// Reads one request from `stream` and answers it (the connection closes
/// after: a page's few requests a second do not need keep-alive).
pub(super) fn serve_connection(mut stream: TcpStream, peer: SocketAddr, shared: &Arc<Shared>) {
    let config = &shared.config;
    let _ = stream.set_write_timeout(Some(config.write_timeout));
    let _ = stream.set_nodelay(true);
    let deadline = Instant::now() + config.request_timeout;
    let request = match read_request(&mut stream, deadline) {
        Ok(Some(r)) => r,
        Ok(None) => return,
        Err(refusal) => {
            shared.counters.bad_requests.fetch_add(1, Ordering::Relaxed);
            shared.warn(&format!("{peer}: {} {}", refusal.status, refusal.reason));
            let _ = refuse(&mut stream, &refusal);
            linger(&mut stream);
            return;
        }
    };
    shared.counters.requests.fetch_add(1, Ordering::Relaxed);
    if let Err(refusal) = route(&mut stream, &request, shared) {
        if refusal.status == CLOSED {
            // The answer had begun: nothing more can be said on it.
            return;
        }
        let counter = match refusal.status {
            401 => &shared.counters.unauthorized,
            500.. => &shared.counters.refused,
            _ => &shared.counters.bad_requests,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        shared.warn(&format!(
            "{peer}: {} {}: {}",
            refusal.status, request.path, refusal.reason
        ));
        let _ = refuse(&mut stream, &refusal);
        linger(&mut stream);
    }
}

/// Whether `given` is the token, compared in time independent of where
/// they differ.
fn token_matches(want: &str, given: Option<&str>) -> bool {
    let Some(given) = given else { return false };
    let (a, b) = (want.as_bytes(), given.as_bytes());
    let mut diff = u8::from(a.len() != b.len());
    for (i, x) in a.iter().enumerate() {
        diff |= x ^ b.get(i).copied().unwrap_or(0);
    }
    diff == 0
}

/// One request's answer; a refusal for the caller to send.
fn route(stream: &mut TcpStream, req: &Request, shared: &Arc<Shared>) -> Result<(), Refusal> {
    // Browsers ask for it on their own, without the page's query (so
    // without the token): no icon, no log line, nothing told.
    if (req.method, req.path.as_str()) == (Method::Get, "/favicon.ico") {
        return respond(stream, 204, "image/x-icon", "", b"").map_err(closed);
    }
    if let Some(want) = &shared.config.token {
        if !token_matches(want, req.token.as_deref()) {
            return Err(Refusal::new(401, "no token, or not this view's"));
        }
    }
    let io = closed;
    match (req.method, req.path.as_str()) {
        (Method::Get, "/" | "/index.html") => {
            respond(stream, 200, "text/html; charset=utf-8", "", PAGE.as_bytes()).map_err(io)
        }
        (Method::Get, "/stream.mjpg") => mjpeg::stream(stream, shared),
        (Method::Get, "/stats") => {
            let server = stats_of(&shared.counters);
            let source = shared.lock().status.clone();
            let body = json!({
                "stream": source,
                "view": {
                    "viewers": server.viewers,
                    "connections": server.connections,
                    "parts_sent": server.parts_sent,
                    "viewer_skips": server.viewer_skips,
                    "viewers_stalled": server.viewers_stalled,
                    "refused": server.refused,
                    "bad_requests": server.bad_requests,
                    "unauthorized": server.unauthorized,
                    "detections": server.detections,
                    "snapshots": server.snapshots,
                }
            });
            respond(
                stream,
                200,
                "application/json",
                "",
                body.to_string().as_bytes(),
            )
            .map_err(io)
        }
        (Method::Post, "/detections") => {
            let d = Detections::from_json(&req.body).map_err(|e| Refusal::new(400, e))?;
            let json: Arc<str> = d.to_json().into();
            shared.lock().detections = Some(json);
            shared.counters.detections.fetch_add(1, Ordering::Relaxed);
            respond(stream, 204, "text/plain", "", b"").map_err(io)
        }
        (Method::Get, "/detections") => {
            let json = shared.lock().detections.clone();
            let body = json.as_deref().unwrap_or("null").to_owned();
            respond(stream, 200, "application/json", "", body.as_bytes()).map_err(io)
        }
        (Method::Get, "/snapshot.jpg") => snapshot(stream, shared),
        (_, "/" | "/index.html" | "/stream.mjpg" | "/stats" | "/snapshot.jpg") => Err(
            Refusal::new(405, format!("{:?} not allowed here", req.method)),
        ),
        (_, path) => Err(Refusal::new(404, format!("no page {path:?}"))),
    }
}

/// The next frame at full quality, asked of the producer; 503 when none
/// comes in time (no frames flowing).
fn snapshot(stream: &mut TcpStream, shared: &Arc<Shared>) -> Result<(), Refusal> {
    let waiting = &shared.counters.snapshot_waiting;
    let mut st = shared.lock();
    let since = st.snapshot.as_ref().map_or(0, |p| p.number);
    waiting.fetch_add(1, Ordering::Relaxed);
    let deadline = Instant::now() + shared.config.snapshot_timeout;
    let picture = loop {
        match &st.snapshot {
            Some(p) if p.number > since => break Some(p.clone()),
            _ => {}
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || st.stopping {
            break None;
        }
        st = shared
            .changed
            .wait_timeout(st, left)
            .unwrap_or_else(|p| p.into_inner())
            .0;
    };
    drop(st);
    waiting.fetch_sub(1, Ordering::Relaxed);
    let Some(p) = picture else {
        return Err(Refusal::new(503, "no frame came in time for a snapshot"));
    };
    shared.counters.snapshots.fetch_add(1, Ordering::Relaxed);
    let extra = format!(
        "Content-Disposition: inline; filename=\"zerocam-{}.jpg\"\r\nX-Sequence: {}\r\n",
        p.sequence, p.sequence
    );
    respond(stream, 200, "image/jpeg", &extra, &p.jpeg).map_err(closed)
}
