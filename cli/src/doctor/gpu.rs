//! The accelerators: EGL (vendor, renderer, the dma-buf import extensions,
//! and a live NV12 dma-buf import checked pixel by pixel), CUDA, the V4L2
//! memory-to-memory encoders and GStreamer's board encoders.

use zerocam_gpu::{ConvertOptions, Gpu, ImportPolicy};
use zerocam_tensor::{PixelFormat, Tensor, TensorMemory};

use super::Check;

const GPU: &str = "GPU";
const ENCODE: &str = "encoders";

/// EGL, CUDA, M2M encoders, GStreamer.
pub(super) fn check(out: &mut Vec<Check>) {
    egl(out);
    cuda(out);
    out.push(m2m());
    gstreamer(out);
}

/// Renderer names of Mesa's and others' CPU renderers.
fn software(renderer: &str) -> bool {
    let r = renderer.to_ascii_lowercase();
    ["llvmpipe", "softpipe", "swrast", "lavapipe", "software"]
        .iter()
        .any(|s| r.contains(s))
}

fn egl(out: &mut Vec<Check>) {
    let gpu = match Gpu::new() {
        Ok(g) => g,
        Err(e) => {
            out.push(Check::fail(
                GPU,
                "EGL",
                e.to_string(),
                "install the board's EGL/GLES driver (Mesa: libegl1 libgles2; NXP: imx-gpu-viv; Jetson: L4T's)",
            ));
            return;
        }
    };
    let i = gpu.info();
    let what = format!(
        "{} / {} (GLES {}, {} platform)",
        i.vendor, i.renderer, i.version, i.platform
    );
    out.push(if software(&i.renderer) {
        Check::warn(
            GPU,
            "EGL",
            format!("{what}: a software renderer"),
            "converts run on the CPU through it: load the board's GPU driver (etnaviv, panfrost, v3d, nvgpu)",
        )
    } else {
        Check::ok(GPU, "EGL", what)
    });
    out.push(if i.dma_buf_import && i.image_external {
        Check::ok(
            GPU,
            "EGL_EXT_image_dma_buf_import",
            format!(
                "yes, with GL_OES_EGL_image_external; modifiers extension: {}",
                if i.dma_buf_modifiers { "yes" } else { "no" }
            ),
        )
    } else {
        Check::fail(
            GPU,
            "EGL_EXT_image_dma_buf_import",
            format!(
                "dma-buf import {}, GL_OES_EGL_image_external {}: frames are uploaded (a copy each)",
                i.dma_buf_import, i.image_external
            ),
            "a driver with dma-buf import (Mesa 20+; the vendor's EGL on i.MX and Jetson)",
        )
    });
    out.push(live_import(&gpu));
}

/// An NV12 frame in a DMA-heap buffer, imported as an EGLImage (an import
/// refused is an error here, not an upload) and converted to RGB: grey in,
/// the same grey out on every pixel, one image made, nothing uploaded.
fn live_import(gpu: &Gpu) -> Check {
    let name = "live NV12 dma-buf import";
    let (w, h) = (64, 48);
    let src = match Tensor::<u8>::image(w, h, PixelFormat::Nv12, Some(TensorMemory::Dma)) {
        Ok(t) => t,
        Err(e) => {
            return Check::warn(
                GPU,
                name,
                format!("not run: no dma-buf to import ({e})"),
                "a readable-writable DMA heap (see system and memory)",
            )
        }
    };
    let result = (|| -> Result<(u64, u64, bool), String> {
        {
            let mut map = src.map().map_err(|e| e.to_string())?;
            let luma = w * h;
            map[..luma].fill(180);
            map[luma..].fill(128);
        }
        let dst = Tensor::<u8>::image(w, h, PixelFormat::Rgb, Some(TensorMemory::Mem))
            .map_err(|e| e.to_string())?;
        let options = ConvertOptions {
            import: ImportPolicy::Require,
            ..ConvertOptions::default()
        };
        gpu.convert(&src, &dst, &options)
            .map_err(|e| e.to_string())?;
        let stats = gpu.stats().map_err(|e| e.to_string())?;
        let map = dst.map().map_err(|e| e.to_string())?;
        let grey = map.chunks_exact(3).all(|p| {
            let (lo, hi) = (p.iter().min().copied(), p.iter().max().copied());
            matches!((lo, hi), (Some(lo), Some(hi)) if hi - lo <= 4 && (170..=215).contains(&lo))
        });
        Ok((stats.images_created, stats.uploads, grey))
    })();
    match result {
        Ok((images, 0, true)) if images >= 1 => Check::ok(
            GPU,
            name,
            format!("{w}x{h} NV12 from the DMA heap: imported as an EGLImage ({images} made, 0 uploads), converted to the right grey"),
        ),
        Ok((images, uploads, grey)) => Check::fail(
            GPU,
            name,
            format!("{images} images made, {uploads} uploads, pixels right: {grey}"),
            "the EGL driver's dma-buf import is broken: file `zerocam doctor --json` with the board's name",
        ),
        Err(e) => Check::fail(
            GPU,
            name,
            e,
            "the EGL driver refuses NV12 dma-bufs: frames are uploaded (a copy each); a newer driver may take them",
        ),
    }
}

