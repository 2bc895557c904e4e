//! Frames into GStreamer: `FrameSink` and `GstVideoEncoder` on the host
//! with the pattern source and GStreamer's software elements (x264enc from
//! gst-plugins-ugly, mp4mux and h264parse from -good/-bad).

use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use zerocam_capture::{
    CaptureError, CaptureFormat, Frame, FrameSource, PatternConfig, PatternSource, CAPTURE_FORMATS,
};
use zerocam_encode::encoder::EncoderConfig;
use zerocam_encode::gst::gstreamer as gst;
use zerocam_encode::gst::gstreamer::prelude::*;
use zerocam_encode::gst::gstreamer_app as gst_app;
use zerocam_encode::gst::gstreamer_video as gst_video;
use zerocam_encode::gst::{find, FrameSink, GstEncodeError, GstVideoEncoder, SinkConfig};
use zerocam_encode::{Codec, VideoEncoder};

/// The tests count this process's fds: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

fn format(name: &str) -> CaptureFormat {
    CAPTURE_FORMATS
        .into_iter()
        .find(|f| f.name == name)
        .expect("a capture format")
}

fn pattern(name: &str, buffers: u32) -> PatternSource {
    let mut config = PatternConfig::new(format(name), 320, 240);
    config.buffers = buffers;
    PatternSource::new(config).expect("the pattern source")
}

/// The next frame, waiting while GStreamer still holds every buffer: a
/// pipeline that never gave leases back would fail here.
fn next(src: &mut PatternSource) -> Frame {
    let started = Instant::now();
    loop {
        match src.next_frame(Duration::from_secs(1)) {
            Ok(f) => return f,
            Err(CaptureError::NoFreeBuffer { .. })
                if started.elapsed() < Duration::from_secs(5) =>
            {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => panic!("no frame: {e}"),
        }
    }
}

fn ffprobe_frames(path: &Path) -> u64 {
    zerocam_test_support::media::ffprobe(path).frames
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

/// This process's open fds once the pipeline holds at most one frame (a
/// fakesink's last sample): every frame in flight is a memory holding a dup
/// of its buffer's fd, so the count is compared with the pipeline drained.
fn settled_fds(sink: &FrameSink) -> usize {
    let started = Instant::now();
    while sink.stats().outstanding > 1 && started.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(1));
    }
    open_fds()
}

#[test]
fn thirty_frames_into_an_mp4_lend_every_buffer_and_get_it_back() {
    let _serial = serial();
    let dir = tempdir();
    let path = dir.join("x.mp4");
    // 3 buffers for 30 frames: only works if GStreamer frees them.
    let mut src = pattern("NV12", 3);
    let first = next(&mut src);
    let description = format!(
        "x264enc tune=zerolatency ! h264parse ! mp4mux ! filesink location={}",
        path.display()
    );
    let mut sink = FrameSink::launch(&description, &first).expect("the pipeline starts");
    sink.push(first).expect("pushed");
    for _ in 1..30 {
        let frame = next(&mut src);
        sink.push(frame).expect("pushed");
    }
    let stats = sink.finish().expect("EOS");
    assert_eq!(stats.pushed, 30);
    // The pattern's frames are memfd-backed: lent as they are, never copied.
    assert_eq!((stats.lent, stats.copied, stats.dropped), (30, 0, 0));
    assert_eq!(stats.outstanding, 0, "every lease back after EOS");
    assert_eq!(stats.taken_back, 0, "GStreamer freed every buffer itself");
    // Memfds: GstFdMemory over a dup of each frame's fd.
    assert_eq!((stats.fd_memories, stats.mapped_memories), (30, 0));
    assert_eq!(ffprobe_frames(&path), 30);
    // Every buffer is the source's again.
    let held: Vec<Frame> = (0..3).map(|_| next(&mut src)).collect();
    assert_eq!(held.len(), 3);
}

