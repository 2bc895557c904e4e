//! Sources and frames: a source opened by its spec (a V4L2 device,
//! `libcamera:`, `unix:`, `gst:` where built, `pattern`), its frames with a
//! timeout, each frame's image and planes as tensors.

use std::ffi::c_char;
use std::sync::{Arc, Mutex, TryLockError};
use std::time::Duration;

use ::zerocam_tensor::TensorDyn;
use zerocam_capture::open::{open, SourceSpec};
use zerocam_capture::{CaptureFormat, Frame, FrameSource, StreamStats};

use crate::ffi::{call, handle, id, read, string, Out};
use crate::handle::{self as table, Kind, Object};
use crate::status::{zerocam_status, CapiError};
use crate::tensor::{new_handle, zerocam_tensor};
use crate::values::{c_format, zerocam_pixel_format};

/// A frame source. Lifetime: references (`zerocam_source_ref` / `_unref`);
/// it closes when the last reference **and** the last of its frames are
/// gone. Calls on one source are serialized. Opaque.
#[allow(non_camel_case_types)]
pub struct zerocam_source {
    _opaque: [u8; 0],
}

/// A captured frame. Lifetime: references (`zerocam_frame_ref` / `_unref`);
/// until the last one goes it holds its buffer (the source cannot refill
/// it) and keeps its source open. Thread-safe: any thread may read it or
/// release it. Opaque.
#[allow(non_camel_case_types)]
pub struct zerocam_frame {
    _opaque: [u8; 0],
}

/// How to open a source; zero in any field means its default.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct zerocam_source_options {
    /// The capture format's name or fourcc (`"NV12"`, `"NV12M"`, `"YUYV"`,
    /// `"RGB24"`); NULL for NV12 (the pattern) or the device's current one.
    pub format: *const c_char,
    /// Width; 0 for 1280 (the pattern) or the device's current.
    pub width: u32,
    /// Height; 0 for 720 (the pattern) or the device's current.
    pub height: u32,
    /// Frames per second to ask for; 0 for the device's own.
    pub fps: f64,
    /// Buffers; 0 for 4.
    pub buffers: u32,
}

/// What a frame is.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct zerocam_frame_info {
    /// The driver's sequence number (the source's count where it has none).
    pub sequence: u32,
    /// When it was captured, `CLOCK_MONOTONIC`, nanoseconds.
    pub timestamp_ns: u64,
    /// Its pixel format.
    pub format: zerocam_pixel_format,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Bytes of image data the driver filled.
    pub bytes_used: usize,
    /// Planes (2 for NV12 and NV16, 1 for packed formats).
    pub plane_count: usize,
}

/// A source's counters.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct zerocam_source_stats {
    /// Frames handed out.
    pub frames: u64,
    /// Frames the driver dropped (sequence gaps).
    pub dropped: u64,
    /// Buffer planes imported (each once: buffers × planes over any number of frames).
    pub imports: u64,
    /// Plane lookups that found their buffer already imported (a frame of
    /// two memory planes counts two).
    pub cache_hits: u64,
    /// Frames that came in system memory, not as dma-bufs (GStreamer).
    pub system_memory_frames: u64,
    /// Buffers in the source's pool.
    pub buffers: usize,
    /// Memory planes per buffer.
    pub planes: usize,
}

/// A source, and its counters as of its last frame or stats call (read
/// without waiting on a `next_frame` that holds the source).
pub(crate) struct SourceObject {
    source: Mutex<Box<dyn FrameSource>>,
    stats: Mutex<StreamStats>,
}

/// A frame and the source it came from.
pub(crate) struct FrameObject {
    /// The frame (`None` never: taken only when the object drops).
    frame: Frame,
    /// The source, kept open while the frame lives.
    _source: Arc<Object>,
}

/// The frame behind handle `f`, run through `g`.
pub(crate) fn with_frame<R>(
    f: *const zerocam_frame,
    g: impl FnOnce(&Frame) -> Result<R, CapiError>,
) -> Result<R, CapiError> {
    let object = table::get(id(f), Kind::Frame, "frame")?;
    let Object::Frame(frame) = &*object else {
        return Err(CapiError::Panic("the table's kind check failed".into()));
    };
    g(&frame.frame)
}

