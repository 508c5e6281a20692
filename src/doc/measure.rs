//! `dsh measure --json`: one log's context pressure, and many logs'.

use schemars::JsonSchema;
use serde::Serialize;

use super::error::{Kind, LogRefusal, Refusal, Stage};
use super::{Document, SchemaVersion};
use crate::fill::ToolFill;
use crate::log::Location;
use crate::measure::{PolicyReport, Report};
use crate::meter::tokenizer::TokenCounts;
use crate::meter::{Measurement, MeterError, NodeTokens};
use crate::policy::Retention;

/// Context pressure of one log, as the harness's token meter and routed
/// compaction policy compute it: the reference's measure() object plus dsh's
/// keys.
#[derive(Debug, Serialize, JsonSchema)]
pub struct One<'a> {
    /// The measurement.
    #[serde(flatten)]
    pub log: Measured<'a>,
    /// Version of this document's shape; bumped on a breaking change.
    #[serde(rename = "schema_version")]
    pub schema_version: SchemaVersion,
}

impl Document for One<'_> {
    const NAME: &'static str = "measure";
    const TITLE: &'static str = "dsh measure --json (one log)";
}

/// Several LOGs, or a directory of sessions: one entry per log, a
/// measurement or why the log was refused.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Many<'a> {
    /// One entry per log, in the order given.
    pub logs: Vec<Entry<'a>>,
    /// The counts over every log.
    pub summary: Summary,
    /// Version of this document's shape; bumped on a breaking change.
    #[serde(rename = "schema_version")]
    pub schema_version: SchemaVersion,
}

impl Document for Many<'_> {
    const NAME: &'static str = "measure-many";
    const TITLE: &'static str = "dsh measure --json (many logs)";
}

/// One log of many.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Entry<'a> {
    /// A log measured.
    Measured(Box<Measured<'a>>),
    /// A log refused, or one the meter could not replay.
    Refused(LogRefusal),
}

/// Counts over many logs.
#[derive(Debug, Clone, Copy, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Logs given.
    pub logs: u64,
    /// Logs measured.
    pub measured: u64,
    /// Logs at or over their threshold.
    pub over_threshold: u64,
    /// Logs refused.
    pub refused: u64,
}

/// One log measured.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Measured<'a> {
    /// The reference's measure() object.
    #[serde(flatten)]
    pub reference: Reference<'a>,
    /// The log as given on the command line (`-` for standard input).
    pub file: &'a str,
    /// The session id of the log's header.
    pub session: &'a str,
    /// The total by part.
    pub composition: crate::meter::Composition,
    /// The reference's projections, or the error one of them threw.
    pub projections: Projections<'a>,
    /// The routed compaction policy, or why there is none.
    pub policy: PolicyDoc<'a>,
    /// The assistant/message whose anchor the baseline reuses.
    pub anchor_seq: Option<u64>,
    /// The latest request/header.
    pub header_seq: Option<u64>,
    /// Whether --header-json was measured instead of the logged header.
    pub header_override: bool,
    /// With --at: the seq the log was measured at.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub at: Option<u64>,
    /// With --tokenizer: the exact count.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Tokenizer<'a>")]
    pub tokenizer: Option<Tokenizer<'a>>,
    /// With --fill: where the tokens go.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Fill")]
    pub fill: Option<Fill<'a>>,
}

/// The reference's measure() object (the reference's keys and values).
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Reference<'a> {
    /// Events folded.
    pub log_revision: u64,
    /// What the total is anchored on.
    pub baseline: &'a crate::meter::Baseline,
    /// Surface movement since the anchor.
    pub surface_delta_tokens: i64,
    /// The harness's pressure figure: what triggers compaction.
    pub total_tokens: f64,
    /// Sum of the node prices.
    pub surface_tokens: u64,
    /// The surface's nodes and their prices, in surface order.
    pub nodes: &'a [NodeTokens],
}

