//! Python bindings for zerocam: the `zerocam._zerocam` extension module
//! (PyO3, abi3 for CPython ≥ 3.9) behind the `zerocam` package in
//! `python/zerocam/`.
//!
//! | module | Python |
//! | --- | --- |
//! | `tensor.rs` | `Tensor` (+ DLPack and the capsule protocol, `dlpack.rs`, `capsule.rs`; `from_fd(unchecked=True)`, `unchecked.rs`) |
//! | `mapview.rs`, `lease.rs`, `export.rs`, `buffer.rs` | `Tensor.map()`, the numpy exports, the buffer protocol (feature `buffer-protocol`) |
//! | `hostpin.rs` | `Tensor.pin_host()`, `HostPin.cpu_access()` |
//! | `camera.rs`, `frame.rs`, `frame_files.rs` | `Camera`, `Frame` (and the frames whose buffers' fds were handed out), `list_devices()` |
//! | `format.rs` | `PixelFormat`, `Region` |
//! | `model.rs`, `preprocess.rs` | `ModelInput`, `Placement`, `Preprocessor` |
//! | `recorder.rs` | `Recorder` (frames into `.mp4` / `.h264` files) |
//! | `cuda.rs`, `cuda/methods.rs` | `Tensor.cuda()`, `Frame.cuda()` → `CudaArray`, `cuda_available()`, `cuda_info()`, `cuda_stats()` (feature `cuda`) |
//! | `errors.rs` | Rust errors → `zerocam.errors` exceptions |

#![deny(unsafe_code)]

#[cfg(all(feature = "buffer-protocol", feature = "abi3-py39"))]
compile_error!("feature buffer-protocol needs --no-default-features (it targets abi3-py311)");

#[cfg(feature = "buffer-protocol")]
#[allow(unsafe_code)] // the syscall/FFI edge: `unsafe` is allowed only in such modules
mod buffer;
mod camera;
#[allow(unsafe_code)] // the syscall/FFI edge: `unsafe` is allowed only in such modules
mod capsule;
mod convert;
#[cfg(feature = "cuda")]
mod cuda;
#[allow(unsafe_code)] // the syscall/FFI edge: `unsafe` is allowed only in such modules
mod dlpack;
mod errors;
#[allow(unsafe_code)] // the FFI edge: the buffer slots (feature buffer-protocol)
mod export;
mod format;
mod frame;
mod frame_files;
mod hostpin;
mod lease;
#[allow(unsafe_code)] // the FFI edge: an array's memory, lent for writing
mod lent;
#[allow(unsafe_code)] // the syscall/FFI edge: `unsafe` is allowed only in such modules
mod mapview;
mod model;
mod preprocess;
mod recorder;
mod tensor;
#[allow(unsafe_code)] // the FFI edge: `unchecked=True`, the Python caller's promise
mod unchecked;

use pyo3::prelude::*;

/// The extension module.
#[pymodule]
fn _zerocam(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<tensor::PyTensor>()?;
    m.add_class::<mapview::MapView>()?;
    m.add_class::<export::Export>()?;
    m.add_class::<hostpin::HostPin>()?;
    m.add_class::<hostpin::CpuAccess>()?;
    m.add_class::<format::PixelFormat>()?;
    m.add_class::<format::Region>()?;
    m.add_class::<camera::Camera>()?;
    m.add_class::<frame::Frame>()?;
    m.add_class::<model::PyModelInput>()?;
    m.add_class::<model::Placement>()?;
    m.add_class::<preprocess::PyPreprocessor>()?;
    m.add_class::<recorder::Recorder>()?;
    m.add_function(wrap_pyfunction!(camera::list_devices, m)?)?;
    #[cfg(feature = "cuda")]
    {
        m.add_class::<cuda::CudaArray>()?;
        m.add_function(wrap_pyfunction!(cuda::cuda_available, m)?)?;
        m.add_function(wrap_pyfunction!(cuda::cuda_info, m)?)?;
        m.add_function(wrap_pyfunction!(cuda::cuda_stats, m)?)?;
    }
    #[cfg(not(feature = "cuda"))]
    {
        m.add_function(wrap_pyfunction!(no_cuda::cuda_available, m)?)?;
        m.add_function(wrap_pyfunction!(no_cuda::cuda_info, m)?)?;
        m.add_function(wrap_pyfunction!(no_cuda::cuda_stats, m)?)?;
    }
    m.add("CUDA", cfg!(feature = "cuda"))?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("CAPSULE_NAME", capsule::NAME.to_string_lossy())?;
    m.add("BUFFER_PROTOCOL", cfg!(feature = "buffer-protocol"))?;
    Ok(())
}

/// Without the `cuda` feature: CUDA is never available.
#[cfg(not(feature = "cuda"))]
mod no_cuda {
    use pyo3::prelude::*;

    /// Whether CUDA can be used: never in a build without the `cuda` feature.
    #[pyfunction]
    pub fn cuda_available() -> bool {
        false
    }

    /// Device 0 of CUDA: `None` in a build without the `cuda` feature.
    #[pyfunction]
    pub fn cuda_info() -> Option<()> {
        None
    }

    /// CUDA's counters: `None` in a build without the `cuda` feature.
    #[pyfunction]
    pub fn cuda_stats() -> Option<()> {
        None
    }
}
