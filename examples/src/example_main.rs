//! The command line every example binary takes: `[DEVICE] [--frames N]`, and
//! its exit: one line on stderr and a non-zero status on error.

use std::process::ExitCode;

/// Parses `[DEVICE] [--frames N]` (N defaults to `default_frames`) and runs
/// `run(device, frames)`; prints `bin: error` and fails on an error, exits 2
/// on a bad `--frames`.
pub fn example_main(
    bin: &str,
    default_frames: u64,
    run: impl FnOnce(Option<String>, u64) -> Result<(), Box<dyn std::error::Error>>,
) -> ExitCode {
    // libcamera's INFO lines would drown the example's own output.
    #[cfg(feature = "libcamera")]
    zerocam::capture::quiet_libcamera_log();
    let mut device = None;
    let mut frames = default_frames;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--frames" => match args.next().and_then(|v| v.parse().ok()) {
                Some(n) => frames = n,
                None => {
                    eprintln!("{bin}: --frames needs a number");
                    return ExitCode::from(2);
                }
            },
            _ => device = Some(a),
        }
    }
    match run(device, frames) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{bin}: {e}");
            ExitCode::FAILURE
        }
    }
}
