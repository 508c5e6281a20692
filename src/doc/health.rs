//! `dsh health --json`: per session, what hurts it, and the summary.

use schemars::JsonSchema;
use serde::Serialize;

use super::error::LogRefusal;
use super::{Document, SchemaVersion};
use crate::health::{Cost, Finding, SessionHealth, Severity, Summary, Thresholds};

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
    pub summary: &'a Summary,
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
    pub findings: &'a [Finding],
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
            findings: &s.findings,
        }
    }
}
