//! The V4L2 memory-to-memory encoder in the kernel lab (`cargo lab -p
//! zerocam-encode --test lab_m2m`): vivid frames (NV12 on the single-planar
//! `/dev/video0`, NV12 and NV12M on the multi-planar `/dev/video1`, in both
//! buffer modes) into vicodec's FWHT encoder by dma-buf import, its packets
//! through vicodec's stateful decoder, the pictures compared with the
//! captured ones (PSNR), the imports, copies, drain and fds counted.
//! vicodec's nodes come from the lab's `ZEROCAM_LAB_VICODEC_ENC` and
//! `ZEROCAM_LAB_VICODEC_DEC`.
#![cfg(feature = "lab")]
#![allow(missing_docs, clippy::unwrap_used)] // tests may panic

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use zerocam_capture::v4l2::m2m::{M2mConfig, M2mDecoder, OutputMemory};
use zerocam_capture::{
    BufferMode, Device, Frame, FrameSource, PatternConfig, PatternSource, Stream, StreamConfig,
};
use zerocam_encode::m2m::M2mVideoEncoder;
use zerocam_encode::{Codec, VideoEncoder};
use zerocam_test_support::lab::{fd_count, fd_list, lock};
use zerocam_test_support::vivid::format;

const W: u32 = 640; // vicodec's smallest: 640x360
/// vicodec codes heights in multiples of 16 (360 is coded as 368): frames
/// of such a height (vivid's 640x480) import as they are; 360 is copied
/// into padded buffers (the forced-copy and pattern tests take it).
const H: u32 = 480;
const H_UNALIGNED: u32 = 360;
const WAIT: Duration = Duration::from_secs(10);
/// Frames decoded and compared at the start of each run.
const CHECKED: usize = 20;

fn vicodec(var: &str) -> PathBuf {
    let p = std::env::var(var)
        .unwrap_or_else(|_| panic!("{var} unset: the lab loads vicodec and names its nodes"));
    PathBuf::from(p)
}

/// The Y and CbCr planes of an NV12 frame, rows packed.
fn nv12_planes(frame: &Frame) -> (Vec<u8>, Vec<u8>) {
    let t = frame.tensor();
    let mut out = Vec::new();
    for p in 0..2 {
        let plane = t.plane(p).unwrap();
        let (rows, row) = (plane.shape()[0], plane.shape()[1]);
        let stride = plane.stride(0).unwrap();
        let m = plane.map_read().unwrap();
        let mut v = Vec::with_capacity(rows * row);
        for r in 0..rows {
            v.extend_from_slice(&m[r * stride..r * stride + row]);
        }
        out.push(v);
    }
    let uv = out.pop().unwrap();
    (out.pop().unwrap(), uv)
}

fn psnr(a: &[u8], b: &[u8]) -> f64 {
    assert_eq!(a.len(), b.len());
    let se: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| (f64::from(*x) - f64::from(*y)).powi(2))
        .sum();
    let mse = se / a.len() as f64;
    if mse == 0.0 {
        99.0
    } else {
        10.0 * (255.0 * 255.0 / mse).log10()
    }
}

fn micros(t: Duration) -> u64 {
    t.as_secs() * 1_000_000 + u64::from(t.subsec_micros())
}

/// The worst PSNRs of the pictures compared so far.
struct Scores {
    y: f64,
    uv: f64,
    compared: usize,
}

/// What a run measured.
#[derive(Debug)]
struct Run {
    frames: u64,
    psnr_y: f64,
    psnr_uv: f64,
    fds_before: usize,
    fds_after: usize,
    elapsed: Duration,
    memory: OutputMemory,
    stats: zerocam_encode::EncodeStats,
    last_or_eos: bool,
}

