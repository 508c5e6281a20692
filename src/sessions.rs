//! One summary row per session log: what `dsh sessions` lists and what an
//! export's `sessions` table holds.
//!
//! [`scan`] reads a log once, folding it into the token meter (surface
//! tokens, the logged context window), the compaction-lock scan and the
//! usage fold at the same time, and returns a [`Session`]: project, id,
//! title, times, counts, size, pressure, lock state, format generation and
//! the per-request usage. A log the reader refuses is a [`Refused`] with
//! the one-line reason. [`Filter`] and [`sort`] are the listing's filters
//! and orders.
//!
//! ```
//! let src = dsh::LogSource::File("samples/compacted.jsonl".into());
//! let s = dsh::sessions::scan(&src, &dsh::sessions::ScanOptions::default()).unwrap();
//! assert!(s.compactions >= 1);
//! assert_eq!(s.lock, dsh::lock::LockState::Free);
//! ```

use crate::civil;
use crate::config::Config;
use crate::event::{Event, Kind};
use crate::json::Value;
use crate::lock::{LockReport, LockScan, LockState, LockStatus};
use crate::log::{ChunkRun, Folded, LoadError, LoadOptions, LogSource, Observer, RunFacts};
use crate::meter::{Meter, MeterError};
use crate::usage::{Request, UsageFold};

/// The longest title kept (characters); lists cut it further.
const TITLE_CHARS: usize = 200;

/// One session.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    /// The log file (as given or found).
    pub file: String,
    /// Session id (header `id`).
    pub id: String,
    /// The header's `cwd`.
    pub project: Option<String>,
    /// Parent session (fork / subagent lineage).
    pub parent: Option<String>,
    /// The parent when this session is a fork of it: its log begins with
    /// a copy of the parent's (the seed), whose requests are the parent's.
    pub fork_of: Option<String>,
    /// Requests in the inherited seed: made (and counted) by the parent,
    /// left out of [`Session::requests`].
    pub inherited_requests: u64,
    /// The text of the first user-authored `user/message`, whitespace
    /// collapsed, at most `TITLE_CHARS` characters.
    pub title: Option<String>,
    /// Header `createdAt`, when a plausible date ([`civil::recorded`]).
    pub started: Option<i64>,
    /// The latest plausible event time.
    pub last_activity: Option<i64>,
    /// `turn/start` events.
    pub turns: u64,
    /// Stored events (closers not counted).
    pub events: u64,
    /// Bytes on disk.
    pub size: u64,
    /// DSH's own token figure for the next request (the meter's
    /// `totalTokens`); `None` when the meter could not replay the log.
    pub surface_tokens: Option<f64>,
    /// The routed target's context window.
    pub context_window: Option<f64>,
    /// `surface_tokens` as a percentage of `context_window`.
    pub pressure: Option<f64>,
    /// The compaction threshold in tokens (the config's policy for the
    /// route, on `context_window`).
    pub threshold: Option<f64>,
    /// Whether `surface_tokens` is at or over the route's compaction
    /// threshold (the config's policy for the route).
    pub over_threshold: Option<bool>,
    /// The routed `provider/model` (latest `request/header`).
    pub route: Option<(String, String)>,
    /// Compactions whose summary landed (`compaction/summary` events).
    pub compactions: u64,
    /// Tool-result prunes (`compaction/prune` events).
    pub prunes: u64,
    /// The log's compaction-lock state.
    pub lock: LockState,
    /// Brackets holding a live lock.
    pub busy_locks: u64,
    /// Unmatched brackets superseded by a later `session/end-seed`.
    pub stale_locks: u64,
    /// Format generation (header `version`).
    pub generation: u64,
    /// Older generation files beside the log (DSH keeps the file it
    /// migrated a session from; the newest is read), by file name.
    pub older_generations: Vec<String>,
    /// Header `origin` (`subagent` for a delegated child).
    pub origin: Option<String>,
    /// Why the meter could not replay it, when it could not.
    pub meter_error: Option<String>,
    /// The reader's warnings (a torn last line, tolerances used).
    pub warnings: Vec<String>,
    /// The requests with reported usage that the session made (a fork's
    /// inherited seed left out).
    pub requests: Vec<Request>,
}

/// A log the reader refused.
#[derive(Debug, Clone)]
pub struct Refused {
    /// The log file.
    pub file: String,
    /// Bytes on disk, when it could be read.
    pub size: Option<u64>,
    /// The refusal.
    pub error: Box<LoadError>,
}

impl Refused {
    /// A log that could not be opened or read.
    pub(crate) fn io(path: &std::path::Path, e: std::io::Error) -> Refused {
        let file = path.display().to_string();
        let error = Box::new(LoadError::io(&file, e));
        Refused {
            file,
            size: None,
            error,
        }
    }
}

