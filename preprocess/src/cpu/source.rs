//! How the CPU path reads each source format: the planes it samples (a
//! "stream": a tensor plane seen as texels of some bytes, of which some give
//! samples), which stream sample feeds each of the three values a pixel is
//! converted from, and the mapped planes with their row strides.

use zerocam_tensor::{PixelFormat, ReadOnly, Tensor, TensorMap};

use super::error::CpuConvertError;
use zerocam_tensor::ColorSpec;

/// A tensor plane sampled as a grid of texels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Stream {
    /// The tensor plane.
    pub(super) plane: usize,
    /// Bytes in a texel.
    pub(super) texel: usize,
    /// Image pixels per texel across and down.
    pub(super) subsampling: (usize, usize),
    /// The byte offset in a texel of the first sample this stream gives.
    pub(super) first: usize,
    /// How many samples it gives, `spacing` bytes apart.
    pub(super) count: usize,
    pub(super) spacing: usize,
}

impl Stream {
    const fn new(plane: usize, texel: usize, subsampling: (usize, usize), first: usize) -> Self {
        Stream {
            plane,
            texel,
            subsampling,
            first,
            count: 1,
            spacing: 1,
        }
    }

    /// `count` samples `spacing` bytes apart.
    const fn samples(self, count: usize, spacing: usize) -> Self {
        Stream {
            count,
            spacing,
            ..self
        }
    }

    /// A stream of plane 0, not subsampled, of `texel` bytes giving `count`
    /// samples `spacing` bytes apart from its first byte: the kinds the
    /// resampling tests go through.
    #[cfg(test)]
    pub(super) const fn kind(texel: usize, count: usize, spacing: usize) -> Self {
        Stream::new(0, texel, (1, 1), 0).samples(count, spacing)
    }

    /// Every stream kind of [`layout`]: (texel, samples, spacing).
    #[cfg(test)]
    pub(super) const KINDS: [(usize, usize, usize); 6] = [
        (1, 1, 1),
        (2, 1, 1),
        (2, 2, 1),
        (4, 2, 2),
        (3, 3, 1),
        (4, 3, 1),
    ];

    /// The stream's size in texels, for a `width`x`height` image.
    pub(super) fn size(&self, (width, height): (usize, usize)) -> (usize, usize) {
        let (hs, vs) = self.subsampling;
        ((width / hs).max(1), (height / vs).max(1))
    }
}

/// How a format is read: its streams, and per pixel value (Y, Cb, Cr or R,
/// G, B) the stream and the sample in it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Layout {
    pub(super) streams: &'static [Stream],
    pub(super) values: [(usize, usize); 3],
    /// The values are Y, Cb, Cr (else R, G, B).
    pub(super) yuv: bool,
}

const YUV: [(usize, usize); 3] = [(0, 0), (1, 0), (1, 1)];
const RGB: [(usize, usize); 3] = [(0, 0), (0, 1), (0, 2)];
const BGR: [(usize, usize); 3] = [(0, 2), (0, 1), (0, 0)];
const LUMA: Stream = Stream::new(0, 1, (1, 1), 0);

const fn yuv(streams: &'static [Stream]) -> Layout {
    Layout {
        streams,
        values: YUV,
        yuv: true,
    }
}

const fn rgb(streams: &'static [Stream], values: [(usize, usize); 3]) -> Layout {
    Layout {
        streams,
        values,
        yuv: false,
    }
}

const NV12: Layout = yuv(&[LUMA, Stream::new(1, 2, (2, 2), 0).samples(2, 1)]);
const NV16: Layout = yuv(&[LUMA, Stream::new(1, 2, (2, 1), 0).samples(2, 1)]);
const YUYV: Layout = yuv(&[
    Stream::new(0, 2, (1, 1), 0),
    Stream::new(0, 4, (2, 1), 1).samples(2, 2),
]);
const UYVY: Layout = yuv(&[
    Stream::new(0, 2, (1, 1), 1),
    Stream::new(0, 4, (2, 1), 0).samples(2, 2),
]);
const PIXELS3: Stream = Stream::new(0, 3, (1, 1), 0).samples(3, 1);
const PIXELS4: Stream = Stream::new(0, 4, (1, 1), 0).samples(3, 1);
const RGB24: Layout = rgb(&[PIXELS3], RGB);
const BGR24: Layout = rgb(&[PIXELS3], BGR);
const RGBA: Layout = rgb(&[PIXELS4], RGB);
const BGRA: Layout = rgb(&[PIXELS4], BGR);
/// Grey: one luma sample gives all three of R, G and B.
const GREY: Layout = Layout {
    streams: &[LUMA],
    values: [(0, 0); 3],
    yuv: false,
};

/// The layout of `format`, `None` for a format the CPU path does not read.
pub(super) fn layout(format: PixelFormat) -> Option<Layout> {
    Some(match format {
        PixelFormat::Nv12 => NV12,
        PixelFormat::Nv16 => NV16,
        PixelFormat::Yuyv => YUYV,
        PixelFormat::Uyvy => UYVY,
        PixelFormat::Rgb => RGB24,
        PixelFormat::Bgr => BGR24,
        PixelFormat::Rgba => RGBA,
        PixelFormat::Bgra => BGRA,
        PixelFormat::Grey => GREY,
        _ => return None,
    })
}

impl Layout {
    /// Each RGB channel (0..=255) as a multiply-add of the three values
    /// (0..=255): `rows[c] · v + offset[c]` (before clamping to 0..=255).
    pub(super) fn rgb_matrix(&self, color: ColorSpec) -> ([[f32; 3]; 3], [f32; 3]) {
        if !self.yuv {
            let identity = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
            return (identity, [0.0; 3]);
        }
        let m = color.rgb_matrix();
        let o = color.ycbcr_offsets().map(|v| v * 255.0);
        let offset = m.map(|row| -(row[0] * o[0] + row[1] * o[1] + row[2] * o[2]));
        (m, offset)
    }
}

/// A plane of `t` mapped for reading, with its row stride in bytes.
pub(super) fn plane(
    t: &Tensor<u8>,
    i: usize,
) -> Result<(TensorMap<u8, ReadOnly>, usize), CpuConvertError> {
    let map = t.plane(i)?.map_read()?;
    let stride = map.strides_bytes().and_then(|s| s.first().copied());
    let stride = stride.ok_or_else(|| CpuConvertError::Library {
        stage: "plane map",
        message: format!("plane {i} has no row stride"),
    })?;
    Ok((map, stride))
}
