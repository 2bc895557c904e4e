//! Streams and the work queued on them.
//!
//! Work queued on a stream (a `cuMemcpyDtoHAsync_v2`, or a kernel's write
//! that `zcd_queue_write` stands for) runs in order when that stream is
//! synchronized (`cuStreamSynchronize`), or destroyed (CUDA finishes it in
//! the background). The legacy default stream (null) waits for the work of
//! **blocking** streams (flags 0) and runs its own at once, but does not wait
//! for `CU_STREAM_NON_BLOCKING` streams: a legacy-stream copy
//! (`cuMemcpyDtoH_v2`) reads what a write queued on a non-blocking stream
//! has not yet written, as on a real device.

use std::ffi::{c_uint, c_void};

use crate::memory::Source;
use crate::{entry, fresh_handle, is_mapped, nonnull, put, CuResult, Res, State, INVALID_HANDLE};
use crate::{INVALID_VALUE, SUCCESS};

/// CU_STREAM_NON_BLOCKING.
const NON_BLOCKING: c_uint = 0x1;

/// Work queued on a stream.
pub(crate) enum Op {
    /// A kernel's write of `byte` over `[dst, dst + len)` (registered host
    /// memory: the double's device addresses are the host's).
    Write { dst: usize, byte: u8, len: usize },
    /// `cuMemcpyDtoHAsync_v2` of `len` bytes from `source` to host `dst`.
    Copy {
        dst: usize,
        source: Source,
        len: usize,
    },
}

/// A live stream.
pub(crate) struct Stream {
    /// Created with CU_STREAM_NON_BLOCKING: not ordered with the legacy stream.
    non_blocking: bool,
    /// Work queued and not yet run, oldest first.
    queue: Vec<Op>,
}

impl State {
    /// `stream` is null (the default stream) or live, else INVALID_HANDLE.
    pub(crate) fn need_stream(&self, stream: *mut c_void) -> Result<(), CuResult> {
        if stream.is_null() || self.streams.contains_key(&(stream as usize)) {
            Ok(())
        } else {
            Err(INVALID_HANDLE)
        }
    }

    /// Runs the work queued on `stream`, in order.
    pub(crate) fn run_stream(&mut self, stream: usize) {
        let queue = match self.streams.get_mut(&stream) {
            Some(s) => std::mem::take(&mut s.queue),
            None => return,
        };
        for op in queue {
            self.run(op);
        }
    }

    /// Runs the work of every blocking stream: what the legacy default
    /// stream waits for before its own work.
    pub(crate) fn run_blocking_streams(&mut self) {
        let blocking: Vec<usize> = self
            .streams
            .iter()
            .filter(|(_, s)| !s.non_blocking)
            .map(|(&handle, _)| handle)
            .collect();
        for stream in blocking {
            self.run_stream(stream);
        }
    }

    fn run(&mut self, op: Op) {
        match op {
            Op::Write { dst, byte, len } => {
                if self.host_range(dst, len).is_none() || !is_mapped(dst, len) {
                    self.violation(format!("device write to unregistered memory: {dst:#x}"));
                    return;
                }
                // SAFETY: registered and mapped (checked), and writable
                // (`zcd_queue_write`'s caller's promise).
                unsafe { std::ptr::write_bytes(dst as *mut u8, byte, len) };
            }
            Op::Copy { dst, source, len } => {
                // SAFETY: `dst` stays valid for `len` bytes until the stream
                // is synchronized (`cuMemcpyDtoHAsync_v2`'s caller's promise).
                // A failure is recorded as a violation by `copy_now`; an
                // asynchronous copy has no caller left to tell.
                let _ = unsafe { self.copy_now(dst, &source, len) };
            }
        }
    }

    /// Queues `op` on live, non-null `stream`.
    pub(crate) fn queue(&mut self, stream: usize, op: Op) -> Res {
        let s = self.streams.get_mut(&stream).ok_or(INVALID_HANDLE)?;
        s.queue.push(op);
        Ok(())
    }
}

