//! The CPU reference of `Gpu::convert` for the tests: the same sampling rule
//! (bilinear over each plane at the output pixel's centre, edges clamped) and
//! the same YUV equations (`YcbcrToRgb::to_rgb_normalized`), in f32.
#![allow(dead_code, clippy::unwrap_used)]

use zerocam_gpu::{ColorSpec, YcbcrToRgb};
use zerocam_tensor::{PixelFormat, Region, Tensor, TensorMapTrait, TensorMemory};

/// One plane as a texture: `channels` interleaved samples a texel.
pub struct Plane {
    pub data: Vec<u8>,
    pub width: usize,
    pub height: usize,
    pub channels: usize,
}

impl Plane {
    fn texel(&self, x: isize, y: isize, c: usize) -> f32 {
        let x = x.clamp(0, self.width as isize - 1) as usize;
        let y = y.clamp(0, self.height as isize - 1) as usize;
        f32::from(self.data[(y * self.width + x) * self.channels + c]) / 255.0
    }

    /// GL_LINEAR at normalised `(u, v)`.
    pub fn sample(&self, u: f32, v: f32, c: usize) -> f32 {
        let x = u * self.width as f32 - 0.5;
        let y = v * self.height as f32 - 0.5;
        let (x0, y0) = (x.floor(), y.floor());
        let (fx, fy) = (x - x0, y - y0);
        let (x0, y0) = (x0 as isize, y0 as isize);
        let top = self.texel(x0, y0, c) * (1.0 - fx) + self.texel(x0 + 1, y0, c) * fx;
        let bottom = self.texel(x0, y0 + 1, c) * (1.0 - fx) + self.texel(x0 + 1, y0 + 1, c) * fx;
        top * (1.0 - fy) + bottom * fy
    }
}

/// A deterministic test picture of `format` with smooth gradients plus a
/// little texture, tightly packed.
pub fn picture(format: PixelFormat, w: usize, h: usize) -> Tensor<u8> {
    let t = Tensor::<u8>::image(w, h, format, Some(TensorMemory::Mem)).unwrap();
    {
        let mut m = t.map().unwrap();
        for (i, b) in m.iter_mut().enumerate() {
            let x = i % (w.max(1) * 2);
            *b = ((x * 7 + i / (w * 2) * 5 + (i * 13) % 31) % 256) as u8;
        }
    }
    t
}

/// The planes of an image tensor as the GPU sees them when uploaded.
pub fn planes_of(t: &Tensor<u8>) -> (i32, Vec<Plane>) {
    let f = t.format().unwrap();
    let (w, h) = (t.width().unwrap(), t.height().unwrap());
    let bytes = |i: usize| -> Vec<u8> {
        let p = t.plane(i).unwrap();
        let shape = p.shape().to_vec();
        let map = p.map_read().unwrap();
        let v = map.view().unwrap();
        let mut out = Vec::with_capacity(shape[0] * shape[1]);
        for r in 0..shape[0] {
            for c in 0..shape[1] {
                out.push(v[[r, c]]);
            }
        }
        out
    };
    let plane = |data, width, height, channels| Plane {
        data,
        width,
        height,
        channels,
    };
    match f {
        PixelFormat::Rgb | PixelFormat::Bgr => (0, vec![plane(bytes(0), w, h, 3)]),
        PixelFormat::Rgba | PixelFormat::Bgra => (0, vec![plane(bytes(0), w, h, 4)]),
        PixelFormat::Grey => (1, vec![plane(bytes(0), w, h, 1)]),
        PixelFormat::Nv12 | PixelFormat::Nv16 => (
            2,
            vec![
                plane(bytes(0), w, h, 1),
                plane(bytes(1), w / 2, f.plane_rows(1, h), 2),
            ],
        ),
        PixelFormat::Yuyv | PixelFormat::Uyvy => {
            let b = bytes(0);
            let kind = if f == PixelFormat::Yuyv { 3 } else { 4 };
            (kind, vec![plane(b.clone(), w, h, 2), plane(b, w / 2, h, 4)])
        }
        _ => panic!("no reference for {f:?}"),
    }
}

/// The expected RGB of output pixel `(x, y)` of an `out`-sized conversion of
/// `crop` (relative to the source) of `src`.
pub struct Reference {
    kind: i32,
    planes: Vec<Plane>,
    swap: bool,
    crop: [f32; 4],
    out: (usize, usize),
    color: ColorSpec,
}

impl Reference {
    pub fn new(
        src: &Tensor<u8>,
        crop: Option<Region>,
        out: (usize, usize),
        color: ColorSpec,
    ) -> Self {
        let (w, h) = (src.width().unwrap() as f32, src.height().unwrap() as f32);
        let c = crop.unwrap_or(Region::new(0, 0, w as usize, h as usize));
        let (kind, planes) = planes_of(src);
        Reference {
            kind,
            planes,
            swap: matches!(src.format(), Some(PixelFormat::Bgr | PixelFormat::Bgra)),
            crop: [
                c.x as f32 / w,
                c.y as f32 / h,
                c.width as f32 / w,
                c.height as f32 / h,
            ],
            out,
            color,
        }
    }

    pub fn rgb(&self, x: usize, y: usize) -> [f32; 3] {
        let u = self.crop[0] + (x as f32 + 0.5) / self.out.0 as f32 * self.crop[2];
        let v = self.crop[1] + (y as f32 + 0.5) / self.out.1 as f32 * self.crop[3];
        let p = &self.planes;
        let yuv = match self.kind {
            0 => {
                let c = [
                    p[0].sample(u, v, 0),
                    p[0].sample(u, v, 1),
                    p[0].sample(u, v, 2),
                ];
                return if self.swap { [c[2], c[1], c[0]] } else { c };
            }
            1 => {
                let g = p[0].sample(u, v, 0);
                return [g, g, g];
            }
            2 => [
                p[0].sample(u, v, 0),
                p[1].sample(u, v, 0),
                p[1].sample(u, v, 1),
            ],
            3 => [
                p[0].sample(u, v, 0),
                p[1].sample(u, v, 1),
                p[1].sample(u, v, 3),
            ],
            _ => [
                p[0].sample(u, v, 1),
                p[1].sample(u, v, 0),
                p[1].sample(u, v, 2),
            ],
        };
        self.color.to_rgb_normalized(yuv)
    }

    /// The largest difference, in 8-bit steps, between `got` (pixel `(x, y)`,
    /// channel `c` → byte) and the reference over the whole output.
    pub fn max_error(
        &self,
        got: impl Fn(usize, usize, usize) -> u8,
    ) -> (u8, (usize, usize, usize)) {
        let mut worst = (0u8, (0, 0, 0));
        for y in 0..self.out.1 {
            for x in 0..self.out.0 {
                let want = self.rgb(x, y);
                for (c, w) in want.iter().enumerate() {
                    let w = (w * 255.0).round() as i32;
                    let d = (i32::from(got(x, y, c)) - w).unsigned_abs() as u8;
                    if d > worst.0 {
                        worst = (d, (x, y, c));
                    }
                }
            }
        }
        worst
    }
}
