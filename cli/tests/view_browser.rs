//! `zerocam view` in a real browser: headless Chromium (Debian's `chromium`)
//! over the DevTools Protocol, each test in a network namespace of its own
//! (only `lo`), so neither the page nor the browser reaches anything else.
#![allow(clippy::unwrap_used)]

mod common;
mod view;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use view::View;
use zerocam_capture::pattern::BARS_RGB;
use zerocam_net::view::{post_detections, Detection, Detections};
use zerocam_test_support::browser::{Browser, Screenshot};
use zerocam_test_support::netns::in_private_network;

/// One browser test at a time (each runs its own Chromium).
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

const WAIT: Duration = Duration::from_secs(30);

/// Whether `got` is within `tol` of `want` on every channel.
fn near(got: [u8; 3], want: [u8; 3], tol: u8) -> bool {
    got.iter().zip(want).all(|(g, w)| g.abs_diff(w) <= tol)
}

/// Checks the pattern's eight bars in row `y` of a `w`x`h` picture drawn
/// at the screenshot's top left, as the frame of `sequence` draws them
/// (they scroll two pixels a frame; a white line moves down two rows).
fn assert_bars(shot: &Screenshot, w: u32, h: u32, sequence: u64) {
    let shift = (2 * sequence) % u64::from(w) / 2 * 2;
    let line = (2 * sequence) % u64::from(h);
    let y = if line.abs_diff(100) > 8 { 100 } else { 300 };
    let bar = u64::from(w) / 8;
    for (b, want) in BARS_RGB.iter().enumerate() {
        let x = (b as u64 * bar + bar / 2 + u64::from(w) - shift) % u64::from(w);
        let got = shot.rgb(x as u32, y as u32);
        assert!(
            near(got, *want, 40),
            "bar {b} at ({x}, {y}) of frame {sequence}: {got:?}, want {want:?}"
        );
    }
}

/// Posts a box for the newest frame, again and again, until `stop`: a model
/// keeping up with the camera.
fn post_boxes(
    addr: String,
    stop: Arc<AtomicBool>,
    size: (u32, u32),
) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let view = view::request;
        let mut posted = 0;
        while !stop.load(Ordering::Relaxed) {
            let (_, body) = view(&addr, "GET /stats HTTP/1.1\r\n\r\n");
            let stats: serde_json::Value = serde_json::from_slice(&body).unwrap();
            if let Some(sequence) = stats["stream"]["sequence"].as_u64() {
                let d = Detections {
                    sequence: sequence as u32,
                    size: Some(size),
                    boxes: vec![Detection {
                        x: 300.0,
                        y: 200.0,
                        w: 240.0,
                        h: 160.0,
                        score: Some(0.9),
                        label: "face".into(),
                    }],
                };
                post_detections(&addr, None, &d).unwrap();
                posted += 1;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        posted
    })
}

