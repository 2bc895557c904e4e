//! The libcamera section of `zerocam list` (feature `libcamera`).

/// libcamera's cameras as a tree: `libcamera:<id>`, model and location, then
/// formats → sizes. Empty without the `libcamera` feature.
#[cfg(feature = "libcamera")]
pub fn list() -> String {
    use std::fmt::Write;
    quiet_log();
    let cameras = match zerocam_capture::libcamera_cameras() {
        Ok(c) => c,
        Err(e) => return format!("libcamera: cannot list cameras: {e}\n"),
    };
    if cameras.is_empty() {
        return "libcamera: no camera found\n".into();
    }
    let mut s = String::new();
    for c in cameras {
        let _ = writeln!(
            s,
            "libcamera:{}: {} ({})",
            c.id,
            c.model.as_deref().unwrap_or("unknown model"),
            c.location.as_deref().unwrap_or("location unknown")
        );
        for f in c.formats {
            let mark = f
                .capture
                .map_or(String::new(), |z| format!(" [zerocam: {}]", z.name));
            let _ = writeln!(s, "  {} ({}){mark}", f.name, f.fourcc);
            for (w, h) in &f.sizes {
                let _ = writeln!(s, "    {w}x{h}");
            }
            let _ = writeln!(s, "    {}x{} to {}x{}", f.min.0, f.min.1, f.max.0, f.max.1);
        }
    }
    s
}

/// libcamera's cameras: nothing without the `libcamera` feature.
#[cfg(not(feature = "libcamera"))]
pub fn list() -> String {
    String::new()
}

/// Lowers libcamera's own log to errors (its INFO and WARN lines on stderr
/// would break the CLI's one-line errors), unless `LIBCAMERA_LOG_LEVELS` is
/// set. libcamera reads the variable when its logger starts, so this is
/// called before the first libcamera call (the CLI and the examples are
/// single-threaded until then).
#[cfg(feature = "libcamera")]
pub fn quiet_log() {
    if std::env::var_os("LIBCAMERA_LOG_LEVELS").is_none() {
        std::env::set_var("LIBCAMERA_LOG_LEVELS", "*:ERROR");
    }
}
