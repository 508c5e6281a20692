//! `dsh report`: one session as a self-contained HTML page, and a home as
//! a dashboard of them.
//!
//! [`build`] reads a log once: its own facts (the meter's figure, locks,
//! provider usage, compaction and prune events), the
//! [`cache`](crate::cache) analysis, the [`verify`](crate::verify) audit and
//! the [side-by-side view](crate::view) all observe the same pass
//! ([`Tee`]); the [survival](crate::survival) figures follow from the view;
//! [`html::session_page`] renders the result as one HTML document with
//! inline CSS and hand-written inline SVG charts (`svg`), every log text
//! escaped (`markup`). For a home, [`fleet::Entry`] joins each session's
//! report with its [`sessions`](crate::sessions) row, [`fleet::Fleet`] sums
//! them and [`dashboard::index_page`] renders the index; health
//! `flags` are gathered in one place. Nothing here touches a terminal or
//! the environment, and nothing on the page loads anything from elsewhere.

pub mod dashboard;
pub mod flags;
pub mod fleet;
pub mod html;
pub mod markup;
mod side;
mod svg;

use crate::cache::{
    Analysis, BreakEven, CacheOptions, CacheReport, Prices, ReplaceKind, ReplacementCost, Totals,
};
use crate::config::Config;
use crate::event::{Event, Kind};
use crate::json::Value;
use crate::lock::LockReport;
use crate::log::{LoadError, LoadOptions, LogSource, Observer, Tee};
use crate::meter::{Meter, MeterError};
use crate::price::{PriceTable, Priced};
use crate::sessions::{Extra, Folds};
use crate::usage::{Caller, UsageFold};
use crate::verify::{Finding, Verifier};
use crate::view::{Aligner, ViewOptions};

/// Per-request series longer than this are downsampled on the page.
pub const DEFAULT_MAX_POINTS: usize = 2000;

/// How to build a report.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// How to read the log.
    pub load: LoadOptions,
    /// The user's configuration (policy, capacities, prices).
    pub config: Config,
    /// Prices.
    pub prices: PriceTable,
    /// The most points a per-request chart draws.
    pub max_points: usize,
    /// Build the side-by-side view and the survival figures (which read
    /// each compaction's replaced span again).
    pub side_by_side: bool,
    /// Also count each request's prompt in a provider's own tokens
    /// ([`Point::provider`], as `dsh cache --tokenizer` sizes it).
    pub tokenizer: Option<crate::meter::tokenizer::Encoding>,
}

/// Building failed: the log was refused.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The log was refused.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The meter could not price the log.
    #[error("{0}")]
    Meter(String),
}

/// One model request of the session.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// Its `assistant/message` seq.
    pub seq: u64,
    /// Epoch ms when the log's times are real.
    pub time: Option<i64>,
    /// Its turn.
    pub turn: Option<u64>,
    /// DSH's heuristic prompt size (system, tools, messages).
    pub heuristic: u64,
    /// The provider-reported prompt size, where logged.
    pub reported: Option<f64>,
    /// With [`ReportOptions::tokenizer`]: the prompt counted by it (the
    /// request as the provider renders it where it was sent, a placeholder
    /// log's hidden prefix included).
    pub provider: Option<u64>,
    /// The route's context window at that request.
    pub window: Option<u64>,
    /// The compaction threshold at that request.
    pub threshold: Option<u64>,
    /// Predicted cache hit (tokens).
    pub predicted_hit: u64,
    /// Reported cache read tokens.
    pub reported_hit: Option<f64>,
    /// Predicted miss (tokens).
    pub predicted_miss: u64,
    /// What the predicted miss cost (USD), when priced.
    pub miss_cost: Option<f64>,
}

/// A compaction or prune marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerKind {
    /// A compaction (`compaction/summary` + checkpoint).
    Compaction,
    /// A prune pass (`compaction/prune`).
    Prune,
}

/// Where a replacement happened on the per-request axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Marker {
    /// What it is.
    pub kind: MarkerKind,
    /// Its seq.
    pub seq: u64,
    /// The number of requests before it.
    pub before_requests: usize,
}

