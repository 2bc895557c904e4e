//! The raw picture an encoder's OUTPUT queue takes: what a frame is
//! ([`InputLayout`]), its V4L2 format, the format the driver set, whether
//! the frame's own memory fits it, and copying a frame into a buffer that
//! does.

use zerocam_tensor::{PixelFormat, Tensor, TensorMemory};

use crate::v4l2::ioctl::raw;
use crate::{FourCc, Frame};

/// A frame's picture: format, size and where each plane lies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InputLayout {
    pub pixel: PixelFormat,
    pub width: u32,
    pub height: u32,
    /// Memory buffers (2 for NV12M/NV16M).
    pub buffers: usize,
    /// Per picture plane: (buffer, offset, stride).
    pub planes: Vec<(usize, usize, usize)>,
    /// Whether the frame's memory is a dma-buf.
    pub dmabuf: bool,
}

impl InputLayout {
    /// The layout of `frame`'s tensor; `None` for a tensor that is no whole image.
    pub fn of(t: &Tensor<u8>) -> Option<InputLayout> {
        let p = t.placement()?;
        if p.frames != 1 || p.region.x != 0 || p.region.y != 0 {
            return None;
        }
        Some(InputLayout {
            pixel: p.root.format,
            width: u32::try_from(p.region.width).ok()?,
            height: u32::try_from(p.region.height).ok()?,
            buffers: p.root.buffer_count(),
            planes: p
                .root
                .planes()
                .iter()
                .map(|pl| (pl.buffer, pl.offset, pl.stride))
                .collect(),
            dmabuf: t.memory() == TensorMemory::Dma,
        })
    }

    /// The V4L2 format of this picture, laid in `buffers` memory planes.
    pub fn fourcc(&self, buffers: usize) -> Option<FourCc> {
        let code: &[u8; 4] = match (self.pixel, buffers) {
            (PixelFormat::Nv12, 1) => b"NV12",
            (PixelFormat::Nv12, 2) => b"NM12",
            (PixelFormat::Nv16, 1) => b"NV16",
            (PixelFormat::Nv16, 2) => b"NM16",
            (PixelFormat::Yuyv, 1) => b"YUYV",
            (PixelFormat::Uyvy, 1) => b"UYVY",
            (PixelFormat::Grey, 1) => b"GREY",
            (PixelFormat::Rgb, 1) => b"RGB3",
            (PixelFormat::Bgr, 1) => b"BGR3",
            (PixelFormat::Rgba, 1) => b"AB24",
            (PixelFormat::Bgra, 1) => b"AR24",
            _ => return None,
        };
        Some(FourCc(*code))
    }

    /// Rows of picture plane `i`.
    pub fn rows(&self, i: usize) -> usize {
        self.pixel.plane_rows(i, self.height as usize)
    }

    /// Bytes of a row of picture plane `i` (no padding).
    pub fn row_bytes(&self, i: usize) -> usize {
        self.pixel.plane_row_samples(i, self.width as usize)
    }
}

/// What the driver set on the OUTPUT queue: per memory plane its
/// `bytesperline` and `sizeimage`; for a one-buffer multi-plane picture, the
/// chroma's offset (`bytesperline * height`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DriverLayout {
    pub fourcc: FourCc,
    pub width: u32,
    pub height: u32,
    /// (bytesperline, sizeimage) per memory plane.
    pub planes: Vec<(u32, u32)>,
}

impl DriverLayout {
    /// From a `VIDIOC_S_FMT`/`G_FMT` reply.
    pub fn of(f: &raw::Format) -> Option<DriverLayout> {
        if let Some(mp) = f.pix_mp() {
            let n = usize::from(mp.num_planes).clamp(1, raw::MAX_PLANES);
            Some(DriverLayout {
                fourcc: FourCc::from_u32(mp.pixelformat),
                width: mp.width,
                height: mp.height,
                planes: mp.plane_fmt[..n]
                    .iter()
                    .map(|p| (p.bytesperline, p.sizeimage))
                    .collect(),
            })
        } else {
            f.pix().map(|p| DriverLayout {
                fourcc: FourCc::from_u32(p.pixelformat),
                width: p.width,
                height: p.height,
                planes: vec![(p.bytesperline, p.sizeimage)],
            })
        }
    }

