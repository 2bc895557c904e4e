//! What the geometry properties draw: sizes, strides, offsets, regions and
//! indices, small ones mostly and overflow-prone ones (0, `u32::MAX`,
//! `usize::MAX` and its halves, thirds and quarters) among them.

use proptest::prelude::*;
use zerocam_tensor::{Element, ImageLayout, PixelFormat, Region, Tensor};

use super::model::frame_size;
use super::oracle::{plane_samples, subsampling};
use super::step::Act;

/// A value chosen to break arithmetic: zero, the ends of `u32` and `usize`,
/// values whose double, triple or quadruple overflows, powers of two past 32 bits.
pub fn hostile() -> impl Strategy<Value = usize> {
    prop_oneof![
        Just(0usize),
        (0usize..4).prop_map(|d| usize::MAX - d),
        (0usize..4).prop_map(|d| usize::MAX / 2 + d),
        (0usize..4).prop_map(|d| usize::MAX / 3 + d),
        (0usize..4).prop_map(|d| usize::MAX / 4 + d),
        (0usize..4).prop_map(|d| (u32::MAX as usize - 1).wrapping_add(d)),
        (32u32..63).prop_map(|s| 1usize.checked_shl(s).unwrap_or(usize::MAX)),
        any::<usize>(),
    ]
}