/// Encodes `n` frames of `source` on vicodec, decodes the first
/// [`CHECKED`] packets and compares them with copies of the captured planes.
fn run(source: &mut dyn FrameSource, n: u64, config: impl FnOnce(&mut M2mConfig)) -> Run {
    let enc_path = vicodec("ZEROCAM_LAB_VICODEC_ENC");
    let dec_path = vicodec("ZEROCAM_LAB_VICODEC_DEC");
    let height = source.stream_format().height;
    let first = source.next_frame(WAIT).unwrap();
    let mut c = M2mConfig::new(zerocam_capture::FourCc(*b"FWHT"));
    config(&mut c);
    let mut enc = M2mVideoEncoder::open_with(&enc_path, Codec::Fwht, c, &first).unwrap();
    println!("{}", enc.describe());
    let mut dec = M2mDecoder::open(
        &dec_path,
        zerocam_capture::FourCc(*b"FWHT"),
        zerocam_capture::FourCc(*b"NV12"),
        W,
        height,
    )
    .unwrap();
    let mut refs: HashMap<u64, (Vec<u8>, Vec<u8>)> = HashMap::new();
    let mut scores = Scores {
        y: f64::MAX,
        uv: f64::MAX,
        compared: 0,
    };
    let compare = |pics: Vec<zerocam_capture::v4l2::m2m::DecodedPicture>,
                   refs: &mut HashMap<u64, (Vec<u8>, Vec<u8>)>,
                   scores: &mut Scores| {
        for p in pics {
            let Some((y, uv)) = refs.remove(&micros(p.timestamp)) else {
                continue;
            };
            let bpl = p.bytes_per_line as usize;
            let (w, h) = (W as usize, height as usize);
            let mut dy = Vec::with_capacity(w * h);
            for r in 0..h {
                dy.extend_from_slice(&p.data[r * bpl..r * bpl + w]);
            }
            let mut duv = Vec::with_capacity(w * h / 2);
            for r in 0..h / 2 {
                let o = bpl * p.height as usize + r * bpl;
                duv.extend_from_slice(&p.data[o..o + w]);
            }
            scores.y = scores.y.min(psnr(&y, &dy));
            scores.uv = scores.uv.min(psnr(&uv, &duv));
            scores.compared += 1;
        }
    };
    let started = Instant::now();
    let mut fds_before = 0;
    let mut frame = Some(first);
    let mut decoded_packets = 0;
    for i in 0..n {
        let f = frame
            .take()
            .unwrap_or_else(|| source.next_frame(WAIT).unwrap());
        if (i as usize) < CHECKED {
            refs.insert(micros(f.timestamp()), nv12_planes(&f));
        }
        if i == 50 {
            fds_before = fd_count();
        }
        let packets = enc.encode(f).unwrap();
        for p in packets {
            assert!(!p.data.is_empty());
            if decoded_packets < CHECKED {
                decoded_packets += 1;
                let pics = dec.decode(&p.data, p.pts).unwrap();
                compare(pics, &mut refs, &mut scores);
            }
        }
    }
    let rest = enc.finish().unwrap();
    for p in rest {
        if decoded_packets < CHECKED {
            decoded_packets += 1;
            let pics = dec.decode(&p.data, p.pts).unwrap();
            compare(pics, &mut refs, &mut scores);
        }
    }
    while scores.compared < CHECKED {
        let pics = dec.wait_picture(WAIT).unwrap();
        compare(pics, &mut refs, &mut scores);
    }
    let fds_after = fd_count();
    let s = enc.inner().stats();
    Run {
        frames: n,
        psnr_y: scores.y,
        psnr_uv: scores.uv,
        fds_before,
        fds_after,
        elapsed: started.elapsed(),
        memory: enc.inner().memory(),
        stats: enc.stats(),
        last_or_eos: s.drains == 1 && (s.last_flags == 1 || s.eos_events == 1),
    }
}

fn vivid(path: &str, name: &str, mode: BufferMode, height: u32) -> Stream {
    let mut d = Device::open(path).unwrap();
    d.set_menu("Test Pattern", "75% Colorbar").unwrap();
    d.set_format(format(name), W, height).unwrap();
    d.set_frame_rate(60.0).unwrap();
    let config = StreamConfig {
        mode,
        buffers: 4,
        hold: 3,
        ..Default::default()
    };
    Stream::new(d, config).unwrap()
}

