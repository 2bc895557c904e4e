//! [`SharedEncoder`]: a stream's one H.264 encoder, opened when an output
//! first wants it, asked for keyframes, closed when none wants it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use zerocam_encode::encoder::{open_encoder, EncoderConfig};
use zerocam_encode::{EncodeError, EncoderChoice, VideoEncoder};

use super::{Encoded, Given};

/// How long after an encoder fails to open it is tried again.
const RETRY: Duration = Duration::from_secs(5);

/// What the encoder did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SharedEncoderStats {
    /// Encoders opened: the first, then one after an encoder failed, was
    /// closed for want of outputs, or could not make a keyframe on request.
    pub opened: u64,
    /// Keyframes asked of the open encoder.
    pub requested: u64,
    /// Frames encoded (each once, whatever the number of outputs).
    pub frames: u64,
    /// Access units it gave back.
    pub packets: u64,
    /// Of those, keyframes.
    pub keyframes: u64,
    /// Frames that did not encode, and failed opens.
    pub errors: u64,
}

/// One H.264 encoder for every output of a stream (see [the
/// module](super)).
pub struct SharedEncoder {
    /// For its log lines (`h264`, `rtsp`).
    name: String,
    choice: EncoderChoice,
    config: EncoderConfig,
    encoder: Option<Box<dyn VideoEncoder>>,
    /// Why no encoder could be opened, and when to try again (`None`:
    /// never, an encoder that cannot take borrowed frames).
    unavailable: Option<String>,
    retry_at: Option<Instant>,
    /// Frames given to the open encoder.
    index: u64,
    stats: SharedEncoderStats,
}

impl std::fmt::Debug for SharedEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedEncoder")
            .field("name", &self.name)
            .field("choice", &self.choice)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl SharedEncoder {
    /// `choice` with `config`, opened at the first frame an output wants;
    /// `name` starts its log lines.
    pub fn new(name: &str, choice: EncoderChoice, config: EncoderConfig) -> SharedEncoder {
        SharedEncoder {
            name: name.to_owned(),
            choice,
            config,
            encoder: None,
            unavailable: None,
            retry_at: None,
            index: 0,
            stats: SharedEncoderStats::default(),
        }
    }

    /// The encoder in use (its description), or why there is none.
    pub fn describe(&self) -> String {
        match (&self.encoder, &self.unavailable) {
            (Some(e), _) => e.describe(),
            (None, Some(why)) => format!("unavailable: {why}"),
            (None, None) => format!("{}, opened when wanted", self.choice),
        }
    }

    /// The counters so far.
    pub fn stats(&self) -> SharedEncoderStats {
        self.stats
    }

    /// Whether an encoder is open.
    pub fn is_open(&self) -> bool {
        self.encoder.is_some()
    }

    /// Closes the encoder (nobody wants its stream): no encode CPU while
    /// nobody watches.
    pub fn close(&mut self) {
        if self.encoder.take().is_some() {
            log::info!("{}: nobody wants it, encoder closed", self.name);
        }
    }

    /// Asks the open encoder for a keyframe next; one that cannot make one
    /// on request is closed, and the next frame opens a fresh one (whose
    /// first is a keyframe). Without an encoder, nothing to do: the next
    /// one starts at a keyframe.
    pub fn request_keyframe(&mut self) {
        let Some(encoder) = self.encoder.as_deref_mut() else {
            return;
        };
        if encoder.request_keyframe() {
            self.stats.requested += 1;
        } else {
            self.encoder = None;
        }
    }

    /// Encodes `frame`, opening an encoder when none is open (for a
    /// borrowed frame one that keeps nothing: `auto` means the software
    /// encoder then): its access units, with the encoder's number and the
    /// frame's index in its input. `Ok(None)`: no encoder can be had now
    /// (tried again later, or never for one that refuses borrowed frames).
    ///
    /// # Errors
    /// The encoder's: it does not open (tried again 5 s later), or the
    /// frame does not encode (the next frame opens a fresh one).
    pub fn encode(&mut self, frame: Given<'_>) -> Result<Option<Encoded>, EncodeError> {
        if self.unavailable.is_some() {
            match self.retry_at {
                Some(t) if Instant::now() >= t => self.unavailable = None,
                _ => return Ok(None),
            }
        }
        let borrowed = matches!(frame, Given::Borrowed(_));
        if self.encoder.is_none() {
            // A device or element stays what was asked: it refuses
            // borrowed frames with a typed error, and is not tried again.
            let fallback = borrowed
                .then(|| self.choice.for_borrowed_frames())
                .flatten();
            let choice = fallback.as_ref().unwrap_or(&self.choice);
            match open_encoder(choice, &self.config, frame.frame()) {
                Ok((e, why)) => {
                    log::info!("{}: {why}", self.name);
                    self.encoder = Some(e);
                    self.index = 0;
                    self.stats.opened += 1;
                }
                Err(e) => {
                    log::warn!("{}: no encoder (tried again in {RETRY:?}): {e}", self.name);
                    self.stats.errors += 1;
                    self.unavailable = Some(e.to_string());
                    self.retry_at = Some(Instant::now() + RETRY);
                    return Err(e);
                }
            }
        }
        let Some(encoder) = self.encoder.as_deref_mut() else {
            return Ok(None);
        };
        let packets = match frame {
            Given::Borrowed(f) => encoder.encode_borrowed(f),
            Given::Owned(f) => encoder.encode(f),
        };
        let packets = match packets {
            Ok(p) => p,
            Err(e) => {
                self.encoder = None;
                self.stats.errors += 1;
                if matches!(e, EncodeError::NeedsOwnedFrames { .. }) {
                    log::warn!("{}: {e}", self.name);
                    self.unavailable = Some(e.to_string());
                    self.retry_at = None;
                }
                return Err(e);
            }
        };
        let index = self.index;
        self.index += 1;
        self.stats.frames += 1;
        self.stats.packets += packets.len() as u64;
        self.stats.keyframes += packets.iter().filter(|p| p.keyframe).count() as u64;
        Ok(Some(Encoded {
            packets: packets.into_iter().map(Arc::new).collect(),
            encoder: self.stats.opened,
            index,
        }))
    }
}