/// The reference's projections, or where they failed.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Projections<'a> {
    /// The three projections.
    Ok(&'a crate::meter::projection::Projections),
    /// The error one threw.
    Err {
        /// The reference's message.
        error: &'a str,
        /// The event it is about.
        seq: u64,
    },
}

/// The routed compaction policy, or why there is none.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum PolicyDoc<'a> {
    /// The policy.
    Ok(Box<Policy<'a>>),
    /// Why there is none.
    Err {
        /// What is missing.
        error: String,
    },
}

/// The routed target's policy in its window.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Policy<'a> {
    /// The routed provider.
    pub provider: &'a str,
    /// The routed model.
    pub model: &'a str,
    /// Whether a model policy overrides the defaults.
    pub model_policy: bool,
    /// The context window.
    #[schemars(with = "u64")]
    pub context_window: f64,
    /// Where the window came from.
    pub context_window_source: &'static str,
    /// The request/context the window was logged in.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub context_seq: Option<u64>,
    /// thresholdRatio.
    pub threshold_ratio: f64,
    /// retainRatio (or retainTokensAbsolute).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "f64")]
    pub retain_ratio: Option<f64>,
    /// retainTokens of the configuration.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub retain_tokens_absolute: Option<u64>,
    /// Compaction starts at this total.
    pub threshold_tokens: u64,
    /// Tokens kept verbatim when compacting.
    pub retain_tokens: u64,
    /// Whether the total is at or over the threshold.
    pub over_threshold: bool,
    /// Threshold less total (negative when over).
    pub headroom_tokens: f64,
    /// The total in % of the window, to two decimals.
    pub percent_of_window: f64,
}

/// An exact tokenizer count of the envelope and the surface.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Tokenizer<'a> {
    /// The counts.
    #[serde(flatten)]
    pub counts: &'a TokenCounts,
    /// deepseek-v4 on a placeholder log: the estimated hidden prefix, else null.
    #[schemars(range(min = 1))]
    pub hidden_prefix_tokens: Option<u64>,
}

/// The surface by what fills it (DSH heuristic tokens; the parts add up to
/// surfaceTokens).
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Fill<'a> {
    /// = surfaceTokens.
    pub total_tokens: u64,
    /// user + context + assistant.
    pub conversation_tokens: u64,
    /// User-authored messages.
    pub user_tokens: u64,
    /// Injected user-role messages.
    pub context_tokens: u64,
    /// The assistant's text.
    pub assistant_tokens: u64,
    /// Compaction checkpoints.
    pub summary_tokens: u64,
    /// Reasoning blocks.
    pub reasoning_tokens: u64,
    /// Generation-3 system/message nodes.
    pub system_tokens: u64,
    /// Images and other blocks outside tool results.
    pub other_tokens: u64,
    /// Tool results.
    pub tool_result_tokens: u64,
    /// Tool calls.
    pub tool_call_tokens: u64,
    /// Per tool name, largest share first.
    pub tools: &'a [ToolFill],
    /// Surface nodes.
    pub nodes: u64,
    /// Nodes whose recorded price is not the sum of their blocks.
    pub adjusted_nodes: u64,
    /// Their recorded prices less their blocks' sums.
    pub adjustment_tokens: i64,
}

