//! `dsh compact --json`: what a compaction did or would do, also when it
//! failed, or why it did not start.

use schemars::JsonSchema;
use serde::Serialize;

use super::{Document, SchemaVersion, shape};
use crate::append::Lifecycle;
use crate::compact::outcome::{Ending, Refusal};
use crate::compact::plan::{Plan, Problem};
use crate::compact::{BracketReport, Failure, Mode, Outcome, Report, Unsaved};
use crate::json::OwnedValue;
use crate::policy::Retention;
use crate::provider::{Protocol, WireRequest, redact_url};
use crate::prune::PrunedResult;

/// What a compaction did (or, with --dry-run, would do), also when it
/// failed (then with `error`); or a refusal before the first byte.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Compact<'a> {
    /// A run, dry or real, done or failed.
    Run(Box<Run<'a>>),
    /// A refusal before the first byte: nothing written.
    Refused(Refused<'a>),
}

impl Document for Compact<'_> {
    const NAME: &'static str = "compact";
    const TITLE: &'static str = "dsh compact --json";
}

/// A refusal before the first byte.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Refused<'a> {
    /// The log as given on the command line (`-` for standard input).
    pub file: &'a str,
    /// Always false: nothing was written.
    #[schemars(with = "super::locks::False")]
    pub written: bool,
    /// Why, and what to do.
    pub error: &'a Refusal,
    /// Version of this document's shape; bumped on a breaking change.
    #[serde(rename = "schema_version")]
    pub schema_version: SchemaVersion,
}

/// A run, dry or real, done or failed.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Run<'a> {
    /// The semantics that ran.
    pub mode: Mode,
    /// Whether the write continues the log's lifecycle or starts a new one.
    pub lifecycle: Lifecycle,
    /// How it ended.
    pub outcome: OutcomeName,
    /// The summarisation target, PROVIDER/MODEL.
    pub route: String,
    /// The routed target whose policy applies, PROVIDER/MODEL.
    pub routed_target: Option<String>,
    /// The open turn (the owner of automatic brackets).
    #[schemars(with = "Option<u64>")]
    pub open_turn: Option<f64>,
    /// The routed target's context window.
    #[schemars(with = "Option<u64>")]
    pub context_window: Option<f64>,
    /// Where the window came from.
    pub context_window_source: Option<&'static str>,
    /// Compaction starts at this total.
    pub threshold_tokens: Option<u64>,
    /// Tokens kept verbatim.
    pub retain_tokens: u64,
    /// The compaction policy.
    pub policy: Policy<'a>,
    /// The summarisation route.
    pub summarizer: Summarizer<'a>,
    /// The summarising model's window, when known.
    pub summarizer_window: Option<Window>,
    /// The configuration file, or null.
    pub config: Option<String>,
    /// The meter's total before anything was written.
    pub tokens_before: Option<f64>,
    /// After pruning.
    pub tokens_after_prune: Option<f64>,
    /// At the end.
    pub tokens_after: Option<f64>,
    /// The surface's price before.
    pub surface_tokens_before: u64,
    /// At the end.
    pub surface_tokens_after: u64,
    /// replaceGeneration before.
    pub replace_generation_before: u64,
    /// At the end.
    pub replace_generation_after: u64,
    /// The rewritten tool results.
    pub pruned: &'a [PrunedResult],
    /// The brackets, in order.
    pub brackets: Vec<Bracket<'a>>,
    /// The seqs appended (or a dry run would append before the model call).
    pub appended_seqs: Vec<u64>,
    /// The session/end-seed that starts a new lifecycle, or null.
    pub end_seed_seq: Option<u64>,
    /// A range that does not fit the summarising model's window.
    pub warnings: Vec<String>,
    /// Why nothing was compacted.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub declined: Option<String>,
    /// Overflow: whether the failed request may be retried.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "bool")]
    pub retry_authorized: Option<bool>,
    /// Dry runs: the events it would append before the model call.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<shape::Event>")]
    pub would_append: Option<Vec<&'a OwnedValue>>,
    /// Dry runs: what the real run would fail at.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<Problem>")]
    pub would_fail: Option<&'a [Problem]>,
    /// A failed run: the error and a summary received but not appended.
    #[serde(flatten)]
    pub failed: Option<Failed<'a>>,
    /// The log as given on the command line (`-` for standard input).
    pub file: &'a str,
    /// The session id of the log's header.
    pub session: &'a str,
    /// Version of this document's shape; bumped on a breaking change.
    #[serde(rename = "schema_version")]
    pub schema_version: SchemaVersion,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum OutcomeName {
    /// At least one checkpoint committed.
    Compacted,
    /// Below the threshold: nothing written.
    BelowThreshold,
    /// Pruning alone brought it below the threshold.
    PrunedBelowThreshold,
    /// Nothing to compact.
    Declined,
    /// A dry run.
    DryRun,
    /// Overflow recovery disabled.
    OverflowDisabled,
    /// The run failed.
    Failed,
}