/// A token figure as a percentage of a window.
pub(crate) fn pressure(tokens: Option<f64>, window: Option<f64>) -> Option<f64> {
    match (tokens, window) {
        (Some(t), Some(w)) if w > 0.0 => Some(t / w * 100.0),
        _ => None,
    }
}

/// How [`scan`] reads.
#[derive(Debug, Clone, Default)]
pub struct ScanOptions {
    /// Loader options.
    pub load: LoadOptions,
    /// Skip the meter (surface tokens, pressure): `dsh usage` needs none.
    /// Chunks are then counted, not read: the last activity leaves their
    /// times out.
    pub no_meter: bool,
    /// The config (context windows of routes).
    pub config: Config,
}

/// More facts wanted from the same pass (`scan_with`): sees every stored
/// event (not the synthetic closers) but the chunks of packed rows, which
/// the pass takes whole.
pub trait Extra {
    /// The next stored event.
    fn event(&mut self, ev: &Event<'_>);
    /// The log is read again from the start (forget what was seen).
    fn restart(&mut self);
    /// The read ended: what the loader made of the whole log.
    fn loaded(&mut self, _log: &crate::log::LoadedLog) {}
}

/// The folds of one pass (also `dsh report`'s, beside its other readers).
pub(crate) struct Folds<'x> {
    pub(crate) meter: Option<Meter>,
    pub(crate) locks: LockScan,
    pub(crate) usage: UsageFold,
    turns: u64,
    compactions: u64,
    prunes: u64,
    last: Option<i64>,
    title: Option<String>,
    extra: Option<&'x mut dyn Extra>,
}

impl<'x> Folds<'x> {
    pub(crate) fn new(meter: Option<Meter>, extra: Option<&'x mut dyn Extra>) -> Folds<'x> {
        Folds {
            extra,
            meter,
            locks: LockScan::new(),
            usage: UsageFold::default(),
            turns: 0,
            compactions: 0,
            prunes: 0,
            last: None,
            title: None,
        }
    }
}

/// The text of a user-authored message, whitespace collapsed.
fn user_text(msg: &Value<'_>) -> Option<String> {
    if !msg.get("source")?.get("kind")?.is_str("user") {
        return None;
    }
    let mut out = String::new();
    for b in msg.get("content")?.as_arr()? {
        if b.get("type").is_some_and(|t| t.is_str("text"))
            && let Some(t) = b.get("text").and_then(|t| t.as_str())
        {
            for w in t.split_whitespace() {
                if !out.is_empty() {
                    out.push(' ');
                }
                out.push_str(w);
                if out.chars().count() >= TITLE_CHARS {
                    return Some(out.chars().take(TITLE_CHARS).collect());
                }
            }
        }
    }
    (!out.is_empty()).then_some(out)
}

impl Observer for Folds<'_> {
    fn event(&mut self, ev: &Event<'_>, folded: &Folded<'_>) {
        if let Some(m) = &mut self.meter {
            m.event(ev, folded);
        }
        if folded.synthetic {
            return;
        }
        self.locks.observe(ev);
        self.usage.observe(ev);
        if let Some(x) = &mut self.extra {
            x.event(ev);
        }
        if let Some(t) = civil::recorded(ev.time()) {
            self.last = Some(self.last.map_or(t, |l| l.max(t)));
        }
        match ev.kind {
            Kind::TurnStart => self.turns += 1,
            Kind::CompactionSummary => self.compactions += 1,
            Kind::CompactionPrune => self.prunes += 1,
            Kind::UserMessage if self.title.is_none() => {
                self.title = user_text(ev.data());
            }
            _ => {}
        }
    }

    fn chunks(&mut self, run: &ChunkRun<'_>, folded: &Folded<'_>) {
        // Chunks carry no usage, lock or title: the meter wants them, the
        // last activity their times. Packed rows whole (other chunks come
        // as events, [`Extra`] sees them), when their latest recorded time
        // is their last chunk's: times that never go back, the last a
        // plausible date or none of them one.
        let last = civil::recorded(run.last_time);
        if !matches!(run.facts, RunFacts::Row(_))
            || !run.in_order
            || (last.is_none() && run.last_time >= civil::EARLIEST_MS as f64)
        {
            return run.each_event(folded, |ev, f| self.event(ev, f));
        }
        if let Some(m) = &mut self.meter {
            m.chunks(run, folded);
        }
        if let Some(t) = last {
            self.last = Some(self.last.map_or(t, |l| l.max(t)));
        }
    }
}

/// Read one log into its summary row.
pub fn scan(src: &LogSource, opts: &ScanOptions) -> Result<Session, Refused> {
    scan_with(src, opts, None).map(|(s, _)| s)
}

