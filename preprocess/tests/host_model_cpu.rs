//! The CPU model-input path (`CpuPreprocessor`) against the GPU path's plain
//! f64 reference in `common/model_reference.rs` (one reference for both
//! paths, within 1 step for `u8`/`i8` and 0.02 for floats): every source
//! format, both layouts, every dtype, each fit, odd sizes, padded strides,
//! views, crops, split planes, batch elements, BGR, quantization, sharp
//! chroma edges; its typed errors; and that steady state allocates nothing
//! per frame.
#![allow(clippy::unwrap_used)]

use zerocam_test_support::alloc as counting_alloc;
#[global_allocator]
static ALLOC: counting_alloc::Counting = counting_alloc::Counting;
#[path = "common/model_reference.rs"]
mod model_reference;

use model_reference::{expected, fit, max_error, read_element, Source};
use zerocam_preprocess::{
    convert_cpu, ChannelOrder, CpuConvertError, CpuPreprocessor, Fit, ModelInput, ModelInputError,
    ModelLayout, Resample,
};
use zerocam_tensor::{ColorSpec, Matrix, Range};
use zerocam_tensor::{DType, ImageLayout, PixelFormat, Region, Tensor, TensorDyn, TensorMemory};

/// The CPU path's formats.
const FORMATS: [PixelFormat; 9] = [
    PixelFormat::Nv12,
    PixelFormat::Nv16,
    PixelFormat::Yuyv,
    PixelFormat::Uyvy,
    PixelFormat::Rgb,
    PixelFormat::Bgr,
    PixelFormat::Rgba,
    PixelFormat::Bgra,
    PixelFormat::Grey,
];

/// A busy deterministic sample over the full 0..=255 range (edges
/// everywhere; YUV footroom and headroom too).
fn sample(plane: usize, row: usize, col: usize) -> u8 {
    ((col * 37 + row * 91 + col * row * 3 + plane * 50) % 256) as u8
}

/// A `w`x`h` picture of `format` whose rows are `pad` bytes longer than needed.
fn picture(format: PixelFormat, w: usize, h: usize, pad: usize) -> Tensor<u8> {
    let stride = w * format.samples_per_pixel() + pad;
    let layout = ImageLayout::new(w, h, format).with_row_stride(stride);
    let t = Tensor::<u8>::builder_image(layout)
        .memory(TensorMemory::Mem)
        .build()
        .unwrap();
    fill(&t);
    t
}

fn fill(t: &Tensor<u8>) {
    let format = t.format().unwrap();
    for i in 0..format.plane_count() {
        let p = t.plane(i).unwrap();
        let mut m = p.map().unwrap();
        let mut v = m.view_mut().unwrap();
        let n = v.ndim();
        for (idx, s) in v.indexed_iter_mut() {
            *s = sample(i, idx[n - 2], idx[n - 1]);
        }
    }
}

/// A source size with even sides where the format subsamples.
fn size_for(format: PixelFormat, w: usize, h: usize) -> (usize, usize) {
    let (hs, vs) = format.subsampling();
    (w / hs * hs, h / vs * vs)
}

fn integer(input: &ModelInput) -> bool {
    matches!(input.element_type(), DType::U8 | DType::I8)
}

/// Converts with a fresh destination and compares batch element `n` with
/// the reference; returns the destination.
/// A heap tensor of `input`'s shape and element type.
fn destination(input: &ModelInput) -> TensorDyn {
    TensorDyn::new(
        &input.shape(),
        input.element_type(),
        Some(TensorMemory::Mem),
        None,
    )
    .unwrap()
}