/// One compaction attempt (a `compaction/start` and what followed).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Compaction {
    /// `compactionId`.
    pub id: String,
    /// `compaction/start` seq.
    pub start_seq: Option<u64>,
    /// `compaction/summary` seq.
    pub summary_seq: Option<u64>,
    /// `compaction/end` seq.
    pub end_seq: Option<u64>,
    /// What started it: the open turn (automatic) or a `/compact` command.
    pub trigger: String,
    /// How the summary was produced.
    pub mode: String,
    /// `shadowedRange` (start, end).
    pub range: Option<(u64, u64)>,
    /// `shadowedSeqs.length`.
    pub shadowed_nodes: u64,
    /// `shadowedTokenCount`.
    pub shadowed_tokens: f64,
    /// The summary's text blocks, joined.
    pub summary: String,
    /// The summary's size in characters.
    pub summary_chars: u64,
    /// `provider/model` of the summariser.
    pub summariser: String,
    /// `compaction/end.error`.
    pub error: Option<String>,
    /// What of the shadowed span survived into the summary, in words
    /// (filled by the side-by-side view's survival figures).
    pub survival: Option<String>,
    /// What it cost and saved, as `dsh cache` computes it (a compaction
    /// whose summary landed and that a later request could see).
    pub payback: Option<Payback>,
}

/// What a compaction cost and what it saved, from the
/// [`cache`](crate::cache) analysis ([`CacheReport::replacement_cost`]):
/// the prompt recomputed at the next request and the summariser call
/// against the prompt tokens saved by every later request.
#[derive(Debug, Clone, PartialEq)]
pub struct Payback {
    /// Tokens recomputed at the next request because of it.
    pub recomputed_tokens: u64,
    /// The summariser call's tokens (prompt and output).
    pub summariser_tokens: f64,
    /// Prompt tokens saved over the later requests.
    pub saved_tokens: i64,
    /// When the saved tokens covered the recomputed and summariser ones.
    pub break_even_tokens: BreakEven,
    /// The same in money, when every price is known.
    pub cost: Option<ReplacementCost>,
}

impl Payback {
    /// What it cost (recompute and summariser call), USD, when priced.
    fn cost_usd(&self) -> Option<f64> {
        self.cost.map(|c| c.recompute + c.summary)
    }

    /// What it saved, USD, when priced.
    fn saved_usd(&self) -> Option<f64> {
        self.cost.map(|c| c.saved)
    }

    /// When it paid back: in money when priced, else in tokens.
    fn break_even(&self) -> BreakEven {
        self.cost.map_or(self.break_even_tokens, |c| c.break_even)
    }
}

/// One prune pass.
#[derive(Debug, Clone, PartialEq)]
pub struct Prune {
    /// `compaction/prune` seq.
    pub seq: u64,
    /// `shadowedRange`.
    pub range: Option<(u64, u64)>,
    /// Results replaced.
    pub shadowed_nodes: u64,
    /// `shadowedTokenCount`.
    pub shadowed_tokens: f64,
}

/// One point of the cost series.
#[derive(Debug, Clone, PartialEq)]
pub struct CostPoint {
    /// The request's seq.
    pub seq: u64,
    /// Epoch ms.
    pub time: Option<i64>,
    /// Who asked.
    pub caller: Caller,
    /// USD, when priced.
    pub usd: Option<f64>,
    /// Reported tokens.
    pub tokens: f64,
}

/// Everything one session's page shows.
#[derive(Debug, Clone)]
pub struct SessionReport {
    /// The log, as named.
    pub file: String,
    /// Session id.
    pub session: String,
    /// The first user prompt, cut.
    pub title: Option<String>,
    /// Working directory of the session.
    pub project: String,
    /// Stored events.
    pub events: u64,
    /// Route of the last request header.
    pub route: Option<(String, String)>,
    /// `dsh measure`'s figure (DSH's estimate of the next request).
    pub total_tokens: Option<f64>,
    /// The route's window now.
    pub window: Option<u64>,
    /// The threshold now.
    pub threshold: Option<u64>,
    /// Every model request.
    pub points: Vec<Point>,
    /// Compaction and prune markers, in log order.
    pub markers: Vec<Marker>,
    /// Compactions.
    pub compactions: Vec<Compaction>,
    /// Prune passes.
    pub prunes: Vec<Prune>,
    /// Locks.
    pub locks: LockReport,
    /// Verify findings.
    pub findings: Vec<Finding>,
    /// Provider usage and its cost.
    pub cost: Vec<CostPoint>,
    /// Cache totals.
    pub cache: Totals,
    /// Per-cause predicted miss costs: (cause, requests, miss tokens, USD).
    pub miss_by_cause: Vec<(String, usize, u64, Option<f64>)>,
    /// Load and meter warnings.
    pub warnings: Vec<String>,
    /// Whether the log's times are real dates that never go back (the
    /// charts then run over time, else over turns).
    pub times_real: bool,
    /// The most points a chart draws.
    pub max_points: usize,
    /// The transcript beside the model's view.
    pub view: Option<crate::view::View>,
    /// What each compaction's summary kept.
    pub survival: Option<crate::survival::Survival>,
    /// The encoding of [`Point::provider`], with a tokenizer.
    pub tokenizer: Option<&'static str>,
}

