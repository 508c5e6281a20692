//! `dsh simulate --json`: a recorded session replayed under other
//! compaction policies, one log or many.

use schemars::JsonSchema;
use serde::Serialize;

use super::cache::Hidden;
use super::{Document, SchemaVersion};
use crate::meter::tokenizer::Encoding;
use crate::simulate::{self, ModeCounts, ProviderFigures, Simulation, Step, SummarySource};

/// The sentence every replay carries.
pub const OPEN_LOOP: &str = "Open-loop replay: the agent's behaviour is taken as recorded; a different policy would have changed what the agent did next.";

/// A recorded session replayed under other compaction policies (one log;
/// several give `{logs: [...], schema_version}`).
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Simulate<'a> {
    /// One log.
    One(Box<One<'a>>),
    /// Several logs.
    Many(Many<'a>),
}

impl Document for Simulate<'_> {
    const NAME: &'static str = "simulate";
    const TITLE: &'static str = "dsh simulate --json";
}

/// One log's replay.
#[derive(Debug, Serialize, JsonSchema)]
pub struct One<'a> {
    /// The replay.
    #[serde(flatten)]
    pub log: Log<'a>,
    /// Version of this document's shape; bumped on a breaking change.
    #[serde(rename = "schema_version")]
    pub schema_version: SchemaVersion,
}

/// Several logs' replays.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Many<'a> {
    /// One replay per log, in order.
    pub logs: Vec<Log<'a>>,
    /// Version of this document's shape; bumped on a breaking change.
    #[serde(rename = "schema_version")]
    pub schema_version: SchemaVersion,
}

/// One log replayed.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Log<'a> {
    /// The log as given on the command line (`-` for standard input).
    pub file: &'a str,
    /// The session id of the log's header.
    pub session: &'a str,
    /// How simulated summaries are sized.
    pub summary: Summary,
    /// --tokenizer: the encoding requests are counted with where the provider counts them; null without it.
    pub tokenizer: Option<Encoding>,
    /// The hidden prefix estimate (--tokenizer deepseek-v4), else null.
    pub hidden_prefix: Option<Hidden>,
    /// The recorded run, then one row per policy.
    #[schemars(length(min = 1))]
    pub rows: Vec<Row<'a>>,
    /// Index in rows of the cheapest policy that never overflows.
    #[schemars(range(min = 1))]
    pub cheapest: Option<u64>,
    /// How cheapest was ranked: by total cost, else by cache-missed plus summariser tokens.
    #[schemars(extend("enum" = ["cost", "tokens", null]))]
    pub cheapest_by: Option<&'static str>,
    /// Open-loop replay: the agent's behaviour is taken as recorded.
    pub note: &'static str,
}

/// How simulated summaries are sized.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Summary {
    /// Where the size comes from.
    #[schemars(extend("enum" = ["recorded-ratio", "tokens", "ratio", "cap"]))]
    pub source: &'static str,
    /// A summary's share of the tokens it shadows.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "f64")]
    pub ratio: Option<f64>,
    /// A summary's size in tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub tokens: Option<u64>,
}

/// One policy's replay.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Row<'a> {
    /// `recorded`, or the policy (t = threshold ratio, r = retain).
    pub label: &'a str,
    /// The recorded run (the first row).
    pub recorded: bool,
    /// The resolved threshold ratio.
    pub threshold_ratio: Option<f64>,
    /// The resolved retained tail, in tokens.
    pub retain_tokens: Option<u64>,
    /// The window of the last request.
    pub context_window: Option<u64>,
    /// Model requests: every attempt sent, each sized where it was sent.
    pub requests: u64,
    /// Compaction brackets (every mode).
    pub compactions: u64,
    /// The compactions by mode.
    pub compaction_modes: ModeCounts,
    /// Of the requests, the recorded attempts that failed.
    pub failed_attempts: u64,
    /// Requests in a fork's inherited seed, left out of every figure.
    pub inherited_requests: u64,
    /// Pruned tool results.
    pub prunes: u64,
    /// Requests over the window at their sent point, each counted once.
    pub overflows: u64,
    /// Requests still over the window after the overflow path.
    pub unrecovered: u64,
    /// Peak request size ÷ window.
    pub peak_pressure: f64,
    /// Mean request size ÷ window.
    pub mean_pressure: f64,
    /// Σ request sizes (DSH's estimate) over the requests the provider received.
    pub billed_input_tokens: f64,
    /// Σ predicted cache-missed tokens.
    pub cache_missed_tokens: u64,
    /// Σ predicted cache-hit tokens.
    pub cache_hit_tokens: u64,
    /// The misses' cost over the priced requests; null when none has a price.
    pub miss_cost: Option<f64>,
    /// The hits' cost over the priced requests; null when none has a price.
    pub hit_cost: Option<f64>,
    /// Summariser prompt + output tokens.
    pub summariser_tokens: f64,
    /// The priced summariser calls' cost; 0 without calls; null when none has a price.
    pub summariser_cost: Option<f64>,
    /// missCost + hitCost + summariserCost of everything priced; null when nothing is.
    pub total_cost: Option<f64>,
    /// Requests (agent and summariser) without a known price, left out of every cost.
    pub unpriced_requests: u64,
    /// Summariser calls (recorded, or simulated).
    pub summariser_calls: u64,
    /// The currency of the costs.
    pub currency: Option<&'static str>,
    /// Pressure hooks that left the request at or over the threshold.
    pub above_threshold_after: u64,
    /// With --tokenizer: the requests in the provider's tokens; null without it.
    pub provider: Option<ProviderFigures>,
    /// Requests whose simulated surface held an orphaned tool call or result.
    pub unbalanced: u64,
    /// Why a compaction left the pressure high, or a lane stopped.
    pub notes: &'a [String],
    /// With --steps: every prune and compaction.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<Step>")]
    pub steps: Option<&'a [Step]>,
}

