//! `dsh cache --json`: the prompt-cache analysis of one log (a report) or
//! of many (`{logs, summary}`).

use schemars::JsonSchema;
use serde::Serialize;

use super::error::Refused;
use super::surface::NodeType;
use super::{Document, SchemaVersion};
use crate::cache::{
    self, Block, BreakEven, CacheReport, CauseCosts, DeepSeekRule, Idle, Prices, RequestCost,
    Segment,
};
use crate::hidden_prefix::HiddenPrefix;
use crate::log::LoadError;
use crate::meter::tokenizer::Encoding;

/// The prompt-cache analysis of one log (a report), or of many logs or a
/// home (`{logs, summary}`: a report or a refusal per log). Predictions are
/// what the provider's published cache rule implies on dsh's token
/// positions, not the provider's bill.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Cache<'a> {
    /// One log.
    One(Box<One<'a>>),
    /// Many logs.
    Many(Box<Many<'a>>),
}

impl Document for Cache<'_> {
    const NAME: &'static str = "cache";
    const TITLE: &'static str = "dsh cache --json";
}

/// One log's report.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct One<'a> {
    /// The report.
    #[serde(flatten)]
    pub report: Report<'a>,
    /// One log alone: what it cannot see (hits on prefixes other sessions left in the provider's cache).
    pub cross_session: &'static str,
    /// The hidden prefix estimate (--tokenizer deepseek-v4), else null.
    pub hidden_prefix: Option<Hidden>,
    /// Version of this document's shape; bumped on a breaking change.
    #[serde(rename = "schema_version")]
    pub schema_version: SchemaVersion,
}

/// Many logs: a report or a refusal each, and the totals.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Many<'a> {
    /// One entry per log.
    pub logs: Vec<Entry<'a>>,
    /// The counts and totals over every log.
    pub summary: Summary,
    /// Predictions are what the provider's published cache rule implies, not the provider's bill.
    pub note: &'static str,
    /// Version of this document's shape; bumped on a breaking change.
    #[serde(rename = "schema_version")]
    pub schema_version: SchemaVersion,
}

/// One log of many.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Entry<'a> {
    /// A log analysed.
    Report(Box<Logged<'a>>),
    /// A log the loader refused.
    Refused(Refused),
}

/// A log analysed, among many.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Logged<'a> {
    /// The report.
    #[serde(flatten)]
    pub report: Report<'a>,
    /// The hidden prefix estimate (--tokenizer deepseek-v4), else null.
    pub hidden_prefix: Option<Hidden>,
}

/// The counts and totals of many logs.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Logs analysed.
    pub logs: u64,
    /// Logs refused.
    pub errors: u64,
    /// The cross-session cache over these logs (null when off: --cross-session-lifetime 0, or one log).
    pub cross_session: Option<CrossSession>,
    /// The totals over every log.
    pub totals: Totals,
}

/// The cross-session cache.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CrossSession {
    /// How long a prefix stays usable by another session after its last use (--cross-session-lifetime).
    pub lifetime_ms: u64,
    /// Requests whose predicted hit is another session's prefix.
    pub hits: u64,
}

/// One log's analysis.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Report<'a> {
    /// The log as given on the command line (`-` for standard input).
    pub file: &'a str,
    /// The session id of the log's header.
    pub session: &'a str,
    /// Whether the log's times are real (else normalised: idle gaps unknown).
    pub times_real: bool,
    /// Failed attempts not counted as requests: nothing shows the provider received them.
    pub attempts_not_sent: u64,
    /// With --calibrate: the factor every token figure was rescaled by; null when unscaled.
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub calibrated: Option<f64>,
    /// --tokenizer, or null for the heuristic.
    pub tokenizer: Option<Encoding>,
    /// The cache rules applied.
    pub rule: Rule<'a>,
    /// One entry per model request.
    pub requests: Vec<Request<'a>>,
    /// One entry per replacement (compaction, prune).
    pub replacements: Vec<Replacement<'a>>,
    /// The totals over the log's own requests.
    pub totals: Totals,
    /// Predictions are what the provider's published cache rule implies, not the provider's bill.
    pub note: &'static str,
}

/// The cache rules.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Rule<'a> {
    /// DeepSeek's prefix units.
    pub deepseek: &'a DeepSeekRule,
    /// Anthropic's breakpoints.
    pub anthropic: AnthropicRule,
}

