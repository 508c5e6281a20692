//! `dsh health --json`: per session, what hurts it, and the summary.

use schemars::JsonSchema;
use serde::Serialize;

use super::error::LogRefusal;
use super::{Document, SchemaVersion};
use crate::health::{self, Cost as Spent, SessionHealth, Summary as Totals, Thresholds as Limits};

/// Per session, what hurts it (findings with kind, severity, seqs and
/// cost), and the home-wide summary.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Health<'a> {
    /// Sessions with findings (all with --all).
    pub sessions: Vec<Session<'a>>,
    /// Logs that could not be read.
    pub refused: Vec<LogRefusal>,
    /// Over every session read.
    pub summary: Summary<'a>,
    /// The thresholds the findings were found with.
    pub thresholds: Thresholds,
    /// The severity --fail-on fails on, or null.
    pub fail_on: Option<Severity>,
    /// Version of this document's shape; bumped on a breaking change.
    #[serde(rename = "schema_version")]
    pub schema_version: SchemaVersion,
}

impl Document for Health<'_> {
    const NAME: &'static str = "health";
    const TITLE: &'static str = "dsh health --json";
}

/// A severity.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth a look.
    Warn,
    /// Something went wrong.
    Error,
}

impl From<health::Severity> for Severity {
    fn from(s: health::Severity) -> Severity {
        match s {
            health::Severity::Warn => Severity::Warn,
            health::Severity::Error => Severity::Error,
        }
    }
}

/// A kind of finding (docs/health.md).
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Compactions again and again, or one that did not get below the
    /// threshold.
    CompactionLoop,
    /// A read or command repeated after its earlier result was shadowed.
    LostContextReread,
    /// A failed or empty summary.
    SummaryFailure,
    /// A context-window overflow.
    Overflow,
    /// Header changes breaking the prompt-cache prefix.
    CacheChurn,
    /// A compaction lock left behind or held.
    StaleLock,
    /// A turn that never ended.
    AbandonedTurn,
}

/// What it cost: tokens (provider-reported where requests are counted;
/// DSH's heuristic for content paid again; uncached input for a broken
/// cache prefix), the USD of the priced part, and how many parts have no
/// price.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Cost {
    /// Tokens.
    #[schemars(range(min = 0))]
    pub tokens: f64,
    /// USD of the priced part.
    #[serde(rename = "costUsd")]
    pub usd: f64,
    /// Parts with no price.
    pub unpriced: u64,
}

impl From<&Spent> for Cost {
    fn from(c: &Spent) -> Cost {
        Cost {
            tokens: c.tokens,
            usd: c.usd,
            unpriced: c.unpriced,
        }
    }
}

/// One session.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Session<'a> {
    /// The log.
    pub file: &'a str,
    /// Its session id.
    pub session: &'a str,
    /// Its project (the header's `cwd`).
    pub project: Option<&'a str>,
    /// The worst severity of its findings, or null.
    pub worst: Option<Severity>,
    /// What its findings cost.
    pub cost: Cost,
    /// Its findings, in log order.
    pub findings: Vec<Finding<'a>>,
}

/// One finding.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Finding<'a> {
    /// Its kind.
    #[schemars(with = "Kind")]
    pub kind: &'static str,
    /// Its severity.
    pub severity: Severity,
    /// The events that show it, in log order.
    #[schemars(length(min = 1))]
    pub seqs: &'a [u64],
    /// What it is, in words.
    pub message: &'a str,
    /// What it cost.
    pub cost: Cost,
}

/// Over every session read.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Summary<'a> {
    /// Sessions read.
    pub sessions: u64,
    /// Sessions with findings.
    pub with_findings: u64,
    /// Findings.
    pub findings: u64,
    /// Findings of severity error.
    pub errors: u64,
    /// What they cost.
    pub cost: Cost,
    /// Per kind with findings, costliest first.
    pub kinds: Vec<KindSummary>,
    /// Per project with findings, costliest first.
    pub projects: Vec<ProjectSummary<'a>>,
}

/// One kind's findings.
#[derive(Debug, Serialize, JsonSchema)]
pub struct KindSummary {
    /// The kind.
    #[schemars(with = "Kind")]
    pub kind: &'static str,
    /// Its findings.
    #[schemars(range(min = 1))]
    pub findings: u64,
    /// Those of severity error.
    pub errors: u64,
    /// Sessions with one.
    #[schemars(range(min = 1))]
    pub sessions: u64,
    /// What they cost.
    pub cost: Cost,
}

/// One project's findings.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectSummary<'a> {
    /// The project, or null for sessions without a `cwd`.
    pub project: Option<&'a str>,
    /// Its sessions.
    #[schemars(range(min = 1))]
    pub sessions: u64,
    /// Those with findings.
    #[schemars(range(min = 1))]
    pub with_findings: u64,
    /// Their findings.
    #[schemars(range(min = 1))]
    pub findings: u64,
    /// What they cost.
    pub cost: Cost,
}

/// The thresholds of the detectors.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Thresholds {
    /// `compaction-loop`: this many landed compactions …
    pub loop_compactions: u64,
    /// … within this many agent requests.
    pub loop_requests: u64,
    /// `lost-context-reread`: only re-read results of at least this many
    /// tokens (DSH's heuristic).
    pub reread_min_tokens: u64,
    /// `cache-churn`: more prefix breaks than this.
    pub churn_breaks: u64,
    /// `abandoned-turn`: a turn still open at the end of the log counts
    /// when the log has been idle this long (ms).
    #[schemars(with = "u64")]
    pub idle_ms: i64,
}

impl<'a> Session<'a> {
    /// One session's health.
    pub fn of(s: &'a SessionHealth) -> Session<'a> {
        Session {
            file: &s.file,
            session: &s.session,
            project: s.project.as_deref(),
            worst: s.worst().map(Severity::from),
            cost: (&s.cost()).into(),
            findings: s
                .findings
                .iter()
                .map(|f| Finding {
                    kind: f.kind.as_str(),
                    severity: f.severity.into(),
                    seqs: &f.seqs,
                    message: &f.message,
                    cost: (&f.cost).into(),
                })
                .collect(),
        }
    }
}

impl<'a> Summary<'a> {
    /// The summary.
    pub fn of(s: &'a Totals) -> Summary<'a> {
        Summary {
            sessions: s.sessions,
            with_findings: s.with_findings,
            findings: s.findings,
            errors: s.errors,
            cost: (&s.cost).into(),
            kinds: s
                .kinds
                .iter()
                .map(|k| KindSummary {
                    kind: k.kind.as_str(),
                    findings: k.findings,
                    errors: k.errors,
                    sessions: k.sessions,
                    cost: (&k.cost).into(),
                })
                .collect(),
            projects: s
                .projects
                .iter()
                .map(|p| ProjectSummary {
                    project: p.project.as_deref(),
                    sessions: p.sessions,
                    with_findings: p.with_findings,
                    findings: p.findings,
                    cost: (&p.cost).into(),
                })
                .collect(),
        }
    }
}

impl From<&Limits> for Thresholds {
    fn from(t: &Limits) -> Thresholds {
        Thresholds {
            loop_compactions: t.loop_compactions,
            loop_requests: t.loop_requests,
            reread_min_tokens: t.reread_min_tokens,
            churn_breaks: t.churn_breaks,
            idle_ms: t.idle_ms,
        }
    }
}