/// Mostly `small`, sometimes hostile.
pub fn small_or_hostile(small: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = usize> {
    prop_oneof![8 => small, 1 => hostile()]
}

/// A row stride, plane offset or start offset: the default, the smallest
/// valid value plus a few elements (one byte off alignment now and then), or
/// anything.
#[derive(Debug, Clone, Copy)]
pub enum Extra {
    Default,
    Pad { elements: usize, misaligned: bool },
    Raw(usize),
}

fn extra() -> impl Strategy<Value = Extra> {
    prop_oneof![
        3 => Just(Extra::Default),
        4 => (0usize..=6, prop::bool::weighted(0.15))
            .prop_map(|(elements, misaligned)| Extra::Pad { elements, misaligned }),
        1 => hostile().prop_map(Extra::Raw),
    ]
}

impl Extra {
    /// The value for a layout whose smallest valid one is `min` (`None` when
    /// that overflowed), or `None` for the default.
    fn over(self, min: Option<usize>, elem: usize) -> Option<usize> {
        match self {
            Extra::Default => None,
            Extra::Pad {
                elements,
                misaligned,
            } => {
                let pad = elements * elem + usize::from(misaligned);
                Some(min.map_or(usize::MAX - pad, |m| m.saturating_add(pad)))
            }
            Extra::Raw(v) => Some(v),
        }
    }
}

/// An [`ImageLayout`] before it meets an element size.
#[derive(Debug, Clone, Copy)]
pub struct LayoutChoice {
    pub format: PixelFormat,
    pub width: usize,
    pub height: usize,
    /// Round width and height up to the chroma subsampling.
    pub align: bool,
    pub row_stride: Extra,
    pub plane_offset: Extra,
    pub batch: usize,
    pub start: Extra,
}

pub fn layout_choice() -> impl Strategy<Value = LayoutChoice> {
    (
        prop::sample::select(PixelFormat::ALL.to_vec()),
        small_or_hostile(1..=10),
        small_or_hostile(1..=10),
        prop::bool::weighted(0.8),
        extra(),
        extra(),
        prop_oneof![4 => Just(1usize), 3 => 2usize..=3, 1 => hostile()],
        extra(),
    )
        .prop_map(
            |(format, width, height, align, row_stride, plane_offset, batch, start)| LayoutChoice {
                format,
                width,
                height,
                align,
                row_stride,
                plane_offset,
                batch,
                start,
            },
        )
}

impl LayoutChoice {
    /// The layout for `elem`-byte samples.
    pub fn resolve(&self, elem: usize) -> ImageLayout {
        let (hsub, vsub) = subsampling(self.format);
        let round = |v: usize, m: usize| match self.align {
            true => v.checked_next_multiple_of(m).unwrap_or(v),
            false => v,
        };
        let (width, height) = (round(self.width, hsub), round(self.height, vsub));
        let row = plane_samples(self.format, width).and_then(|s| s.checked_mul(elem));
        let row_stride = self.row_stride.over(row, elem);
        let first_plane = row_stride.or(row).and_then(|s| s.checked_mul(height));
        let mut l = ImageLayout::new(width, height, self.format).with_batch(self.batch);
        l.row_stride = row_stride;
        l.plane_offset = self.plane_offset.over(first_plane, elem);
        l.start_offset = self.start.over(Some(0), elem).unwrap_or(0);
        l
    }
}

/// A region: given outright (often out of bounds), or inside the frame it is
/// cut from, aligned to its subsampling now and then.
#[derive(Debug, Clone, Copy)]
pub enum RegionChoice {
    Abs(Region),
    Inside {
        x: usize,
        y: usize,
        width: usize,
        height: usize,
        align: bool,
    },
}

fn region_choice() -> impl Strategy<Value = RegionChoice> {
    let coord = || small_or_hostile(0..=12);
    prop_oneof![
        1 => (coord(), coord(), coord(), coord())
            .prop_map(|(x, y, w, h)| RegionChoice::Abs(Region::new(x, y, w, h))),
        3 => (any::<usize>(), any::<usize>(), any::<usize>(), any::<usize>(), prop::bool::weighted(0.7))
            .prop_map(|(x, y, width, height, align)| RegionChoice::Inside { x, y, width, height, align }),
    ]
}

impl RegionChoice {
    fn resolve<T: Element>(self, t: &Tensor<T>) -> Region {
        let (x, y, width, height, align) = match self {
            RegionChoice::Abs(r) => return r,
            RegionChoice::Inside {
                x,
                y,
                width,
                height,
                align,
            } => (x, y, width, height, align),
        };
        let (fw, fh) = frame_size(t).unwrap_or((1, 1));
        let (x, y) = (x % fw, y % fh);
        let (mut w, mut h) = (1 + width % (fw - x), 1 + height % (fh - y));
        let (mut x, mut y) = (x, y);
        if align {
            let (hsub, vsub) = t.format().map_or((1, 1), subsampling);
            (x, y) = (x - x % hsub, y - y % vsub);
            (w, h) = (w.next_multiple_of(hsub), h.next_multiple_of(vsub));
        }
        Region::new(x, y, w, h)
    }
}

/// One operation of a chain, before it meets the tensor it applies to.
#[derive(Debug, Clone)]
pub enum Op {
    View(RegionChoice),
    Batch(usize),
    Plane(usize),
    WithImage(LayoutChoice),
    /// `from_fd(clone_fd(), dims)`: the same memory as a fresh array.
    Reimport(Vec<usize>),
    /// `from_planes` of the tensor's first two planes, as this format.
    Recombine(PixelFormat),
}

impl Op {
    pub fn resolve<T: Element>(&self, t: &Tensor<T>) -> Act {
        match self {
            Op::View(r) => Act::View(r.resolve(t)),
            Op::Batch(n) => Act::Batch(*n),
            Op::Plane(i) => Act::Plane(*i),
            Op::WithImage(l) => Act::WithImage(l.resolve(size_of::<T>())),
            Op::Reimport(dims) => Act::Reimport(dims.clone()),
            Op::Recombine(f) => Act::Recombine(*f),
        }
    }
}

fn index() -> impl Strategy<Value = usize> {
    small_or_hostile(0..=3)
}

pub fn ops() -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        4 => region_choice().prop_map(Op::View),
        2 => index().prop_map(Op::Batch),
        2 => index().prop_map(Op::Plane),
        1 => layout_choice().prop_map(Op::WithImage),
        1 => prop_oneof![
            4 => prop::collection::vec(1usize..=8, 1..=3),
            1 => prop::collection::vec(small_or_hostile(0..=8), 0..=3),
        ]
        .prop_map(Op::Reimport),
        1 => prop_oneof![
            3 => prop::sample::select(vec![PixelFormat::Nv12, PixelFormat::Nv16]),
            1 => prop::sample::select(PixelFormat::ALL.to_vec()),
        ]
        .prop_map(Op::Recombine),
    ];
    prop::collection::vec(op, 0..=6)
}

/// Where a chain starts.
#[derive(Debug, Clone)]
pub enum Source {
    /// A one-dimensional buffer sized for the layout (± some elements), and
    /// the layout laid on it with `with_image`.
    Layout(LayoutChoice, isize),
    /// An image allocated with `builder_image`.
    Build(LayoutChoice),
    /// An array allocated with `Tensor::new`.
    Array(Vec<usize>),
}

/// A chain: element type (`u8`, `u16`, `f32`, `f64`), memory, source, operations.
#[derive(Debug, Clone)]
pub struct ChainCase {
    pub elem: usize,
    pub shm: bool,
    pub source: Source,
    pub ops: Vec<Op>,
}

pub fn chain_case() -> impl Strategy<Value = ChainCase> {
    let source = prop_oneof![
        6 => (layout_choice(), -3isize..=12).prop_map(|(l, slack)| Source::Layout(l, slack)),
        2 => layout_choice().prop_map(Source::Build),
        2 => prop::collection::vec(1usize..=8, 1..=4).prop_map(Source::Array),
    ];
    (0usize..4, any::<bool>(), source, ops()).prop_map(|(elem, shm, source, ops)| ChainCase {
        elem,
        shm,
        source,
        ops,
    })
}