fn check(
    src: &Tensor<u8>,
    crop: Option<Region>,
    color: ColorSpec,
    input: &ModelInput,
    n: usize,
) -> TensorDyn {
    let dst = destination(input);
    let placed = convert_cpu(src, crop, color, input, &dst, n).unwrap();
    let full = Region::new(0, 0, src.width().unwrap(), src.height().unwrap());
    let crop = crop.unwrap_or(full);
    let (s, t) = fit(input, crop);
    let p = &placed.source;
    let got_source = [p.x, p.y, p.width, p.height];
    assert!(
        got_source.iter().zip(s).all(|(g, w)| (g - w).abs() < 1e-9),
        "{got_source:?} {s:?}"
    );
    let r = placed.target;
    assert_eq!([r.x, r.y, r.width, r.height].map(|v| v as f64), t);
    let pad = input.fit_mode().pad();
    let want = expected(
        input,
        &Source::new(src, color.matrix, color.range),
        crop,
        pad,
    );
    let got = read_element(&dst, n);
    let tolerance = if integer(input) { 1.0 } else { 0.02 };
    let (worst, at) = max_error(input, &got, &want);
    assert!(
        worst <= tolerance,
        "{:?} {src:?} crop {crop:?}: off by {worst} at (c, y, x) {at:?} for {input:?}",
        src.format(),
    );
    dst
}

