//! `dsh report --json`: what was written.

use schemars::JsonSchema;
use serde::Serialize;

use super::{Document, SchemaVersion};

/// What `dsh report` wrote: one self-contained HTML page per session and,
/// for many sessions, the index page linking them.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Report<'a> {
    /// OUT as given: the page (one LOG) or the directory (many).
    pub out: String,
    /// The index page written for many sessions; null for one LOG.
    pub index: Option<String>,
    /// The pages written.
    pub pages: Vec<&'a Page>,
    /// Logs that could not be read (no page; listed on the index).
    pub refused: Vec<Refused<'a>>,
    /// Bytes written, pages and index.
    pub bytes: u64,
    /// Version of this document's shape; bumped on a breaking change.
    #[serde(rename = "schema_version")]
    pub schema_version: SchemaVersion,
}

impl Document for Report<'_> {
    const NAME: &'static str = "report";
    const TITLE: &'static str = "dsh report --json";
}

/// One session's page.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Page {
    /// The log the page shows.
    pub file: String,
    /// Its session id.
    pub session: String,
    /// The page written.
    pub path: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// Model requests (assistant messages) of the session.
    pub requests: u64,
    /// Compactions with a summary.
    pub compactions: u64,
    /// Prune passes.
    pub prunes: u64,
    /// Whether the per-request charts show fewer points than requests.
    pub downsampled: bool,
}

/// A log without a page.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Refused<'a> {
    /// The log.
    pub file: &'a str,
    /// Why it could not be read.
    pub error: &'a str,
}
