//! CUDA on real dma-bufs in the kernel lab (`cargo lab-test`), against the
//! CUDA driver test double (no GPU in the lab either): vivid's frames reach
//! CUDA by host registration of their mapping (path a) and by EGLImage
//! interop on the EGLImages zerocam-gpu caches (path b, Mesa's zink on
//! lavapipe importing the dma-bufs). Each buffer registers once; an
//! EGLImage is destroyed only after CUDA unregistered it.
#![cfg(feature = "lab")]
#![allow(missing_docs, clippy::unwrap_used)] // tests may panic

use std::time::Duration;

use zerocam_capture::{BufferMode, FrameSource};
use zerocam_cuda::{Cuda, CudaError, CudaFrameExt, CudaPath};
use zerocam_tensor::{Access, PixelFormat, Tensor, TensorMemory};

mod common;

use common::double::{double, library, serial};
use zerocam_test_support::gl::{gpu, REQUIRE};
use zerocam_test_support::lab::lock;
use zerocam_test_support::vivid::red_stream;

const SINGLE: &str = "/dev/video0";
const MULTI: &str = "/dev/video1";
const WAIT: Duration = Duration::from_secs(10);
const FRAMES: usize = 24;

fn cuda() -> Cuda {
    Cuda::with_library(library(), 0).unwrap()
}

#[test]
fn dma_buf_frames_register_once_per_buffer_and_read_back_the_cpus_bytes() {
    let _g = lock();
    let _serial = serial();
    let d = double();
    for (path, name, mode, per_buffer) in [
        (SINGLE, "NV12", BufferMode::Mmap, 1),
        (SINGLE, "NV12", BufferMode::DmaBuf, 1),
        (MULTI, "NV12M", BufferMode::Mmap, 2),
    ] {
        d.reset();
        let what = format!("{name} {mode:?}");
        let cuda = cuda();
        let mut s = red_stream(path, name, mode);
        for _ in 0..FRAMES {
            let f = s.next_frame(WAIT).unwrap();
            assert_eq!(f.tensor().memory(), TensorMemory::Dma);
            let c = cuda.map(f.tensor(), Access::Read).unwrap();
            assert_eq!(c.path(), CudaPath::HostRegistered, "{what}");
            assert_eq!(c.planes().len(), 2, "{what}");
            let y = f.tensor().plane(0).unwrap();
            let mut back = vec![0u8; 320];
            c.copy_to_host(0, &mut back).unwrap();
            assert_eq!(back, y.map_read().unwrap()[..320], "{what}: the first row");
        }
        let buffers = s.stats().buffers as u64;
        assert_eq!(
            d.count("cuMemHostRegister_v2"),
            per_buffer * buffers,
            "{what}"
        );
        drop(s);
        let st = cuda.stats();
        assert_eq!(st.host_unregistered, per_buffer * buffers, "{what}");
        assert_eq!(d.violations(), Vec::<String>::new(), "{what}");
        assert_eq!(d.live_host_registrations(), 0, "{what}");
    }
}

/// The double reporting vivid's 320x180 NV12 as two pitch-linear planes,
/// zink's GL thread, and a `Cuda` handle attached to it.
fn egl_setup() -> (&'static common::double::Double, zerocam_gpu::Gpu, Cuda) {
    let d = double();
    d.set_egl_frame(0, 320, 180, 320, 2);
    let (gpu, cuda) = (gpu(), cuda());
    cuda.attach_gpu(&gpu);
    (d, gpu, cuda)
}

