//! Open-loop replay of a recorded session under other compaction policies.
//!
//! The simulated surface is the recorded content (every event the agent
//! appended, in order) with the simulated policy's own replacements applied
//! instead of the recorded ones. Before each step (at every
//! `step/start`, where the reference's `agent/pre-step` hook runs) the
//! automatic path of compaction §2.5 runs on it exactly as
//! `dsh compact --mode pressure` would: measure with the [`Meter`], prune with
//! [`crate::prune::plan_nodes`], select with [`crate::range::select_range`],
//! replace with a checkpoint; a request whose size exceeds the window takes
//! the overflow path of §2.6 (prune, one maximal bracket, at most
//! `maxOverflowRetries` times). The agent's behaviour is taken as recorded: a
//! different policy would have changed what the agent did next.
//!
//! Requests are sized at the point they were sent (`crate::attempt`: the
//! log as it stood just before the attempt's first record, after the turn's
//! user message, the request header and any splices), failed attempts
//! included: the recorded lane's figure there is `dsh measure --at SEQ-1`.
//! The overflow path runs at that point too (a request over the window
//! fails, is compacted and retried). Recorded brackets are named by their
//! mode as the log places them (`crate::attempt::Modes`): an attempt that
//! failed with `CONTEXT_WINDOW_EXCEEDED` and the bracket after it count as
//! an overflow and an overflow compaction.
//!
//! Every policy is one *lane* of one streaming pass (a sweep costs one read
//! of the log, not one per policy); the recorded run is a lane that mirrors
//! the loader's own surface. Each lane keeps its own meter and its own cache
//! fold ([`crate::cache`]'s DeepSeek prefix-unit rule), so a request's size
//! is the meter's incremental figure, never a re-measure of the surface.
//!
//! The provider-usage anchor of a simulated lane is the recorded usage
//! shifted by the difference between the recorded and the simulated surface
//! when the step began (zero in the identity replay, so the figures are
//! `dsh measure --at` exactly). With [`SimOptions::tokenizer`] each request
//! is also counted in the provider's tokens by the lane's cache fold (a
//! placeholder log's hidden prefix included): that count, not DSH's, says
//! whether it overflows the window. Summaries are not generated: a checkpoint is
//! priced at the recorded checkpoint's size when the simulated range is a
//! recorded one, else by [`SummarySize`].

use std::collections::HashMap;
use std::sync::Arc;

use crate::attempt::{Attempts, CompactionMode, Modes, Outcome, Reported, Seen};
use crate::cache::{CacheOptions, Prices};
use crate::compact::summary;
use crate::config::Config;
use crate::event::{Event, Kind, OwnedEvent, ReplaceOp, SurfaceOp, owned_event};
use crate::hidden_prefix::HiddenPrefix;
use crate::json::Value;
use crate::log::{ChunkRun, Folded, LoadError, LoadOptions, LogSource, Observer};
use crate::meter::tokenizer::Encoding;
use crate::meter::{Meter, MeterError};
use crate::policy::{Budgets, Policy, Retention};
use crate::prune::{PruneConfig, PruneError};
use crate::range::{Region, Selection, select_range};
use crate::surface::{Applied, Node, NodeBody, NodeFacts, Surface, SurfaceError};

/// Seqs of simulated events start here, far above any recorded seq.
const SIM_SEQ_BASE: u64 = 1 << 48;

/// One policy to simulate; `None` fields come from the config for the
/// routed target (the reference's defaults: 0.8 / 0.16).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SimPolicy {
    /// `thresholdRatio` (values ≥ 1 are allowed: a threshold at or beyond
    /// the window).
    pub threshold_ratio: Option<f64>,
    /// The retained tail.
    pub retention: Option<Retention>,
    /// The pruner; `None` means the config's pruner.
    pub pruner: Option<PruneConfig>,
    /// No pruning at all.
    pub no_prune: bool,
}

/// How big a simulated summary is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SummarySize {
    /// The recorded summaries' ratio of checkpoint tokens to shadowed tokens
    /// when the log has them, else the policy's summary token cap.
    Recorded,
    /// A fixed number of summary tokens.
    Tokens(u64),
    /// A share of the shadowed tokens.
    Ratio(f64),
}

/// What a simulation needs besides the log.
#[derive(Debug, Clone, Default)]
pub struct SimOptions {
    /// The policies, one row each after the recorded one.
    pub policies: Vec<SimPolicy>,
    /// The routed target's window (else config, logged `request/context`,
    /// built-in table).
    pub context_window: Option<u64>,
    /// Summary sizes (`None`: [`SummarySize::Recorded`]).
    pub summary: Option<SummarySize>,
    /// The dsh config (policy and pruner per route).
    pub config: Config,
    /// Count requests with this encoding where the provider counts them:
    /// the window a request overflows, the cache's units, hits and
    /// misses, and [`Row::provider`]. Compaction thresholds stay on DSH's
    /// own estimate, which is what the harness acts on. `deepseek-v4`
    /// renders each request as DeepSeek does, a placeholder log's hidden
    /// prefix estimated ([`crate::hidden_prefix`]).
    pub tokenizer: Option<Encoding>,
}

/// Where the simulated summary sizes came from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SummarySource {
    /// The log's recorded summaries: Σ checkpoint ÷ Σ shadowed tokens.
    RecordedRatio(f64),
    /// `--summary-tokens`.
    Tokens(u64),
    /// `--summary-ratio`.
    Ratio(f64),
    /// No recorded summary: the policy's summary token cap (`maxTokens`).
    Cap,
}

impl SummarySource {
    /// `recorded-ratio`, `tokens`, `ratio`, `cap`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SummarySource::RecordedRatio(_) => "recorded-ratio",
            SummarySource::Tokens(_) => "tokens",
            SummarySource::Ratio(_) => "ratio",
            SummarySource::Cap => "cap",
        }
    }
}

/// What one step of a lane did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum StepKind {
    /// A pruner pass that replaced at least one tool result.
    Prune,
    /// A pressure compaction bracket.
    Compaction,
    /// An overflow compaction bracket (request over the window).
    Overflow,
    /// A recorded manual (`/compact`) bracket.
    Manual,
}

impl StepKind {
    /// `prune`, `compaction`, `overflow`.
    pub fn as_str(self) -> &'static str {
        match self {
            StepKind::Prune => "prune",
            StepKind::Compaction => "compaction",
            StepKind::Overflow => "overflow",
            StepKind::Manual => "manual",
        }
    }

    /// The compaction mode of a bracket step (`None` for a prune).
    fn mode(self) -> Option<CompactionMode> {
        match self {
            StepKind::Prune => None,
            StepKind::Compaction => Some(CompactionMode::Pressure),
            StepKind::Overflow => Some(CompactionMode::Overflow),
            StepKind::Manual => Some(CompactionMode::Manual),
        }
    }
}

/// One simulated (or recorded) replacement (`steps` of `dsh simulate --json`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    /// What it was.
    pub kind: StepKind,
    /// The request's index (0-based, among sent attempts).
    pub request: usize,
    /// The seq where the request it ran before was sent (its attempt's
    /// first record; a pressure step after the log's last request: that
    /// step's `step/start`).
    pub request_seq: u64,
    /// The meter's total before.
    pub tokens_before: f64,
    /// After.
    pub tokens_after: f64,
    /// Shadowed node seqs (compaction: the range, in surface order; prune:
    /// the original tool results); simulated seqs start at 2^48.
    #[serde(rename = "shadowedSeqs")]
    pub shadowed: Vec<u64>,
    /// Shadowed tokens.
    pub shadowed_tokens: u64,
    /// Checkpoint (or pruned results') tokens.
    pub replacement_tokens: u64,
}

