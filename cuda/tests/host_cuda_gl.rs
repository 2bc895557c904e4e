//! Path (c), GL buffer interop, on the host's Mesa (llvmpipe, the GL thread
//! of zerocam-gpu) against the CUDA driver test double. The double asks GL
//! (`glIsBuffer`, on the calling thread's context) at every register and
//! unregister whether the buffer still exists, so an unregister after
//! `glDeleteBuffers` is a recorded violation.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::double::{double, library, serial};
use zerocam_cuda::{Cuda, CudaError, CudaPath};
use zerocam_gpu::{ConvertOptions, Gpu};
use zerocam_tensor::{Access, Error, PixelFormat, Region, Tensor, TensorMemory};

fn cuda_on(gpu: &Gpu) -> Cuda {
    let cuda = Cuda::with_library(library(), 0).unwrap();
    cuda.attach_gpu(gpu);
    cuda
}

fn pbo(gpu: &Gpu, len: usize) -> Tensor<u8> {
    let t = gpu.pbo_tensor::<u8>(&[len]).unwrap();
    double().set_gl_buffer_size(t.pbo_buffer().unwrap(), len);
    t
}

fn assert_clean() {
    let d = double();
    assert_eq!(d.violations(), Vec::<String>::new());
    assert_eq!(d.live_graphics_resources(), 0, "{:?}", d.events());
    assert_eq!(d.mapped_resources(), 0);
    assert_eq!(d.gl_checks_skipped(), 0, "the double could not ask GL");
}

#[test]
fn the_double_catches_an_unregister_after_gl_delete_buffers() {
    let _serial = serial();
    let gpu = Gpu::new().unwrap();
    let t = pbo(&gpu, 4096);
    let name = t.pbo_buffer().unwrap();
    let lib = library().to_owned();
    // Register behind zerocam's back, delete the buffer (the tensor's drop
    // queues glDeleteBuffers), then unregister: the double must see it.
    let registered = gpu
        // SAFETY: the double's symbols have these C signatures (cuda.h); the
        // buffer name is a live PBO of this GL thread.
        .run_on_gl_thread("test register", move |_| unsafe {
            type H = *mut std::ffi::c_void;
            let l = libloading::Library::new(lib).unwrap();
            let init: libloading::Symbol<unsafe extern "C" fn(u32) -> i32> =
                l.get(b"cuInit\0").unwrap();
            let retain: libloading::Symbol<unsafe extern "C" fn(*mut H, i32) -> i32> =
                l.get(b"cuDevicePrimaryCtxRetain\0").unwrap();
            let push: libloading::Symbol<unsafe extern "C" fn(H) -> i32> =
                l.get(b"cuCtxPushCurrent_v2\0").unwrap();
            let reg: libloading::Symbol<unsafe extern "C" fn(*mut H, u32, u32) -> i32> =
                l.get(b"cuGraphicsGLRegisterBuffer\0").unwrap();
            let (mut ctx, mut res) = (std::ptr::null_mut(), std::ptr::null_mut());
            assert_eq!(init(0), 0);
            assert_eq!(retain(&mut ctx, 0), 0);
            assert_eq!(push(ctx), 0);
            assert_eq!(reg(&mut res, name, 0), 0);
            res as usize
        })
        .unwrap();
    drop(t);
    let lib = library().to_owned();
    // SAFETY: as above; the resource was registered by the job above.
    gpu.run_on_gl_thread("test unregister", move |th| unsafe {
        assert!(!th.is_buffer(name), "deleted");
        let l = libloading::Library::new(lib).unwrap();
        let unreg: libloading::Symbol<unsafe extern "C" fn(*mut std::ffi::c_void) -> i32> =
            l.get(b"cuGraphicsUnregisterResource\0").unwrap();
        assert_eq!(unreg(registered as *mut _), 0);
    })
    .unwrap();
    let v = double().violations();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(
        v[0].starts_with("unregister after glDeleteBuffers"),
        "{v:?}"
    );
    double().reset();
}