impl<'a> Measured<'a> {
    /// The entry of one log's report.
    pub fn of(r: &'a Report) -> Measured<'a> {
        let m = &r.m;
        Measured {
            reference: Reference::of(m),
            file: &r.file,
            session: &r.session,
            composition: m.composition,
            projections: Projections::of(&m.projections),
            policy: match &r.policy {
                Ok(p) => PolicyDoc::Ok(Box::new(Policy::of(p, m.total_tokens))),
                Err(e) => PolicyDoc::Err {
                    error: e.to_string(),
                },
            },
            anchor_seq: m.anchor_seq,
            header_seq: m.header_seq,
            header_override: m.header_override,
            at: r.at,
            tokenizer: r.tokens.as_ref().map(|(counts, _)| Tokenizer {
                counts,
                hidden_prefix_tokens: r.hidden,
            }),
            fill: r.fill.as_ref().map(Fill::of),
        }
    }
}

impl<'a> Reference<'a> {
    /// The reference's object of a measurement.
    pub fn of(m: &'a Measurement) -> Reference<'a> {
        Reference {
            log_revision: m.log_revision,
            baseline: &m.baseline,
            surface_delta_tokens: m.surface_delta_tokens,
            total_tokens: m.total_tokens,
            surface_tokens: m.surface_tokens,
            nodes: &m.nodes,
        }
    }
}

impl<'a> Projections<'a> {
    /// The projections of a measurement, or their error.
    pub fn of(
        p: &'a Result<crate::meter::projection::Projections, (u64, String)>,
    ) -> Projections<'a> {
        match p {
            Ok(p) => Projections::Ok(p),
            Err((seq, error)) => Projections::Err { error, seq: *seq },
        }
    }
}

impl<'a> Policy<'a> {
    /// A resolved policy, with `total` against it.
    fn of(p: &'a PolicyReport, total: f64) -> Policy<'a> {
        let b = &p.budgets;
        let (retain_ratio, retain_tokens_absolute) = match p.policy.retention {
            Retention::Ratio(r) => (Some(r), None),
            Retention::Tokens(t) => (None, Some(t)),
        };
        Policy {
            provider: &p.policy.provider,
            model: &p.policy.model,
            model_policy: p.policy.overridden,
            context_window: p.capacity.context_window,
            context_window_source: p.capacity.source.as_str(),
            context_seq: p.logged_seq,
            threshold_ratio: p.policy.threshold_ratio,
            retain_ratio,
            retain_tokens_absolute,
            threshold_tokens: b.threshold_tokens,
            retain_tokens: b.retain_tokens,
            over_threshold: b.over_threshold(total),
            headroom_tokens: b.headroom(total),
            percent_of_window: ((total / b.context_window as f64 * 100.0) * 100.0).round() / 100.0,
        }
    }
}

impl<'a> Fill<'a> {
    /// The document of a fill.
    fn of(f: &'a crate::fill::Fill) -> Fill<'a> {
        Fill {
            total_tokens: f.total(),
            conversation_tokens: f.conversation(),
            user_tokens: f.user,
            context_tokens: f.context,
            assistant_tokens: f.assistant,
            summary_tokens: f.summaries,
            reasoning_tokens: f.reasoning,
            system_tokens: f.system,
            other_tokens: f.other,
            tool_result_tokens: f.tool_results(),
            tool_call_tokens: f.tool_calls(),
            tools: &f.tools,
            nodes: f.nodes,
            adjusted_nodes: f.adjusted_nodes,
            adjustment_tokens: f.adjustment,
        }
    }
}

impl<'a> One<'a> {
    /// The document of one log's report.
    pub fn of(r: &'a Report) -> One<'a> {
        One {
            log: Measured::of(r),
            schema_version: SchemaVersion,
        }
    }
}

/// A log the meter could not replay: the refusal `--json` prints.
pub fn replay_refusal(e: &MeterError, file: &str) -> Refusal {
    Refusal {
        kind: Some(Kind::Replay),
        stage: Some(Stage::Measure),
        file: Some(file.to_string()),
        at: seq(e),
        ..Refusal::message(e.to_string())
    }
}

/// A log of many the meter could not replay.
pub fn unreplayable(e: &MeterError, file: &str) -> LogRefusal {
    LogRefusal {
        error: e.to_string(),
        kind: Kind::Replay,
        stage: Stage::Measure,
        file: Some(file.to_string()),
        at: seq(e),
        file_after: None,
    }
}

/// Where a replay failed: at an event.
fn seq(e: &MeterError) -> Location {
    Location {
        line: None,
        seq: Some(e.seq()),
    }
}
