//! The shapes of the log's own values inside documents: what the spec
//! gives them and the loader checks. Schema-only types: a document holds
//! the log's [`crate::json::Value`] and names one of these with
//! `#[schemars(with = "…")]`; any key the log has is kept.

use schemars::JsonSchema;
use serde::Serialize;

/// A log event exactly as stored (or as dsh would append it): the
/// harness's own shape.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(extend("additionalProperties" = true))]
pub(crate) struct Event {
    /// The event type (`user/message`, `compaction/start`, …).
    #[serde(rename = "type")]
    pub kind: String,
}

/// A message exactly as stored: the harness's own shape.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(extend("additionalProperties" = true))]
pub(crate) struct Message {
    /// The message id.
    pub id: String,
    /// Who speaks.
    pub role: Role,
    /// Where it came from (a model, the user, a tool, a checkpoint…).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    pub source: Option<serde_json::Map<String, serde_json::Value>>,
    /// Its blocks.
    pub content: Vec<Block>,
}

/// A message's role.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The system prompt.
    System,
    /// The user (tool results too).
    User,
    /// The model.
    Assistant,
}

/// A content block.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(extend("additionalProperties" = true))]
pub(crate) struct Block {
    /// `text`, `reasoning`, `tool-call`, `tool-result`, `image`, …
    #[serde(rename = "type")]
    pub kind: String,
}

/// An object of the log (a header, a config): any keys.
pub(crate) type Object = serde_json::Map<String, serde_json::Value>;
