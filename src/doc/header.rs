//! `dsh header --json`: the folded request header and the latest context.

use schemars::JsonSchema;
use serde::Serialize;

use super::{Document, SchemaVersion, shape};
use crate::json::OwnedValue;
use crate::log::{LoadedLog, SystemPrompt};
use crate::request_header::HeaderEvent;

/// The folded request header and the latest route / context window of one
/// log.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Header<'a> {
    /// The latest request/header in canonical form (config, tools,
    /// adapterDefaults, system), or null.
    #[schemars(with = "Option<shape::Object>")]
    pub header: Option<&'a OwnedValue>,
    /// Its seq.
    pub header_seq: Option<u64>,
    /// Every request/header event: its seq and reason.
    pub header_events: &'a [HeaderEvent],
    /// The latest request/context (provider, model, contextWindow), or null.
    #[schemars(with = "Option<shape::Object>")]
    pub context: Option<&'a OwnedValue>,
    /// Its seq.
    pub context_seq: Option<u64>,
    /// The log's first line, the session header, as stored.
    #[schemars(with = "shape::Object")]
    pub session_header: &'a OwnedValue,
    /// Generation 3: the system prompt, held by the system/message at the
    /// head of the surface (the request header has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "SystemMessage<'a>")]
    pub system_message: Option<SystemMessage<'a>>,
    /// The log as given on the command line (`-` for standard input).
    pub file: String,
    /// The session id of the log's header.
    pub session: &'a str,
    /// Version of this document's shape; bumped on a breaking change.
    #[serde(rename = "schema_version")]
    pub schema_version: SchemaVersion,
}

impl Document for Header<'_> {
    const NAME: &'static str = "header";
    const TITLE: &'static str = "dsh header --json";
}

/// The system prompt of a generation-3 log.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SystemMessage<'a> {
    /// The system/message's seq.
    pub seq: u64,
    /// The prompt.
    pub text: &'a str,
    /// Its tokens by the DSH heuristic.
    pub tokens: u64,
}

impl<'a> Header<'a> {
    /// The document of a loaded log named `file`, with its system prompt
    /// when a system/message holds it.
    pub fn of(log: &'a LoadedLog, file: String, head: Option<&'a SystemPrompt>) -> Header<'a> {
        let h = &log.headers;
        Header {
            header: h.header.as_ref(),
            header_seq: h.header_seq,
            header_events: &h.events,
            context: h.context.as_ref(),
            context_seq: h.context_seq,
            session_header: &log.header.value,
            system_message: head.map(|p| SystemMessage {
                seq: p.seq.unwrap_or_default(),
                text: &p.text,
                tokens: p.tokens,
            }),
            file,
            session: &log.header.id,
            schema_version: SchemaVersion,
        }
    }
}