impl SessionReport {
    /// The current estimate over the window, as a fraction (1.0 = full),
    /// when both are known.
    fn fill(&self) -> Option<f64> {
        match (self.total_tokens, self.window) {
            (Some(t), Some(w)) if w > 0 => Some(t / w as f64),
            _ => None,
        }
    }

    /// The compactions whose summary landed.
    pub fn landed_compactions(&self) -> usize {
        self.compactions
            .iter()
            .filter(|c| c.summary_seq.is_some())
            .count()
    }

    /// The requests whose heuristic prompt size was over their window.
    fn over_window(&self) -> impl Iterator<Item = &Point> {
        self.points
            .iter()
            .filter(|p| p.window.is_some_and(|w| p.heuristic > w))
    }

    /// The total cost of the priced requests, and how many were unpriced.
    fn cost_total(&self) -> (f64, usize) {
        let mut t = 0.0;
        let mut unpriced = 0;
        for c in &self.cost {
            match c.usd {
                Some(u) => t += u,
                None => unpriced += 1,
            }
        }
        (t, unpriced)
    }
}

/// What the report's own pass collects besides the
/// [`sessions`](crate::sessions) folds (meter, locks, usage).
#[derive(Default)]
struct Own {
    compactions: Vec<Compaction>,
    prunes: Vec<Prune>,
    title: Option<String>,
}

fn text(v: Option<&Value<'_>>) -> Option<String> {
    v.and_then(|x| x.as_str()).map(|s| s.into_owned())
}

fn id_of(v: Option<&Value<'_>>) -> String {
    match v {
        None => String::new(),
        Some(x) => x.as_str().map_or_else(|| x.to_json(), |s| s.into_owned()),
    }
}

fn range_of(d: &Value<'_>) -> Option<(u64, u64)> {
    let r = d.get("shadowedRange")?;
    let s = r.get("start")?.as_f64()?;
    let e = r.get("end")?.as_f64()?;
    (s >= 0.0 && e >= 0.0).then_some((s as u64, e as u64))
}

/// `shadowedSeqs.length` and `shadowedTokenCount` of a replacement.
fn shadowed_of(d: &Value<'_>) -> (u64, f64) {
    let nodes = d.get("shadowedSeqs").and_then(|s| s.as_arr());
    let tokens = d.get("shadowedTokenCount").and_then(|t| t.as_f64());
    (nodes.map_or(0, |a| a.len() as u64), tokens.unwrap_or(0.0))
}

fn blocks_text(v: Option<&Value<'_>>) -> String {
    let mut out = String::new();
    if let Some(arr) = v.and_then(|b| b.as_arr()) {
        for b in arr {
            if let Some(t) = b.get("text").and_then(|t| t.as_str()) {
                if !out.is_empty() {
                    out.push_str("\n\n");
                }
                out.push_str(&t);
            }
        }
    }
    out
}

impl Own {
    fn compaction(&mut self, id: &str) -> &mut Compaction {
        let pos = self
            .compactions
            .iter()
            .rposition(|c| c.id == id && c.end_seq.is_none());
        match pos {
            Some(i) => &mut self.compactions[i],
            None => {
                self.compactions.push(Compaction {
                    id: id.to_string(),
                    trigger: "unknown (no compaction/start)".into(),
                    ..Compaction::default()
                });
                self.compactions.last_mut().expect("just pushed")
            }
        }
    }