#[test]
fn a_pbo_registers_once_and_maps_per_use_over_1000_frames() {
    let _serial = serial();
    let d = double();
    let gpu = Gpu::new().unwrap();
    let cuda = cuda_on(&gpu);
    let t = pbo(&gpu, 640 * 640 * 3);
    let mut first = 0;
    for f in 0..1000 {
        let map = cuda.map(&t, Access::ReadWrite).unwrap();
        assert_eq!(map.path(), CudaPath::GlBuffer);
        assert_eq!(map.len(), 640 * 640 * 3);
        if f == 0 {
            first = map.device_ptr();
        }
        assert_eq!(map.device_ptr(), first);
    }
    let s = cuda.stats(); // a GL job: runs after the queued unmaps
    assert_eq!(
        (s.maps, s.gl_buffers.imports, s.gl_buffers.hits),
        (1000, 1, 999)
    );
    assert_eq!(d.count("cuGraphicsGLRegisterBuffer"), 1);
    assert_eq!(d.count("cuGraphicsMapResources"), 1000);
    assert_eq!(d.count("cuGraphicsUnmapResources"), 1000);
    assert_eq!(d.mapped_resources(), 0);
    drop(t);
    let s = cuda.stats();
    assert_eq!((s.gl_buffers.swept, s.gl_unregistered), (1, 1));
    drop((cuda, gpu));
    assert_clean();
}

#[test]
fn a_convert_output_reaches_cuda_and_a_view_is_an_offset() {
    let _serial = serial();
    let gpu = Gpu::new().unwrap();
    let cuda = cuda_on(&gpu);
    let src = Tensor::<u8>::image(64, 32, PixelFormat::Nv12, Some(TensorMemory::Mem)).unwrap();
    let dst = gpu.pbo_image(32, 16, PixelFormat::Rgb).unwrap();
    double().set_gl_buffer_size(dst.pbo_buffer().unwrap(), 32 * 16 * 3);
    gpu.convert(&src, &dst, &ConvertOptions::default()).unwrap();
    let whole = cuda.map(&dst, Access::Read).unwrap();
    drop(whole);
    let view = dst.view(Region::new(4, 2, 8, 8)).unwrap();
    let part = cuda.map(&view, Access::Read).unwrap();
    let whole_ptr = {
        drop(part);
        cuda.map(&dst, Access::Read).unwrap().device_ptr()
    };
    let part = cuda.map(&view, Access::Read).unwrap();
    assert_eq!(part.device_ptr() - whole_ptr, (2 * 32 * 3 + 4 * 3) as u64);
    assert_eq!(part.pitch(), 32 * 3);
    assert_eq!(
        double().count("cuGraphicsGLRegisterBuffer"),
        1,
        "views share it"
    );
    // GL must not use the PBO while CUDA has it mapped, even for a read map:
    // a CPU map (a GL map) and a conversion into it are refused.
    assert!(matches!(dst.map_read(), Err(Error::MapConflict { .. })));
    assert!(matches!(
        gpu.convert(&src, &dst, &ConvertOptions::default()),
        Err(zerocam_gpu::GpuError::Tensor(Error::MapConflict { .. }))
    ));
    drop((part, view, dst, src, cuda, gpu));
    assert_clean();
}

