//! One camera acquired by the libcamera thread: its requests, one per buffer,
//! queued, completed, handed to the source and queued again.

use std::sync::mpsc::Sender;
use std::time::Duration;

use libcamera::camera::ActiveCamera;
use libcamera::controls::SensorTimestamp;
use libcamera::framebuffer::{AsFrameBuffer, FrameMetadataStatus};
use libcamera::framebuffer_allocator::{FrameBuffer, FrameBufferAllocator};
use libcamera::request::{Request, RequestStatus, ReuseFlag};
use libcamera::stream::Stream;
use nix::errno::Errno;

use super::call_failed;
use super::events::{Completion, Event, Outcome};
use super::metadata::RawMetadata;
use super::worker::errno_of;
use crate::frame::stats::monotonic_now;
use crate::{CaptureError, Result};

/// One buffer's request.
pub(crate) struct Slot {
    /// The request while in our hands: idle (stopped, or its queueing
    /// failed), or completed and handed to the source until `Requeue`.
    /// `None` while queued to libcamera (the `ActiveCamera` holds it).
    request: Option<Request>,
    /// `(sequence, timestamp)` of the buffer's frame metadata as last read,
    /// to tell metadata written for this completion from an earlier one.
    last_metadata: Option<(u32, u64)>,
}

impl Slot {
    /// A request in our hands, not queued yet.
    pub fn new(request: Request) -> Slot {
        Slot {
            request: Some(request),
            last_metadata: None,
        }
    }
}

/// One acquired camera.
///
/// Drop order is field order: the requests, then the allocator, then the
/// camera. Requests still queued are held inside `active` and dropped with it
/// (after it stopped and released the camera); that is safe because each
/// request's `FrameBuffer` holds an `Arc` on the allocator's buffers, not
/// because of this order.
pub(crate) struct OpenCamera {
    pub slots: Vec<Slot>,
    pub _allocator: FrameBufferAllocator,
    pub stream: Stream,
    pub events: Sender<Event>,
    pub streaming: bool,
    pub name: String,
    /// `'static`: the libcamera crate lets `CameraManager::cameras` pick any
    /// lifetime, so the worker keeps what the borrow would: the camera drops
    /// before the manager (`Worker::cameras` is declared before
    /// `Worker::manager`; `release_manager_if_idle` needs no camera open).
    pub active: ActiveCamera<'static>,
}

impl OpenCamera {
    fn error(&self, operation: &'static str) -> impl Fn(Errno) -> CaptureError + '_ {
        move |errno| call_failed(&self.name, operation, errno)
    }

    /// Starts the camera and queues the requests of buffers `queue` (the
    /// source has taken the camera's borrow of each).
    pub fn start(&mut self, queue: &[usize]) -> Result<()> {
        if self.streaming {
            return Ok(());
        }
        self.active
            .start(None)
            .map_err(|e| self.error("start")(errno_of(&e)))?;
        self.streaming = true;
        for &index in queue {
            if let Err(errno) = self.queue(index) {
                let _ = self.stop();
                return Err(self.error("queue request")(errno));
            }
        }
        Ok(())
    }

    pub fn stop(&mut self) -> Result<()> {
        if !self.streaming {
            return Ok(());
        }
        self.streaming = false;
        // libcamera completes every queued request as cancelled before stop()
        // returns; they arrive as Cmd::Completed and stay in our hands.
        self.active
            .stop()
            .map_err(|e| self.error("stop")(errno_of(&e)))
    }

    /// Queues the request of slot `index` if it is in our hands; it stays
    /// there on failure.
    fn queue(&mut self, index: usize) -> std::result::Result<(), Errno> {
        let slot = self.slots.get_mut(index).ok_or(Errno::EINVAL)?;
        let Some(mut request) = slot.request.take() else {
            return Ok(()); // queued already
        };
        request.reuse(ReuseFlag::REUSE_BUFFERS);
        self.active.queue_request(request).map_err(|(request, e)| {
            slot.request = Some(request);
            errno_of(&e)
        })
    }

    /// The source freed buffer `index` (or retries it after a failed queue):
    /// queued when streaming, else kept idle. A failed queue is reported to
    /// the source, which asks again.
    pub fn requeue(&mut self, index: usize) {
        if !self.streaming || index >= self.slots.len() {
            return;
        }
        if let Err(errno) = self.queue(index) {
            let _ = self.events.send(Event::Completion(Completion {
                index,
                outcome: Outcome::QueueFailed(errno),
                completed: monotonic_now(),
            }));
        }
    }

    /// libcamera completed `request` at `at`: handed to the source when
    /// streaming, kept idle when stopped. Whether it holds a frame is the
    /// request's status alone.
    pub fn completed(&mut self, request: Request, at: Duration) {
        let Some(index) = usize::try_from(request.cookie())
            .ok()
            .filter(|&i| i < self.slots.len())
        else {
            return;
        };
        if !self.streaming {
            // Stopped: a cancelled request, or a frame that completed as the
            // stream stopped; nobody asked for it.
            self.slots[index].request = Some(request);
            return;
        }
        let outcome = match request.status() {
            RequestStatus::Complete => match request.buffer::<FrameBuffer>(&self.stream) {
                Some(fb) => raw_metadata(&request, fb, &mut self.slots[index].last_metadata),
                None => Outcome::Failed("no buffer in the completed request"),
            },
            RequestStatus::Cancelled => Outcome::Failed("cancelled"),
            RequestStatus::Pending => Outcome::Failed("completed while pending"),
        };
        self.slots[index].request = Some(request);
        let sent = self.events.send(Event::Completion(Completion {
            index,
            outcome,
            completed: at,
        }));
        if sent.is_err() {
            // The source is gone without closing (cannot happen: it closes on drop).
            self.requeue(index);
        }
    }
}

/// What libcamera wrote about a completed request's frame. The buffer's
/// `FrameMetadata` counts only when written for this completion: status
/// success and a `(sequence, timestamp)` other than the one read last time
/// from this buffer (libcamera sets a buffer's status when it cancels it, and
/// a pipeline handler that writes no metadata leaves that, or an older
/// frame's values, in place). A timestamp missing there is taken from the
/// request's `SensorTimestamp`, when the pipeline handler set one.
fn raw_metadata(
    request: &Request,
    fb: &impl AsFrameBuffer,
    last: &mut Option<(u32, u64)>,
) -> Outcome {
    let mut raw = RawMetadata::default();
    if let Some(m) = fb.metadata() {
        let status = m.status();
        let now = (m.sequence(), m.timestamp());
        let fresh = *last != Some(now);
        if fresh && status == FrameMetadataStatus::Error {
            return Outcome::Failed("buffer error");
        }
        if fresh && status == FrameMetadataStatus::Success {
            *last = Some(now);
            raw = RawMetadata {
                sequence: Some(now.0),
                timestamp_ns: Some(now.1),
                bytes_used: Some(m.planes().into_iter().map(|p| p.bytes_used as usize).sum()),
            };
        }
    }
    if raw.timestamp_ns.is_none_or(|t| t == 0) {
        if let Ok(SensorTimestamp(t)) = request.metadata().get::<SensorTimestamp>() {
            raw.timestamp_ns = u64::try_from(t).ok().filter(|&t| t > 0);
        }
    }
    Outcome::Frame(raw)
}
