//! `Preprocessor` into the caller's memory and over several cameras: a batch
//! whose sources each have their own crop and colour spec is, element for
//! element, the same bits as those sources converted alone; `run_into`
//! writes a lent buffer (a model runtime's input) in place, the same bits as
//! the ring's result, without touching the ring; a destination that is not
//! the input's is a typed error naming both shapes. On the CPU and on the
//! host's GPU (llvmpipe).
#![allow(clippy::unwrap_used)]

use zerocam_preprocess::{
    Backend, Fit, ModelInput, ModelInputError, ModelLayout, PreprocessError, Preprocessor,
    SourceImage,
};
use zerocam_tensor::{
    ColorSpec, DType, ExternalMemoryMut, ImageLayout, Matrix, PixelFormat, Range, Region, Tensor,
    TensorDyn, TensorMemory,
};

/// A `w`x`h` picture of `format`, padded rows, a gradient and a seed.
fn picture(format: PixelFormat, w: usize, h: usize, seed: usize) -> Tensor<u8> {
    let stride = w * format.samples_per_pixel() + 8;
    let layout = ImageLayout::new(w, h, format).with_row_stride(stride);
    let t = Tensor::<u8>::builder_image(layout)
        .memory(TensorMemory::Mem)
        .build()
        .unwrap();
    {
        let mut m = t.map().unwrap();
        for (i, b) in m.iter_mut().enumerate() {
            let (row, col) = (i / stride, i % stride);
            *b = ((row * 7 + col * 3 + seed * 37) % 220 + 16) as u8;
        }
    }
    t
}

/// The bytes of batch element `n` of `t`.
fn element_bytes(t: &TensorDyn, n: usize) -> Vec<u8> {
    match t.batch(n).unwrap() {
        TensorDyn::U8(e) => e.map_read().unwrap().to_vec(),
        TensorDyn::F32(e) => e
            .map_read()
            .unwrap()
            .iter()
            .flat_map(|v| v.to_bits().to_le_bytes())
            .collect(),
        other => panic!("{:?} elements are not compared here", other.dtype()),
    }
}

