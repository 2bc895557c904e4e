//! The real-GPU check behind `tests/device/cuda.sh`: on a machine with an
//! NVIDIA driver, paths (a) host registration and (c) GL buffer interop move
//! real pixels, each buffer registers once, and the per-frame cost of the
//! cached path is measured against registering every frame and against
//! copying the frame (`cuMemcpyHtoD`) at 720p and 4K.
//!
//! `cargo run --release -p zerocam-cuda --example cuda_check [-- FRAMES]`
//! prints one line per check and one JSON line per measurement; it exits
//! non-zero when a check fails. Without CUDA it says why and exits 2.

use std::ffi::c_void;
use std::time::Instant;

use zerocam_cuda::{Cuda, CudaError};
use zerocam_gpu::{ConvertOptions, Gpu};
use zerocam_tensor::{Access, PixelFormat, Tensor, TensorMemory};

type Check = Result<(), String>;

fn fail(what: &str, e: impl std::fmt::Display) -> String {
    format!("{what}: {e}")
}

/// A `w`x`h` RGB image in shared memory with a known pattern.
fn pattern(w: usize, h: usize) -> Result<Tensor<u8>, zerocam_tensor::Error> {
    let t = Tensor::<u8>::image(w, h, PixelFormat::Rgb, Some(TensorMemory::Shm))?;
    for (i, b) in t.map()?.iter_mut().enumerate() {
        *b = (i % 251) as u8;
    }
    Ok(t)
}

fn host_path(cuda: &Cuda, frames: usize) -> Check {
    let t = pattern(1280, 720).map_err(|e| fail("tensor", e))?;
    let before = cuda.stats();
    for _ in 0..frames {
        drop(cuda.map(&t, Access::Read).map_err(|e| fail("map", e))?);
    }
    let map = cuda.map(&t, Access::Read).map_err(|e| fail("map", e))?;
    let mut back = vec![0u8; map.len()];
    map.copy_to_host(0, &mut back)
        .map_err(|e| fail("copy_to_host", e))?;
    drop(map);
    let cpu = t.map_read().map_err(|e| fail("CPU map", e))?;
    if back[..] != cpu[..] {
        return Err("(a) the bytes read back differ from the CPU's".into());
    }
    let s = cuda.stats();
    let registered = s.host.imports - before.host.imports;
    if registered != 1 {
        return Err(format!(
            "(a) {registered} registrations over {frames} maps, not 1"
        ));
    }
    println!(
        "ok (a) host registration: {frames}+1 maps, 1 registration, {} bytes read back equal",
        back.len()
    );
    Ok(())
}

fn gl_path(cuda: &Cuda, frames: usize) -> Check {
    let gpu = Gpu::new().map_err(|e| fail("(c) GL thread", e))?;
    println!("GL: {} ({})", gpu.info().renderer, gpu.info().version);
    cuda.attach_gpu(&gpu);
    let src = pattern(640, 480).map_err(|e| fail("tensor", e))?;
    let dst = gpu
        .pbo_image(320, 240, PixelFormat::Rgb)
        .map_err(|e| fail("PBO", e))?;
    gpu.convert(&src, &dst, &ConvertOptions::default())
        .map_err(|e| fail("convert", e))?;
    let before = cuda.stats();
    for _ in 0..frames {
        drop(
            cuda.map(&dst, Access::Read)
                .map_err(|e| fail("(c) map", e))?,
        );
    }
    let map = cuda
        .map(&dst, Access::Read)
        .map_err(|e| fail("(c) map", e))?;
    let mut back = vec![0u8; map.len()];
    map.copy_to_host(0, &mut back)
        .map_err(|e| fail("copy_to_host", e))?;
    drop(map);
    let cpu = dst.map_read().map_err(|e| fail("PBO map", e))?;
    if back[..] != cpu[..] {
        return Err("(c) the bytes CUDA read from the PBO differ from GL's".into());
    }
    let s = cuda.stats();
    let registered = s.gl_buffers.imports - before.gl_buffers.imports;
    if registered != 1 {
        return Err(format!(
            "(c) {registered} registrations over {frames} maps, not 1"
        ));
    }
    println!(
        "ok (c) GL buffer interop: {frames}+1 maps, 1 registration, {} bytes equal GL's",
        back.len()
    );
    Ok(())
}