#[test]
fn the_gpus_egl_images_are_registered_once_and_outlive_their_registration() {
    let _g = lock();
    let _serial = serial();
    let (d, gpu, cuda) = egl_setup();
    let dst = Tensor::<u8>::image(64, 64, PixelFormat::Rgb, Some(TensorMemory::Mem)).unwrap();
    let mut s = red_stream(SINGLE, "NV12", BufferMode::Mmap);
    for _ in 0..FRAMES {
        let f = s.next_frame(WAIT).unwrap();
        gpu.convert(f.tensor(), &dst, &REQUIRE).unwrap();
        // The double is an integrated device and a GPU is attached: a dma-buf
        // frame takes the EGLImage path, on the image `convert` imported.
        let c = f.cuda(&cuda).unwrap();
        assert_eq!(c.path(), CudaPath::EglImage);
        let planes = c.planes();
        assert_eq!(planes.len(), 2);
        assert_eq!((planes[0].pitch, planes[1].pitch), (320, 320));
        assert_eq!(planes[0].shape[0], 180);
    }
    let buffers = s.stats().buffers as u64;
    let g = gpu.stats().unwrap();
    assert_eq!(
        g.images.imports, buffers,
        "CUDA used the GPU's images, made none"
    );
    assert_eq!(d.count("cuGraphicsEGLRegisterImage"), buffers);
    assert_eq!(
        d.count("cuGraphicsResourceGetMappedEglFrame"),
        FRAMES as u64,
        "the frame is read on every map, not once a registration"
    );
    let c = cuda.stats();
    assert_eq!(
        (c.egl_images.imports, c.egl_images.hits),
        (buffers, FRAMES as u64 - buffers)
    );
    drop(s); // the frames' identities die
    let g = gpu.stats().unwrap(); // the GPU's cache lets go of its images...
    assert_eq!(g.images.live, 0);
    assert_eq!(
        g.live_images, buffers,
        "...which CUDA's registrations still hold"
    );
    let c = cuda.stats(); // CUDA unregisters, then the images are destroyed
    assert_eq!(c.egl_unregistered, buffers);
    let g = gpu.stats().unwrap();
    assert_eq!((g.live_images, g.images_destroyed), (0, buffers));
    assert_eq!(d.violations(), Vec::<String>::new());
    assert_eq!(d.live_graphics_resources(), 0);
}

#[test]
fn an_egl_image_outlives_a_cuda_map_of_it_whatever_drops_first() {
    let _g = lock();
    let _serial = serial();
    let (d, gpu, cuda) = egl_setup();
    let mut s = red_stream(SINGLE, "NV12", BufferMode::Mmap);
    let f = s.next_frame(WAIT).unwrap();
    let t = f.tensor().clone();
    let map = cuda.map_egl(&t, Access::Read).unwrap();
    drop(f);
    drop(s);
    drop(t); // every tensor of the buffer gone, the map still alive
    gpu.clear_caches().unwrap();
    let c = cuda.stats();
    assert_eq!(c.egl_unregistered, 0, "a live map keeps its registration");
    assert_eq!(gpu.stats().unwrap().live_images, 1);
    drop(map);
    let c = cuda.stats();
    assert_eq!(c.egl_unregistered, 1);
    assert_eq!(gpu.stats().unwrap().live_images, 0);
    assert_eq!(d.violations(), Vec::<String>::new());
}

/// What the driver reports for an EGLImage is checked against the frame on
/// every map: a block-linear frame (Argus' and NvBufSurface's default on
/// Jetson) is refused saying how to get a pitch-linear one, and a frame of
/// another colour format or size (an EGLImage of something else) is refused
/// naming both. Nothing leaks, and the next map of a good frame works.
#[test]
fn an_egl_frame_that_is_not_the_tensors_is_a_typed_error() {
    let _g = lock();
    let _serial = serial();
    let (d, gpu, cuda) = egl_setup();
    let dst = Tensor::<u8>::image(64, 64, PixelFormat::Rgb, Some(TensorMemory::Mem)).unwrap();
    let mut s = red_stream(SINGLE, "NV12", BufferMode::Mmap);
    let f = s.next_frame(WAIT).unwrap();
    gpu.convert(f.tensor(), &dst, &REQUIRE).unwrap();
    let refused = |wants: &str| match cuda.map_egl(f.tensor(), Access::Read) {
        Err(CudaError::Mismatch { call, what }) => {
            assert_eq!(call, "cuGraphicsResourceGetMappedEglFrame");
            assert!(what.contains(wants), "{what}");
        }
        other => panic!("{wants}: {:?}", other.map(|m| m.path())),
    };
    d.set_egl_frame_kind(0, 0, -1); // CU_EGL_FRAME_TYPE_ARRAY
    refused("NVBUF_LAYOUT_PITCH");
    d.set_egl_frame_kind(0, 1, 0x03); // YUV422_SEMIPLANAR: NV16
    refused("colour format YUV422_SEMIPLANAR (0x3) for a NV12 image");
    d.set_egl_frame_kind(0, 1, -1);
    d.set_egl_frame(0, 640, 480, 640, 2);
    refused("a 640x480 frame for a 320x180 NV12 image");
    d.set_egl_frame(0, 320, 180, 320, 2);
    let map = cuda.map_egl(f.tensor(), Access::Read).unwrap();
    assert_eq!(map.planes().len(), 2);
    drop(map);
    drop(f);
    drop(s);
    gpu.clear_caches().unwrap();
    assert_eq!(
        d.count("cuGraphicsEGLRegisterImage"),
        1,
        "registered once, kept"
    );
    assert_eq!(d.violations(), Vec::<String>::new());
}