/// The compaction policy.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Policy<'a> {
    /// thresholdRatio.
    pub threshold_ratio: f64,
    /// retainRatio (or retainTokensAbsolute).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "f64")]
    pub retain_ratio: Option<f64>,
    /// retainTokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub retain_tokens_absolute: Option<u64>,
    /// The summary generation cap.
    pub max_tokens: u64,
    /// Extra pressure attempts.
    pub compaction_retries: u64,
    /// Overflow attempts (0 disables overflow recovery).
    pub max_overflow_retries: u64,
    /// The configured summarisation provider.
    pub summarization_provider: &'a str,
    /// The configured summarisation model.
    pub summarization_model: &'a str,
    /// Whether a model policy overrides the defaults.
    pub model_policy: bool,
}

/// The summarisation route.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Summarizer<'a> {
    /// Its wire protocol.
    pub kind: Protocol,
    /// Its base URL, userinfo redacted.
    #[serde(rename = "baseURL")]
    pub base_url: String,
    /// The environment variable holding the API key.
    pub api_key_env: &'a str,
    /// The reasoning effort, or null.
    pub reasoning_effort: Option<&'a str>,
}

/// A context window and where it came from.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Window {
    /// Tokens.
    pub tokens: f64,
    /// Where it came from.
    pub source: &'static str,
}

/// One bracket (with its request, in a dry run).
#[derive(Debug, Serialize, JsonSchema)]
pub struct Bracket<'a> {
    /// The bracket.
    #[serde(flatten)]
    pub report: &'a BracketReport,
    /// Dry runs: the request.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Request")]
    pub request: Option<Request<'a>>,
}

/// The summariser request, credentials redacted.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Request<'a> {
    /// The HTTP method.
    pub method: &'static str,
    /// The URL, userinfo redacted.
    pub url: String,
    /// Its path.
    pub path: &'a str,
    /// The headers, credentials redacted.
    #[schemars(with = "std::collections::BTreeMap<String, String>")]
    pub headers: Headers,
    /// The body.
    #[schemars(with = "shape::Object")]
    pub body: &'a OwnedValue,
}

/// Headers, in their order.
#[derive(Debug)]
pub struct Headers(Vec<(String, String)>);

impl Serialize for Headers {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

/// A failed run's error, and a summary received but not appended.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Failed<'a> {
    /// The error.
    pub error: Error<'a>,
    /// A summary paid for but not appended, or null.
    pub unsaved_summary: Option<&'a Unsaved>,
}

/// A failed run's error.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Error<'a> {
    /// What went wrong.
    pub message: &'a str,
    /// Its class.
    pub kind: String,
    /// DSH's error code, or null.
    pub code: Option<String>,
    /// What to do.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub hint: Option<&'a str>,
}

impl<'a> Run<'a> {
    /// The document of report `r` of a run of `plan` on the log `file`
    /// (session `session`).
    fn of(
        r: &'a Report,
        plan: &'a Plan,
        lifecycle: Lifecycle,
        dry_run: bool,
        (file, session): (&'a str, &'a str),
    ) -> Run<'a> {
        let window = plan.summarizer_capacity.map_or(0.0, |c| c.context_window);
        Run {
            mode: r.mode,
            lifecycle,
            outcome: r.outcome.into(),
            route: format!("{}/{}", plan.target.0, plan.target.1),
            routed_target: plan.routed.as_ref().map(|(p, m)| format!("{p}/{m}")),
            open_turn: r.open_turn,
            context_window: plan.capacity.map(|c| c.context_window),
            context_window_source: plan.capacity.map(|c| c.source.as_str()),
            threshold_tokens: plan.budgets.map(|b| b.threshold_tokens),
            retain_tokens: plan.budgets.map_or(0, |b| b.retain_tokens),
            policy: Policy::of(&plan.policy),
            summarizer: Summarizer {
                kind: plan.protocol,
                base_url: redact_url(&plan.base_url),
                api_key_env: &plan.key_env,
                reasoning_effort: plan.reasoning_effort.as_deref(),
            },
            summarizer_window: plan.summarizer_capacity.map(|c| Window {
                tokens: c.context_window,
                source: c.source.as_str(),
            }),
            config: plan.config_path.as_ref().map(|p| p.display().to_string()),
            tokens_before: r.tokens_before,
            tokens_after_prune: r.tokens_after_prune,
            tokens_after: r.tokens_after,
            surface_tokens_before: r.surface_before,
            surface_tokens_after: r.surface_after,
            replace_generation_before: r.generation_before,
            replace_generation_after: r.generation_after,
            pruned: &r.pruned,
            brackets: r.brackets.iter().map(|b| Bracket::of(b, dry_run)).collect(),
            appended_seqs: r.appended.iter().map(|e| e.seq).collect(),
            end_seed_seq: r
                .appended
                .iter()
                .find(|e| e.kind == crate::Kind::SessionEndSeed)
                .map(|e| e.seq),
            warnings: r
                .brackets
                .iter()
                .filter(|b| b.fits == Some(false))
                .map(|b| crate::compact::too_wide_warning(b.request_tokens, window))
                .collect(),
            declined: match r.outcome {
                Some(Outcome::Declined(d)) => Some(d.explain()),
                _ => None,
            },
            retry_authorized: (r.mode == crate::compact::Mode::Overflow)
                .then(|| r.retry_authorized()),
            would_append: dry_run.then(|| r.appended.iter().map(|e| &e.value).collect()),
            would_fail: None,
            failed: None,
            file,
            session,
            schema_version: SchemaVersion,
        }
    }
}

