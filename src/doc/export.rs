//! `dsh export --json`: the tables an export wrote (or would write).

use schemars::JsonSchema;
use serde::Serialize;

use super::error::LogRefusal;
use super::{Document, SchemaVersion};
use crate::export::{Column, Format, TableSpec};
use crate::fleet::{self, Change};

/// What an export wrote (or, with --dry-run, would write): one file per
/// table, its rows and its columns.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Export<'a> {
    /// The directory written (as given).
    pub out: String,
    /// The files' format.
    pub format: Format,
    /// Whether nothing was written.
    pub dry_run: bool,
    /// Logs exported (read, with --incremental).
    pub logs: u64,
    /// The tables, in order.
    pub tables: [Table; 6],
    /// Logs the reader refused (left out).
    pub refused: Vec<LogRefusal>,
    /// With --incremental: what the run read and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Incremental<'a>")]
    pub incremental: Option<Incremental<'a>>,
    /// Version of this document's shape; bumped on a breaking change.
    #[serde(rename = "schema_version")]
    pub schema_version: SchemaVersion,
}

impl Document for Export<'_> {
    const NAME: &'static str = "export";
    const TITLE: &'static str = "dsh export --json";
}

/// One table's file.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Table {
    /// The table.
    #[schemars(with = "TableName")]
    pub name: &'static str,
    /// Its file.
    pub path: String,
    /// Rows written.
    pub rows: u64,
    /// Its columns, in order.
    #[schemars(length(min = 1))]
    pub columns: &'static [Column],
}

/// The tables.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TableName {
    /// One row per session.
    Sessions,
    /// One row per model request.
    Requests,
    /// One row per compaction.
    Compactions,
    /// One row per prune pass.
    Prunes,
    /// One row per compaction lock.
    Locks,
    /// One row per verify finding.
    Findings,
}

impl Table {
    /// The file of table `spec` at `path`, with `rows` rows.
    pub fn of(spec: &TableSpec, path: String, rows: u64) -> Table {
        Table {
            name: spec.name,
            path,
            rows,
            columns: spec.columns,
        }
    }
}

/// What an incremental run read and why.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Incremental<'a> {
    /// The run's number (unchanged when nothing changed: no run).
    pub run: u64,
    /// Logs read: new, grown and rewritten.
    pub read: u64,
    /// New logs.
    pub new: u64,
    /// Logs that grew.
    pub grown: u64,
    /// Logs that shrank, were replaced or changed before their old end:
    /// re-exported whole.
    pub rewritten: Vec<Rewritten<'a>>,
    /// Logs not read.
    pub unchanged: u64,
    /// Logs of the manifest not among the inputs (their rows are kept), as
    /// HOME:LOG.
    pub missing: &'a [String],
    /// Logs refused by an earlier run and unchanged since: not read again.
    pub still_refused: u64,
    /// A killed run's commit was completed first.
    pub recovered: bool,
    /// Files written.
    pub files: u64,
}

/// A log re-exported whole.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Rewritten<'a> {
    /// Its home.
    pub home: &'a str,
    /// The log, in that home.
    pub log: &'a str,
    /// Why.
    pub why: &'a str,
}

impl<'a> Incremental<'a> {
    /// What run `r` read.
    pub fn of(r: &'a fleet::Report) -> Incremental<'a> {
        let count = |c: Change| r.logs.iter().filter(|(_, x)| *x == c).count() as u64;
        Incremental {
            run: r.run,
            read: r.read,
            new: count(Change::New),
            grown: count(Change::Grown),
            rewritten: r
                .rewritten
                .iter()
                .map(|(p, why)| Rewritten {
                    home: &p.home,
                    log: &p.log,
                    why,
                })
                .collect(),
            unchanged: count(Change::Unchanged),
            missing: &r.missing,
            still_refused: r.still_refused.len() as u64,
            recovered: r.recovered,
            files: r.files.iter().sum(),
        }
    }
}
