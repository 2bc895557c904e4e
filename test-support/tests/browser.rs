//! The browser client's self-test: inside a private network namespace,
//! Chromium opens a page served from 127.0.0.1, and its screenshot has the
//! page's colors where the page put them.
#![allow(clippy::unwrap_used)] // tests may panic

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::time::Duration;

use zerocam_test_support::browser::Browser;
use zerocam_test_support::netns::in_private_network;

/// A 200x100 orange block at the top-left of a white page.
const PAGE: &str = "<!doctype html>
<html><head><title>zerocam browser self-test</title></head>
<body style=\"margin:0;background:#fff\">
<div style=\"width:200px;height:100px;background:rgb(255,128,0)\"></div>
<script>window.ready = true;</script>
</body></html>";

/// Serves `PAGE` to every request on `listener`, forever (the thread dies
/// with the test process).
fn serve(listener: TcpListener) {
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        // Read the request head; the body of a GET is empty.
        let mut line = String::new();
        while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
            line.clear();
        }
        let response = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{PAGE}",
            PAGE.len()
        );
        let _ = stream.write_all(response.as_bytes());
    }
}

fn near(actual: [u8; 3], expected: [u8; 3], tolerance: u8) -> bool {
    actual
        .iter()
        .zip(expected)
        .all(|(&a, e)| a.abs_diff(e) <= tolerance)
}

#[test]
fn chromium_screenshots_a_local_page() {
    if !in_private_network("chromium_screenshots_a_local_page") {
        return;
    }
    // /proc/net/dev is per network namespace: only `lo` may be listed.
    let dev = std::fs::read_to_string("/proc/self/net/dev").unwrap();
    let interfaces: Vec<&str> = dev
        .lines()
        .skip(2)
        .filter_map(|l| l.split(':').next().map(str::trim))
        .collect();
    assert_eq!(interfaces, ["lo"], "not a private network namespace");

    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || serve(listener));

    let mut browser = Browser::launch().unwrap_or_else(|e| panic!("{e}"));
    let tab = browser
        .open(&url, 400, 300)
        .unwrap_or_else(|e| panic!("{e}"));
    browser
        .wait_for(&tab, "window.ready === true", Duration::from_secs(20))
        .unwrap_or_else(|e| panic!("{e}"));
    let shot = browser.screenshot(&tab).unwrap_or_else(|e| panic!("{e}"));
    let saved = std::env::temp_dir().join("zerocam-browser-self-test.png");
    let keep = |what: &str| {
        shot.save(&saved).unwrap();
        format!("{what}; the screenshot is at {}", saved.display())
    };
    assert_eq!(
        (shot.width, shot.height),
        (400, 300),
        "{}",
        keep("the screenshot is not the viewport's size")
    );
    let orange = shot.rgb(50, 50);
    assert!(
        near(orange, [255, 128, 0], 3),
        "{}",
        keep(&format!("pixel (50, 50) is {orange:?}, not orange"))
    );
    let white = shot.rgb(300, 200);
    assert!(
        near(white, [255, 255, 255], 3),
        "{}",
        keep(&format!("pixel (300, 200) is {white:?}, not white"))
    );

    assert_eq!(browser.eval(&tab, "1+2").unwrap(), serde_json::json!(3));
    assert_eq!(
        browser.eval(&tab, "Promise.resolve('done')").unwrap(),
        serde_json::json!("done")
    );
    let thrown = browser.eval(&tab, "undefined.x").unwrap_err().to_string();
    assert!(thrown.contains("TypeError"), "{thrown}");
    let waited = browser
        .wait_for(&tab, "window.never === true", Duration::from_millis(300))
        .unwrap_err()
        .to_string();
    assert!(waited.contains("window.never === true"), "{waited}");
    browser.close(tab).unwrap();
}
