//! A fake V4L2 device for host tests of the queue logic: it keeps a FIFO of
//! queued buffers like vb2, records every call, and answers with scripted
//! errors and dequeues. It behaves like vb2 where the queue logic depends on
//! it: a buffer queued twice is `EINVAL`, a fatal error (`EIO`) sticks until
//! `STREAMOFF`, `STREAMOFF` gives every buffer back, a disconnected device
//! answers `ENODEV` to everything.

use std::collections::VecDeque;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use nix::errno::Errno;

use super::QbufPlanes;
use super::{raw, BufferQueue, Dequeued, DequeuedPlane, DqbufError, IoctlError, QbufError};
use crate::BufferMode;

/// What the next `DQBUF` does, before the FIFO's normal answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dq {
    /// Fails with this error (no buffer comes back).
    Fail(DqbufError),
    /// The driver dropped this many frames: the sequence jumps.
    Drop(u32),
    /// The buffer comes back flagged `V4L2_BUF_FLAG_ERROR`.
    Flagged,
    /// A hostile driver: the buffer comes back under this index instead.
    Index(u32),
}

/// One `VIDIOC_QBUF` as the fake saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Queued {
    pub index: u32,
    /// `None` for `MMAP`; the raw fd and length of each plane for `DMABUF`.
    pub dmabuf: Option<Vec<(i32, u32)>>,
}

/// The fake's state; tests read and script it through [`FakeDevice::state`].
#[derive(Debug, Default)]
pub(crate) struct FakeState {
    pub streaming: bool,
    /// Buffers the fake driver owns, in the order they come back.
    pub queued: VecDeque<u32>,
    /// Every successful `QBUF`.
    pub qbufs: Vec<Queued>,
    pub streamons: usize,
    pub streamoffs: usize,
    /// The next frame's sequence number.
    pub sequence: u32,
    /// Answers of the next `QBUF`s (`Ok`: the normal path).
    pub qbuf_script: VecDeque<Result<(), QbufError>>,
    /// Answer of the next `STREAMON`.
    pub streamon_error: Option<IoctlError>,
    /// What the next `DQBUF`s do.
    pub dqbuf_script: VecDeque<Dq>,
    /// vb2's fatal error state: `QBUF`/`DQBUF` answer `EIO` until `STREAMOFF`.
    pub fatal: bool,
    /// Every call answers `ENODEV`.
    pub disconnected: bool,
}

/// A device whose queue is a [`FakeState`].
#[derive(Debug)]
pub(crate) struct FakeDevice {
    path: PathBuf,
    /// The planes of a dequeued buffer (their `bytesused`).
    planes: [DequeuedPlane; raw::MAX_PLANES],
    state: Mutex<FakeState>,
}

impl FakeDevice {
    /// A fake at `/dev/fake`, whose frames fill `bytes_used` bytes per plane.
    pub fn new(bytes_used: &[u32]) -> FakeDevice {
        let mut planes = [DequeuedPlane::default(); raw::MAX_PLANES];
        for (p, &b) in planes.iter_mut().zip(bytes_used) {
            p.bytes_used = b;
        }
        FakeDevice {
            path: PathBuf::from("/dev/fake"),
            planes,
            state: Mutex::default(),
        }
    }

    pub fn state(&self) -> MutexGuard<'_, FakeState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl BufferQueue for FakeDevice {
    fn path(&self) -> &Path {
        &self.path
    }

    fn qbuf(&self, index: u32, planes: QbufPlanes<'_>) -> Result<(), QbufError> {
        let mut st = self.state();
        if st.disconnected {
            return Err(QbufError::Disconnected(Errno::ENODEV));
        }
        if st.fatal {
            return Err(QbufError::Io);
        }
        st.qbuf_script.pop_front().unwrap_or(Ok(()))?;
        if st.queued.contains(&index) {
            return Err(QbufError::Other(Errno::EINVAL)); // vb2: already queued
        }
        let dmabuf = match planes {
            QbufPlanes::Mmap => None,
            QbufPlanes::DmaBuf(p) => Some(p.iter().map(|p| (p.fd.as_raw_fd(), p.length)).collect()),
        };
        st.qbufs.push(Queued { index, dmabuf });
        st.queued.push_back(index);
        Ok(())
    }

    fn dqbuf(&self, _mode: BufferMode) -> Result<Dequeued, DqbufError> {
        let mut st = self.state();
        if st.disconnected {
            return Err(DqbufError::Disconnected(Errno::ENODEV));
        }
        if st.fatal {
            return Err(DqbufError::Io);
        }
        if !st.streaming || st.queued.is_empty() {
            return Err(DqbufError::NotReady);
        }
        let (mut error, mut index) = (false, None);
        match st.dqbuf_script.pop_front() {
            Some(Dq::Fail(e)) => {
                if e == DqbufError::Io {
                    st.fatal = true;
                }
                return Err(e);
            }
            Some(Dq::Drop(n)) => st.sequence += n,
            Some(Dq::Flagged) => error = true,
            Some(Dq::Index(i)) => index = Some(i),
            None => {}
        }
        let queued = st.queued.pop_front().unwrap_or_default();
        let index = index.unwrap_or(queued);
        let sequence = st.sequence;
        st.sequence += 1;
        Ok(Dequeued {
            index,
            sequence,
            timestamp: Duration::from_millis(u64::from(sequence) * 33),
            error,
            planes: self.planes,
        })
    }

    fn stream(&self, on: bool) -> Result<(), IoctlError> {
        let mut st = self.state();
        if st.disconnected {
            return Err(IoctlError::Disconnected(Errno::ENODEV));
        }
        if on {
            if let Some(e) = st.streamon_error.take() {
                return Err(e);
            }
            st.streamons += 1;
            st.streaming = true;
            st.sequence = 0;
        } else {
            st.streamoffs += 1;
            st.streaming = false;
            st.queued.clear();
            st.fatal = false;
        }
        Ok(())
    }
}