#[test]
fn copy_mode_copies_and_counts_for_a_pipeline_that_holds_frames() {
    let _serial = serial();
    let dir = tempdir();
    let path = dir.join("lookahead.mp4");
    // x264enc's default lookahead holds tens of frames: more than the
    // source has buffers, so they are copied.
    let mut src = pattern("NV12", 2);
    let first = next(&mut src);
    let description = format!(
        "x264enc ! h264parse ! mp4mux ! filesink location={}",
        path.display()
    );
    let config = SinkConfig {
        copy: true,
        ..SinkConfig::default()
    };
    let mut sink = FrameSink::launch_with(&description, &first, config).expect("starts");
    sink.push(first).expect("pushed");
    for _ in 1..30 {
        let frame = next(&mut src);
        sink.push(frame).expect("pushed");
    }
    let stats = sink.finish().expect("EOS");
    assert_eq!((stats.lent, stats.copied, stats.outstanding), (0, 30, 0));
    assert_eq!(ffprobe_frames(&path), 30);
}

#[test]
fn the_buffer_is_the_frames_own_memory() {
    let _serial = serial();
    // NV12 in one memfd, NV12M in two: one GstMemory per buffer.
    for name in ["NV12", "NV12M"] {
        own_memory(name);
    }
}

/// The file an fd is open on: (device, inode), through `/proc/self/fd`.
fn file_of(fd: i32) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(format!("/proc/self/fd/{fd}")).expect("the fd's file");
    (m.dev(), m.ino())
}

fn own_memory(name: &str) {
    use zerocam_encode::gst::gstreamer_allocators::{DmaBufMemory, FdMemory};
    let mut src = pattern(name, 3);
    let first = next(&mut src);
    let mut sink = FrameSink::launch(
        "appsink name=out sync=false enable-last-sample=false",
        &first,
    )
    .expect("starts");
    let out = sink
        .pipeline()
        .and_then(|p| p.by_name("out"))
        .and_then(|e| e.downcast::<gst_app::AppSink>().ok())
        .expect("the appsink");
    // Each plane's file, where it starts in it, and its first bytes.
    let planes: Vec<((u64, u64), usize, Vec<u8>)> = {
        let t = first.tensor();
        (0..2)
            .map(|i| {
                let plane = t.plane(i).expect("a plane");
                let fd = plane.fd().expect("a memfd").as_raw_fd();
                let map = plane.map_read().expect("mapped");
                (file_of(fd), plane.plane_offset(), map[..64].to_vec())
            })
            .collect()
    };
    sink.push(first).expect("pushed");
    let sample = out
        .try_pull_sample(gst::ClockTime::from_seconds(5))
        .expect("a sample");
    let buffer = sample.buffer().expect("a buffer");
    // NV12 in one memfd is one memory (the planes at the meta's offsets),
    // NV12M's two memfds two.
    let memories = if name == "NV12M" { 2 } else { 1 };
    assert_eq!(buffer.n_memory(), memories, "one memory per buffer");
    let meta = buffer.meta::<gst_video::VideoMeta>().expect("a video meta");
    let offsets = meta.offset().to_vec();
    for (m, (file, start, _)) in planes.iter().enumerate().take(memories) {
        let memory = buffer.peek_memory(m);
        // A memfd is fd memory over a dup of the frame's own fd, not a
        // dma-buf and not a wrapped map.
        assert!(!memory.is_memory_type::<DmaBufMemory>(), "{name}");
        let fd = memory
            .downcast_memory_ref::<FdMemory>()
            .expect("fd memory")
            .fd();
        assert_eq!(file_of(fd), *file, "{name}: the frame's own file");
        assert_eq!(memory.offset(), *start, "{name}: from its first plane");
    }
    // GStreamer maps the file itself: the frame's bytes, at the meta's offsets.
    let map = buffer.map_readable().expect("mapped");
    for (i, (_, _, bytes)) in planes.iter().enumerate() {
        assert_eq!(
            &map[offsets[i]..offsets[i] + 64],
            &bytes[..],
            "{name} plane {i}"
        );
    }
    drop(map);
    let stats = sink.stats();
    assert_eq!(stats.outstanding, 1, "the sample holds the frame");
    assert_eq!(
        (
            stats.fd_memories,
            stats.dmabuf_memories,
            stats.mapped_memories
        ),
        (memories as u64, 0, 0)
    );
    drop(sample);
    // The appsink keeps its last pulled sample until it is disposed, even
    // stopped: the sink takes that lease back when it stops.
    let stats = sink.finish().expect("EOS");
    assert_eq!((stats.outstanding, stats.taken_back), (0, 1));
    drop((out, sink));
    let all: Vec<Frame> = (0..3).map(|_| next(&mut src)).collect();
    assert_eq!(all.len(), 3, "every buffer back at the source");
}

