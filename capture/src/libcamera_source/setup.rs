//! Calls into libcamera made on the libcamera thread: describing cameras, and
//! acquiring, configuring and allocating one.

use std::os::fd::{AsFd, BorrowedFd};

use libcamera::camera::ActiveCamera;
use libcamera::camera_manager::CameraManager;
use libcamera::color_space::{ColorSpace, Range as LcRange, YcbcrEncoding};
use libcamera::framebuffer::AsFrameBuffer;
use libcamera::framebuffer_allocator::{FrameBuffer, FrameBufferAllocator};
use libcamera::geometry::Size;
use libcamera::pixel_format::PixelFormat as LcPixelFormat;
use libcamera::properties;
use libcamera::stream::{Stream, StreamRole};
use nix::errno::Errno;
use zerocam_tensor::{ColorSpec, FdIdentity, Matrix, Range};

use super::events::{BufferPlanes, Configured};
use super::layout::{buffer_layout, capture_format, drm_fourcc, BufferLayout, LcPlane};
use super::worker::errno_of;
use super::{call_failed, LibcameraCamera, LibcameraConfig, LibcameraFormat, LIBCAMERA};
use crate::{CaptureError, CaptureFormat, FourCc, PlaneLayout, Result, StreamFormat};

/// Roles tried in order when generating a configuration.
const ROLES: [StreamRole; 3] = [
    StreamRole::VideoRecording,
    StreamRole::ViewFinder,
    StreamRole::StillCapture,
];

/// The acquired camera (`'static`: see `OpenCamera::active`), its stream, allocator, buffers.
pub(crate) type Acquired = (
    ActiveCamera<'static>,
    Stream,
    FrameBufferAllocator,
    Vec<FrameBuffer>,
    Configured,
);

fn location_name(l: properties::Location) -> &'static str {
    match l {
        properties::Location::CameraFront => "front",
        properties::Location::CameraBack => "back",
        properties::Location::CameraExternal => "external",
    }
}

/// Every camera with its formats and sizes.
pub(crate) fn describe(manager: &CameraManager) -> Vec<LibcameraCamera> {
    let list = manager.cameras();
    list.iter()
        .map(|camera| {
            let props = camera.properties();
            let formats = camera
                .generate_first_supported_configuration(&ROLES)
                .and_then(|(cfg, _)| {
                    let sc = cfg.get(0)?;
                    let formats = sc.formats();
                    let pixel_formats = formats.pixel_formats();
                    Some(
                        pixel_formats
                            .into_iter()
                            .map(|pf| {
                                let fourcc = FourCc::from_u32(pf.fourcc());
                                let range = formats.range(pf);
                                LibcameraFormat {
                                    fourcc,
                                    name: pf.to_string(),
                                    capture: capture_format(fourcc, 1),
                                    sizes: formats
                                        .sizes(pf)
                                        .iter()
                                        .map(|s| (s.width, s.height))
                                        .collect(),
                                    min: (range.min.width, range.min.height),
                                    max: (range.max.width, range.max.height),
                                }
                            })
                            .collect(),
                    )
                })
                .unwrap_or_default();
            LibcameraCamera {
                id: camera.id().to_owned(),
                model: props.get::<properties::Model>().ok().map(|m| m.0),
                location: props
                    .get::<properties::Location>()
                    .ok()
                    .map(|l| location_name(l).to_owned()),
                formats,
            }
        })
        .collect()
}

fn summary(format: FourCc, (w, h): (u32, u32), buffers: u32) -> String {
    format!("{format} {w}x{h}, {buffers} buffers")
}