/// Opens the source `spec` names: a V4L2 device path (`"/dev/video0"`),
/// `"libcamera:ID"` or `"libcamera"` (built with libcamera), `"unix:PATH"`
/// (a `zerocam serve` publisher), `"gst:PIPELINE"` (built with GStreamer),
/// `"zenoh:KEY?connect=ENDPOINT"` (a JPEG topic on Zenoh, built with Zenoh;
/// without `connect=`, `tcp/127.0.0.1:7447`),
/// `"pattern"` (the built-in test pattern; `"pattern:stamp"`: each frame
/// stamped with its sequence number and capture time), or NULL: the first
/// camera, else the pattern. `options` may be NULL (every default).
///
/// # Safety
/// `spec` is NULL or a NUL-terminated string; `options` is NULL or valid for
/// a read, its `format` NULL or a NUL-terminated string; `out` is NULL or
/// valid for a write.
///
/// # Errors
/// `ZEROCAM_ERROR_NOT_FOUND` for a missing device;
/// `ZEROCAM_ERROR_INVALID_ARGUMENT` for a format or size the device does not
/// take, a bad spec or pipeline; `ZEROCAM_ERROR_UNSUPPORTED` for a spec this
/// build lacks (`gst:` without GStreamer); `ZEROCAM_ERROR_IO`,
/// `ZEROCAM_ERROR_DEVICE` for the driver's failures.
#[no_mangle]
pub unsafe extern "C" fn zerocam_source_open(
    spec: *const c_char,
    options: *const zerocam_source_options,
    out: *mut *mut zerocam_source,
) -> zerocam_status {
    call("zerocam_source_open", || {
        let out = Out::new(out, "out")?;
        let device = if spec.is_null() {
            None
        } else {
            // SAFETY: not NULL; the caller's promise for `spec`.
            Some(unsafe { string(spec, "spec") }?.to_owned())
        };
        let options = if options.is_null() {
            None
        } else {
            // SAFETY: not NULL; the caller's promise for `options`.
            Some(unsafe { read(options, "options") }?)
        };
        let mut source_spec = SourceSpec::new(device);
        if let Some(o) = options {
            if !o.format.is_null() {
                // SAFETY: not NULL; the caller's promise for `options.format`.
                let name = unsafe { string(o.format, "options.format") }?;
                source_spec.format = Some(
                    name.parse::<CaptureFormat>()
                        .map_err(zerocam_capture::CaptureError::from)?,
                );
            }
            match (o.width, o.height) {
                (0, 0) => {}
                (w, h) if w > 0 && h > 0 => source_spec.size = Some((w, h)),
                (w, h) => {
                    return Err(CapiError::InvalidArgument(format!(
                        "options size {w}x{h}: give both or neither"
                    )))
                }
            }
            if o.fps != 0.0 {
                source_spec.fps = Some(o.fps);
            }
            if o.buffers != 0 {
                source_spec.buffers = o.buffers;
            }
        }
        let opened = open(&source_spec)?;
        let stats = opened.source.stats();
        let source = Object::Source(SourceObject {
            source: Mutex::new(opened.source),
            stats: Mutex::new(stats),
        });
        let h = handle(table::insert(source)?);
        // SAFETY: the caller's promise for `out`.
        unsafe { out.write(h) };
        Ok(())
    })
}

/// The next frame, waiting at most `timeout_ms` milliseconds. A new handle:
/// release it (`zerocam_frame_unref`) when done, or the source runs out of
/// buffers. The source is held for the wait: another thread's
/// `zerocam_source_next_frame` on it waits until this one returns
/// (`zerocam_source_get_stats` does not: it gives the counters as of the
/// last frame).
///
/// # Safety
/// `out` is NULL or valid for a write.
///
/// # Errors
/// `ZEROCAM_ERROR_TIMEOUT`; `ZEROCAM_ERROR_BUSY` when the caller holds every
/// buffer; `ZEROCAM_ERROR_END_OF_STREAM` at a pipeline's end;
/// `ZEROCAM_ERROR_DEVICE` for a device that went away or failed.
#[no_mangle]
pub unsafe extern "C" fn zerocam_source_next_frame(
    source: *mut zerocam_source,
    timeout_ms: u32,
    out: *mut *mut zerocam_frame,
) -> zerocam_status {
    call("zerocam_source_next_frame", || {
        let out = Out::new(out, "out")?;
        let object = table::get(id(source), Kind::Source, "source")?;
        let Object::Source(s) = &*object else {
            return Err(CapiError::Panic("the table's kind check failed".into()));
        };
        let mut source = table::lock(&s.source, "source")?;
        let frame = source.next_frame(Duration::from_millis(u64::from(timeout_ms)));
        *table::lock(&s.stats, "source")? = source.stats();
        drop(source);
        let frame = frame?;
        let frame = Object::Frame(FrameObject {
            frame,
            _source: Arc::clone(&object),
        });
        let h = handle(table::insert(frame)?);
        // SAFETY: the caller's promise for `out`.
        unsafe { out.write(h) };
        Ok(())
    })
}

/// The source's counters. While another thread waits in
/// `zerocam_source_next_frame` on this source, the counters as of the
/// source's last frame, without waiting.
///
/// # Safety
/// `out` is NULL or valid for a write of a `zerocam_source_stats`.
#[no_mangle]
pub unsafe extern "C" fn zerocam_source_get_stats(
    source: *const zerocam_source,
    out: *mut zerocam_source_stats,
) -> zerocam_status {
    call("zerocam_source_get_stats", || {
        let out = Out::new(out, "out")?;
        let object = table::get(id(source), Kind::Source, "source")?;
        let Object::Source(s) = &*object else {
            return Err(CapiError::Panic("the table's kind check failed".into()));
        };
        // A `next_frame` waiting on another thread holds the source: then
        // the counters as of its last frame, without waiting for it.
        let st = match s.source.try_lock() {
            Ok(source) => {
                let fresh = source.stats();
                *table::lock(&s.stats, "source")? = fresh;
                fresh
            }
            Err(TryLockError::WouldBlock) => *table::lock(&s.stats, "source")?,
            Err(TryLockError::Poisoned(_)) => return Err(CapiError::Poisoned { what: "source" }),
        };
        let stats = zerocam_source_stats {
            frames: st.frames,
            dropped: st.dropped,
            imports: st.cache.misses,
            cache_hits: st.cache.hits,
            system_memory_frames: st.system_memory_frames,
            buffers: st.buffers,
            planes: st.planes,
        };
        // SAFETY: the caller's promise for `out`.
        unsafe { out.write(stats) };
        Ok(())
    })
}

