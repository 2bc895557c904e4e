//! DMA-BUF tests on a real kernel: run inside the kernel lab (`cargo lab-test`),
//! where `/dev/dma_heap/system`, `/dev/udmabuf` and vivid's `/dev/video0`
//! (single-planar) and `/dev/video1` (multi-planar) exist.
#![cfg(feature = "lab")]
#![allow(missing_docs)]
#![allow(clippy::unwrap_used, clippy::undocumented_unsafe_blocks)] // tests may panic

mod common;

use std::fs::{File, OpenOptions};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};

use common::{dma, memfd};
use zerocam_tensor::{
    is_dma_available, is_gpu_buffer_available, Error, ImageLayout, PixelFormat, Region, Tensor,
    TensorMapTrait, TensorMemory,
};

/// `statfs.f_type` of dma-buf fds, checked independently of the crate.
fn is_dmabuf(fd: impl AsFd) -> bool {
    nix::sys::statfs::fstatfs(fd).unwrap().filesystem_type().0 as u64 == 0x444d_4142
}

#[test]
fn lab_dma_alloc_from_the_system_heap() {
    assert!(is_dma_available() && is_gpu_buffer_available());
    let t = dma(&[720, 1280, 3]);
    assert_eq!(t.memory(), TensorMemory::Dma);
    assert!(is_dmabuf(t.fd().unwrap()), "the fd is a real dma-buf");
    assert!(
        t.map_read().unwrap().iter().all(|&b| b == 0),
        "heap memory is zeroed"
    );
    // With no explicit memory the first choice, DMA, succeeds here.
    assert_eq!(
        Tensor::<f32>::new(&[16], None, None).unwrap().memory(),
        TensorMemory::Dma
    );
    let img = Tensor::<u8>::image(640, 480, PixelFormat::Nv12, Some(TensorMemory::Dma)).unwrap();
    assert_eq!(img.memory(), TensorMemory::Dma);
}

#[test]
fn lab_dma_unknown_heap_lists_the_heaps_present() {
    let e = Tensor::<u8>::builder(&[64])
        .memory(TensorMemory::Dma)
        .dma_heap("linux,nope")
        .build()
        .unwrap_err();
    match e {
        Error::UnknownHeap { available, .. } => assert!(available.contains(&"system".into())),
        e => panic!("unexpected {e}"),
    }
}

#[test]
fn lab_dma_persistent_map_with_sync_round_trips_through_clone_fd() {
    let a = dma(&[4096]);
    let first = a.map().unwrap().as_ptr();
    {
        let mut m = a.map_write().unwrap();
        assert_eq!(m.as_ptr(), first, "the mapping is made once and kept");
        m[..5].copy_from_slice(b"hello");
    }
    let b = Tensor::<u8>::from_fd(a.clone_fd().unwrap(), &[4096], None).unwrap();
    assert_eq!(b.memory(), TensorMemory::Dma, "from_fd detects a dma-buf");
    assert_eq!(b.fd_identity(), a.fd_identity());
    assert_ne!(b.buffer_identity(), a.buffer_identity());
    assert_eq!(&b.map_read().unwrap()[..5], b"hello");
    b.map().unwrap()[4095] = 42;
    assert_eq!(a.map_read().unwrap()[4095], 42);
    // An explicit finish reports the sync END; it succeeds on a real dma-buf.
    a.map().unwrap().finish().unwrap();
}

#[test]
fn lab_dma_views_share_the_buffer() {
    let t = Tensor::<u8>::builder_image(
        ImageLayout::new(64, 32, PixelFormat::Rgb).with_row_stride(256),
    )
    .memory(TensorMemory::Dma)
    .build()
    .unwrap();
    let v = t.view(Region::new(10, 4, 8, 8)).unwrap();
    assert_eq!(v.buffer_identity(), t.buffer_identity());
    assert_eq!(v.fd_identity(), t.fd_identity());
    v.map().unwrap().view_mut().unwrap().fill(0xAB);
    let other = Tensor::<u8>::from_fd(t.clone_fd().unwrap(), &[32 * 256], None).unwrap();
    let m = other.map_read().unwrap();
    assert_eq!(m[4 * 256 + 30], 0xAB);
    assert_eq!(m[4 * 256 + 29], 0);
    assert_eq!(m[11 * 256 + 30 + 23], 0xAB);
    assert_eq!(m[12 * 256 + 30], 0);
    assert!(matches!(
        t.view(Region::new(60, 0, 8, 8)),
        Err(Error::RegionOutOfBounds { .. })
    ));
}

/// `struct udmabuf_create` from `<linux/udmabuf.h>`.
#[repr(C)]
struct UdmabufCreate {
    memfd: u32,
    flags: u32,
    offset: u64,
    size: u64,
}
nix::ioctl_write_ptr!(udmabuf_create, b'u', 0x42, UdmabufCreate);

