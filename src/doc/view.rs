//! `dsh view --json`: the transcript beside the model's view, and what each
//! compaction's summary kept.

use schemars::JsonSchema;
use serde::Serialize;

use super::{Document, SchemaVersion};
use crate::hidden_prefix::ProviderCount;
use crate::meter::NodeTokens;
use crate::meter::tokenizer::Encoding;
use crate::survival::Survival;
use crate::view::{Replacement, Row, SurfaceEntry, View as Aligned};

/// The log's transcript beside what the model sees at one point, and the
/// survival figures of its compactions. Every object's keys are in
/// alphabetical order, as they always were.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct View<'a> {
    /// The seq the view stands at (`--at`), if one was asked.
    pub at: Option<u64>,
    /// The log as given on the command line (`-` for standard input).
    pub file: String,
    /// The last stored event read.
    pub last_seq: Option<u64>,
    /// Every replacement applied, in log order.
    pub replacements: &'a [Replacement],
    /// The transcript, in log order.
    pub rows: &'a [Row],
    /// Version of this document's shape; bumped on a breaking change.
    #[serde(rename = "schema_version")]
    pub schema_version: SchemaVersion,
    /// The session id of the log's header.
    pub session: &'a str,
    /// The model's side, in surface order.
    pub surface: &'a [SurfaceEntry],
    /// What each compaction's summary kept of the span it replaced.
    pub survival: &'a Survival,
    /// With --tokenizer: the model's view counted in a provider's own
    /// tokens (as dsh measure --tokenizer counts it); requestTokens adds
    /// the estimated hidden prefix of a placeholder log (deepseek-v4).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Tokenizer")]
    pub tokenizer: Option<Tokenizer>,
}

/// A provider's count of the model's view (keys in alphabetical order, as
/// they always were).
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Tokenizer {
    /// The encoding.
    pub encoding: Encoding,
    /// The estimated hidden prefix of a placeholder log, if it hides one.
    pub hidden_prefix_tokens: Option<u64>,
    /// Surface tokens (the sum of `nodes`).
    pub message_tokens: u64,
    /// Per surface node, in surface order.
    pub nodes: Vec<NodeTokens>,
    /// The request's size: totalTokens and the hidden prefix.
    pub request_tokens: u64,
    /// `system` prompt tokens.
    pub system_tokens: u64,
    /// UTF-8 bytes of text encoded.
    pub text_bytes: u64,
    /// `JSON.stringify(tools)` tokens.
    pub tools_tokens: u64,
    /// `system + tools + messages`.
    pub total_tokens: u64,
}

impl From<&ProviderCount> for Tokenizer {
    fn from(p: &ProviderCount) -> Tokenizer {
        let c = &p.counts;
        Tokenizer {
            encoding: c.encoding,
            hidden_prefix_tokens: p.hidden,
            message_tokens: c.message_tokens,
            nodes: c.nodes.clone(),
            request_tokens: p.total(),
            system_tokens: c.system_tokens,
            text_bytes: c.text_bytes,
            tools_tokens: c.tools_tokens,
            total_tokens: c.total_tokens,
        }
    }
}

impl Document for View<'_> {
    const NAME: &'static str = "view";
    const TITLE: &'static str = "dsh view --json";
}

impl<'a> View<'a> {
    /// The document of an aligned view (rows cut to `rows` when asked).
    pub fn of(
        view: &'a Aligned,
        survival: &'a Survival,
        file: String,
        session: &'a str,
        provider: Option<&ProviderCount>,
    ) -> View<'a> {
        View {
            at: view.at,
            file,
            last_seq: view.last_seq,
            replacements: &view.replacements,
            rows: &view.rows,
            schema_version: SchemaVersion,
            session,
            surface: &view.surface,
            survival,
            tokenizer: provider.map(Tokenizer::from),
        }
    }
}
