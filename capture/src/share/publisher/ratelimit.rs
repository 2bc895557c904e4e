//! The publisher's log lines about clients, rate-limited per peer (uid) and
//! per kind: the first line of a kind from a uid is logged, the next ones in
//! the same window are counted, and when the window ends one line says how
//! many there were ("… (and 167 more like it in the last 10 s)"). A flood of
//! hostile connections costs a line per uid and kind per window, not a line
//! per connection.

use std::time::{Duration, Instant};

/// How long one line of a kind stands for the others of its uid.
pub(super) const WINDOW: Duration = Duration::from_secs(10);

/// The most (uid, kind) pairs followed at once; past it, the uids share one
/// entry (a peer's uid comes from the kernel, but the number of uids on a
/// machine is not ours to trust).
const MAX_ENTRIES: usize = 64;

/// The uid every uid past [`MAX_ENTRIES`] is counted under.
const OVERFLOW_UID: u32 = u32::MAX;

/// What the publisher did about a client, one kind per log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A peer whose uid and gid are not allowed.
    NotAllowed,
    /// A peer refused because every place (or every place of its uid) is taken.
    Full,
    /// A connection that did not complete `Hello` within the deadline.
    HandshakeTimeout,
    /// A client whose partial message did not complete within the deadline.
    Stalled,
    /// A connection closed before its `Hello` to make room for a newer one.
    PendingDropped,
    /// A client that broke the protocol.
    Violation,
}

impl Kind {
    /// The kind in words, for the summary line.
    fn words(self) -> &'static str {
        match self {
            Kind::NotAllowed => "refused (not allowed)",
            Kind::Full => "refused (full)",
            Kind::HandshakeTimeout => "closed (no Hello in time)",
            Kind::Stalled => "closed (a message stalled half-sent)",
            Kind::PendingDropped => "closed (too many connections waiting for Hello)",
            Kind::Violation => "disconnected (protocol violation)",
        }
    }
}

#[derive(Debug)]
struct Entry {
    uid: u32,
    kind: Kind,
    /// When the logged line of this window was.
    since: Instant,
    /// Lines of the same uid and kind not logged since.
    suppressed: u64,
}

/// Which lines to log, per uid and kind.
#[derive(Debug, Default)]
pub(super) struct LogLimiter {
    entries: Vec<Entry>,
}

impl LogLimiter {
    /// Whether a line of `kind` about a peer of `uid` at `now` is to be
    /// logged (the first of its window) or only counted.
    pub fn allow(&mut self, uid: u32, kind: Kind, now: Instant) -> bool {
        self.flush(now, |_| {});
        let uid = if self.entries.len() >= MAX_ENTRIES
            && !self.entries.iter().any(|e| e.uid == uid && e.kind == kind)
        {
            OVERFLOW_UID
        } else {
            uid
        };
        if let Some(e) = self
            .entries
            .iter_mut()
            .find(|e| e.uid == uid && e.kind == kind)
        {
            e.suppressed += 1;
            return false;
        }
        self.entries.push(Entry {
            uid,
            kind,
            since: now,
            suppressed: 0,
        });
        true
    }

    /// Ends the windows that passed by `now`, handing `line` one summary
    /// line for each window that counted lines it did not log.
    pub fn flush(&mut self, now: Instant, line: impl FnMut(&str)) {
        if !self.entries.is_empty() {
            self.end_windows(|e| now.saturating_duration_since(e.since) >= WINDOW, line);
        }
    }

    /// Every window's summary now, whether it passed or not (the publisher
    /// is going away).
    pub fn flush_all(&mut self, line: impl FnMut(&str)) {
        self.end_windows(|_| true, line);
    }

    fn end_windows(&mut self, ended: impl Fn(&Entry) -> bool, mut line: impl FnMut(&str)) {
        let mut i = 0;
        while i < self.entries.len() {
            let e = &self.entries[i];
            if !ended(e) {
                i += 1;
                continue;
            }
            if e.suppressed > 0 {
                let who = if e.uid == OVERFLOW_UID {
                    "other uids".to_owned()
                } else {
                    format!("uid {}", e.uid)
                };
                line(&format!(
                    "{who}: {} (and {} more like it in the last {} s)",
                    e.kind.words(),
                    e.suppressed,
                    WINDOW.as_secs()
                ));
            }
            self.entries.remove(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(limiter: &mut LogLimiter, now: Instant) -> Vec<String> {
        let mut out = Vec::new();
        limiter.flush(now, |l| out.push(l.to_owned()));
        out
    }

    #[test]
    fn one_line_per_uid_and_kind_then_a_count() {
        let t0 = Instant::now();
        let mut l = LogLimiter::default();
        let logged = (0..200)
            .filter(|i| l.allow(1000, Kind::HandshakeTimeout, t0 + Duration::from_millis(*i)))
            .count();
        assert_eq!(logged, 1);
        // Another kind and another uid each get their own first line.
        assert!(l.allow(1000, Kind::Full, t0));
        assert!(l.allow(1001, Kind::HandshakeTimeout, t0));
        assert!(!l.allow(1001, Kind::HandshakeTimeout, t0));
        assert!(lines(&mut l, t0 + Duration::from_secs(9)).is_empty());
        let out = lines(&mut l, t0 + WINDOW);
        assert_eq!(
            out,
            [
                "uid 1000: closed (no Hello in time) (and 199 more like it in the last 10 s)",
                "uid 1001: closed (no Hello in time) (and 1 more like it in the last 10 s)",
            ]
        );
        // A new window logs a first line again.
        assert!(l.allow(1000, Kind::HandshakeTimeout, t0 + WINDOW));
    }

    #[test]
    fn uids_past_the_cap_share_one_entry() {
        let t0 = Instant::now();
        let mut l = LogLimiter::default();
        let logged = (0..1000u32)
            .filter(|uid| l.allow(*uid, Kind::NotAllowed, t0))
            .count();
        assert_eq!(logged, MAX_ENTRIES + 1, "64 uids and the rest as one");
        assert!(l.entries.len() <= MAX_ENTRIES + 1);
        let out = lines(&mut l, t0 + WINDOW);
        assert_eq!(out.len(), 1, "{out:?}");
        assert!(out[0].starts_with("other uids:"), "{out:?}");
        assert!(out[0].contains("and 935 more"), "{out:?}");
    }

    #[test]
    fn flush_all_reports_open_windows() {
        let t0 = Instant::now();
        let mut l = LogLimiter::default();
        l.allow(7, Kind::Violation, t0);
        l.allow(7, Kind::Violation, t0);
        let mut out = Vec::new();
        l.flush_all(|s| out.push(s.to_owned()));
        assert_eq!(out.len(), 1, "{out:?}");
        assert!(l.entries.is_empty());
    }
}