/// Anthropic's rule.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AnthropicRule {
    /// The layout in canonical form: `none`, or `PLACE:TTL,…` in prompt order.
    #[schemars(regex(
        pattern = r"^(none|(tools|system|first-user|prev-user|last):(5m|1h)(,(tools|system|first-user|prev-user|last):(5m|1h)){0,3})$"
    ))]
    pub breakpoints: String,
    /// The breakpoints in prompt order (at most 4; TTLs never increase).
    #[schemars(length(max = 4))]
    pub layout: Vec<Breakpoint>,
    /// The smallest cacheable prefix, in tokens.
    pub min_tokens: u64,
    /// Blocks a breakpoint looks back for an entry.
    pub lookback_blocks: u64,
}

/// One breakpoint.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Breakpoint {
    /// Where it sits.
    #[schemars(extend("enum" = ["tools", "system", "first-user", "prev-user", "last"]))]
    pub at: &'static str,
    /// Its TTL.
    #[schemars(extend("enum" = ["5m", "1h"]))]
    pub ttl: &'static str,
    /// Its TTL in milliseconds.
    #[schemars(extend("enum" = [300000, 3600000]))]
    pub ttl_ms: u64,
}

/// One model request.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Request<'a> {
    /// Its index among the log's requests.
    pub index: u64,
    /// Its seq.
    pub seq: u64,
    /// A request inside a fork child's inherited seed: the parent's, left out of totals.
    pub inherited: bool,
    /// A failed attempt the provider received: its failure code; null for a finished request.
    pub failed: Option<Failed<'a>>,
    /// Its turn, when known.
    #[schemars(with = "Option<u64>")]
    pub turn: Option<f64>,
    /// Its step, when known.
    #[schemars(with = "Option<u64>")]
    pub step: Option<f64>,
    /// `provider/model`.
    pub route: &'a str,
    /// Prompt size, in tokens.
    pub prompt_tokens: u64,
    /// Messages in the prompt.
    pub messages: u64,
    /// The first position that differs from what the previous request left cached.
    pub first_changed: Option<FirstChanged<'a>>,
    /// Why it differs.
    pub cause: Cause<'a>,
    /// The session whose prefix the predicted hit reads, when it is another session's.
    pub cross_session: Option<&'a str>,
    /// The header parts that changed.
    pub header_changes: Vec<&'static str>,
    /// Tokens new to the log since the previous request.
    pub fresh_tokens: u64,
    /// Old tokens sent again after the first changed position.
    pub recomputed_tokens: u64,
    /// The hit the route's rule predicts.
    pub predicted_hit: u64,
    /// The route's rule.
    #[schemars(extend("enum" = ["deepseek", "anthropic"]))]
    pub rule: &'static str,
    /// What each rule predicts.
    pub predicted: Predicted,
    /// promptTokens − predictedHit.
    pub predicted_miss: u64,
    /// What the request's prompt costs as predicted (USD); null when no price is known.
    pub predicted_cost: Option<Cost>,
    /// The usage the provider reported, if any.
    pub reported: Option<Reported<'a>>,
    /// null: no gap to judge; "unknown": normalised times; else the gap.
    pub idle: Idle,
}

/// A failure code.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Failed<'a> {
    /// The code (`unfinished`, `aborted`, or the provider's).
    pub code: &'a str,
}

/// Where a request first differs.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FirstChanged<'a> {
    /// Token index where the changed segment starts.
    pub tokens: u64,
    /// The segment.
    #[schemars(extend("enum" = ["route", "system", "tools", "node", "end"]))]
    pub segment: &'static str,
    /// The content block the change begins in; null past every segment.
    pub block: Option<&'a Block>,
    /// Token index of the block's start.
    pub block_tokens: u64,
    /// A node: its seq.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub seq: Option<u64>,
    /// A node: its surface position.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub position: Option<u64>,
    /// A node: its event type.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    #[schemars(with = "NodeType")]
    pub kind: Option<NodeType>,
}

/// A cause.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Cause<'a> {
    /// The cause's key.
    #[schemars(extend("enum" = ["first", "append", "compaction", "prune", "replacement", "header:system", "header:tools", "header:adapterDefaults", "header:config", "image-offload", "route", "lifecycle", "idle", "fork", "cross-session", "unknown"]))]
    pub kind: String,
    /// `header`: the part.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", extend("enum" = ["system", "tools", "adapterDefaults", "config"]))]
    pub part: Option<&'static str>,
    /// `route`: the route before.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub from: Option<&'a str>,
    /// `route`: the route now.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub to: Option<&'a str>,
    /// `idle`: milliseconds since the previous request.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub gap_ms: Option<u64>,
    /// `fork`: the parent session.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub parent: Option<&'a str>,
    /// `cross-session`: the session whose prefix the first request hit.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub session: Option<&'a str>,
    /// The event the cause names.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub seq: Option<u64>,
}

