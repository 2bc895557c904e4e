//! `from_planes`: a luma and a chroma plane cut from one buffer or two, of
//! sizes, strides and offsets that fit together or do not, then operations
//! on the image they make.

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use zerocam_tensor::{ImageLayout, PixelFormat, Tensor, TensorMemory};

use super::checks::{check, fail, Item, Sample};
use super::model;
use super::oracle::{image_plane_places, plane_rows};
use super::step::{run_ops, step, Act};
use super::strategies::{ops, Op};

/// Where the two planes live.
#[derive(Debug, Clone, Copy)]
pub enum Buffers {
    OneMem,
    OneShm,
    TwoMem,
    TwoShm,
    /// One memfd imported twice: two buffers, one file.
    ShmFileTwice,
    MemAndShm,
}

/// One plane: row padding and start, in elements; rows and samples off the
/// right ones by `rows_delta` and `width_delta` (0 mostly).
#[derive(Debug, Clone, Copy)]
pub struct PlaneChoice {
    pub pad: usize,
    pub start: usize,
    pub rows_delta: isize,
    pub width_delta: isize,
}

#[derive(Debug, Clone)]
pub struct PlanesCase {
    pub elem: usize,
    pub format: PixelFormat,
    pub width: usize,
    pub height: usize,
    pub luma: PlaneChoice,
    pub chroma: PlaneChoice,
    /// In one buffer: the chroma's start, in elements after the luma's end
    /// (negative: overlapping it).
    pub gap: isize,
    /// Spare elements at the end of each buffer.
    pub tail: usize,
    pub buffers: Buffers,
    /// Pass the whole one-dimensional buffer as the luma.
    pub luma_1d: bool,
    pub ops: Vec<Op>,
}

fn plane_choice() -> impl Strategy<Value = PlaneChoice> {
    let delta = prop_oneof![8 => Just(0isize), 1 => -1isize..=1];
    (0usize..=4, 0usize..=6, delta.clone(), delta).prop_map(
        |(pad, start, rows_delta, width_delta)| PlaneChoice {
            pad,
            start,
            rows_delta,
            width_delta,
        },
    )
}

pub fn planes_case() -> impl Strategy<Value = PlanesCase> {
    let format = prop_oneof![
        6 => prop::sample::select(vec![PixelFormat::Nv12, PixelFormat::Nv16]),
        1 => prop::sample::select(PixelFormat::ALL.to_vec()),
    ];
    let buffers = prop::sample::select(vec![
        Buffers::OneMem,
        Buffers::OneShm,
        Buffers::TwoMem,
        Buffers::TwoShm,
        Buffers::ShmFileTwice,
        Buffers::MemAndShm,
    ]);
    let even = |n: usize| prop_oneof![6 => (1..=n / 2).prop_map(|v| 2 * v), 1 => 1..=n];
    (
        (0usize..4, format, even(12), even(10)),
        (plane_choice(), plane_choice(), -4isize..=6, 0usize..=3),
        (buffers, prop::bool::weighted(0.05), ops()),
    )
        .prop_map(
            |(
                (elem, format, width, height),
                (luma, chroma, gap, tail),
                (buffers, luma_1d, ops),
            )| {
                PlanesCase {
                    elem,
                    format,
                    width,
                    height,
                    luma,
                    chroma,
                    gap,
                    tail,
                    buffers,
                    luma_1d,
                    ops,
                }
            },
        )
}

/// A plane `[rows, samples]` with rows `stride` bytes apart from byte
/// `offset` of `buffer`: a grey image laid on it, and its plane 0.
fn cut<T: Sample>(
    buffer: &Item<T>,
    (rows, samples): (usize, usize),
    stride: usize,
    offset: usize,
) -> Result<Item<T>, TestCaseError> {
    let layout = ImageLayout::new(samples, rows, PixelFormat::Grey)
        .with_row_stride(stride)
        .with_start_offset(offset);
    let image = step(buffer, &Act::WithImage(layout))?
        .ok_or_else(|| fail(format!("{layout:?} on {:?}", buffer.t)))?;
    step(&image, &Act::Plane(0))?.ok_or_else(|| fail("plane 0 of a grey image"))
}

