//! One operation on one tensor: applied to the typed and the dynamic tensor,
//! its answer compared with the model, its result checked and compared with
//! what was asked.

use std::collections::BTreeSet;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use zerocam_tensor::{ImageLayout, PixelFormat, Region, Tensor};

use super::checks::{check, fail, fresh, write_through, Item, Sample};
use super::strategies::Op;
use super::{model, oracle};

/// An operation resolved against the tensor it applies to.
#[derive(Debug, Clone)]
pub(crate) enum Act {
    View(Region),
    Batch(usize),
    Plane(usize),
    WithImage(ImageLayout),
    Reimport(Vec<usize>),
    /// `from_planes(plane(0), plane(1), format)` of an image with two planes
    /// or more; `from_planes(t, t, format)` of anything else.
    Recombine(PixelFormat),
}

/// Applies `act` to `parent` as a typed and as a dynamic tensor, checks the
/// answers agree with each other and with the model, and checks the result.
/// Returns the result when there is one.
pub(crate) fn step<T: Sample>(
    parent: &Item<T>,
    act: &Act,
) -> Result<Option<Item<T>>, TestCaseError> {
    let p = &parent.t;
    let (expect, got, dynamic) = match act {
        Act::View(r) => (
            model::view_ok(p, *r),
            p.view(*r),
            Some(T::to_dyn(p.clone()).view(*r)),
        ),
        Act::Batch(n) => (
            model::batch_ok(p, *n),
            p.batch(*n),
            Some(T::to_dyn(p.clone()).batch(*n)),
        ),
        Act::Plane(i) => (
            model::plane_ok(p, *i),
            p.plane(*i),
            Some(T::to_dyn(p.clone()).plane(*i)),
        ),
        Act::WithImage(l) => (
            model::with_image_ok(p, l).is_some(),
            p.clone().with_image(*l),
            Some(T::to_dyn(p.clone()).with_image(*l)),
        ),
        Act::Reimport(dims) => {
            let ok = model::reimport_ok(p, parent.bufs.len(), dims, parent.bufs[0].len);
            let got = p
                .clone_fd()
                .and_then(|fd| Tensor::<T>::from_fd(fd, dims, None));
            (ok, got, None)
        }
        Act::Recombine(f) => {
            let (luma, chroma) = match (p.plane(0), p.plane(1)) {
                (Ok(y), Ok(c)) => (y, c),
                _ => (p.clone(), p.clone()),
            };
            let ok = model::from_planes_ok(*f, &luma, &chroma, parent.bufs.len() == 1);
            (ok, Tensor::from_planes(luma, chroma, *f), None)
        }
    };
    if let Some(d) = &dynamic {
        prop_assert_eq!(
            d.is_ok(),
            got.is_ok(),
            "TensorDyn disagrees on {:?} of {:?}",
            act,
            p
        );
        if let (Ok(d), Ok(t)) = (d, &got) {
            prop_assert_eq!(d.shape(), t.shape());
            prop_assert_eq!(d.strides(), t.strides());
            prop_assert_eq!(d.plane_offset(), t.plane_offset());
            prop_assert_eq!(d.buffer_identity(), t.buffer_identity());
        }
    }
    let child = match got {
        Ok(t) => t,
        Err(err) => {
            prop_assert!(
                !expect,
                "{:?} of {:?} ({:?}) refused: {}",
                act,
                p,
                p.placement(),
                err
            );
            return Ok(None);
        }
    };
    prop_assert!(
        expect,
        "{:?} of {:?} ({:?}) accepted: {:?}",
        act,
        p,
        p.placement(),
        child.placement()
    );
    let bufs = match (act, p.placement()) {
        (Act::Plane(i), Some(pl)) => vec![parent.bufs[pl.root.planes()[*i].buffer]],
        (Act::Reimport(_), _) => {
            let mut b = parent.bufs[0];
            b.instance = fresh();
            vec![b]
        }
        _ => parent.bufs.clone(),
    };
    let child = Item { t: child, bufs };
    let elements = check(&child)?;
    // An import and a new image from planes get a fresh identity.
    let fresh_identity = matches!(act, Act::Reimport(_) | Act::Recombine(_));
    prop_assert_eq!(
        child.t.buffer_identity() == p.buffer_identity(),
        !fresh_identity
    );
    if let Act::Reimport(_) = act {
        return Ok(Some(child));
    }
    let parent_elements: BTreeSet<(u64, usize)> = check(parent)?.into_iter().collect();
    let outside = elements.iter().find(|e| !parent_elements.contains(e));
    prop_assert!(
        outside.is_none(),
        "{:?} of {:?} reaches {:?} outside its parent",
        act,
        p,
        outside
    );
    semantics(parent, act, &child, &elements)?;
    write_through(&child, parent, &elements)?;
    Ok(Some(child))
}