    fn observe(&mut self, ev: &Event<'_>) {
        let d = ev.data();
        match ev.kind {
            Kind::UserMessage if self.title.is_none() => {
                let t = blocks_text(d.get("content"));
                let t: String = t.split_whitespace().collect::<Vec<_>>().join(" ");
                if !t.is_empty() {
                    self.title = Some(t.chars().take(100).collect());
                }
            }
            Kind::CompactionStart => {
                let id = id_of(d.get("compactionId"));
                let trigger = match (
                    d.get("turn").and_then(|t| t.as_f64()),
                    d.get("sourceCommandId"),
                ) {
                    (_, Some(c)) if !matches!(c, Value::Null) => {
                        format!("manual (command {})", id_of(Some(c)))
                    }
                    (Some(t), _) => format!("automatic (turn {t})"),
                    _ => "manual".to_string(),
                };
                self.compactions.push(Compaction {
                    id,
                    start_seq: Some(ev.seq),
                    trigger,
                    ..Compaction::default()
                });
            }
            Kind::CompactionSummary => {
                let id = id_of(d.get("compactionId"));
                let c = self.compaction(&id);
                c.summary_seq = Some(ev.seq);
                c.range = range_of(d);
                (c.shadowed_nodes, c.shadowed_tokens) = shadowed_of(d);
                c.summary = blocks_text(d.get("summary"));
                c.summary_chars = c.summary.chars().count() as u64;
                c.mode = if d
                    .get("llmStreamCall")
                    .is_some_and(|v| matches!(v, Value::Bool(true)))
                {
                    "streamed LLM call".into()
                } else {
                    "LLM call".into()
                };
                c.summariser = format!(
                    "{}/{}",
                    text(d.get("provider")).unwrap_or_default(),
                    text(d.get("model")).unwrap_or_default()
                );
            }
            Kind::CompactionEnd => {
                let id = id_of(d.get("compactionId"));
                let c = self.compaction(&id);
                c.end_seq = Some(ev.seq);
                c.error = d
                    .get("error")
                    .filter(|e| !matches!(e, Value::Null))
                    .map(|e| id_of(Some(e)));
            }
            Kind::CompactionPrune => {
                let (shadowed_nodes, shadowed_tokens) = shadowed_of(d);
                self.prunes.push(Prune {
                    seq: ev.seq,
                    range: range_of(d),
                    shadowed_nodes,
                    shadowed_tokens,
                });
            }
            _ => {}
        }
    }
}

impl Extra for Own {
    fn event(&mut self, ev: &Event<'_>) {
        self.observe(ev);
    }

    fn restart(&mut self) {
        *self = Own::default();
    }
}

/// Window and threshold of a route given the logged window, as `dsh
/// measure` resolves them.
fn budgets(
    config: &Config,
    provider: &str,
    model: &str,
    logged: Option<f64>,
) -> (Option<u64>, Option<u64>) {
    let Some(cap) = config.capacity(provider, model, None, logged) else {
        return (None, None);
    };
    match config
        .policy_for(provider, model)
        .budgets(cap.context_window)
    {
        Ok(b) => (Some(b.context_window), Some(b.threshold_tokens)),
        Err(_) => (Some(cap.context_window as u64), None),
    }
}

