//! `dsh surface --json`: the ordered surface.

use schemars::JsonSchema;
use serde::Serialize;

use super::{Document, SchemaVersion};
use crate::event::Kind;
use crate::log::LoadedLog;
use crate::surface::{Node, Replacement};

/// The current surface of one log: the nodes the model sees, in order.
/// The first three keys are the reference's `surface` shape (`nodes`,
/// `replaceGeneration`, `replacements`).
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Surface<'a> {
    /// The seq of every node, in surface order.
    #[schemars(with = "Vec<u64>")]
    pub nodes: Seqs<'a>,
    /// How many replacements the surface has seen.
    pub replace_generation: u64,
    /// Every replacement in effect: the range of raw seqs it shadows.
    pub replacements: &'a [Replacement],
    /// One entry per node.
    #[schemars(with = "Vec<Position>")]
    pub positions: Positions<'a>,
    /// The log format version (0 to 3).
    pub version: u64,
    /// Generation 3: replaces plus image offloads applied.
    pub content_generation: Option<u64>,
    /// The log as given on the command line (`-` for standard input).
    pub file: String,
    /// The session id of the log's header.
    pub session: &'a str,
    /// Version of this document's shape; bumped on a breaking change.
    #[serde(rename = "schema_version")]
    pub schema_version: SchemaVersion,
}

impl Document for Surface<'_> {
    const NAME: &'static str = "surface";
    const TITLE: &'static str = "dsh surface --json";
}

/// A node of the surface.
#[derive(Debug, Serialize, JsonSchema)]
struct Position {
    /// Its place in the surface, from 0.
    pub position: u64,
    /// Its event.
    pub seq: u64,
    /// The event type.
    #[serde(rename = "type")]
    pub kind: NodeType,
    /// Its tokens by the DSH heuristic.
    pub tokens: u64,
    /// Whether the node yields a message (deriveMessages).
    pub derives: bool,
}

/// The type of a node's event.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
pub enum NodeType {
    /// A user message.
    #[serde(rename = "user/message")]
    UserMessage,
    /// An assistant message.
    #[serde(rename = "assistant/message")]
    AssistantMessage,
    /// A tool result.
    #[serde(rename = "tool/result")]
    ToolResult,
    /// The system prompt (generation 3).
    #[serde(rename = "system/message")]
    SystemMessage,
    /// Anything else.
    #[serde(rename = "other")]
    Other,
}

impl From<Kind> for NodeType {
    fn from(k: Kind) -> NodeType {
        match k {
            Kind::UserMessage => NodeType::UserMessage,
            Kind::AssistantMessage => NodeType::AssistantMessage,
            Kind::ToolResult => NodeType::ToolResult,
            Kind::SystemMessage => NodeType::SystemMessage,
            _ => NodeType::Other,
        }
    }
}

/// The nodes' seqs, written as they are read (a surface may have many
/// thousand nodes: nothing is collected first).
pub struct Seqs<'a>(pub &'a [Node]);

impl Serialize for Seqs<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|n| n.seq))
    }
}

/// The nodes' positions, made as they are written.
pub struct Positions<'a>(pub &'a [Node]);

impl Serialize for Positions<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().enumerate().map(|(i, n)| Position {
            position: i as u64,
            seq: n.seq,
            kind: n.kind.into(),
            tokens: n.tokens,
            derives: n.derives,
        }))
    }
}

impl<'a> Surface<'a> {
    /// The document of a loaded log named `file`.
    pub fn of(log: &'a LoadedLog, file: String) -> Surface<'a> {
        let s = &log.surface;
        Surface {
            nodes: Seqs(&s.nodes),
            replace_generation: s.replace_generation,
            replacements: &s.replacements,
            positions: Positions(&s.nodes),
            version: log.header.version,
            content_generation: log.content_generation,
            file,
            session: &log.header.id,
            schema_version: SchemaVersion,
        }
    }
}
