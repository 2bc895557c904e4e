//! A [`Frame`] as a `GstBuffer`: each plane of the frame's own buffer is
//! one `GstMemory` over the plane's CPU map (no bytes copied), described by a
//! `GstVideoMeta` (offsets, strides), and holding a share of the frame's
//! lease: the frame goes back to its source when GStreamer frees the last
//! memory. Frames whose planes cannot be described, or when the sink is
//! told not to hold frames, are copied into system memory and counted.

use std::sync::Arc;

use gstreamer as gst;
use gstreamer_video as gst_video;
use zerocam_capture::Frame;
use zerocam_tensor::{PixelFormat, ReadOnly, Tensor, TensorMap};

use super::lease::{Lease, Leases};
use super::GstEncodeError;

/// GStreamer's name of a frame's pixel format; `None` for formats GStreamer
/// 1.22 has no raw video format for.
pub(crate) fn video_format(format: PixelFormat) -> Option<gst_video::VideoFormat> {
    use gst_video::VideoFormat as V;
    Some(match format {
        PixelFormat::Rgb => V::Rgb,
        PixelFormat::Bgr => V::Bgr,
        PixelFormat::Rgba => V::Rgba,
        PixelFormat::Bgra => V::Bgra,
        PixelFormat::Grey => V::Gray8,
        PixelFormat::Yuyv => V::Yuy2,
        PixelFormat::Uyvy => V::Uyvy,
        PixelFormat::Nv12 => V::Nv12,
        PixelFormat::Nv16 => V::Nv16,
        _ => return None,
    })
}

/// What a frame is to GStreamer: format and size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Picture {
    /// The raw video format.
    pub format: gst_video::VideoFormat,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

impl Picture {
    /// The picture of `frame`'s tensor, or why it has none.
    pub(crate) fn of(frame: &Frame) -> Result<Picture, GstEncodeError> {
        let t = frame.tensor();
        let refuse = |reason: &str| GstEncodeError::UnsupportedFrame {
            format: t
                .format()
                .map_or_else(|| "array".into(), |f| format!("{f:?}")),
            shape: t.shape().to_vec(),
            reason: reason.into(),
        };
        let pixel = t.format().ok_or_else(|| refuse("not an image tensor"))?;
        let format = video_format(pixel).ok_or_else(|| refuse("no GStreamer raw video format"))?;
        if t.placement().is_some_and(|p| p.frames != 1) {
            return Err(refuse("a batch of images is not one frame"));
        }
        let size = |v: Option<usize>| v.and_then(|v| u32::try_from(v).ok());
        match (size(t.width()), size(t.height())) {
            (Some(width), Some(height)) => Ok(Picture {
                format,
                width,
                height,
            }),
            _ => Err(refuse("no width and height")),
        }
    }

    /// Plain `video/x-raw` caps of the picture at `fps` frames per second.
    pub(crate) fn caps(&self, fps: u32) -> Result<gst::Caps, GstEncodeError> {
        let fps = i32::try_from(fps).unwrap_or(i32::MAX);
        gst_video::VideoInfo::builder(self.format, self.width, self.height)
            .fps(gst::Fraction::new(fps, 1))
            .build()
            .and_then(|info| info.to_caps())
            .map_err(|e| GstEncodeError::UnsupportedFrame {
                format: self.format.to_string(),
                shape: vec![self.height as usize, self.width as usize],
                reason: e.to_string(),
            })
    }
}

/// One plane's read map and a share of the lease; the map ends (dma-buf
/// sync END) before the lease does.
struct PlaneHold {
    map: TensorMap<u8, ReadOnly>,
    _lease: Arc<Lease>,
}

impl AsRef<[u8]> for PlaneHold {
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
    /// The buffer's memories: one per plane.
    pub planes: usize,
}

/// One plane of the frame's tensor: its read map and its row layout.
struct Plane {
    map: TensorMap<u8, ReadOnly>,
    rows: usize,
    row_bytes: usize,
    stride: usize,
}

fn planes_of(frame: &Frame) -> Result<Vec<Plane>, GstEncodeError> {
    let t: &Tensor<u8> = frame.tensor();
    let map_err = |source| GstEncodeError::Map {
        sequence: frame.sequence(),
        source,
    };
    (0..t.plane_count())
        .map(|i| {
            let p = t.plane(i).map_err(map_err)?;
            let (rows, row_bytes) = match p.shape() {
                [rows, samples] => (*rows, *samples),
                shape => {
                    return Err(GstEncodeError::UnsupportedFrame {
                        format: t
                            .format()
                            .map_or_else(|| "array".into(), |f| format!("{f:?}")),
                        shape: shape.to_vec(),
                        reason: format!("plane {i} is not rows of samples"),
                    })
                }
            };
            let stride = p.stride(0).unwrap_or(row_bytes);
            let map = p.map_read().map_err(map_err)?;
            Ok(Plane {
                map,
                rows,
                row_bytes,
                stride,
            })
        })
        .collect()
}

/// `frame` as a buffer of `picture`: its planes wrapped (the frame lent,
/// counted in `leases` until GStreamer frees them), or copied when `copy` is
/// set or a plane's stride is not one GStreamer can carry.
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
    let (mut buffer, offsets, strides, copied) = match strides {
        Some(strides) if !copy => {
            let (buffer, offsets) = wrap(leases.lend(frame), planes);
            (buffer, offsets, strides, false)
        }
        _ => {
            let (buffer, offsets, strides) = copy_planes(&planes)?;
            drop(planes);
            drop(frame); // the copy is GStreamer's: the lease ends now
            (buffer, offsets, strides, true)
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
    let planes = offsets.len();
    Ok(Made {
        buffer,
        copied,
        planes,
    })
}

/// Each plane's map as a memory of one buffer, each holding the lease.
fn wrap(lease: Arc<Lease>, planes: Vec<Plane>) -> (gst::Buffer, Vec<usize>) {
    let mut buffer = gst::Buffer::new();
    let mut offsets = Vec::with_capacity(planes.len());
    let mut at = 0;
    if let Some(buf) = buffer.get_mut() {
        for plane in planes {
            offsets.push(at);
            at += plane.map.len();
            buf.append_memory(gst::Memory::from_slice(PlaneHold {
                map: plane.map,
                _lease: Arc::clone(&lease),
            }));
        }
    }
    (buffer, offsets)
}

/// The planes copied row by row, packed, into one system-memory buffer.
fn copy_planes(planes: &[Plane]) -> Result<(gst::Buffer, Vec<usize>, Vec<i32>), GstEncodeError> {
    let total: usize = planes.iter().map(|p| p.rows * p.row_bytes).sum();
    let mut data = Vec::with_capacity(total);
    let mut offsets = Vec::with_capacity(planes.len());
    let mut strides = Vec::with_capacity(planes.len());
    for p in planes {
        offsets.push(data.len());
        strides.push(
            i32::try_from(p.row_bytes).map_err(|_| GstEncodeError::UnsupportedFrame {
                format: "image".into(),
                shape: vec![p.rows, p.row_bytes],
                reason: "rows wider than 2 GiB".into(),
            })?,
        );
        for r in 0..p.rows {
            let start = r * p.stride;
            let row = p.map.get(start..start + p.row_bytes).ok_or_else(|| {
                GstEncodeError::UnsupportedFrame {
                    format: "image".into(),
                    shape: vec![p.rows, p.row_bytes],
                    reason: format!(
                        "a plane map of {} bytes is shorter than its rows",
                        p.map.len()
                    ),
                }
            })?;
            data.extend_from_slice(row);
        }
    }
    Ok((gst::Buffer::from_mut_slice(data), offsets, strides))
}