/// One row: a policy's figures over the whole log.
#[derive(Debug, Clone, Default)]
pub struct Row {
    /// `recorded` or the policy's label.
    pub label: String,
    /// The policy (`None` for the recorded run).
    pub policy: Option<SimPolicy>,
    /// Resolved threshold ratio and retain budget of the last request's route.
    pub threshold_ratio: Option<f64>,
    /// Resolved retained tail, tokens.
    pub retain_tokens: Option<u64>,
    /// The window of the last request.
    pub context_window: Option<u64>,
    /// Committed compaction brackets (every mode).
    pub compactions: usize,
    /// Of them, by mode: pressure, overflow, manual.
    pub compaction_modes: ModeCounts,
    /// Pruned tool results.
    pub prunes: usize,
    /// Requests that overflowed, each counted once: sized over the window at
    /// their sent point (before a simulated overflow recovery), or, in the
    /// recorded row, failed with `CONTEXT_WINDOW_EXCEEDED`.
    pub overflows: usize,
    /// Requests still over the window after overflow recovery.
    pub unrecovered: usize,
    /// Model requests: every attempt sent, failed ones included (a fork's
    /// inherited seed left out: those are the parent's).
    pub requests: usize,
    /// Requests in a fork's inherited seed, left out of every figure.
    pub inherited_requests: usize,
    /// Of them, the attempts that failed (as recorded: every lane replays
    /// the agent's attempts).
    pub failed: usize,
    /// Peak request size ÷ window.
    pub peak_pressure: f64,
    /// Mean request size ÷ window.
    pub mean_pressure: f64,
    /// Σ request sizes (the meter's figure at each request) over the
    /// requests the provider received (a failed attempt the log shows no
    /// sign of reaching it is left out: `crate::attempt`).
    pub billed_input: f64,
    /// Every request's size, in order, with the seq it was sent at (the
    /// first record of its attempt: sized on the log up to the seq before).
    pub request_sizes: Vec<(u64, f64)>,
    /// The cache model's prompt tokens (heuristic), Σ over requests.
    pub cache_prompt: u64,
    /// Predicted cache-missed tokens, Σ.
    pub cache_missed: u64,
    /// Predicted cache-hit tokens, Σ.
    pub cache_hit: u64,
    /// Their cost (miss tokens × miss rate), summed over the requests with
    /// a known price; `None` only when there are requests and none has one.
    pub miss_cost: Option<f64>,
    /// Hit tokens × hit rate.
    pub hit_cost: Option<f64>,
    /// Summariser prompt + output tokens.
    pub summariser_tokens: f64,
    /// Their cost, summed over the calls with a known price (0 without
    /// calls); `None` only when there are calls and none has one.
    pub summariser_cost: Option<f64>,
    /// miss + hit + summariser cost of everything priced; `None` only when
    /// nothing is.
    pub total_cost: Option<f64>,
    /// Requests (agent and summariser) left out of the costs for want of a
    /// price for their route at their time.
    pub unpriced_requests: usize,
    /// Summariser calls made (recorded, or simulated).
    pub summariser_calls: usize,
    /// Of them, the calls with a price.
    pub summariser_priced: usize,
    /// Currency of the costs.
    pub currency: Option<&'static str>,
    /// Every step.
    pub steps: Vec<Step>,
    /// Why a compaction left the pressure at or over the threshold, or a
    /// lane stopped (one line each).
    pub notes: Vec<String>,
    /// Requests whose simulated surface, after a replacement, held a tool
    /// call without its result or a result without its call.
    pub unbalanced: usize,
    /// Compactions whose pressure after stayed at or over the threshold.
    pub above_after: usize,
    /// With [`SimOptions::tokenizer`]: the requests in the provider's
    /// tokens, where each was sent.
    pub provider: Option<ProviderFigures>,
}

/// A row's requests counted in the provider's tokens ([`SimOptions::tokenizer`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderFigures {
    /// Σ request sizes over the requests the provider received.
    #[serde(rename = "billedInputTokens")]
    pub billed_input: u64,
    /// Peak request size ÷ window.
    #[schemars(range(min = 0))]
    pub peak_pressure: f64,
    /// Mean request size ÷ window.
    #[schemars(range(min = 0))]
    pub mean_pressure: f64,
}

impl Row {
    /// One summariser call and its cost, when priced.
    fn summariser_call(&mut self, cost: Option<f64>) {
        self.summariser_calls += 1;
        if let Some(c) = cost {
            self.summariser_priced += 1;
            self.summariser_cost = Some(self.summariser_cost.unwrap_or(0.0) + c);
        }
    }
}

/// Compaction brackets by mode.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct ModeCounts {
    /// Pressure (pre-step) brackets.
    pub pressure: usize,
    /// Overflow-recovery brackets.
    pub overflow: usize,
    /// Manual (`/compact`) brackets.
    pub manual: usize,
}

impl ModeCounts {
    fn add(&mut self, m: CompactionMode) {
        match m {
            CompactionMode::Pressure => self.pressure += 1,
            CompactionMode::Overflow => self.overflow += 1,
            CompactionMode::Manual => self.manual += 1,
        }
    }
}

/// The simulation of one log.
#[derive(Debug, Clone)]
pub struct Simulation {
    /// The session id.
    pub session: String,
    /// The recorded run first, then one row per policy.
    pub rows: Vec<Row>,
    /// Where the summary sizes came from.
    pub summary: SummarySource,
    /// [`SimOptions::tokenizer`].
    pub tokenizer: Option<Encoding>,
    /// What the log's placeholders hide, estimated (with `deepseek-v4`).
    pub hidden_prefix: Option<HiddenPrefix>,
}

/// A simulation failed.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The log was refused.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The meter could not replay the log.
    #[error("{0}")]
    Meter(#[from] MeterError),
    /// A policy is not usable.
    #[error("{0}")]
    Policy(String),
}

/// The recorded compactions: what the simulated checkpoints copy.
#[derive(Debug, Default)]
struct Recorded {
    /// Shadowed seqs → checkpoint tokens; a replacing node (a recorded
    /// one, or a simulated one) is `None`, so that a simulated range over
    /// its own prune of the same result is the recorded range.
    by_range: HashMap<Vec<Option<u64>>, u64>,
    /// The seqs of recorded replacing nodes.
    replacing: std::collections::HashSet<u64>,
    shadowed: u64,
    checkpoint: u64,
}

/// One lane: a surface, a meter and a cache fold.
struct Lane {
    mirror: bool,
    policy: SimPolicy,
    surface: Surface,
    meter: Meter,
    cache: Option<crate::cache::Collector>,
    row: Row,
    next_seq: u64,
    /// Σ (recorded − simulated) surface tokens at the open step's start.
    step_diff: i64,
    dead: bool,
    /// The latest recorded `compaction/summary` / `compaction/prune`
    /// (mirror lane): what the next replace is.
    pending: Option<Kind>,
    summary_usage: Option<Reported>,
    /// The recorded bracket open now (mirror lane): its mode.
    bracket: Option<CompactionMode>,
    /// The request in flight: its size and whether it counted as an
    /// overflow.
    open: Option<(f64, bool)>,
    /// Every request sent, in order ([`tally`] sums them).
    sent: Vec<Sent>,
}

/// A fork child's inherited seed: where its own events begin, and the
/// parent.
type Fork = Option<(u64, String)>;

/// One request a lane sent.
#[derive(Debug, Clone, Copy)]
struct Sent {
    seq: u64,
    size: f64,
    window: Option<u64>,
    /// Over the window where sent, or (recorded) refused as such.
    over: bool,
    failed: bool,
    /// The provider received it.
    billed: bool,
    /// Its size in the provider's tokens ([`SimOptions::tokenizer`]).
    provider: Option<u64>,
}

