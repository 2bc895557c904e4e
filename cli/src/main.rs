//! `zerocam`: list cameras, describe one, capture a snapshot, benchmark the
//! zero-copy path, or probe tensor memory. With no device argument and no
//! camera present, every subcommand runs on the built-in pattern source and
//! says so on its first line.

#![deny(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use zerocam_capture::capture_devices;
use zerocam_capture::format::parse_size;
use zerocam_capture::open::SourceSpec;
use zerocam_capture::zenoh_source::ZenohOptions;
use zerocam_capture::{BufferMode, CaptureFormat};
use zerocam_cli::rtsp::RtspServe;
use zerocam_cli::view::ViewServe;
use zerocam_cli::zenoh::ZenohServe;
use zerocam_cli::{bench, capture, list, probe, record, serve, CliError};

#[derive(Parser)]
#[command(
    name = "zerocam",
    version,
    about = "Zero-copy camera capture: list, info, capture, record, bench, serve, view, probe, doctor"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

// Parsed once per run: `serve`'s many flags make its variant the largest,
// which costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Every V4L2 capture device as a tree, DMA heaps, GPU import support.
    List,
    /// One device (the first camera, or the pattern source) with its controls.
    Info {
        /// Device node, e.g. /dev/video0.
        device: Option<String>,
    },
    /// Capture frames to a snapshot of the last one (out.png, out.jpg) or to
    /// every frame's raw planes (out.raw, out.yuv); other extensions are refused.
    Capture {
        #[command(flatten)]
        source: SourceArgs,
        /// Output file: .png, .jpg/.jpeg or .raw/.yuv.
        #[arg(short, long)]
        output: PathBuf,
        /// JPEG quality, 1 to 100 (.jpg/.jpeg only).
        #[arg(long, default_value_t = 85)]
        quality: i64,
    },
    /// Record frames to a video file (.mp4, .h264, .mjpeg, .fwht): on a hardware
    /// encoder when one is present, else OpenH264; a status line a second;
    /// Ctrl-C stops and finishes the file.
    Record {
        #[command(flatten)]
        source: SourceArgs,
        /// Output file: .mp4 (H.264), or a bare stream: .h264, .hevc, .mjpeg, .fwht.
        #[arg(short, long)]
        output: PathBuf,
        /// Codec: h264, hevc, mjpeg or fwht (default: the one the file holds).
        #[arg(long)]
        codec: Option<zerocam_encode::Codec>,
        /// Encoder: auto, software, /dev/videoN or gst:ELEMENT.
        #[arg(long, default_value = "auto")]
        encoder: zerocam_encode::EncoderChoice,
        /// Target bit rate, bits per second (default: the encoder's).
        #[arg(long)]
        bitrate: Option<u32>,
        /// Frames between keyframes (default: the encoder's).
        #[arg(long)]
        gop: Option<u32>,
        /// Seconds to record (default: until --frames, or Ctrl-C).
        #[arg(long, conflicts_with = "frames")]
        seconds: Option<f64>,
    },
    /// Measure fps, zerocam's per-frame overhead, imports vs cache hits, drops.
    Bench {
        #[command(flatten)]
        source: SourceArgs,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Lend a camera's frames to other processes over a Unix socket
    /// (subscribers open `unix:SOCKET`); prints a status line a second.
    Serve {
        #[command(flatten)]
        source: SourceArgs,
        /// The socket path; optional when systemd passes a listening socket
        /// (LISTEN_FDS=1, fd 3), which is then used instead.
        #[arg(long)]
        socket: Option<PathBuf>,
        /// The socket file's mode, octal (when serve binds it).
        #[arg(long, default_value = "0660", value_parser = parse_mode)]
        mode: u32,
        /// Allow this user id too (repeatable; the publisher's own uid and root always are).
        #[arg(long = "allow-uid")]
        allow_uid: Vec<u32>,
        /// Allow members of this group id (repeatable).
        #[arg(long = "allow-gid")]
        allow_gid: Vec<u32>,
        /// How long a client may hold a frame, ms; then it is taken back.
        #[arg(long, default_value_t = 2000)]
        lease_ms: u64,
        /// The most frames one client holds at once.
        #[arg(long, default_value_t = 2)]
        max_leases: u16,
        /// The most clients at once (only clients that said Hello count).
        #[arg(long, default_value_t = 32)]
        max_clients: usize,
        /// The most clients of one uid (default: half of --max-clients).
        #[arg(long)]
        max_clients_per_uid: Option<usize>,
        /// The most connections waiting for their Hello; past it the oldest
        /// of the uid with the most is closed.
        #[arg(long, default_value_t = 32)]
        max_pending: usize,
        /// How long a connection has to say Hello, ms (and any message to
        /// arrive whole); then it is closed.
        #[arg(long, default_value_t = 1000)]
        hello_timeout_ms: u64,
        /// On SIGTERM/SIGINT/SIGHUP, how long clients have to release their
        /// frames, ms (a second signal exits at once).
        #[arg(long, default_value_t = 500)]
        drain_ms: u64,
        /// Lend read-write fds where the camera cannot give read-only ones
        /// (libcamera's buffers): any client could then write into frames the
        /// others read. Without it such a camera is refused.
        #[arg(long)]
        writable_fds: bool,
        /// Exit when the last client leaves (after one came).
        #[arg(long)]
        once: bool,
        /// Publish on Zenoh as ROS 2 messages (PREFIX/jpeg, PREFIX/camera_info),
        /// with or without --socket (feature zenoh; docs/network.md).
        #[arg(long)]
        zenoh: bool,
        /// The Zenoh key prefix.
        #[arg(long, default_value = "rt/camera", requires = "zenoh")]
        topic: String,
        /// The messages' frame_id.
        #[arg(long, default_value = "camera", requires = "zenoh")]
        frame_id: String,
        /// JPEG quality of PREFIX/jpeg and of the live view's stream, 1 to 100.
        #[arg(long, default_value_t = 85)]
        quality: i64,
        /// The encoder of PREFIX/h264: auto, software, /dev/videoN, gst:ELEMENT,
        /// or none (no H.264 topic); the one encoder of --rtsp too.
        #[arg(long, default_value = "auto", requires = "zenoh")]
        h264: String,
        /// Frames between H.264 keyframes (Zenoh's PREFIX/h264 and --rtsp).
        #[arg(long, default_value_t = 30)]
        gop: u32,
        /// Serve the live view too (zerocam view) at ADDR:PORT or PORT
        /// (default 127.0.0.1:8080; docs/view.md).
        #[arg(long, num_args = 0..=1, default_missing_value = view_addr::DEFAULT)]
        http: Option<String>,
        /// A token the live view's page and endpoints want (?token=).
        #[arg(long, requires = "http")]
        token: Option<String>,
        /// Serve H.264 over RTSP too at ADDR:PORT/PATH (PATH default /cam;
        /// a bare PORT listens on 127.0.0.1), e.g. 127.0.0.1:8554/cam;
        /// encoded only while a client plays (feature gstreamer).
        #[arg(long, value_name = "ADDR:PORT/PATH")]
        rtsp: Option<String>,
        /// The encoder of --rtsp: auto, software, /dev/videoN or
        /// gst:ELEMENT; the one encoder of Zenoh's PREFIX/h264 too.
        #[arg(long, default_value = "auto", requires = "rtsp")]
        rtsp_encoder: String,
        /// Record the stream's H.264 to PATH too (.mp4 or .h264), from the
        /// one encoder that Zenoh's PREFIX/h264 and --rtsp share; the file
        /// is finished when serve stops.
        #[arg(long, value_name = "PATH")]
        record: Option<PathBuf>,
    },
    /// A live view in the browser: the picture, its figures each second, a
    /// model's boxes posted to /detections drawn over it, a snapshot
    /// (MJPEG over HTTP on 127.0.0.1:8080 unless --http says otherwise).
    View {
        #[command(flatten)]
        source: SourceArgs,
        /// Where to listen: ADDR:PORT or PORT (127.0.0.1 unless an address
        /// is given; another address exposes the camera: add --token).
        #[arg(long, default_value = view_addr::DEFAULT)]
        http: String,
        /// A token the page and endpoints want (?token=).
        #[arg(long)]
        token: Option<String>,
        /// JPEG quality of the stream, 1 to 100.
        #[arg(long, default_value_t = 80)]
        quality: i64,
    },
    /// Tensor memory kinds and the zero-copy self-check.
    Probe {
        /// Maps to time.
        #[arg(long, default_value_t = 10_000)]
        maps: usize,
    },
    /// What zerocam can use on this machine, as a checklist (✅ usable, ⚠ a
    /// caveat, ❌ missing, each with its fix): kernel, memory, cameras, EGL
    /// with a live dma-buf import, CUDA, encoders, a short capture. Exits 0
    /// whatever it finds.
    Doctor {
        /// One JSON object (for bug reports).
        #[arg(long)]
        json: bool,
        /// Frames to capture from the first camera (0: none).
        #[arg(long, default_value_t = 60)]
        frames: u64,
    },
}