/// What each rule predicts.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Predicted {
    /// DeepSeek's prefix-unit rule: the predicted hit, on every route.
    pub deepseek: u64,
    /// Anthropic's rule: tokens read and written (0 where it does not predict).
    pub anthropic: AnthropicPrediction,
}

/// Anthropic's prediction.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AnthropicPrediction {
    /// Tokens read.
    pub hit: u64,
    /// All tokens written: write5m + write1h.
    pub write: u64,
    /// Tokens written to 5-minute entries.
    #[serde(rename = "write5m")]
    pub write_5m: u64,
    /// Tokens written to 1-hour entries.
    #[serde(rename = "write1h")]
    pub write_1h: u64,
}

/// A predicted prompt cost.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Cost {
    /// Predicted hit × the hit rate.
    #[schemars(range(min = 0))]
    pub hit: f64,
    /// Predicted cache writes × their rates.
    #[schemars(range(min = 0))]
    pub write: f64,
    /// The rest of the prompt × the uncached input rate.
    #[schemars(range(min = 0))]
    pub uncached: f64,
    /// hit + write + uncached.
    #[schemars(range(min = 0))]
    pub total: f64,
    /// Always USD.
    #[schemars(extend("const" = "USD"))]
    pub currency: &'static str,
    /// Requests left out of the sum for want of a price.
    pub unpriced_requests: u64,
}

impl From<RequestCost> for Cost {
    fn from(c: RequestCost) -> Cost {
        Cost {
            hit: c.hit,
            write: c.write,
            uncached: c.uncached,
            total: c.total(),
            currency: c.currency,
            unpriced_requests: c.unpriced as u64,
        }
    }
}

/// The usage the provider reported.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Reported<'a> {
    /// The usage.
    #[serde(flatten)]
    pub usage: &'a cache::Reported,
    /// The three input figures summed.
    #[schemars(with = "u64")]
    pub prompt_tokens: f64,
}

impl<'a> Reported<'a> {
    fn of(usage: &'a cache::Reported) -> Self {
        Reported {
            usage,
            prompt_tokens: usage.prompt(),
        }
    }
}

/// One replacement.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Replacement<'a> {
    /// The replacing event.
    pub seq: u64,
    /// What it is.
    #[schemars(extend("enum" = ["compaction", "prune", "replacement", "system-head"]))]
    pub kind: &'static str,
    /// Its surface position.
    pub position: u64,
    /// Tokens it shadows.
    pub shadowed_tokens: u64,
    /// Tokens of the replacement.
    pub replacement_tokens: u64,
    /// The first request after it.
    pub next_request: Option<u64>,
    /// Old tokens that request sends again.
    pub recomputed_tokens: u64,
    /// Of those, the ones written to 5-minute entries (Anthropic's rule).
    #[serde(rename = "recomputedWrite5m")]
    pub recomputed_write_5m: u64,
    /// Of those, the ones written to 1-hour entries (Anthropic's rule).
    #[serde(rename = "recomputedWrite1h")]
    pub recomputed_write_1h: u64,
    /// An earlier change of the same request that loses the cache anyway.
    pub covered_by: Option<Cause<'a>>,
    /// The summariser's call.
    pub summary: Option<SummaryCall<'a>>,
    /// Tokens it took off every later request, summed (negative when it is larger).
    pub saved_tokens: i64,
    /// Later requests it shortened.
    pub saved_requests: u64,
    /// A later replacement that shadows it.
    pub superseded_by: Option<u64>,
    /// When the saved tokens pay back the recomputed ones.
    pub break_even: BreakEven,
    /// Its cost (USD), or null without prices.
    pub cost: Option<ReplacementCost>,
}

/// A summariser call.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SummaryCall<'a> {
    /// Its seq.
    pub seq: u64,
    /// The provider.
    pub provider: &'a str,
    /// The model.
    pub model: &'a str,
    /// Its reported usage.
    pub usage: Option<Reported<'a>>,
    /// Prompt + output tokens.
    #[schemars(with = "u64")]
    pub tokens: f64,
}

