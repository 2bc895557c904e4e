//! Property tests of tensor geometry: `view`, `batch`, `plane`,
//! `with_image` and `from_planes`, composed, with random sizes, strides and
//! offsets, overflow-prone values included. Each result is a typed error or a
//! tensor every element of which lies inside its buffer — derived here from
//! the public placement, shape and strides (`prop_geometry/oracle.rs`), checked
//! against the buffer's real length (`fstat` for shared memory), then touched
//! through a CPU map — and each result is the one the documented rules ask for
//! (`prop_geometry/model.rs`). A view's bytes are its parent's: written through
//! the view, read through the parent.
#![allow(clippy::unwrap_used, clippy::undocumented_unsafe_blocks)] // tests may panic

#[path = "prop_geometry/checks.rs"]
mod checks;
#[path = "prop_geometry/model.rs"]
mod model;
#[path = "prop_geometry/oracle.rs"]
mod oracle;
#[path = "prop_geometry/planes.rs"]
mod planes;
#[path = "prop_geometry/step.rs"]
mod step;
#[path = "prop_geometry/strategies.rs"]
mod strategies;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use zerocam_tensor::{Error, Tensor, TensorMemory};

use checks::{check, fail, Item, Sample};
use step::{run_ops, step, Act};
use strategies::{ChainCase, Source};

/// The largest buffer a case allocates, in bytes: small, so a case runs in
/// microseconds and the oracle can list every element.
pub(crate) const CAP: usize = 1 << 14;

fn chain<T: Sample>(case: &ChainCase) -> Result<(), TestCaseError> {
    let e = size_of::<T>();
    let memory = if case.shm {
        TensorMemory::Shm
    } else {
        TensorMemory::Mem
    };
    let item = match &case.source {
        Source::Layout(choice, slack) => {
            let layout = choice.resolve(e);
            let count = match model::layout_needs(&layout, e, 0) {
                Some(n) if n.end <= CAP => (n.end / e).saturating_add_signed(*slack).max(1),
                _ => 1 + slack.unsigned_abs(),
            };
            let whole = Item::<T>::alloc(count, memory);
            check(&whole)?;
            match step(&whole, &Act::WithImage(layout))? {
                Some(image) => image,
                None => whole,
            }
        }
        Source::Build(choice) => {
            let layout = choice.resolve(e);
            let needs = model::layout_needs(&layout, e, 0);
            let size = layout.size_bytes(e);
            prop_assert_eq!(
                size.ok(),
                needs.map(|n| n.size),
                "size_bytes of {:?}",
                layout
            );
            let Some(needs) = needs.filter(|n| n.size <= CAP) else {
                return Ok(());
            };
            let t = Tensor::<T>::builder_image(layout).memory(memory).build();
            let t = t.map_err(|err| fail(format!("{layout:?}: {err}")))?;
            let item = Item::root(t, needs.size);
            check(&item)?;
            item
        }
        Source::Array(dims) => {
            let t = Tensor::<T>::new(dims, Some(memory), None).unwrap();
            let item = Item::root(t, dims.iter().product::<usize>() * e);
            check(&item)?;
            item
        }
    };
    run_ops(item, &case.ops)
}

/// `cases` cases (CI: a few seconds in all), or `PROPTEST_CASES` for a
/// deeper search.
fn config(cases: u32) -> ProptestConfig {
    let env = std::env::var("PROPTEST_CASES").ok();
    ProptestConfig {
        cases: env.and_then(|v| v.parse().ok()).unwrap_or(cases),
        // Each bug found has its own regression test in the crate.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(384))]

    /// A buffer, an image laid on it (or an allocated image, or an array), then
    /// up to six operations.
    #[test]
    fn composed_geometry_stays_inside_the_buffer(case in strategies::chain_case()) {
        match case.elem {
            0 => chain::<u8>(&case)?,
            1 => chain::<u16>(&case)?,
            2 => chain::<f32>(&case)?,
            _ => chain::<f64>(&case)?,
        }
    }

    /// Two planes made from one buffer or two (heap, shared memory, the same
    /// file imported twice) combined by `from_planes`, then operations.
    #[test]
    fn from_planes_stays_inside_its_buffers(case in planes::planes_case()) {
        match case.elem {
            0 => planes::run::<u8>(&case)?,
            1 => planes::run::<u16>(&case)?,
            2 => planes::run::<f32>(&case)?,
            _ => planes::run::<f64>(&case)?,
        }
    }

    /// A shape whose byte size overflows is an error before any allocation.
    #[test]
    fn overflowing_shapes_are_errors(
        mut dims in prop::collection::vec(strategies::small_or_hostile(0..=8), 0..=3),
        huge in (strategies::hostile(), strategies::hostile()),
        at in any::<prop::sample::Index>(),
        memory in prop::sample::select(vec![TensorMemory::Mem, TensorMemory::Shm]),
    ) {
        dims.insert(at.index(dims.len() + 1), huge.0);
        dims.insert(at.index(dims.len() + 1), huge.1);
        let bytes = dims.iter().try_fold(8usize, |n, &d| n.checked_mul(d));
        prop_assume!(bytes.is_none() || dims.contains(&0));
        let e = Tensor::<f64>::new(&dims, Some(memory), None).unwrap_err();
        prop_assert!(matches!(e, Error::ShapeOverflow { .. } | Error::EmptyShape { .. }), "{}", e);
    }

    /// `ImageLayout::size_bytes` answers every layout, hostile ones included,
    /// with the documented size or an error.
    #[test]
    fn size_bytes_never_panics(choice in strategies::layout_choice(), elem in prop::sample::select(vec![1usize, 2, 4, 8])) {
        let layout = choice.resolve(elem);
        let want = model::layout_needs(&layout, elem, 0).map(|n| n.size);
        prop_assert_eq!(layout.size_bytes(elem).ok(), want, "{:?}", layout);
    }
}