/// Acquires the camera `config` names, configures one stream as asked, and
/// allocates its buffers.
pub(crate) fn configure(manager: &CameraManager, config: &LibcameraConfig) -> Result<Acquired> {
    let list = manager.cameras();
    if list.is_empty() {
        return Err(CaptureError::NoCamera);
    }
    let camera = match &config.camera {
        None => list.get(0),
        Some(id) => manager.get(id),
    };
    let Some(camera) = camera else {
        let ids: Vec<String> = list.iter().map(|c| c.id().to_owned()).collect();
        return Err(CaptureError::UnknownCamera {
            id: config.camera.clone().unwrap_or_default(),
            available: ids.join(", "),
        });
    };
    let id = camera.id().to_owned();
    let name = format!("{LIBCAMERA}:{id}");
    let camera_name = name.as_str();
    let lc_error =
        |operation: &'static str| move |errno: Errno| call_failed(camera_name, operation, errno);
    let mut active: ActiveCamera<'static> = camera
        .acquire()
        .map_err(|e| lc_error("acquire")(errno_of(&e)))?;
    drop(camera);

    let drm = drm_fourcc(config.format);
    let wanted = (config.width, config.height);
    let asked = summary(drm, wanted, config.buffers);
    let invalid = || CaptureError::ConfigInvalid {
        camera: name.clone(),
        asked: asked.clone(),
    };
    let (mut cfg, _) = active
        .generate_first_supported_configuration(&ROLES)
        .ok_or_else(invalid)?;
    {
        let mut sc = cfg.get_mut(0).ok_or_else(invalid)?;
        sc.set_pixel_format(LcPixelFormat::new(drm.to_u32(), 0));
        sc.set_size(Size {
            width: config.width,
            height: config.height,
        });
        sc.set_buffer_count(config.buffers);
    }
    let status = cfg.validate();
    if status.is_invalid() {
        return Err(invalid());
    }
    let (got_drm, got_size, got_buffers, stride) = {
        let sc = cfg.get(0).ok_or_else(invalid)?;
        let size = sc.get_size();
        (
            FourCc::from_u32(sc.get_pixel_format().fourcc()),
            (size.width, size.height),
            sc.get_buffer_count(),
            sc.get_stride() as usize,
        )
    };
    let mut adjustments = Vec::new();
    if got_drm != drm {
        adjustments.push(format!("format {drm} -> {got_drm}"));
    }
    if got_size != wanted {
        adjustments.push(format!(
            "size {}x{} -> {}x{}",
            wanted.0, wanted.1, got_size.0, got_size.1
        ));
    }
    let shape_changed = !adjustments.is_empty();
    if got_buffers != config.buffers {
        adjustments.push(format!("buffers {} -> {got_buffers}", config.buffers));
    }
    if shape_changed && !config.accept_adjusted {
        return Err(CaptureError::ConfigAdjusted {
            camera: name.clone(),
            asked,
            got: summary(got_drm, got_size, got_buffers),
        });
    }
    active
        .configure(&mut cfg)
        .map_err(|e| lc_error("configure")(errno_of(&e)))?;
    let (stream, color) = cfg
        .get(0)
        .and_then(|sc| Some((sc.stream()?, color_spec(sc.get_color_space()))))
        .ok_or(Errno::EINVAL)
        .map_err(lc_error("configure (no stream)"))?;
    let mut allocator = FrameBufferAllocator::new(&active);
    let frame_buffers = allocator
        .alloc(&stream)
        .map_err(|e| lc_error("allocate buffers")(errno_of(&e)))?;
    if frame_buffers.len() < 2 {
        return Err(CaptureError::TooFewBuffers {
            path: name.clone().into(),
            requested: config.buffers,
            granted: u32::try_from(frame_buffers.len()).unwrap_or(u32::MAX),
        });
    }
    let unsupported = || CaptureError::UnsupportedFormat {
        path: name.clone().into(),
        fourcc: got_drm,
        offered: CaptureFormat::names(),
    };
    let pixel = capture_format(got_drm, 1)
        .or_else(|| capture_format(got_drm, 2))
        .ok_or_else(unsupported)?
        .pixel;
    let buffers = frame_buffers
        .iter()
        .map(|fb| buffer_planes(fb, pixel).map_err(lc_error("read buffer planes")))
        .collect::<Result<Vec<_>>>()?;
    let first = buffers
        .first()
        .ok_or(Errno::ENOMEM)
        .map_err(lc_error("allocate buffers"))?;
    let planes = match first.layout {
        BufferLayout::OneFile { start, extent, .. } => vec![PlaneLayout {
            bytes_per_line: u32::try_from(stride).unwrap_or(u32::MAX),
            size: u32::try_from(extent - start).unwrap_or(u32::MAX),
        }],
        BufferLayout::TwoFiles { planes } => planes
            .iter()
            .map(|&(_, offset, end)| PlaneLayout {
                bytes_per_line: u32::try_from(stride).unwrap_or(u32::MAX),
                size: u32::try_from(end - offset).unwrap_or(u32::MAX),
            })
            .collect(),
    };
    let format = StreamFormat {
        format: capture_format(got_drm, planes.len()).ok_or_else(unsupported)?,
        width: got_size.0,
        height: got_size.1,
        planes,
        color,
    };
    let configured = Configured {
        key: 0,
        id,
        name,
        format,
        buffers,
        adjustments,
    };
    Ok((active, stream, allocator, frame_buffers, configured))
}

