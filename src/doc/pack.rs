//! `dsh pack --json` and `dsh unpack --json`: what was written, or would be.

use schemars::JsonSchema;
use serde::Serialize;

use super::{Document, SchemaVersion};
use crate::log::Container;
use crate::pack::Converted;

/// Writing a log as the harness stores it, a multi-frame `.jsonl.zstd`
/// artifact (or, with --dry-run, what would be written).
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Pack {
    /// The log as given on the command line (`-` for standard input).
    pub file: String,
    /// The artifact or log written (or, with --dry-run, that would be).
    pub out: String,
    /// Lines written.
    pub lines: u64,
    /// Zstandard frames written (0 for a plain log).
    pub frames: u64,
    /// The plain JSONL size in bytes.
    pub plain_bytes: u64,
    /// The bytes written.
    pub written_bytes: u64,
    /// What the input was.
    pub input: Container,
    /// Whether nothing was written.
    pub dry_run: bool,
    /// Version of this document's shape; bumped on a breaking change.
    #[serde(rename = "schema_version")]
    pub schema_version: SchemaVersion,
}

impl Pack {
    /// The document of a conversion from `file` to `out`.
    pub fn of(done: &Converted, file: String, out: String, dry_run: bool) -> Pack {
        Pack {
            file,
            out,
            lines: done.lines,
            frames: done.frames,
            plain_bytes: done.plain_bytes,
            written_bytes: done.written_bytes,
            input: done.input.unwrap_or(Container::Plain),
            dry_run,
            schema_version: SchemaVersion,
        }
    }
}

impl Document for Pack {
    const NAME: &'static str = "pack";
    const TITLE: &'static str = "dsh pack --json";
}

/// Writing an artifact's lines back as a plain JSONL log (or, with
/// --dry-run, what would be written): the same shape as `dsh pack --json`.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(transparent)]
pub(crate) struct Unpack(pub Pack);

impl Document for Unpack {
    const NAME: &'static str = "unpack";
    const TITLE: &'static str = "dsh unpack --json";
}
