//! `zerocam`: the command-line face of zerocam.
//!
//! `zerocam probe` (the default) reports which kinds of tensor memory this
//! machine offers and runs a zero-copy self-check in the best one: allocate a
//! 1080p RGB tensor, map it many times (the mapping must never move), hand its fd
//! to a second tensor and read the bytes back through it. Camera subcommands
//! (`list`, `info`, `capture`, `bench`) arrive with the capture layer.

use std::process::ExitCode;
use std::time::Instant;

use zerocam_examples::probe::{self, Report};

fn usage() -> &'static str {
    "usage: zerocam [probe] [--maps N]\n\
     \n\
     probe   report tensor memory kinds and run the zero-copy self-check (default)"
}

fn parse(args: &[String]) -> Result<usize, String> {
    let mut maps = 10_000;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "probe" => {}
            "--maps" => {
                let v = it.next().ok_or("--maps needs a number")?;
                maps = v
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or(format!("--maps {v:?} is not a positive number"))?;
            }
            "-h" | "--help" => return Err(usage().to_owned()),
            other => return Err(format!("unknown argument {other:?}\n{}", usage())),
        }
    }
    Ok(maps)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let maps = match parse(&args) {
        Ok(m) => m,
        Err(msg) => {
            eprintln!("zerocam: {msg}");
            return ExitCode::from(2);
        }
    };
    let start = Instant::now();
    match probe::run(maps) {
        Ok(report) => {
            print(&report);
            println!("done in {:.1} ms", start.elapsed().as_secs_f64() * 1e3);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("zerocam: {e}");
            ExitCode::FAILURE
        }
    }
}

fn print(r: &Report) {
    println!("zerocam probe (no camera subcommands yet: tensor memory only)");
    println!(
        "memory: dma {} (heaps: {}), shm {}, mem yes",
        yes(r.dma),
        if r.heaps.is_empty() {
            "none".into()
        } else {
            r.heaps.join(", ")
        },
        yes(r.shm)
    );
    println!(
        "self-check in {} memory: {}x{} RGB, {} bytes",
        r.memory, r.width, r.height, r.bytes
    );
    println!(
        "  {} maps: {:.0} ns per map+unmap, mapping address moved: {}",
        r.maps, r.ns_per_map, r.address_moved
    );
    match &r.shared {
        Some(s) => println!(
            "  fd round trip: fd_identity {}:{}, bytes seen through the second tensor: {}",
            s.dev, s.ino, s.bytes_match
        ),
        None => println!("  fd round trip: not possible in heap memory"),
    }
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}
