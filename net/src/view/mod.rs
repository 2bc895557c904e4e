//! A live view in the browser: the camera's picture as MJPEG over HTTP, a
//! page that draws it with a model's boxes over it, the stream's figures
//! each second, and a full-resolution snapshot.
//!
//! [`ViewServer`] owns the HTTP side: it listens (127.0.0.1 unless told
//! otherwise), answers each connection on a thread of its own, and hands
//! every MJPEG viewer the newest picture the producer gave it. The
//! producer (zerocam's CLI: `zerocam view`, `zerocam serve --http`) encodes
//! a JPEG only while a viewer is connected ([`ViewServer::wants_frame`]) and
//! calls [`ViewServer::publish`]; publishing swaps one shared buffer and
//! never waits for a viewer, so a slow or vanished browser never stalls
//! the capture: it skips pictures (counted) or is dropped.
//!
//! | route | what |
//! | --- | --- |
//! | `GET /` | the page (one static file, no CDN: boards may be offline) |
//! | `GET /stream.mjpg` | `multipart/x-mixed-replace` JPEGs, each part with `X-Sequence` (the frame's) and `X-Detections` (the newest boxes posted) |
//! | `GET /stats` | the stream's figures and the server's, JSON |
//! | `POST /detections` | a model's boxes for a frame sequence, JSON ([`Detections`]) |
//! | `GET /detections` | the newest boxes posted, JSON |
//! | `GET /snapshot.jpg` | the next frame at full resolution, JPEG quality 95 |
//!
//! With a token ([`ViewConfig::token`]) every route wants it, as
//! `?token=` or `Authorization: Bearer`. Every request is bounded: its
//! head (8 KiB, 32 headers), its body (64 KiB), its time (5 s), the
//! connections at once (64) and the MJPEG viewers at once (32). docs/view.md
//! says why the connection handling is written here over `httparse`.

mod client;
mod config;
mod detections;
mod error;
mod mjpeg;
mod request;
mod routes;
mod server;

pub use client::post_detections;
pub use config::ViewConfig;
pub use detections::{Detection, Detections};
pub use error::ViewError;
pub use server::{ViewServer, ViewServerStats, ViewStatus};