    /// Where picture plane `i` of `input` lies in this layout:
    /// (memory plane, offset, stride).
    pub fn plane(&self, input: &InputLayout, i: usize) -> (usize, usize, usize) {
        if self.planes.len() > 1 {
            let stride = self.planes.get(i).map_or(0, |p| p.0) as usize;
            (i, 0, stride)
        } else {
            let luma = self.planes[0].0 as usize;
            let stride = if i == 0 {
                luma
            } else {
                luma * input.row_bytes(i) / input.row_bytes(0).max(1)
            };
            let offset = (0..i).map(|j| {
                let s = if j == 0 {
                    luma
                } else {
                    luma * input.row_bytes(j) / input.row_bytes(0).max(1)
                };
                s * input.pixel.plane_rows(j, self.height as usize)
            });
            (0, offset.sum(), stride)
        }
    }

    /// Why `input`'s own memory can't be queued as this layout, or `None`
    /// when it can (same planes at the same offsets and strides).
    pub fn import_mismatch(&self, input: &InputLayout) -> Option<String> {
        if !input.dmabuf {
            return Some("the frame is not in a dma-buf".into());
        }
        if input.buffers != self.planes.len() {
            return Some(format!(
                "the frame's planes are in {} buffer(s), the encoder's {} in {}",
                input.buffers,
                self.fourcc,
                self.planes.len()
            ));
        }
        for (i, &(buffer, offset, stride)) in input.planes.iter().enumerate() {
            let (b, o, s) = self.plane(input, i);
            if (buffer, offset, stride) != (b, o, s) {
                return Some(format!(
                    "plane {i}: the frame has buffer {buffer} offset {offset} stride {stride}, the encoder wants buffer {b} offset {o} stride {s}"
                ));
            }
        }
        None
    }
}

/// Copies `frame`'s picture into `dst` (one slice per memory plane of the
/// driver's layout), row by row with the driver's strides. Rows that do not
/// fit are a bound error (`Err` with the plane).
pub(crate) fn copy_frame(
    frame: &Frame,
    input: &InputLayout,
    driver: &DriverLayout,
    dst: &mut [&mut [u8]],
) -> Result<(), String> {
    let t = frame.tensor();
    for i in 0..input.planes.len() {
        let src = t.plane(i).map_err(|e| e.to_string())?;
        let sstride = src.stride(0).ok_or("a plane without a row stride")?;
        let m = src.map_read().map_err(|e| e.to_string())?;
        let (mp, off, dstride) = driver.plane(input, i);
        let row = input.row_bytes(i);
        let out = dst.get_mut(mp).ok_or("no such memory plane")?;
        for r in 0..input.rows(i) {
            let s = m
                .get(r * sstride..r * sstride + row)
                .ok_or("source row out of bounds")?;
            let d = out
                .get_mut(off + r * dstride..off + r * dstride + row)
                .ok_or_else(|| format!("plane {i} row {r} past the OUTPUT buffer"))?;
            d.copy_from_slice(s);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nv12(buffers: usize, stride: usize) -> InputLayout {
        let chroma = if buffers == 2 {
            (1, 0, stride)
        } else {
            (0, stride * 360, stride)
        };
        InputLayout {
            pixel: PixelFormat::Nv12,
            width: 640,
            height: 360,
            buffers,
            planes: vec![(0, 0, stride), chroma],
            dmabuf: true,
        }
    }

    #[test]
    fn fourccs_follow_the_buffers() {
        assert_eq!(nv12(1, 640).fourcc(1), Some(FourCc(*b"NV12")));
        assert_eq!(nv12(2, 640).fourcc(2), Some(FourCc(*b"NM12")));
        assert_eq!(nv12(2, 640).fourcc(1), Some(FourCc(*b"NV12")));
    }

    #[test]
    fn import_needs_same_planes_offsets_and_strides() {
        let d = DriverLayout {
            fourcc: FourCc(*b"NV12"),
            width: 640,
            height: 360,
            planes: vec![(640, 640 * 360 * 3 / 2)],
        };
        assert_eq!(d.import_mismatch(&nv12(1, 640)), None);
        assert!(d.import_mismatch(&nv12(1, 704)).unwrap().contains("stride"));
        assert!(d
            .import_mismatch(&nv12(2, 640))
            .unwrap()
            .contains("2 buffer"));
        let mut heap = nv12(1, 640);
        heap.dmabuf = false;
        assert!(d.import_mismatch(&heap).unwrap().contains("dma-buf"));
    }
}