/// A lane's request figures, its requests before `cut` (a fork's
/// inherited seed: the parent's requests) left out.
fn tally(row: &mut Row, sent: &[Sent], cut: Option<u64>) {
    let (mut mean, mut pressures, mut sized) = (0.0, 0.0, 0);
    let mut f = ProviderFigures::default();
    for q in sent {
        if cut.is_some_and(|c| q.seq < c) {
            row.inherited_requests += 1;
            continue;
        }
        row.requests += 1;
        row.failed += usize::from(q.failed);
        row.overflows += usize::from(q.over);
        if q.billed {
            row.billed_input += q.size;
        }
        row.request_sizes.push((q.seq, q.size));
        if let Some(w) = q.window {
            let p = q.size / w as f64;
            row.peak_pressure = row.peak_pressure.max(p);
            mean += p;
        }
        // In the provider's tokens, over the requests sized in them.
        if let Some(n) = q.provider {
            sized += 1;
            if q.billed {
                f.billed_input += n;
            }
            if let Some(w) = q.window {
                let p = n as f64 / w as f64;
                f.peak_pressure = f.peak_pressure.max(p);
                pressures += p;
            }
        }
    }
    if row.requests > 0 {
        row.mean_pressure = mean / row.requests as f64;
    }
    if sized > 0 {
        f.mean_pressure = pressures / sized as f64;
        row.provider = Some(f);
    }
}

struct Sim<'a> {
    opts: &'a SimOptions,
    lanes: Vec<Lane>,
    recorded: Recorded,
    summary: SummarySource,
    route: Option<(String, String)>,
    contexts: HashMap<(String, String), f64>,
    requests: usize,
    rec_steps_pending: Vec<Step>,
    prices: &'a dyn Prices,
    times_real: bool,
    time: f64,
    open_turn: bool,
    next_seq: u64,
    tail_done: bool,
    /// The latest recorded `compaction/summary` or `compaction/prune`.
    metering: Option<u64>,
    /// The recorded attempts and their sent points.
    attempts: Attempts,
    /// The recorded brackets' modes.
    modes: Modes,
}

impl Sim<'_> {
    /// The last turn is open: the next step's pre-step hook runs on the log
    /// as it stands, before any crash-repair closer (what `dsh compact
    /// --mode pressure` does on such a log).
    fn tail_hook(&mut self) {
        if self.tail_done || !self.open_turn {
            return;
        }
        self.tail_done = true;
        let at = self.next_seq;
        let mut lanes = std::mem::take(&mut self.lanes);
        for l in lanes.iter_mut().filter(|l| !l.mirror) {
            if !l.dead
                && let Err(e) = self.pre_step(l, at)
            {
                l.row.notes.push(format!("replay stopped at the tail: {e}"));
            }
        }
        self.lanes = lanes;
    }
}

impl Recorded {
    fn key(&self, shadowed: &[u64]) -> Vec<Option<u64>> {
        shadowed
            .iter()
            .map(|&q| (q < SIM_SEQ_BASE && !self.replacing.contains(&q)).then_some(q))
            .collect()
    }
}

fn lane_with(
    mirror: bool,
    policy: SimPolicy,
    label: String,
    all_chunks: bool,
    cache: &CacheOptions,
) -> Lane {
    let meter = Meter::new(None);
    Lane {
        mirror,
        policy: policy.clone(),
        surface: Surface::default(),
        meter: if all_chunks {
            meter.retaining_all_chunks()
        } else {
            meter
        },
        cache: Some(crate::cache::Collector::new(cache)),
        row: Row {
            label,
            policy: (!mirror).then_some(policy),
            ..Row::default()
        },
        next_seq: SIM_SEQ_BASE,
        step_diff: 0,
        dead: false,
        pending: None,
        summary_usage: None,
        bracket: None,
        open: None,
        sent: Vec::new(),
    }
}

/// The summary tokens of a summary capped at `cap` tokens, framed as the
/// checkpoint the reference writes.
fn framed_cap(cap: u64) -> u64 {
    let text = "x".repeat((cap.min(1 << 22) * 4) as usize);
    let s = vec![
        Value::obj()
            .with("type", "text".into())
            .with("text", text.into()),
    ];
    summary::framed_price(&summary::checkpoint_content(&s))
}

/// The prompt of a summariser call over `shadowed` tokens: the shadowed
/// messages plus the instruction.
fn summariser_prompt(shadowed: u64) -> u64 {
    shadowed + crate::heuristic::price_message(&summary::instruction_message())
}

impl Sim<'_> {
    /// The lane's policy (`p` over the config's for the route), its
    /// budgets and its pruner.
    fn policy_for(&self, p: &SimPolicy) -> Option<(Budgets, PruneConfig, Policy)> {
        let (prov, model) = self.route.clone()?;
        if prov.is_empty() || model.is_empty() {
            return None;
        }
        let config = &self.opts.config;
        let mut policy = config.policy_for(&prov, &model);
        if let Some(t) = p.threshold_ratio {
            policy.threshold_ratio = t;
        }
        if let Some(r) = p.retention {
            policy.retention = r;
        }
        let logged = self.contexts.get(&(prov.clone(), model.clone())).copied();
        let cap = config.capacity(&prov, &model, self.opts.context_window, logged)?;
        let budgets = policy.budgets(cap.context_window).ok()?;
        Some((budgets, p.pruner.unwrap_or(config.pruner), policy))
    }

    fn checkpoint_tokens(&self, shadowed: &[u64], shadowed_tokens: u64, cap: u64) -> u64 {
        if let Some(&t) = self.recorded.by_range.get(&self.recorded.key(shadowed)) {
            return t;
        }
        let capped = framed_cap(cap);
        match self.summary {
            SummarySource::RecordedRatio(r) => {
                ((shadowed_tokens as f64 * r).ceil() as u64).min(capped)
            }
            SummarySource::Tokens(n) => framed_cap(n),
            SummarySource::Ratio(r) => {
                let raw = (shadowed_tokens as f64 * r).ceil() as u64;
                framed_cap(raw.min(cap))
            }
            SummarySource::Cap => capped,
        }
    }
}

fn total(lane: &Lane) -> Result<f64, MeterError> {
    lane.meter.total_tokens(&lane.surface)
}

fn feed(lane: &mut Lane, ev: &Event<'_>, applied: Option<&Applied>, to_cache: bool) {
    let folded = lane_folded(&lane.surface, applied);
    lane.meter.event(ev, &folded);
    if to_cache && let Some(c) = &mut lane.cache {
        c.event(ev, &folded);
    }
}

/// What a simulated lane's fold shows its meter and collector: its own
/// surface, and what the event did to it.
fn lane_folded<'s>(surface: &'s Surface, applied: Option<&'s Applied>) -> Folded<'s> {
    Folded {
        applied,
        surface,
        synthetic: false,
        canonical_line: None,
        canonical_offset: None,
    }
}

/// The event of a simulated node (a recorded line read again, or kept).
fn node_event(surface: &Surface, node: &Node) -> Result<OwnedEvent, String> {
    match &node.body {
        NodeBody::Owned(e) => Ok((**e).clone()),
        NodeBody::Span { offset, len } => {
            let r = surface
                .reread
                .as_ref()
                .ok_or_else(|| "node span without a file".to_string())?;
            let bytes = r
                .line_at(*offset, *len as usize)
                .map_err(|e| e.to_string())?;
            let v = crate::log::parse_line_again(&bytes)
                .ok_or_else(|| "the log changed while it was being read".to_string())?;
            let kind = Kind::of(&v.get("type").and_then(|t| t.as_str()).unwrap_or_default());
            Ok(Event {
                kind,
                seq: node.seq,
                line: 0,
                value: v,
            })
        }
    }
}

fn apply_owned(lane: &mut Lane, ev: OwnedEvent, facts: NodeFacts) -> Result<Applied, SurfaceError> {
    let op = ev.surface_op().unwrap_or(SurfaceOp::Append);
    let arc = Arc::new(ev);
    let ev2 = (*arc).clone();
    lane.surface.apply(&ev2, op, facts, NodeBody::Owned(arc))
}

