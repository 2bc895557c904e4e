//! What a frame is to GStreamer: its raw video format, size and caps.

use gstreamer as gst;
use gstreamer_video as gst_video;
use zerocam_capture::Frame;
use zerocam_tensor::PixelFormat;

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