impl<'a> Run<'a> {
    /// The document of how a run ended.
    pub fn ending(
        e: &'a Ending<'a>,
        plan: &'a Plan,
        lifecycle: Lifecycle,
        dry_run: bool,
        who: (&'a str, &'a str),
    ) -> Run<'a> {
        match e {
            Ending::Report { report, would_fail } => Run {
                would_fail: would_fail.as_deref(),
                ..Run::of(report, plan, lifecycle, dry_run, who)
            },
            Ending::Failed {
                failure,
                hint,
                unsaved,
            } => Run {
                failed: Some(Failed::of(failure, hint.as_deref(), unsaved.as_ref())),
                ..Run::of(&failure.report, plan, lifecycle, dry_run, who)
            },
        }
    }
}

impl From<Option<Outcome>> for OutcomeName {
    fn from(o: Option<Outcome>) -> OutcomeName {
        match o {
            Some(Outcome::Compacted) => OutcomeName::Compacted,
            Some(Outcome::BelowThreshold) => OutcomeName::BelowThreshold,
            Some(Outcome::PrunedBelowThreshold) => OutcomeName::PrunedBelowThreshold,
            Some(Outcome::Declined(_)) => OutcomeName::Declined,
            Some(Outcome::DryRun) => OutcomeName::DryRun,
            Some(Outcome::OverflowDisabled) => OutcomeName::OverflowDisabled,
            None => OutcomeName::Failed,
        }
    }
}

impl<'a> Policy<'a> {
    /// The document of a policy.
    fn of(p: &'a crate::policy::Policy) -> Policy<'a> {
        let (retain_ratio, retain_tokens_absolute) = match p.retention {
            Retention::Ratio(r) => (Some(r), None),
            Retention::Tokens(t) => (None, Some(t)),
        };
        Policy {
            threshold_ratio: p.threshold_ratio,
            retain_ratio,
            retain_tokens_absolute,
            max_tokens: p.max_tokens,
            compaction_retries: p.compaction_retries,
            max_overflow_retries: p.max_overflow_retries,
            summarization_provider: &p.summarization_provider,
            summarization_model: &p.summarization_model,
            model_policy: p.overridden,
        }
    }
}

impl<'a> Bracket<'a> {
    /// A bracket (its request with `with_request`).
    fn of(b: &'a BracketReport, with_request: bool) -> Bracket<'a> {
        Bracket {
            report: b,
            request: b.request.as_ref().filter(|_| with_request).map(Request::of),
        }
    }
}

impl<'a> Request<'a> {
    /// A request, credentials redacted.
    fn of(r: &'a WireRequest) -> Request<'a> {
        Request {
            method: r.method,
            url: redact_url(&r.url),
            path: r.path(),
            headers: Headers(r.redacted_headers()),
            body: &r.body,
        }
    }
}

impl<'a> Failed<'a> {
    /// A failure, its hint and its unsaved summary.
    fn of(f: &'a Failure, hint: Option<&'a str>, unsaved: Option<&'a Unsaved>) -> Failed<'a> {
        Failed {
            error: Error {
                message: &f.message,
                kind: format!("{:?}", f.kind).to_lowercase(),
                code: f.code.as_ref().map(ToString::to_string),
                hint,
            },
            unsaved_summary: unsaved,
        }
    }
}
