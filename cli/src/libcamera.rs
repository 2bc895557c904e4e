//! The libcamera section of `zerocam list` (feature `libcamera`).

/// libcamera's cameras as a tree: `libcamera:<id>`, model and location, then
/// formats → sizes. Empty without the `libcamera` feature.
#[cfg(feature = "libcamera")]
pub fn list() -> String {
    use std::fmt::Write;
    zerocam_capture::quiet_libcamera_log();
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