#[derive(Args)]
struct SourceArgs {
    /// Device node, `libcamera:<id>` (feature libcamera), `unix:SOCKET` (a `zerocam serve`), `zenoh:KEY` (feature zenoh), or `pattern` (`pattern:stamp`: each frame stamped with its sequence number and capture time); default: the first camera, else the pattern source.
    device: Option<String>,
    #[arg(long, help = format!("Pixel format: {}", CaptureFormat::names()))]
    format: Option<String>,
    /// Frame size, WIDTHxHEIGHT.
    #[arg(long)]
    size: Option<String>,
    /// Frames to capture (default 100; serve: until stopped).
    #[arg(long)]
    frames: Option<u64>,
    /// Frame rate to ask for.
    #[arg(long)]
    fps: Option<f64>,
    /// Buffers to request.
    #[arg(long, default_value_t = 4)]
    buffers: u32,
    /// Buffer mode: mmap (driver buffers, exported once) or dmabuf (DMA heap pool).
    #[arg(long, default_value = "mmap")]
    memory: String,
    /// A Zenoh config file (JSON5: TLS, routers, access control), passed
    /// through as it is (zenoh: sources, serve --zenoh).
    #[arg(long = "zenoh-config")]
    zenoh_config: Option<PathBuf>,
    /// A Zenoh endpoint to connect to, e.g. tcp/192.168.1.20:7447 (repeatable;
    /// default for zenoh: sources: tcp/127.0.0.1:7447).
    #[arg(long)]
    connect: Vec<String>,
    /// A Zenoh endpoint to listen on (repeatable; default for serve --zenoh:
    /// tcp/127.0.0.1:7447 only).
    #[arg(long)]
    listen: Vec<String>,
}