/// The model inputs every format is checked with: each dtype (floats with
/// ImageNet mean/std, integers plain) in both layouts and each fit.
fn inputs(w: usize, h: usize) -> Vec<ModelInput> {
    let fits = [
        Fit::Stretch,
        Fit::Crop,
        Fit::Letterbox {
            pad: [114, 20, 240],
        },
    ];
    let mut out = Vec::new();
    for dtype in [DType::U8, DType::I8, DType::F16, DType::F32] {
        for layout in [ModelLayout::Nchw, ModelLayout::Nhwc] {
            for fit in fits {
                let mut i = ModelInput::new(w, h)
                    .unwrap()
                    .dtype(dtype)
                    .unwrap()
                    .with_layout(layout)
                    .fit(fit);
                if !matches!(dtype, DType::U8 | DType::I8) {
                    i = i
                        .mean_std([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
                        .unwrap();
                }
                out.push(i);
            }
        }
    }
    out
}

#[test]
fn every_format_dtype_layout_and_fit_matches_the_reference() {
    for format in FORMATS {
        let (w, h) = size_for(format, 37, 23);
        let src = picture(format, w, h, 6);
        // Odd model sizes, down (19x13) and up (45x31) from the source.
        for input in inputs(19, 13).iter().chain(&inputs(45, 31)) {
            check(&src, None, ColorSpec::default(), input, 0);
        }
    }
}

/// Sources one or two pixels across or down: planes of one texel (a pixel
/// is its own neighbour), upscaled.
#[test]
fn tiny_sources_match_the_reference() {
    for format in FORMATS {
        for (w, h) in [(1, 1), (2, 2), (2, 1), (1, 3)] {
            let (w, h) = size_for(format, w.max(format.subsampling().0), h);
            let src = picture(format, w, h.max(format.subsampling().1), 3);
            for input in [
                ModelInput::new(5, 3).unwrap(),
                ModelInput::new(4, 4).unwrap().dtype(DType::U8).unwrap(),
            ] {
                check(&src, None, ColorSpec::default(), &input, 0);
            }
        }
    }
}

#[test]
fn every_color_spec_matches_the_reference() {
    let input = ModelInput::new(21, 17).unwrap();
    for format in [
        PixelFormat::Nv12,
        PixelFormat::Nv16,
        PixelFormat::Yuyv,
        PixelFormat::Uyvy,
    ] {
        let src = picture(format, 40, 30, 0);
        for matrix in [Matrix::Bt601, Matrix::Bt709] {
            for range in [Range::Limited, Range::Full] {
                check(&src, None, ColorSpec::new(matrix, range), &input, 0);
            }
        }
    }
}

#[test]
fn crops_views_split_planes_and_batch_elements_match_the_reference() {
    let input = ModelInput::new(16, 12)
        .unwrap()
        .dtype(DType::U8)
        .unwrap()
        .fit(Fit::Crop);
    let color = ColorSpec::new(Matrix::Bt709, Range::Limited);
    for format in FORMATS {
        let frame = picture(format, 64, 48, 10);
        // A crop argument, a view as the source, and a crop of a view.
        check(&frame, Some(Region::new(6, 4, 30, 20)), color, &input, 0);
        let view = frame.view(Region::new(8, 6, 40, 32)).unwrap();
        check(&view, None, color, &input, 0);
        check(&view, Some(Region::new(2, 2, 20, 26)), color, &input, 0);
        // Element 1 of a batch of frames.
        let layout = ImageLayout::new(30, 20, format).with_batch(2);
        let batch = Tensor::<u8>::builder_image(layout)
            .memory(TensorMemory::Mem)
            .build()
            .unwrap();
        fill(&batch);
        check(&batch.batch(1).unwrap(), None, color, &input, 0);
    }
    // NV12M: luma and chroma in two buffers, each with its own padded stride.
    let (w, h) = (36, 22);
    let y = Tensor::<u8>::new(&[h, w + 12], Some(TensorMemory::Mem), None).unwrap();
    let uv = Tensor::<u8>::new(&[h / 2, w + 4], Some(TensorMemory::Mem), None).unwrap();
    let (y, uv) = (
        y.view(Region::new(0, 0, w, h)).unwrap(),
        uv.view(Region::new(0, 0, w, h / 2)).unwrap(),
    );
    let nv12m = Tensor::from_planes(y, uv, PixelFormat::Nv12).unwrap();
    assert_eq!(nv12m.plane_count(), 2);
    fill(&nv12m);
    check(&nv12m, None, color, &input, 0);
    check(&nv12m, Some(Region::new(4, 2, 20, 16)), color, &input, 0);
}

#[test]
fn a_batch_element_leaves_the_others_alone() {
    let input = ModelInput::new(9, 7)
        .unwrap()
        .batch(3)
        .unwrap()
        .with_layout(ModelLayout::Nhwc);
    let src = picture(PixelFormat::Nv12, 20, 14, 2);
    let dst = check(&src, None, ColorSpec::default(), &input, 2);
    for n in 0..2 {
        assert!(
            read_element(&dst, n).iter().all(|v| *v == 0.0),
            "element {n}"
        );
    }
}

#[test]
fn bgr_quantization_and_letterbox_bars() {
    let pad = [114, 20, 240];
    let mobilenet = ModelInput::new(24, 24)
        .unwrap()
        .dtype(DType::U8)
        .unwrap()
        .mean_std([0.5; 3], [0.5; 3])
        .unwrap()
        .quantization(1.0 / 128.0, 128)
        .unwrap();
    let int8 = ModelInput::new(24, 24)
        .unwrap()
        .dtype(DType::I8)
        .unwrap()
        .quantization(1.0 / 255.0, -128)
        .unwrap();
    let src = picture(PixelFormat::Yuyv, 50, 20, 4);
    for base in [mobilenet, int8] {
        for layout in [ModelLayout::Nchw, ModelLayout::Nhwc] {
            for channels in [ChannelOrder::Rgb, ChannelOrder::Bgr] {
                let input = base
                    .clone()
                    .with_layout(layout)
                    .with_channels(channels)
                    .fit(Fit::Letterbox { pad });
                let dst = check(&src, None, ColorSpec::default(), &input, 0);
                // Row 0 is a bar (50x20 into 24x24 leaves 7 rows above).
                let want = input.pad_values(pad).map(f64::from);
                let got = read_element(&dst, 0);
                let first = match layout {
                    ModelLayout::Nchw => [got[0], got[24 * 24], got[2 * 24 * 24]],
                    ModelLayout::Nhwc => [got[0], got[1], got[2]],
                };
                assert_eq!(first, want, "{input:?}");
            }
        }
    }
}

#[test]
fn bad_destinations_are_typed_errors() {
    let input = ModelInput::new(8, 8).unwrap().batch(2).unwrap();
    let src = picture(PixelFormat::Nv12, 16, 16, 0);
    let mem = Some(TensorMemory::Mem);
    let color = ColorSpec::default();
    let wrong_dtype = TensorDyn::new(&input.shape(), DType::U8, mem, None).unwrap();
    assert!(matches!(
        convert_cpu(&src, None, color, &input, &wrong_dtype, 0),
        Err(CpuConvertError::DestinationDType {
            expected: DType::F32,
            actual: DType::U8
        })
    ));
    let wrong_shape = TensorDyn::new(&[2, 8, 8, 3], DType::F32, mem, None).unwrap();
    match convert_cpu(&src, None, color, &input, &wrong_shape, 0) {
        Err(CpuConvertError::DestinationShape { expected, actual }) => {
            assert_eq!((expected, actual), ([2, 3, 8, 8], vec![2, 8, 8, 3]));
        }
        other => panic!("{other:?}"),
    }
    let dst = TensorDyn::new(&input.shape(), DType::F32, mem, None).unwrap();
    assert!(matches!(
        convert_cpu(&src, None, color, &input, &dst, 2),
        Err(CpuConvertError::BatchIndex { index: 2, batch: 2 })
    ));
    let f64_dst = TensorDyn::new(&input.shape(), DType::F64, mem, None).unwrap();
    assert!(convert_cpu(&src, None, color, &input, &f64_dst, 0).is_err());
}

#[test]
fn bad_sources_and_crops_are_typed_errors() {
    let input = ModelInput::new(8, 8).unwrap();
    let mem = Some(TensorMemory::Mem);
    let color = ColorSpec::default();
    let dst = TensorDyn::new(&input.shape(), DType::F32, mem, None).unwrap();
    let array = Tensor::<u8>::new(&[16, 16], mem, None).unwrap();
    assert!(matches!(
        convert_cpu(&array, None, color, &input, &dst, 0),
        Err(CpuConvertError::UnsupportedSource { format: None })
    ));
    let planar = Tensor::<u8>::image(16, 16, PixelFormat::PlanarRgb, mem).unwrap();
    assert!(matches!(
        convert_cpu(&planar, None, color, &input, &dst, 0),
        Err(CpuConvertError::UnsupportedSource {
            format: Some(PixelFormat::PlanarRgb)
        })
    ));
    let layout = ImageLayout::new(16, 16, PixelFormat::Rgb).with_batch(2);
    let batch = Tensor::<u8>::builder_image(layout)
        .memory(TensorMemory::Mem)
        .build()
        .unwrap();
    assert!(matches!(
        convert_cpu(&batch, None, color, &input, &dst, 0),
        Err(CpuConvertError::BatchedSource { frames: 2 })
    ));
    let nv12 = picture(PixelFormat::Nv12, 16, 16, 0);
    assert!(matches!(
        convert_cpu(&nv12, Some(Region::new(0, 0, 0, 8)), color, &input, &dst, 0),
        Err(CpuConvertError::Model(ModelInputError::ZeroSize {
            width: 0,
            height: 8
        }))
    ));
    assert!(matches!(
        convert_cpu(
            &nv12,
            Some(Region::new(10, 0, 8, 8)),
            color,
            &input,
            &dst,
            0
        ),
        Err(CpuConvertError::CropOutOfBounds {
            width: 16,
            height: 16,
            ..
        })
    ));
    assert!(matches!(
        convert_cpu(&nv12, Some(Region::new(1, 0, 8, 8)), color, &input, &dst, 0),
        Err(CpuConvertError::Tensor(
            zerocam_tensor::Error::RegionNotAligned { .. }
        ))
    ));
    let thin = ModelInput::new(8, 8)
        .unwrap()
        .fit(Fit::Letterbox { pad: [0; 3] });
    let wide = picture(PixelFormat::Rgb, 400, 2, 0);
    assert!(matches!(
        convert_cpu(&wide, None, color, &thin, &dst, 0),
        Err(CpuConvertError::Model(
            ModelInputError::LetterboxTooSmall { .. }
        ))
    ));
}

/// A frame of `format` whose luma is mid-grey and whose chroma jumps from
/// (16, 240) to (240, 16) halfway across (and, with `down`, halfway down):
/// the sharpest chroma edges there are.
fn chroma_edges(format: PixelFormat, w: usize, h: usize, down: bool) -> Tensor<u8> {
    let t = picture(format, w, h, 4);
    // (Cb, Cr) at pixel (x, y).
    let chroma = |x: usize, y: usize| {
        if x >= w / 2 || (down && y >= h / 2) {
            (240, 16)
        } else {
            (16, 240)
        }
    };
    let vs = format.subsampling().1;
    for i in 0..format.plane_count() {
        let p = t.plane(i).unwrap();
        let mut m = p.map().unwrap();
        let mut v = m.view_mut().unwrap();
        for (idx, s) in v.indexed_iter_mut() {
            let (row, col) = (idx[0], idx[1]);
            *s = match (format, i, col % 4) {
                (PixelFormat::Yuyv, _, 1) => chroma(col / 2, row).0,
                (PixelFormat::Yuyv, _, 3) => chroma(col / 2, row).1,
                (_, 1, _) if col % 2 == 0 => chroma(col, row * vs).0,
                (_, 1, _) => chroma(col - 1, row * vs).1,
                _ => 128,
            };
        }
    }
    t
}

/// Sharp Cb/Cr edges: both paths sample each plane bilinearly, chroma
/// centre-sited, and convert after, as the GPU does (converting each pixel
/// with its nearest chroma first, as the CPU once did, is off by tens of
/// steps next to such an edge).
#[test]
fn sharp_chroma_edges_match_the_reference() {
    for (format, down) in [
        (PixelFormat::Nv12, true),
        (PixelFormat::Nv16, false),
        (PixelFormat::Yuyv, false),
    ] {
        let src = chroma_edges(format, 40, 24, down);
        for (w, h) in [(17, 11), (64, 40), (40, 24)] {
            for dtype in [DType::U8, DType::F32] {
                let input = ModelInput::new(w, h).unwrap().dtype(dtype).unwrap();
                let input = if dtype == DType::F32 {
                    input
                        .mean_std([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
                        .unwrap()
                } else {
                    input
                };
                check(&src, None, ColorSpec::default(), &input, 0);
            }
        }
    }
}

/// Edges clamp to the source tensor's edges, as on the GPU: a crop samples
/// the pixels just outside it, a view of the same pixels does not.
#[test]
fn a_crop_reads_past_its_edges_a_view_clamps() {
    let input = ModelInput::new(48, 36).unwrap().dtype(DType::U8).unwrap();
    let color = ColorSpec::default();
    for format in [PixelFormat::Nv12, PixelFormat::Rgb] {
        let frame = picture(format, 64, 48, 0);
        let region = Region::new(8, 6, 32, 24);
        let cropped = check(&frame, Some(region), color, &input, 0);
        let view = check(&frame.view(region).unwrap(), None, color, &input, 0);
        // The first column (NCHW, channel 0) samples a quarter pixel left of
        // the region: a blend with the pixel outside, or the edge alone.
        let (a, b) = (read_element(&cropped, 0), read_element(&view, 0));
        assert!((0..36).any(|y| a[y * 48] != b[y * 48]), "{format:?}");
    }
}

/// The fixed-point path (plain `u8`/`i8`) rounds to within 0.6 of a step of
/// the exact value (the 1-step bound of the other tests also lets a value
/// that should round to 10.4 come out as 11).
#[test]
fn plain_levels_are_within_0_6_of_the_exact_value() {
    for format in [PixelFormat::Nv12, PixelFormat::Uyvy, PixelFormat::Bgr] {
        let src = picture(format, 64, 48, 2);
        for (matrix, range) in [
            (Matrix::Bt601, Range::Limited),
            (Matrix::Bt709, Range::Full),
        ] {
            let color = ColorSpec::new(matrix, range);
            for (w, h) in [(40, 30), (100, 77)] {
                let levels = ModelInput::new(w, h).unwrap().dtype(DType::U8).unwrap();
                let dst = check(&src, None, color, &levels, 0);
                let exact = ModelInput::new(w, h).unwrap(); // p / 255, in f32
                let full = Region::new(0, 0, 64, 48);
                let want = expected(&exact, &Source::new(&src, matrix, range), full, [0; 3]);
                let got = read_element(&dst, 0);
                let worst = got
                    .iter()
                    .zip(&want)
                    .map(|(g, e)| (g - e * 255.0).abs())
                    .fold(0.0, f64::max);
                assert!(worst < 0.6, "{format:?} {color:?} {w}x{h}: {worst}");
            }
        }
    }
}

/// Allocations of one steady-state conversion of a `w`x`h` frame of `format`
/// to a 64x48 f32 input (after two warm-up frames), twice.
fn steady_allocations(format: PixelFormat, w: usize, h: usize) -> [u64; 2] {
    let input = ModelInput::new(64, 48)
        .unwrap()
        .mean_std([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
        .unwrap()
        .fit(Fit::Crop);
    let src = picture(format, w, h, 8);
    let dst = TensorDyn::new(&input.shape(), DType::F32, Some(TensorMemory::Mem), None).unwrap();
    let mut pre = CpuPreprocessor::new();
    let color = ColorSpec::default();
    let mut frame = || {
        let before = counting_alloc::this_thread();
        pre.convert(&src, None, color, &input, &dst, 0).unwrap();
        counting_alloc::this_thread() - before
    };
    frame();
    frame();
    [frame(), frame()]
}

/// A conversion allocates nothing in steady state, whatever the format or
/// the source size: the scratch buffers and taps grow once, and tensor views,
/// plane maps and the destination map allocate nothing.
#[test]
fn steady_state_allocates_nothing_per_frame() {
    for format in FORMATS {
        let small = steady_allocations(format, 128, 72);
        let large = steady_allocations(format, 320, 240);
        println!("{format:?}: {small:?} per frame at 128x72, {large:?} at 320x240");
        assert_eq!((small, large), ([0, 0], [0, 0]), "{format:?}");
    }
}

/// Every element of `t`'s batch element `n`, as the reference reads them.
fn bits(t: &TensorDyn, n: usize) -> Vec<u64> {
    read_element(t, n).iter().map(|v| v.to_bits()).collect()
}

/// Output rows split over 2, 3 and 8 threads write the same bits as one
/// thread, for every format, dtype, layout and fit, odd sizes included (a
/// band's kept rows start afresh, and bands meet at any row).
#[test]
fn every_thread_count_writes_the_same_bits() {
    let color = ColorSpec::default();
    let mut pres: Vec<_> = [1, 2, 3, 8]
        .into_iter()
        .map(CpuPreprocessor::with_threads)
        .collect();
    assert_eq!(
        pres.iter()
            .map(CpuPreprocessor::threads)
            .collect::<Vec<_>>(),
        [1, 2, 3, 8]
    );
    for format in FORMATS {
        let (w, h) = size_for(format, 97, 55);
        let src = picture(format, w, h, 6);
        let area = inputs(37, 29)
            .into_iter()
            .map(|i| i.resample(Resample::Area));
        for input in inputs(37, 29).into_iter().chain(area) {
            let outputs: Vec<_> = pres
                .iter_mut()
                .map(|pre| {
                    let dst = destination(&input);
                    pre.convert(&src, None, color, &input, &dst, 0).unwrap();
                    bits(&dst, 0)
                })
                .collect();
            for (threads, out) in [2, 3, 8].iter().zip(&outputs[1..]) {
                assert!(
                    *out == outputs[0],
                    "{format:?} {input:?}: {threads} threads differ from one"
                );
            }
        }
    }
}
