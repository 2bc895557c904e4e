//! The GL thread and PBO tensors on the host's Mesa (llvmpipe, surfaceless
//! EGL, GLES 3): these run wherever CI runs. Dma-buf import is proven in the
//! lab (`lab_gpu.rs`): the host's Mesa cannot import.
#![allow(clippy::unwrap_used)]

use zerocam_gpu::{Gpu, GpuError};
use zerocam_tensor::{Error, PixelFormat, Region, TensorMemory};

#[test]
fn the_gl_thread_starts_on_a_surfaceless_gles3_context() {
    let gpu = Gpu::new().unwrap();
    let info = gpu.info();
    assert!(info.version.starts_with("OpenGL ES 3"), "{info:?}");
    assert!(!info.renderer.is_empty());
    assert_eq!(gpu.stats().unwrap().live_pbos, 0);
}

#[test]
fn a_pbo_tensor_is_zeroed_written_and_read_back() {
    let gpu = Gpu::new().unwrap();
    let t = gpu.pbo_tensor::<f32>(&[4, 256]).unwrap();
    assert_eq!(t.memory(), TensorMemory::Pbo);
    assert!(t.map_read().unwrap().iter().all(|&v| v == 0.0));
    {
        let mut m = t.map_write().unwrap();
        for (i, v) in m.iter_mut().enumerate() {
            *v = i as f32 * 0.5;
        }
    }
    let m = t.map_read().unwrap();
    assert_eq!((m[0], m[1023]), (0.0, 511.5));
    drop(m);
    assert_eq!(gpu.stats().unwrap().live_pbos, 1);
}

#[test]
fn a_pbo_view_maps_its_rows_only() {
    let gpu = Gpu::new().unwrap();
    let img = gpu.pbo_image(8, 4, PixelFormat::Rgb).unwrap();
    {
        let crop = img.view(Region::new(4, 2, 4, 2)).unwrap();
        let mut m = crop.map().unwrap();
        m.fill(9);
    }
    let all = img.map_read().unwrap();
    assert_eq!(all[2 * 24 + 4 * 3], 9);
    assert_eq!(all[0], 0);
}

#[test]
fn dropping_the_last_tensor_deletes_its_pbo() {
    let gpu = Gpu::new().unwrap();
    let a = gpu.pbo_tensor::<u8>(&[1024]).unwrap();
    let b = a.view(Region::new(0, 0, 1, 1)).err(); // 1-D: not a 2-D view
    assert!(b.is_some());
    let c = a.clone();
    drop(a);
    assert_eq!(gpu.stats().unwrap().live_pbos, 1, "a clone keeps it");
    drop(c);
    assert_eq!(gpu.stats().unwrap().live_pbos, 0);
}

#[test]
fn a_pbo_outliving_its_gl_thread_reports_disconnected() {
    let gpu = Gpu::new().unwrap();
    let t = gpu.pbo_tensor::<u8>(&[64]).unwrap();
    t.map_write().unwrap().fill(1);
    drop(gpu); // the GL thread ends, its context and PBOs with it
    let e = t.map_read().unwrap_err();
    assert!(matches!(e, Error::PboDisconnected { .. }), "{e}");
    assert!(e.to_string().contains("GL thread has exited"), "{e}");
    drop(t); // deleting an orphan is a no-op, not a crash
}

#[test]
fn pbo_shapes_are_checked() {
    let gpu = Gpu::new().unwrap();
    let e = gpu.pbo_tensor::<u8>(&[0, 4]).unwrap_err();
    assert!(
        matches!(e, GpuError::Tensor(Error::EmptyShape { .. })),
        "{e}"
    );
    let e = gpu.pbo_tensor::<f64>(&[usize::MAX / 4, 4]).unwrap_err();
    assert!(
        matches!(e, GpuError::Tensor(Error::EmptyShape { .. })),
        "{e}"
    );
    let e = gpu.pbo_image(7, 4, PixelFormat::Nv12).unwrap_err();
    assert!(matches!(e, GpuError::Tensor(_)), "{e}");
}

#[test]
fn the_handle_is_shared_across_threads() {
    let gpu = Gpu::new().unwrap();
    let workers: Vec<_> = (0..4)
        .map(|i| {
            let gpu = gpu.clone();
            std::thread::spawn(move || {
                let t = gpu.pbo_tensor::<u8>(&[256]).unwrap();
                t.map_write().unwrap().fill(i);
                t.map_read().unwrap()[255]
            })
        })
        .collect();
    let got: Vec<u8> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    assert_eq!(got, [0, 1, 2, 3]);
    assert_eq!(gpu.stats().unwrap().live_pbos, 0);
}

#[test]
fn a_live_map_keeps_the_gl_thread_until_it_drops() {
    let gpu = Gpu::new().unwrap();
    let t = gpu.pbo_tensor::<u8>(&[1 << 20]).unwrap();
    let mut m = t.map_write().unwrap();
    drop(gpu); // the last handle: the thread must outlive the map
    m.fill(2);
    assert_eq!(m[(1 << 20) - 1], 2);
    drop(m); // unmapped, then the thread ends
    let e = t.map_read().unwrap_err();
    assert!(matches!(e, Error::PboDisconnected { .. }), "{e}");
}

#[test]
fn a_pbo_of_another_gpu_is_refused_by_name() {
    let (a, b) = (Gpu::new().unwrap(), Gpu::new().unwrap());
    let theirs = a.pbo_image(8, 8, PixelFormat::Rgba).unwrap();
    let _ours = b.pbo_image(8, 8, PixelFormat::Rgba).unwrap(); // same GL name in b
    let src = b.pbo_image(8, 8, PixelFormat::Rgb).unwrap();
    let e = b
        .convert(&src, &theirs, &zerocam_gpu::ConvertOptions::default())
        .unwrap_err();
    assert!(
        matches!(
            e,
            GpuError::ForeignPbo {
                role: "destination",
                ..
            }
        ),
        "{e}"
    );
    let e = a
        .convert(&src, &theirs, &zerocam_gpu::ConvertOptions::default())
        .unwrap_err();
    assert!(
        matches!(e, GpuError::ForeignPbo { role: "source", .. }),
        "{e}"
    );
}

#[test]
fn a_mapped_pbo_cannot_be_converted_into() {
    let gpu = Gpu::new().unwrap();
    let src = gpu.pbo_image(8, 8, PixelFormat::Rgb).unwrap();
    let dst = gpu.pbo_image(8, 8, PixelFormat::Rgba).unwrap();
    let held = dst.map_read().unwrap();
    let e = gpu
        .convert(&src, &dst, &zerocam_gpu::ConvertOptions::default())
        .unwrap_err();
    assert!(
        matches!(
            e,
            GpuError::PboMapped {
                role: "destination",
                ..
            }
        ),
        "{e}"
    );
    drop(held);
    gpu.convert(&src, &dst, &zerocam_gpu::ConvertOptions::default())
        .unwrap();
}
