//! The home at a glance: what the dashboard (`index.html` of a directory of
//! pages) shows, from one [`Entry`] per session.
//!
//! An entry joins a session's [`sessions`](crate::sessions) row (the very
//! figures `dsh sessions` lists: last activity, project, title, requests,
//! pressure, compactions, prunes, cost) with what its report computed: the
//! cache totals, what each compaction cost and whether it paid back (as
//! `dsh cache`), and its `flags` (`dsh health`'s findings among them). [`Fleet`] sums
//! them: totals, cost per day by model (as `dsh usage --by day`), the
//! sessions nearest their window and the compactions that cost most.

use super::SessionReport;
use super::flags::{self, Flag};
use crate::cache::{BreakEven, Totals};
use crate::civil::Zone;
use crate::price::PriceTable;
use crate::sessions::{Session, SortKey};
use crate::usage::{self, GroupBy, SessionRequests, Sums, Window};

/// What one compaction cost and saved.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionCost {
    /// `compactionId`.
    pub id: String,
    /// Its `compaction/summary` seq.
    pub seq: u64,
    /// Recompute and summariser call, USD, when priced.
    pub cost: Option<f64>,
    /// Saved over the later requests, USD, when priced.
    pub saved: Option<f64>,
    /// Recomputed and summariser tokens.
    pub cost_tokens: f64,
    /// Prompt tokens saved over the later requests.
    pub saved_tokens: i64,
    /// When it paid back (in money when priced, else in tokens).
    pub break_even: BreakEven,
}

/// One session of the home.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Its page, relative to the dashboard.
    pub page: String,
    /// Its `dsh sessions` row.
    pub session: Session,
    /// Its provider-reported usage, priced (as `dsh sessions`' cost).
    pub sums: Sums,
    /// Its cache totals (as `dsh cache`).
    pub cache: Totals,
    /// Its compactions with a cost or a saving known.
    pub compactions: Vec<CompactionCost>,
    /// What needs a look.
    pub flags: Vec<Flag>,
}

impl Entry {
    /// A session's entry from its report and its `sessions` row.
    pub fn new(
        page: String,
        report: &SessionReport,
        session: Session,
        health: Option<&crate::health::SessionHealth>,
        prices: &PriceTable,
    ) -> Entry {
        let compactions = report
            .compactions
            .iter()
            .filter_map(|c| {
                let p = c.payback.as_ref()?;
                Some(CompactionCost {
                    id: c.id.clone(),
                    seq: c.summary_seq?,
                    cost: p.cost_usd(),
                    saved: p.saved_usd(),
                    cost_tokens: p.recomputed_tokens as f64 + p.summariser_tokens,
                    saved_tokens: p.saved_tokens,
                    break_even: p.break_even(),
                })
            })
            .collect();
        Entry {
            page,
            sums: usage::session_sums(&session.requests, prices),
            session,
            cache: report.cache.clone(),
            compactions,
            flags: {
                let mut f = flags::of_session(report);
                f.extend(health.map(flags::of_health).unwrap_or_default());
                f.sort_by_key(|f| f.level);
                f
            },
        }
    }

    /// The title, or the session id when the session has none.
    pub(crate) fn label(&self) -> &str {
        self.session.title.as_deref().unwrap_or(&self.session.id)
    }
}

/// A file name for a session's page: its id with anything but
/// `[A-Za-z0-9._-]` as `_` (at most 100 characters), made unique among
/// `used` (`-2`, `-3`… on a clash), never `index.html` nor hidden.
pub fn page_name(session: &str, used: &mut std::collections::HashSet<String>) -> String {
    let mut base: String = session
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    if base.is_empty() || base.starts_with('.') || base == "index" {
        base = format!("session-{base}");
    }
    let mut name = format!("{base}.html");
    let mut k = 2;
    while !used.insert(name.clone()) {
        name = format!("{base}-{k}.html");
        k += 1;
    }
    name
}

/// A log that could not be read, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct RefusedLog {
    /// The log as found.
    pub file: String,
    /// The one-line reason (with its advice).
    pub reason: String,
}

/// Cache hits summed over sessions.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Hits {
    /// Σ prompt tokens.
    pub prompt_tokens: u64,
    /// Σ predicted hits.
    pub predicted_hit: u64,
    /// Σ reported prompt of the requests with usage.
    pub reported_prompt: f64,
    /// Σ reported cache reads.
    pub reported_hit: f64,
}

impl Hits {
    /// The predicted hit rate (0..1).
    pub(crate) fn predicted_rate(&self) -> Option<f64> {
        (self.prompt_tokens > 0).then(|| self.predicted_hit as f64 / self.prompt_tokens as f64)
    }

