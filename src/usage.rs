//! Token usage as the providers reported it, request by request, and its
//! cost from the [`price`](crate::price) table.
//!
//! [`UsageFold`] follows a log's stored events and keeps one [`Request`]
//! for every `assistant/message` that carries `usage` (a model request of
//! the agent) and every `compaction/summary` that does (the compaction
//! summariser's own call, which is not an `assistant/message` of the
//! session, session-log §10.2). [`group`] sums requests by day, week,
//! month, session or project, optionally broken down by provider and model.
//!
//! ```
//! use dsh::usage::UsageFold;
//! let src = dsh::LogSource::File("samples/coding-session.jsonl".into());
//! let mut fold = UsageFold::default();
//! dsh::log::load(&src, &dsh::LoadOptions::default(), &mut |ev: &dsh::Event<'_>, f: &dsh::log::Folded<'_>| {
//!     if !f.synthetic { fold.observe(ev) }
//! })?;
//! let log = dsh::log::load(&src, &dsh::LoadOptions::default(), &mut |_: &dsh::Event<'_>, _: &dsh::log::Folded<'_>| {})?;
//! let requests = fold.finish(log.header.parent_session.as_deref(), log.header.seed_length);
//! assert!(requests.iter().all(|r| r.provider == "deepseek-official"));
//! # Ok::<(), dsh::LoadError>(())
//! ```

use std::collections::BTreeMap;

use crate::civil::{self, Zone};
use crate::event::{Event, Kind};
use crate::json::Value;
use crate::price::{PriceTable, Priced, Tokens};

/// Who made a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Caller {
    /// The agent loop (`assistant/message`).
    Agent,
    /// The compaction summariser (`compaction/summary`).
    Summariser,
}

impl Caller {
    /// `agent` / `summariser`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Caller::Agent => "agent",
            Caller::Summariser => "summariser",
        }
    }
}

/// One model request with the usage its provider reported.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Seq of the `assistant/message` or `compaction/summary`.
    pub seq: u64,
    /// `data.turn` (a summary of a manual compaction has none).
    pub turn: Option<u64>,
    /// `data.step` (assistant messages).
    pub step: Option<u64>,
    /// The event's time when it is a plausible date ([`civil::recorded`]).
    pub time: Option<i64>,
    /// Who asked.
    pub caller: Caller,
    /// Provider (`message.source.provider`, or the summary's `provider`).
    pub provider: String,
    /// Model.
    pub model: String,
    /// The reported usage.
    pub tokens: Tokens,
}

/// Collects [`Request`]s from a log's stored events.
///
/// A fork child's log begins with a copy of its parent's first events (the
/// seed: G0 header `seedLength`, G2+ up to `session/end-seed {inherited:
/// true}`); the requests in it are the parent's, made and billed once, so
/// [`UsageFold::finish`] leaves them out: every total counts them in the
/// session that made them.
#[derive(Debug, Default, Clone)]
pub struct UsageFold {
    requests: Vec<Request>,
    /// The last `session/end-seed {inherited: true}`.
    inherited_cut: Option<u64>,
}

fn num(v: &Value<'_>, k: &str) -> f64 {
    v.get(k).and_then(|x| x.as_f64()).unwrap_or(0.0)
}

/// A `TokenUsage` object as [`Tokens`]; absent or non-numeric fields count 0.
pub(crate) fn tokens_of(usage: &Value<'_>) -> Tokens {
    Tokens {
        input: num(usage, "inputTokens"),
        cache_read: num(usage, "cacheReadTokens"),
        cache_write: num(usage, "cacheWriteTokens"),
        output: num(usage, "outputTokens"),
        reasoning: num(usage, "reasoningTokens"),
    }
}

fn text(v: Option<&Value<'_>>) -> String {
    v.and_then(|x| x.as_str())
        .map(|s| s.into_owned())
        .unwrap_or_default()
}