impl SourceArgs {
    /// `--frames`, 100 when not given.
    fn frame_count(&self) -> u64 {
        self.frames.unwrap_or(100)
    }

    /// The source's spec. `publishing`: serve --zenoh, whose publisher
    /// takes the Zenoh flags; otherwise only a `zenoh:` source does, and
    /// they are refused beside any other (not silently ignored).
    fn spec(&self, publishing: bool) -> Result<SourceSpec, CliError> {
        let zenoh_source = self
            .device
            .as_deref()
            .is_some_and(|d| d.starts_with("zenoh:"));
        let zenoh_flags =
            self.zenoh_config.is_some() || !self.connect.is_empty() || !self.listen.is_empty();
        if zenoh_flags && !zenoh_source && !publishing {
            return Err(CliError::Usage(
                "--zenoh-config, --connect and --listen are for zenoh: sources and serve --zenoh"
                    .into(),
            ));
        }
        let format = self
            .format
            .as_deref()
            .map(str::parse::<CaptureFormat>)
            .transpose()?;
        let size = self.size.as_deref().map(parse_size).transpose()?;
        let mode = match self.memory.to_ascii_lowercase().as_str() {
            "mmap" => BufferMode::Mmap,
            "dmabuf" => BufferMode::DmaBuf,
            other => {
                return Err(CliError::Usage(format!(
                    "--memory {other:?}: expected mmap or dmabuf"
                )))
            }
        };
        if self.frames == Some(0) {
            return Err(CliError::Usage("--frames must be at least 1".into()));
        }
        Ok(SourceSpec {
            device: self.device.clone(),
            format,
            size,
            fps: self.fps,
            buffers: self.buffers,
            mode,
            read_only: false,
            zenoh: self.zenoh_options(),
        })
    }