/// Read one log into its report.
///
/// The log is read once: the report's own folds, the cache analysis, the
/// verify audit and the side-by-side alignment all observe the same pass
/// ([`Tee`]). The survival figures, which read the replaced spans again,
/// are then extracted while the rest is finished.
pub fn build(src: &LogSource, opts: &ReportOptions) -> Result<SessionReport, ReportError> {
    let mut own = Own::default();
    let mut folds = Folds::new(Some(Meter::new(None)), Some(&mut own));
    let mut cache = Analysis::new(&CacheOptions::default());
    // The same analysis in the provider's tokens, on the same pass.
    let mut theirs = opts.tokenizer.map(|enc| {
        enc.load();
        Analysis::new(&CacheOptions {
            tokenizer: Some(enc),
            ..CacheOptions::default()
        })
    });
    let mut verifier = Verifier::new(src.display());
    let mut aligner = opts.side_by_side.then(|| {
        Aligner::new(&ViewOptions {
            preview_chars: 160,
            ..Default::default()
        })
    });
    let mut observers: Vec<&mut dyn Observer> = vec![&mut folds, &mut cache, &mut verifier];
    if let Some(a) = &mut aligner {
        observers.push(a);
    }
    if let Some(t) = &mut theirs {
        observers.push(t);
    }
    let log = crate::log::load(src, &opts.load, &mut Tee::new(observers))?;
    let provider = theirs.map(|t| provider_prompts(&log, t.finish(&log)));
    let view = aligner.map(|a| a.finish(&log));
    let (survival, finished) = std::thread::scope(|s| {
        let survival = view
            .as_ref()
            .map(|v| s.spawn(|| crate::survival::of_view(&log, v)));
        let finished = finish_folds(src, &opts.load, &log, folds.meter.take(), cache, verifier);
        (survival.map(|h| h.join()), finished)
    });
    let (measured, cache, findings) = finished?;
    let (locks, usage) = (folds.locks.report(), folds.usage);
    let mut warnings: Vec<String> = log.warnings.iter().map(|w| w.to_string()).collect();
    let (view, survival) = side_view(view, survival, &mut warnings);
    let mut compactions = own.compactions;
    for c in &mut compactions {
        if let Some(seq) = c.summary_seq {
            c.survival = survival.as_ref().and_then(|sv| side::survival_of(sv, seq));
            c.payback = payback(&cache, seq, &opts.prices);
        }
    }
    let (total_tokens, contexts) = match &measured {
        Ok(m) => (Some(m.total_tokens), m.contexts.clone()),
        Err(e) => {
            warnings.push(format!("the meter could not price the log: {e}"));
            (None, Vec::new())
        }
    };
    let route = log.headers.route();
    let (window, threshold) = match (&route, &measured) {
        (Some((p, m)), Ok(meas)) => budgets(
            &opts.config,
            p,
            m,
            meas.logged_context_window(p, m).map(|l| l.0),
        ),
        (Some((p, m)), Err(_)) => budgets(&opts.config, p, m, None),
        _ => (None, None),
    };
    let prices: &dyn Prices = &opts.prices;
    let mut points = points_of(&cache, &contexts, opts);
    if let Some(sized) = &provider {
        for p in &mut points {
            p.provider = sized.get(&p.seq).copied();
        }
    }
    let markers = markers_of(&points, &compactions, &own.prunes);
    let costs = cache.miss_cost_by_cause(prices);
    let totals = cache.totals();
    let miss_by_cause = totals
        .by_cause
        .iter()
        .map(|(k, n, miss, _)| (k.clone(), *n, *miss, costs.get(k).and_then(|c| c.0)))
        .collect();
    let cost = cost_points(usage, &log, opts);
    Ok(SessionReport {
        file: src.display(),
        session: log.header.id.clone(),
        title: own.title,
        project: log.header.cwd.clone().unwrap_or_default(),
        events: log.stored_events,
        route,
        total_tokens,
        window,
        threshold,
        points,
        markers,
        compactions,
        prunes: own.prunes,
        locks,
        findings,
        cost,
        cache: totals,
        miss_by_cause,
        warnings,
        times_real: cache.times_real,
        max_points: opts.max_points.max(10),
        view,
        survival,
        tokenizer: opts.tokenizer.map(|e| e.name()),
    })
}

/// The side-by-side view with its survival figures, or neither and a
/// warning why.
fn side_view(
    view: Option<crate::view::View>,
    survival: Option<std::thread::Result<Result<crate::survival::Survival, LoadError>>>,
    warnings: &mut Vec<String>,
) -> (Option<crate::view::View>, Option<crate::survival::Survival>) {
    match survival {
        Some(Ok(Ok(s))) => (view, Some(s)),
        Some(Ok(Err(e))) => {
            warnings.push(format!("no side-by-side view: {e}"));
            (None, None)
        }
        Some(Err(_)) => {
            warnings.push("no side-by-side view: the survival figures failed".into());
            (None, None)
        }
        None => (None, None),
    }
}

/// Each provider call's cost (where the price table knows its route).
fn cost_points(
    usage: UsageFold,
    log: &crate::log::LoadedLog,
    opts: &ReportOptions,
) -> Vec<CostPoint> {
    usage
        .finish(log.header.parent_session.as_deref(), log.header.seed_length)
        .into_iter()
        .map(|r| {
            let usd = match opts.prices.price(&r.provider, &r.model, r.time, &r.tokens) {
                Priced::Cost { usd, .. } => Some(usd),
                _ => None,
            };
            CostPoint {
                seq: r.seq,
                time: r.time,
                caller: r.caller,
                usd,
                tokens: r.tokens.total(),
            }
        })
        .collect()
}