/// `cuMemAlloc` + `cuMemcpyHtoD` from the driver itself: the copy baseline.
struct Copier {
    _lib: libloading::Library,
    alloc: unsafe extern "C" fn(*mut u64, usize) -> i32,
    free: unsafe extern "C" fn(u64) -> i32,
    htod: unsafe extern "C" fn(u64, *const c_void, usize) -> i32,
}

impl Copier {
    fn load(cuda: &Cuda) -> Result<Copier, String> {
        // SAFETY: the same driver library `cuda` loaded; the symbols are
        // declared with their cuda.h signatures.
        unsafe {
            let lib =
                libloading::Library::new(cuda.driver().library()).map_err(|e| e.to_string())?;
            let alloc = *lib.get(b"cuMemAlloc_v2\0").map_err(|e| e.to_string())?;
            let free = *lib.get(b"cuMemFree_v2\0").map_err(|e| e.to_string())?;
            let htod = *lib.get(b"cuMemcpyHtoD_v2\0").map_err(|e| e.to_string())?;
            Ok(Copier {
                _lib: lib,
                alloc,
                free,
                htod,
            })
        }
    }
}

fn per_frame_us(frames: usize, mut f: impl FnMut() -> Check) -> Result<f64, String> {
    f()?; // warm
    let start = Instant::now();
    for _ in 0..frames {
        f()?;
    }
    Ok(start.elapsed().as_secs_f64() * 1e6 / frames as f64)
}

fn bench(cuda: &Cuda, frames: usize) -> Check {
    let copier = Copier::load(cuda)?;
    for (label, w, h) in [("720p", 1280, 720), ("4K", 3840, 2160)] {
        let t = pattern(w, h).map_err(|e| fail("tensor", e))?;
        let cached = per_frame_us(frames, || {
            cuda.map(&t, Access::Read)
                .map(drop)
                .map_err(|e| e.to_string())
        })?;
        let uncached = per_frame_us(frames, || {
            cuda.clear();
            cuda.map(&t, Access::Read)
                .map(drop)
                .map_err(|e| e.to_string())
        })?;
        // The copy a pipeline without zero copy makes every frame.
        let map = t.map_read().map_err(|e| fail("CPU map", e))?;
        let copy = cuda
            .with_current(|| {
                let mut dev = 0u64;
                // SAFETY: a valid out-pointer, the context current; freed below.
                let code = unsafe { (copier.alloc)(&mut dev, map.len()) };
                if code != 0 {
                    return Err(format!("cuMemAlloc_v2: {}", cuda.driver().error_name(code)));
                }
                let r = per_frame_us(frames, || {
                    // SAFETY: `dev` holds map.len() bytes; `map` is readable for as many.
                    let code = unsafe { (copier.htod)(dev, map.as_ptr().cast(), map.len()) };
                    if code == 0 {
                        Ok(())
                    } else {
                        Err(cuda.driver().error_name(code))
                    }
                });
                // SAFETY: allocated above.
                unsafe { (copier.free)(dev) };
                r
            })
            .map_err(|e| e.to_string())??;
        println!(
            "{{\"size\":\"{label}\",\"bytes\":{},\"cached_map_us\":{cached:.2},\"register_every_frame_us\":{uncached:.2},\"memcpy_htod_us\":{copy:.2}}}",
            map.len()
        );
    }
    Ok(())
}

fn main() {
    let frames = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000);
    let cuda = match Cuda::new() {
        Ok(c) => c,
        Err(CudaError::Unavailable(u)) => {
            eprintln!("no CUDA here: {u}");
            std::process::exit(2);
        }
        Err(e) => {
            eprintln!("CUDA failed: {e}");
            std::process::exit(1);
        }
    };
    println!("CUDA: {:?}", cuda.info());
    let mut failed = false;
    for (name, r) in [
        ("host", host_path(&cuda, frames)),
        ("gl", gl_path(&cuda, frames)),
        ("bench", bench(&cuda, frames.min(200))),
    ] {
        if let Err(e) = r {
            println!("FAILED {name}: {e}");
            failed = true;
        }
    }
    std::process::exit(i32::from(failed));
}
