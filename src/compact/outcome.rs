//! What a compaction run's failure means for the person running it: whether
//! it is known before the first byte (a refusal), what a dry run reports as
//! what the real run would fail at, and the next step for each failure.

use super::plan::{Plan, Problem};
use super::{
    BUSY, Env, Failure, FailureKind, Mode, Options, Report, Session, Unsaved, too_large_message,
};
use crate::cancel::Cancel;
use crate::provider::{HttpSummarizer, Progress};

/// A run refused before its first byte: nothing written.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Refusal {
    /// What is wrong.
    pub message: String,
    /// Its class: `config`, `unreachable`, or the failure's kind
    /// (`unsendable`, `toolarge`).
    pub kind: String,
    /// What to do, one line.
    pub hint: String,
    /// The failure the rehearsal met, when it was one.
    #[serde(skip)]
    pub failure: Option<FailureKind>,
}

impl Refusal {
    /// A configuration problem, at which a real run refuses (exit 2).
    pub fn config(p: &Problem) -> Refusal {
        Refusal {
            kind: "config".into(),
            message: p.message.clone(),
            hint: p.hint.clone(),
            failure: None,
        }
    }
}

/// A real run first plays the run dry on `dry` (the log it holds locked,
/// opened as a dry run): a request the route cannot send, or one too large
/// for the summarising model, is refused before the first byte (the prune
/// pairs of an automatic run included), and so is a provider that does not
/// accept a connection when a bracket is due.
pub fn rehearse(
    dry: &mut Session,
    summarizer: &HttpSummarizer,
    options: &Options,
    clock: &dyn Fn() -> f64,
    cancel: &Cancel,
) -> Option<Refusal> {
    let mut ids = String::new;
    let mut quiet = |_: &Progress| {};
    let mut env = Env {
        summarizer,
        clock,
        ids: &mut ids,
        progress: &mut quiet,
        cancel,
    };
    match super::run(dry, &mut env, options) {
        Err(f) => refusal_hint(&f).map(|hint| Refusal {
            kind: format!("{:?}", f.kind).to_lowercase(),
            message: f.message.clone(),
            hint,
            failure: Some(f.kind),
        }),
        // A bracket is due: the provider must at least accept a
        // connection, or the attempt would only record its failure.
        Ok(r) if !r.brackets.is_empty() => summarizer.endpoint.probe().err().map(|e| Refusal {
            kind: "unreachable".into(),
            message: e.message,
            hint: "check --base-url (or the route's baseURL) and that the provider is reachable from here".into(),
            failure: None,
        }),
        Ok(_) => None,
    }
}

/// How a run ends, for the person running it.
#[derive(Debug)]
pub enum Ending<'a> {
    /// What the run did; a dry run's (`would_fail: Some`) is what the real
    /// run would do, with the problems it would fail at (exit 1 when there
    /// are any, never 5).
    Report {
        /// The run's report.
        report: &'a Report,
        /// A dry run: what the real run would fail at.
        would_fail: Option<Vec<Problem>>,
    },
    /// A failed run: what was written, the next step where one is known,
    /// and a summary received but not appended, kept beside the log.
    Failed {
        /// The failure.
        failure: &'a Failure,
        /// What to do.
        hint: Option<String>,
        /// The summary kept.
        unsaved: Option<Unsaved>,
    },
}

/// How the run of `plan` on `log` (as the person named it, at `path`) with
/// `result` ends; `problems`: those a dry run knew before it ran.
pub fn ending<'a>(
    result: &'a Result<Report, Box<Failure>>,
    plan: &Plan,
    mut problems: Vec<Problem>,
    dry_run: bool,
    (log, path): (&str, &std::path::Path),
) -> Ending<'a> {
    let would_fail = dry_run.then_some(());
    match result {
        Ok(report) => Ending::Report {
            report,
            would_fail: would_fail.map(|_| problems),
        },
        Err(f) => match would_fail.and_then(|_| would_fail_at(f, plan)) {
            Some(more) => {
                problems.extend(more);
                Ending::Report {
                    report: &f.report,
                    would_fail: Some(problems),
                }
            }
            None => Ending::Failed {
                failure: f,
                hint: failure_hint(f, plan, log),
                unsaved: super::keep_unsaved(path, f),
            },
        },
    }
}