/// Each request's prompt in `report`'s tokens, by seq; with DeepSeek's
/// encoding, a placeholder log's hidden prefix added (the offset
/// [`crate::hidden_prefix::estimate`] finds, as `dsh cache` adds it).
fn provider_prompts(
    log: &crate::log::LoadedLog,
    report: CacheReport,
) -> std::collections::HashMap<u64, u64> {
    use crate::hidden_prefix::{estimate, placeholders};
    let deepseek = report.tokenizer == Some(crate::meter::tokenizer::Encoding::DeepSeekV4);
    let hidden = deepseek
        .then(|| estimate(placeholders(log.headers.header.as_ref()), &report))
        .flatten()
        .map_or(0, |h| h.tokens);
    report
        .requests
        .iter()
        .map(|q| (q.seq, q.prompt_tokens + hidden))
        .collect()
}

/// One point per model request of the cache analysis, with the window
/// and threshold in force at it.
fn points_of(
    cache: &CacheReport,
    contexts: &[crate::meter::LoggedContext],
    opts: &ReportOptions,
) -> Vec<Point> {
    let prices: &dyn Prices = &opts.prices;
    cache
        .requests
        .iter()
        .map(|q| {
            let logged = contexts
                .iter()
                .rfind(|c| c.seq <= q.seq && c.provider == q.provider && c.model == q.model)
                .map(|c| c.context_window);
            let (w, t) = budgets(&opts.config, &q.provider, &q.model, logged);
            let time = cache.times_real.then_some(q.time as i64);
            Point {
                seq: q.seq,
                time,
                turn: q.turn.filter(|t| *t >= 0.0).map(|t| t as u64),
                heuristic: q.prompt_tokens,
                reported: q.reported.map(|r| r.prompt()),
                provider: None,
                window: w,
                threshold: t,
                predicted_hit: q.predicted_hit,
                reported_hit: q.reported.map(|r| r.cache_read_tokens),
                predicted_miss: q.predicted_miss(),
                miss_cost: cache.request_cost(q, prices).map(|c| c.miss()),
            }
        })
        .collect()
}

/// A marker per landed compaction and per prune, in log order.
fn markers_of(points: &[Point], compactions: &[Compaction], prunes: &[Prune]) -> Vec<Marker> {
    let seqs: Vec<u64> = points.iter().map(|p| p.seq).collect();
    let mut markers: Vec<Marker> = Vec::new();
    for c in compactions {
        if let Some(seq) = c.summary_seq {
            markers.push(Marker {
                kind: MarkerKind::Compaction,
                seq,
                before_requests: seqs.partition_point(|&s| s < seq),
            });
        }
    }
    for p in prunes {
        markers.push(Marker {
            kind: MarkerKind::Prune,
            seq: p.seq,
            before_requests: seqs.partition_point(|&s| s < p.seq),
        });
    }
    markers.sort_by_key(|m| m.seq);
    markers
}

/// What the compaction whose summary is `summary_seq` cost and saved.
fn payback(cache: &CacheReport, summary_seq: u64, prices: &dyn Prices) -> Option<Payback> {
    let i = cache.replacements.iter().position(|r| {
        r.kind == ReplaceKind::Compaction
            && r.summary.as_ref().is_some_and(|s| s.seq == summary_seq)
    })?;
    let r = &cache.replacements[i];
    Some(Payback {
        recomputed_tokens: r.recomputed_tokens,
        summariser_tokens: r.summary.as_ref().map_or(0.0, |s| s.tokens()),
        saved_tokens: r.saved_tokens(),
        break_even_tokens: r.break_even_tokens,
        cost: cache.replacement_cost(i, prices),
    })
}

/// What the folds of one pass leave once finished.
type Finished = (
    Result<crate::meter::Measurement, MeterError>,
    CacheReport,
    Vec<Finding>,
);

/// The meter's measurement, the cache report and the verify findings of a
/// log the folds saw: the meter reads the log once more, by itself, in the
/// rare case that needs every chunk kept.
fn finish_folds(
    src: &LogSource,
    load: &LoadOptions,
    log: &crate::log::LoadedLog,
    meter: Option<Meter>,
    cache: Analysis,
    verifier: Verifier,
) -> Result<Finished, ReportError> {
    let mut measured = meter.expect("set").finish(log);
    if let Err(MeterError::NeedsAllChunks { .. }) = measured {
        let mut again = Meter::new(None).retaining_all_chunks();
        let log = crate::log::load(src, load, &mut again)?;
        measured = again.finish(&log);
    }
    Ok((measured, cache.finish(log), verifier.finish(log).findings))
}