impl Sim<'_> {
    /// One pruner pass over a lane's surface; the number of pruned results.
    fn prune(
        &self,
        lane: &mut Lane,
        cfg: &PruneConfig,
        request: (usize, u64),
    ) -> Result<usize, String> {
        let before = total(lane).map_err(|e| e.to_string())?;
        // A result too short to hold `threshold_chars` code points cannot be
        // pruned: its price is at least a quarter of its UTF-16 length.
        let min_tokens = cfg.threshold_chars / 4;
        let candidates: Vec<Result<(OwnedEvent, u64), PruneError>> = lane
            .surface
            .nodes
            .iter()
            .filter(|n| n.kind == Kind::ToolResult && n.tokens >= min_tokens)
            .map(|n| {
                node_event(&lane.surface, n)
                    .map(|ev| (ev, n.tokens))
                    .map_err(|m| PruneError::Content {
                        seq: n.seq,
                        message: m,
                    })
            })
            .collect();
        let plan = crate::prune::plan_nodes(
            cfg,
            candidates,
            lane.next_seq,
            self.time,
            lane.surface.tokens,
        )
        .map_err(|e| e.to_string())?;
        if plan.pruned.is_empty() {
            return Ok(0);
        }
        lane.next_seq += plan.events.len() as u64;
        let mut shadowed = Vec::new();
        let (mut st, mut rt) = (0, 0);
        for ev in plan.events {
            if ev.kind == Kind::CompactionPrune {
                // The cache fold only: the meter's figure does not depend
                // on metering events, and simulated seqs are not the log's.
                if let Some(c) = &mut lane.cache {
                    c.event(&ev, &lane_folded(&lane.surface, None));
                }
                continue;
            }
            let facts = crate::surface::node_facts(&ev);
            let ev_copy = ev.clone();
            let applied = apply_owned(lane, ev, facts).map_err(|e| e.message)?;
            for s in &applied.shadowed {
                shadowed.push(s.seq);
                st += s.tokens;
            }
            rt += applied.tokens;
            if let Some(c) = &mut lane.cache {
                c.event(&ev_copy, &lane_folded(&lane.surface, Some(&applied)));
            }
        }
        let after = total(lane).map_err(|e| e.to_string())?;
        let n = shadowed.len();
        lane.row.prunes += n;
        lane.row.steps.push(Step {
            kind: StepKind::Prune,
            request_seq: request.1,
            request: request.0,
            tokens_before: before,
            tokens_after: after,
            shadowed,
            shadowed_tokens: st,
            replacement_tokens: rt,
        });
        Ok(n)
    }

    /// One bracket over the range `select_range` picks with `retain`;
    /// `Ok(false)` when selection declined or the summary was not smaller.
    fn bracket(
        &self,
        lane: &mut Lane,
        retain: u64,
        kind: StepKind,
        cap: u64,
        request: (usize, u64),
    ) -> Result<bool, String> {
        let region = match select_range(&lane.surface.nodes, retain).map_err(|e| e.0)? {
            Selection::Declined(_) => return Ok(false),
            Selection::Range(r) => r,
        };
        let before = total(lane).map_err(|e| e.to_string())?;
        let nodes = &lane.surface.nodes;
        let shadowed = region.seqs(nodes);
        let shadowed_tokens = region.tokens(nodes);
        let cp_tokens = self.checkpoint_tokens(&shadowed, shadowed_tokens, cap);
        if let Some(msg) = summary::shrink_violation(cp_tokens, shadowed_tokens) {
            lane.row
                .notes
                .push(format!("request {} (seq {}): {msg}", request.0, request.1));
            return Ok(false);
        }
        let (provider, model) = self.route.clone().unwrap_or_default();
        let sum_seq = lane.next_seq;
        let cp_seq = sum_seq + 1;
        lane.next_seq += 2;
        let sum = self.summary_event(sum_seq, &provider, &model);
        if let Some(c) = &mut lane.cache {
            c.event(&sum, &lane_folded(&lane.surface, None));
        }
        let mut sources = vec![sum_seq];
        sources.extend_from_slice(&shadowed);
        let cp = self.checkpoint_event(cp_seq, sources, &region);
        let facts = NodeFacts {
            tokens: cp_tokens,
            derives: true,
            msg_id: None,
            call_id: None,
            tool_calls: Vec::new(),
            text_units: None,
        };
        let cp_copy = cp.clone();
        debug_assert!(matches!(
            cp.surface_op(),
            Some(SurfaceOp::Replace(ReplaceOp { .. }))
        ));
        let applied = apply_owned(lane, cp, facts).map_err(|e| e.message)?;
        if let Some(c) = &mut lane.cache {
            c.event(&cp_copy, &lane_folded(&lane.surface, Some(&applied)));
            // Its text stands in for a summary nobody wrote: counted at the
            // shadowed range's own ratio of provider tokens to DSH's.
            if self.opts.tokenizer.is_some() && shadowed_tokens > 0 {
                let exact: u64 = shadowed.iter().filter_map(|q| c.exact_tokens(*q)).sum();
                let scaled = cp_tokens as f64 * exact as f64 / shadowed_tokens as f64;
                c.assume_tokens(cp_seq, scaled.round() as u64);
            }
        }
        let after = total(lane).map_err(|e| e.to_string())?;
        let summariser_in = summariser_prompt(shadowed_tokens);
        let summariser_out = cp_tokens;
        lane.row.summariser_tokens += (summariser_in + summariser_out) as f64;
        let rates = self.prices.rates(
            &provider,
            &model,
            self.times_real.then_some(self.time as i64),
        );
        lane.row.summariser_call(
            rates.map(|r| (summariser_in as f64 * r.miss + summariser_out as f64 * r.output) / 1e6),
        );
        lane.row.compactions += 1;
        if let Some(m) = kind.mode() {
            lane.row.compaction_modes.add(m);
        }
        lane.row.steps.push(Step {
            kind,
            request_seq: request.1,
            request: request.0,
            tokens_before: before,
            tokens_after: after,
            shadowed,
            shadowed_tokens,
            replacement_tokens: cp_tokens,
        });
        Ok(true)
    }

    /// The simulated bracket's `compaction/summary` at `seq`.
    fn summary_event(&self, seq: u64, provider: &str, model: &str) -> OwnedEvent {
        owned_event(
            Kind::CompactionSummary,
            seq,
            Value::obj()
                .with("type", "compaction/summary".into())
                .with("seq", seq.into())
                .with("time", self.time.into())
                .with(
                    "data",
                    Value::obj()
                        .with("provider", provider.to_string().into())
                        .with("model", model.to_string().into()),
                ),
        )
    }

    /// The simulated checkpoint at `seq`, replacing `region`.
    fn checkpoint_event(&self, seq: u64, sources: Vec<u64>, region: &Region) -> OwnedEvent {
        owned_event(
            Kind::UserMessage,
            seq,
            Value::obj()
                .with("type", "user/message".into())
                .with("seq", seq.into())
                .with("time", self.time.into())
                .with(
                    "data",
                    Value::obj().with("role", "user".into()).with(
                        "content",
                        Value::Arr(vec![
                            Value::obj()
                                .with("type", "text".into())
                                .with("text", "[simulated checkpoint]".into()),
                        ]),
                    ),
                )
                .with("sourceEventSeqs", sources.into())
                .with(
                    "surfaceOp",
                    Value::obj()
                        .with("op", "replace".into())
                        .with("start", region.start.into())
                        .with("end", region.end.into()),
                ),
        )
    }

    /// The pre-step hook of one simulated lane (the pressure path).
    fn pre_step(&self, lane: &mut Lane, step_seq: u64) -> Result<(), String> {
        let request = (self.requests, step_seq);
        let Some((budgets, pruner, policy)) = self.policy_for(&lane.policy) else {
            return Ok(());
        };
        let threshold = budgets.threshold_tokens as f64;
        let m0 = total(lane).map_err(|e| e.to_string())?;
        if m0 >= threshold {
            let pruned = if lane.policy.no_prune {
                0
            } else {
                self.prune(lane, &pruner, request)?
            };
            let m1 = if pruned > 0 {
                total(lane).map_err(|e| e.to_string())?
            } else {
                m0
            };
            if m1 >= threshold {
                let attempts = policy.compaction_retries + 1;
                let mut now = m1;
                let mut any = false;
                for _ in 0..attempts {
                    if !self.bracket(
                        lane,
                        budgets.retain_tokens,
                        StepKind::Compaction,
                        policy.max_tokens,
                        request,
                    )? {
                        break;
                    }
                    any = true;
                    now = total(lane).map_err(|e| e.to_string())?;
                    if now < threshold {
                        break;
                    }
                }
                if any && now >= threshold {
                    lane.row.above_after += 1;
                    lane.row.notes.push(format!(
                        "request {} (seq {step_seq}): still at or over the threshold after {attempts} compaction attempts ({now} >= {threshold}); the reference warns and continues the turn",
                        request.0
                    ));
                }
            }
        }
        Ok(())
    }

    /// The overflow path of one simulated lane at a request's sent point:
    /// the request would exceed the window. Returns whether it did.
    fn overflow(&self, lane: &mut Lane, request: (usize, u64)) -> Result<bool, String> {
        let Some((budgets, pruner, policy)) = self.policy_for(&lane.policy) else {
            return Ok(false);
        };
        let window = budgets.context_window as f64;
        let mut size = self.window_size(lane)?;
        if size > window {
            let mut tries = 0;
            while size > window && tries < policy.max_overflow_retries {
                tries += 1;
                let before_gen = lane.surface.replace_generation;
                if !lane.policy.no_prune {
                    self.prune(lane, &pruner, request)?;
                }
                self.bracket(lane, 0, StepKind::Overflow, policy.max_tokens, request)?;
                size = self.window_size(lane)?;
                if lane.surface.replace_generation == before_gen {
                    break;
                }
            }
            if size > window {
                lane.row.unrecovered += 1;
            }
            return Ok(true);
        }
        Ok(false)
    }
}