/// [`scan`], also returning the compaction-lock report and showing every
/// stored event to `extra` in the same pass.
pub(crate) fn scan_with(
    src: &LogSource,
    opts: &ScanOptions,
    extra: Option<&mut dyn Extra>,
) -> Result<(Session, LockReport), Refused> {
    let file = src.display();
    let size = match src {
        LogSource::File(p) => std::fs::metadata(p).ok().map(|m| m.len()),
        _ => None,
    };
    let refused = |error: LoadError| Refused {
        file: file.clone(),
        size,
        error: Box::new(error),
    };
    let mut load = opts.load.clone();
    load.skip_chunk_events = opts.no_meter;
    let mut folds = Folds::new((!opts.no_meter).then(|| Meter::new(None)), extra);
    let mut log = crate::log::load(src, &load, &mut folds).map_err(refused)?;
    let mut measured = folds.meter.take().map(|m| m.finish(&log));
    if let Some(Err(MeterError::NeedsAllChunks { .. })) = measured {
        // As `meter::measure` does: read again keeping every chunk.
        let mut extra = folds.extra.take();
        if let Some(x) = &mut extra {
            x.restart();
        }
        let mut again = Folds::new(Some(Meter::new(None).retaining_all_chunks()), extra);
        log = crate::log::load(src, &load, &mut again).map_err(refused)?;
        measured = again.meter.take().map(|m| m.finish(&log));
        folds = Folds {
            meter: None,
            ..again
        };
    }
    if let Some(x) = &mut folds.extra {
        x.loaded(&log);
    }
    let route = log.headers.route();
    let (surface_tokens, context_window, meter_error) = match &measured {
        None => (None, None, None),
        Some(Err(e)) => (None, None, Some(e.to_string())),
        Some(Ok(m)) => {
            let window = route.as_ref().and_then(|(p, md)| {
                let logged = m.logged_context_window(p, md).map(|l| l.0);
                opts.config
                    .capacity(p, md, None, logged)
                    .map(|c| c.context_window)
            });
            (Some(m.total_tokens), window, None)
        }
    };
    let pressure = pressure(surface_tokens, context_window);
    let budgets = match (&route, context_window) {
        (Some((p, md)), Some(w)) => opts.config.policy_for(p, md).budgets(w).ok(),
        _ => None,
    };
    let over_threshold = budgets
        .zip(surface_tokens)
        .map(|(b, t)| b.over_threshold(t));
    let locks = folds.locks.report();
    let count = |s: LockStatus| locks.brackets.iter().filter(|b| b.status == s).count() as u64;
    let h = &log.header;
    let (parent, seed) = (h.parent_session.as_deref(), h.seed_length);
    let fork_of = folds
        .usage
        .inherited_cut(parent, seed)
        .and(h.parent_session.clone());
    let inherited_requests = folds.usage.inherited(parent, seed) as u64;
    let session = Session {
        file,
        id: h.id.clone(),
        project: h.cwd.clone(),
        parent: h.parent_session.clone(),
        fork_of,
        inherited_requests,
        title: folds.title,
        started: civil::recorded(h.created_at as f64),
        last_activity: folds.last,
        turns: folds.turns,
        events: log.stored_events,
        size: size.unwrap_or(log.committed_len),
        surface_tokens,
        context_window,
        pressure,
        threshold: budgets.map(|b| b.threshold_tokens as f64),
        over_threshold,
        route,
        compactions: folds.compactions,
        prunes: folds.prunes,
        lock: locks.state,
        busy_locks: count(LockStatus::Busy),
        stale_locks: count(LockStatus::Stale),
        generation: h.version,
        older_generations: match src {
            LogSource::File(p) => crate::log::source::older_generations(p)
                .iter()
                .filter_map(|f| f.file_name()?.to_str().map(str::to_string))
                .collect(),
            _ => Vec::new(),
        },
        origin: h.origin.clone(),
        meter_error,
        warnings: log.warnings.clone(),
        requests: folds.usage.finish(parent, seed),
    };
    Ok((session, locks))
}

/// Which sessions a listing shows.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only sessions whose `cwd` is this directory or inside it.
    pub project: Option<String>,
    /// Another spelling of `project` that also matches (its canonical
    /// path, when it differs: the harness records the cwd it started in).
    pub project_alias: Option<String>,
    /// Only sessions active at or after (epoch ms).
    pub since: Option<i64>,
    /// Only sessions started before (epoch ms).
    pub until: Option<i64>,
    /// Only sessions holding a live compaction lock.
    pub busy: bool,
}

