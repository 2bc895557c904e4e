//! Posting a model's boxes to a view from another process.
//!
//! One small JSON `POST` to loopback (or the board's address): written on
//! `std::net` rather than with an HTTP client crate, as the view's own
//! examples need nothing more (docs/view.md).

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use super::{Detections, ViewError};

/// How long a post may take, connecting included.
const TIMEOUT: Duration = Duration::from_secs(2);

/// Posts `detections` to the view at `addr` (`127.0.0.1:8080`), with its
/// token if it wants one.
///
/// # Errors
/// [`ViewError::Post`]: the view cannot be reached in time, or answers
/// other than 204 (its reply's first line and body say why).
pub fn post_detections(
    addr: &str,
    token: Option<&str>,
    detections: &Detections,
) -> Result<(), ViewError> {
    let fail = |reason: String| ViewError::Post {
        addr: addr.to_owned(),
        reason,
    };
    let target = addr
        .to_socket_addrs()
        .map_err(|e| fail(e.to_string()))?
        .next()
        .ok_or_else(|| fail("no address".into()))?;
    let mut s = TcpStream::connect_timeout(&target, TIMEOUT).map_err(|e| fail(e.to_string()))?;
    s.set_read_timeout(Some(TIMEOUT))
        .and_then(|()| s.set_write_timeout(Some(TIMEOUT)))
        .map_err(|e| fail(e.to_string()))?;
    let body = detections.to_json();
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    let head = format!(
        "POST /detections HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n{auth}Connection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes())
        .and_then(|()| s.write_all(body.as_bytes()))
        .map_err(|e| fail(e.to_string()))?;
    // The reply is a few hundred bytes at most.
    let mut reply = Vec::new();
    s.take(4096)
        .read_to_end(&mut reply)
        .map_err(|e| fail(e.to_string()))?;
    let reply = String::from_utf8_lossy(&reply);
    let status = reply.lines().next().unwrap_or("");
    if status.split(' ').nth(1) == Some("204") {
        Ok(())
    } else {
        let body = reply.split("\r\n\r\n").nth(1).unwrap_or("").trim();
        Err(fail(format!("{status}: {body}")))
    }
}
