//! A [`Frame`] as a `GstBuffer`, without a copy: the frame's own buffer
//! mapped for reading and wrapped as `GstMemory` — one memory when every
//! plane lies in one buffer (NV12 in one dma-buf or memfd, packed formats),
//! one per buffer otherwise (NV12M) — with a `GstVideoMeta` giving each
//! plane's offset and stride. Every memory holds a share of the frame's
//! lease: the frame goes back to its source when GStreamer frees the last.
//! Frames are copied into system memory (and counted) only when asked to
//! or when a stride does not fit GStreamer's `gint`.

use std::sync::Arc;

use gstreamer as gst;
use gstreamer_video as gst_video;
use zerocam_capture::Frame;
use zerocam_tensor::{ReadOnly, Tensor, TensorMap};

use super::lease::{Lease, Leases};
use super::picture::Picture;
use super::GstEncodeError;

/// A read map and a share of the lease; the map ends (dma-buf sync END)
/// before the lease does.
struct Hold {
    map: TensorMap<u8, ReadOnly>,
    _lease: Arc<Lease>,
}

impl AsRef<[u8]> for Hold {
    fn as_ref(&self) -> &[u8] {
        &self.map
    }
}

/// A frame made a buffer, and how.
pub(crate) struct Made {
    /// The buffer (no timestamps yet).
    pub buffer: gst::Buffer,
    /// Whether the planes were copied (the frame's lease is already over).
    pub copied: bool,
    /// The memories lent (0 when copied).
    pub memories: usize,
}

/// One plane of the frame's tensor: where it lies and its rows.
struct Plane {
    /// Byte offset of its first sample in its buffer.
    start: usize,
    /// Which of the tensor's buffers it is in (1: NV12M's chroma).
    buffer: usize,
    rows: usize,
    row_bytes: usize,
    stride: usize,
}

impl Plane {
    /// Bytes from its first sample to its last.
    fn span(&self) -> usize {
        self.rows.saturating_sub(1) * self.stride + self.row_bytes
    }
}

fn unsupported(t: &Tensor<u8>, shape: &[usize], reason: String) -> GstEncodeError {
    GstEncodeError::UnsupportedFrame {
        format: t
            .format()
            .map_or_else(|| "array".into(), |f| format!("{f:?}")),
        shape: shape.to_vec(),
        reason,
    }
}

fn map_error(frame: &Frame) -> impl Fn(zerocam_tensor::Error) -> GstEncodeError + '_ {
    |source| GstEncodeError::Map {
        sequence: frame.sequence(),
        source,
    }
}

fn planes_of(frame: &Frame) -> Result<Vec<Plane>, GstEncodeError> {
    let t = frame.tensor();
    let root = t.placement().map(|p| p.root);
    (0..t.plane_count())
        .map(|i| {
            let p = t.plane(i).map_err(map_error(frame))?;
            let [rows, row_bytes] = *p.shape() else {
                return Err(unsupported(t, p.shape(), format!("plane {i} is not rows")));
            };
            Ok(Plane {
                start: p.plane_offset(),
                buffer: root.map_or(0, |r| r.planes().get(i).map_or(0, |pl| pl.buffer)),
                rows,
                row_bytes,
                stride: p.stride(0).unwrap_or(row_bytes),
            })
        })
        .collect()
}

/// `frame` as a buffer of `picture`: its buffer(s) lent (counted in
/// `leases` until GStreamer frees them), or copied when `copy` is set or a
/// stride is not one GStreamer can carry.
pub(crate) fn make(
    frame: Frame,
    picture: Picture,
    copy: bool,
    leases: &mut Leases,
) -> Result<Made, GstEncodeError> {
    let planes = planes_of(&frame)?;
    let strides: Option<Vec<i32>> = planes
        .iter()
        .map(|p| i32::try_from(p.stride).ok())
        .collect();
    let (mut buffer, offsets, strides, memories) = match strides {
        Some(strides) if !copy => {
            let maps = maps_of(&frame, &planes)?;
            let memories = maps.len();
            let (buffer, offsets) = wrap(leases.lend(frame), maps, &planes);
            (buffer, offsets, strides, memories)
        }
        _ => {
            let (buffer, offsets, strides) = copy_planes(&frame, &planes)?;
            drop(frame); // the copy is GStreamer's: the lease ends now
            (buffer, offsets, strides, 0)
        }
    };
    let buf = buffer.get_mut().ok_or(GstEncodeError::Ended)?;
    gst_video::VideoMeta::add_full(
        buf,
        gst_video::VideoFrameFlags::empty(),
        picture.format,
        picture.width,
        picture.height,
        &offsets,
        &strides,
    )
    .map_err(|e| GstEncodeError::UnsupportedFrame {
        format: picture.format.to_string(),
        shape: vec![picture.height as usize, picture.width as usize],
        reason: e.to_string(),
    })?;
    Ok(Made {
        buffer,
        copied: memories == 0,
        memories,
    })
}

