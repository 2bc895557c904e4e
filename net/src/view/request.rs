//! One HTTP/1.1 request read whole within bounds, and the responses the
//! view writes. Parsing is `httparse`'s; what is written here is the part a
//! small server must bound itself: how much is read, for how long.

use std::io::Read;
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::Instant;

use nix::errno::Errno;
use nix::sys::socket::{send, MsgFlags};

/// The largest request head (request line and headers).
pub const MAX_HEAD: usize = 8 * 1024;
/// The most headers one request may have.
pub const MAX_HEADERS: usize = 32;
/// The largest request body (a detections post).
pub const MAX_BODY: usize = 64 * 1024;

/// The methods the view answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `GET`.
    Get,
    /// `POST`.
    Post,
}

/// A request read whole.
#[derive(Debug)]
pub struct Request {
    /// The method.
    pub method: Method,
    /// The path, without the query.
    pub path: String,
    /// `?token=` or `Authorization: Bearer`, whichever came.
    pub token: Option<String>,
    /// The body (empty for a `GET`).
    pub body: Vec<u8>,
}

/// Why a request was refused: the status to answer and the reason to log.
#[derive(Debug)]
pub struct Refusal {
    /// The HTTP status.
    pub status: u16,
    /// What was wrong (the response body and the log line).
    pub reason: String,
}

impl Refusal {
    /// `status` for `reason`.
    pub fn new(status: u16, reason: impl Into<String>) -> Refusal {
        Refusal {
            status,
            reason: reason.into(),
        }
    }
}

/// Reads one request from `stream` by `deadline`; `Ok(None)` when the peer
/// closed before sending anything.
pub fn read_request(stream: &mut TcpStream, deadline: Instant) -> Result<Option<Request>, Refusal> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    let (head_len, method, target, length, token_header) = loop {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(&buf) {
            Ok(httparse::Status::Complete(len)) => {
                let method = match req.method {
                    Some("GET") => Method::Get,
                    Some("POST") => Method::Post,
                    Some(m) => return Err(Refusal::new(405, format!("method {m} not allowed"))),
                    None => return Err(Refusal::new(400, "no method")),
                };
                let target = req.path.unwrap_or("/").to_owned();
                let mut length = None;
                let mut token = None;
                for h in req.headers.iter() {
                    if h.name.eq_ignore_ascii_case("content-length") {
                        let n = std::str::from_utf8(h.value)
                            .ok()
                            .and_then(|v| v.trim().parse::<usize>().ok())
                            .ok_or_else(|| Refusal::new(400, "a bad Content-Length"))?;
                        length = Some(n);
                    } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                        return Err(Refusal::new(411, "a chunked body: send Content-Length"));
                    } else if h.name.eq_ignore_ascii_case("authorization") {
                        token = std::str::from_utf8(h.value)
                            .ok()
                            .and_then(|v| v.strip_prefix("Bearer "))
                            .map(|t| t.trim().to_owned());
                    }
                }
                break (len, method, target, length, token);
            }
            Ok(httparse::Status::Partial) if buf.len() >= MAX_HEAD => {
                return Err(Refusal::new(
                    431,
                    format!("a request head over {MAX_HEAD} bytes"),
                ))
            }
            Ok(httparse::Status::Partial) => {}
            Err(httparse::Error::TooManyHeaders) => {
                return Err(Refusal::new(
                    431,
                    format!("more than {MAX_HEADERS} headers"),
                ))
            }
            Err(e) => return Err(Refusal::new(400, format!("a malformed request: {e}"))),
        }
        let want = (MAX_HEAD - buf.len()).min(chunk.len());
        let n = read_by(stream, &mut chunk[..want], deadline)?;
        if n == 0 {
            return if buf.is_empty() {
                Ok(None)
            } else {
                Err(Refusal::new(400, "the connection closed mid-request"))
            };
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let body = match (method, length) {
        (_, Some(n)) if n > MAX_BODY => {
            return Err(Refusal::new(
                413,
                format!("a body of {n} bytes, more than {MAX_BODY}"),
            ))
        }
        (Method::Post, None) => return Err(Refusal::new(411, "a POST without Content-Length")),
        (_, Some(n)) => {
            let mut body = buf.split_off(head_len);
            body.truncate(n);
            while body.len() < n {
                let want = (n - body.len()).min(chunk.len());
                let got = read_by(stream, &mut chunk[..want], deadline)?;
                if got == 0 {
                    return Err(Refusal::new(400, "the connection closed mid-body"));
                }
                body.extend_from_slice(&chunk[..got]);
            }
            body
        }
        (Method::Get, None) => Vec::new(),
    };
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let token = query
        .split('&')
        .find_map(|p| p.strip_prefix("token="))
        .map(str::to_owned)
        .or(token_header);
    Ok(Some(Request {
        method,
        path: path.to_owned(),
        token,
        body,
    }))
}

/// One read, by `deadline` (a 408 after it).
fn read_by(stream: &mut TcpStream, buf: &mut [u8], deadline: Instant) -> Result<usize, Refusal> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(Refusal::new(408, "the request did not arrive in time"));
    }
    stream
        .set_read_timeout(Some(left))
        .map_err(|e| Refusal::new(500, e.to_string()))?;
    match stream.read(buf) {
        Ok(n) => Ok(n),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            Err(Refusal::new(408, "the request did not arrive in time"))
        }
        Err(e) => Err(Refusal::new(400, format!("reading the request: {e}"))),
    }
}

/// The reason phrase of the statuses the view sends.
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Internal Server Error",
    }
}

/// Writes all of `buf` with `MSG_NOSIGNAL`: a peer that went away is an
/// `EPIPE` error, never a `SIGPIPE` to a process that embeds the view and
/// kept the signal's default. The socket's write timeout bounds each send.
pub fn send_all(stream: &TcpStream, mut buf: &[u8]) -> std::io::Result<()> {
    while !buf.is_empty() {
        match send(stream.as_raw_fd(), buf, MsgFlags::MSG_NOSIGNAL) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => buf = &buf[n..],
            Err(Errno::EINTR) => {}
            Err(Errno::EAGAIN) => return Err(std::io::ErrorKind::TimedOut.into()),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Writes a whole response (the connection closes after it).
pub fn respond(
    stream: &mut TcpStream,
    status: u16,
    content_type: &str,
    extra: &str,
    body: &[u8],
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n{extra}\r\n",
        reason(status),
        body.len()
    );
    send_all(stream, head.as_bytes())?;
    send_all(stream, body)
}

/// Writes a refusal as plain text.
pub fn refuse(stream: &mut TcpStream, refusal: &Refusal) -> std::io::Result<()> {
    let extra = if refusal.status == 401 {
        "WWW-Authenticate: Bearer\r\n"
    } else {
        ""
    };
    respond(
        stream,
        refusal.status,
        "text/plain; charset=utf-8",
        extra,
        format!("{}\n", refusal.reason).as_bytes(),
    )
}