/// The result is the one asked for, not just some tensor inside the buffer.
fn semantics<T: Sample>(
    parent: &Item<T>,
    act: &Act,
    child: &Item<T>,
    elements: &[(u64, usize)],
) -> Result<(), TestCaseError> {
    let (p, c) = (&parent.t, &child.t);
    let e = size_of::<T>();
    match (act, p.placement(), c.placement()) {
        (Act::View(r), Some(pp), Some(cp)) => {
            prop_assert_eq!(
                (cp.root, cp.frame, cp.frames),
                (pp.root, pp.frame, pp.frames)
            );
            let at = Region::new(pp.region.x + r.x, pp.region.y + r.y, r.width, r.height);
            prop_assert_eq!(cp.region, at);
        }
        (Act::View(r), None, None) => {
            let s = p.strides().unwrap();
            let mut shape = p.shape().to_vec();
            (shape[0], shape[1]) = (r.height, r.width);
            prop_assert_eq!(c.shape(), &shape[..]);
            prop_assert_eq!(c.strides().unwrap(), s.clone());
            prop_assert_eq!(c.plane_offset(), p.plane_offset() + r.y * s[0] + r.x * s[1]);
        }
        (Act::Batch(n), Some(pp), Some(cp)) => {
            prop_assert_eq!((cp.root, cp.region), (pp.root, pp.region));
            prop_assert_eq!((cp.frame, cp.frames), (pp.frame + n, 1));
        }
        (Act::Batch(n), None, None) => {
            let s = p.strides().unwrap();
            let rest = if p.shape().len() == 1 {
                &[1][..]
            } else {
                &p.shape()[1..]
            };
            prop_assert_eq!(c.shape(), rest);
            prop_assert_eq!(c.plane_offset(), p.plane_offset() + n * s[0]);
        }
        (Act::Plane(i), Some(pp), None) => {
            let mut want: Vec<(u64, usize)> = oracle::image_plane_places(&pp, *i, e)
                .map_err(fail)?
                .into_iter()
                .map(|(b, at)| (parent.bufs[b].memory, at))
                .collect();
            let mut got = elements.to_vec();
            want.sort_unstable();
            got.sort_unstable();
            prop_assert!(
                want == got,
                "plane {} of {:?} is not the placed plane",
                i,
                p
            );
        }
        (Act::Plane(0), None, None) => {
            prop_assert_eq!((c.shape(), c.strides()), (p.shape(), p.strides()));
            prop_assert_eq!(c.plane_offset(), p.plane_offset());
        }
        (Act::WithImage(l), None, Some(cp)) => {
            let r = cp.root;
            prop_assert_eq!(
                (r.format, r.width, r.height, r.batch),
                (l.format, l.width, l.height, l.batch)
            );
            prop_assert_eq!(
                (cp.frame, cp.frames, cp.region),
                (0, l.batch, Region::new(0, 0, l.width, l.height))
            );
            prop_assert_eq!(r.planes()[0].offset, p.plane_offset() + l.start_offset);
            let packed = oracle::plane_samples(l.format, l.width).unwrap() * e;
            prop_assert_eq!(r.planes()[0].stride, l.row_stride.unwrap_or(packed));
        }
        (Act::Recombine(f), Some(pp), Some(cp)) => {
            let (w, h) = (pp.region.width, pp.region.height);
            prop_assert_eq!((cp.root.format, cp.frame, cp.frames), (*f, 0, 1));
            prop_assert_eq!(cp.region, Region::new(0, 0, w, h));
            // Its two planes are the parent's first two.
            for i in 0..2 {
                let mut placed = oracle::image_plane_places(&cp, i, e).map_err(fail)?;
                let mut want = oracle::image_plane_places(&pp, i, e).map_err(fail)?;
                placed.sort_unstable();
                want.sort_unstable();
                prop_assert!(placed == want, "plane {} of {:?} moved", i, c);
            }
        }
        _ => prop_assert!(false, "{:?} of {:?} gave {:?}", act, p, c),
    }
    Ok(())
}

/// Runs `ops` from `item`, each on the last result (or, after an error, on
/// the last tensor that was made).
pub(crate) fn run_ops<T: Sample>(mut item: Item<T>, ops: &[Op]) -> Result<(), TestCaseError> {
    for op in ops {
        let act = op.resolve(&item.t);
        if let Some(next) = step(&item, &act)? {
            item = next;
        }
    }
    Ok(())
}
