//! Criterion benchmarks of zerocam-tensor's allocation, map, view and fd import
//! for heap (`Mem`) and shared (`Shm`) memory, at 1280x720, 1920x1080 and
//! 3840x2160 RGB (`u8`, shape `[H, W, 3]`).
//!
//! With the feature `compare-edgefirst` every benchmark also runs the same
//! operation on the published `edgefirst-tensor` 0.38 crate, side by side:
//!
//! ```sh
//! cargo bench -p zerocam-tensor --features compare-edgefirst
//! ```
//!
//! Benchmark ids are `<operation>/<crate>/<memory>/<size>`, e.g.
//! `map_touch/edgefirst/shm/2160p`. Groups:
//! - `alloc`: allocate and drop (pages untouched).
//! - `alloc_touch`: allocate, map, write one byte per 4 KiB page, unmap, drop:
//!   first use, where lazily zeroed pages are faulted in.
//! - `map`: map and unmap (drop the map), memory untouched.
//! - `map_touch`: map, read one byte per 4 KiB page, unmap. A crate that
//!   re-mmaps on every map pays the page faults again here.
//! - `view`: make and drop an owned view of the centre quarter of an image.
//! - `from_fd`: import a shared-memory fd (a `dup` made outside the timing) as a
//!   tensor and drop it. `Mem` has no fd, so `Shm` only.
//! - `from_fd_map`: the same import, then one map and unmap before the drop
//!   (what a consumer of a received buffer does at least once).
//!
//! The DMA backend is not benchmarked: this machine has no DMA heap.

use std::hint::black_box;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{BatchSize, BenchmarkGroup, BenchmarkId, Criterion, SamplingMode};
use zerocam_tensor as zc;

/// `(width, height, label)` of the benchmarked RGB images.
const SIZES: [(usize, usize, &str); 3] = [
    (1280, 720, "720p"),
    (1920, 1080, "1080p"),
    (3840, 2160, "2160p"),
];

/// Stride of the page touches: one byte per 4 KiB page.
const PAGE: usize = 4096;

/// The two backends benchmarked, with their names in benchmark ids.
const BACKENDS: [(Backend, &str); 2] = [(Backend::Mem, "mem"), (Backend::Shm, "shm")];

#[derive(Clone, Copy)]
enum Backend {
    Mem,
    Shm,
}

impl Backend {
    fn zerocam(self) -> zc::TensorMemory {
        match self {
            Backend::Mem => zc::TensorMemory::Mem,
            Backend::Shm => zc::TensorMemory::Shm,
        }
    }

    #[cfg(feature = "compare-edgefirst")]
    fn edgefirst(self) -> edgefirst_tensor::TensorMemory {
        match self {
            Backend::Mem => edgefirst_tensor::TensorMemory::Mem,
            Backend::Shm => edgefirst_tensor::TensorMemory::Shm,
        }
    }
}

/// Reads one byte of every page of `bytes` (the same loop for both crates).
fn read_pages(bytes: &[u8]) -> u8 {
    bytes
        .iter()
        .step_by(PAGE)
        .fold(0u8, |acc, &b| acc.wrapping_add(b))
}

/// Writes one byte of every page of `bytes`.
fn write_pages(bytes: &mut [u8]) {
    for b in bytes.iter_mut().step_by(PAGE) {
        *b = 1;
    }
}

fn shape(w: usize, h: usize) -> [usize; 3] {
    [h, w, 3]
}

/// The centre quarter of a `w`x`h` image.
fn centre(w: usize, h: usize) -> (usize, usize, usize, usize) {
    (w / 4, h / 4, w / 2, h / 2)
}

fn group<'a>(c: &'a mut Criterion, name: &str, slow: bool) -> BenchmarkGroup<'a, WallTime> {
    let mut g = c.benchmark_group(name);
    if slow {
        // Milliseconds per iteration at 4K: same iterations in every sample.
        g.sampling_mode(SamplingMode::Flat)
            .sample_size(10)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(2));
    } else {
        g.sample_size(30)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(1));
    }
    g
}