fn check(path: &str, name: &str, mode: BufferMode, n: u64) {
    let mut s = vivid(path, name, mode, H);
    let r = run(&mut s, n, |_| {});
    let st = s.stats();
    println!(
        "{path} {name} {}: {r:?}; capture buffers {} x planes {}",
        mode.name(),
        st.buffers,
        st.planes
    );
    assert!(r.psnr_y >= 30.0 && r.psnr_uv >= 30.0, "{r:?}");
    assert!(r.last_or_eos, "the drain ends on LAST or EOS: {r:?}");
    assert!(r.elapsed < Duration::from_secs(300), "{r:?}");
    assert_eq!(r.stats.frames_in, r.frames);
    assert_eq!(r.fds_before, r.fds_after, "fds grew: {:?}", fd_list());
    if name == "NV12" {
        assert_eq!(r.memory, OutputMemory::Import, "{r:?}");
    }
    match r.memory {
        OutputMemory::Import => {
            assert_eq!(r.stats.imports, (st.buffers * st.planes) as u64, "{r:?}");
            assert_eq!(r.stats.copied_frames, 0, "{r:?}");
        }
        OutputMemory::Copy => {
            // vicodec has no two-buffer NV12M: NV12M frames are copied, said and counted.
            assert_eq!(r.stats.copied_frames, r.frames, "{r:?}");
            assert_eq!(r.stats.imports, 0, "{r:?}");
        }
    }
}

#[test]
fn nv12_single_planar_mmap_is_imported_once_per_buffer() {
    let _l = lock();
    check("/dev/video0", "NV12", BufferMode::Mmap, 1000);
}

#[test]
fn nv12_single_planar_dmabuf_pool_is_imported_once_per_buffer() {
    let _l = lock();
    check("/dev/video0", "NV12", BufferMode::DmaBuf, 120);
}

#[test]
fn nv12_multi_planar_api_both_modes() {
    let _l = lock();
    check("/dev/video1", "NV12", BufferMode::Mmap, 120);
    check("/dev/video1", "NV12", BufferMode::DmaBuf, 120);
}

#[test]
fn nv12m_both_modes() {
    let _l = lock();
    check("/dev/video1", "NV12M", BufferMode::Mmap, 120);
    check("/dev/video1", "NV12M", BufferMode::DmaBuf, 120);
}

#[test]
fn forced_copy_copies_every_frame() {
    let _l = lock();
    let mut s = vivid("/dev/video0", "NV12", BufferMode::Mmap, H_UNALIGNED);
    let r = run(&mut s, 100, |c| c.force_copy = true);
    println!("forced copy: {r:?}");
    assert_eq!(r.memory, OutputMemory::Copy);
    assert_eq!((r.stats.copied_frames, r.stats.imports), (100, 0), "{r:?}");
    assert!(r.psnr_y >= 30.0 && r.psnr_uv >= 30.0, "{r:?}");
}

#[test]
fn pattern_frames_without_a_dmabuf_are_copied() {
    let _l = lock();
    let mut s = PatternSource::new(PatternConfig::new(format("NV12"), W, H_UNALIGNED)).unwrap();
    let r = run(&mut s, 60, |_| {});
    println!("pattern source: {r:?}");
    assert_eq!(r.memory, OutputMemory::Copy);
    assert_eq!(r.stats.copied_frames, 60, "{r:?}");
    assert!(r.psnr_y >= 30.0 && r.psnr_uv >= 30.0, "{r:?}");
}

