//! A session as it stands now, for a status line and a live view: the
//! token meter's figure against the routed window and threshold, what the
//! session cost, and where its growth is heading.
//!
//! [`Snapshot::read`] reads a log once with `crate::sessions::scan_with`
//! (the meter, the usage fold and the lock scan of `dsh sessions`, in one
//! pass) and keeps what a live view needs besides: the requests, where
//! compactions and prunes reset the surface, the lifecycles, and a
//! `Mark` for following what the harness appends
//! (`crate::log::tail::follow`). The figures are the library's own: no
//! number here is computed a second way.
//!
//! [`cache`] keeps the figures of whole reads on disk, keyed by file (device
//! and inode) and checked against its size, so that a status line drawn at
//! every prompt reads only what was appended since.
//!
//! ```
//! let src = dsh::LogSource::File("samples/coding-session.jsonl".into());
//! let s = dsh::status::Snapshot::read(&src, &dsh::sessions::ScanOptions::default()).unwrap();
//! assert!(s.pressure().unwrap() > 0.0);
//! assert!(s.to_compaction().unwrap() > 0.0);
//! ```

pub mod cache;
pub mod follow;

use crate::civil::{Date, Zone};
use crate::event::{Event, Kind};
use crate::log::tail::{Appended, Mark};
use crate::log::{LoadedLog, LogSource};
use crate::price::{PriceTable, Tokens};
use crate::sessions::{self, Extra, Refused, ScanOptions};
use crate::usage::{self, Caller, GroupBy, Request, SessionRequests, Sums, Window};

/// The agent requests a growth is measured over, at most.
const GROWTH_REQUESTS: usize = 8;

/// One session now.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// The log file.
    pub file: String,
    /// Session id.
    pub session: String,
    /// The header's `cwd`.
    pub project: Option<String>,
    /// The routed `provider/model`.
    pub route: Option<(String, String)>,
    /// DSH's own token figure for the next request (the meter's
    /// `totalTokens`); `None` when the meter could not replay the log.
    pub tokens: Option<f64>,
    /// The routed target's context window.
    pub window: Option<f64>,
    /// The compaction threshold in tokens (the config's policy for the route).
    pub threshold: Option<f64>,
    /// Why the meter could not replay the log, when it could not.
    pub meter_error: Option<String>,
    /// A compaction holds a live lock (one is running, or crashed).
    pub busy: bool,
    /// Stored events.
    pub events: u64,
    /// The latest plausible event time.
    pub last_time: Option<i64>,
    /// The requests with reported usage, in log order.
    pub requests: Vec<Request>,
    /// Seqs where the surface was cut back: landed compactions
    /// (`compaction/summary`) and prunes (`compaction/prune`).
    pub resets: Vec<u64>,
    /// Landed compactions.
    pub compactions: u64,
    /// Prunes.
    pub prunes: u64,
    /// Process lifecycles: one, plus one per `session/end-seed`.
    pub lifecycles: u64,
    /// Bytes after the last complete line (or frame): a write in progress.
    pub torn: u64,
    /// Where the read ended, when what is appended can be followed.
    pub mark: Option<Mark>,
    /// The reader's warnings.
    pub warnings: Vec<String>,
}

/// When the next compaction comes at the current growth.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Forecast {
    /// At or over the threshold: before the next request.
    Due,
    /// In about this many requests, growing by `per_request` tokens each.
    In {
        /// Requests until the threshold is reached.
        requests: u64,
        /// Tokens a request adds, on average over the recent ones.
        per_request: f64,
    },
    /// The recent requests did not grow the prompt.
    NotGrowing,
    /// Too few requests since the last compaction, or no threshold.
    Unknown,
}

/// What the one pass collects besides [`sessions::Session`].
#[derive(Default)]
struct Collect {
    resets: Vec<u64>,
    end_seeds: u64,
    mark: Option<Mark>,
    torn: u64,
    path: Option<std::path::PathBuf>,
}