/// The device, and the EGL its GL/EGL interop runs on (NVIDIA's, or the
/// interop cannot work).
#[cfg(feature = "cuda")]
fn cuda(out: &mut Vec<Check>) {
    let p = zerocam_cuda::probe(true);
    let found = match &p.found {
        Ok(found) => found,
        Err(why) => {
            out.push(Check::fail(
                GPU,
                "CUDA",
                if why.contains(&p.library) {
                    why.clone()
                } else {
                    format!("{}: {why}", p.library)
                },
                "only Jetson boards have CUDA: there, install L4T's CUDA driver (nvidia-l4t-cuda)",
            ));
            return;
        }
    };
    out.push(Check::ok(
        GPU,
        "CUDA",
        p.summary().trim_start_matches("CUDA: ").to_owned(),
    ));
    const NAME: &str = "CUDA interop EGL";
    use zerocam_cuda::InteropEgl;
    out.push(match &found.interop_egl {
        Ok(e) if e.is_nvidia() => Check::ok(GPU, NAME, e.to_string()),
        Ok(e) => Check::warn(
            GPU,
            NAME,
            format!("{e}: not NVIDIA's, so GL buffer and EGLImage interop fail"),
            InteropEgl::FIX,
        ),
        Err(why) => Check::warn(
            GPU,
            NAME,
            format!("no GL thread for interop: {why}"),
            InteropEgl::FIX,
        ),
    });
}

#[cfg(not(feature = "cuda"))]
fn cuda(out: &mut Vec<Check>) {
    out.push(Check::warn(
        GPU,
        "CUDA",
        "not built into this zerocam",
        "build zerocam-cli with its default feature `cuda`",
    ));
}

/// The V4L2 memory-to-memory encoders `zerocam record` would use.
fn m2m() -> Check {
    use zerocam_encode::Codec;
    let found: Vec<(Codec, String)> = [Codec::H264, Codec::Hevc, Codec::Mjpeg, Codec::Fwht]
        .into_iter()
        .filter_map(|c| {
            zerocam_encode::m2m::find(c).map(|p| (c, format!("{c} on {}", p.display())))
        })
        .collect();
    let hardware = found
        .iter()
        .any(|(c, _)| matches!(c, Codec::H264 | Codec::Hevc));
    let found: Vec<String> = found.into_iter().map(|(_, f)| f).collect();
    let list = if found.is_empty() {
        "none".to_owned()
    } else {
        found.join(", ")
    };
    if hardware {
        Check::ok(ENCODE, "V4L2 M2M encoders", list)
    } else {
        Check::warn(
            ENCODE,
            "V4L2 M2M encoders",
            format!("{list}: H.264 is encoded in software (OpenH264)"),
            "load the board's encoder driver (i.MX8M Plus: hantro/vsi; Raspberry Pi 4: bcm2835-codec)",
        )
    }
}

#[cfg(feature = "gstreamer")]
fn gstreamer(out: &mut Vec<Check>) {
    use zerocam_capture::gstreamer as gst;
    if let Err(e) = gst::init() {
        out.push(Check::fail(
            ENCODE,
            "GStreamer",
            e.to_string(),
            "install GStreamer 1.20+ (gstreamer1.0-plugins-base, -good)",
        ));
        return;
    }
    out.push(Check::ok(
        ENCODE,
        "GStreamer",
        gst::version_string().to_string(),
    ));
    let board = ["vpuenc_h264", "v4l2h264enc", "nvv4l2h264enc"];
    let found: Vec<&str> = board
        .into_iter()
        .filter(|n| gst::ElementFactory::find(n).is_some())
        .collect();
    out.push(if found.is_empty() {
        Check::warn(
            ENCODE,
            "GStreamer board encoders",
            "none of vpuenc_h264, v4l2h264enc, nvv4l2h264enc",
            "install the board's plugins: imx-gst1.0-plugin (i.MX), gstreamer1.0-plugins-good (v4l2h264enc), nvidia-l4t-gstreamer (Jetson)",
        )
    } else {
        Check::ok(ENCODE, "GStreamer board encoders", found.join(", "))
    });
}

#[cfg(not(feature = "gstreamer"))]
fn gstreamer(out: &mut Vec<Check>) {
    out.push(Check::warn(
        ENCODE,
        "GStreamer",
        "not built into this zerocam",
        "build zerocam-cli with feature `gstreamer` for gst: sources, serve --rtsp and the board encoders",
    ));
}