impl Sim<'_> {
    /// A simulated lane's request size against the window: in the
    /// provider's tokens with [`SimOptions::tokenizer`] (the provider
    /// decides a refusal), else DSH's meter.
    fn window_size(&self, lane: &mut Lane) -> Result<f64, String> {
        if self.opts.tokenizer.is_some()
            && let Lane {
                cache: Some(c),
                surface,
                ..
            } = lane
        {
            return Ok(c.prompt_tokens(surface, None) as f64);
        }
        total(lane).map_err(|e| e.to_string())
    }

    /// The request at the sent point in the provider's tokens: the lane's
    /// surface, its node `skip` (the event that began the attempt) left out.
    fn provider_size(
        &self,
        lane: &mut Lane,
        surface: Option<&Surface>,
        skip: Option<u64>,
    ) -> Option<u64> {
        self.opts.tokenizer?;
        let Lane {
            cache,
            surface: own,
            ..
        } = lane;
        Some(cache.as_mut()?.prompt_tokens(surface.unwrap_or(own), skip))
    }
}

impl Sim<'_> {
    /// A request sent at `seq` (module doc): the lane's size there, after
    /// a simulated lane's overflow path.
    fn sent(&mut self, lane: &mut Lane, ev_seq: u64, folded: &Folded<'_>, own: Option<u64>) {
        let request = (self.requests, ev_seq);
        // The recorded surface at the sent point: before the event when
        // it is the `assistant/message` that began its attempt.
        let recorded_tokens = folded.surface.tokens - own.unwrap_or(0);
        let (size, over, provider) = if lane.mirror {
            for mut s in self.rec_steps_pending.drain(..) {
                s.request_seq = ev_seq;
                s.request = request.0;
                s.tokens_after = lane
                    .meter
                    .total_tokens_of(folded.surface, recorded_tokens)
                    .unwrap_or(0.0);
                lane.row.steps.push(s);
            }
            let Ok(size) = lane.meter.total_tokens_of(folded.surface, recorded_tokens) else {
                return;
            };
            let provider = self.provider_size(lane, Some(folded.surface), own.map(|_| ev_seq));
            (size, false, provider)
        } else {
            if lane.dead {
                return;
            }
            let over = match self.overflow(lane, request) {
                Ok(o) => o,
                Err(e) => {
                    lane.row
                        .notes
                        .push(format!("replay stopped at seq {ev_seq}: {e}"));
                    lane.dead = true;
                    return;
                }
            };
            // Steps taken for this request (the pressure path at its
            // step's start, the overflow path here) name where it was sent.
            let mut touched = false;
            for s in lane.row.steps.iter_mut().rev() {
                if s.request != request.0 {
                    break;
                }
                s.request_seq = ev_seq;
                touched = true;
            }
            if touched && !balanced(&lane.surface.nodes) {
                lane.row.unbalanced += 1;
            }
            lane.step_diff = recorded_tokens as i64 - lane.surface.tokens as i64;
            let Ok(size) = total(lane) else {
                return;
            };
            let provider = self.provider_size(lane, None, None);
            (size, over, provider)
        };
        self.record_request(lane, (size, provider), ev_seq, over);
    }

    /// A request sent: its size (DSH's, and the provider's with a
    /// tokenizer, which then judges the window).
    fn record_request(&self, lane: &mut Lane, size: (f64, Option<u64>), seq: u64, over: bool) {
        let (size, provider) = size;
        let budgets = self.policy_for(&lane.policy).map(|p| p.0);
        if let Some(b) = budgets {
            lane.row.threshold_ratio = Some(b.threshold_ratio);
            lane.row.retain_tokens = Some(b.retain_tokens);
        }
        let window = budgets.map(|b| b.context_window).or_else(|| {
            let r = self.route.clone()?;
            self.contexts.get(&r).map(|w| *w as u64)
        });
        let window = window.filter(|w| *w > 0);
        if window.is_some() {
            lane.row.context_window = window;
        }
        let judged = provider.map_or(size, |p| p as f64);
        let over = over || lane.mirror && window.is_some_and(|w| judged > w as f64);
        lane.sent.push(Sent {
            seq,
            size,
            window,
            over,
            failed: false,
            billed: true,
            provider,
        });
        lane.open = Some((size, over));
    }

    /// The attempt in flight ended without its message: a failure. One the
    /// provider never received is not billed; a recorded overflow failure
    /// is an overflow of the recorded row.
    fn ended(&self, lane: &mut Lane, o: &Outcome) {
        if lane.open.take().is_none() {
            return;
        }
        let (Outcome::Failed(f), Some(q)) = (o, lane.sent.last_mut()) else {
            return;
        };
        q.failed = true;
        q.billed = f.reached;
        q.over |= lane.mirror && f.overflow();
    }

    fn mirror_event(
        &mut self,
        lane: &mut Lane,
        ev: &Event<'_>,
        folded: &Folded<'_>,
        mode: Option<CompactionMode>,
    ) {
        if mode.is_some() {
            lane.bracket = mode;
        }
        match ev.kind {
            Kind::CompactionSummary => {
                lane.pending = Some(Kind::CompactionSummary);
                lane.summary_usage = Reported::in_data(ev.data());
            }
            Kind::CompactionPrune => lane.pending = Some(Kind::CompactionPrune),
            _ => {}
        }
        if let (Some(a), Some(SurfaceOp::Replace(_))) = (folded.applied, ev.surface_op()) {
            self.recorded.replacing.insert(ev.seq);
            let shadowed: Vec<u64> = a.shadowed.iter().map(|n| n.seq).collect();
            let st: u64 = a.shadowed.iter().map(|n| n.tokens).sum();
            // The surface before the replacement: its nodes back, the
            // replacing node out.
            let before = lane
                .meter
                .total_tokens_of(
                    folded.surface,
                    (folded.surface.tokens + st).saturating_sub(a.tokens),
                )
                .unwrap_or(0.0);
            let kind = match lane.pending.take() {
                Some(Kind::CompactionPrune) => {
                    lane.row.prunes += 1;
                    Some(StepKind::Prune)
                }
                Some(Kind::CompactionSummary) => {
                    lane.row.compactions += 1;
                    let mode = lane.bracket.unwrap_or(CompactionMode::Pressure);
                    lane.row.compaction_modes.add(mode);
                    let key = self.recorded.key(&shadowed);
                    self.recorded.by_range.insert(key, a.tokens);
                    self.recorded.shadowed += st;
                    self.recorded.checkpoint += a.tokens;
                    let (p, m) = self.route.clone().unwrap_or_default();
                    let rates =
                        self.prices
                            .rates(&p, &m, self.times_real.then_some(self.time as i64));
                    let (tin, tout, cost) = match &lane.summary_usage {
                        Some(u) => (u.prompt(), u.output_tokens, rates.map(|r| r.usage_cost(u))),
                        _ => {
                            let i = summariser_prompt(st) as f64;
                            let o = a.tokens as f64;
                            (i, o, rates.map(|r| (i * r.miss + o * r.output) / 1e6))
                        }
                    };
                    lane.row.summariser_tokens += tin + tout;
                    lane.row.summariser_call(cost);
                    Some(match mode {
                        CompactionMode::Pressure => StepKind::Compaction,
                        CompactionMode::Overflow => StepKind::Overflow,
                        CompactionMode::Manual => StepKind::Manual,
                    })
                }
                _ => None,
            };
            if let Some(kind) = kind {
                // Recorded prunes are one step per pass, as simulated ones.
                match self.rec_steps_pending.last_mut() {
                    Some(s) if kind == StepKind::Prune && s.kind == StepKind::Prune => {
                        s.shadowed.extend(shadowed);
                        s.shadowed_tokens += st;
                        s.replacement_tokens += a.tokens;
                    }
                    _ => self.rec_steps_pending.push(Step {
                        kind,
                        request_seq: 0,
                        request: 0,
                        tokens_before: before,
                        tokens_after: 0.0,
                        shadowed,
                        shadowed_tokens: st,
                        replacement_tokens: a.tokens,
                    }),
                }
            }
        }
        lane.meter.event(ev, folded);
        if let Some(c) = &mut lane.cache {
            c.event(ev, folded);
        }
    }

    fn sim_event(&mut self, lane: &mut Lane, ev: &Event<'_>, folded: &Folded<'_>) {
        if lane.dead {
            return;
        }
        if lane.surface.reread.is_none() {
            lane.surface.reread = folded.surface.reread.clone();
        }
        if ev.kind == Kind::StepStart
            && let Err(e) = self.pre_step(lane, ev.seq)
        {
            lane.row
                .notes
                .push(format!("replay stopped at seq {}: {e}", ev.seq));
            lane.dead = true;
            return;
        }
        let is_compaction = matches!(
            ev.kind,
            Kind::CompactionStart
                | Kind::CompactionSummary
                | Kind::CompactionEnd
                | Kind::CompactionPrune
        );
        // A replacement right after a `compaction/summary` or
        // `compaction/prune` is the recorded policy's; any other (a
        // harness rewrite) is recorded content, applied as such.
        let policy_replace = matches!(
            (folded.applied.map(|a| a.op), self.metering),
            (Some(SurfaceOp::Replace(_)), Some(m)) if m + 1 == ev.seq
        );
        match folded.applied {
            Some(a) if !policy_replace && !is_compaction => {
                let rec = &folded.surface.nodes[a.position];
                let facts = NodeFacts {
                    tokens: rec.tokens,
                    derives: rec.derives,
                    msg_id: rec.msg_id.clone(),
                    call_id: rec.call_id.clone(),
                    tool_calls: rec.tool_calls.clone(),
                    text_units: rec.text_units,
                };
                // Keep the bodies the pruner may need to read when the log
                // cannot be read again.
                let body = rec.body.clone();
                match lane.surface.apply(ev, a.op, facts, body) {
                    Ok(applied) => {
                        if ev.kind == Kind::AssistantMessage && lane.step_diff != 0 {
                            let shifted = shift_usage(ev, lane.step_diff);
                            feed(lane, &shifted, Some(&applied), true);
                        } else {
                            feed(lane, ev, Some(&applied), true);
                        }
                    }
                    Err(e) if a.op != SurfaceOp::Append => {
                        // The simulated policy already shadowed its range.
                        lane.row.notes.push(format!(
                            "recorded replacement at seq {} left out: {}",
                            ev.seq, e.message
                        ));
                        feed(lane, ev, None, false);
                    }
                    Err(e) => {
                        lane.row
                            .notes
                            .push(format!("replay stopped at seq {}: {}", ev.seq, e.message));
                        lane.dead = true;
                    }
                }
            }
            // Recorded replacements and compaction events: the simulated
            // policy writes its own.
            Some(_) => feed(lane, ev, None, false),
            None if is_compaction => feed(lane, ev, None, false),
            None => feed(lane, ev, None, true),
        }
    }
}

