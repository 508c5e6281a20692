//! `dsh load --json`: what reading one log produced.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use super::{Document, SchemaVersion, shape};
use crate::json::OwnedValue;
use crate::log::{Container, LoadedLog, TornTail};

/// What reading one log produced: the validated header, event counts,
/// closers and the tolerances applied.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Load<'a> {
    /// The header line as validated.
    pub header: Header<'a>,
    /// Events stored in the file (closers not counted).
    pub stored_events: u64,
    /// The synthetic closers of an open final turn (in memory, never
    /// written by reading).
    #[schemars(with = "Vec<shape::Event>")]
    pub closers: Vec<&'a OwnedValue>,
    /// Events in all: stored and closers.
    pub events: u64,
    /// Whether a `session/end-seed` was appended in memory.
    pub end_seed_appended: bool,
    /// Events per type (stored and closers).
    pub event_types: &'a BTreeMap<String, u64>,
    /// The container: plain JSONL or a Zstandard artifact.
    pub container: Container,
    /// A fragment after the last complete line, ignored.
    pub torn_tail: Option<TornTail>,
    /// Lines dropped by a tolerance (`--lenient`).
    pub dropped: Option<Dropped<'a>>,
    /// Tolerances used and other notes.
    pub warnings: &'a [String],
    /// The log as given on the command line (`-` for standard input).
    pub file: String,
    /// The session id of the log's header.
    pub session: &'a str,
    /// Version of this document's shape; bumped on a breaking change.
    #[serde(rename = "schema_version")]
    pub schema_version: SchemaVersion,
}

impl Document for Load<'_> {
    const NAME: &'static str = "load";
    const TITLE: &'static str = "dsh load --json";
}

/// The header line's fields.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Header<'a> {
    /// The format generation.
    pub version: u64,
    /// The session id.
    pub id: &'a str,
    /// When the session was created (milliseconds since the epoch).
    pub created_at: f64,
    /// The working directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub cwd: Option<&'a str>,
    /// The session this one was forked from.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub parent_session: Option<&'a str>,
    /// Events copied from the parent.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub seed_length: Option<u64>,
    /// What started the session.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub origin: Option<&'a str>,
    /// How deep in a delegation the session runs.
    pub delegation_depth: u64,
    /// The agent preset.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub agent_preset: Option<&'a str>,
}

/// Lines dropped by a tolerance.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Dropped<'a> {
    /// The first line dropped.
    pub line: u64,
    /// How many.
    pub lines: u64,
    /// Why.
    pub reason: &'a str,
}

impl<'a> Load<'a> {
    /// The document of a loaded log named `file` on the command line.
    pub fn of(log: &'a LoadedLog, file: String) -> Load<'a> {
        let h = &log.header;
        Load {
            header: Header {
                version: h.version,
                id: &h.id,
                created_at: h.created_at as f64,
                cwd: h.cwd.as_deref(),
                parent_session: h.parent_session.as_deref(),
                seed_length: h.seed_length,
                origin: h.origin.as_deref(),
                delegation_depth: h.delegation_depth,
                agent_preset: h.agent_preset.as_deref(),
            },
            stored_events: log.stored_events,
            closers: log.closers.iter().map(|c| &c.value).collect(),
            events: log.event_count(),
            end_seed_appended: log.end_seed_appended(),
            event_types: &log.event_types,
            container: log.container,
            torn_tail: log.torn,
            dropped: log.dropped.as_ref().map(|d| Dropped {
                line: d.line,
                lines: d.lines,
                reason: &d.reason,
            }),
            warnings: &log.warnings,
            file,
            session: &h.id,
            schema_version: SchemaVersion,
        }
    }
}
