//! The refusal: what any command prints instead of its document when it
//! cannot do its work.

use schemars::JsonSchema;
use serde::Serialize;

use super::{Document, SchemaVersion};
use crate::log::{LoadError, LoadErrorKind, Location};

/// What any `dsh COMMAND --json` prints instead of its document when it
/// cannot do its work: a refused or unreadable log, a replay error, a usage
/// or configuration error, a busy log. The message is also on standard
/// error. Commands that report per log (verify, many-log measure and locks)
/// and compact carry their failures inside their own documents instead.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Refusal {
    /// What is wrong.
    pub error: String,
    /// The class of the refusal.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Kind")]
    pub kind: Option<Kind>,
    /// Where it happened: reading the log, or replaying it through the
    /// token meter.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Stage")]
    pub stage: Option<Stage>,
    /// The log as given on the command line (`-` for standard input).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub file: Option<String>,
    /// Where: the line of the log (1-based) and the event at fault.
    #[serde(flatten)]
    pub at: Location,
    /// Version of this document's shape; bumped on a breaking change.
    #[serde(rename = "schema_version")]
    pub schema_version: SchemaVersion,
    /// What to do about it (after `schema_version`, where it always was).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub hint: Option<String>,
}

impl Document for Refusal {
    const NAME: &'static str = "error";
    const TITLE: &'static str = "dsh: a refusal";
}

/// The class of a refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// The log could not be read.
    Io,
    /// Its bytes are damaged.
    Corrupt,
    /// A format dsh does not read.
    Unsupported,
    /// It breaks a rule of the format.
    Invalid,
    /// There is no such log.
    NotFound,
    /// A limit (`--max-line-bytes`, `--max-decompressed`) was reached.
    Limit,
    /// Anything else.
    Other,
    /// Replaying it through the token meter failed.
    Replay,
}

/// Where a refusal happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    /// Reading the log.
    Load,
    /// Replaying it through the token meter.
    Measure,
}

impl Refusal {
    /// A refusal with a message and nothing else.
    pub fn message(error: impl Into<String>) -> Refusal {
        Refusal {
            error: error.into(),
            kind: None,
            stage: None,
            file: None,
            at: Location::default(),
            schema_version: SchemaVersion,
            hint: None,
        }
    }

    /// A refused log (its hint, rendered by the caller, added with
    /// [`Refusal::hint`]).
    pub fn load(e: &LoadError) -> Refusal {
        let kind = match e.kind {
            LoadErrorKind::Io => Kind::Io,
            LoadErrorKind::Corrupt => Kind::Corrupt,
            LoadErrorKind::Unsupported => Kind::Unsupported,
            LoadErrorKind::Invalid => Kind::Invalid,
            LoadErrorKind::NotFound => Kind::NotFound,
            LoadErrorKind::Limit => Kind::Limit,
        };
        Refusal {
            kind: Some(kind),
            stage: Some(Stage::Load),
            file: e.file.as_ref().map(|f| f.display().to_string()),
            at: e.at,
            ..Refusal::message(e.message())
        }
    }

    /// The same refusal with a hint.
    pub fn hint(mut self, hint: Option<String>) -> Refusal {
        self.hint = hint;
        self
    }
}

/// A log the loader refused, named first (`locks`, `cache` with many logs).
#[derive(Debug, Serialize, JsonSchema)]
pub struct Refused {
    /// The log as given on the command line (`-` for standard input).
    pub file: String,
    /// What is wrong.
    pub error: String,
    /// The class of the refusal.
    pub kind: Kind,
    /// Where it happened: reading the log.
    pub stage: Stage,
    /// Where: the line of the log (1-based) and the event at fault.
    #[serde(flatten)]
    pub at: Location,
}

impl Refused {
    /// Log `file` refused with `e`.
    pub fn of(file: String, e: &LoadError) -> Refused {
        let r = Refusal::load(e);
        Refused {
            file,
            error: r.error,
            kind: r.kind.unwrap_or(Kind::Other),
            stage: Stage::Load,
            at: r.at,
        }
    }
}

/// A refused log inside a document that reports per log (`verify`,
/// `sessions`, `health` with many logs): the refusal's keys without
/// `schema_version` and `hint`, and always the log's `file`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(transform = file_required)]
pub struct LogRefusal {
    /// What is wrong.
    pub error: String,
    /// The class of the refusal.
    pub kind: Kind,
    /// Where it happened: reading the log.
    pub stage: Stage,
    /// The log as given on the command line (`-` for standard input).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub file: Option<String>,
    /// Where: the line of the log (1-based) and the event at fault.
    #[serde(flatten)]
    pub at: Location,
    /// The log, when the error did not name it (the same key as `file`,
    /// written after the location).
    #[serde(rename = "file", skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub file_after: Option<String>,
}

/// `file` is always there (before or after the location).
fn file_required(schema: &mut schemars::Schema) {
    let required = schema
        .ensure_object()
        .entry("required")
        .or_insert_with(|| serde_json::Value::Array(Vec::new()));
    if let Some(r) = required.as_array_mut()
        && !r.iter().any(|k| k == "file")
    {
        r.push("file".into());
    }
}

impl LogRefusal {
    /// Log `file` refused with `e`: where the error names its own file,
    /// that name (`replace`: `file` instead) keeps its place; where it
    /// does not, `file` follows the location.
    pub fn of(e: &LoadError, file: &str, replace: bool) -> LogRefusal {
        let r = Refusal::load(e);
        let named = r.file.is_some();
        LogRefusal {
            error: r.error,
            kind: r.kind.unwrap_or(Kind::Other),
            stage: Stage::Load,
            file: match r.file {
                Some(_) if replace => Some(file.to_string()),
                f => f,
            },
            at: r.at,
            file_after: (!named).then(|| file.to_string()),
        }
    }
}