/// The recorded usage shifted by the surface the simulated lane does not
/// (or does) hold: the anchor a provider would have reported for it.
fn shift_usage(ev: &Event<'_>, diff: i64) -> OwnedEvent {
    let mut owned = ev.to_owned_event();
    let usage = ev
        .data()
        .get("usage")
        .and_then(|u| u.get("inputTokens"))
        .and_then(|v| v.as_f64());
    if let Some(input) = usage
        && let Value::Obj(_) = owned.value
        && let Some(data) = owned.value.get("data")
    {
        let mut data = data.clone();
        if let Some(u) = data.get("usage") {
            let u = u.clone().with("inputTokens", (input - diff as f64).into());
            data = data.with("usage", u);
        }
        owned.value = owned.value.with("data", data);
    }
    owned
}

impl Sim<'_> {
    /// What an event meant for attempts, for one lane: `before` its fold
    /// (an attempt closed, one sent), else after it (the attempt it ended).
    fn attempt_seen(
        &mut self,
        lane: &mut Lane,
        seen: &Seen,
        seq: u64,
        folded: &Folded<'_>,
        own: Option<u64>,
        before: bool,
    ) {
        if before {
            if let Some(o) = &seen.closed {
                self.ended(lane, o);
            }
            if seen.begins {
                self.sent(lane, seq, folded, own);
            }
        } else if let Some(o) = &seen.ended {
            self.ended(lane, o);
        }
    }
}

