//! Reading back the video files tests write, through `ffprobe` (a test
//! requirement: Debian's `ffmpeg`, which `tests/setup` installs).

use std::path::Path;
use std::process::Command;

/// What `ffprobe -count_frames` says of a file's first video stream.
#[derive(Debug, Clone, PartialEq)]
pub struct VideoProbe {
    /// The codec's ffmpeg name (`h264`, `mjpeg`).
    pub codec: String,
    /// Width in pixels.
    pub width: u64,
    /// Height in pixels.
    pub height: u64,
    /// Frames decoded (`nb_read_frames`).
    pub frames: u64,
    /// The stream's duration in seconds (0 where the container has none).
    pub duration: f64,
}

/// Runs `ffprobe` on `path`'s first video stream, decoding every frame.
///
/// # Panics
/// Where ffprobe cannot run ("install ffmpeg") or fails on the file (that
/// is the check), with what it said.
#[allow(clippy::unwrap_used)] // a test helper: failing loudly is the point
pub fn ffprobe(path: &Path) -> VideoProbe {
    let text = run_ffprobe(
        &[
            "-count_frames",
            "-select_streams",
            "v:0",
            "-show_entries",
            "stream=codec_name,width,height,nb_read_frames,duration",
            "-of",
            "default=noprint_wrappers=1",
        ],
        path,
    );
    let get = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .unwrap_or("0")
            .to_string()
    };
    VideoProbe {
        codec: get("codec_name"),
        width: get("width").parse().unwrap_or(0),
        height: get("height").parse().unwrap_or(0),
        frames: get("nb_read_frames").parse().unwrap_or(0),
        duration: get("duration").parse().unwrap_or(0.0),
    }
}

/// Whether each packet of `path`'s first video stream is a keyframe, as
/// ffprobe's parser flags them (`K` in `packet=flags`), in stream order.
///
/// # Panics
/// Where ffprobe cannot run ("install ffmpeg") or fails on the file.
pub fn ffprobe_keyframes(path: &Path) -> Vec<bool> {
    let args = [
        "-select_streams",
        "v:0",
        "-show_entries",
        "packet=flags",
        "-of",
        "csv=p=0",
    ];
    run_ffprobe(&args, path)
        .lines()
        .map(|flags| flags.starts_with('K'))
        .collect()
}

/// ffprobe's standard output for `args` on `path` (errors only on stderr).
///
/// # Panics
/// Where ffprobe cannot run ("install ffmpeg") or fails on the file.
fn run_ffprobe(args: &[&str], path: &Path) -> String {
    let out = Command::new("ffprobe")
        .args(["-v", "error"])
        .args(args)
        .arg(path)
        .output()
        .unwrap_or_else(|e| panic!("ffprobe could not run ({e}): install ffmpeg"));
    assert!(
        out.status.success(),
        "ffprobe {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
