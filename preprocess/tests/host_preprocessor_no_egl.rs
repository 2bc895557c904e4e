//! `Preprocessor` where EGL cannot be loaded (its own test binary: it sets
//! the process's environment, and looks at the process's mappings and
//! threads): `Backend::Cpu` works without ever loading EGL, `Auto` takes the
//! CPU and says why, `Backend::Gpu` is a typed error naming the library.
#![allow(clippy::unwrap_used)]

use zerocam_gpu::{GpuError, EGL_LIBRARY_ENV};
use zerocam_preprocess::{
    Backend, BackendReason, ChosenBackend, ModelInput, PreprocessError, Preprocessor,
};
use zerocam_tensor::ColorSpec;
use zerocam_tensor::{PixelFormat, Tensor, TensorMemory};

/// Whether this process has mapped a library named like `name`.
fn mapped(name: &str) -> bool {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .contains(name)
}

/// Whether a thread of this process is named `name`.
fn thread_named(name: &str) -> bool {
    std::fs::read_dir("/proc/self/task").unwrap().any(|t| {
        let comm = t.unwrap().path().join("comm");
        std::fs::read_to_string(comm).is_ok_and(|c| c.trim() == name)
    })
}

#[test]
fn without_egl_the_cpu_serves_and_the_gpu_is_a_typed_error() {
    let input = ModelInput::new(32, 32).unwrap();
    let frame = Tensor::<u8>::image(64, 48, PixelFormat::Yuyv, Some(TensorMemory::Mem)).unwrap();
    let color = ColorSpec::default();

    // The only test of this binary: nothing else has loaded EGL yet.
    let mut cpu = Preprocessor::new(input.clone(), Backend::Cpu).unwrap();
    cpu.run(&frame, None, color).unwrap();
    assert!(!mapped("libEGL"), "Backend::Cpu loaded EGL");
    assert!(
        !thread_named("zerocam-gl"),
        "Backend::Cpu started a GL thread"
    );

    std::env::set_var(EGL_LIBRARY_ENV, "/nonexistent/libEGL.so.1");
    let mut auto = Preprocessor::new(input.clone(), Backend::Auto).unwrap();
    assert_eq!(auto.backend(), ChosenBackend::Cpu);
    assert!(
        matches!(auto.reason(), BackendReason::NoEgl { reason } if reason.contains("/nonexistent/libEGL.so.1")),
        "{}",
        auto.reason()
    );
    assert!(auto.reason().to_string().starts_with("no EGL: "));
    let out = auto.run(&frame, None, color).unwrap();
    assert_eq!(
        (out.backend, out.tensor.memory()),
        (ChosenBackend::Cpu, TensorMemory::Mem)
    );

    let e = Preprocessor::new(input, Backend::Gpu).unwrap_err();
    assert!(
        matches!(
            e,
            PreprocessError::NoGpu {
                source: GpuError::EglUnavailable { .. }
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("/nonexistent/libEGL.so.1"), "{e}");
}