impl Extra for Collect {
    fn event(&mut self, ev: &Event<'_>) {
        match ev.kind {
            Kind::CompactionSummary | Kind::CompactionPrune => self.resets.push(ev.seq),
            Kind::SessionEndSeed => self.end_seeds += 1,
            _ => {}
        }
    }

    fn restart(&mut self) {
        self.resets.clear();
        self.end_seeds = 0;
    }

    fn loaded(&mut self, log: &LoadedLog) {
        self.torn = log.torn.map_or(0, |t| t.len);
        self.mark = self.path.as_deref().and_then(|p| Mark::after(p, log));
    }
}

/// The prompt a request sent, as its provider reported it.
fn prompt_tokens(t: &Tokens) -> f64 {
    t.input + t.cache_read + t.cache_write
}

/// The share of a request's prompt the provider read from its cache.
pub fn hit_rate(t: &Tokens) -> Option<f64> {
    let prompt = prompt_tokens(t);
    (prompt > 0.0).then(|| t.cache_read / prompt)
}

impl Snapshot {
    /// Read a log whole.
    pub fn read(src: &LogSource, opts: &ScanOptions) -> Result<Snapshot, Refused> {
        let mut extra = Collect {
            path: src.path().map(|p| p.to_path_buf()),
            ..Collect::default()
        };
        let (s, locks) = sessions::scan_with(src, opts, Some(&mut extra))?;
        Ok(Snapshot {
            file: s.file,
            session: s.id,
            project: s.project,
            route: s.route,
            tokens: s.surface_tokens,
            window: s.context_window,
            threshold: s.threshold,
            meter_error: s.meter_error,
            busy: locks.state == crate::lock::LockState::Busy,
            events: s.events,
            last_time: s.last_activity,
            requests: s.requests,
            resets: extra.resets,
            compactions: s.compactions,
            prunes: s.prunes,
            lifecycles: 1 + extra.end_seeds,
            torn: extra.torn,
            mark: extra.mark,
            warnings: s.warnings,
        })
    }

    /// Take in what [`crate::log::tail::follow`] found appended: chunks
    /// only, so every figure holds; the counts, the clock and the write in
    /// progress move on.
    fn apply(&mut self, a: &Appended) {
        self.events += a.chunks;
        if let Some(t) = a.last_time {
            self.last_time = Some(self.last_time.map_or(t, |l| l.max(t)));
        }
        self.torn = a.torn;
        self.mark = Some(a.mark);
    }

    /// The token figure as a percentage of the window.
    pub fn pressure(&self) -> Option<f64> {
        sessions::pressure(self.tokens, self.window)
    }

    /// Tokens left before the threshold (negative when over it).
    pub fn to_compaction(&self) -> Option<f64> {
        Some(self.threshold? - self.tokens?)
    }

    /// The agent's requests since the surface was last cut back.
    fn since_reset(&self) -> impl Iterator<Item = &Request> {
        let from = self.resets.last().copied();
        self.requests
            .iter()
            .filter(move |r| r.caller == Caller::Agent && from.is_none_or(|f| r.seq > f))
    }

    /// Tokens a request adds to the prompt, on average over the last
    /// [`GROWTH_REQUESTS`] agent requests since the last compaction or
    /// prune (as their providers reported the prompts); `None` with fewer
    /// than two.
    fn growth(&self) -> Option<f64> {
        let recent: Vec<f64> = self
            .since_reset()
            .map(|r| prompt_tokens(&r.tokens))
            .collect();
        let recent = &recent[recent.len().saturating_sub(GROWTH_REQUESTS)..];
        match recent {
            [first, .., last] => Some((last - first) / (recent.len() - 1) as f64),
            _ => None,
        }
    }

    /// When the next compaction comes at the current growth.
    pub fn forecast(&self) -> Forecast {
        let Some(left) = self.to_compaction() else {
            return Forecast::Unknown;
        };
        if left <= 0.0 {
            return Forecast::Due;
        }
        match self.growth() {
            None => Forecast::Unknown,
            Some(g) if g <= 0.0 => Forecast::NotGrowing,
            Some(g) => Forecast::In {
                requests: (left / g).ceil() as u64,
                per_request: g,
            },
        }
    }

