//! The server thread's side: a mount path checked, each new media's
//! `appsrc` bounded and handed to the feed, each client's plays counted.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Instant;

use gstreamer as gst;
use gstreamer::prelude::*;
use gstreamer_app as gst_app;
use gstreamer_rtsp_server as rtsp;
use gstreamer_rtsp_server::prelude::*;

use super::RtspError;

/// Clients connected at once; more are closed as they connect.
pub(super) const MAX_CLIENTS: usize = 16;

/// What the server's thread and the feeding side share.
#[derive(Default)]
pub(super) struct Shared {
    /// The media being fed, its number and its `appsrc` (`None`: no media
    /// prepared).
    pub media: Option<(rtsp::RTSPMedia, u64, gst_app::AppSrc)>,
    /// When the current media was configured.
    pub configured_at: Option<Instant>,
    /// Bumped for each new media and each client that starts playing: the
    /// feeding side then asks its encoder for a keyframe.
    pub generation: u64,
    /// Clients playing.
    pub playing: usize,
    /// Clients connected (playing or not).
    pub connected: usize,
    /// Medias configured so far.
    pub medias: u64,
}

/// A lock whatever a panicked holder left.
pub(super) fn lock(m: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whether `path` is a mount path: `/` then URL-safe characters.
pub(super) fn check_path(path: &str) -> Result<(), RtspError> {
    let ok = path.len() > 1
        && path.starts_with('/')
        && !path.contains("//")
        && path
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(RtspError::Path {
            path: path.to_owned(),
        })
    }
}

/// A new media: its `appsrc` bounded and handed to the feed, a keyframe
/// asked for.
pub(super) fn configure(shared: &Weak<Mutex<Shared>>, media: &rtsp::RTSPMedia, max_bytes: u64) {
    let Some(shared) = shared.upgrade() else {
        return;
    };
    let appsrc = media
        .element()
        .downcast::<gst::Bin>()
        .ok()
        .and_then(|bin| bin.by_name("src"))
        .and_then(|e| e.downcast::<gst_app::AppSrc>().ok());
    let Some(appsrc) = appsrc else {
        log::warn!("rtsp: the media has no appsrc named src");
        return;
    };
    appsrc.set_max_bytes(max_bytes);
    appsrc.set_block(false);
    let mut s = lock(&shared);
    s.medias += 1;
    s.generation += 1;
    s.configured_at = Some(Instant::now());
    s.media = Some((media.clone(), s.medias, appsrc));
    log::info!("rtsp: media {} configured", s.medias);
    let weak = Arc::downgrade(&shared);
    let number = s.medias;
    media.connect_unprepared(move |_| {
        if let Some(shared) = weak.upgrade() {
            let mut s = lock(&shared);
            if s.media.as_ref().is_some_and(|(_, n, _)| *n == number) {
                s.media = None;
                log::info!("rtsp: media {number} unprepared");
            }
        }
    });
}

/// A client's plays counted while it plays.
pub(super) fn track(shared: &Weak<Mutex<Shared>>, client: &rtsp::RTSPClient) {
    {
        let Some(strong) = shared.upgrade() else {
            return;
        };
        let mut s = lock(&strong);
        if s.connected >= MAX_CLIENTS {
            drop(s);
            log::warn!("rtsp: a client refused: {MAX_CLIENTS} connected already");
            client.close();
            return;
        }
        s.connected += 1;
    }
    {
        let shared = shared.clone();
        client.connect_closed(move |_| {
            if let Some(shared) = shared.upgrade() {
                let mut s = lock(&shared);
                s.connected = s.connected.saturating_sub(1);
            }
        });
    }
    let playing = Arc::new(AtomicBool::new(false));
    let stop = {
        let (shared, playing) = (shared.clone(), playing.clone());
        move || {
            if playing.swap(false, Ordering::SeqCst) {
                if let Some(shared) = shared.upgrade() {
                    let mut s = lock(&shared);
                    s.playing = s.playing.saturating_sub(1);
                    log::info!("rtsp: a client stopped, {} playing", s.playing);
                }
            }
        }
    };
    {
        let (shared, playing) = (shared.clone(), playing.clone());
        client.connect_play_request(move |_, _| {
            if !playing.swap(true, Ordering::SeqCst) {
                if let Some(shared) = shared.upgrade() {
                    let mut s = lock(&shared);
                    s.playing += 1;
                    s.generation += 1;
                    log::info!("rtsp: a client plays, {} playing", s.playing);
                }
            }
        });
    }
    let teardown = stop.clone();
    client.connect_teardown_request(move |_, _| teardown());
    client.connect_closed(move |_| stop());
}