#[test]
fn frames_without_an_fd_are_lent_as_their_maps() {
    let _serial = serial();
    // videotestsrc's system memory, wrapped as a tensor without an fd.
    let mut src = zerocam_capture::GstSource::new(
        "videotestsrc ! video/x-raw,format=NV12,width=320,height=240",
    )
    .expect("the source");
    let first = src.next_frame(Duration::from_secs(5)).expect("a frame");
    assert!(first.tensor().fd().is_none());
    let mut sink = FrameSink::launch("videoconvert ! fakesink sync=false", &first).expect("starts");
    sink.push(first).expect("pushed");
    for _ in 1..5 {
        sink.push(src.next_frame(Duration::from_secs(5)).expect("a frame"))
            .expect("pushed");
    }
    let stats = sink.finish().expect("EOS");
    assert_eq!(
        (
            stats.lent,
            stats.mapped_memories,
            stats.fd_memories,
            stats.dmabuf_memories
        ),
        (5, 5, 0, 0)
    );
    assert_eq!(stats.outstanding, 0);
}

#[test]
fn jpegenc_makes_one_jpeg_per_frame() {
    let _serial = serial();
    assert_eq!(find(Codec::Mjpeg).as_deref(), Some("jpegenc"));
    let mut src = pattern("YUYV", 3);
    let first = next(&mut src);
    let config = EncoderConfig::new(Codec::Mjpeg);
    let mut enc = GstVideoEncoder::open("jpegenc", &config, &first).expect("opens");
    let mut packets = enc.encode(first).expect("encodes");
    for _ in 1..5 {
        packets.extend(enc.encode(next(&mut src)).expect("encodes"));
    }
    packets.extend(enc.finish().expect("drains"));
    assert_eq!(packets.len(), 5);
    assert!(packets
        .iter()
        .all(|p| p.keyframe && p.data.starts_with(&[0xff, 0xd8])));
    assert_eq!(enc.describe(), "jpegenc (GStreamer)");
}

#[test]
fn a_missing_element_is_named() {
    let _serial = serial();
    let mut src = pattern("NV12", 2);
    let first = next(&mut src);
    let err = FrameSink::launch("zerocamnosuchelement ! fakesink", &first).unwrap_err();
    match err {
        GstEncodeError::MissingElement { element, .. } => {
            assert_eq!(element, "zerocamnosuchelement")
        }
        e => panic!("not MissingElement: {e}"),
    }
    let config = EncoderConfig::new(Codec::H264);
    let err = GstVideoEncoder::open("zerocamnosuchenc", &config, &first).unwrap_err();
    assert!(
        matches!(err, GstEncodeError::MissingElement { .. }),
        "{err}"
    );
}