fn alloc(c: &mut Criterion) {
    let mut g = group(c, "alloc", true);
    for (backend, mem) in BACKENDS {
        for (w, h, size) in SIZES {
            g.bench_function(BenchmarkId::new(format!("zerocam/{mem}"), size), |b| {
                b.iter(|| {
                    let t = zc::Tensor::<u8>::new(&shape(w, h), Some(backend.zerocam()), None)
                        .expect("zerocam alloc");
                    black_box(&t);
                })
            });
            #[cfg(feature = "compare-edgefirst")]
            g.bench_function(BenchmarkId::new(format!("edgefirst/{mem}"), size), |b| {
                b.iter(|| {
                    let t = edgefirst_tensor::Tensor::<u8>::new(
                        &shape(w, h),
                        Some(backend.edgefirst()),
                        None,
                    )
                    .expect("edgefirst alloc");
                    black_box(&t);
                })
            });
        }
    }
    g.finish();
}

fn alloc_touch(c: &mut Criterion) {
    let mut g = group(c, "alloc_touch", true);
    for (backend, mem) in BACKENDS {
        for (w, h, size) in SIZES {
            g.bench_function(BenchmarkId::new(format!("zerocam/{mem}"), size), |b| {
                b.iter(|| {
                    let t = zc::Tensor::<u8>::new(&shape(w, h), Some(backend.zerocam()), None)
                        .expect("zerocam alloc");
                    let mut m = t.map().expect("zerocam map");
                    write_pages(black_box(&mut m));
                })
            });
            #[cfg(feature = "compare-edgefirst")]
            g.bench_function(BenchmarkId::new(format!("edgefirst/{mem}"), size), |b| {
                use edgefirst_tensor::TensorTrait as _;
                b.iter(|| {
                    let t = edgefirst_tensor::Tensor::<u8>::new(
                        &shape(w, h),
                        Some(backend.edgefirst()),
                        None,
                    )
                    .expect("edgefirst alloc");
                    let mut m = t.map().expect("edgefirst map");
                    write_pages(black_box(&mut m));
                })
            });
        }
    }
    g.finish();
}

fn map(c: &mut Criterion) {
    let mut g = group(c, "map", false);
    for (backend, mem) in BACKENDS {
        for (w, h, size) in SIZES {
            let t = zc::Tensor::<u8>::new(&shape(w, h), Some(backend.zerocam()), None)
                .expect("zerocam alloc");
            g.bench_function(BenchmarkId::new(format!("zerocam/{mem}"), size), |b| {
                b.iter(|| {
                    let m = t.map().expect("zerocam map");
                    black_box(&*m);
                })
            });
            #[cfg(feature = "compare-edgefirst")]
            {
                use edgefirst_tensor::TensorTrait as _;
                let t = edgefirst_tensor::Tensor::<u8>::new(
                    &shape(w, h),
                    Some(backend.edgefirst()),
                    None,
                )
                .expect("edgefirst alloc");
                g.bench_function(BenchmarkId::new(format!("edgefirst/{mem}"), size), |b| {
                    b.iter(|| {
                        let m = t.map().expect("edgefirst map");
                        black_box(&*m);
                    })
                });
            }
        }
    }
    g.finish();
}

fn map_touch(c: &mut Criterion) {
    let mut g = group(c, "map_touch", false);
    for (backend, mem) in BACKENDS {
        for (w, h, size) in SIZES {
            // Both tensors are written once before timing, so their pages exist
            // (for shm: in the memfd / shm segment) and every touch reads them.
            let t = zc::Tensor::<u8>::new(&shape(w, h), Some(backend.zerocam()), None)
                .expect("zerocam alloc");
            write_pages(&mut t.map().expect("zerocam map"));
            g.bench_function(BenchmarkId::new(format!("zerocam/{mem}"), size), |b| {
                b.iter(|| {
                    let m = t.map().expect("zerocam map");
                    black_box(read_pages(black_box(&m)));
                })
            });
            #[cfg(feature = "compare-edgefirst")]
            {
                use edgefirst_tensor::TensorTrait as _;
                let t = edgefirst_tensor::Tensor::<u8>::new(
                    &shape(w, h),
                    Some(backend.edgefirst()),
                    None,
                )
                .expect("edgefirst alloc");
                write_pages(&mut t.map().expect("edgefirst map"));
                g.bench_function(BenchmarkId::new(format!("edgefirst/{mem}"), size), |b| {
                    b.iter(|| {
                        let m = t.map().expect("edgefirst map");
                        black_box(read_pages(black_box(&m)));
                    })
                });
            }
        }
    }
    g.finish();
}