/// The stamped pattern (`pattern:stamp`) through vicodec's encoder and back
/// through its stateful decoder, a decoder zerocam did not write: every
/// picture's stamp is read, the sequences one after another, each picture
/// at least 35 dB from the source's own picture of that frame. And no
/// frame held back: each frame's packet comes out of the `encode` call that
/// took the frame, counted over every frame. (vicodec encodes inside the
/// `QBUF` that completes its job, so here the packet is ready even without
/// `encode`'s wait: the count guards the path, the picture is the check.)
#[test]
fn stamped_frames_decode_to_their_own_picture_and_none_is_held_back() {
    use zerocam_test_support::picture::Pictures;
    let _l = lock();
    const N: u32 = 60;
    let config = PatternConfig {
        stamp: true,
        ..PatternConfig::new(format("NV12"), W, H)
    };
    let mut source = PatternSource::new(config.clone()).unwrap();
    let reference = PatternSource::new(config).unwrap();
    let first = source.next_frame(WAIT).unwrap();
    let c = M2mConfig::new(zerocam_capture::FourCc(*b"FWHT"));
    let enc_path = vicodec("ZEROCAM_LAB_VICODEC_ENC");
    let mut enc = M2mVideoEncoder::open_with(&enc_path, Codec::Fwht, c, &first).unwrap();
    let mut dec = M2mDecoder::open(
        &vicodec("ZEROCAM_LAB_VICODEC_DEC"),
        zerocam_capture::FourCc(*b"FWHT"),
        zerocam_capture::FourCc(*b"NV12"),
        W,
        H,
    )
    .unwrap();
    let (w, h) = (W as usize, H as usize);
    // Each decoded picture's luma, rows packed.
    let mut lumas: Vec<Vec<u8>> = Vec::new();
    let luma = |pictures: Vec<zerocam_capture::v4l2::m2m::DecodedPicture>| {
        pictures.into_iter().map(move |p| {
            let bpl = p.bytes_per_line as usize;
            (0..h)
                .flat_map(|r| p.data[r * bpl..r * bpl + w].iter().copied())
                .collect::<Vec<u8>>()
        })
    };
    let mut frame = Some(first);
    let mut held_back = Vec::new();
    for _ in 0..N {
        let f = frame
            .take()
            .unwrap_or_else(|| source.next_frame(WAIT).unwrap());
        let sequence = f.sequence();
        let packets = enc.encode(f).unwrap();
        if !packets.iter().any(|p| p.sequence == sequence) {
            held_back.push(sequence);
        }
        for p in packets {
            lumas.extend(luma(dec.decode(&p.data, p.pts).unwrap()));
        }
    }
    for p in enc.finish().unwrap() {
        lumas.extend(luma(dec.decode(&p.data, p.pts).unwrap()));
    }
    let deadline = Instant::now() + WAIT;
    while lumas.len() < N as usize && Instant::now() < deadline {
        lumas.extend(luma(dec.wait_picture(WAIT).unwrap()));
    }
    let pictures = Pictures::check(&lumas, &reference, w, h);
    let (read, unreadable, worst) = (
        pictures.sequences(),
        pictures.unreadable,
        pictures.min_psnr(),
    );
    println!(
        "vicodec, stamped: {} pictures, worst PSNR {worst:.1} dB, held back {held_back:?}",
        read.len()
    );
    assert_eq!(
        held_back,
        Vec::<u32>::new(),
        "frames whose packet left with a later call"
    );
    assert_eq!(unreadable, 0, "unreadable stamps; read {read:?}");
    assert_eq!(read, (0..N).collect::<Vec<_>>(), "every frame, in order");
    assert!(worst >= 35.0, "PSNR {worst:.1} dB");
}

#[test]
fn find_names_the_lab_encoder() {
    let _l = lock();
    let found = zerocam_encode::m2m::find(Codec::Fwht).unwrap();
    assert_eq!(found, vicodec("ZEROCAM_LAB_VICODEC_ENC"));
    assert!(zerocam_encode::m2m::find(Codec::Hevc).is_none());
    let _ = Path::new("/");
}

#[test]
fn gop_changes_while_streaming_and_a_missing_bitrate_control_is_ignored() {
    let _l = lock();
    let mut s = vivid("/dev/video0", "NV12", BufferMode::Mmap, H);
    let first = s.next_frame(WAIT).unwrap();
    let c = M2mConfig::new(zerocam_capture::FourCc(*b"FWHT"));
    let path = vicodec("ZEROCAM_LAB_VICODEC_ENC");
    let mut enc = M2mVideoEncoder::open_with(&path, Codec::Fwht, c, &first).unwrap();
    let mut packets = enc.encode(first).unwrap().len();
    for i in 0..30 {
        if i == 10 {
            // vicodec has V4L2_CID_MPEG_VIDEO_GOP_SIZE, and no bit rate control.
            assert!(
                enc.inner_mut().set_gop(5).unwrap(),
                "GOP set while streaming"
            );
            assert!(!enc.inner_mut().set_bitrate(1_000_000).unwrap(), "ignored");
        }
        packets += enc.encode(s.next_frame(WAIT).unwrap()).unwrap().len();
    }
    packets += enc.finish().unwrap().len();
    assert_eq!(packets, 31);
    assert_eq!(enc.stats().copied_frames, 0);
}