/// A replacement's cost.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplacementCost {
    /// The recomputed tokens at the rate they are billed at, less the hit rate.
    #[schemars(range(min = 0))]
    pub recompute: f64,
    /// The part of recompute of the tokens written to the cache.
    pub recompute_write: f64,
    /// The summariser's call.
    #[schemars(range(min = 0))]
    pub summary: f64,
    /// The saved tokens at the hit rate.
    pub saved: f64,
    /// When it pays back in money.
    pub break_even: BreakEven,
    /// The currency.
    pub currency: &'static str,
}

/// Totals over requests.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Totals {
    /// Requests (inherited ones left out).
    pub requests: u64,
    /// Failed attempts among the requests.
    pub failed_requests: u64,
    /// Σ prompt tokens.
    pub prompt_tokens: u64,
    /// Σ predicted hits.
    pub predicted_hit: u64,
    /// predictedHit ÷ promptTokens.
    #[schemars(range(min = 0))]
    pub predicted_rate: Option<f64>,
    /// Σ predicted writes to 5-minute entries.
    #[serde(rename = "predictedWrite5m")]
    pub predicted_write_5m: u64,
    /// Σ predicted writes to 1-hour entries.
    #[serde(rename = "predictedWrite1h")]
    pub predicted_write_1h: u64,
    /// The predicted prompt cost of the priced requests; null when none has a price.
    pub predicted_cost: Option<Cost>,
    /// Requests without a known price, left out of every cost.
    pub unpriced_requests: u64,
    /// Requests with reported usage.
    pub reported_requests: u64,
    /// Σ reported prompt tokens.
    #[schemars(with = "u64")]
    pub reported_prompt: f64,
    /// Σ reported cache reads.
    #[schemars(with = "u64")]
    pub reported_hit: f64,
    /// reportedHit ÷ reportedPrompt.
    #[schemars(range(min = 0))]
    pub reported_rate: Option<f64>,
    /// Reported ÷ computed prompt size over the requests with usage.
    #[schemars(range(min = 0))]
    pub calibration: Option<f64>,
    /// Per cause.
    pub by_cause: Vec<ByCause>,
}

/// One cause's totals.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ByCause {
    /// The cause's key.
    #[schemars(extend("enum" = ["first", "append", "compaction", "prune", "replacement", "header:system", "header:tools", "header:adapterDefaults", "header:config", "image-offload", "route", "lifecycle", "idle", "fork", "cross-session", "unknown"]))]
    pub cause: String,
    /// Its requests.
    pub requests: u64,
    /// Their predicted misses.
    pub predicted_miss: u64,
    /// Their recomputed tokens.
    pub recomputed_tokens: u64,
    /// What the misses of its priced requests cost; null when none has a price.
    #[schemars(range(min = 0))]
    pub miss_cost_usd: Option<f64>,
    /// Its requests without a known price.
    pub unpriced_requests: u64,
}

/// The hidden prefix a placeholder log's head is estimated to hold.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Hidden {
    /// The header's placeholders.
    #[schemars(with = "Vec<Placeholder>")]
    pub placeholders: Vec<&'static str>,
    /// The estimate, in provider tokens.
    #[schemars(range(min = 1))]
    pub tokens: u64,
    /// The request it was estimated on.
    pub seq: u64,
    /// The provider's prompt size there.
    pub reported: u64,
    /// dsh's prompt size there, without the prefix.
    pub computed: u64,
    /// The session's totals without the prefix.
    pub without: Without,
}

/// A placeholder part of the header.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Placeholder {
    /// The system prompt.
    System,
    /// The tools.
    Tools,
}

/// Totals without the hidden prefix.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Without {
    /// Σ prompt tokens.
    pub prompt_tokens: u64,
    /// Σ predicted hits.
    pub predicted_hit: u64,
    /// Their difference.
    pub predicted_miss: u64,
}

impl Hidden {
    /// The estimate of `h`, if any.
    pub(crate) fn of(h: &Option<HiddenPrefix>) -> Option<Hidden> {
        let h = h.as_ref()?;
        let w = &h.without;
        Some(Hidden {
            placeholders: h.placeholders.clone(),
            tokens: h.tokens,
            seq: h.seq,
            reported: h.reported,
            computed: h.computed,
            without: Without {
                prompt_tokens: w.prompt_tokens,
                predicted_hit: w.predicted_hit,
                predicted_miss: w.prompt_tokens.saturating_sub(w.predicted_hit),
            },
        })
    }
}

