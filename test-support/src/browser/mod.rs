//! A headless Chromium for tests, driven over the Chrome DevTools Protocol
//! on a WebSocket: open a page, evaluate JavaScript, wait for a condition,
//! take a screenshot and read its pixels.
//!
//! Chromium (`chromium`, or the program `$ZEROCAM_CHROMIUM` names) runs
//! headless with a fresh profile in a temporary folder; its stderr goes to
//! a file there, and the last lines of it come with launch errors. Every
//! command waits at most 30 s for its answer, so a hung browser fails the
//! test instead of hanging it. Chromium makes background requests of its
//! own: run browser tests inside [`crate::netns::in_private_network`].
//!
//! ```no_run
//! # fn main() -> Result<(), zerocam_test_support::browser::BrowserError> {
//! use std::time::Duration;
//! use zerocam_test_support::browser::Browser;
//!
//! let mut browser = Browser::launch()?;
//! let tab = browser.open("http://127.0.0.1:8080/", 640, 480)?;
//! browser.wait_for(&tab, "document.readyState === 'complete'", Duration::from_secs(10))?;
//! let shot = browser.screenshot(&tab)?;
//! assert_eq!(shot.rgb(10, 10), [255, 255, 255]);
//! browser.close(tab)?;
//! # Ok(())
//! # }
//! ```

mod process;
mod screenshot;

use std::net::TcpStream;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Value};
use tungstenite::{Message, WebSocket};

use process::Process;
pub use screenshot::Screenshot;

/// How long one DevTools command may wait for its answer.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one blocking read on the socket lasts before the deadline and
/// the process are checked again.
const READ_SLICE: Duration = Duration::from_millis(500);

/// What went wrong driving Chromium.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BrowserError {
    /// The browser program could not be started.
    #[error("cannot start {program}: {source}")]
    Spawn {
        /// The program run (`chromium` or `$ZEROCAM_CHROMIUM`).
        program: String,
        /// Why not.
        source: std::io::Error,
    },
    /// A file operation around the browser failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done, with the path.
        what: String,
        /// Why it failed.
        source: std::io::Error,
    },
    /// The browser started but never offered its DevTools endpoint.
    #[error("{program} did not come up: {reason}; its stderr ends with:\n{stderr}")]
    Startup {
        /// The program run.
        program: String,
        /// What happened instead (it exited, or the port file never came).
        reason: String,
        /// The last lines of its stderr.
        stderr: String,
    },
    /// The WebSocket to the browser failed (connect, handshake, send or read).
    #[error("DevTools {method}: the WebSocket failed: {message}")]
    WebSocket {
        /// The CDP method under way, or `connect`.
        method: String,
        /// The error.
        message: String,
    },
    /// The browser exited while a command waited for its answer.
    #[error("DevTools {method}: the browser exited ({status}); its stderr ends with:\n{stderr}")]
    Exited {
        /// The CDP method under way.
        method: String,
        /// How the browser exited.
        status: ExitStatus,
        /// The last lines of its stderr.
        stderr: String,
    },
    /// A command got no answer in time.
    #[error("DevTools {method}: no answer within {waited:?}")]
    Timeout {
        /// The CDP method sent.
        method: String,
        /// How long it waited.
        waited: Duration,
    },
    /// The browser answered a command with an error.
    #[error("DevTools {method} failed: {message} (code {code})")]
    Cdp {
        /// The CDP method sent.
        method: String,
        /// The protocol's error code.
        code: i64,
        /// The protocol's error message.
        message: String,
    },
    /// The browser's answer was not what the protocol promises.
    #[error("DevTools {method}: unexpected answer: {answer}")]
    Protocol {
        /// The CDP method sent.
        method: String,
        /// The answer (or the part of it that did not parse).
        answer: String,
    },
    /// A navigation failed (`Page.navigate` answered with `errorText`).
    #[error("navigating to {url} failed: {error}")]
    Navigate {
        /// The URL.
        url: String,
        /// Chromium's error text, e.g. `net::ERR_CONNECTION_REFUSED`.
        error: String,
    },
    /// Evaluating an expression threw.
    #[error("evaluating `{expression}` threw: {exception}")]
    Script {
        /// The expression.
        expression: String,
        /// The exception's description.
        exception: String,
    },
    /// [`Browser::wait_for`]'s expression never became `true`.
    #[error("`{expression}` was not true within {timeout:?}; its last value: {last}")]
    WaitTimeout {
        /// The expression polled.
        expression: String,
        /// How long it was polled.
        timeout: Duration,
        /// Its last value as JSON, or the error evaluating it gave.
        last: String,
    },
    /// A screenshot could not be decoded.
    #[error("the screenshot cannot be decoded as PNG: {message}")]
    Png {
        /// Why.
        message: String,
    },
}

