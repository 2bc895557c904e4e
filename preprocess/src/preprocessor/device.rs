//! Which device a [`Preprocessor`](super::Preprocessor) converts on: what was
//! asked ([`Backend`]), what was chosen ([`ChosenBackend`]) and why
//! ([`BackendReason`]), and how `Auto` tells a software rasterizer
//! ([`is_software_renderer`]).

use std::fmt;

/// The device asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Backend {
    /// The GPU where it is a real one; the CPU where EGL is missing, where
    /// the GL renderer is a software rasterizer ([`is_software_renderer`]),
    /// and, frame by frame, for a source the GPU cannot take.
    #[default]
    Auto,
    /// The GPU, whatever its renderer; no EGL is an error.
    Gpu,
    /// The CPU; EGL is never loaded.
    Cpu,
}

/// The device a preprocessor converts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChosenBackend {
    /// `Gpu::convert_model`, into PBO tensors.
    Gpu,
    /// `CpuPreprocessor`, into heap memory.
    Cpu,
}

impl ChosenBackend {
    /// `"gpu"` or `"cpu"`.
    pub fn name(self) -> &'static str {
        match self {
            ChosenBackend::Gpu => "gpu",
            ChosenBackend::Cpu => "cpu",
        }
    }
}

impl fmt::Display for ChosenBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why the preprocessor's device was chosen; its `Display` is one readable
/// line (`requested`, `software rasterizer: llvmpipe (LLVM 15.0.6, 256 bits)`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BackendReason {
    /// [`Backend::Gpu`] or [`Backend::Cpu`] was asked for.
    Requested,
    /// `Auto`: EGL or GLES could not be loaded (the loader's message).
    NoEgl {
        /// What was missing.
        reason: String,
    },
    /// `Auto`: EGL loaded, but no GLES 3 context could be made.
    NoContext {
        /// The GPU error.
        reason: String,
    },
    /// `Auto`: the GL renderer is a software rasterizer, slower than the CPU
    /// path.
    SoftwareRenderer {
        /// `GL_RENDERER`.
        renderer: String,
    },
    /// `Auto`: a hardware GL renderer.
    HardwareRenderer {
        /// `GL_RENDERER`.
        renderer: String,
    },
    /// `Auto` in a build without the crate's `gpu` feature.
    NoGpuFeature,
}

impl fmt::Display for BackendReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackendReason::Requested => f.write_str("requested"),
            BackendReason::NoEgl { reason } => write!(f, "no EGL: {reason}"),
            BackendReason::NoContext { reason } => write!(f, "no GLES 3 context: {reason}"),
            BackendReason::SoftwareRenderer { renderer } => {
                write!(f, "software rasterizer: {renderer}")
            }
            BackendReason::HardwareRenderer { renderer } => write!(f, "GPU renderer: {renderer}"),
            BackendReason::NoGpuFeature => f.write_str("built without the gpu feature"),
        }
    }
}

/// Whether `renderer` (a `GL_RENDERER` string) is a software rasterizer:
/// Mesa's llvmpipe and softpipe, lavapipe under zink (`zink Vulkan
/// 1.4(llvmpipe (LLVM 19.1.7, 256 bits) (MESA_LLVMPIPE))`), the classic
/// `Software Rasterizer`, SwiftShader. Case is ignored. Zink on a real
/// Vulkan driver is hardware.
///
/// ```
/// use zerocam_preprocess::is_software_renderer;
/// assert!(is_software_renderer("llvmpipe (LLVM 15.0.6, 256 bits)"));
/// assert!(!is_software_renderer("Mali-G610 (Panfrost)"));
/// ```
pub fn is_software_renderer(renderer: &str) -> bool {
    const SOFTWARE: [&str; 6] = [
        "llvmpipe",
        "softpipe",
        "lavapipe",
        "swrast",
        "software rasterizer",
        "swiftshader",
    ];
    let lower = renderer.to_ascii_lowercase();
    SOFTWARE.iter().any(|s| lower.contains(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn software_rasterizers_by_their_real_renderer_strings() {
        for s in [
            // The host (Mesa 22.3) and the lab's trixie (Mesa 25.0).
            "llvmpipe (LLVM 15.0.6, 256 bits)",
            "llvmpipe (LLVM 19.1.7, 256 bits)",
            // zink on lavapipe, as the lab's eglinfo prints it.
            "zink Vulkan 1.4(llvmpipe (LLVM 19.1.7, 256 bits) (MESA_LLVMPIPE))",
            "zink Vulkan 1.3(lavapipe)",
            "softpipe",
            "Software Rasterizer",
            "ANGLE (Google, Vulkan 1.3.0 (SwiftShader Backend (Subzero) (0x0000C0DE)), SwiftShader driver)",
        ] {
            assert!(is_software_renderer(s), "{s}");
        }
    }

    #[test]
    fn hardware_renderers_are_not_software() {
        for s in [
            "Vivante GC7000UL",                     // i.MX8M Plus
            "Mali-G310 (Panfrost)",                 // i.MX95
            "V3D 7.1.7.0",                          // Raspberry Pi 5
            "V3D 4.2",                              // Raspberry Pi 4
            "NVIDIA Tegra Orin (nvgpu)/integrated", // Jetson
            "zink Vulkan 1.3(NVIDIA GeForce RTX 3060 (NVIDIA_PROPRIETARY))",
            "AMD Radeon Graphics (radeonsi, renoir, LLVM 15.0.6, DRM 3.49, 6.1.0)",
            "Mesa Intel(R) UHD Graphics 620 (KBL GT2)",
            "",
        ] {
            assert!(!is_software_renderer(s), "{s}");
        }
    }

    #[test]
    fn reasons_read_as_one_line() {
        let r = BackendReason::SoftwareRenderer {
            renderer: "llvmpipe (LLVM 15.0.6, 256 bits)".into(),
        };
        assert_eq!(
            r.to_string(),
            "software rasterizer: llvmpipe (LLVM 15.0.6, 256 bits)"
        );
        assert_eq!(BackendReason::Requested.to_string(), "requested");
        assert_eq!(ChosenBackend::Cpu.to_string(), "cpu");
    }
}
