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
    /// The GL thread (b) and (c) ran on, [`Cuda::interop_gpu`]'s: its EGL
    /// vendor, renderer and display, or why there is none.
    pub interop_egl: Result<InteropEgl, String>,
    /// A buffer of the DMA heap (a camera frame's memory) mapped for reading
    /// as [`Cuda::map`] does by default and read back: the path it took
    /// (host-registered, or staged where the driver refuses to register
    /// it), or why not (no heap here, an error).
    pub dma_buf: Result<crate::CudaPath, String>,
}

/// The EGL display CUDA's GL and EGL interop runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InteropEgl {
    /// `EGL_VENDOR` (`NVIDIA`, `Mesa Project`).
    pub egl_vendor: String,
    /// `GL_RENDERER`.
    pub renderer: String,
    /// The display: the EGL device matching the CUDA device, or `None` for
    /// the default display (no EGL device of the CUDA device here).
    pub device: Option<String>,
}

impl InteropEgl {
    /// What makes a machine's interop EGL NVIDIA's, for a report to print
    /// where [`is_nvidia`](Self::is_nvidia) is false.
    pub const FIX: &'static str = "install NVIDIA's EGL (libEGL_nvidia, with the driver); \
                                   in a container, NVIDIA_DRIVER_CAPABILITIES must include graphics";

    /// Whether it is NVIDIA's EGL, the one the driver's interop works with.
    pub fn is_nvidia(&self) -> bool {
        self.egl_vendor.to_ascii_lowercase().contains("nvidia")
    }
}

impl fmt::Display for InteropEgl {
    /// `<EGL vendor> EGL, <renderer> (<display>)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} EGL, {} ({})",
            self.egl_vendor,
            self.renderer,
            self.device.as_deref().unwrap_or("the default display")
        )
    }
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
        .map(|cuda| {
            let host = check(&cuda, check_host);
            let dma_buf = if check_paths {
                check_dma_buf(&cuda)
            } else {
                Err("not checked".to_owned())
            };
            let (gl_buffer, egl_image, interop_egl) = if check_paths {
                check_interop(&cuda)
            } else {
                let no = "not checked".to_owned();
                (Err(no.clone()), Err(no.clone()), Err(no))
            };
            CudaFound {
                info: cuda.info().clone(),
                host,
                gl_buffer,
                egl_image,
                interop_egl,
                dma_buf,
            }
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

/// (c), (b) and the display they ran on.
type InteropChecks = (PathCheck, PathCheck, Result<InteropEgl, String>);

/// (c) and (b) on the GL thread CUDA interop uses ([`Cuda::interop_gpu`]:
/// the EGL device of the CUDA device where there is one), then detached.
#[cfg(feature = "gl")]
fn check_interop(cuda: &Cuda) -> InteropChecks {
    let gpu = match cuda.interop_gpu() {
        Ok(gpu) => gpu,
        Err(e) => {
            let why = format!("no GL thread: {e}");
            return (Err(why.clone()), Err(why.clone()), Err(why));
        }
    };
    let info = gpu.info();
    let egl = InteropEgl {
        egl_vendor: info.egl_vendor.clone(),
        renderer: info.renderer.clone(),
        device: info.device.as_ref().map(|d| d.to_string()),
    };
    let gl_buffer = check_gl_buffer(cuda, &gpu);
    let egl_image = check_egl_image(cuda, &gpu);
    cuda.clear();
    (gl_buffer, egl_image, Ok(egl))
}

#[cfg(feature = "gl")]
fn check_gl_buffer(cuda: &Cuda, gpu: &zerocam_gpu::Gpu) -> PathCheck {
    let t = gpu.pbo_tensor::<u8>(&[4096]).map_err(|e| e.to_string())?;
    cuda.map(&t, Access::Read)
        .map(drop)
        .map_err(|e| e.to_string())
}

#[cfg(feature = "gl")]
fn check_egl_image(cuda: &Cuda, gpu: &zerocam_gpu::Gpu) -> PathCheck {
    use zerocam_tensor::PixelFormat;
    if !gpu.info().dma_buf_import {
        return Err("EGL cannot import dma-bufs here".into());
    }
    let t = Tensor::<u8>::image(64, 64, PixelFormat::Nv12, Some(TensorMemory::Dma))
        .map_err(|e| format!("no dma-buf: {e}"))?;
    cuda.map_egl(&t, Access::Read)
        .map(drop)
        .map_err(|e| e.to_string())
}

#[cfg(not(feature = "gl"))]
fn check_interop(_cuda: &Cuda) -> InteropChecks {
    let no = "built without the `gl` feature".to_owned();
    (Err(no.clone()), Err(no.clone()), Err(no))
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
                let egl = match &found.interop_egl {
                    Ok(e) if e.is_nvidia() => e.to_string(),
                    Ok(e) => format!(
                        "{e}: not NVIDIA's, so (b) and (c) cannot work on a real driver ({})",
                        InteropEgl::FIX
                    ),
                    Err(why) => format!("none ({why})"),
                };
                writeln!(f, "  CUDA interop's GL thread: {egl}")?;
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
