//! A [`Frame`] as a `GstBuffer`, without a copy: one `GstMemory` when every
//! plane lies in one buffer (NV12 in one dma-buf or memfd, packed formats),
//! one per buffer otherwise (NV12M), with a `GstVideoMeta` giving each
//! plane's offset and stride. A buffer with an fd becomes memory over a dup
//! of that fd — `GstDmaBufMemory` for a dma-buf, `GstFdMemory` for a memfd
//! ([`zerocam_capture::gst::fd_memory`]) — so that dma-buf importers take
//! it as it is; a buffer without one (heap tensors) is its CPU map wrapped.
//! Every memory holds a share of the frame's lease: the frame goes back to
//! its source when GStreamer frees the last. Frames are copied into system
//! memory (and counted) only when asked to or when a stride does not fit
//! GStreamer's `gint`.

use std::sync::Arc;

use gstreamer as gst;
use gstreamer_video as gst_video;
use std::os::fd::OwnedFd;

use zerocam_capture::gst::{fd_memory, FdMemoryKind};
use zerocam_capture::Frame;
use zerocam_tensor::{Access, ReadOnly, Tensor, TensorMap, TensorMemory};

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
    /// The memories lent, by kind (none when copied).
    pub memories: Memories,
}

/// The memories a frame was lent as, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Memories {
    /// `GstDmaBufMemory` over a dup of a dma-buf's fd.
    pub dmabuf: usize,
    /// `GstFdMemory` over a dup of a memfd's fd.
    pub fd: usize,
    /// Wrapped CPU maps (heap tensors, or an fd GStreamer refused).
    pub mapped: usize,
}

impl Memories {
    /// All of them.
    pub(crate) fn total(&self) -> usize {
        self.dmabuf + self.fd + self.mapped
    }
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
            let (buffer, offsets, memories) = lend(frame, &planes, leases)?;
            (buffer, offsets, strides, memories)
        }
        _ => {
            let (buffer, offsets, strides) = copy_planes(&frame, &planes)?;
            drop(frame); // the copy is GStreamer's: the lease ends now
            (buffer, offsets, strides, Memories::default())
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
        copied: memories.total() == 0,
        memories,
    })
}

/// `frame` lent as the memories of a buffer: over its fds when it has them
/// (GStreamer reads them meanwhile: a device borrow refuses CPU writers),
/// else over its CPU maps; each plane's offset in the buffer.
fn lend(
    frame: Frame,
    planes: &[Plane],
    leases: &mut Leases,
) -> Result<(gst::Buffer, Vec<usize>, Memories), GstEncodeError> {
    if let Some(fds) = fds_of(&frame, planes)? {
        let borrow = frame
            .tensor()
            .device_borrow(Access::Read)
            .map_err(map_error(&frame))?;
        let sequence = frame.sequence();
        let lease = leases.lend(frame, Some(borrow));
        match fd_buffer(&lease, fds, planes) {
            Ok(made) => return Ok(made),
            Err(e) => {
                // The memories made so far were dropped with their shares:
                // the frame is taken back and lent as its maps instead.
                log::warn!("frame {sequence}: not lent as its fds ({e}); lent as its CPU maps");
                let Some(frame) = leases.unlend(&lease) else {
                    return Err(GstEncodeError::Ended);
                };
                return lend_maps(frame, planes, leases);
            }
        }
    }
    lend_maps(frame, planes, leases)
}

/// `frame` lent as its CPU maps, wrapped.
fn lend_maps(
    frame: Frame,
    planes: &[Plane],
    leases: &mut Leases,
) -> Result<(gst::Buffer, Vec<usize>, Memories), GstEncodeError> {
    let maps = maps_of(&frame, planes)?;
    let memories = Memories {
        mapped: maps.len(),
        ..Memories::default()
    };
    let (buffer, offsets) = wrap(leases.lend(frame, None), maps, planes);
    Ok((buffer, offsets, memories))
}

/// One buffer of a frame as the memory GStreamer will own: a dup of its fd,
/// its kind, and the bytes of its file the memory covers.
struct Fd {
    fd: OwnedFd,
    kind: FdMemoryKind,
    offset: usize,
    size: usize,
}

/// A dup of the fd of each buffer of the frame, with the bytes its planes
/// span (every plane in one buffer: from the first plane's first sample to
/// the last one's last; else one per plane); `None` when the frame's memory
/// has no fd (heap, GL).
fn fds_of(frame: &Frame, planes: &[Plane]) -> Result<Option<Vec<Fd>>, GstEncodeError> {
    let t = frame.tensor();
    let kind = match t.memory() {
        TensorMemory::Dma => FdMemoryKind::DmaBuf,
        TensorMemory::Shm => FdMemoryKind::Memfd,
        _ => return Ok(None),
    };
    let dup = |t: &Tensor<u8>| -> Result<Option<OwnedFd>, GstEncodeError> {
        t.fd()
            .map(zerocam_tensor::dup_fd)
            .transpose()
            .map_err(map_error(frame))
    };
    if planes.iter().all(|p| p.buffer == 0) {
        let start = planes.iter().map(|p| p.start).min().unwrap_or(0);
        let end = planes.iter().map(|p| p.start + p.span()).max().unwrap_or(0);
        return Ok(dup(t)?.map(|fd| {
            vec![Fd {
                fd,
                kind,
                offset: start,
                size: end - start,
            }]
        }));
    }
    let mut fds = Vec::with_capacity(planes.len());
    for (i, p) in planes.iter().enumerate() {
        let plane = t.plane(i).map_err(map_error(frame))?;
        let Some(fd) = dup(&plane)? else {
            return Ok(None);
        };
        fds.push(Fd {
            fd,
            kind,
            offset: p.start,
            size: p.span(),
        });
    }
    Ok(Some(fds))
}

/// The fds as the memories of one buffer, each holding a share of `lease`
/// until GStreamer frees it; each plane's offset in the buffer (the
/// memories laid end to end).
fn fd_buffer(
    lease: &Arc<Lease>,
    fds: Vec<Fd>,
    planes: &[Plane],
) -> Result<(gst::Buffer, Vec<usize>, Memories), zerocam_capture::gst::GstError> {
    let one = fds.len() == 1;
    let mut offsets = vec![0; planes.len()];
    let mut memories = Memories::default();
    let mut buffer = gst::Buffer::new();
    let mut at = 0;
    for (m, f) in fds.into_iter().enumerate() {
        for (i, p) in planes.iter().enumerate() {
            // One memory: every plane in it; one per plane: plane `m`.
            if one || i == m {
                offsets[i] = at + (p.start - f.offset.min(p.start));
            }
        }
        at += f.size;
        match f.kind {
            FdMemoryKind::DmaBuf => memories.dmabuf += 1,
            FdMemoryKind::Memfd => memories.fd += 1,
        }
        let memory = fd_memory(f.fd, f.kind, f.offset, f.size, Arc::clone(lease))?;
        if let Some(buf) = buffer.get_mut() {
            buf.append_memory(memory);
        }
    }
    Ok((buffer, offsets, memories))
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
