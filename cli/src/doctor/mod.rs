//! `zerocam doctor`: what zerocam can use on this machine and, where it
//! cannot, why and the one-line fix. A checklist in sections (system and
//! memory, cameras, GPU, CUDA, GStreamer, a live capture), each check ✅
//! (usable), ⚠ (usable with a caveat) or ❌ (missing), as text or as JSON
//! for bug reports. It only reads and probes: the one thing it writes is a
//! small DMA-heap buffer it imports into EGL, and it captures 60 frames.

mod camera;
mod gpu;
mod system;

use std::fmt::Write;

/// How one check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// zerocam can use it.
    Ok,
    /// Usable, with a caveat the detail names.
    Warn,
    /// Missing or refused: the fix says what to do.
    Fail,
}

impl Status {
    /// The mark the text report shows.
    pub fn mark(self) -> &'static str {
        match self {
            Status::Ok => "✅",
            Status::Warn => "⚠",
            Status::Fail => "❌",
        }
    }

    /// The word the JSON report uses.
    pub fn word(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Fail => "fail",
        }
    }
}

/// One line of the checklist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// The section it is in (`system`, `cameras`, `gpu`, …).
    pub section: &'static str,
    /// What was checked (`kernel`, `/dev/video0`, `DMA heap system`, …).
    pub name: String,
    /// How it came out.
    pub status: Status,
    /// What was found.
    pub detail: String,
    /// For a warning or a failure: what to do, in one line.
    pub fix: Option<String>,
}

impl Check {
    /// A usable `name`.
    pub fn ok(section: &'static str, name: impl Into<String>, detail: impl Into<String>) -> Check {
        Check {
            section,
            name: name.into(),
            status: Status::Ok,
            detail: detail.into(),
            fix: None,
        }
    }

    /// `name` with a caveat, and what would lift it.
    pub fn warn(
        section: &'static str,
        name: impl Into<String>,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Check {
        Check::ok(section, name, detail).needs(Status::Warn, fix)
    }

    /// A missing or refused `name`, and the fix.
    pub fn fail(
        section: &'static str,
        name: impl Into<String>,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Check {
        Check::ok(section, name, detail).needs(Status::Fail, fix)
    }

    fn needs(self, status: Status, fix: impl Into<String>) -> Check {
        Check {
            status,
            fix: Some(fix.into()),
            ..self
        }
    }
}

/// The whole report.
#[derive(Debug, Clone)]
pub struct Report {
    /// Every check, in the order run.
    pub checks: Vec<Check>,
}

impl Report {
    /// How many checks came out `status`.
    pub fn count(&self, status: Status) -> usize {
        self.checks.iter().filter(|c| c.status == status).count()
    }

    /// The check named `name`, if it ran.
    pub fn find(&self, name: &str) -> Option<&Check> {
        self.checks.iter().find(|c| c.name == name)
    }

    /// The checklist for people: one line per check under its section,
    /// the fix indented below a warning or failure, and a count.
    pub fn to_text(&self) -> String {
        let mut s = format!("zerocam doctor {}\n", env!("CARGO_PKG_VERSION"));
        let mut section = "";
        for c in &self.checks {
            if c.section != section {
                section = c.section;
                let _ = writeln!(s, "\n{section}");
            }
            let _ = writeln!(s, "  {} {}: {}", c.status.mark(), c.name, c.detail);
            if let Some(fix) = &c.fix {
                let _ = writeln!(s, "      fix: {fix}");
            }
        }
        let _ = writeln!(
            s,
            "\n{} usable, {} with a caveat, {} missing",
            self.count(Status::Ok),
            self.count(Status::Warn),
            self.count(Status::Fail)
        );
        s
    }

    /// The report as one JSON object (for bug reports).
    pub fn to_json(&self) -> String {
        let checks: Vec<serde_json::Value> = self
            .checks
            .iter()
            .map(|c| {
                serde_json::json!({
                    "section": c.section,
                    "name": c.name,
                    "status": c.status.word(),
                    "detail": c.detail,
                    "fix": c.fix,
                })
            })
            .collect();
        serde_json::json!({
            "zerocam": env!("CARGO_PKG_VERSION"),
            "checks": checks,
            "ok": self.count(Status::Ok),
            "warn": self.count(Status::Warn),
            "fail": self.count(Status::Fail),
        })
        .to_string()
    }
}

/// Runs every check; `frames` frames are captured from the first camera
/// (none when 0). Never fails: what cannot be checked is a check that says so.
pub fn run(frames: u64) -> Report {
    let mut checks = Vec::new();
    system::check(&mut checks);
    let first = camera::check(&mut checks);
    gpu::check(&mut checks);
    camera::capture(&mut checks, first.as_deref(), frames);
    Report { checks }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_json_say_each_check_and_fix() {
        let r = Report {
            checks: vec![
                Check::ok("system", "kernel", "Linux 6.12"),
                Check::fail("memory", "udmabuf", "no /dev/udmabuf", "modprobe udmabuf"),
            ],
        };
        let text = r.to_text();
        assert!(
            text.contains("\nsystem\n  ✅ kernel: Linux 6.12\n"),
            "{text}"
        );
        assert!(
            text.contains("❌ udmabuf: no /dev/udmabuf\n      fix: modprobe udmabuf\n"),
            "{text}"
        );
        assert!(
            text.ends_with("1 usable, 0 with a caveat, 1 missing\n"),
            "{text}"
        );
        let v: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        assert_eq!(v["checks"][1]["status"], "fail");
        assert_eq!(v["checks"][1]["fix"], "modprobe udmabuf");
        assert_eq!(v["checks"][0]["fix"], serde_json::Value::Null);
        assert_eq!((v["ok"].as_u64(), v["fail"].as_u64()), (Some(1), Some(1)));
    }
}
