//! [`RtspServer`]: the server on its own thread, and the feed of its shared
//! media from the capture's thread.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use gstreamer as gst;
use gstreamer::glib;
use gstreamer::prelude::*;
use gstreamer_app as gst_app;
use gstreamer_rtsp_server as rtsp;
use gstreamer_rtsp_server::prelude::*;
use zerocam_capture::Frame;
use zerocam_encode::encoder::EncoderConfig;
use zerocam_encode::{Codec, EncodeError, EncoderChoice, Packet};

use super::media::{check_path, configure, lock, track, Shared};
use super::RtspError;
use crate::outputs::{Encoded, Given, Output, OutputError, SharedEncoder, Takes, Want};

/// The media every client shares: zerocam's access units, parsed (the
/// parser puts SPS/PPS at the head of every keyframe's access unit, and the
/// payloader learns them for the SDP) and packetised as they are.
///
/// Not the payloader's own `config-interval=-1`: it inserts SPS/PPS before
/// every IDR *slice*, so a keyframe encoded in several slices (x264enc's
/// `tune=zerolatency` makes one per thread) reaches the client with
/// parameter sets between its slices. FFmpeg's H.264 parser takes a
/// parameter set after a slice as the start of a new access unit (H.264
/// 7.4.1.2.3 puts them before the first slice), so it split each keyframe
/// into two pictures of the same time, the second with its top concealed,
/// and every P-frame of the GOP predicted its top slice from that broken
/// reference (docs/view.md, "RTSP").
const LAUNCH: &str = "( appsrc name=src is-live=true format=time do-timestamp=false \
     caps=video/x-h264,stream-format=byte-stream,alignment=au \
     ! h264parse config-interval=-1 ! rtph264pay name=pay0 pt=96 config-interval=0 )";

/// How long a newly configured media is fed while no client plays yet:
/// the server answers `DESCRIBE` only once the payloader has seen a first
/// access unit (its caps carry the parameter sets of the SDP).
const PREPARE_GRACE: Duration = Duration::from_secs(10);

/// The elements the media needs, and where they come from.
const ELEMENTS: [(&str, &str); 3] = [
    ("appsrc", "gst-plugins-base"),
    ("h264parse", "gst-plugins-bad"),
    ("rtph264pay", "gst-plugins-good"),
];

/// How to serve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RtspConfig {
    /// Where to listen (`127.0.0.1:8554`; port 0: any free port, see
    /// [`RtspServer::url`]).
    pub addr: SocketAddr,
    /// The mount path (`/cam`).
    pub path: String,
    /// The H.264 encoder. Frames given by reference ([`RtspServer::push`])
    /// need one that keeps nothing: [`EncoderChoice::Auto`] then means the
    /// software encoder.
    pub encoder: EncoderChoice,
    /// Frames between keyframes (a client that joins a running stream has
    /// one made for it anyway, so this bounds a client's recovery from a
    /// packet it lost on its way).
    pub gop: u32,
    /// The frame rate, a hint for the encoder's rate control.
    pub fps: u32,
    /// The most bytes waiting in the media's `appsrc`; past it access
    /// units are dropped (and counted) rather than the caller blocked.
    pub max_queue_bytes: u64,
}

impl RtspConfig {
    /// `path` at `addr`, any encoder, a keyframe each 30 frames, at most
    /// 4 MiB queued.
    pub fn new(addr: SocketAddr, path: &str) -> RtspConfig {
        RtspConfig {
            addr,
            path: path.to_owned(),
            encoder: EncoderChoice::Auto,
            gop: 30,
            fps: 30,
            max_queue_bytes: 4 << 20,
        }
    }
}