    fn zenoh_options(&self) -> ZenohOptions {
        ZenohOptions {
            config_file: self.zenoh_config.clone(),
            connect: self.connect.clone(),
            listen: self.listen.clone(),
        }
    }
}

fn run(command: Command) -> Result<String, CliError> {
    Ok(match command {
        Command::List => list::list()?,
        Command::Info { device } => {
            let path = device
                .map(PathBuf::from)
                .or_else(|| capture_devices().into_iter().next());
            match path {
                Some(p) if !p.to_str().is_some_and(zerocam_capture::open::is_pattern) => list::describe(&p, true)?,
                _ => format!(
                    "no camera given and none found: the built-in pattern source offers {} at any even size\n",
                    CaptureFormat::names()
                ),
            }
        }
        Command::Capture {
            source,
            output,
            quality,
        } => capture::capture(
            &source.spec(false)?,
            source.frame_count() as usize,
            &output,
            quality,
        )?,
        Command::Record {
            source,
            output,
            codec,
            encoder,
            bitrate,
            gop,
            seconds,
        } => {
            let options = record::RecordOptions {
                output,
                codec,
                encoder,
                bitrate,
                gop,
                frames: source.frames,
                seconds,
            };
            record::record(&source.spec(false)?, &options, |line| println!("{line}"))? + "\n"
        }
        Command::Bench { source, json } => {
            let (description, report) =
                bench::bench(&source.spec(false)?, source.frame_count(), !json)?;
            if json {
                report.to_json() + "\n"
            } else {
                format!("{description}\n{}", report.to_text())
            }
        }
        Command::View {
            source,
            http,
            token,
            quality,
        } => {
            // The pattern source paced as a camera would be (it runs
            // flat out otherwise, as `bench` wants).
            let mut spec = source.spec(false)?;
            let pattern = match spec.device.as_deref() {
                Some(d) => zerocam_capture::open::is_pattern(d),
                None => capture_devices().is_empty(),
            };
            if pattern && spec.fps.is_none() {
                spec.fps = Some(30.0);
            }
            let options = serve::ServeOptions {
                frames: source.frames,
                http: Some(ViewServe {
                    addr: view_addr::parse(&http)?,
                    token,
                    quality: zerocam_encode::jpeg::check_quality(quality)?,
                }),
                ..serve::ServeOptions::new(None)
            };
            serve::serve(&spec, &options, |line| println!("{line}"))? + "\n"
        }
        Command::Serve {
            source,
            socket,
            mode,
            allow_uid,
            allow_gid,
            lease_ms,
            max_leases,
            max_clients,
            max_clients_per_uid,
            max_pending,
            hello_timeout_ms,
            drain_ms,
            writable_fds,
            once,
            zenoh,
            topic,
            frame_id,
            quality,
            h264,
            gop,
            http,
            token,
            rtsp,
            rtsp_encoder,
            record,
        } => {
            let quality = zerocam_encode::jpeg::check_quality(quality)?;
            if max_clients == 0 || max_clients_per_uid == Some(0) || max_pending == 0 {
                return Err(CliError::Usage(format!(
                    "--max-clients {max_clients}, --max-clients-per-uid {max_clients_per_uid:?}, \
                     --max-pending {max_pending}: each must be at least 1"
                )));
            }
            let options = serve::ServeOptions {
                mode,
                allow_uids: allow_uid,
                allow_gids: allow_gid,
                lease: std::time::Duration::from_millis(lease_ms),
                max_leases,
                max_clients,
                max_clients_per_uid,
                max_pending,
                hello_timeout: std::time::Duration::from_millis(hello_timeout_ms),
                drain: std::time::Duration::from_millis(drain_ms),
                writable_fds,
                frames: source.frames,
                once,
                zenoh: zenoh
                    .then(|| -> Result<_, CliError> {
                        Ok(ZenohServe {
                            options: source.zenoh_options(),
                            prefix: topic,
                            frame_id,
                            quality,
                            h264: match h264.as_str() {
                                "none" => None,
                                other => Some(
                                    other
                                        .parse()
                                        .map_err(|e| CliError::Usage(format!("--h264: {e}")))?,
                                ),
                            },
                            gop,
                        })
                    })
                    .transpose()?,
                http: http
                    .map(|addr| -> Result<_, CliError> {
                        Ok(ViewServe {
                            addr: view_addr::parse(&addr)?,
                            token,
                            quality,
                        })
                    })
                    .transpose()?,
                rtsp: rtsp
                    .map(|addr| -> Result<_, CliError> {
                        let encoder = rtsp_encoder
                            .parse()
                            .map_err(|e| CliError::Usage(format!("--rtsp-encoder: {e}")))?;
                        RtspServe::parse(&addr, encoder, gop)
                    })
                    .transpose()?,
                record: record.map(|path| zerocam_cli::outputs::RecordServe { path, gop }),
                ..serve::ServeOptions::new(socket)
            };
            serve::serve(&source.spec(zenoh)?, &options, |line| println!("{line}"))? + "\n"
        }
        Command::Probe { maps } => probe::report(&probe::run(maps)?),
        Command::Doctor { json, frames } => {
            let report = zerocam_cli::doctor::run(frames);
            if json {
                report.to_json() + "\n"
            } else {
                report.to_text()
            }
        }
    })
}