/// What to do about a request larger than the summarising model's window.
const TOO_LARGE_HINT: &str = "summarise through a model with a larger window (--route P/M, or --summarizer-context-window if the window is known better), or keep more of the tail verbatim (--retain-tokens)";

/// The same for a manual compaction, which keeps only the newest unit.
const TOO_LARGE_HINT_MANUAL: &str = "summarise through a model with a larger window (--route P/M, or --summarizer-context-window if the window is known better)";

fn too_large_hint(mode: Mode) -> &'static str {
    if mode == Mode::Manual {
        TOO_LARGE_HINT_MANUAL
    } else {
        TOO_LARGE_HINT
    }
}

/// The next step for a failure known before writing (a request the route
/// cannot send, or one too large for the summarising model); `None` for a
/// failure only a real run meets. A real run that meets one of these while
/// it plays the run dry refuses before the first byte.
fn refusal_hint(f: &Failure) -> Option<String> {
    match f.kind {
        FailureKind::Unsendable => Some(
            "the range holds images and the route sends text only: pass --images placeholder to send each one as the harness's image-offload placeholder text".into(),
        ),
        FailureKind::TooLarge => Some(too_large_hint(f.report.mode).into()),
        _ => None,
    }
}

/// What a dry run reports for a failure, as what the real run would fail
/// at (a dry run calls no one): the problems, or `None` when the failure is
/// not one a dry run stands in for.
fn would_fail_at(f: &Failure, plan: &Plan) -> Option<Vec<Problem>> {
    if !matches!(
        f.kind,
        FailureKind::Summary | FailureKind::Unsendable | FailureKind::TooLarge
    ) {
        return None;
    }
    let mut problems = vec![Problem {
        message: f.message.clone(),
        hint: refusal_hint(f).unwrap_or_else(|| "see the request above".into()),
    }];
    // The request that cannot be sent would not fit either.
    if f.kind != FailureKind::TooLarge
        && let (Some(b), Some(c)) = (
            f.report.brackets.iter().find(|b| b.fits == Some(false)),
            plan.summarizer_capacity,
        )
    {
        problems.push(Problem {
            message: too_large_message(b.request_tokens, &plan.target, c.context_window as u64),
            hint: too_large_hint(f.report.mode).into(),
        });
    }
    Some(problems)
}

/// What to do about a busy log: see the lock, or release a stale one.
fn busy_hint(log: &str) -> String {
    format!(
        "a compaction/start has no compaction/end (see `dsh locks {log}`); if the compacting process is gone, run `dsh locks --release --yes {log}` (appends session/end-seed, as a resumed harness does)"
    )
}

/// The next step after a failed run of `log` (as the person named it),
/// where one is known.
fn failure_hint(f: &Failure, plan: &Plan, log: &str) -> Option<String> {
    match (&f.provider, f.kind) {
        (Some(p), _) if p.code == crate::provider::ErrorCode::Auth => Some(format!(
            "the provider rejected the API key (HTTP {}): check ${}",
            p.status.unwrap_or(401),
            plan.key_env
        )),
        (_, FailureKind::Busy) if f.message == BUSY => Some(busy_hint(log)),
        (_, FailureKind::Unsendable | FailureKind::TooLarge) => refusal_hint(f),
        (_, FailureKind::Cancelled) => Some(
            if f.report.brackets.iter().any(|b| {
                b.error.as_deref() == Some(crate::cancel::INTERRUPTED) && b.end_seq.is_some()
            }) {
                "stopped by a signal; the open bracket was closed with compaction/end {error: \"interrupted\"} and the log is unlocked".to_string()
            } else {
                "stopped by a signal before compaction/start; no bracket was written".to_string()
            },
        ),
        _ => None,
    }
}

/// Whether the writer would append to the file at `p`: some write
/// permission bit is set (as the writer requires, even for root) and the
/// current user may write it.
pub fn writable(p: &std::path::Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    if std::fs::metadata(p).is_ok_and(|m| m.permissions().mode() & 0o222 == 0) {
        return false;
    }
    let Ok(c) = std::ffi::CString::new(p.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: access(2) on a NUL-terminated path we own.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// The problem a dry run reports for a log the real run could not write.
pub fn unwritable() -> Problem {
    Problem {
        message: "the log is not writable".into(),
        hint: "compact a copy (--out FILE), or make the log writable".into(),
    }
}