#[test]
fn lab_dma_from_fd_of_a_udmabuf() {
    let len = 64 * 4096;
    let mem = memfd(len);
    nix::fcntl::fcntl(
        &mem,
        nix::fcntl::FcntlArg::F_ADD_SEALS(nix::fcntl::SealFlag::F_SEAL_SHRINK),
    )
    .unwrap();
    nix::unistd::write(&mem, b"through-udmabuf").unwrap();
    let dev = OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/udmabuf")
        .unwrap();
    let arg = UdmabufCreate {
        memfd: mem.as_raw_fd() as u32,
        flags: 1, // UDMABUF_FLAGS_CLOEXEC
        offset: 0,
        size: len as u64,
    };
    // SAFETY (test): valid udmabuf device fd and argument struct.
    let raw = unsafe { udmabuf_create(dev.as_raw_fd(), &arg) }.unwrap();
    // SAFETY (test): the ioctl returned a new fd we now own.
    let buf = unsafe { OwnedFd::from_raw_fd(raw) };
    assert!(is_dmabuf(&buf));
    let t = Tensor::<u8>::from_fd(buf, &[len], None).unwrap();
    assert_eq!(t.memory(), TensorMemory::Dma);
    assert_eq!(&t.map_read().unwrap()[..15], b"through-udmabuf");
    let e = Tensor::<u8>::from_fd(t.clone_fd().unwrap(), &[len + 1], None).unwrap_err();
    assert!(
        matches!(e, Error::BufferTooSmall { available, .. } if available == len),
        "{e}"
    );
}

/// The V4L2 structs and ioctls the EXPBUF test needs (`<linux/videodev2.h>`).
mod v4l2 {
    #[repr(C)]
    #[derive(Default)]
    pub struct RequestBuffers {
        pub count: u32,
        pub type_: u32,
        pub memory: u32,
        pub capabilities: u32,
        pub flags: u8,
        pub reserved: [u8; 3],
    }
    #[repr(C)]
    #[derive(Default)]
    pub struct ExportBuffer {
        pub type_: u32,
        pub index: u32,
        pub plane: u32,
        pub flags: u32,
        pub fd: i32,
        pub reserved: [u32; 11],
    }
    pub const CAPTURE: u32 = 1;
    pub const CAPTURE_MPLANE: u32 = 9;
    pub const MEMORY_MMAP: u32 = 1;
    nix::ioctl_readwrite!(reqbufs, b'V', 8, RequestBuffers);
    nix::ioctl_readwrite!(expbuf, b'V', 16, ExportBuffer);
}

fn export(dev: &File, type_: u32, index: u32, plane: u32) -> OwnedFd {
    let mut e = v4l2::ExportBuffer {
        type_,
        index,
        plane,
        flags: libc::O_CLOEXEC as u32 | libc::O_RDWR as u32,
        ..Default::default()
    };
    // SAFETY (test): valid V4L2 device fd and argument struct.
    unsafe { v4l2::expbuf(dev.as_raw_fd(), &mut e) }.unwrap();
    // SAFETY (test): EXPBUF returned a new fd we now own.
    unsafe { OwnedFd::from_raw_fd(e.fd) }
}

fn vivid_buffers(path: &str, type_: u32) -> File {
    let dev = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let mut req = v4l2::RequestBuffers {
        count: 2,
        type_,
        memory: v4l2::MEMORY_MMAP,
        ..Default::default()
    };
    // SAFETY (test): valid V4L2 device fd and argument struct.
    unsafe { v4l2::reqbufs(dev.as_raw_fd(), &mut req) }.unwrap();
    assert!(req.count >= 2);
    dev
}

fn fd_len(fd: &OwnedFd) -> usize {
    nix::unistd::lseek(fd, 0, nix::unistd::Whence::SeekEnd).unwrap() as usize
}

#[test]
fn lab_dma_from_fd_of_a_vivid_expbuf() {
    for (path, type_) in [
        ("/dev/video0", v4l2::CAPTURE),
        ("/dev/video1", v4l2::CAPTURE_MPLANE),
    ] {
        let dev = vivid_buffers(path, type_);
        let fd = export(&dev, type_, 0, 0);
        assert!(is_dmabuf(&fd), "{path}: EXPBUF gives a dma-buf");
        let len = fd_len(&fd);
        let again = export(&dev, type_, 0, 0);
        let t = Tensor::<u8>::from_fd(fd, &[len], Some(path)).unwrap();
        let t2 = Tensor::<u8>::from_fd(again, &[len], None).unwrap();
        assert_eq!(t.memory(), TensorMemory::Dma);
        assert_ne!(
            t.fd_identity(),
            t2.fd_identity(),
            "{path}: every EXPBUF is a new dma-buf (new inode)"
        );
        t.map().unwrap()[0] = 0x5A;
        assert_eq!(
            t2.map_read().unwrap()[0],
            0x5A,
            "{path}: both exports are one buffer"
        );
        let img = t
            .with_image(ImageLayout::new(16, 16, PixelFormat::Grey))
            .unwrap();
        assert_eq!(img.map_read().unwrap().view().unwrap()[[0, 0, 0]], 0x5A);
        let e = Tensor::<u8>::from_fd(export(&dev, type_, 1, 0), &[len + 4096], None).unwrap_err();
        assert!(matches!(e, Error::BufferTooSmall { .. }), "{path}: {e}");
    }
}