impl UsageFold {
    /// Observe the next stored event (not the synthetic closers).
    pub fn observe(&mut self, ev: &Event<'_>) {
        let d = ev.data();
        if ev.kind == Kind::SessionEndSeed
            && d.get("inherited")
                .is_some_and(|v| matches!(v, Value::Bool(true)))
        {
            self.inherited_cut = Some(ev.seq);
        }
        let (caller, provider, model) = match ev.kind {
            Kind::AssistantMessage => {
                let src = d.get("message").and_then(|m| m.get("source"));
                (
                    Caller::Agent,
                    text(src.and_then(|s| s.get("provider"))),
                    text(src.and_then(|s| s.get("model"))),
                )
            }
            Kind::CompactionSummary => (
                Caller::Summariser,
                text(d.get("provider")),
                text(d.get("model")),
            ),
            _ => return,
        };
        let Some(usage) = d.get("usage").filter(|u| u.is_obj()) else {
            return;
        };
        self.requests.push(Request {
            seq: ev.seq,
            turn: ev
                .turn()
                .filter(|t| *t >= 0.0 && t.fract() == 0.0)
                .map(|t| t as u64),
            step: ev
                .step()
                .filter(|t| *t >= 0.0 && t.fract() == 0.0)
                .map(|t| t as u64),
            time: civil::recorded(ev.time()),
            caller,
            provider,
            model,
            tokens: tokens_of(usage),
        });
    }

    /// The requests the session made, in log order: a fork child's
    /// inherited seed left out (`Self::inherited_cut`).
    pub fn finish(self, parent: Option<&str>, seed_length: Option<u64>) -> Vec<Request> {
        let cut = self.inherited_cut(parent, seed_length);
        let mut r = self.requests;
        if let Some(cut) = cut {
            r.retain(|q| q.seq >= cut);
        }
        r
    }

    /// Where a fork child's own events begin (its seed is the parent's):
    /// the `session/end-seed {inherited: true}` marker, else the header's
    /// `seedLength`; `None` for a log that is not a fork child (no
    /// `parentSession` in its header).
    pub(crate) fn inherited_cut(
        &self,
        parent: Option<&str>,
        seed_length: Option<u64>,
    ) -> Option<u64> {
        parent?;
        self.inherited_cut.or(seed_length)
    }

    /// Requests of the seed (the parent's), left out by [`Self::finish`].
    pub(crate) fn inherited(&self, parent: Option<&str>, seed_length: Option<u64>) -> usize {
        match self.inherited_cut(parent, seed_length) {
            Some(cut) => self.requests.iter().filter(|q| q.seq < cut).count(),
            None => 0,
        }
    }
}

/// How [`group`] groups requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum GroupBy {
    /// By calendar day at the offset.
    Day,
    /// By week (Monday to Sunday), labelled with its Monday.
    Week,
    /// By calendar month.
    Month,
    /// By session.
    Session,
    /// By project (the header's `cwd`).
    Project,
}

impl GroupBy {
    /// `day`, `week`, `month`, `session`, `project`.
    pub fn as_str(self) -> &'static str {
        match self {
            GroupBy::Day => "day",
            GroupBy::Week => "week",
            GroupBy::Month => "month",
            GroupBy::Session => "session",
            GroupBy::Project => "project",
        }
    }

    /// Whether groups are periods of time.
    fn is_time(self) -> bool {
        matches!(self, GroupBy::Day | GroupBy::Week | GroupBy::Month)
    }
}

/// The requests of one session, with what grouping needs to know of it.
#[derive(Debug, Clone, Copy)]
pub struct SessionRequests<'a> {
    /// The log file.
    pub file: &'a str,
    /// Session id.
    pub session: &'a str,
    /// The header's `cwd`.
    pub project: Option<&'a str>,
    /// Its requests.
    pub requests: &'a [Request],
}

/// Sums over a set of requests.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sums {
    /// Requests of the agent.
    pub requests: u64,
    /// Requests of the compaction summariser.
    pub summariser_requests: u64,
    /// Their usage.
    pub tokens: Tokens,
    /// Cost of the priced requests, USD.
    pub cost: f64,
    /// Requests with a cost.
    pub priced: u64,
    /// Requests with no price for their model (at their date).
    pub unpriced: u64,
    /// Requests whose price depends on a time the log does not record.
    pub untimed: u64,
    /// Priced requests whose price entry is not confirmed
    /// ([`Price::confirmed`](crate::price::Price::confirmed)).
    pub unconfirmed: u64,
    /// The part of `cost` from those requests, USD.
    pub unconfirmed_cost: f64,
}

impl Sums {
    /// Count one request and its price.
    pub(crate) fn add(&mut self, r: &Request, priced: Priced) {
        match r.caller {
            Caller::Agent => self.requests += 1,
            Caller::Summariser => self.summariser_requests += 1,
        }
        self.tokens.add(&r.tokens);
        match priced {
            Priced::Cost { usd, confirmed, .. } => {
                self.cost += usd;
                self.priced += 1;
                if !confirmed {
                    self.unconfirmed += 1;
                    self.unconfirmed_cost += usd;
                }
            }
            Priced::NoPrice => self.unpriced += 1,
            Priced::NeedsTime => self.untimed += 1,
        }
    }

