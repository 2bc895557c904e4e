//! EGL devices and a GL thread on a chosen one (`Gpu::with_display`), on the
//! host's Mesa: its EGL lists a software device (llvmpipe) and no device of
//! NVIDIA's, so asking for a CUDA device's display is a typed error that
//! names what there is. NVIDIA's side (`EGL_CUDA_DEVICE_NV`) is checked on a
//! GPU machine by `tests/device/cuda.sh`.
#![allow(clippy::unwrap_used)]

mod common;

use common::{picture, Reference};
use zerocam_gpu::{egl_devices, ConvertOptions, EglDisplay, Gpu, GpuError};
use zerocam_tensor::{PixelFormat, Tensor, TensorMemory};

#[test]
fn mesa_lists_its_devices_and_no_cuda_one() {
    let devices = egl_devices().unwrap();
    assert!(
        !devices.is_empty(),
        "Mesa lists at least its software device"
    );
    for (i, d) in devices.iter().enumerate() {
        assert_eq!(d.index, i);
        assert!(d.extensions.contains("EGL_"), "{d:?}");
        assert_eq!(
            d.cuda_device, None,
            "Mesa's devices are no CUDA devices: {d:?}"
        );
    }
    assert!(devices.iter().any(|d| d.software), "{devices:?}");
}

#[test]
fn a_gl_thread_on_the_software_device_converts_as_the_default_one() {
    let software = egl_devices()
        .unwrap()
        .into_iter()
        .find(|d| d.software)
        .unwrap();
    let gpu = Gpu::with_display(EglDisplay::Device(software.index)).unwrap();
    let info = gpu.info();
    assert_eq!(info.platform, "device");
    assert_eq!(info.device.as_ref(), Some(&software));
    assert!(info.egl_vendor.contains("Mesa"), "{info:?}");
    assert!(info.version.starts_with("OpenGL ES 3"), "{info:?}");

    // The same pixels as through the default display's GL thread.
    let src = picture(PixelFormat::Nv12, 64, 48);
    let opts = ConvertOptions::default();
    let reference = Reference::new(&src, opts.crop, (32, 24), opts.color);
    let dst = Tensor::<u8>::image(32, 24, PixelFormat::Rgb, Some(TensorMemory::Mem)).unwrap();
    gpu.convert(&src, &dst, &opts).unwrap();
    let bytes = dst.map_read().unwrap().to_vec();
    let stride = dst.row_stride().unwrap();
    let (err, at) = reference.max_error(|x, y, c| bytes[y * stride + x * 3 + c]);
    assert!(err <= 2, "off by {err} at {at:?}");
}

#[test]
fn a_cuda_device_mesa_does_not_have_is_a_typed_error_listing_the_devices() {
    let listed = egl_devices().unwrap();
    for which in [EglDisplay::CudaDevice(0), EglDisplay::Device(listed.len())] {
        match Gpu::with_display(which) {
            Err(GpuError::NoEglDevice { wanted, devices }) => {
                assert_eq!(wanted, format!("{which:?}"));
                assert!(devices.contains("device 0"), "{devices}");
                assert!(devices.contains("(software)"), "{devices}");
            }
            other => panic!("{which:?}: {other:?}"),
        }
    }
}

#[test]
fn the_default_display_says_whose_egl_it_is() {
    let gpu = Gpu::new().unwrap();
    assert_eq!(gpu.info().platform, "surfaceless");
    assert!(gpu.info().egl_vendor.contains("Mesa"), "{:?}", gpu.info());
    assert_eq!(gpu.info().device, None);
}