#[test]
fn the_page_shows_the_pattern_its_figures_and_a_posted_box() {
    let _serial = serial();
    if !in_private_network("the_page_shows_the_pattern_its_figures_and_a_posted_box") {
        return;
    }
    let (w, h) = (960, 540);
    let view = View::start("960x540", &[]);
    let mut browser = Browser::launch().unwrap();
    let tab = browser
        .open(&format!("http://{}/", view.addr), 1000, 660)
        .unwrap();
    browser
        .wait_for(&tab, "window.zerocamView && zerocamView.frames > 10", WAIT)
        .unwrap();
    // The figures: a frame rate above 0, the format.
    browser
        .wait_for(
            &tab,
            "(() => { const m = /fps ([0-9.]+)/.exec(document.getElementById('stats').textContent); \
             return m !== null && parseFloat(m[1]) > 0; })()",
            WAIT,
        )
        .unwrap();
    let stats = browser
        .eval(&tab, "document.getElementById('stats').textContent")
        .unwrap();
    assert!(stats.as_str().unwrap().contains("NV12 960x540"), "{stats}");

    // A model posts a box for each frame: the page draws it on its frame.
    let stop = Arc::new(AtomicBool::new(false));
    let poster = post_boxes(view.addr.clone(), stop.clone(), (w, h));
    browser
        .wait_for(&tab, "zerocamView.boxesDrawn >= 10", WAIT)
        .unwrap();
    // Held on a frame that has its box.
    browser
        .wait_for(
            &tab,
            "zerocamView.boxesOnShown > 0 && (zerocamView.paused = true)",
            WAIT,
        )
        .unwrap();
    let sequence = browser
        .eval(&tab, "zerocamView.shown")
        .unwrap()
        .as_u64()
        .unwrap();
    let shot = browser.screenshot(&tab).unwrap();
    stop.store(true, Ordering::Relaxed);
    assert!(poster.join().unwrap() > 0);
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("view.png");
    shot.save(&out).unwrap();
    if std::env::var_os("ZEROCAM_BLESS").is_some() {
        let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/images/view.png");
        shot.save(&docs).unwrap();
    }
    eprintln!("screenshot of frame {sequence}: {}", out.display());

    assert_bars(&shot, w, h, sequence);
    // The box's outline, 3 px of orange at the posted place: its top and
    // left edges; inside it, the picture.
    let orange = [255, 128, 0];
    for (x, y) in [
        (330, 200),
        (420, 200),
        (510, 200),
        (300, 250),
        (300, 320),
        (540, 300),
    ] {
        let got = shot.rgb(x, y);
        assert!(near(got, orange, 12), "box edge at ({x}, {y}): {got:?}");
    }
    let inside = shot.rgb(420, 280);
    assert!(!near(inside, orange, 40), "inside the box: {inside:?}");

    // The snapshot: the next frame at full size.
    let (status, jpeg) = view.get("/snapshot.jpg");
    assert_eq!(status, 200);
    let image = zerocam_encode::jpeg::decode_rgb(&jpeg, Default::default()).unwrap();
    assert_eq!((image.width, image.height), (w as usize, h as usize));
}

#[test]
fn ten_tabs_keep_the_capture_rate_and_each_stream_is_alive() {
    let _serial = serial();
    if !in_private_network("ten_tabs_keep_the_capture_rate_and_each_stream_is_alive") {
        return;
    }
    let view = View::start("640x480", &[]);
    view.wait_stats("a frame rate", |s| s["stream"]["fps"].as_f64() > Some(0.0));
    let alone = view.fps_over(Duration::from_secs(3));
    let mut browser = Browser::launch().unwrap();
    let url = format!("http://{}/", view.addr);
    // Each tab as its own profile would be: one browser opens at most six
    // connections to one host, and each page holds one (docs/view.md).
    let tabs: Vec<_> = (0..10)
        .map(|_| browser.open_isolated(&url, 700, 560).unwrap())
        .collect();
    for tab in &tabs {
        browser
            .wait_for(tab, "window.zerocamView && zerocamView.frames > 5", WAIT)
            .unwrap();
    }
    let frames = |browser: &mut Browser| -> Vec<u64> {
        tabs.iter()
            .map(|t| {
                browser
                    .eval(t, "zerocamView.frames")
                    .unwrap()
                    .as_u64()
                    .unwrap()
            })
            .collect()
    };
    let before = frames(&mut browser);
    let watched = view.fps_over(Duration::from_secs(4));
    let after = frames(&mut browser);
    let stats = view.stats();
    eprintln!(
        "capture {alone:.1} fps alone, {watched:.1} fps with 10 tabs; frames per tab in 4 s: {:?}; {}",
        after.iter().zip(&before).map(|(a, b)| a - b).collect::<Vec<_>>(),
        stats["view"]
    );
    for (i, (a, b)) in after.iter().zip(&before).enumerate() {
        assert!(a > b, "tab {i}'s stream stopped: {b} then {a} frames");
    }
    // At least the ten tabs' streams (a tab that reconnected may briefly
    // hold two).
    assert!(stats["view"]["viewers"].as_u64() >= Some(10), "{stats}");
    assert!(
        watched >= alone * 0.9,
        "the capture slowed with 10 tabs: {alone:.1} -> {watched:.1} fps"
    );
}