/// The spec a configured stream's frames are read with: the Y'CbCr encoding
/// and range of its `ColorSpace` (`Rec601` → BT.601; `Rec709` → BT.709;
/// `Rec2020`, which zerocam has no equations for, → BT.709, the nearest; `None`
/// (RGB or raw) → BT.601, unused). A pipeline handler that leaves the colour
/// space unset gets BT.601 limited range, the V4L2 default for YCbCr and what
/// libcamera's virtual camera makes (libyuv's `ARGBToNV12`).
fn color_spec(color_space: Option<ColorSpace>) -> ColorSpec {
    let Some(cs) = color_space else {
        return ColorSpec::BT601_LIMITED;
    };
    let matrix = match cs.ycbcr_encoding {
        YcbcrEncoding::Rec709 | YcbcrEncoding::Rec2020 => Matrix::Bt709,
        YcbcrEncoding::Rec601 | YcbcrEncoding::None => Matrix::Bt601,
    };
    let range = match cs.range {
        LcRange::Full => Range::Full,
        LcRange::Limited => Range::Limited,
    };
    ColorSpec::new(matrix, range)
}

/// Dups and identifies each plane of `fb`.
#[allow(unsafe_code)] // the libcamera FFI edge: a plane's raw fd
fn buffer_planes(
    fb: &FrameBuffer,
    pixel: zerocam_tensor::PixelFormat,
) -> std::result::Result<BufferPlanes, Errno> {
    let mut fds = Vec::new();
    let mut planes = Vec::new();
    for p in &*fb.planes() {
        let raw = p.fd();
        if raw < 0 {
            return Err(Errno::EBADF);
        }
        // SAFETY: `raw` is the plane's fd, owned by the FrameBuffer `fb`, which
        // is alive for this whole call; it is only borrowed here to dup it.
        let fd = unsafe { BorrowedFd::borrow_raw(raw) };
        let dup = fd.try_clone_to_owned().map_err(|e| errno_of(&e))?;
        planes.push(LcPlane {
            file: FdIdentity::of(dup.as_fd())?,
            offset: p.offset().ok_or(Errno::EINVAL)?,
            length: p.len(),
        });
        fds.push(dup);
    }
    let layout = buffer_layout(pixel, &planes).map_err(|_| Errno::EINVAL)?;
    Ok(BufferPlanes {
        fds,
        planes,
        layout,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libcameras_colour_spaces_map_to_their_encoding_and_range() {
        let cases = [
            (ColorSpace::smpte170m(), ColorSpec::BT601_LIMITED),
            (ColorSpace::rec709(), ColorSpec::BT709_LIMITED),
            (ColorSpace::sycc(), ColorSpec::BT601_FULL),
            (ColorSpace::rec2020(), ColorSpec::BT709_LIMITED),
            (ColorSpace::srgb(), ColorSpec::BT601_FULL),
        ];
        for (cs, want) in cases {
            assert_eq!(color_spec(Some(cs)), want, "{cs}");
        }
        assert_eq!(color_spec(None), ColorSpec::BT601_LIMITED);
    }
}
