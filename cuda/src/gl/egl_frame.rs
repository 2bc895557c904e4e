//! The frame `cuGraphicsResourceGetMappedEglFrame` reports for a registered
//! EGLImage, read on every map (as NVIDIA's Jetson samples do after a sync:
//! the driver may move an image between uses), and checked against the
//! tensor it stands for: pitch-linear, the image's size, a colour format with
//! the tensor's planes.

use std::sync::Arc;

use zerocam_tensor::{PixelFormat, RootLayout};

use crate::device::Device;
use crate::driver::ffi::{self, CuEglFrame, CuHandle};
use crate::{CudaError, Result};

/// The entry point, as errors name it.
pub(super) const FRAME_CALL: &str = "cuGraphicsResourceGetMappedEglFrame";

/// What `cuGraphicsResourceGetMappedEglFrame` said, as plain numbers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct EglPlanes {
    pub ptrs: [u64; 3],
    pub width: u32,
    pub height: u32,
    pub pitch: u32,
    pub plane_count: u32,
    pub frame_type: i32,
    /// `CUeglColorFormat`.
    pub color_format: i32,
}

impl From<CuEglFrame> for EglPlanes {
    fn from(f: CuEglFrame) -> EglPlanes {
        EglPlanes {
            ptrs: f.planes.map(|p| p as u64),
            width: f.width,
            height: f.height,
            pitch: f.pitch,
            plane_count: f.plane_count,
            frame_type: f.frame_type,
            color_format: f.egl_color_format,
        }
    }
}

/// The frame of the registered EGL `resource`, now.
pub(super) fn read(device: &Arc<Device>, resource: usize) -> Result<EglPlanes> {
    let mut frame = CuEglFrame::default();
    let _current = device.enter()?;
    // SAFETY: a registered resource and a valid out-pointer.
    let code = unsafe {
        (device.driver.api.cuGraphicsResourceGetMappedEglFrame)(
            &mut frame,
            resource as CuHandle,
            0,
            0,
        )
    };
    device.driver.check(FRAME_CALL, code)?;
    Ok(EglPlanes::from(frame))
}

/// The 8-bit `CUeglColorFormat`s whose layout is known here (`cudaEGL.h`):
/// name, planes, and the tensor formats with that layout. Others (10- and
/// 12-bit, Bayer, the colour-space variants this list does not name) are
/// checked by plane count and size alone.
fn color_format(code: i32) -> Option<(&'static str, u32, &'static [PixelFormat])> {
    use PixelFormat::*;
    Some(match code {
        0x00 => ("YUV420_PLANAR", 3, &[]),
        0x01 => ("YUV420_SEMIPLANAR", 2, &[Nv12]),
        0x02 => ("YUV422_PLANAR", 3, &[]),
        0x03 => ("YUV422_SEMIPLANAR", 2, &[Nv16]),
        0x04 | 0x05 => ("RGB/BGR", 1, &[Rgb, Bgr]),
        0x06 | 0x07 => ("ARGB/RGBA", 1, &[Rgba, Bgra]),
        0x08 | 0x09 => ("L/R", 1, &[Grey]),
        // Argus' and NvBufSurface's default camera format: NV12, extended range.
        0x26 => ("YUV420_SEMIPLANAR_ER", 2, &[Nv12]),
        _ => return None,
    })
}

/// Checks `frame` against the root image `root` the tensor is a part of.
///
/// # Errors
/// [`CudaError::Mismatch`] naming what differs.
pub(super) fn check(frame: &EglPlanes, root: &RootLayout) -> Result<()> {
    let mismatch = |what: String| {
        Err(CudaError::Mismatch {
            call: FRAME_CALL,
            what,
        })
    };
    if frame.frame_type != ffi::EGL_FRAME_TYPE_PITCH {
        return mismatch(
            "a block-linear (array) frame, which has no device pointer to map: ask the producer \
             for pitch-linear buffers (NvBufSurface's NVBUF_LAYOUT_PITCH, GStreamer's nvvidconv \
             with bl-output=false), or copy out with cuMemcpy2D from the array"
                .into(),
        );
    }
    let count = root.format.plane_count();
    if (frame.plane_count as usize) < count || count > 3 {
        return mismatch(format!(
            "{} planes for a {} image of {count}",
            frame.plane_count, root.format
        ));
    }
    let (w, h) = (frame.width as usize, frame.height as usize);
    if (w, h) != (root.width, root.height) {
        return mismatch(format!(
            "a {w}x{h} frame for a {}x{} {} image (the EGLImage is of another buffer or size)",
            root.width, root.height, root.format
        ));
    }
    if let Some((name, planes, formats)) = color_format(frame.color_format) {
        if !formats.contains(&root.format) || planes as usize != count {
            return mismatch(format!(
                "colour format {name} ({:#x}) for a {} image",
                frame.color_format, root.format
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_colour_formats_agree_with_their_planes() {
        for code in 0..0x30 {
            if let Some((name, planes, formats)) = color_format(code) {
                for f in formats {
                    assert_eq!(f.plane_count(), planes as usize, "{name}: {f}");
                }
            }
        }
    }
}