/// `--mode`: an octal file mode such as `0660` or `660`.
fn parse_mode(s: &str) -> Result<u32, String> {
    match u32::from_str_radix(s.trim_start_matches("0o"), 8) {
        Ok(m) if m <= 0o7777 => Ok(m),
        _ => Err(format!("{s:?} is not an octal file mode (like 0660)")),
    }
}

/// clap's message as one line: its first paragraph (what is wrong, with the
/// arguments it names on the lines below the first), without the `error: `
/// prefix, the usage and the `--help` hint.
fn one_line(rendered: &str) -> String {
    let what: Vec<&str> = rendered
        .trim_start_matches("error: ")
        .lines()
        .map(str::trim)
        .take_while(|l| !l.is_empty())
        .collect();
    match what.join(" ") {
        s if s.is_empty() => "bad arguments".to_owned(),
        s => s,
    }
}

fn main() -> ExitCode {
    // libcamera's INFO lines on stderr would break the one-line errors; set
    // before any libcamera call, while single-threaded.
    #[cfg(feature = "libcamera")]
    zerocam_capture::quiet_libcamera_log();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("zerocam: {}", one_line(&e.to_string()));
            return ExitCode::from(2);
        }
    };
    match run(cli.command.unwrap_or(Command::Probe { maps: 10_000 })) {
        Ok(out) => {
            print!("{out}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("zerocam: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn a_usage_error_keeps_the_arguments_it_names() {
        let rendered = "error: the following required arguments were not provided:\n  \
                        --output <OUTPUT>\n\nUsage: zerocam capture --output <OUTPUT> [DEVICE]\n\n\
                        For more information, try '--help'.\n";
        assert_eq!(
            one_line(rendered),
            "the following required arguments were not provided: --output <OUTPUT>"
        );
        assert_eq!(one_line(""), "bad arguments");
    }
}

/// `--http`'s address: `ADDR:PORT`, or a `PORT` on 127.0.0.1.
mod view_addr {
    use std::net::{Ipv4Addr, SocketAddr, ToSocketAddrs};

    use crate::CliError;

    /// The view's default address.
    pub const DEFAULT: &str = "127.0.0.1:8080";

    /// Reads `text` as an address.
    pub fn parse(text: &str) -> Result<SocketAddr, CliError> {
        if let Ok(port) = text.parse::<u16>() {
            return Ok(SocketAddr::from((Ipv4Addr::LOCALHOST, port)));
        }
        text.to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .ok_or_else(|| {
                CliError::Usage(format!(
                    "--http {text:?}: expected ADDR:PORT (127.0.0.1:8080) or a PORT"
                ))
            })
    }
}