impl<'a> Cache<'a> {
    /// One log's document.
    pub fn one(r: &'a CacheReport, hidden: &Option<HiddenPrefix>, prices: &dyn Prices) -> Self {
        Cache::One(Box::new(One {
            report: Report::new(r, prices),
            cross_session: cache::ONE_LOG,
            hidden_prefix: Hidden::of(hidden),
            schema_version: SchemaVersion,
        }))
    }

    /// Many logs' document: the reports, then the refused logs by file.
    pub fn many(
        reports: &'a [CacheReport],
        hidden: &[Option<HiddenPrefix>],
        errors: &[(String, LoadError)],
        cross: Option<u64>,
        prices: &dyn Prices,
    ) -> Self {
        let mut totals = cache::Totals::default();
        let mut logs: Vec<Entry<'a>> = Vec::new();
        for (r, h) in reports.iter().zip(hidden) {
            totals.add(r);
            logs.push(Entry::Report(Box::new(Logged {
                report: Report::new(r, prices),
                hidden_prefix: Hidden::of(h),
            })));
        }
        for (file, e) in errors {
            logs.push(Entry::Refused(Refused::of(file.clone(), e)));
        }
        let costs = cache::cause_costs(reports, prices);
        Cache::Many(Box::new(Many {
            logs,
            summary: Summary {
                logs: reports.len() as u64,
                errors: errors.len() as u64,
                cross_session: cross.map(|lt| CrossSession {
                    lifetime_ms: lt,
                    hits: cache::cross_hits(reports) as u64,
                }),
                totals: Totals::new(&totals, &costs, cache::predicted_cost(reports, prices)),
            },
            note: cache::NOT_A_BILL,
            schema_version: SchemaVersion,
        }))
    }
}

impl<'a> Report<'a> {
    /// The report of `r`, priced with `prices`.
    fn new(r: &'a CacheReport, prices: &dyn Prices) -> Self {
        let a = &r.anthropic;
        Report {
            file: &r.file,
            session: &r.session,
            times_real: r.times_real,
            attempts_not_sent: r.attempts_not_sent as u64,
            calibrated: r.calibrated,
            tokenizer: r.tokenizer,
            rule: Rule {
                deepseek: &r.deepseek,
                anthropic: AnthropicRule {
                    breakpoints: a.breakpoints.to_string(),
                    layout: (a.breakpoints.list().iter())
                        .map(|b| Breakpoint {
                            at: b.at.as_str(),
                            ttl: b.ttl.as_str(),
                            ttl_ms: b.ttl.ms(),
                        })
                        .collect(),
                    min_tokens: a.min_tokens,
                    lookback_blocks: a.lookback as u64,
                },
            },
            requests: (r.requests.iter())
                .map(|q| Request::new(r, q, prices))
                .collect(),
            replacements: (0..r.replacements.len())
                .map(|i| Replacement::new(r, i, prices))
                .collect(),
            totals: Totals::new(
                &r.totals(),
                &cache::cause_costs(std::slice::from_ref(r), prices),
                r.predicted_cost(prices),
            ),
            note: cache::NOT_A_BILL,
        }
    }
}

impl<'a> Request<'a> {
    fn new(r: &CacheReport, q: &'a cache::Request, prices: &dyn Prices) -> Self {
        Request {
            index: q.index as u64,
            seq: q.seq,
            inherited: q.inherited,
            failed: q.failed.as_ref().map(|f| Failed { code: &f.code }),
            turn: q.turn,
            step: q.step,
            route: &q.route,
            prompt_tokens: q.prompt_tokens,
            messages: q.messages as u64,
            first_changed: q.first_changed.as_ref().map(FirstChanged::new),
            cause: Cause::new(&q.cause),
            cross_session: q.cross_session.as_deref(),
            header_changes: q.header_changes.iter().map(|h| h.as_str()).collect(),
            fresh_tokens: q.fresh_tokens,
            recomputed_tokens: q.recomputed_tokens,
            predicted_hit: q.predicted_hit,
            rule: cache::rule_for(&q.provider),
            predicted: Predicted {
                deepseek: q.deepseek_hit,
                anthropic: AnthropicPrediction {
                    hit: q.anthropic.hit,
                    write: q.anthropic.write(),
                    write_5m: q.anthropic.write_5m,
                    write_1h: q.anthropic.write_1h,
                },
            },
            predicted_miss: q.predicted_miss(),
            predicted_cost: r.request_cost(q, prices).map(Cost::from),
            reported: q.reported.as_ref().map(Reported::of),
            idle: q.idle,
        }
    }
}