/// What a server did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RtspStats {
    /// Frames given to [`RtspServer::push`] or [`RtspServer::push_owned`].
    pub frames: u64,
    /// Of those, not encoded: no client played.
    pub idle: u64,
    /// Access units handed to the media.
    pub sent: u64,
    /// Of those, keyframes.
    pub keyframes: u64,
    /// Access units dropped: the media's queue was full (a slow client),
    /// it was not accepting yet, or a keyframe was awaited after a drop.
    pub dropped: u64,
    /// Frames not encoded because the media's queue was over half full (a
    /// client reading slower than the camera): the stream goes on with a
    /// longer gap, the encoder kept, nothing reopened.
    pub congested: u64,
    /// Encoders opened by [`RtspServer::push`] and
    /// [`RtspServer::push_owned`] (the server's own): the first, then one
    /// after an encoder failed or could not make a keyframe on request. As
    /// an [`Output`] of [`Outputs`](crate::outputs::Outputs) the server
    /// opens none: the stream's shared encoder counts its own.
    pub opened: u64,
    /// Keyframes asked of the server's own encoder: a client started
    /// playing, a new media, or access units dropped.
    pub requested: u64,
    /// Medias configured (one per run of clients: all share it).
    pub media: u64,
    /// Clients playing now.
    pub clients: usize,
}

/// The media's side of the feed (only the caller's thread touches it).
struct Feed {
    /// The shared generation served so far (each new one wants a
    /// keyframe).
    generation: u64,
    /// The media the times are anchored on: its number, the first
    /// packet's capture time and the running time it was given.
    base: Option<(u64, Duration, gst::ClockTime)>,
    /// After a drop, a gap or a new client: non-keyframes are dropped
    /// until a keyframe.
    wait_keyframe: bool,
    /// A keyframe is to be asked for with the next frame.
    ask_keyframe: bool,
    /// The media `wants_h264` found for the frame at hand.
    target: Option<(gst_app::AppSrc, u64)>,
    /// The encoder and index of the last access units handed over: a jump
    /// is a gap in the stream.
    last: Option<(u64, u64)>,
    max_queue_bytes: u64,
}

/// An RTSP server with one mount, fed H.264 from zerocam's encoders (see
/// [the module](super)).
pub struct RtspServer {
    server: rtsp::RTSPServer,
    context: glib::MainContext,
    main_loop: glib::MainLoop,
    source: Option<glib::SourceId>,
    thread: Option<JoinHandle<()>>,
    shared: Arc<Mutex<Shared>>,
    feed: Feed,
    /// The encoder of [`push`](RtspServer::push) and
    /// [`push_owned`](RtspServer::push_owned).
    video: SharedEncoder,
    path: String,
    url: String,
    stats: RtspStats,
}

