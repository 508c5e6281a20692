//! `dsh prune --json`: what prune appended (or would append), the
//! reference's prune result plus dsh's keys.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;

use super::{Document, SchemaVersion, shape};
use crate::OwnedEvent;
use crate::append::Lifecycle;
use crate::meter::tokenizer::Encoding;
use crate::prune::{PruneConfig, PrunePlan, PrunedResult};
use crate::prune_write::BpeSavings;

/// What prune appended (or, with --dry-run, would append): the reference's
/// prune result plus dsh's keys. (`--dry-run --events` prints the batch
/// itself as JSON Lines of log events instead.)
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Prune<'a> {
    /// The reference's result: its budgets, pairs and savings.
    #[serde(flatten)]
    pub reference: Reported<'a>,
    /// The batch dsh appends (or, in a dry run, would): the reference's
    /// pairs at the seqs of the lifecycle it writes in (`baseSeq` and
    /// `appended` above are the reference's pruneSession on the resumed
    /// session; they differ from these only when dsh continues an open
    /// turn).
    pub write: Write<'a>,
    /// Whether the write continues the log's lifecycle or starts a new
    /// one, as a resuming harness does.
    pub lifecycle: Lifecycle,
    /// The surface's price by the DSH heuristic, before and after.
    pub surface_tokens: SurfaceTokens,
    /// Whether the log's final turn is open (after crash repair).
    pub open_turn: bool,
    /// Whether the stored log's final turn is open.
    pub file_turn_open: bool,
    /// Whether --allow-closed-turn was given.
    pub allow_closed_turn: bool,
    /// Why the write does not (or would not) happen.
    pub refused: Option<String>,
    /// Whether nothing was written.
    pub dry_run: bool,
    /// Whether the batch was written.
    pub written: bool,
    /// The log as given on the command line (`-` for standard input).
    pub file: &'a str,
    /// The session id of the log's header.
    pub session: &'a str,
    /// The copy written with --out, or null.
    pub out: Option<String>,
    /// Events appended (or that would be).
    pub events: u64,
    /// Bytes appended (or that would be).
    pub bytes: u64,
    /// The configuration file the budgets came from, or null.
    pub config_file: Option<String>,
    /// With --tokenizer: the savings by each tokenizer.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tokenizers: Vec<Tokenizer>,
    /// Version of this document's shape; bumped on a breaking change.
    #[serde(rename = "schema_version")]
    pub schema_version: SchemaVersion,
}

impl Document for Prune<'_> {
    const NAME: &'static str = "prune";
    const TITLE: &'static str = "dsh prune --json";
}

/// The reference's prune output plus the lifecycle prefix.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Reported<'a> {
    /// The budgets used.
    pub config: PruneConfig,
    /// The session length before pruning (seq of the first event).
    pub base_seq: u64,
    /// The events, in order: pairs of compaction/prune + tool/result.
    pub appended: Events<'a>,
    /// One entry per rewritten result, in surface order.
    pub pruned: Vec<Pruned<'a>>,
    /// Code points removed in total.
    pub chars_removed: u64,
    /// The closers and session/end-seed marker written first.
    pub lifecycle_events: Events<'a>,
}

/// One rewritten tool result, with its prices.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Pruned<'a> {
    /// The result rewritten.
    #[serde(flatten)]
    pub result: &'a PrunedResult,
    /// Its price (DSH heuristic) before.
    pub tokens_before: u64,
    /// Its price after.
    pub tokens_after: u64,
}

/// The batch dsh writes.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Write<'a> {
    /// The seq of its first pair.
    pub base_seq: u64,
    /// The pairs.
    pub appended: Events<'a>,
}

/// The surface's price, before and after.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SurfaceTokens {
    /// Before.
    pub before: u64,
    /// After.
    pub after: u64,
    /// Saved.
    pub saved: u64,
}

/// One tokenizer's savings.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Tokenizer {
    /// The encoding.
    pub encoding: Encoding,
    /// The surface's tokens before.
    pub before: u64,
    /// After.
    pub after: u64,
    /// Saved.
    pub saved: u64,
    /// Per rewritten result.
    pub pruned: Vec<TokenizerPruned>,
}

/// One rewritten result's tokens by one tokenizer.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenizerPruned {
    /// The tool result rewritten.
    pub original_seq: u64,
    /// Its tokens before.
    pub before: u64,
    /// After.
    pub after: u64,
}

/// Log events, written as stored (borrowed, never copied).
#[derive(Debug, Clone, Copy)]
pub enum Events<'a> {
    /// Events shared with the batch.
    Shared(&'a [Arc<OwnedEvent>]),
    /// Events owned by a plan.
    Owned(&'a [OwnedEvent]),
}

impl Serialize for Events<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Events::Shared(e) => s.collect_seq(e.iter().map(|e| &e.value)),
            Events::Owned(e) => s.collect_seq(e.iter().map(|e| &e.value)),
        }
    }
}

impl JsonSchema for Events<'_> {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Events".into()
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <Vec<shape::Event>>::json_schema(g)
    }
}

impl<'a> Reported<'a> {
    /// The reference's result of `plan` (its events `appended`), after the
    /// lifecycle events `prefix`.
    pub fn of(plan: &'a PrunePlan, appended: Events<'a>, prefix: &'a [OwnedEvent]) -> Self {
        Reported {
            config: plan.config,
            base_seq: plan.base_seq,
            appended,
            pruned: plan
                .pruned
                .iter()
                .map(|p| Pruned {
                    result: p,
                    tokens_before: p.tokens_before,
                    tokens_after: p.tokens_after,
                })
                .collect(),
            chars_removed: plan.chars_removed,
            lifecycle_events: Events::Owned(prefix),
        }
    }
}

impl SurfaceTokens {
    /// The surface's price before and after `plan`.
    pub fn of(plan: &PrunePlan) -> SurfaceTokens {
        SurfaceTokens {
            before: plan.surface_tokens_before,
            after: plan.surface_tokens_after,
            saved: plan.surface_tokens_before - plan.surface_tokens_after,
        }
    }
}

impl From<&BpeSavings> for Tokenizer {
    fn from(b: &BpeSavings) -> Tokenizer {
        Tokenizer {
            encoding: b.encoding,
            before: b.surface_before,
            after: b.surface_after(),
            saved: b.saved(),
            pruned: b
                .pruned
                .iter()
                .map(|&(original_seq, before, after)| TokenizerPruned {
                    original_seq,
                    before,
                    after,
                })
                .collect(),
        }
    }
}