impl<'a> Simulate<'a> {
    /// The document of `runs` (file, replay): one log, or `{logs}` when
    /// `many`.
    pub fn new(runs: &'a [(String, Simulation)], steps: bool, many: bool) -> Self {
        let mut logs: Vec<Log<'a>> = runs.iter().map(|(f, s)| Log::new(f, s, steps)).collect();
        match logs.pop() {
            Some(log) if !many && logs.is_empty() => Simulate::One(Box::new(One {
                log,
                schema_version: SchemaVersion,
            })),
            last => Simulate::Many(Many {
                logs: logs.into_iter().chain(last).collect(),
                schema_version: SchemaVersion,
            }),
        }
    }
}

impl<'a> Log<'a> {
    fn new(file: &'a str, sim: &'a Simulation, steps: bool) -> Self {
        let cheapest = sim.cheapest();
        Log {
            file,
            session: &sim.session,
            summary: Summary {
                source: sim.summary.as_str(),
                ratio: match sim.summary {
                    SummarySource::RecordedRatio(r) | SummarySource::Ratio(r) => Some(r),
                    _ => None,
                },
                tokens: match sim.summary {
                    SummarySource::Tokens(n) => Some(n),
                    _ => None,
                },
            },
            tokenizer: sim.tokenizer,
            hidden_prefix: Hidden::of(&sim.hidden_prefix),
            rows: sim.rows.iter().map(|r| Row::new(r, steps)).collect(),
            cheapest: cheapest.map(|c| c.0 as u64),
            cheapest_by: cheapest.map(|c| c.1.as_str()),
            note: OPEN_LOOP,
        }
    }
}

impl<'a> Row<'a> {
    fn new(r: &'a simulate::Row, steps: bool) -> Self {
        let n = |x: usize| x as u64;
        Row {
            label: &r.label,
            recorded: r.policy.is_none(),
            threshold_ratio: r.threshold_ratio,
            retain_tokens: r.retain_tokens,
            context_window: r.context_window,
            requests: n(r.requests),
            compactions: n(r.compactions),
            compaction_modes: r.compaction_modes,
            failed_attempts: n(r.failed),
            inherited_requests: n(r.inherited_requests),
            prunes: n(r.prunes),
            overflows: n(r.overflows),
            unrecovered: n(r.unrecovered),
            peak_pressure: r.peak_pressure,
            mean_pressure: r.mean_pressure,
            billed_input_tokens: r.billed_input,
            cache_missed_tokens: r.cache_missed,
            cache_hit_tokens: r.cache_hit,
            miss_cost: r.miss_cost,
            hit_cost: r.hit_cost,
            summariser_tokens: r.summariser_tokens,
            summariser_cost: r.summariser_cost,
            total_cost: r.total_cost,
            unpriced_requests: n(r.unpriced_requests),
            summariser_calls: n(r.summariser_calls),
            currency: r.currency,
            above_threshold_after: n(r.above_after),
            provider: r.provider,
            unbalanced: n(r.unbalanced),
            notes: &r.notes,
            steps: steps.then_some(&r.steps[..]),
        }
    }
}