impl std::fmt::Debug for RtspServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RtspServer")
            .field("url", &self.url)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl RtspServer {
    /// Binds `config.addr`, mounts `config.path` and starts the server's
    /// thread. No encoder is opened until a client comes.
    ///
    /// # Errors
    /// [`RtspError::Path`] for a path URLs cannot carry,
    /// [`RtspError::Init`] when GStreamer does not initialise,
    /// [`RtspError::MissingElement`] naming an element not installed,
    /// [`RtspError::Bind`] when the address cannot be bound,
    /// [`RtspError::Thread`] when no thread can be started.
    pub fn start(config: &RtspConfig) -> Result<RtspServer, RtspError> {
        check_path(&config.path)?;
        gst::init().map_err(|e| RtspError::Init {
            reason: e.to_string(),
        })?;
        for (element, package) in ELEMENTS {
            if gst::ElementFactory::find(element).is_none() {
                return Err(RtspError::MissingElement { element, package });
            }
        }
        let bind_error = |reason: String| RtspError::Bind {
            addr: config.addr,
            reason,
        };
        if !config.addr.ip().is_loopback() {
            log::warn!(
                "rtsp: listening on {}, beyond loopback: RTSP has no authentication here, \
                 anyone who reaches this address sees the camera",
                config.addr
            );
        }
        let server = rtsp::RTSPServer::new();
        server.set_address(&config.addr.ip().to_string());
        server.set_service(&config.addr.port().to_string());
        let factory = rtsp::RTSPMediaFactory::new();
        factory.set_launch(LAUNCH);
        factory.set_shared(true);
        let shared = Arc::new(Mutex::new(Shared::default()));
        let (weak, max_bytes) = (Arc::downgrade(&shared), config.max_queue_bytes);
        factory.connect_media_configure(move |_, media| configure(&weak, media, max_bytes));
        let weak = Arc::downgrade(&shared);
        server.connect_client_connected(move |_, client| track(&weak, client));
        let mounts = server
            .mount_points()
            .ok_or_else(|| bind_error("the server has no mount points".into()))?;
        mounts.add_factory(&config.path, factory);
        let context = glib::MainContext::new();
        let source = server
            .attach(Some(&context))
            .map_err(|e| bind_error(e.to_string()))?;
        let port = u16::try_from(server.bound_port()).unwrap_or(config.addr.port());
        let url = format!(
            "rtsp://{}{}",
            SocketAddr::new(config.addr.ip(), port),
            config.path
        );
        let main_loop = glib::MainLoop::new(Some(&context), false);
        let mut this = RtspServer {
            server,
            context: context.clone(),
            main_loop: main_loop.clone(),
            source: Some(source),
            thread: None,
            shared,
            feed: Feed {
                generation: 0,
                base: None,
                wait_keyframe: true,
                ask_keyframe: false,
                target: None,
                last: None,
                max_queue_bytes: config.max_queue_bytes,
            },
            video: SharedEncoder::new(
                "rtsp",
                config.encoder.clone(),
                EncoderConfig {
                    gop: Some(config.gop.max(1)),
                    fps: config.fps.max(1),
                    ..EncoderConfig::new(Codec::H264)
                },
            ),
            path: config.path.clone(),
            url,
            stats: RtspStats::default(),
        };
        // On failure `this` is dropped: the mount and the socket go.
        let thread = std::thread::Builder::new()
            .name("zerocam-rtsp".into())
            .spawn(move || {
                let run = context.with_thread_default(|| {
                    main_loop.run();
                    // What the shutdown left pending (clients closing).
                    for _ in 0..100 {
                        if !context.iteration(false) {
                            break;
                        }
                    }
                });
                if let Err(e) = run {
                    log::warn!("rtsp: the server's main context: {e}");
                }
            })?;
        this.thread = Some(thread);
        log::info!("rtsp: serving {}", this.url);
        Ok(this)
    }

    /// The URL clients open (`rtsp://127.0.0.1:8554/cam`), with the port
    /// bound.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The server's own encoder in use (its description), or why there is
    /// none.
    pub fn encoder(&self) -> String {
        self.video.describe()
    }

    /// The counters so far.
    pub fn stats(&self) -> RtspStats {
        let s = lock(&self.shared);
        let v = self.video.stats();
        RtspStats {
            clients: s.playing,
            media: s.medias,
            opened: v.opened,
            requested: v.requested,
            ..self.stats
        }
    }

    /// Encodes `frame` for the clients when any plays, with the server's
    /// own encoder (an [`Outputs`](crate::outputs::Outputs) list shares
    /// one among its outputs instead). The frame stays the caller's, so
    /// the encoder must keep nothing
    /// ([`VideoEncoder::encode_borrowed`](zerocam_encode::VideoEncoder::encode_borrowed)):
    /// [`EncoderChoice::Auto`] means the software encoder here.
    ///
    /// # Errors
    /// The encoder's: it does not open (tried again 5 s later), or a
    /// frame does not encode (the next frame starts a fresh one).
    pub fn push(&mut self, frame: &Frame) -> Result<(), EncodeError> {
        self.push_given(Given::Borrowed(frame))
    }

    /// As [`push`](Self::push), with the frame handed over: the encoder
    /// may keep it (a hardware encoder holds the capture's buffer until it
    /// is done, importing its dma-buf once).
    ///
    /// # Errors
    /// As [`push`](Self::push).
    pub fn push_owned(&mut self, frame: Frame) -> Result<(), EncodeError> {
        self.push_given(Given::Owned(frame))
    }

    /// What [`Outputs`](crate::outputs::Outputs) does for its outputs,
    /// for this one and its own encoder.
    fn push_given(&mut self, frame: Given<'_>) -> Result<(), EncodeError> {
        match self.want() {
            Want::Off => {
                self.video.close();
                return Ok(());
            }
            Want::Skip => return Ok(()),
            Want::Keyframe => self.video.request_keyframe(),
            Want::Next => {}
        }
        let Some(encoded) = self.video.encode(frame)? else {
            self.feed.target = None;
            return Ok(());
        };
        self.hand_over(&encoded);
        Ok(())
    }

    /// The media's `appsrc` when a client wants frames (or a new media is
    /// being prepared for one): [`Want::Keyframe`] for a new media or
    /// client, or after access units were lost; [`Want::Skip`] while the
    /// media's queue is over half full; [`Want::Off`] when nobody plays.
    fn want(&mut self) -> Want {
        self.stats.frames += 1;
        self.feed.target = None;
        let (appsrc, media, generation) = {
            let s = lock(&self.shared);
            let wanted =
                s.playing > 0 || s.configured_at.is_some_and(|t| t.elapsed() < PREPARE_GRACE);
            match &s.media {
                Some((_, number, appsrc)) if wanted => (appsrc.clone(), *number, s.generation),
                _ => {
                    drop(s);
                    self.stats.idle += 1;
                    self.feed.wait_keyframe = true;
                    return Want::Off;
                }
            }
        };
        // A client slower than the camera: this frame is not taken at all
        // (with the server's own encoder, not encoded: the stream stays
        // whole, with a longer gap), rather than taken and dropped.
        if appsrc.current_level_bytes() > self.feed.max_queue_bytes / 2 {
            self.stats.congested += 1;
            return Want::Skip;
        }
        if self.feed.generation != generation {
            // A new media or a new client: the stream goes on from a
            // keyframe, asked of the encoder open (which keeps what it
            // holds), or a fresh encoder's first where it cannot make one.
            self.feed.generation = generation;
            self.restart_at_keyframe();
        }
        if self.feed.base.is_some_and(|(n, _, _)| n != media) {
            self.feed.base = None;
        }
        self.feed.target = Some((appsrc, media));
        match std::mem::take(&mut self.feed.ask_keyframe) {
            true => Want::Keyframe,
            false => Want::Next,
        }
    }

    /// Hands `encoded`'s access units to the media `want` found, timed
    /// from the media's first; drops what does not fit its queue. A jump
    /// in the encoder's input (frames this server did not take) is a gap:
    /// it waits for a keyframe, and asks for one.
    fn hand_over(&mut self, encoded: &Encoded) {
        let Some((appsrc, media)) = self.feed.target.take() else {
            return;
        };
        let follows = match self.feed.last {
            Some((e, i)) => e == encoded.encoder && i + 1 == encoded.index,
            None => false,
        };
        if !follows && encoded.index != 0 && !self.feed.wait_keyframe {
            self.restart_at_keyframe();
        }
        self.feed.last = Some((encoded.encoder, encoded.index));
        for packet in &encoded.packets {
            if self.feed.wait_keyframe && !packet.keyframe {
                self.stats.dropped += 1;
                continue;
            }
            let len = packet.data.len() as u64;
            if appsrc.current_level_bytes() + len > self.feed.max_queue_bytes {
                self.drop_packet("the queue is full (a slow client)");
                continue;
            }
            let now = appsrc.current_running_time();
            let base = self
                .feed
                .base
                .get_or_insert_with(|| (media, packet.pts, now.unwrap_or(gst::ClockTime::ZERO)));
            let pts = stamp(base, packet.pts, now);
            let keyframe = packet.keyframe;
            // The access unit's bytes, shared with the other outputs: no copy.
            let mut buffer = gst::Buffer::from_slice(Bytes(packet.clone()));
            if let Some(b) = buffer.get_mut() {
                b.set_pts(pts);
                if !keyframe {
                    b.set_flags(gst::BufferFlags::DELTA_UNIT);
                }
            }
            match appsrc.push_buffer(buffer) {
                Ok(_) => {
                    self.feed.wait_keyframe = false;
                    self.stats.sent += 1;
                    self.stats.keyframes += u64::from(keyframe);
                }
                Err(e) => self.drop_packet(&format!("the media refused it ({e:?})")),
            }
        }
    }

    /// One access unit dropped: counted, and the stream restarted at a
    /// keyframe.
    fn drop_packet(&mut self, why: &str) {
        self.stats.dropped += 1;
        if !self.feed.wait_keyframe {
            log::debug!("rtsp: access unit dropped: {why}");
        }
        self.restart_at_keyframe();
    }

    /// Access units wait for a keyframe, which the encoder is asked for
    /// with the next frame.
    fn restart_at_keyframe(&mut self) {
        self.feed.wait_keyframe = true;
        self.feed.ask_keyframe = true;
    }
}