impl<'a> FirstChanged<'a> {
    fn new(p: &'a cache::Position) -> Self {
        let node = match &p.segment {
            Segment::Node {
                seq,
                position,
                kind,
            } => Some((*seq, *position as u64, NodeType::from(*kind))),
            _ => None,
        };
        FirstChanged {
            tokens: p.tokens,
            segment: p.segment.as_str(),
            block: p.block.as_ref(),
            block_tokens: p.block_tokens,
            seq: node.map(|n| n.0),
            position: node.map(|n| n.1),
            kind: node.map(|n| n.2),
        }
    }
}

impl<'a> Cause<'a> {
    fn new(c: &'a cache::Cause) -> Self {
        let mut out = Cause {
            kind: c.key(),
            part: None,
            from: None,
            to: None,
            gap_ms: None,
            parent: None,
            session: None,
            seq: c.seq(),
        };
        match c {
            cache::Cause::Header { part } => out.part = Some(part.as_str()),
            cache::Cause::Route { from, to } => {
                (out.from, out.to) = (Some(from.as_str()), Some(to.as_str()))
            }
            cache::Cause::Idle { gap_ms } => out.gap_ms = Some(*gap_ms),
            cache::Cause::Fork { parent } => out.parent = Some(parent.as_str()),
            cache::Cause::CrossSession { session } => out.session = Some(session.as_str()),
            _ => {}
        }
        out
    }
}

impl<'a> Replacement<'a> {
    fn new(r: &'a CacheReport, i: usize, prices: &dyn Prices) -> Self {
        let x = &r.replacements[i];
        let (w5, w1) = match (x.next_request, &x.covered_by) {
            (Some(n), None) => r.requests[n].recomputed_writes(),
            _ => (0, 0),
        };
        Replacement {
            seq: x.seq,
            kind: x.kind.as_str(),
            position: x.position as u64,
            shadowed_tokens: x.shadowed_tokens,
            replacement_tokens: x.replacement_tokens,
            next_request: x.next_request.map(|n| n as u64),
            recomputed_tokens: x.recomputed_tokens,
            recomputed_write_5m: w5,
            recomputed_write_1h: w1,
            covered_by: x.covered_by.as_ref().map(Cause::new),
            summary: x.summary.as_ref().map(|s| SummaryCall {
                seq: s.seq,
                provider: &s.provider,
                model: &s.model,
                usage: s.usage.as_ref().map(Reported::of),
                tokens: s.tokens(),
            }),
            saved_tokens: x.saved_tokens(),
            saved_requests: x.saved.len() as u64,
            superseded_by: x.superseded_by,
            break_even: x.break_even_tokens,
            cost: r.replacement_cost(i, prices).map(|c| ReplacementCost {
                recompute: c.recompute,
                recompute_write: c.recompute_write,
                summary: c.summary,
                saved: c.saved,
                break_even: c.break_even,
                currency: c.currency,
            }),
        }
    }
}

impl Totals {
    /// The totals `t`, with the costs per cause and in all.
    fn new(t: &cache::Totals, costs: &CauseCosts, cost: Option<RequestCost>) -> Self {
        Totals {
            requests: t.requests as u64,
            failed_requests: t.failed_requests as u64,
            prompt_tokens: t.prompt_tokens,
            predicted_hit: t.predicted_hit,
            predicted_rate: t.predicted_rate(),
            predicted_write_5m: t.predicted_write_5m,
            predicted_write_1h: t.predicted_write_1h,
            predicted_cost: cost.map(Cost::from),
            unpriced_requests: cost.map_or(t.requests, |c| c.unpriced) as u64,
            reported_requests: t.reported_requests as u64,
            reported_prompt: t.reported_prompt,
            reported_hit: t.reported_hit,
            reported_rate: t.reported_rate(),
            calibration: t.calibration(),
            by_cause: (t.by_cause.iter())
                .map(|(k, n, miss, rec)| ByCause {
                    cause: k.clone(),
                    requests: *n as u64,
                    predicted_miss: *miss,
                    recomputed_tokens: *rec,
                    miss_cost_usd: costs.get(k).and_then(|c| c.0),
                    unpriced_requests: costs.get(k).map_or(0, |c| c.1) as u64,
                })
                .collect(),
        }
    }
}