impl Observer for Sim<'_> {
    fn event(&mut self, ev: &Event<'_>, folded: &Folded<'_>) {
        if folded.synthetic {
            self.tail_hook();
        } else {
            self.next_seq = ev.seq + 1;
        }
        match ev.kind {
            Kind::TurnStart => self.open_turn = true,
            Kind::TurnEnd => self.open_turn = false,
            _ => {}
        }
        // A G2+ event's embedded chunks carry the times G0's chunk events do.
        for t in ev.stream_times().chain(std::iter::once(ev.time())) {
            if !(t >= 1e12 && t >= self.time) {
                self.times_real = false;
            }
            self.time = t;
        }
        match ev.kind {
            Kind::RequestHeader => {
                let c = ev.data().get("header").and_then(|h| h.get("config"));
                let s = |k: &str| {
                    c.and_then(|c| c.get(k))
                        .and_then(|v| v.as_str())
                        .map(|v| v.into_owned())
                        .unwrap_or_default()
                };
                self.route = Some((s("provider"), s("model")));
            }
            Kind::RequestContext => {
                let d = ev.data();
                if let (Some(p), Some(m), Some(cw)) = (
                    d.get("provider").and_then(|p| p.as_str()),
                    d.get("model").and_then(|m| m.as_str()),
                    d.get("contextWindow").and_then(|c| c.as_f64()),
                ) {
                    self.contexts.insert((p.into_owned(), m.into_owned()), cw);
                }
            }
            _ => {}
        }
        // The lanes are taken out while they fold, so that each can be
        // changed beside the rest of the state (moving a lane out and back
        // per event was most of a replay's time).
        let mut seen = self.attempts.event(ev);
        let mode = self.modes.event(ev, &seen);
        // A request needs a request header (as the cache's does): an attempt
        // before any is not one.
        seen.begins &= self.route.is_some();
        // An `assistant/message` that began its attempt is on the surface
        // already: the request was the surface without it.
        let own = match (seen.begins, folded.applied) {
            (true, Some(a)) if ev.kind == Kind::AssistantMessage && a.op == SurfaceOp::Append => {
                Some(a.tokens)
            }
            _ => None,
        };
        let mut lanes = std::mem::take(&mut self.lanes);
        for l in &mut lanes {
            self.attempt_seen(l, &seen, ev.seq, folded, own, true);
            if l.mirror {
                self.mirror_event(l, ev, folded, mode);
            } else {
                self.sim_event(l, ev, folded);
            }
            self.attempt_seen(l, &seen, ev.seq, folded, own, false);
        }
        self.lanes = lanes;
        if seen.begins {
            self.requests += 1;
        }
        if matches!(ev.kind, Kind::CompactionSummary | Kind::CompactionPrune) {
            self.metering = Some(ev.seq);
        }
    }

    /// A run of delta chunks, taken whole by every lane's meter and cache
    /// collector, as [`Self::event`] feeds them each chunk: they change no
    /// surface and begin no request. Taken only when their times pass the
    /// clock's checks chunk by chunk (the first does and none goes back);
    /// otherwise, and for other chunks, they come as events.
    fn chunks(&mut self, run: &ChunkRun<'_>, folded: &Folded<'_>) {
        let labels = run
            .deltas()
            .filter(|_| run.times_rise_from(self.time, 1e12));
        let Some(labels) = labels else {
            return run.each_event(folded, |ev, f| self.event(ev, f));
        };
        self.time = run.last_time;
        self.next_seq = run.seq0 + run.count;
        let at = crate::attempt::At {
            seq: run.last_seq(),
            time: self.time,
            turn: Some(labels.turn),
            step: Some(labels.step),
        };
        let (closed, begins) = self.attempts.chunk_row(run.count, at);
        let begins = begins && self.route.is_some();
        let seen = Seen {
            closed,
            begins,
            ended: None,
        };
        let mut lanes = std::mem::take(&mut self.lanes);
        for l in &mut lanes {
            self.attempt_seen(l, &seen, run.seq0, folded, None, true);
        }
        self.lanes = lanes;
        if begins {
            self.requests += 1;
        }
        for l in &mut self.lanes {
            if l.mirror {
                l.meter.chunks(run, folded);
                if let Some(c) = &mut l.cache {
                    c.chunks(run, folded);
                }
                continue;
            }
            if l.dead {
                continue;
            }
            if l.surface.reread.is_none() {
                l.surface.reread = folded.surface.reread.clone();
            }
            let own = lane_folded(&l.surface, None);
            l.meter.chunks(run, &own);
            if let Some(c) = &mut l.cache {
                c.chunks(run, &own);
            }
        }
    }
}

/// A lane's row: its requests tallied and its cache fold priced, a fork's
/// inherited seed (`fork`: the cut and the parent) left out.
fn finish_row(lane: Lane, file: String, session: String, fork: &Fork, prices: &dyn Prices) -> Row {
    let mut row = lane.row;
    tally(&mut row, &lane.sent, fork.as_ref().map(|f| f.0));
    let mut report = lane.cache.expect("cache fold").finish(file, session);
    if let Some((cut, parent)) = fork {
        crate::cache::fork(&mut report, *cut, parent);
    }
    report.requests.retain(|q| !q.inherited);
    let (mut miss, mut hit, mut priced, mut unpriced) = (0.0, 0.0, 0, 0);
    let mut currency = None;
    for q in &report.requests {
        row.cache_prompt += q.prompt_tokens;
        row.cache_hit += q.predicted_hit;
        row.cache_missed += q.predicted_miss();
        let r = prices.rates(
            &q.provider,
            &q.model,
            report.times_real.then_some(q.time as i64),
        );
        match r {
            Some(r) => {
                currency = Some(r.currency);
                miss += q.predicted_miss() as f64 * r.miss / 1e6;
                hit += q.predicted_hit as f64 * r.hit / 1e6;
                priced += 1;
            }
            None => unpriced += 1,
        }
    }
    // Sums of what is priced; blank only where nothing is.
    let some = priced > 0 || unpriced == 0;
    row.miss_cost = some.then_some(miss);
    row.hit_cost = some.then_some(hit);
    // A summariser that made no call costs nothing.
    if row.summariser_calls == 0 {
        row.summariser_cost = Some(0.0);
    }
    row.unpriced_requests = unpriced + (row.summariser_calls - row.summariser_priced);
    row.currency = currency.or(row.summariser_cost.map(|_| "USD"));
    row.total_cost =
        (priced + row.summariser_priced > 0 || row.unpriced_requests == 0).then(|| {
            row.miss_cost.unwrap_or(0.0)
                + row.hit_cost.unwrap_or(0.0)
                + row.summariser_cost.unwrap_or(0.0)
        });
    row
}

/// How [`Simulation::cheapest`] ranked the rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ranking {
    /// By total cost: every simulated row has one.
    Cost,
    /// By cache-missed plus summariser tokens: some row has no cost.
    Tokens,
}

impl Ranking {
    /// `cost`, `tokens`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Ranking::Cost => "cost",
            Ranking::Tokens => "tokens",
        }
    }
}

impl Simulation {
    /// The cheapest simulated row that never overflowed: by total cost when
    /// every simulated row has one (costs sum what is priced; the rows
    /// replay the same requests, so the same ones are unpriced in each),
    /// else by cache-missed plus summariser tokens; and which ranking.
    pub fn cheapest(&self) -> Option<(usize, Ranking)> {
        let sims = || self.rows.iter().enumerate().skip(1);
        let by = if sims().all(|(_, r)| r.total_cost.is_some()) {
            Ranking::Cost
        } else {
            Ranking::Tokens
        };
        let key = |r: &Row| match (by, r.total_cost) {
            (Ranking::Cost, Some(c)) => c,
            _ => r.cache_missed as f64 + r.summariser_tokens,
        };
        sims()
            .filter(|(_, r)| r.overflows == 0)
            .min_by(|a, b| key(a.1).total_cmp(&key(b.1)))
            .map(|(i, _)| (i, by))
    }
}

/// The policies of a `--sweep` grid (`threshold=FROM:TO:STEP,retain=FROM:TO:STEP`)
/// over `base`, leaving out a retain ratio at or over its threshold.
pub fn sweep(spec: &str, base: &SimPolicy) -> Result<Vec<SimPolicy>, SimError> {
    let (mut ts, mut rs) = (None, None);
    for part in spec.split(',') {
        match part.split_once('=') {
            Some(("threshold", r)) => ts = Some(sweep_axis(r)?),
            Some(("retain", r)) => rs = Some(sweep_axis(r)?),
            _ => {
                return Err(SimError::Policy(format!(
                    "--sweep: {part:?}: expected threshold=FROM:TO:STEP or retain=FROM:TO:STEP"
                )));
            }
        }
    }
    let ts: Vec<Option<f64>> = ts.map_or(vec![base.threshold_ratio], |v| {
        v.into_iter().map(Some).collect()
    });
    let rs: Vec<Option<Retention>> = rs.map_or(vec![base.retention], |v| {
        v.into_iter().map(|r| Some(Retention::Ratio(r))).collect()
    });
    let mut out = Vec::new();
    for t in &ts {
        for r in &rs {
            if let (Some(t), Some(Retention::Ratio(r))) = (t, r)
                && r >= t
            {
                continue;
            }
            out.push(SimPolicy {
                threshold_ratio: *t,
                retention: *r,
                ..base.clone()
            });
        }
    }
    Ok(out)
}