/// An access unit's bytes as a GStreamer buffer's memory, shared.
struct Bytes(Arc<Packet>);

impl AsRef<[u8]> for Bytes {
    fn as_ref(&self) -> &[u8] {
        &self.0.data
    }
}

/// The server as one output of a stream: it takes H.264, wanted while a
/// client plays.
impl Output for RtspServer {
    fn takes(&self) -> Takes {
        Takes {
            frames: false,
            h264: true,
            jpeg: false,
        }
    }

    fn describe(&self) -> String {
        format!("RTSP at {}", self.url)
    }

    fn status(&self) -> String {
        let s = self.stats();
        format!(
            "rtsp: clients {}, frames {}, not encoded (no client) {}, \
             not encoded (a slow client) {}, sent {} (keyframes {}, medias {}), dropped {}",
            s.clients, s.frames, s.idle, s.congested, s.sent, s.keyframes, s.media, s.dropped
        )
    }

    fn wants_h264(&mut self) -> Want {
        self.want()
    }

    fn h264(&mut self, encoded: &Encoded) -> Result<(), OutputError> {
        self.hand_over(encoded);
        Ok(())
    }
}

/// The running time an access unit captured at `capture` is stamped with
/// in the media: the first one's running time plus the time between their
/// captures, but never later than `now`, the running time it is handed
/// over at.
///
/// The server's sinks send a unit at its running time: one stamped later
/// than it arrives waits there. A first unit that came late (an encoder
/// starting up takes several frame intervals) would otherwise make every
/// later unit wait as long. A unit that would be stamped ahead of `now`
/// moves the anchor back, so the stamps stay in order and keep the
/// captures' spacing.
pub(super) fn stamp(
    base: &mut (u64, Duration, gst::ClockTime),
    capture: Duration,
    now: Option<gst::ClockTime>,
) -> gst::ClockTime {
    // A capture time from another process may be anything: bounded, no
    // overflow.
    let offset = u64::try_from(capture.saturating_sub(base.1).as_nanos())
        .unwrap_or(u64::MAX)
        .min(i64::MAX as u64);
    let pts = base
        .2
        .checked_add(gst::ClockTime::from_nseconds(offset))
        .unwrap_or(gst::ClockTime::MAX);
    match now {
        Some(now) if pts > now => {
            base.2 = base.2.saturating_sub(pts - now);
            now
        }
        _ => pts,
    }
}