/// Drops tensor (0), map (1), Cuda (2) and Gpu (3) in `order`.
fn drop_in_order(order: &[usize]) {
    let d = double();
    d.reset();
    let gpu = Gpu::new().unwrap();
    let cuda = cuda_on(&gpu);
    let t = pbo(&gpu, 1 << 16);
    let map = cuda.map(&t, Access::ReadWrite).unwrap();
    let (mut t, mut map, mut cuda, mut gpu) = (Some(t), Some(map), Some(cuda), Some(gpu));
    for &who in order {
        match who {
            0 => drop(t.take()),
            1 => drop(map.take()),
            2 => drop(cuda.take()),
            _ => drop(gpu.take()),
        }
        if let Some(c) = &cuda {
            c.sweep();
        }
    }
    // The GL thread ends with its last handle; wait for it by the counts.
    for _ in 0..200 {
        if d.live_graphics_resources() == 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(
        d.count("cuGraphicsUnregisterResource"),
        1,
        "{order:?}: {:?}",
        d.events()
    );
    assert_eq!(d.violations(), Vec::<String>::new(), "{order:?}");
    assert_clean();
}

#[test]
fn unregister_comes_before_gl_delete_buffers_in_every_drop_order() {
    let _serial = serial();
    let mut orders = Vec::new();
    for a in 0..4 {
        for b in 0..4 {
            for c in 0..4 {
                let rest: Vec<usize> = (0..4).filter(|x| ![a, b, c].contains(x)).collect();
                if a != b && a != c && b != c {
                    orders.push([a, b, c, rest[0]]);
                }
            }
        }
    }
    assert_eq!(orders.len(), 24);
    for order in orders {
        drop_in_order(&order);
    }
}

#[test]
fn eviction_unregisters_and_a_mapped_registration_waits_for_its_map() {
    let _serial = serial();
    let d = double();
    let gpu = Gpu::new().unwrap();
    let cuda = cuda_on(&gpu);
    let tensors: Vec<Tensor<u8>> = (0..33).map(|_| pbo(&gpu, 4096)).collect();
    let held = cuda.map(&tensors[0], Access::Read).unwrap(); // will be the LRU
    for t in &tensors[1..] {
        drop(cuda.map(t, Access::Read).unwrap());
    }
    let s = cuda.stats();
    assert_eq!((s.gl_buffers.imports, s.gl_buffers.evictions), (33, 1));
    assert_eq!(s.gl_unregistered, 0, "the evicted one is still mapped");
    drop(held);
    let s = cuda.stats();
    assert_eq!(s.gl_unregistered, 1, "unregistered once its map dropped");
    assert_eq!(d.live_graphics_resources(), 32);
    drop((tensors, cuda, gpu));
    assert_clean();
}

#[test]
fn gl_errors_are_typed() {
    let _serial = serial();
    let d = double();
    let gpu = Gpu::new().unwrap();
    let t = pbo(&gpu, 4096);
    let unattached = Cuda::with_library(library(), 0).unwrap();
    assert!(matches!(
        unattached.map(&t, Access::Read),
        Err(CudaError::UnsupportedMemory {
            memory: TensorMemory::Pbo,
            ..
        })
    ));
    let other = Gpu::new().unwrap();
    let cuda = cuda_on(&other);
    assert!(matches!(
        cuda.map(&t, Access::Read),
        Err(CudaError::UnsupportedMemory { .. })
    ));
    cuda.attach_gpu(&gpu);
    d.fail_next("cuGraphicsMapResources", 208);
    match cuda.map(&t, Access::Read) {
        Err(CudaError::Driver { call, name, .. }) => {
            assert_eq!(
                (call, name.as_str()),
                ("cuGraphicsMapResources", "CUDA_ERROR_ALREADY_MAPPED")
            );
        }
        other => panic!("{other:?}"),
    }
    d.set_gl_buffer_size(t.pbo_buffer().unwrap(), 100);
    assert!(matches!(
        cuda.map(&t, Access::Read),
        Err(CudaError::Mismatch { .. })
    ));
    assert_eq!(d.mapped_resources(), 0, "a refused map is unmapped");
    d.set_gl_buffer_size(t.pbo_buffer().unwrap(), 4096);
    let m = cuda.map(&t, Access::Read).unwrap();
    assert_eq!(
        d.count("cuGraphicsGLRegisterBuffer"),
        1,
        "the registration survived the errors"
    );
    drop(m);
    assert!(
        t.map_read().is_ok(),
        "CPU maps again once the CUDA map is gone"
    );
    drop((t, cuda, unattached, other, gpu));
    assert_clean();
}

#[test]
fn a_preprocessors_ring_reaches_cuda_and_is_still_reused() {
    // Model inputs into CUDA: each ring destination registers once, and a
    // registration does not count as a holder (the ring keeps reusing).
    use zerocam_preprocess::{Backend, ModelInput, Preprocessor};
    use zerocam_tensor::ColorSpec;
    let _serial = serial();
    let d = double();
    for device in [Backend::Cpu, Backend::Gpu] {
        d.reset();
        let input = ModelInput::new(32, 32).unwrap();
        let mut pre = Preprocessor::new(input, device)
            .unwrap()
            .with_ring_depth(2)
            .unwrap();
        let cuda = Cuda::with_library(library(), 0).unwrap();
        if let Some(gpu) = pre.gpu() {
            cuda.attach_gpu(gpu);
        }
        let src = Tensor::<u8>::image(64, 48, PixelFormat::Nv12, Some(TensorMemory::Mem)).unwrap();
        for _ in 0..20 {
            let out = pre.run(&src, None, ColorSpec::default()).unwrap();
            if pre.gpu().is_some() {
                let t: Tensor<f32> = out.tensor.clone().try_into().unwrap();
                let name = t.pbo_buffer().unwrap();
                d.set_gl_buffer_size(name, 32 * 32 * 3 * 4);
            }
            let map = cuda.map_dyn(&out.tensor, Access::Read).unwrap();
            assert_eq!(map.len(), 32 * 32 * 3 * 4, "{device:?}: f32 NCHW");
        }
        let s = cuda.stats();
        // Each result dropped before the next: the ring reuses its first
        // tensor, though CUDA's registration still holds its memory.
        let allocated = pre.stats().tensors_allocated;
        assert_eq!(allocated, 1, "{device:?}: the ring was reused");
        let registered = s.host.imports + s.gl_buffers.imports;
        assert_eq!(registered, 1, "{device:?}: registered once over 20 frames");
        drop((pre, cuda));
        assert_eq!(d.violations(), Vec::<String>::new());
    }
}

#[test]
fn a_poisoned_gl_thread_unmaps_and_unregisters_a_live_map_once() {
    // A panic on the GL thread frees its state, this handle's registrations
    // first: one still mapped by a live CudaMap is synchronized, unmapped
    // and unregistered while its buffer exists, and the map's own unmap,
    // queued when it drops, leaves the freed handle alone.
    let _serial = serial();
    let d = double();
    let gpu = Gpu::new().unwrap();
    let cuda = cuda_on(&gpu);
    let t = pbo(&gpu, 4096);
    let map = cuda.map(&t, Access::ReadWrite).unwrap();
    assert!(gpu.__inject_panic("test poison").is_err());
    assert_eq!(d.count("cuGraphicsUnregisterResource"), 1);
    assert_eq!(
        d.count("cuGraphicsUnmapResources"),
        1,
        "unmapped before the unregister"
    );
    drop(map);
    let _ = gpu.stats(); // runs after the map's queued job
    assert_eq!(
        d.count("cuGraphicsUnmapResources"),
        1,
        "the map did not unmap the freed handle"
    );
    assert_eq!(cuda.stats().interop_leaked, 0);
    drop((t, cuda, gpu));
    assert_clean();
}

#[test]
fn two_handles_and_a_remap_after_eviction_share_one_host_registration() {
    // CUDA registers a host range once: a second `Cuda` handle, or a map of
    // a buffer evicted from the cache while another map still uses it,
    // reuses the live registration instead of failing with
    // CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED.
    let _serial = serial();
    let d = double();
    let (a, b) = (
        Cuda::with_library(library(), 0).unwrap(),
        Cuda::with_library(library(), 0).unwrap(),
    );
    let t = Tensor::<u8>::new(&[4096], Some(TensorMemory::Shm), None).unwrap();
    let (ma, mb) = (
        a.map(&t, Access::Read).unwrap(),
        b.map(&t, Access::Read).unwrap(),
    );
    assert_eq!(ma.device_ptr(), mb.device_ptr());
    assert_eq!(d.count("cuMemHostRegister_v2"), 1);
    a.clear(); // evicted while `ma` lives
    let again = a.map(&t, Access::Read).unwrap();
    assert_eq!(again.device_ptr(), ma.device_ptr());
    assert_eq!(d.count("cuMemHostRegister_v2"), 1);
    drop((ma, mb, again, t));
    a.sweep();
    b.sweep();
    assert_eq!(d.count("cuMemHostUnregister"), 1);
    drop((a, b));
    assert_clean();
}

/// Where no EGL device is the CUDA device (the host's Mesa lists only its
/// software device, no `EGL_NV_device_cuda`), `interop_gpu` falls back to
/// the default display, says whose EGL it got, and attaches it: its PBOs
/// map by GL buffer interop at once.
#[test]
fn interop_gpu_falls_back_to_the_default_display_where_no_egl_device_is_cuda() {
    let _serial = serial();
    let cuda = Cuda::with_library(library(), 0).unwrap();
    let gpu = cuda.interop_gpu().unwrap();
    let info = gpu.info();
    assert_eq!((info.platform, info.device.clone()), ("surfaceless", None));
    assert!(info.egl_vendor.contains("Mesa"), "{info:?}");
    let t = pbo(&gpu, 4096);
    let map = cuda.map(&t, Access::Read).unwrap();
    assert_eq!(map.path(), CudaPath::GlBuffer);
    drop(map);
    cuda.clear();
    drop(t);
    assert_clean();
}