#[test]
fn a_pipeline_that_cannot_take_the_format_is_not_negotiated() {
    let _serial = serial();
    let mut src = pattern("NV12", 3);
    let first = next(&mut src);
    let mut sink =
        FrameSink::launch("video/x-raw,format=I420 ! fakesink", &first).expect("it parses");
    let mut error = sink.push(first).err();
    for _ in 0..20 {
        if error.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
        error = sink.push(next(&mut src)).err();
    }
    let error = error.or_else(|| sink.finish().err()).expect("an error");
    assert!(
        matches!(error, GstEncodeError::NotNegotiated { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("not-negotiated"), "{error}");
    drop(sink);
    let all: Vec<Frame> = (0..3).map(|_| next(&mut src)).collect();
    assert_eq!(all.len(), 3, "every buffer back after the error");
}

#[test]
fn an_appsrc_the_caller_made_takes_frames() {
    let _serial = serial();
    let mut src = pattern("NV12", 3);
    let first = next(&mut src);
    let pipeline = gst::parse::launch("appsrc name=mine ! videoconvert ! fakesink")
        .expect("parses")
        .downcast::<gst::Pipeline>()
        .expect("a pipeline");
    let appsrc = pipeline
        .by_name("mine")
        .and_then(|e| e.downcast::<gst_app::AppSrc>().ok())
        .expect("the appsrc");
    let mut sink = FrameSink::new(appsrc, &first).expect("set up");
    pipeline.set_state(gst::State::Playing).expect("plays");
    sink.push(first).expect("pushed");
    for _ in 1..10 {
        sink.push(next(&mut src)).expect("pushed");
    }
    sink.finish().expect("EOS sent");
    let bus = pipeline.bus().expect("a bus");
    let msg = bus
        .timed_pop_filtered(
            gst::ClockTime::from_seconds(10),
            &[gst::MessageType::Eos, gst::MessageType::Error],
        )
        .expect("EOS");
    assert!(zerocam_encode::gst::error_of(&msg).is_none(), "{msg:?}");
    pipeline.set_state(gst::State::Null).expect("stops");
    let stats = sink.stats();
    assert_eq!((stats.pushed, stats.lent, stats.outstanding), (10, 10, 0));
}

#[test]
fn a_pipeline_that_does_not_keep_up_drops_counted_frames() {
    let _serial = serial();
    let mut src = pattern("NV12", 8);
    let first = next(&mut src);
    // An appsink nobody pulls from, one buffer deep: the stream stalls.
    let config = SinkConfig {
        max_queued: 1,
        wait: Duration::from_millis(100),
        ..SinkConfig::default()
    };
    let mut sink = FrameSink::launch_with(
        "appsink max-buffers=1 drop=false sync=false",
        &first,
        config,
    )
    .expect("starts");
    sink.push(first).expect("pushed");
    let mut dropped = 0;
    for _ in 0..6 {
        match sink.push(next(&mut src)) {
            Ok(()) => {}
            Err(GstEncodeError::NotKeepingUp { queued, .. }) => {
                assert!(queued >= 1);
                dropped += 1;
            }
            Err(e) => panic!("not NotKeepingUp: {e}"),
        }
    }
    let stats = sink.stats();
    assert!(dropped >= 1 && stats.dropped == dropped, "{stats:?}");
    assert_eq!(stats.pushed + stats.dropped, 7);
    // Dropped frames went back at once; the rest when the pipeline stops.
    assert_eq!(stats.outstanding, stats.pushed);
    drop(sink);
    let all: Vec<Frame> = (0..8).map(|_| next(&mut src)).collect();
    assert_eq!(all.len(), 8);
}

/// NAL unit types of an Annex-B access unit.
fn nal_types(au: &[u8]) -> Vec<u8> {
    let mut types = Vec::new();
    let mut i = 0;
    while i + 3 < au.len() {
        if au[i..i + 3] == [0, 0, 1] {
            types.push(au[i + 3] & 0x1f);
            i += 3;
        } else {
            i += 1;
        }
    }
    types
}

#[test]
fn x264enc_makes_one_access_unit_per_frame() {
    let _serial = serial();
    assert!(find(Codec::H264).is_some(), "x264enc is installed");
    let mut src = pattern("NV12", 3);
    let first = next(&mut src);
    let mut config = EncoderConfig::new(Codec::H264);
    config.bitrate = Some(500_000);
    config.gop = Some(10);
    let mut enc = GstVideoEncoder::open("x264enc", &config, &first).expect("opens");
    let mut packets = enc.encode(first).expect("encodes");
    for _ in 1..30 {
        let frame = next(&mut src);
        packets.extend(enc.encode(frame).expect("encodes"));
    }
    packets.extend(enc.finish().expect("drains"));
    assert_eq!(packets.len(), 30);
    let types = nal_types(&packets[0].data);
    assert!(packets[0].keyframe);
    assert!(
        types.contains(&7) && types.contains(&8) && types.contains(&5),
        "{types:?}"
    );
    // x264 may start a GOP early (scene cuts) but never runs past 10.
    let keys: Vec<usize> = (0..30).filter(|&i| packets[i].keyframe).collect();
    assert!(
        keys.windows(2).all(|w| w[1] - w[0] <= 10),
        "GOP 10: {keys:?}"
    );
    assert!(
        30 - keys[keys.len() - 1] <= 10 && keys.len() < 30,
        "GOP 10: {keys:?}"
    );
    assert!(packets
        .windows(2)
        .all(|w| w[0].pts < w[1].pts && w[0].sequence < w[1].sequence));
    let stats = enc.stats();
    assert_eq!((stats.frames_in, stats.packets_out), (30, 30));
    // NV12 in one memfd: one memory a frame, nothing copied.
    assert_eq!((stats.imports, stats.copied_frames), (30, 0));
    assert_eq!(enc.sink().stats().outstanding, 0);
}

/// No frame held back: x264enc encodes on its own streaming thread, and
/// each frame's access unit is out of `encode` for that frame, not of the
/// next frame's call, counted over 60 frames at 1280x720.
#[test]
fn each_frames_packet_leaves_with_its_own_encode_call() {
    let _serial = serial();
    let mut config = PatternConfig::new(format("NV12"), 1280, 720);
    config.buffers = 3;
    let mut src = PatternSource::new(config).expect("the pattern source");
    let first = next(&mut src);
    let mut enc =
        GstVideoEncoder::open("x264enc", &EncoderConfig::new(Codec::H264), &first).expect("opens");
    let mut late = Vec::new();
    let mut first = Some(first);
    for _ in 0..60 {
        let frame = first.take().unwrap_or_else(|| next(&mut src));
        let sequence = frame.sequence();
        let packets = enc.encode(frame).expect("encodes");
        let out: Vec<u32> = packets.iter().map(|p| p.sequence).collect();
        if out != [sequence] {
            late.push((sequence, out));
        }
    }
    assert!(
        late.is_empty(),
        "frames whose packet was not out of their own call: {late:?}"
    );
    assert!(enc.finish().expect("drains").is_empty());
}

/// A keyframe on request, mid-GOP: x264enc makes the next frame it takes
/// an IDR, the parser puts SPS and PPS before it, and the GOP goes on.
#[test]
fn a_requested_keyframe_is_the_next_frame() {
    let _serial = serial();
    let mut src = pattern("NV12", 3);
    let first = next(&mut src);
    let mut config = EncoderConfig::new(Codec::H264);
    config.gop = Some(100);
    // No scene cuts: the pattern's frames would start GOPs of their own.
    let mut enc =
        GstVideoEncoder::open("x264enc option-string=scenecut=0", &config, &first).expect("opens");
    let mut packets = enc.encode(first).expect("encodes");
    for i in 1..20 {
        if i == 10 {
            assert!(enc.request_keyframe(), "x264enc takes the request");
        }
        packets.extend(enc.encode(next(&mut src)).expect("encodes"));
    }
    packets.extend(enc.finish().expect("drains"));
    assert_eq!(packets.len(), 20);
    let keys: Vec<usize> = (0..20).filter(|&i| packets[i].keyframe).collect();
    assert_eq!(keys, [0, 10]);
    let types = nal_types(&packets[10].data);
    assert!(
        types.contains(&7) && types.contains(&8) && types.contains(&5),
        "{types:?}"
    );
}

#[test]
fn three_hundred_frames_leave_no_fds_behind() {
    let _serial = serial();
    let mut src = pattern("YUYV", 3);
    let first = next(&mut src);
    let mut sink = FrameSink::launch("videoconvert ! fakesink sync=false", &first).expect("starts");
    sink.push(first).expect("pushed");
    let mut at_50 = 0;
    for i in 1..300 {
        if i == 50 {
            at_50 = settled_fds(&sink);
        }
        sink.push(next(&mut src)).expect("pushed");
    }
    let at_300 = settled_fds(&sink);
    assert_eq!(at_50, at_300, "fds open after 50 and after 300 frames");
    let stats = sink.finish().expect("EOS");
    assert_eq!((stats.pushed, stats.outstanding), (300, 0));
}

fn tempdir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "zerocam-gst-sink-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    dir
}