fn input(dtype: DType, layout: ModelLayout) -> ModelInput {
    let i = ModelInput::new(48, 40).unwrap().with_layout(layout);
    if dtype == DType::F32 {
        i.mean_std([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
            .unwrap()
    } else {
        i.dtype(dtype).unwrap()
    }
    .fit(Fit::Letterbox { pad: [114; 3] })
}

#[test]
fn each_camera_of_a_batch_is_read_with_its_own_crop_and_colour() {
    let frames = [
        picture(PixelFormat::Nv12, 128, 72, 1),
        picture(PixelFormat::Yuyv, 96, 64, 2),
        picture(PixelFormat::Nv12, 64, 64, 3),
        picture(PixelFormat::Rgb, 80, 60, 4),
    ];
    let sources = [
        SourceImage::new(&frames[0]).with_crop(Some(Region::new(32, 0, 64, 72))),
        SourceImage::new(&frames[1]).with_color(ColorSpec::new(Matrix::Bt709, Range::Full)),
        SourceImage::new(&frames[2])
            .with_crop(Some(Region::new(0, 16, 48, 32)))
            .with_color(ColorSpec::new(Matrix::Bt709, Range::Limited)),
        SourceImage::new(&frames[3]),
    ];
    for device in [Backend::Cpu, Backend::Gpu] {
        for (dtype, layout) in [
            (DType::F32, ModelLayout::Nchw),
            (DType::U8, ModelLayout::Nhwc),
        ] {
            let one = input(dtype, layout);
            let four = one.clone().batch(4).unwrap();
            let mut single = Preprocessor::new(one, device)
                .unwrap()
                .with_ring_depth(1)
                .unwrap();
            let mut batched = Preprocessor::new(four, device).unwrap();
            let mut placed = Vec::new();
            let out = batched
                .run_batch(&sources, |n, p| placed.push((n, p)))
                .unwrap();
            assert_eq!(out.tensor.shape()[0], 4);
            for (n, s) in sources.iter().enumerate() {
                let alone = single.run(s.tensor, s.crop, s.color).unwrap();
                assert_eq!(
                    placed[n],
                    (n, alone.placement),
                    "{device:?}: where camera {n} landed"
                );
                assert!(
                    element_bytes(&out.tensor, n) == element_bytes(&alone.tensor, 0),
                    "{device:?} {dtype:?} {layout:?}: camera {n} of the batch differs from it alone"
                );
            }
            // The colour spec is each camera's: read as BT.601 limited
            // instead, camera 1's element changes.
            let mut other = sources;
            other[1] = other[1].with_color(ColorSpec::default());
            let again = batched.run_batch(&other, |_, _| {}).unwrap();
            assert!(element_bytes(&again.tensor, 1) != element_bytes(&out.tensor, 1));
            assert!(element_bytes(&again.tensor, 0) == element_bytes(&out.tensor, 0));
        }
    }
}

/// A model runtime's input buffer, lent for writing; the test keeps its
/// address to check where the values went.
struct RuntimeInput(Box<[f32]>);

// SAFETY: the box is never reallocated, and nothing but the tensor touches
// it while the tensor lives.
unsafe impl ExternalMemoryMut for RuntimeInput {
    fn bytes_mut(&mut self) -> &mut [u8] {
        let len = std::mem::size_of_val(&*self.0);
        // SAFETY: the f32s' own bytes, as many as they have; any bytes are a
        // valid f32.
        unsafe { std::slice::from_raw_parts_mut(self.0.as_mut_ptr().cast(), len) }
    }
}

#[test]
fn run_into_writes_the_lent_buffer_in_place_without_the_ring() {
    let frame = picture(PixelFormat::Nv12, 128, 72, 5);
    let color = ColorSpec::new(Matrix::Bt709, Range::Limited);
    let crop = Some(Region::new(16, 0, 96, 72));
    for device in [Backend::Cpu, Backend::Gpu] {
        let input = input(DType::F32, ModelLayout::Nchw);
        let buffer = RuntimeInput(vec![f32::NAN; 3 * 48 * 40].into_boxed_slice());
        let address = buffer.0.as_ptr() as usize;
        let dst = TensorDyn::F32(Tensor::from_external_mut(buffer, &input.shape(), None).unwrap());
        let mut pre = Preprocessor::new(input.clone(), device).unwrap();
        let (placed, _) = pre.run_into(&frame, crop, color, &dst).unwrap();
        assert_eq!(
            pre.stats().tensors_allocated,
            0,
            "{device:?}: the ring is not used"
        );
        assert_eq!(pre.held(), 0);
        let TensorDyn::F32(typed) = &dst else {
            unreachable!("made as f32 above")
        };
        let written = typed.map_read().unwrap();
        assert_eq!(
            written.as_ptr() as usize,
            address,
            "the runtime's own buffer"
        );
        assert!(
            written.iter().all(|v| v.is_finite()),
            "every element written"
        );
        drop(written);
        let ring = pre.run(&frame, crop, color).unwrap();
        assert_eq!(ring.placement, placed);
        assert!(
            element_bytes(&ring.tensor, 0) == element_bytes(&dst, 0),
            "{device:?}: run_into and run write the same bits"
        );
        // Not the input's shape: named, and nothing written.
        let wrong =
            TensorDyn::new(&[1, 3, 48, 40], DType::F32, Some(TensorMemory::Mem), None).unwrap();
        let e = pre.run_into(&frame, crop, color, &wrong).unwrap_err();
        assert!(
            matches!(
                &e,
                PreprocessError::Model(ModelInputError::DestinationShape {
                    expected: [1, 3, 40, 48],
                    ..
                })
            ),
            "{e}"
        );
        assert!(e.to_string().contains("[1, 3, 48, 40]"), "{e}");
    }
}