/// A read map per buffer of the frame, each from its first plane's first
/// sample: the whole tensor when every plane is in one buffer, else each
/// plane's own.
fn maps_of(frame: &Frame, planes: &[Plane]) -> Result<Vec<Map>, GstEncodeError> {
    let t = frame.tensor();
    let one_buffer = planes.iter().all(|p| p.buffer == 0);
    if one_buffer {
        let map = t.map_read().map_err(map_error(frame))?;
        let base = t.plane_offset();
        let fits = planes
            .iter()
            .all(|p| p.start >= base && p.start - base + p.span() <= map.len());
        if fits {
            return Ok(vec![Map {
                map,
                base,
                buffer: 0,
            }]);
        }
    }
    (0..planes.len())
        .map(|i| {
            let p = t.plane(i).map_err(map_error(frame))?;
            Ok(Map {
                map: p.map_read().map_err(map_error(frame))?,
                base: p.plane_offset(),
                buffer: planes[i].buffer,
            })
        })
        .collect()
}

/// A read map of one of the frame's buffers from byte `base` on.
struct Map {
    map: TensorMap<u8, ReadOnly>,
    base: usize,
    buffer: usize,
}

/// The maps as the memories of one buffer, each holding the lease; each
/// plane's offset in it (the memories laid end to end).
fn wrap(lease: Arc<Lease>, maps: Vec<Map>, planes: &[Plane]) -> (gst::Buffer, Vec<usize>) {
    let mut at = 0;
    let mut offsets = vec![0; planes.len()];
    let mut buffer = gst::Buffer::new();
    let one = maps.len() == 1;
    if let Some(buf) = buffer.get_mut() {
        for (m, Map { map, base, buffer }) in maps.into_iter().enumerate() {
            for (i, p) in planes.iter().enumerate() {
                // One map: every plane in it; one map per plane: plane `m`.
                if (one && p.buffer == buffer) || (!one && i == m) {
                    offsets[i] = at + (p.start - base.min(p.start));
                }
            }
            at += map.len();
            buf.append_memory(gst::Memory::from_slice(Hold {
                map,
                _lease: Arc::clone(&lease),
            }));
        }
    }
    (buffer, offsets)
}

/// The planes copied row by row, packed, into one system-memory buffer.
fn copy_planes(
    frame: &Frame,
    planes: &[Plane],
) -> Result<(gst::Buffer, Vec<usize>, Vec<i32>), GstEncodeError> {
    let t = frame.tensor();
    let total: usize = planes.iter().map(|p| p.rows * p.row_bytes).sum();
    let mut data = Vec::with_capacity(total);
    let mut offsets = Vec::with_capacity(planes.len());
    let mut strides = Vec::with_capacity(planes.len());
    for (i, p) in planes.iter().enumerate() {
        let shape = [p.rows, p.row_bytes];
        offsets.push(data.len());
        strides.push(
            i32::try_from(p.row_bytes)
                .map_err(|_| unsupported(t, &shape, "rows wider than 2 GiB".into()))?,
        );
        let plane = t.plane(i).map_err(map_error(frame))?;
        let map = plane.map_read().map_err(map_error(frame))?;
        for r in 0..p.rows {
            let start = r * p.stride;
            let row = map.get(start..start + p.row_bytes).ok_or_else(|| {
                let reason = format!("plane {i}'s map of {} bytes is short", map.len());
                unsupported(t, &shape, reason)
            })?;
            data.extend_from_slice(row);
        }
    }
    Ok((gst::Buffer::from_mut_slice(data), offsets, strides))
}