impl Drop for RtspServer {
    /// Closes the clients, unprepares the media, removes the mount and the
    /// listening socket on the server's thread, then quits its loop and
    /// joins it.
    fn drop(&mut self) {
        let server = self.server.clone();
        let path = self.path.clone();
        let source = self.source.take();
        let shared = self.shared.clone();
        let context = self.context.clone();
        let main_loop = self.main_loop.clone();
        let shut = move || {
            if let Some(mounts) = server.mount_points() {
                mounts.remove_factory(&path);
            }
            server.client_filter(Some(&mut |_, _| rtsp::RTSPFilterResult::Remove));
            if let Some(pool) = server.session_pool() {
                pool.filter(Some(&mut |_, _| rtsp::RTSPFilterResult::Remove));
            }
            let media = lock(&shared).media.take();
            if let Some((media, _, _)) = media {
                if let Err(e) = media.unprepare() {
                    log::debug!("rtsp: unprepare: {e}");
                }
            }
            if let Some(source) = source.and_then(|id| context.find_source_by_id(&id)) {
                source.destroy();
            }
            main_loop.quit();
        };
        match self.thread.take() {
            Some(thread) => {
                self.context.invoke(shut);
                if thread.join().is_err() {
                    log::warn!("rtsp: the server's thread panicked");
                }
            }
            // No thread ever ran: nothing else owns the context.
            None => {
                if let Err(e) = self.context.with_thread_default(shut) {
                    log::warn!("rtsp: the server's main context: {e}");
                }
            }
        }
        log::info!("rtsp: {} stopped", self.url);
    }
}