pub fn run<T: Sample>(case: &PlanesCase) -> Result<(), TestCaseError> {
    let e = size_of::<T>();
    let (w, h) = (case.width, case.height);
    let (y, c) = (case.luma, case.chroma);
    let y_stride = (w + y.pad) * e;
    let y_off = y.start * e;
    let luma_end = y_off + (h - 1) * y_stride + w * e;
    let c_rows = plane_rows(case.format, 1, h)
        .saturating_add_signed(c.rows_delta)
        .max(1);
    let c_w = w.saturating_add_signed(c.width_delta).max(1);
    let c_stride = (c_w + c.pad) * e;
    let one = matches!(case.buffers, Buffers::OneMem | Buffers::OneShm);
    let c_off = match one {
        true => (luma_end / e).saturating_add_signed(case.gap) * e,
        false => c.start * e,
    };
    let c_end = c_off + (c_rows - 1) * c_stride + c_w * e;
    let (mem, shm) = (TensorMemory::Mem, TensorMemory::Shm);
    let count = |end: usize| end / e + case.tail;
    let both = count(luma_end.max(c_end));
    let shared = |memory| {
        let b = Item::<T>::alloc(both, memory);
        (b.clone(), b)
    };
    let apart = |luma_memory, chroma_memory| {
        (
            Item::<T>::alloc(count(luma_end), luma_memory),
            Item::<T>::alloc(count(c_end), chroma_memory),
        )
    };
    let (luma_buf, chroma_buf) = match case.buffers {
        Buffers::OneMem => shared(mem),
        Buffers::OneShm => shared(shm),
        Buffers::TwoMem => apart(mem, mem),
        Buffers::TwoShm => apart(shm, shm),
        Buffers::MemAndShm => apart(mem, shm),
        Buffers::ShmFileTwice => {
            let a = Item::<T>::alloc(both, shm);
            let b = a.reimport(both);
            (a, b)
        }
    };
    let luma = match case.luma_1d {
        true => luma_buf.clone(),
        false => cut(&luma_buf, (h, w), y_stride, y_off)?,
    };
    let chroma = cut(&chroma_buf, (c_rows, c_w), c_stride, c_off)?;
    let one_buffer = luma.bufs[0].instance == chroma.bufs[0].instance;
    let expect = model::from_planes_ok(case.format, &luma.t, &chroma.t, one_buffer);
    let image = match Tensor::from_planes(luma.t.clone(), chroma.t.clone(), case.format) {
        Ok(t) => t,
        Err(err) => {
            prop_assert!(
                !expect,
                "from_planes of {:?} and {:?} refused: {}",
                luma.t,
                chroma.t,
                err
            );
            return Ok(());
        }
    };
    prop_assert!(
        expect,
        "from_planes of {:?} and {:?} accepted: {:?}",
        luma.t,
        chroma.t,
        image.placement()
    );
    prop_assert_ne!(image.buffer_identity(), luma.t.buffer_identity());
    let bufs = match one_buffer {
        true => vec![luma.bufs[0]],
        false => vec![luma.bufs[0], chroma.bufs[0]],
    };
    let image = Item { t: image, bufs };
    check(&image)?;
    // Plane 0 holds exactly the luma's elements, plane 1 the chroma's.
    let placement = image.t.placement().unwrap();
    for (i, plane) in [&luma, &chroma].into_iter().enumerate() {
        let mut placed: Vec<(u64, usize)> = image_plane_places(&placement, i, e)
            .map_err(fail)?
            .into_iter()
            .map(|(b, at)| (image.bufs[b].memory, at))
            .collect();
        let mut want = check(plane)?;
        placed.sort_unstable();
        want.sort_unstable();
        prop_assert!(
            placed == want,
            "plane {} of {:?} is not {:?}",
            i,
            image.t,
            plane.t
        );
    }
    run_ops(image, &case.ops)
}
