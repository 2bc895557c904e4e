//! The source's side of a libcamera stream: what its frames share with it,
//! handing buffers back to the libcamera thread (with the camera's borrow of
//! their files, as the V4L2 stream does), and turning what the thread sends
//! into a [`Frame`] or an error.

use std::fmt;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use nix::errno::Errno;

use super::call_failed;
use super::events::{CamKey, Completion, Event, Outcome};
use super::slots::State;
use crate::frame::slot::SlotState;
use crate::frame::{lock, Requeue};
use crate::{CaptureError, Frame, Result, StreamFormat};

/// Asks the libcamera thread to queue buffer `index` of camera `key` again
/// (or, stopped, to keep it idle); false when the thread is gone.
pub(crate) type Requeuer = Box<dyn Fn(CamKey, usize) -> bool + Send + Sync>;

/// What frames share with their source: the state, and the way to the
/// libcamera thread to queue their request again. One per configuration (a
/// reconfigure makes a new one).
pub(crate) struct Shared {
    pub name: PathBuf,
    /// The format frames come in.
    pub format: StreamFormat,
    requeue: Requeuer,
    state: Mutex<State>,
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shared")
            .field("name", &self.name)
            .field("format", &self.format)
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

impl Shared {
    pub fn new(name: PathBuf, format: StreamFormat, requeue: Requeuer, state: State) -> Shared {
        Shared {
            name,
            format,
            requeue,
            state: Mutex::new(state),
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    fn camera(&self) -> String {
        self.name.display().to_string()
    }

    fn request_failed(&self, index: usize, status: String) -> CaptureError {
        let camera = self.camera();
        CaptureError::RequestFailed {
            camera,
            index,
            status,
        }
    }

    /// Hands free buffer `index` back to the libcamera thread. Streaming, the
    /// camera borrows its files first; when a CPU map of them is alive it is
    /// not queued but left `Pending` (retried by [`queue_pending`](Self::queue_pending)),
    /// as when the thread is gone. Stopped, it is left `Idle` (queued by the
    /// next start).
    pub fn give_back(&self, st: &mut State, index: usize) {
        let (key, live) = (st.key, st.open && !st.disconnected);
        let streaming = st.streaming && live;
        let Some(slot) = st.slots.get_mut(index) else {
            return;
        };
        slot.core.free(streaming);
        if streaming {
            let _ = slot
                .core
                .queue(|_| (self.requeue)(key, index).then_some(()).ok_or(()));
        } else if live {
            // The thread keeps the request idle until the next start.
            let _ = (self.requeue)(key, index);
        }
    }

    /// Queues the free buffers that waited for a CPU map to end or whose
    /// re-queue failed.
    pub fn queue_pending(&self, st: &mut State) {
        for i in 0..st.slots.len() {
            if matches!(st.slots[i].core.state(), SlotState::Pending) {
                self.give_back(st, i);
            }
        }
    }

    /// Before a start: borrows every free buffer for the camera and returns
    /// the ones to queue (a buffer still mapped stays `Pending`).
    pub fn prepare_start(&self, st: &mut State) -> Vec<usize> {
        let free = st
            .slots
            .iter_mut()
            .enumerate()
            .filter(|(_, s)| !s.core.is_held());
        free.filter_map(|(i, s)| s.core.lend().is_ok().then_some(i))
            .collect()
    }

    /// After a stop (or a failed start): nothing is queued, the camera's
    /// borrows end, the import cache is invalidated.
    pub fn stopped(&self, st: &mut State) {
        st.streaming = false;
        st.slots.iter_mut().for_each(|s| s.core.stopped());
        st.cache.invalidate();
    }

    /// The next frame from `events`: retries pending buffers, then waits up
    /// to `timeout` (`None`: forever).
    pub fn next_frame(
        self: &Arc<Self>,
        events: &Receiver<Event>,
        timeout: Duration,
    ) -> Result<Frame> {
        let deadline = Instant::now().checked_add(timeout);
        {
            let mut st = self.lock();
            if st.disconnected {
                return Err(self.disconnected());
            }
            if !st.open || !st.streaming {
                return Err(CaptureError::NotStreaming {
                    path: self.name.clone(),
                });
            }
            self.queue_pending(&mut st);
            if !st.slots.iter().any(|s| s.core.is_queued()) {
                return Err(CaptureError::NoFreeBuffer {
                    path: self.name.clone(),
                    buffers: st.slots.len(),
                });
            }
        }
        let got = match deadline {
            Some(d) => events.recv_timeout(d.saturating_duration_since(Instant::now())),
            None => events.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match got {
            Ok(event) => self.event(event, Instant::now()),
            Err(RecvTimeoutError::Timeout) => Err(CaptureError::Timeout {
                path: self.name.clone(),
                timeout,
            }),
            Err(RecvTimeoutError::Disconnected) => {
                Err(call_failed(&self.camera(), "receive a frame", Errno::EPIPE))
            }
        }
    }

    /// The error of a camera that went away.
    pub fn disconnected(&self) -> CaptureError {
        CaptureError::Disconnected {
            path: self.name.clone(),
            errno: Errno::ENODEV,
        }
    }

    /// The frame of `event`, or the error it carries.
    pub fn event(self: &Arc<Self>, event: Event, woke: Instant) -> Result<Frame> {
        match event {
            Event::Completion(c) => self.frame(c, woke),
            Event::Disconnected => {
                let mut st = self.lock();
                st.disconnected = true;
                self.stopped(&mut st);
                Err(self.disconnected())
            }
        }
    }

    /// The frame of completion `c`, or the error it carries.
    pub fn frame(self: &Arc<Self>, c: Completion, woke: Instant) -> Result<Frame> {
        let mut st = self.lock();
        let index = c.index;
        let Some(slot) = st.slots.get_mut(index) else {
            return Err(self.request_failed(index, "no such buffer".into()));
        };
        slot.core.dequeued(); // the camera is done with it: Pending
        let raw = match c.outcome {
            Outcome::Frame(raw) => raw,
            Outcome::Failed(why) => {
                st.counters.errors += 1;
                self.give_back(&mut st, index);
                return Err(self.request_failed(index, why.to_owned()));
            }
            Outcome::QueueFailed(errno) => {
                st.counters.errors += 1;
                // Left Pending: queued again by the next next_frame.
                let status = format!("queueing the request again failed: {errno}");
                return Err(self.request_failed(index, status));
            }
        };
        let (tensor, placement) = match st.tensor(&self.format, index) {
            Ok(t) => t,
            Err(source) => {
                self.give_back(&mut st, index);
                return Err(CaptureError::Tensor {
                    path: self.name.clone(),
                    source,
                });
            }
        };
        let length = st.slots.get(index).map_or(0, |s| s.length);
        let (mut meta, dropped) = st.fixer.fix(&raw, length, c.completed);
        meta.placement = placement;
        st.counters.dropped += dropped;
        st.counters.frames += 1;
        if let Some(s) = st.slots.get_mut(index) {
            s.core.hold();
        }
        drop(st);
        let color = self.format.color;
        Ok(Frame::new(self.clone(), index, tensor, color, meta, woke))
    }
}

impl Requeue for Shared {
    fn requeue(&self, index: usize) {
        let mut st = self.lock();
        if st.slots.get(index).is_some_and(|s| s.core.is_held()) {
            self.give_back(&mut st, index);
        }
    }
}

#[cfg(test)]
#[path = "frames_tests.rs"]
mod tests;