/// A headless Chromium and the WebSocket to its browser-level DevTools
/// target. Dropping it closes the browser (killing it if it does not exit
/// within a second) and removes its temporary profile.
pub struct Browser {
    socket: WebSocket<TcpStream>,
    /// Dropped after the socket (fields drop in order): kills Chromium,
    /// removes the temporary folder.
    process: Process,
    next_id: u64,
}

/// A tab (a page target) opened by [`Browser::open`], attached with a
/// flattened session.
#[derive(Debug)]
pub struct Tab {
    target_id: String,
    session_id: String,
}

impl Tab {
    /// The DevTools target id of the tab.
    pub fn target_id(&self) -> &str {
        &self.target_id
    }
}

impl Browser {
    /// Launches `chromium` (or `$ZEROCAM_CHROMIUM`) headless with a fresh
    /// temporary profile, and connects to its DevTools endpoint.
    pub fn launch() -> Result<Browser, BrowserError> {
        let program = std::env::var("ZEROCAM_CHROMIUM")
            .ok()
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| "chromium".to_owned());
        let (mut process, endpoint) = Process::launch(program)?;
        let url = format!("ws://127.0.0.1:{}{}", endpoint.port, endpoint.path);
        let socket = match connect(&url) {
            Ok(socket) => socket,
            Err(message) => {
                let stderr = process.stderr_tail();
                let exited = process
                    .exited()
                    .map(|s| format!(" (the browser exited: {s})"))
                    .unwrap_or_default();
                return Err(BrowserError::WebSocket {
                    method: "connect".to_owned(),
                    message: format!("{url}: {message}{exited}; its stderr ends with:\n{stderr}"),
                });
            }
        };
        Ok(Browser {
            socket,
            process,
            next_id: 1,
        })
    }

    /// Opens a new tab at `url` with a viewport of `width` x `height` CSS
    /// pixels at device scale 1. It returns once the navigation has been
    /// committed, not when the page has loaded: use [`Browser::wait_for`].
    pub fn open(&mut self, url: &str, width: u32, height: u32) -> Result<Tab, BrowserError> {
        self.open_in(None, url, width, height)
    }

    /// As [`open`](Self::open), in a browser context of its own (as a
    /// separate profile: its own cookies and its own connection pool, so
    /// pages that each hold a long-lived connection do not queue behind
    /// the browser's six connections per host).
    pub fn open_isolated(
        &mut self,
        url: &str,
        width: u32,
        height: u32,
    ) -> Result<Tab, BrowserError> {
        let method = "Target.createBrowserContext";
        let created = self.call(None, method, json!({ "disposeOnDetach": true }))?;
        let context = string(&created, "browserContextId", method)?;
        self.open_in(Some(&context), url, width, height)
    }

    fn open_in(
        &mut self,
        context: Option<&str>,
        url: &str,
        width: u32,
        height: u32,
    ) -> Result<Tab, BrowserError> {
        let mut params = json!({ "url": "about:blank" });
        if let Some(c) = context {
            params["browserContextId"] = json!(c);
        }
        let created = self.call(None, "Target.createTarget", params)?;
        let target_id = string(&created, "targetId", "Target.createTarget")?;
        let tab = self.attach(&target_id).and_then(|session_id| {
            let tab = Tab {
                target_id: target_id.clone(),
                session_id,
            };
            self.prepare(&tab, url, width, height)?;
            Ok(tab)
        });
        if tab.is_err() {
            // Best effort: the error at hand is the one worth reporting.
            let _ = self.call(None, "Target.closeTarget", json!({ "targetId": target_id }));
        }
        tab
    }

    fn attach(&mut self, target_id: &str) -> Result<String, BrowserError> {
        let method = "Target.attachToTarget";
        let attached = self.call(
            None,
            method,
            json!({ "targetId": target_id, "flatten": true }),
        )?;
        string(&attached, "sessionId", method)
    }

    fn prepare(
        &mut self,
        tab: &Tab,
        url: &str,
        width: u32,
        height: u32,
    ) -> Result<(), BrowserError> {
        let session = Some(tab.session_id.as_str());
        let metrics = json!({
            "width": width,
            "height": height,
            "deviceScaleFactor": 1,
            "mobile": false,
        });
        self.call(session, "Emulation.setDeviceMetricsOverride", metrics)?;
        self.call(session, "Page.enable", json!({}))?;
        let navigated = self.call(session, "Page.navigate", json!({ "url": url }))?;
        match navigated.get("errorText").and_then(Value::as_str) {
            Some(error) if !error.is_empty() => Err(BrowserError::Navigate {
                url: url.to_owned(),
                error: error.to_owned(),
            }),
            _ => Ok(()),
        }
    }

    /// Evaluates a JavaScript expression in the tab (awaiting it if it is a
    /// promise), returning its value as JSON (`null` for `undefined`).
    pub fn eval(&mut self, tab: &Tab, expression: &str) -> Result<Value, BrowserError> {
        let params = json!({
            "expression": expression,
            "awaitPromise": true,
            "returnByValue": true,
        });
        let mut answer = self.call(Some(&tab.session_id), "Runtime.evaluate", params)?;
        if let Some(details) = answer.get("exceptionDetails") {
            let exception = details
                .pointer("/exception/description")
                .and_then(Value::as_str)
                .or_else(|| details.get("text").and_then(Value::as_str))
                .map_or_else(|| details.to_string(), str::to_owned);
            return Err(BrowserError::Script {
                expression: expression.to_owned(),
                exception,
            });
        }
        Ok(answer
            .pointer_mut("/result/value")
            .map(Value::take)
            .unwrap_or(Value::Null))
    }

    /// Polls `expression` every 100 ms until it is JSON `true` or `timeout`
    /// passes. Errors from the page (the expression throwing, the context
    /// going away during a navigation) count as "not yet"; the timeout's
    /// error names the expression and its last value or error. Errors of
    /// the browser itself (exit, hung socket) end the wait at once.
    pub fn wait_for(
        &mut self,
        tab: &Tab,
        expression: &str,
        timeout: Duration,
    ) -> Result<(), BrowserError> {
        let start = Instant::now();
        loop {
            let last = match self.eval(tab, expression) {
                Ok(Value::Bool(true)) => return Ok(()),
                Ok(value) => value.to_string(),
                Err(e @ (BrowserError::Script { .. } | BrowserError::Cdp { .. })) => {
                    format!("(error: {e})")
                }
                Err(e) => return Err(e),
            };
            if start.elapsed() >= timeout {
                return Err(BrowserError::WaitTimeout {
                    expression: expression.to_owned(),
                    timeout,
                    last,
                });
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// A PNG screenshot of the tab's viewport, decoded.
    pub fn screenshot(&mut self, tab: &Tab) -> Result<Screenshot, BrowserError> {
        let method = "Page.captureScreenshot";
        let shot = self.call(Some(&tab.session_id), method, json!({ "format": "png" }))?;
        let data = string(&shot, "data", method)?;
        let png = base64::engine::general_purpose::STANDARD
            .decode(data.as_bytes())
            .map_err(|e| BrowserError::Protocol {
                method: method.to_owned(),
                answer: format!("`data` is not base64: {e}"),
            })?;
        Screenshot::decode(png)
    }

    /// Closes the tab.
    pub fn close(&mut self, tab: Tab) -> Result<(), BrowserError> {
        self.call(
            None,
            "Target.closeTarget",
            json!({ "targetId": tab.target_id }),
        )?;
        Ok(())
    }

    /// Sends one command (to the browser target, or to a tab's session)
    /// and returns its `result`, skipping events and answers to other ids.
    fn call(
        &mut self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<Value, BrowserError> {
        let id = self.next_id;
        self.next_id += 1;
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(session) = session {
            message["sessionId"] = Value::from(session);
        }
        self.socket
            .send(Message::text(message.to_string()))
            .map_err(|e| self.socket_error(method, &e))?;
        let start = Instant::now();
        loop {
            let text = match self.socket.read() {
                Ok(Message::Text(text)) => text,
                Ok(_) => continue, // pings are answered by tungstenite
                Err(tungstenite::Error::Io(e))
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    if let Some(status) = self.process.exited() {
                        return Err(self.exited(method, status));
                    }
                    if start.elapsed() >= COMMAND_TIMEOUT {
                        return Err(BrowserError::Timeout {
                            method: method.to_owned(),
                            waited: COMMAND_TIMEOUT,
                        });
                    }
                    continue;
                }
                Err(e) => return Err(self.socket_error(method, &e)),
            };
            let mut answer: Value =
                serde_json::from_str(text.as_str()).map_err(|e| BrowserError::Protocol {
                    method: method.to_owned(),
                    answer: format!("{e}: {}", text.as_str()),
                })?;
            if answer.get("id").and_then(Value::as_u64) != Some(id) {
                continue; // an event, or the late answer to a command that timed out
            }
            if let Some(error) = answer.get("error") {
                return Err(BrowserError::Cdp {
                    method: method.to_owned(),
                    code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                    message: error
                        .get("message")
                        .and_then(Value::as_str)
                        .map_or_else(|| error.to_string(), str::to_owned),
                });
            }
            return Ok(answer
                .get_mut("result")
                .map(Value::take)
                .unwrap_or(Value::Null));
        }
    }

    /// A socket error, or [`BrowserError::Exited`] if the browser is gone.
    fn socket_error(&mut self, method: &str, e: &tungstenite::Error) -> BrowserError {
        // A browser that just crashed may not have been reaped yet.
        for _ in 0..10 {
            if let Some(status) = self.process.exited() {
                return self.exited(method, status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        BrowserError::WebSocket {
            method: method.to_owned(),
            message: e.to_string(),
        }
    }

    fn exited(&self, method: &str, status: ExitStatus) -> BrowserError {
        BrowserError::Exited {
            method: method.to_owned(),
            status,
            stderr: self.process.stderr_tail(),
        }
    }
}

impl Drop for Browser {
    /// Asks the browser to close, gives it a second, then kills it; the
    /// temporary profile is removed when the process handle drops.
    fn drop(&mut self) {
        let close = json!({ "id": self.next_id, "method": "Browser.close" });
        if self.socket.send(Message::text(close.to_string())).is_ok() {
            self.process.stop(Duration::from_secs(1));
        }
        let _ = self.socket.close(None);
        let _ = self.socket.flush();
    }
}

/// Connects and does the WebSocket handshake with `url` (`ws://127.0.0.1:PORT/...`).
fn connect(url: &str) -> Result<WebSocket<TcpStream>, String> {
    let addr = url
        .strip_prefix("ws://")
        .and_then(|rest| rest.split('/').next())
        .ok_or_else(|| "not a ws:// URL".to_owned())?;
    let stream = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(READ_SLICE))
        .and_then(|()| stream.set_write_timeout(Some(COMMAND_TIMEOUT)))
        .and_then(|()| stream.set_nodelay(true))
        .map_err(|e| e.to_string())?;
    let start = Instant::now();
    let mut handshake = tungstenite::client(url, stream);
    loop {
        match handshake {
            Ok((socket, _response)) => return Ok(socket),
            Err(tungstenite::HandshakeError::Interrupted(mid))
                if start.elapsed() < COMMAND_TIMEOUT =>
            {
                handshake = mid.handshake();
            }
            Err(tungstenite::HandshakeError::Interrupted(_)) => {
                return Err(format!("no handshake within {COMMAND_TIMEOUT:?}"));
            }
            Err(tungstenite::HandshakeError::Failure(e)) => return Err(e.to_string()),
        }
    }
}

/// The string field `key` of a command's result.
fn string(result: &Value, key: &str, method: &str) -> Result<String, BrowserError> {
    result
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| BrowserError::Protocol {
            method: method.to_owned(),
            answer: format!("no string `{key}` in {result}"),
        })
}
