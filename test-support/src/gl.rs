//! The GL side of lab tests (feature `gl`): a `Gpu` on zink over lavapipe,
//! and the options that require the dma-buf import (no upload fallback), so
//! a test that passes has imported.

use zerocam_gpu::{ColorSpec, ConvertOptions, Gpu, ImportPolicy};

/// BT.601 limited range, EGLImage import required (no upload fallback).
pub const REQUIRE: ConvertOptions = ConvertOptions {
    crop: None,
    color: ColorSpec::BT601_LIMITED,
    import: ImportPolicy::Require,
};

/// A `Gpu` on zink over lavapipe ([`zink_env`](crate::lab::zink_env)).
///
/// # Panics
/// Where no GLES 3 context can be made (a lab test has nothing to check then).
#[allow(clippy::unwrap_used)] // a test helper: failing loudly is the point
pub fn gpu() -> Gpu {
    crate::lab::zink_env();
    Gpu::new().unwrap()
}