    /// The reported hit rate (0..1).
    pub(crate) fn reported_rate(&self) -> Option<f64> {
        (self.reported_prompt > 0.0).then(|| self.reported_hit / self.reported_prompt)
    }
}

/// Every session of a home, and what they add up to.
#[derive(Debug, Clone)]
pub struct Fleet {
    /// The sessions, the latest activity first (unknown times last).
    pub entries: Vec<Entry>,
    /// The logs that could not be read.
    pub refused: Vec<RefusedLog>,
    /// Provider-reported usage and cost of every session.
    pub totals: Sums,
    /// Cache hits of every session.
    pub hits: Hits,
    /// Cost per day (in `zone`) and per model, as `dsh usage --by day`.
    pub days: usage::Report,
    /// The zone days and times are in.
    pub zone: Zone,
}

impl Fleet {
    /// Sum the entries (in any order).
    pub fn new(
        mut entries: Vec<Entry>,
        refused: Vec<RefusedLog>,
        prices: &PriceTable,
        zone: Zone,
    ) -> Fleet {
        crate::sessions::sort(&mut entries, SortKey::Activity, true, |e| {
            e.session.sort_value(SortKey::Activity)
        });
        let mut totals = Sums::default();
        let mut hits = Hits::default();
        for e in &entries {
            totals.merge(&e.sums);
            hits.prompt_tokens += e.cache.prompt_tokens;
            hits.predicted_hit += e.cache.predicted_hit;
            hits.reported_prompt += e.cache.reported_prompt;
            hits.reported_hit += e.cache.reported_hit;
        }
        let requests: Vec<SessionRequests<'_>> = entries
            .iter()
            .map(|e| SessionRequests {
                file: &e.session.file,
                session: &e.session.id,
                project: e.session.project.as_deref(),
                requests: &e.session.requests,
            })
            .collect();
        let days = usage::group(&requests, GroupBy::Day, &zone, Window::default(), prices);
        Fleet {
            entries,
            refused,
            totals,
            hits,
            days,
            zone,
        }
    }

    /// The `n` sessions with the highest pressure, highest first.
    pub(crate) fn nearest_window(&self, n: usize) -> Vec<&Entry> {
        let mut v: Vec<&Entry> = self
            .entries
            .iter()
            .filter(|e| e.session.pressure.is_some())
            .collect();
        crate::sessions::sort(&mut v, SortKey::Pressure, false, |e| e.session.pressure);
        v.truncate(n);
        v
    }

    /// The `n` compactions that cost most (in money; in tokens when none
    /// is priced), the costliest first, and whether that is in money.
    pub(crate) fn costliest_compactions(&self, n: usize) -> (Vec<(&Entry, &CompactionCost)>, bool) {
        let mut v: Vec<(&Entry, &CompactionCost)> = self
            .entries
            .iter()
            .flat_map(|e| e.compactions.iter().map(move |c| (e, c)))
            .collect();
        let priced = v.iter().any(|(_, c)| c.cost.is_some());
        let key = |c: &CompactionCost| if priced { c.cost } else { Some(c.cost_tokens) };
        crate::sessions::sort(&mut v, SortKey::Cost, false, |(_, c)| key(c));
        v.truncate(n);
        (v, priced)
    }

    /// The sessions with flags, the most severe first (then by activity).
    pub(crate) fn flagged(&self) -> Vec<&Entry> {
        let mut v: Vec<&Entry> = self
            .entries
            .iter()
            .filter(|e| !e.flags.is_empty())
            .collect();
        v.sort_by_key(|e| e.flags.iter().map(|f| f.level).min());
        v
    }

    /// The projects, in order.
    pub(crate) fn projects(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self
            .entries
            .iter()
            .filter_map(|e| e.session.project.as_deref())
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The first and last activity of the home.
    pub(crate) fn span(&self) -> Option<(i64, i64)> {
        let times = self
            .entries
            .iter()
            .flat_map(|e| [e.session.started, e.session.last_activity])
            .flatten();
        times.fold(None, |acc, t| match acc {
            None => Some((t, t)),
            Some((a, b)) => Some((a.min(t), b.max(t))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_names_are_safe_and_unique() {
        let mut used = std::collections::HashSet::new();
        assert_eq!(page_name("a/b c", &mut used), "a_b_c.html");
        assert_eq!(page_name("a/b c", &mut used), "a_b_c-2.html");
        assert_eq!(page_name("index", &mut used), "session-index.html");
        assert_eq!(page_name(".x", &mut used), "session-.x.html");
        assert_eq!(page_name("", &mut used), "session-.html");
    }
}