    /// Add another set.
    pub fn merge(&mut self, o: &Sums) {
        self.requests += o.requests;
        self.summariser_requests += o.summariser_requests;
        self.tokens.add(&o.tokens);
        self.cost += o.cost;
        self.priced += o.priced;
        self.unpriced += o.unpriced;
        self.untimed += o.untimed;
        self.unconfirmed += o.unconfirmed;
        self.unconfirmed_cost += o.unconfirmed_cost;
    }

    /// The cost when at least one request is priced (0 when there are
    /// no requests at all); `None` when every request lacks a price.
    pub fn cost(&self) -> Option<f64> {
        (self.priced > 0 || self.without_cost() == 0).then_some(self.cost)
    }

    /// Requests without a cost.
    pub fn without_cost(&self) -> u64 {
        self.unpriced + self.untimed
    }
}

/// One group of [`group`]'s report.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// The label: `2026-07-09`, `2026-07` (weeks: their Monday), a session
    /// id, a project path; `unknown` for requests without a recorded time
    /// (time groups) or sessions without a `cwd` (projects).
    pub key: String,
    /// Whether `key` is a real value (not `unknown`); unknowns sort last.
    pub known: bool,
    /// For sessions: the log file.
    pub file: Option<String>,
    /// For sessions: the project.
    pub project: Option<String>,
    /// The sums.
    pub sums: Sums,
    /// Per provider and model (`--breakdown`), by provider then model.
    pub models: Vec<(String, String, Sums)>,
}

/// Which requests count.
#[derive(Debug, Clone, Copy, Default)]
pub struct Window {
    /// Only requests at or after (epoch ms).
    pub since: Option<i64>,
    /// Only requests before (epoch ms).
    pub until: Option<i64>,
}

impl Window {
    /// Whether no bound is set.
    fn is_open(&self) -> bool {
        self.since.is_none() && self.until.is_none()
    }

    /// Whether a request at `time` counts: with a bound, a request of
    /// unknown time does not (it cannot be shown to be inside).
    fn admits(&self, time: Option<i64>) -> bool {
        if self.is_open() {
            return true;
        }
        let Some(t) = time else { return false };
        self.since.is_none_or(|s| t >= s) && self.until.is_none_or(|u| t < u)
    }
}

/// The grouped report.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    /// Groups in order: time groups by time, others by cost then key;
    /// unknown keys last.
    pub groups: Vec<Group>,
    /// Everything counted.
    pub totals: Sums,
    /// The totals per provider and model.
    pub models: Vec<(String, String, Sums)>,
    /// Requests left out by the window because their time is unknown.
    pub outside_unknown_time: u64,
}

fn key_of(by: GroupBy, s: &SessionRequests<'_>, r: &Request, zone: &Zone) -> (bool, String) {
    match by {
        GroupBy::Session => (true, s.session.to_string()),
        GroupBy::Project => match s.project {
            Some(p) => (true, p.to_string()),
            None => (false, "unknown".into()),
        },
        _ => match r.time {
            None => (false, "unknown".into()),
            Some(t) => {
                let d = zone.date(t);
                (
                    true,
                    match by {
                        GroupBy::Week => d.week_start().to_string(),
                        GroupBy::Month => d.month_label(),
                        _ => d.to_string(),
                    },
                )
            }
        },
    }
}

