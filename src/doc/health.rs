//! `dsh health --json`: per session, what hurts it, and the summary.

use schemars::JsonSchema;
use serde::Serialize;

use super::error::LogRefusal;
use super::{Document, SchemaVersion};
use crate::health::{Cost, FindingKind, SessionHealth, Severity, Summary as Totals, Thresholds};

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
    pub kind: FindingKind,
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
    pub kind: FindingKind,
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

impl<'a> Session<'a> {
    /// One session's health.
    pub fn of(s: &'a SessionHealth) -> Session<'a> {
        Session {
            file: &s.file,
            session: &s.session,
            project: s.project.as_deref(),
            worst: s.worst(),
            cost: s.cost(),
            findings: s
                .findings
                .iter()
                .map(|f| Finding {
                    kind: f.kind,
                    severity: f.severity,
                    seqs: &f.seqs,
                    message: &f.message,
                    cost: f.cost,
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
            cost: s.cost,
            kinds: s
                .kinds
                .iter()
                .map(|k| KindSummary {
                    kind: k.kind,
                    findings: k.findings,
                    errors: k.errors,
                    sessions: k.sessions,
                    cost: k.cost,
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
                    cost: p.cost,
                })
                .collect(),
        }
    }
}