/// One axis of a sweep: `FROM:TO:STEP`, at most 200 values.
fn sweep_axis(spec: &str) -> Result<Vec<f64>, SimError> {
    let bad = || SimError::Policy(format!("--sweep: {spec:?} must be FROM:TO:STEP"));
    let p: Vec<f64> = spec
        .split(':')
        .map(|x| x.trim().parse::<f64>())
        .collect::<Result<_, _>>()
        .map_err(|_| bad())?;
    let [from, to, step] = p[..] else {
        return Err(bad());
    };
    if !(step > 0.0 && from > 0.0 && to >= from) {
        return Err(bad());
    }
    let n = ((to - from) / step + 1e-9).floor() as usize + 1;
    if n > 200 {
        return Err(SimError::Policy(
            "--sweep: at most 200 values per axis".into(),
        ));
    }
    Ok((0..n)
        .map(|i| ((from + step * i as f64) * 1e6).round() / 1e6)
        .collect())
}

/// A short label for a policy: `t0.80 r0.16 prune`.
fn label(p: &SimPolicy) -> String {
    let mut s = String::new();
    match p.threshold_ratio {
        Some(t) => s.push_str(&format!("t{t:.2}")),
        None => s.push_str("t=cfg"),
    }
    match p.retention {
        Some(Retention::Ratio(r)) => s.push_str(&format!(" r{r:.2}")),
        Some(Retention::Tokens(n)) => s.push_str(&format!(" r{n}tok")),
        None => s.push_str(" r=cfg"),
    }
    if p.no_prune {
        s.push_str(" noprune");
    }
    s
}

/// Replay `src` under every policy of `opts` (module doc). Two streaming
/// passes: the recorded run (and its summaries' sizes), then every policy
/// at once.
pub fn simulate(
    src: &LogSource,
    load: &LoadOptions,
    opts: &SimOptions,
    prices: &dyn Prices,
) -> Result<Simulation, SimError> {
    match simulate_with(src, load, opts, prices, false) {
        // A message cites chunks of an earlier step with the same labels:
        // replay again keeping every chunk (as `meter::measure` does).
        Err(SimError::Meter(MeterError::NeedsAllChunks { .. })) => {
            simulate_with(src, load, opts, prices, true)
        }
        r => r,
    }
}

fn simulate_with(
    src: &LogSource,
    load: &LoadOptions,
    opts: &SimOptions,
    prices: &dyn Prices,
    all_chunks: bool,
) -> Result<Simulation, SimError> {
    check_policies(&opts.policies)?;
    // With the provider's tokenizer, every lane's cache fold counts in its
    // tokens, a placeholder log's hidden head included.
    let mut cache = CacheOptions {
        tokenizer: opts.tokenizer,
        ..CacheOptions::default()
    };
    let renders = opts.tokenizer.is_some_and(|e| e == Encoding::DeepSeekV4);
    let hidden = if renders {
        crate::hidden_prefix::estimate_for(src, load, &cache).map_err(|e| match e {
            crate::cache::CacheError::Load(e) => SimError::Load(e),
        })?
    } else {
        None
    };
    cache.hidden_prefix = hidden.as_ref().map(|h| h.tokens);
    let new_sim = |lanes: Vec<Lane>, recorded: Recorded, summary: SummarySource| Sim {
        opts,
        lanes,
        recorded,
        summary,
        route: None,
        contexts: HashMap::new(),
        requests: 0,
        rec_steps_pending: Vec::new(),
        prices,
        times_real: true,
        time: f64::NEG_INFINITY,
        open_turn: false,
        next_seq: 0,
        tail_done: false,
        metering: None,
        attempts: Attempts::default(),
        modes: Modes::default(),
    };
    // Pass 1: the recorded run.
    let mut first = new_sim(
        vec![lane_with(
            true,
            SimPolicy::default(),
            "recorded".into(),
            all_chunks,
            &cache,
        )],
        Recorded::default(),
        SummarySource::Cap,
    );
    let log = crate::log::load(src, load, &mut first)?;
    if let Some(e) = first.lanes[0].meter.error() {
        return Err(SimError::Meter(e.clone()));
    }
    let session = log.header.id.clone();
    // A fork child's seed: its requests are the parent's.
    let fork: Fork = log.header.parent_session.clone().and_then(|parent| {
        let cut = first.lanes[0]
            .cache
            .as_ref()
            .and_then(|c| c.inherited_cut())
            .or(log.header.seed_length)?;
        Some((cut, parent))
    });
    drop(log);
    let recorded = std::mem::take(&mut first.recorded);
    let summary = summary_source(opts.summary, &recorded);
    let mut rows = Vec::new();
    let rec = first.lanes.pop().expect("the recorded lane");
    rows.push(finish_row(
        rec,
        src.display(),
        session.clone(),
        &fork,
        prices,
    ));
    if !opts.policies.is_empty() {
        let lanes = opts
            .policies
            .iter()
            .map(|p| lane_with(false, p.clone(), label(p), all_chunks, &cache))
            .collect();
        let mut second = new_sim(lanes, recorded, summary);
        crate::log::load(src, load, &mut second)?;
        second.tail_hook();
        if let Some(e) = second.lanes.iter().find_map(|l| l.meter.error()) {
            return Err(SimError::Meter(e.clone()));
        }
        for l in second.lanes {
            rows.push(finish_row(l, src.display(), session.clone(), &fork, prices));
        }
    }
    Ok(Simulation {
        session,
        rows,
        summary,
        tokenizer: opts.tokenizer,
        hidden_prefix: hidden,
    })
}

/// Refuse a policy whose threshold or retain ratio is not a positive
/// number.
fn check_policies(policies: &[SimPolicy]) -> Result<(), SimError> {
    for p in policies {
        if let Some(t) = p.threshold_ratio
            && !(t.is_finite() && t > 0.0)
        {
            return Err(SimError::Policy(format!(
                "threshold ratio {t}: must be a positive number"
            )));
        }
        if let Some(Retention::Ratio(r)) = p.retention
            && !(r.is_finite() && r > 0.0)
        {
            return Err(SimError::Policy(format!(
                "retain ratio {r}: must be a positive number"
            )));
        }
    }
    Ok(())
}

/// Where the simulated summaries' sizes come from: the option, else the
/// recorded run's checkpoint-to-shadowed ratio, else the cap.
fn summary_source(size: Option<SummarySize>, recorded: &Recorded) -> SummarySource {
    match size {
        Some(SummarySize::Tokens(n)) => SummarySource::Tokens(n),
        Some(SummarySize::Ratio(r)) => SummarySource::Ratio(r),
        _ if recorded.shadowed > 0 => {
            SummarySource::RecordedRatio(recorded.checkpoint as f64 / recorded.shadowed as f64)
        }
        _ => SummarySource::Cap,
    }
}

/// Every cut a surface's nodes offer is balanced at its end: no tool call
/// without its result, no result without its call (the property every
/// simulated surface keeps).
fn balanced(nodes: &[Node]) -> bool {
    let mut open: Vec<&str> = Vec::new();
    for n in nodes {
        match n.kind {
            Kind::AssistantMessage => open.extend(n.tool_calls.iter().map(|c| &**c)),
            Kind::ToolResult => {
                let Some(id) = n.call_id.as_deref() else {
                    continue;
                };
                match open.iter().position(|c| *c == id) {
                    Some(i) => {
                        open.remove(i);
                    }
                    None => return false,
                }
            }
            _ => {}
        }
    }
    open.is_empty()
}