/// Sum `sessions`' requests inside `window` by `by`, dates in `zone`,
/// priced with `prices`.
pub fn group(
    sessions: &[SessionRequests<'_>],
    by: GroupBy,
    zone: &Zone,
    window: Window,
    prices: &PriceTable,
) -> Report {
    // (unknown last, key, session index for sessions) → group
    let mut groups: BTreeMap<(bool, String, usize), Group> = BTreeMap::new();
    let mut per_model: BTreeMap<(String, String), Sums> = BTreeMap::new();
    let mut rep = Report::default();
    for (i, s) in sessions.iter().enumerate() {
        for r in s.requests {
            if !window.admits(r.time) {
                if r.time.is_none() {
                    rep.outside_unknown_time += 1;
                }
                continue;
            }
            let priced = prices.price(&r.provider, &r.model, r.time, &r.tokens);
            let (known, key) = key_of(by, s, r, zone);
            let idx = if by == GroupBy::Session { i } else { 0 };
            let g = groups
                .entry((!known, key.clone(), idx))
                .or_insert_with(|| Group {
                    key,
                    known,
                    file: (by == GroupBy::Session).then(|| s.file.to_string()),
                    project: (by == GroupBy::Session)
                        .then(|| s.project.map(str::to_string))
                        .flatten(),
                    sums: Sums::default(),
                    models: Vec::new(),
                });
            g.sums.add(r, priced);
            let models = &mut g.models;
            let i = (models.iter())
                .position(|(p, m, _)| *p == r.provider && *m == r.model)
                .unwrap_or_else(|| {
                    models.push((r.provider.clone(), r.model.clone(), Sums::default()));
                    models.len() - 1
                });
            models[i].2.add(r, priced);
            per_model
                .entry((r.provider.clone(), r.model.clone()))
                .or_default()
                .add(r, priced);
            rep.totals.add(r, priced);
        }
    }
    rep.groups = groups.into_values().collect();
    for g in &mut rep.groups {
        g.models.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    }
    if !by.is_time() {
        // Largest cost first, then most tokens; unknown keys stay last.
        rep.groups.sort_by(|a, b| {
            (!a.known)
                .cmp(&!b.known)
                .then(b.sums.cost.total_cmp(&a.sums.cost))
                .then(b.sums.tokens.total().total_cmp(&a.sums.tokens.total()))
                .then(a.key.cmp(&b.key))
        });
    }
    rep.models = per_model.into_iter().map(|((p, m), s)| (p, m, s)).collect();
    rep
}

/// The cost of a session's requests, all time.
pub fn session_sums(requests: &[Request], prices: &PriceTable) -> Sums {
    let mut s = Sums::default();
    for r in requests {
        s.add(r, prices.price(&r.provider, &r.model, r.time, &r.tokens));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(time: Option<i64>, caller: Caller, model: &str, input: f64) -> Request {
        Request {
            seq: 0,
            turn: Some(1),
            step: Some(1),
            time,
            caller,
            provider: "deepseek-official".into(),
            model: model.into(),
            tokens: Tokens {
                input,
                output: 10.0,
                ..Tokens::default()
            },
        }
    }

    #[test]
    fn groups_by_day_with_unknown_last_and_the_summariser_counted() {
        let day = civil::parse_instant("2026-07-09T12:00Z", civil::Offset::UTC).unwrap();
        let rs = vec![
            req(Some(day), Caller::Agent, "deepseek-v4-flash", 100.0),
            req(None, Caller::Agent, "deepseek-v4-flash", 5.0),
            req(
                Some(day + 86_400_000),
                Caller::Summariser,
                "deepseek-v4-flash",
                1000.0,
            ),
            req(Some(day), Caller::Agent, "mystery", 1.0),
        ];
        let s = [SessionRequests {
            file: "a.jsonl",
            session: "a",
            project: Some("/p"),
            requests: &rs,
        }];
        let table = PriceTable::builtin();
        let r = group(&s, GroupBy::Day, &Zone::UTC, Window::default(), &table);
        let keys: Vec<&str> = r.groups.iter().map(|g| g.key.as_str()).collect();
        assert_eq!(keys, ["2026-07-09", "2026-07-10", "unknown"]);
        assert_eq!(r.groups[0].sums.requests, 2);
        assert_eq!(r.groups[0].sums.unpriced, 1, "mystery has no price");
        assert_eq!(r.groups[0].sums.unconfirmed, 1, "V4 cache-cut prices");
        assert_eq!(r.groups[1].sums.summariser_requests, 1);
        assert_eq!(r.groups[2].sums.untimed, 1, "dated prices, unknown time");
        assert_eq!(r.groups[2].sums.cost(), None);
        assert_eq!(r.totals.tokens.input, 1106.0);
        assert_eq!(r.models.len(), 2);
        // A window leaves out what it cannot place.
        let w = Window {
            since: Some(day + 86_400_000),
            until: None,
        };
        let r = group(&s, GroupBy::Day, &Zone::UTC, w, &table);
        assert_eq!(r.groups.len(), 1);
        assert_eq!(r.outside_unknown_time, 1);
        // Eight hours west, the noon request is still on the 9th; the next
        // day's too.
        let r = group(
            &s,
            GroupBy::Month,
            &Zone::Fixed(civil::Offset(-480)),
            Window::default(),
            &table,
        );
        assert_eq!(r.groups[0].key, "2026-07");
    }
}