/// `cuStreamCreate`: a fresh non-null handle; flags 0 (blocking: ordered
/// with the legacy stream) or NON_BLOCKING.
#[no_mangle]
pub unsafe extern "C" fn cuStreamCreate(stream: *mut *mut c_void, flags: c_uint) -> CuResult {
    entry("cuStreamCreate", |st| {
        st.need_ctx()?;
        nonnull(stream)?;
        if flags & !NON_BLOCKING != 0 {
            return Err(INVALID_VALUE);
        }
        let handle = fresh_handle();
        let created = Stream {
            non_blocking: flags & NON_BLOCKING != 0,
            queue: Vec::new(),
        };
        st.streams.insert(handle, created);
        // SAFETY: `stream` is non-null and writable (the caller's promise).
        unsafe { put(stream, handle as *mut c_void) }
    })
}

/// `cuStreamDestroy_v2`: INVALID_HANDLE for a stream the double did not create
/// (or destroyed already). Work still queued on it runs first.
#[cfg(not(zcd_cuda10))]
#[no_mangle]
pub unsafe extern "C" fn cuStreamDestroy_v2(stream: *mut c_void) -> CuResult {
    stream_destroy("cuStreamDestroy_v2", stream)
}

/// `cuStreamDestroy`, the name before CUDA 4.0's `_v2` (same signature).
#[no_mangle]
pub unsafe extern "C" fn cuStreamDestroy(stream: *mut c_void) -> CuResult {
    stream_destroy("cuStreamDestroy", stream)
}

/// Both names' body.
fn stream_destroy(name: &'static str, stream: *mut c_void) -> CuResult {
    entry(name, |st| {
        st.need_ctx()?;
        nonnull(stream)?;
        st.need_stream(stream)?;
        st.run_stream(stream as usize);
        st.streams.remove(&(stream as usize));
        Ok(())
    })
}

/// `cuStreamSynchronize`: runs the work queued on a live stream; null (the
/// legacy default stream) runs the blocking streams' work.
#[no_mangle]
pub unsafe extern "C" fn cuStreamSynchronize(stream: *mut c_void) -> CuResult {
    entry("cuStreamSynchronize", |st| {
        st.need_ctx()?;
        st.need_stream(stream)?;
        if stream.is_null() {
            st.run_blocking_streams();
        } else {
            st.run_stream(stream as usize);
        }
        Ok(())
    })
}

/// `cuMemcpyDtoHAsync_v2`: queues a copy of `bytes` from `src` (as
/// `cuMemcpyDtoH_v2` takes it: registered host memory or a mapped GL
/// buffer, else INVALID_VALUE) on `stream`, after the work queued there; it
/// runs when the stream is synchronized. On the null stream it is the
/// legacy stream's copy: after the blocking streams' work, at once.
#[no_mangle]
pub unsafe extern "C" fn cuMemcpyDtoHAsync_v2(
    dst: *mut c_void,
    src: u64,
    bytes: usize,
    stream: *mut c_void,
) -> CuResult {
    entry("cuMemcpyDtoHAsync_v2", |st| {
        st.need_ctx()?;
        nonnull(dst)?;
        st.need_stream(stream)?;
        let source = st.copy_source(src, bytes)?;
        if stream.is_null() {
            st.run_blocking_streams();
            // SAFETY: `dst` holds `bytes` bytes (the caller's promise).
            return unsafe { st.copy_now(dst as usize, &source, bytes) };
        }
        let op = Op::Copy {
            dst: dst as usize,
            source,
            len: bytes,
        };
        st.queue(stream as usize, op)
    })
}

/// `zcd_queue_write`'s body: queues a kernel's write of `byte` over
/// `[dptr, dptr + bytes)` on live `stream`.
pub(crate) fn queue_write(stream: *mut c_void, dptr: u64, byte: u8, bytes: usize) -> CuResult {
    let mut st = crate::lock();
    let Ok(dst) = usize::try_from(dptr) else {
        return INVALID_VALUE;
    };
    if stream.is_null() || !st.streams.contains_key(&(stream as usize)) {
        return INVALID_HANDLE;
    }
    if bytes == 0 || st.host_range(dst, bytes).is_none() {
        return INVALID_VALUE;
    }
    let op = Op::Write {
        dst,
        byte,
        len: bytes,
    };
    match st.queue(stream as usize, op) {
        Ok(()) => SUCCESS,
        Err(code) => code,
    }
}
