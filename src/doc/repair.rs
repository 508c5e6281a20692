//! `dsh repair --json`: what was found at a log's end and what was cut.

use schemars::JsonSchema;
use serde::Serialize;

use super::{Document, SchemaVersion};
use crate::append::repair::{Damage as Found, RepairPlan};

/// What `dsh repair` found at the end of a log and what it cut (or, with
/// --dry-run, would cut).
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Repair {
    /// The log's path.
    pub file: String,
    /// What a crash (or a writer mid-write) left at the end of the log;
    /// null when its end is whole (nothing to do).
    pub damage: Option<Damage>,
    /// The file's length before.
    pub file_len: Option<u64>,
    /// The length it is cut back to: the file offset where the last whole
    /// Zstandard frame (or line) ends.
    pub keep_len: Option<u64>,
    /// The bytes cut off.
    pub removed_bytes: Option<u64>,
    /// Events the log keeps (the header aside).
    pub events_kept: Option<u64>,
    /// Events readers take now from a cut frame's whole blocks that the
    /// cut removes (they stay in the bytes kept beside the log).
    pub events_dropped: Option<u64>,
    /// Why a real run refuses (a writer may be live), or null.
    pub refusal: Option<String>,
    /// Where the bytes cut off were kept (`NAME.cut-OFFSET`), or null.
    pub saved_to: Option<String>,
    /// Whether the log was cut.
    pub repaired: bool,
    /// Whether nothing was written.
    pub dry_run: bool,
    /// Version of this document's shape; bumped on a breaking change.
    #[serde(rename = "schema_version")]
    pub schema_version: SchemaVersion,
}

/// The damage found.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Damage {
    /// Which kind.
    pub kind: DamageKind,
    /// What it is, in words.
    pub message: String,
}

/// A kind of damage.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DamageKind {
    /// The last Zstandard frame is cut short.
    CutFrame,
    /// The last line is torn.
    TornLine,
    /// A region the reader drops.
    DroppedRegion,
}

impl Document for Repair {
    const NAME: &'static str = "repair";
    const TITLE: &'static str = "dsh repair --json";
}

impl Repair {
    /// The document of a repair of `file` (its plan, none when the end is
    /// whole; where the cut bytes went).
    pub fn of(file: &str, plan: Option<&RepairPlan>, saved: Option<&str>, dry_run: bool) -> Repair {
        Repair {
            file: file.to_string(),
            damage: plan.map(|p| Damage {
                kind: match p.damage {
                    Found::CutFrame { .. } => DamageKind::CutFrame,
                    Found::TornLine { .. } => DamageKind::TornLine,
                    Found::Dropped { .. } => DamageKind::DroppedRegion,
                },
                message: p.damage.to_string(),
            }),
            file_len: plan.map(|p| p.file_len),
            keep_len: plan.map(|p| p.keep_len),
            removed_bytes: plan.map(|p| p.file_len - p.keep_len),
            events_kept: plan.map(|p| p.events_kept),
            events_dropped: plan.map(|p| p.events_dropped),
            refusal: plan.and_then(|p| p.refusal.clone()),
            saved_to: saved.map(str::to_string),
            repaired: saved.is_some() && !dry_run,
            dry_run,
            schema_version: SchemaVersion,
        }
    }
}
