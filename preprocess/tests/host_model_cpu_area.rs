//! `Resample::Area` on the CPU against an f64 reference of its rule: each
//! output pixel the coverage-weighted mean of the plane texels under its
//! footprint (each plane at its own size; bilinear on an enlarged axis),
//! then the YCbCr → RGB conversion. RGB noise through a crop and a
//! letterbox, NV12 noise stretched and enlarged on one axis. (OpenCV's
//! `INTER_AREA` and PIL's `BOX` are the outside references, in the Python
//! tests.)
#![allow(clippy::unwrap_used)]

use zerocam_preprocess::{CpuPreprocessor, Fit, ModelInput, ModelLayout, Resample};
use zerocam_tensor::{ColorSpec, DType, PixelFormat, Region, Tensor, TensorDyn, TensorMemory};

/// Per output: the texels it reads and their weights.
fn axis(
    start: f64,
    len: f64,
    outputs: usize,
    image: usize,
    plane: usize,
) -> Vec<Vec<(usize, f64)>> {
    let scale = plane as f64 / image as f64;
    let step = len / outputs as f64;
    (0..outputs)
        .map(|o| {
            if step * scale > 1.0 {
                let (e0, e1) = (
                    (start + o as f64 * step) * scale,
                    (start + (o + 1) as f64 * step) * scale,
                );
                (e0.floor() as usize..e1.ceil() as usize)
                    .map(|i| {
                        let c = e1.min(i as f64 + 1.0) - e0.max(i as f64);
                        (i.min(plane - 1), c / (e1 - e0))
                    })
                    .collect()
            } else {
                let p = (start + (o as f64 + 0.5) * step) * scale - 0.5;
                let f = p.floor().clamp(0.0, (plane.max(2) - 2) as f64);
                let w = (p - f).clamp(0.0, 1.0);
                let f = f as usize;
                vec![(f, 1.0 - w), ((f + 1).min(plane - 1), w)]
            }
        })
        .collect()
}

/// `plane` (`pw` texels of `texel` bytes a row) at sample `k`, area-resampled.
fn resample(
    plane: &[u8],
    (pw, texel, k): (usize, usize, usize),
    xs: &[Vec<(usize, f64)>],
    ys: &[Vec<(usize, f64)>],
) -> Vec<f64> {
    let mut out = Vec::new();
    for y in ys {
        for x in xs {
            let mut v = 0.0;
            for &(r, wy) in y {
                for &(c, wx) in x {
                    v += wy * wx * f64::from(plane[(r * pw + c) * texel + k]);
                }
            }
            out.push(v);
        }
    }
    out
}

fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut s = seed;
    (0..len)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 56) as u8
        })
        .collect()
}

fn image(format: PixelFormat, w: usize, h: usize, bytes: &[u8]) -> Tensor<u8> {
    let t = Tensor::<u8>::image(w, h, format, Some(TensorMemory::Mem)).unwrap();
    t.map().unwrap().copy_from_slice(bytes);
    t
}

#[test]
fn rgb_through_a_crop_and_a_letterbox_is_the_coverage_weighted_mean() {
    let (w, h) = (203, 117);
    let bytes = noise(w * h * 3, 1);
    let src = image(PixelFormat::Rgb, w, h, &bytes);
    let crop = Region::new(17, 9, 160, 96);
    let input = ModelInput::new(48, 48)
        .unwrap()
        .dtype(DType::U8)
        .unwrap()
        .with_layout(ModelLayout::Nhwc)
        .fit(Fit::Letterbox { pad: [7, 8, 9] })
        .resample(Resample::Area);
    let dst = TensorDyn::new(&input.shape(), DType::U8, Some(TensorMemory::Mem), None).unwrap();
    let mut pre = CpuPreprocessor::with_threads(2);
    let placed = pre
        .convert(&src, Some(crop), ColorSpec::default(), &input, &dst, 0)
        .unwrap();
    let (s, t) = (placed.source, placed.target);
    assert_eq!((t.y, t.height), (9, 29), "160x96 in 48x28.8: 29 rows");
    let xs = axis(s.x, s.width, t.width, w, w);
    let ys = axis(s.y, s.height, t.height, h, h);
    let TensorDyn::U8(out) = &dst else {
        unreachable!()
    };
    let out = out.map_read().unwrap();
    let mut worst: f64 = 0.0;
    for c in 0..3 {
        let want = resample(&bytes, (w, 3, c), &xs, &ys);
        for (i, v) in want.iter().enumerate() {
            let (row, col) = (t.y + i / t.width, t.x + i % t.width);
            worst = worst.max((f64::from(out[(row * 48 + col) * 3 + c]) - v).abs());
        }
        assert_eq!(out[c], [7, 8, 9][c], "the bars are the pad");
    }
    assert!(worst <= 0.51, "off by {worst}");
}

#[test]
fn nv12_is_each_plane_averaged_then_converted() {
    let (w, h) = (160, 96);
    let bytes = noise(w * h * 3 / 2, 2);
    let src = image(PixelFormat::Nv12, w, h, &bytes);
    // Shrunk across (luma 4.0, chroma 2.0 texels an output), enlarged
    // down (luma 0.75, chroma 0.375): area across, bilinear down.
    for (mw, mh) in [(40, 24), (40, 128)] {
        let input = ModelInput::new(mw, mh)
            .unwrap()
            .mean_std([0.0; 3], [1.0 / 255.0; 3])
            .unwrap()
            .resample(Resample::Area);
        let dst =
            TensorDyn::new(&input.shape(), DType::F32, Some(TensorMemory::Mem), None).unwrap();
        CpuPreprocessor::with_threads(1)
            .convert(&src, None, ColorSpec::default(), &input, &dst, 0)
            .unwrap();
        let (luma, chroma) = bytes.split_at(w * h);
        let (lx, ly) = (axis(0.0, w as f64, mw, w, w), axis(0.0, h as f64, mh, h, h));
        let (cx, cy) = (
            axis(0.0, w as f64, mw, w, w / 2),
            axis(0.0, h as f64, mh, h, h / 2),
        );
        let y = resample(luma, (w, 1, 0), &lx, &ly);
        let cb = resample(chroma, (w / 2, 2, 0), &cx, &cy);
        let cr = resample(chroma, (w / 2, 2, 1), &cx, &cy);
        let TensorDyn::F32(out) = &dst else {
            unreachable!()
        };
        let out = out.map_read().unwrap();
        let mut worst: f64 = 0.0;
        for i in 0..mw * mh {
            let l = (y[i] - 16.0) * 255.0 / 219.0;
            let (b, r) = (
                (cb[i] - 128.0) * 255.0 / 224.0,
                (cr[i] - 128.0) * 255.0 / 224.0,
            );
            let rgb = [
                l + 1.402 * r,
                l - 0.344136 * b - 0.714136 * r,
                l + 1.772 * b,
            ];
            for (c, v) in rgb.iter().enumerate() {
                let got = f64::from(out[c * mw * mh + i]);
                worst = worst.max((got - v.clamp(0.0, 255.0)).abs());
            }
        }
        assert!(worst <= 0.6, "{mw}x{mh}: off by {worst} levels");
    }
}
