//! `dsh load --json`: what reading one log produced.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use super::{Document, SchemaVersion, shape};
use crate::json::OwnedValue;
use crate::log::{Container, DroppedRegion, LoadedLog, SessionHeader, TornTail};

/// What reading one log produced: the validated header, event counts,
/// closers and the tolerances applied.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Load<'a> {
    /// The header line as validated.
    pub header: &'a SessionHeader,
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
    pub dropped: Option<&'a DroppedRegion>,
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

impl<'a> Load<'a> {
    /// The document of a loaded log named `file` on the command line.
    pub fn of(log: &'a LoadedLog, file: String) -> Load<'a> {
        let h = &log.header;
        Load {
            header: h,
            stored_events: log.stored_events,
            closers: log.closers.iter().map(|c| &c.value).collect(),
            events: log.event_count(),
            end_seed_appended: log.end_seed_appended(),
            event_types: &log.event_types,
            container: log.container,
            torn_tail: log.torn,
            dropped: log.dropped.as_ref(),
            warnings: &log.warnings,
            file,
            session: &h.id,
            schema_version: SchemaVersion,
        }
    }
}
