//! The kernel, the memory zerocam's tensors live in (DMA heaps and CMA,
//! udmabuf, memfd) and the device nodes' permissions.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use nix::unistd::{access, AccessFlags, Group};
use zerocam_tensor::{PixelFormat, Tensor, TensorMemory};

use super::Check;

const SECTION: &str = "system and memory";

/// The kernel, DMA heaps, CMA, udmabuf, memfd and DRM render nodes.
pub(super) fn check(out: &mut Vec<Check>) {
    out.push(kernel());
    heaps(out);
    out.push(cma());
    out.push(udmabuf());
    out.push(memfd());
    render_nodes(out);
}

/// Whether this process may read and write `path`; when not, the fix line
/// (join the node's group, or a udev rule when its group is root).
pub(super) fn node_access(path: &Path) -> Result<(), String> {
    if access(path, AccessFlags::R_OK | AccessFlags::W_OK).is_ok() {
        return Ok(());
    }
    let gid = std::fs::metadata(path).map(|m| m.gid()).unwrap_or(0);
    let group = Group::from_gid(gid.into())
        .ok()
        .flatten()
        .map_or_else(|| gid.to_string(), |g| g.name);
    Err(if gid == 0 {
        format!(
            "a udev rule giving {} a group you are in (GROUP=\"video\", MODE=\"0660\")",
            path.display()
        )
    } else {
        format!("sudo usermod -aG {group} $USER, then log in again")
    })
}

/// Check `label` on device node `path`: `WHAT: read-write`, or `WHAT:
/// permission denied` with [`node_access`]'s fix.
fn access_check(label: String, path: &Path, what: &str) -> Check {
    match node_access(path) {
        Ok(()) => Check::ok(SECTION, label, format!("{what}: read-write")),
        Err(fix) => Check::fail(SECTION, label, format!("{what}: permission denied"), fix),
    }
}

/// The paths in directory `dir`, sorted (none where it cannot be read).
pub(super) fn entries(dir: &str) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    paths.sort();
    paths
}

/// The driver bound to the sysfs device `dev` (its `driver` link), or the
/// device's own name where none is bound (vgem, vivid's platform devices).
pub(super) fn driver_of(dev: &Path) -> String {
    let name = |p: PathBuf| p.file_name().map(|n| n.to_string_lossy().into_owned());
    std::fs::read_link(dev.join("driver"))
        .ok()
        .and_then(name)
        .or_else(|| std::fs::canonicalize(dev).ok().and_then(name))
        .unwrap_or_else(|| "unknown driver".into())
}

/// The kernel release: DMA heaps need 5.6, `VIDIOC_REQBUFS` capabilities 4.20.
fn kernel() -> Check {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "unknown".into());
    let version: Vec<u32> = release
        .split(|c: char| !c.is_ascii_digit())
        .take(2)
        .filter_map(|p| p.parse().ok())
        .collect();
    let arch = std::env::consts::ARCH;
    match version[..] {
        [major, minor] if (major, minor) >= (5, 6) => {
            Check::ok(SECTION, "kernel", format!("Linux {release} ({arch})"))
        }
        _ => Check::warn(
            SECTION,
            "kernel",
            format!("Linux {release} ({arch}): older than 5.6, no DMA heaps"),
            "use the board vendor's 5.15 or newer kernel (NXP, Raspberry Pi and L4T ship one)",
        ),
    }
}

/// Each heap in `/dev/dma_heap` with its permission, and one small (64x48
/// NV12) allocation from the default heap.
fn heaps(out: &mut Vec<Check>) {
    let names = zerocam_tensor::dma_heaps();
    if names.is_empty() {
        out.push(Check::fail(
            SECTION,
            "DMA heaps",
            "no /dev/dma_heap: tensors default to memfd, and dmabuf-mode capture is refused",
            "a kernel with CONFIG_DMABUF_HEAPS_SYSTEM and CONFIG_DMABUF_HEAPS_CMA; meanwhile capture in mmap mode (the driver's buffers, exported)",
        ));
        return;
    }
    for name in &names {
        let path = Path::new("/dev/dma_heap").join(name);
        let label = format!("DMA heap {name}");
        out.push(access_check(label, &path, &path.display().to_string()));
    }
    out.push(
        match Tensor::<u8>::image(64, 48, PixelFormat::Nv12, Some(TensorMemory::Dma)) {
            Ok(_) => Check::ok(
                SECTION,
                "DMA heap allocation",
                "a 64x48 NV12 tensor in the default heap",
            ),
            Err(e) => Check::fail(
                SECTION,
                "DMA heap allocation",
                e.to_string(),
                "read-write access to a heap in /dev/dma_heap (see above)",
            ),
        },
    );
}

/// CMA, which the `linux,cma` heap and most board cameras' buffers come
/// from (`CmaTotal` in /proc/meminfo).
fn cma() -> Check {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let kib = |key: &str| {
        meminfo
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    };
    match (kib("CmaTotal:"), kib("CmaFree:")) {
        (Some(total), Some(free)) if total > 0 => Check::ok(
            SECTION,
            "CMA",
            format!("{} MiB, {} MiB free", total / 1024, free / 1024),
        ),
        _ => Check::warn(
            SECTION,
            "CMA",
            "none reserved: contiguous buffers (the cma heap, many ISPs) cannot be had",
            "reserve some: cma=256M on the kernel command line (boards' device trees usually do)",
        ),
    }
}

/// `/dev/udmabuf`: memfd pages as a dma-buf (the GPU imports shm tensors).
fn udmabuf() -> Check {
    let path = Path::new("/dev/udmabuf");
    if !path.exists() {
        return Check::fail(
            SECTION,
            "udmabuf",
            "no /dev/udmabuf",
            "sudo modprobe udmabuf (CONFIG_UDMABUF)",
        );
    }
    access_check("udmabuf".into(), path, "/dev/udmabuf")
}

/// memfd, the shared-memory tensors' backing.
fn memfd() -> Check {
    if zerocam_tensor::is_shm_available() {
        Check::ok(SECTION, "memfd", "shared-memory tensors work")
    } else {
        Check::fail(
            SECTION,
            "memfd",
            "memfd_create refused",
            "a kernel with CONFIG_MEMFD_CREATE, and no seccomp filter denying memfd_create",
        )
    }
}

/// The DRM render nodes EGL opens, with their drivers and permissions.
fn render_nodes(out: &mut Vec<Check>) {
    let nodes: Vec<PathBuf> = entries("/dev/dri")
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("renderD"))
        })
        .collect();
    if nodes.is_empty() {
        out.push(Check::warn(
            SECTION,
            "DRM render nodes",
            "no /dev/dri/renderD*: EGL can only render in software",
            "load the board's GPU driver (etnaviv, panfrost, v3d, nvgpu)",
        ));
    }
    for node in nodes {
        let name = node
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let driver = driver_of(Path::new(&format!("/sys/class/drm/{name}/device")));
        out.push(access_check(node.display().to_string(), &node, &driver));
    }
}
