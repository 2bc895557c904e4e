//! GStreamer frames into EGL in the kernel lab (`cargo lab-test`; feature
//! `lab-gstreamer`): `v4l2src io-mode=dmabuf` on vivid, each pool buffer
//! imported as an EGLImage (zink) once, nothing uploaded, vivid's red drawn.
#![cfg(feature = "lab-gstreamer")]
#![allow(missing_docs, clippy::unwrap_used)] // tests may panic

use std::time::Duration;

use zerocam_capture::{BufferMode, FrameSource, GstSource};
use zerocam_tensor::{PixelFormat, Tensor, TensorMemory};

mod lab_common;

use lab_common::{gpu, lock, red_stream, REQUIRE};

const SINGLE: &str = "/dev/video0";
const WAIT: Duration = Duration::from_secs(10);

#[test]
fn gstreamer_frames_are_imported_into_egl_once_per_pool_buffer() {
    let _g = lock();
    // vivid's controls stay set after the stream: solid red, no OSD text.
    drop(red_stream(SINGLE, "NV12", BufferMode::Mmap));
    let gpu = gpu();
    let desc = format!(
        "v4l2src device={SINGLE} io-mode=dmabuf ! video/x-raw,format=NV12,width=320,height=180"
    );
    let mut src = GstSource::new(&desc).unwrap();
    let dst = Tensor::<u8>::image(64, 64, PixelFormat::Rgb, Some(TensorMemory::Mem)).unwrap();
    for _ in 0..30 {
        let f = src.next_frame(WAIT).unwrap();
        gpu.convert(f.tensor(), &dst, &REQUIRE).unwrap();
    }
    let pool = src.stats().buffers as u64;
    let st = gpu.stats().unwrap();
    assert_eq!(st.images.imports, pool, "EGLImages == pool buffers");
    assert_eq!(st.uploads, 0, "nothing uploaded");
    let px = dst.map_read().unwrap();
    assert!(
        px[0] >= 250 && px[1] <= 3 && px[2] <= 3,
        "red: {:?}",
        &px[..3]
    );
}
