//! [`probe`]: is CUDA here, which device, and which zero-copy paths work on
//! it — what `zerocam probe` and `zerocam list` print.

use std::fmt;

use zerocam_tensor::{Access, Tensor, TensorMemory};

use crate::{default_library, Cuda, CudaInfo};

/// Whether one import path worked on a small tensor: `Err` says why not.
pub type PathCheck = Result<(), String>;

/// What [`probe`] found.
#[derive(Debug, Clone)]
pub struct CudaProbe {
    /// The driver library tried.
    pub library: String,
    /// The device and its paths, or why CUDA is unavailable.
    pub found: Result<CudaFound, String>,
}

/// Device 0 and the paths tried on it.
#[derive(Debug, Clone)]
pub struct CudaFound {
    /// The device.
    pub info: CudaInfo,
    /// (a) host registration of a shared-memory tensor, read back with
    /// [`CudaMap::copy_to_host`](crate::CudaMap::copy_to_host) on the map's stream.
    pub host: PathCheck,
    /// (c) GL buffer interop of a PBO tensor (needs zerocam's GL thread).
    pub gl_buffer: PathCheck,
    /// (b) EGLImage interop of a dma-buf image (needs a DMA heap and EGL dma-buf import).
    pub egl_image: PathCheck,
    /// A buffer of the DMA heap (a camera frame's memory) mapped for reading
    /// as [`Cuda::map`] does by default and read back: the path it took
    /// (host-registered, or staged where the driver refuses to register
    /// it), or why not (no heap here, an error).
    pub dma_buf: Result<crate::CudaPath, String>,
}

/// Opens device 0 of the process's driver and, with `check_paths`, tries
/// each path once on a small tensor (without: each says "not checked").
pub fn probe(check_paths: bool) -> CudaProbe {
    let library = default_library().display().to_string();
    let check = |cuda: &Cuda, f: fn(&Cuda) -> PathCheck| {
        if check_paths {
            f(cuda)
        } else {
            Err("not checked".to_owned())
        }
    };
    let found = Cuda::new()
        .map_err(|e| match e {
            crate::CudaError::Unavailable(u) => u.reason,
            other => other.to_string(),
        })
        .map(|cuda| CudaFound {
            info: cuda.info().clone(),
            host: check(&cuda, check_host),
            gl_buffer: check(&cuda, check_gl_buffer),
            egl_image: check(&cuda, check_egl_image),
            dma_buf: if check_paths {
                check_dma_buf(&cuda)
            } else {
                Err("not checked".to_owned())
            },
        });
    CudaProbe { library, found }
}

fn check_host(cuda: &Cuda) -> PathCheck {
    let t =
        Tensor::<u8>::new(&[1 << 16], Some(TensorMemory::Shm), None).map_err(|e| e.to_string())?;
    for (i, b) in t.map().map_err(|e| e.to_string())?.iter_mut().enumerate() {
        *b = i as u8;
    }
    let map = cuda.map(&t, Access::Read).map_err(|e| e.to_string())?;
    let mut back = vec![0u8; 1 << 16];
    map.copy_to_host(0, &mut back).map_err(|e| e.to_string())?;
    if back.iter().enumerate().any(|(i, &b)| b != i as u8) {
        return Err("the bytes read back differ from the CPU's".into());
    }
    Ok(())
}

/// A DMA-heap buffer mapped by [`Cuda::map`] (Auto) and read back.
fn check_dma_buf(cuda: &Cuda) -> Result<crate::CudaPath, String> {
    let t = Tensor::<u8>::new(&[1 << 16], Some(TensorMemory::Dma), None)
        .map_err(|e| format!("no DMA heap buffer here: {e}"))?;
    for (i, b) in t.map().map_err(|e| e.to_string())?.iter_mut().enumerate() {
        *b = (i * 7) as u8;
    }
    let map = cuda.map(&t, Access::Read).map_err(|e| e.to_string())?;
    let mut back = vec![0u8; 1 << 16];
    map.copy_to_host(0, &mut back).map_err(|e| e.to_string())?;
    if back.iter().enumerate().any(|(i, &b)| b != (i * 7) as u8) {
        return Err("the bytes read back differ from the CPU's".into());
    }
    let path = map.path();
    drop(map);
    cuda.clear();
    Ok(path)
}

#[cfg(feature = "gl")]
fn check_gl_buffer(cuda: &Cuda) -> PathCheck {
    let gpu = zerocam_gpu::Gpu::new().map_err(|e| format!("no GL thread: {e}"))?;
    let t = gpu.pbo_tensor::<u8>(&[4096]).map_err(|e| e.to_string())?;
    let probe = cuda.clone();
    probe.attach_gpu(&gpu);
    let mapped = probe
        .map(&t, Access::Read)
        .map(drop)
        .map_err(|e| e.to_string());
    cuda.clear();
    mapped
}

#[cfg(feature = "gl")]
fn check_egl_image(cuda: &Cuda) -> PathCheck {
    use zerocam_tensor::PixelFormat;
    let gpu = zerocam_gpu::Gpu::new().map_err(|e| format!("no GL thread: {e}"))?;
    if !gpu.info().dma_buf_import {
        return Err("EGL cannot import dma-bufs here".into());
    }
    let t = Tensor::<u8>::image(64, 64, PixelFormat::Nv12, Some(TensorMemory::Dma))
        .map_err(|e| format!("no dma-buf: {e}"))?;
    cuda.attach_gpu(&gpu);
    let mapped = cuda
        .map_egl(&t, Access::Read)
        .map(drop)
        .map_err(|e| e.to_string());
    cuda.clear();
    mapped
}

#[cfg(not(feature = "gl"))]
fn check_gl_buffer(_cuda: &Cuda) -> PathCheck {
    Err("built without the `gl` feature".into())
}

#[cfg(not(feature = "gl"))]
fn check_egl_image(_cuda: &Cuda) -> PathCheck {
    Err("built without the `gl` feature".into())
}

fn path(check: &PathCheck) -> String {
    match check {
        Ok(()) => "works".into(),
        Err(why) => format!("no ({why})"),
    }
}

impl CudaProbe {
    /// One line for `zerocam list`: `CUDA: <device> (...)` or why not.
    pub fn summary(&self) -> String {
        match &self.found {
            Ok(f) => format!(
                "CUDA: {} (compute {}.{}, {}, driver {}.{})",
                f.info.name,
                f.info.compute_capability.0,
                f.info.compute_capability.1,
                if f.info.integrated {
                    "integrated"
                } else {
                    "discrete"
                },
                f.info.driver_version / 1000,
                f.info.driver_version % 1000 / 10
            ),
            Err(why) => format!("CUDA: unavailable ({why})"),
        }
    }
}

impl fmt::Display for CudaProbe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.summary())?;
        match &self.found {
            Ok(found) => {
                writeln!(f, "  CUDA host registration (a): {}", path(&found.host))?;
                let dma = match &found.dma_buf {
                    Ok(crate::CudaPath::Staged) => "staged (the driver would not register \
                        it: copied to the device each map, counted)"
                        .to_owned(),
                    Ok(p) => format!("{p} (zero-copy)"),
                    Err(why) => format!("no ({why})"),
                };
                writeln!(f, "  CUDA DMA-heap buffer (camera frames): {dma}")?;
                writeln!(f, "  CUDA EGLImage interop (b): {}", path(&found.egl_image))?;
                write!(
                    f,
                    "  CUDA GL buffer interop (c): {}",
                    path(&found.gl_buffer)
                )
            }
            Err(_) => write!(f, "  CUDA driver library: {}", self.library),
        }
    }
}
