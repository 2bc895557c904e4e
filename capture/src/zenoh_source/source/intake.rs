//! Which waiting sample a [`ZenohSource`] reads, and how the ones it
//! passes over and loses are counted.

use zenoh::sample::Sample;

use super::super::picture::{jpeg_size, Kind, Unit};
use super::super::{Attachment, ZenohError};
use super::{ZenohSource, MAX_BACKSTEP, MAX_GAP};
use crate::frame::lock;

impl ZenohSource {
    /// `sample`, or the newest one waiting after it: those passed over
    /// are counted (lost to the reader, or refused).
    pub(super) fn newest(&mut self, sample: Sample) -> Sample {
        let mut newest = sample;
        while let Ok(Some(next)) = self.subscriber.try_recv() {
            let passed = std::mem::replace(&mut newest, next);
            self.pass_over(&passed);
        }
        newest
    }

    /// A sample passed over for a newer one: lost to the reader when it is
    /// a picture (dropped), refused when it is not (rejected); late as in
    /// [`take`](Self::take).
    fn pass_over(&mut self, sample: &Sample) {
        let Some(before) = self.numbered(sample) else {
            self.late += 1;
            return;
        };
        let payload = sample.payload().to_bytes();
        let checked = match payload.len() {
            len if len > self.max_payload => Err(ZenohError::TooLarge {
                key: self.key.clone(),
                len,
                max: self.max_payload,
            }),
            // What `take` would refuse without decoding: not the topic's
            // message, or a JPEG of another size than the stream's.
            _ => Unit::read(self.kind, &self.key, &payload).and_then(|unit| {
                let stream = (self.format.width, self.format.height);
                match self.kind {
                    Kind::Jpeg => match jpeg_size(&self.key, unit.data)? {
                        (w, h) if (w, h) != stream => Err(ZenohError::SizeChanged {
                            key: self.key.clone(),
                            width: w,
                            height: h,
                            stream_width: stream.0,
                            stream_height: stream.1,
                        }),
                        _ => Ok(()),
                    },
                    Kind::H264 => Ok(()),
                }
            }),
        };
        let lost = match checked {
            Ok(()) => before + 1,
            Err(e) => {
                self.rejected += 1;
                self.warn_rejected(&e);
                self.last_error = Some(e);
                before
            }
        };
        let mut st = lock(&self.shared);
        st.counters.dropped = st.counters.dropped.saturating_add(lost);
    }

    /// The samples lost just before `sample`, from its sender's numbering
    /// (0 without one); `None` when it is late (older than the last). Its
    /// number becomes the last.
    pub(super) fn numbered(&mut self, sample: &Sample) -> Option<u64> {
        let numbers = sample
            .attachment()
            .and_then(|a| Attachment::from_bytes(&a.to_bytes()));
        let mut dropped = 0;
        if let Some(a) = numbers {
            if let Some((instance, last)) = self.last {
                // A number far from the last (forged, or a publisher that
                // restarted with the same instance) starts a new count,
                // never a huge loss or a stream of "late" samples.
                let step = a.number.wrapping_sub(last);
                let same = instance == a.instance;
                if same && (step == 0 || step > u64::MAX - MAX_BACKSTEP) {
                    return None;
                }
                if same && step <= MAX_GAP {
                    dropped = step - 1;
                }
            }
            self.last = Some((a.instance, a.number));
        }
        Some(dropped)
    }
}
