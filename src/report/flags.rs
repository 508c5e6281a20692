//! Health flags: what the home dashboard lists as needing a look, one line
//! each, from the figures a session's report already holds.
//!
//! `of_session` is the one place flags are gathered: each source is one
//! function below it (verify findings, compaction locks, the window, the
//! reader's warnings); `of_health` adds `dsh health`'s findings, which
//! the dashboard computes in the pass that reads the session's row. A new
//! source of flags is one more function; the dashboard shows whatever comes
//! back, most severe first.

use super::SessionReport;
use crate::lock::LockState;
use crate::verify::Severity;

/// How much a flag matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Something is wrong (a verify error, a busy lock, over the window).
    Error,
    /// Worth a look (a verify warning, stale lock evidence, a torn tail).
    Warning,
}

impl Level {
    /// `error` / `warning`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warning => "warning",
        }
    }
}

/// One flag of one session.
#[derive(Debug, Clone, PartialEq)]
pub struct Flag {
    /// How much it matters.
    pub level: Level,
    /// Where it comes from: `verify`, `locks`, `window`, `load`.
    pub source: &'static str,
    /// The event it belongs to, when one.
    pub seq: Option<u64>,
    /// One sentence.
    pub message: String,
}

/// Every flag of a session, most severe first (then in source order).
pub(crate) fn of_session(r: &SessionReport) -> Vec<Flag> {
    let mut flags = Vec::new();
    for source in [verify, locks, window, load] {
        flags.extend(source(r));
    }
    flags.sort_by_key(|f| f.level);
    flags
}

/// `dsh health`'s findings (compaction loops, re-reads after a compaction
/// or prune, summary failures, overflows, cache churn, stale locks,
/// abandoned turns), each with what it cost.
pub(crate) fn of_health(h: &crate::health::SessionHealth) -> Vec<Flag> {
    h.findings
        .iter()
        .map(|f| Flag {
            level: match f.severity {
                crate::health::Severity::Error => Level::Error,
                crate::health::Severity::Warn => Level::Warning,
            },
            source: "health",
            seq: f.seqs.first().copied(),
            message: format!("{}: {}", f.kind.as_str(), f.message),
        })
        .collect()
}

/// `dsh verify`'s findings.
fn verify(r: &SessionReport) -> Vec<Flag> {
    r.findings
        .iter()
        .map(|f| Flag {
            level: match f.severity {
                Severity::Error => Level::Error,
                Severity::Warning => Level::Warning,
            },
            source: "verify",
            seq: f.seq,
            message: format!("{}: {}", f.check.as_str(), f.message),
        })
        .collect()
}

/// `dsh locks`: a live compaction lock, or the evidence of a crashed one.
fn locks(r: &SessionReport) -> Vec<Flag> {
    let (level, message) = match r.locks.state {
        LockState::Free => return Vec::new(),
        LockState::Busy => (
            Level::Error,
            "a compaction lock is held (busy): a compaction is running, or one crashed before its end",
        ),
        LockState::Stale => (
            Level::Warning,
            "a compaction started and never ended before the session was resumed (stale lock evidence)",
        ),
    };
    vec![Flag {
        level,
        source: "locks",
        seq: r.locks.last_bracket_seq,
        message: message.into(),
    }]
}

/// The next request would not fit the route's window.
fn window(r: &SessionReport) -> Vec<Flag> {
    match (r.fill(), r.window) {
        (Some(f), Some(w)) if f > 1.0 => vec![Flag {
            level: Level::Error,
            source: "window",
            seq: None,
            message: format!(
                "the next request is {:.1}% over the {} token window",
                (f - 1.0) * 100.0,
                super::markup::num(w as f64)
            ),
        }],
        _ => Vec::new(),
    }
}

/// The reader's and the meter's warnings (a torn last line, a tolerance).
fn load(r: &SessionReport) -> Vec<Flag> {
    r.warnings
        .iter()
        .map(|w| Flag {
            level: Level::Warning,
            source: "load",
            seq: None,
            message: w.clone(),
        })
        .collect()
}