impl Filter {
    /// Whether `s` is shown. With a time bound, a session whose times are
    /// unknown is not (it cannot be shown to be inside).
    pub fn admits(&self, s: &Session) -> bool {
        if self.busy && !s.busy() {
            return false;
        }
        if let Some(p) = &self.project {
            let inside = |p: &str| {
                let p = p.trim_end_matches('/');
                s.project.as_deref().is_some_and(|c| {
                    c == p || p.is_empty() || c.strip_prefix(p).is_some_and(|r| r.starts_with('/'))
                })
            };
            if !inside(p) && !self.project_alias.as_deref().is_some_and(inside) {
                return false;
            }
        }
        if let Some(since) = self.since {
            match s.last_activity.or(s.started) {
                Some(t) if t >= since => {}
                _ => return false,
            }
        }
        if let Some(until) = self.until {
            match s.started.or(s.last_activity) {
                Some(t) if t < until => {}
                _ => return false,
            }
        }
        true
    }

    /// Whether a time bound is set.
    fn has_time(&self) -> bool {
        self.since.is_some() || self.until.is_some()
    }

    /// The scanned logs split: the sessions it admits; the refused logs it
    /// could not have left out (they have no project or time to filter by);
    /// how many sessions it left out for their unknown times.
    pub fn split(
        &self,
        scanned: Vec<Result<Session, Refused>>,
    ) -> (Vec<Session>, Vec<Refused>, u64) {
        let keeps_refused = self.project.is_none() && !self.has_time() && !self.busy;
        let (mut shown, mut refused, mut unknown_time) = (Vec::new(), Vec::new(), 0);
        for r in scanned {
            match r {
                Ok(s) if self.admits(&s) => shown.push(s),
                Ok(s) => {
                    let unknown = s.started.is_none() && s.last_activity.is_none();
                    unknown_time += u64::from(self.has_time() && unknown);
                }
                Err(e) if keeps_refused => refused.push(e),
                Err(_) => {}
            }
        }
        (shown, refused, unknown_time)
    }
}

/// Orders of a listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    /// Start time, oldest first.
    Started,
    /// Last activity, oldest first.
    Activity,
    /// Pressure, highest first.
    Pressure,
    /// Size on disk, largest first.
    Size,
    /// Cost, highest first.
    Cost,
}

/// Sort `rows` (each with its cost, when known) by `key`; `reverse` turns
/// the order round. Rows without the value (unknown time, no pressure, no
/// price) come last either way, in file order.
pub fn sort<T>(rows: &mut [T], key: SortKey, reverse: bool, value: impl Fn(&T) -> Option<f64>) {
    let descending = matches!(key, SortKey::Pressure | SortKey::Size | SortKey::Cost) != reverse;
    rows.sort_by(|a, b| match (value(a), value(b)) {
        (Some(x), Some(y)) => {
            if descending {
                y.total_cmp(&x)
            } else {
                x.total_cmp(&y)
            }
        }
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
}

impl Session {
    /// The value [`sort`] orders by (cost comes from the caller's prices).
    pub fn sort_value(&self, key: SortKey) -> Option<f64> {
        match key {
            SortKey::Started => self.started.map(|t| t as f64),
            SortKey::Activity => self.last_activity.map(|t| t as f64),
            SortKey::Pressure => self.pressure,
            SortKey::Size => Some(self.size as f64),
            SortKey::Cost => None,
        }
    }

    /// Whether a compaction lock is live.
    fn busy(&self) -> bool {
        self.lock == LockState::Busy
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknowns_sort_last_both_ways() {
        let mut v = vec![Some(2.0), None, Some(1.0), Some(3.0)];
        sort(&mut v, SortKey::Started, false, |x| *x);
        assert_eq!(v, [Some(1.0), Some(2.0), Some(3.0), None]);
        sort(&mut v, SortKey::Started, true, |x| *x);
        assert_eq!(v, [Some(3.0), Some(2.0), Some(1.0), None]);
        sort(&mut v, SortKey::Size, false, |x| *x);
        assert_eq!(v, [Some(3.0), Some(2.0), Some(1.0), None]);
    }

    #[test]
    fn a_sample_scans() {
        let src = LogSource::File("samples/coding-session.jsonl".into());
        let s = scan(&src, &ScanOptions::default()).unwrap();
        assert!(s.turns >= 1 && s.events > 0 && s.size > 0);
        assert!(s.title.is_some());
        assert!(s.pressure.is_some_and(|p| p > 0.0));
        assert_eq!(s.generation, 0);
        let fast = scan(
            &src,
            &ScanOptions {
                no_meter: true,
                ..ScanOptions::default()
            },
        )
        .unwrap();
        assert_eq!(fast.requests, s.requests);
        assert_eq!(fast.surface_tokens, None);
        let mut f = Filter {
            project: Some("/nowhere".into()),
            ..Filter::default()
        };
        assert!(!f.admits(&s));
        f.project = s.project.clone();
        assert!(f.admits(&s));
    }
}