    /// The agent's last request.
    pub fn last_request(&self) -> Option<&Request> {
        self.requests
            .iter()
            .rev()
            .find(|r| r.caller == Caller::Agent)
    }

    /// What the session cost, all of it.
    pub fn cost(&self, prices: &PriceTable) -> Sums {
        usage::session_sums(&self.requests, prices)
    }

    /// The session's costs per day in `zone` (`YYYY-MM-DD`, known days only).
    fn days(&self, prices: &PriceTable, zone: &Zone) -> Vec<(String, Sums)> {
        let s = [SessionRequests {
            file: &self.file,
            session: &self.session,
            project: self.project.as_deref(),
            requests: &self.requests,
        }];
        usage::group(&s, GroupBy::Day, zone, Window::default(), prices)
            .groups
            .into_iter()
            .filter(|g| g.known)
            .map(|g| (g.key, g.sums))
            .collect()
    }
}

/// The civil date of `now_ms` in `zone`, as `YYYY-MM-DD`, and the instant
/// that day starts.
pub fn today(zone: &Zone, now_ms: i64) -> (String, i64) {
    let d: Date = zone.date(now_ms);
    let key = d.to_string();
    let start = zone.parse_instant(&key).unwrap_or(now_ms);
    (key, start)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::price::Tokens;

    fn req(seq: u64, prompt: f64) -> Request {
        Request {
            seq,
            turn: Some(1),
            step: Some(1),
            time: None,
            caller: Caller::Agent,
            provider: "deepseek-official".into(),
            model: "deepseek-v4-flash".into(),
            tokens: Tokens {
                input: prompt / 4.0,
                cache_read: prompt * 3.0 / 4.0,
                output: 10.0,
                ..Tokens::default()
            },
        }
    }

    fn snapshot(requests: Vec<Request>, resets: Vec<u64>) -> Snapshot {
        let src = LogSource::File("samples/coding-session.jsonl".into());
        let mut s = Snapshot::read(&src, &ScanOptions::default()).unwrap();
        s.tokens = Some(50_000.0);
        s.threshold = Some(100_000.0);
        s.requests = requests;
        s.resets = resets;
        s
    }

    #[test]
    fn the_forecast_follows_the_growth_since_the_last_cut() {
        let s = snapshot(
            vec![req(1, 10_000.0), req(5, 20_000.0), req(9, 30_000.0)],
            vec![],
        );
        assert_eq!(s.growth(), Some(10_000.0));
        assert_eq!(
            s.forecast(),
            Forecast::In {
                requests: 5,
                per_request: 10_000.0
            }
        );
        // A compaction at seq 6 cuts the history: one request since.
        let s = snapshot(
            vec![req(1, 10_000.0), req(5, 20_000.0), req(9, 3_000.0)],
            vec![6],
        );
        assert_eq!(s.forecast(), Forecast::Unknown);
        let s = snapshot(vec![req(1, 20_000.0), req(5, 20_000.0)], vec![]);
        assert_eq!(s.forecast(), Forecast::NotGrowing);
        let mut s = snapshot(vec![], vec![]);
        s.tokens = Some(100_000.0);
        assert_eq!(s.forecast(), Forecast::Due);
        assert_eq!(s.to_compaction(), Some(0.0));
    }

    #[test]
    fn hits_are_the_cached_share_of_the_prompt() {
        assert_eq!(hit_rate(&req(1, 1000.0).tokens), Some(0.75));
        assert_eq!(hit_rate(&Tokens::default()), None);
    }

    #[test]
    fn today_starts_at_local_midnight() {
        let z = Zone::Fixed(crate::civil::Offset(480));
        // 2026-07-09T20:00Z is the 10th in +08:00.
        let now =
            crate::civil::parse_instant("2026-07-09T20:00Z", crate::civil::Offset::UTC).unwrap();
        let (key, start) = today(&z, now);
        assert_eq!(key, "2026-07-10");
        assert_eq!(crate::civil::rfc3339(start), "2026-07-09T16:00:00.000Z");
    }
}