fn view(c: &mut Criterion) {
    let mut g = group(c, "view", false);
    for (backend, mem) in BACKENDS {
        for (w, h, size) in SIZES {
            let (x, y, vw, vh) = centre(w, h);
            let img = zc::Tensor::<u8>::image(w, h, zc::PixelFormat::Rgb, Some(backend.zerocam()))
                .expect("zerocam image");
            g.bench_function(BenchmarkId::new(format!("zerocam/{mem}"), size), |b| {
                b.iter(|| {
                    let v = img
                        .view(zc::Region::new(x, y, vw, vh))
                        .expect("zerocam view");
                    black_box(&v);
                })
            });
            #[cfg(feature = "compare-edgefirst")]
            {
                let img = edgefirst_tensor::Tensor::<u8>::image(
                    w,
                    h,
                    edgefirst_tensor::PixelFormat::Rgb,
                    Some(backend.edgefirst()),
                    edgefirst_tensor::CpuAccess::ReadWrite,
                )
                .expect("edgefirst image");
                g.bench_function(BenchmarkId::new(format!("edgefirst/{mem}"), size), |b| {
                    b.iter(|| {
                        let v = img
                            .view(edgefirst_tensor::Region::new(x, y, vw, vh))
                            .expect("edgefirst view");
                        black_box(&v);
                    })
                });
            }
        }
    }
    g.finish();
}

fn from_fd(c: &mut Criterion) {
    import(c, "from_fd", false);
}

fn from_fd_map(c: &mut Criterion) {
    import(c, "from_fd_map", true);
}

/// `from_fd` of a `dup` of a shared-memory tensor's fd, then drop; with `map`,
/// one map + unmap of the import before the drop (no touch).
fn import(c: &mut Criterion, name: &str, map: bool) {
    let mut g = group(c, name, false);
    // A batch of dup'd fds is made before each timed batch; 64 keeps few open.
    let batch = BatchSize::NumIterations(64);
    for (w, h, size) in SIZES {
        let s = shape(w, h);
        let src =
            zc::Tensor::<u8>::new(&s, Some(zc::TensorMemory::Shm), None).expect("zerocam alloc");
        g.bench_function(BenchmarkId::new("zerocam/shm", size), |b| {
            b.iter_batched(
                || src.clone_fd().expect("zerocam clone_fd"),
                |fd| {
                    let t = zc::Tensor::<u8>::from_fd(fd, &s, None).expect("zerocam from_fd");
                    if map {
                        black_box(&*t.map().expect("zerocam map"));
                    }
                    black_box(&t);
                },
                batch,
            )
        });
        #[cfg(feature = "compare-edgefirst")]
        {
            use edgefirst_tensor::TensorTrait as _;
            let src = edgefirst_tensor::Tensor::<u8>::new(
                &s,
                Some(edgefirst_tensor::TensorMemory::Shm),
                None,
            )
            .expect("edgefirst alloc");
            g.bench_function(BenchmarkId::new("edgefirst/shm", size), |b| {
                b.iter_batched(
                    || src.clone_fd().expect("edgefirst clone_fd"),
                    |fd| {
                        let t = edgefirst_tensor::Tensor::<u8>::from_fd(fd, &s, None)
                            .expect("edgefirst from_fd");
                        if map {
                            black_box(&*t.map().expect("edgefirst map"));
                        }
                        black_box(&t);
                    },
                    batch,
                )
            });
        }
    }
    g.finish();
}

fn config() -> Criterion {
    // Fewer bootstrap resamples than the default 100 000: the analysis of 72
    // benchmarks otherwise takes longer than measuring them on a small machine.
    Criterion::default().nresamples(20_000)
}

fn main() {
    // What `criterion_group!` + `criterion_main!` expand to, written out so the
    // group function does not need a doc comment.
    let mut c = config().configure_from_args();
    alloc(&mut c);
    alloc_touch(&mut c);
    map(&mut c);
    map_touch(&mut c);
    view(&mut c);
    from_fd(&mut c);
    from_fd_map(&mut c);
    c.final_summary();
}