/// A driver that refuses what it cannot pin, as NVIDIA's does on a discrete
/// GPU since 550: vivid's MMAP buffers (vb2-vmalloc, ordinary pages) still
/// register, while DMABUF-mode buffers from the DMA heap (mapped with
/// `remap_pfn_range`: `VM_PFNMAP`, which the double reads from
/// `/proc/self/smaps`) are refused once per buffer and reach the device by
/// the staged copy: the first row read back is the CPU's, one device buffer
/// per capture buffer, one copy a frame, all freed with the stream.
#[test]
fn heap_dma_bufs_the_driver_cannot_pin_are_staged() {
    let _g = lock();
    let _serial = serial();
    let d = double();
    for (mode, path) in [
        (BufferMode::Mmap, CudaPath::HostRegistered),
        (BufferMode::DmaBuf, CudaPath::Staged),
    ] {
        d.reset();
        d.refuse_pfnmap(true);
        let what = format!("NV12 {mode:?}");
        let cuda = cuda();
        let mut s = red_stream(SINGLE, "NV12", mode);
        for _ in 0..FRAMES {
            let f = s.next_frame(WAIT).unwrap();
            let c = f.cuda(&cuda).unwrap();
            assert_eq!(c.path(), path, "{what}");
            let y = f.tensor().plane(0).unwrap();
            let mut back = vec![0u8; 320];
            c.copy_to_host(0, &mut back).unwrap();
            assert_eq!(back, y.map_read().unwrap()[..320], "{what}: the first row");
        }
        let buffers = s.stats().buffers as u64;
        let st = cuda.stats();
        assert_eq!(
            d.count("cuMemHostRegister_v2"),
            buffers,
            "{what}: asked once a buffer"
        );
        if path == CudaPath::Staged {
            assert_eq!(st.staged.imports, buffers, "{what}");
            assert_eq!(st.staged_copies, FRAMES as u64, "{what}");
            assert_eq!(d.live_device_allocations(), buffers, "{what}");
        } else {
            assert_eq!(st.staged_copies, 0, "{what}");
        }
        drop(s);
        cuda.sweep();
        assert_eq!(d.live_device_allocations(), 0, "{what}");
        assert_eq!(d.live_host_registrations(), 0, "{what}");
        assert_eq!(d.violations(), Vec::<String>::new(), "{what}");
    }
}

/// `zerocam probe`'s check of the memory camera frames are in: a DMA-heap
/// buffer mapped as `Cuda::map` does by default, host-registered where the
/// driver pins it, staged where it refuses (as a discrete GPU's does).
#[test]
fn probe_says_which_path_a_heap_buffer_takes() {
    let _g = lock();
    let _serial = serial();
    // The process's driver (`Driver::shared`, which `probe` opens) is the
    // double: no other test of this binary uses the shared driver.
    std::env::set_var(zerocam_cuda::LIBRARY_ENV, library());
    // Not reset between the two: the shared driver's `cuInit` is the first's.
    let path = |refuse: bool| {
        double().refuse_pfnmap(refuse);
        let found = zerocam_cuda::probe(true).found.unwrap();
        found.dma_buf.unwrap()
    };
    assert_eq!(path(false), CudaPath::HostRegistered);
    assert_eq!(path(true), CudaPath::Staged);
    assert_eq!(double().violations(), Vec::<String>::new());
}
