//! The zero-copy self-check behind `zerocam probe`.

use std::time::Instant;

use zerocam_tensor::{
    dma_heaps, is_dma_available, is_shm_available, FdIdentity, PixelFormat, Result, Tensor,
    TensorMemory,
};

/// The fd round trip's result.
#[derive(Debug)]
pub struct SharedCheck {
    /// `(st_dev, st_ino)` of the buffer's file, as seen through the second tensor.
    pub file: FdIdentity,
    /// Whether bytes written through the first tensor were read through the second.
    pub bytes_match: bool,
}

/// What `probe::run` found.
#[derive(Debug)]
pub struct Report {
    /// A DMA heap can be opened.
    pub dma: bool,
    /// Heaps in `/dev/dma_heap`.
    pub heaps: Vec<String>,
    /// memfd works.
    pub shm: bool,
    /// The memory the self-check ran in (the default choice).
    pub memory: TensorMemory,
    /// Image width.
    pub width: usize,
    /// Image height.
    pub height: usize,
    /// Tensor bytes.
    pub bytes: usize,
    /// Maps made.
    pub maps: usize,
    /// Mean cost of one map + unmap.
    pub ns_per_map: f64,
    /// Whether any map returned another address than the first (must be false).
    pub address_moved: bool,
    /// The fd round trip, for fd-backed memory.
    pub shared: Option<SharedCheck>,
    /// CUDA: the device and which paths work (feature `cuda`).
    #[cfg(feature = "cuda")]
    pub cuda: zerocam_cuda::CudaProbe,
}

/// The report as text.
pub fn report(r: &Report) -> String {
    let yes = |b: bool| if b { "yes" } else { "no" };
    let heaps = if r.heaps.is_empty() {
        "none".to_owned()
    } else {
        r.heaps.join(", ")
    };
    let mut s = format!(
        concat!(
            "zerocam probe: tensor memory and the zero-copy self-check\n",
            "memory: dma {} (heaps: {}), shm {}, mem yes\n",
            "self-check in {} memory: {}x{} RGB, {} bytes\n",
            "  {} maps: {:.0} ns per map+unmap, mapping address moved: {}\n"
        ),
        yes(r.dma),
        heaps,
        yes(r.shm),
        r.memory,
        r.width,
        r.height,
        r.bytes,
        r.maps,
        r.ns_per_map,
        r.address_moved
    );
    match &r.shared {
        Some(c) => {
            s += &format!(
                "  fd round trip: fd_identity {}:{}, bytes seen through the second tensor: {}
",
                c.file.dev, c.file.ino, c.bytes_match
            )
        }
        None => {
            s += "  fd round trip: not possible in heap memory
"
        }
    }
    #[cfg(feature = "cuda")]
    {
        s += &format!("{}\n", r.cuda);
    }
    s
}

/// Allocates a 1920x1080 RGB tensor in the default memory, maps it `maps` times
/// and, for fd-backed memory, reads it back through an import of its fd.
pub fn run(maps: usize) -> Result<Report> {
    let (width, height) = (1920, 1080);
    let t = Tensor::<u8>::image(width, height, PixelFormat::Rgb, None)?;
    let first = t.map_read()?.as_ptr();
    let mut moved = false;
    let start = Instant::now();
    for _ in 0..maps {
        let m = t.map_read()?;
        moved |= m.as_ptr() != first;
    }
    let ns_per_map = start.elapsed().as_nanos() as f64 / maps as f64;
    let shared = match t.clone_fd() {
        Ok(fd) => {
            t.map()?[..8].copy_from_slice(b"zerocam!");
            let other = Tensor::<u8>::from_fd(fd, t.shape(), None)?;
            let id = other.fd_identity();
            let bytes_match = &other.map_read()?[..8] == b"zerocam!";
            id.map(|file| SharedCheck { file, bytes_match })
        }
        Err(_) => None,
    };
    Ok(Report {
        dma: is_dma_available(),
        heaps: dma_heaps(),
        shm: is_shm_available(),
        memory: t.memory(),
        width,
        height,
        bytes: t.size(),
        maps,
        ns_per_map,
        address_moved: moved,
        shared,
        #[cfg(feature = "cuda")]
        cuda: zerocam_cuda::probe(true),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn probe_reports_a_stable_mapping_and_a_working_round_trip() {
        let r = super::run(100).unwrap();
        assert!(!r.address_moved);
        assert_eq!(r.bytes, 1920 * 1080 * 3);
        if r.memory == zerocam_tensor::TensorMemory::Mem {
            assert!(r.shared.is_none(), "heap memory has no fd");
        } else {
            assert!(r.shared.expect("fd-backed memory round-trips").bytes_match);
        }
    }
}
