//! From GStreamer's caps and video meta to zerocam's frame layout.

use gstreamer as gst;
use gstreamer_video as gst_video;
use zerocam_tensor::{ImageLayout, PixelFormat};

use super::GstError;
use crate::{CaptureFormat, FourCc, PlaneLayout, StreamFormat, CAPTURE_FORMATS};

/// BGRx (and BGRA): four bytes a pixel, read as BGRA.
const BGRX: CaptureFormat = CaptureFormat {
    fourcc: FourCc(*b"XR24"),
    name: "BGRx",
    pixel: PixelFormat::Bgra,
    memory_planes: 1,
};

/// RGBx (and RGBA): four bytes a pixel, read as RGBA.
const RGBX: CaptureFormat = CaptureFormat {
    fourcc: FourCc(*b"XB24"),
    name: "RGBx",
    pixel: PixelFormat::Rgba,
    memory_planes: 1,
};

/// The frame format of GStreamer's `format`, or `None`.
pub(crate) fn capture_format(format: gst_video::VideoFormat) -> Option<CaptureFormat> {
    use gst_video::VideoFormat as F;
    let name = match format {
        F::Nv12 => "NV12",
        F::Nv16 => "NV16",
        F::Yuy2 => "YUYV",
        F::Uyvy => "UYVY",
        F::Rgb => "RGB24",
        F::Bgr => "BGR24",
        F::Gray8 => "GREY",
        F::Bgrx | F::Bgra => return Some(BGRX),
        F::Rgbx | F::Rgba => return Some(RGBX),
        _ => return None,
    };
    CAPTURE_FORMATS.into_iter().find(|f| f.name == name)
}

/// The formats zerocam takes, as GStreamer names them.
const FORMATS: [&str; 11] = [
    "NV12", "NV16", "YUY2", "UYVY", "RGB", "BGR", "GRAY8", "BGRx", "RGBx", "BGRA", "RGBA",
];

/// The appsink's caps: [`FORMATS`] in system memory, and as dma-bufs
/// (`memory:DMABuf`), any size and rate.
pub(crate) fn sink_caps() -> gst::Caps {
    let raw = gst::Structure::builder("video/x-raw")
        .field("format", gst::List::new(FORMATS))
        .build();
    gst::Caps::builder_full()
        .structure(raw.clone())
        .structure_with_features(raw, gst::CapsFeatures::new(["memory:DMABuf"]))
        .build()
}

/// What one sample's caps and meta say about its frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FrameLayout {
    pub format: StreamFormat,
    /// The image over the buffer's bytes (plane offsets from the buffer start).
    pub image: ImageLayout,
}

fn unsupported(caps: &gst::CapsRef, reason: impl Into<String>) -> GstError {
    GstError::UnsupportedCaps {
        caps: caps.to_string(),
        reason: reason.into(),
    }
}

/// The frame layout of a sample with `caps` whose buffer carries `meta`
/// (strides and offsets; without one, the caps' default layout).
pub(crate) fn frame_layout(
    caps: &gst::CapsRef,
    meta: Option<(&[i32], &[usize])>,
) -> Result<FrameLayout, GstError> {
    let info = gst_video::VideoInfo::from_caps(caps)
        .map_err(|e| unsupported(caps, format!("not raw video ({e})")))?;
    let format = capture_format(info.format()).ok_or_else(|| {
        unsupported(
            caps,
            format!(
                "{} (zerocam takes NV12, NV16, YUY2, UYVY, RGB, BGR, GRAY8, BGRx/RGBx)",
                info.format().to_str()
            ),
        )
    })?;
    let (strides, offsets): (Vec<i32>, Vec<usize>) = match meta {
        Some((s, o)) => (s.to_vec(), o.to_vec()),
        None => (info.stride().to_vec(), info.offset().to_vec()),
    };
    let planes = format.pixel.plane_count();
    if strides.len() < planes || offsets.len() < planes {
        return Err(unsupported(
            caps,
            format!("{} planes described, {planes} needed", strides.len()),
        ));
    }
    let stride = usize::try_from(strides[0]).map_err(|_| unsupported(caps, "a negative stride"))?;
    if strides[..planes].iter().any(|&s| s != strides[0]) {
        return Err(unsupported(
            caps,
            format!("planes with different strides {strides:?}"),
        ));
    }
    let (width, height) = (info.width() as usize, info.height() as usize);
    let mut image = ImageLayout::new(width, height, format.pixel)
        .with_row_stride(stride)
        .with_start_offset(offsets[0]);
    if planes > 1 {
        let between = offsets[1]
            .checked_sub(offsets[0])
            .ok_or_else(|| unsupported(caps, format!("plane offsets {offsets:?} out of order")))?;
        image = image.with_plane_offset(between);
    }
    let bytes_per_line =
        u32::try_from(stride).map_err(|_| unsupported(caps, "a stride past 4 GiB"))?;
    let size = u32::try_from(info.size()).map_err(|_| unsupported(caps, "a frame past 4 GiB"))?;
    let colorimetry = info.colorimetry();
    let color = color_spec(&colorimetry, format.pixel);
    Ok(FrameLayout {
        format: StreamFormat {
            format,
            width: info.width(),
            height: info.height(),
            planes: vec![PlaneLayout {
                bytes_per_line,
                size,
            }],
            color,
        },
        image,
    })
}

/// How to read the frames' YCbCr: BT.709 or BT.601, full or limited range.
fn color_spec(c: &gst_video::VideoColorimetry, pixel: PixelFormat) -> zerocam_tensor::ColorSpec {
    use zerocam_tensor::{ColorSpec, Matrix, Range};
    let matrix = match c.matrix() {
        gst_video::VideoColorMatrix::Bt709 => Matrix::Bt709,
        _ => Matrix::Bt601,
    };
    let range = match c.range() {
        gst_video::VideoColorRange::Range0_255 => Range::Full,
        _ => Range::Limited,
    };
    let rgb = matches!(
        pixel,
        PixelFormat::Rgb | PixelFormat::Bgr | PixelFormat::Rgba | PixelFormat::Bgra
    );
    if rgb {
        ColorSpec::default() // not read as YCbCr
    } else {
        ColorSpec::new(matrix, range)
    }
}

/// The layout of a frame whose two planes arrive as two memories: NV12M /
/// NV16M, one plane layout per memory.
pub(crate) fn split_planes(layout: &mut FrameLayout) {
    let f = &mut layout.format;
    let split = match f.format.name {
        "NV12" => "NV12M",
        "NV16" => "NV16M",
        _ => return,
    };
    if let Some(two) = CAPTURE_FORMATS.into_iter().find(|c| c.name == split) {
        let (h, bpl) = (
            f.height as usize,
            f.planes.first().map_or(0, |p| p.bytes_per_line),
        );
        let size = |rows: usize| u32::try_from(rows * bpl as usize).unwrap_or(u32::MAX);
        f.format = two;
        f.planes = vec![
            PlaneLayout {
                bytes_per_line: bpl,
                size: size(h),
            },
            PlaneLayout {
                bytes_per_line: bpl,
                size: size(two.pixel.plane_rows(1, h)),
            },
        ];
    }
}