/// What `frame` is: sequence, timestamp, format, size, planes.
///
/// # Safety
/// `out` is NULL or valid for a write of a `zerocam_frame_info`.
#[no_mangle]
pub unsafe extern "C" fn zerocam_frame_get_info(
    frame: *const zerocam_frame,
    out: *mut zerocam_frame_info,
) -> zerocam_status {
    call("zerocam_frame_get_info", || {
        let out = Out::new(out, "out")?;
        let info = with_frame(frame, |f| {
            let t = f.tensor();
            Ok(zerocam_frame_info {
                sequence: f.sequence(),
                timestamp_ns: u64::try_from(f.timestamp().as_nanos()).unwrap_or(u64::MAX),
                format: c_format(t.format()),
                width: t.width().and_then(|w| u32::try_from(w).ok()).unwrap_or(0),
                height: t.height().and_then(|h| u32::try_from(h).ok()).unwrap_or(0),
                bytes_used: f.bytes_used(),
                plane_count: t.plane_count(),
            })
        })?;
        // SAFETY: the caller's promise for `out`.
        unsafe { out.write(info) };
        Ok(())
    })
}

/// The frame's image as a tensor (all planes, the stream's strides): a new
/// handle on the frame's buffer, no copy. It stays valid memory after the
/// frame is released, but the source may then fill the buffer again: read
/// it while you hold the frame.
///
/// # Safety
/// `out` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn zerocam_frame_tensor(
    frame: *const zerocam_frame,
    out: *mut *mut zerocam_tensor,
) -> zerocam_status {
    call("zerocam_frame_tensor", || {
        let out = Out::new(out, "out")?;
        let tensor = with_frame(frame, |f| Ok(TensorDyn::from(f.tensor().clone())))?;
        let h = new_handle(tensor)?;
        // SAFETY: the caller's promise for `out`.
        unsafe { out.write(h) };
        Ok(())
    })
}

/// Plane `index` of the frame's image as a tensor (NV12's Y is 0, UV 1), as
/// `zerocam_frame_tensor`.
///
/// # Safety
/// `out` is NULL or valid for a write.
///
/// # Errors
/// `ZEROCAM_ERROR_OUT_OF_BOUNDS` for an index at or past the plane count.
#[no_mangle]
pub unsafe extern "C" fn zerocam_frame_plane(
    frame: *const zerocam_frame,
    index: usize,
    out: *mut *mut zerocam_tensor,
) -> zerocam_status {
    call("zerocam_frame_plane", || {
        let out = Out::new(out, "out")?;
        let plane = with_frame(frame, |f| Ok(TensorDyn::from(f.tensor().plane(index)?)))?;
        let h = new_handle(plane)?;
        // SAFETY: the caller's promise for `out`.
        unsafe { out.write(h) };
        Ok(())
    })
}

/// Adds a reference to `frame`.
///
/// # Safety
/// None beyond a handle's.
#[no_mangle]
pub unsafe extern "C" fn zerocam_frame_ref(frame: *mut zerocam_frame) -> zerocam_status {
    call("zerocam_frame_ref", || {
        table::add_ref(id(frame), Kind::Frame, "frame")
    })
}

/// Drops a reference to `frame`; after the last one its buffer goes back to
/// the source.
///
/// # Safety
/// None beyond a handle's.
#[no_mangle]
pub unsafe extern "C" fn zerocam_frame_unref(frame: *mut zerocam_frame) -> zerocam_status {
    call("zerocam_frame_unref", || {
        drop(table::release(id(frame), Kind::Frame, "frame")?);
        Ok(())
    })
}

/// Adds a reference to `source`.
///
/// # Safety
/// None beyond a handle's.
#[no_mangle]
pub unsafe extern "C" fn zerocam_source_ref(source: *mut zerocam_source) -> zerocam_status {
    call("zerocam_source_ref", || {
        table::add_ref(id(source), Kind::Source, "source")
    })
}

/// Drops a reference to `source`; it closes when the last reference and
/// the last of its frames are gone.
///
/// # Safety
/// None beyond a handle's.
#[no_mangle]
pub unsafe extern "C" fn zerocam_source_unref(source: *mut zerocam_source) -> zerocam_status {
    call("zerocam_source_unref", || {
        drop(table::release(id(source), Kind::Source, "source")?);
        Ok(())
    })
}
