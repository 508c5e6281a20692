//! `dsh locks --json` and `dsh locks --release --json`: the compaction
//! locks of one or many logs, and the release of a crashed one.

use schemars::JsonSchema;
use serde::Serialize;

use super::error::Refused;
use super::{Document, SchemaVersion, shape};
use crate::json::{OwnedValue, Value};
use crate::lock::{Anomaly, Bracket as Found, LockReport, LockState, LockStatus};

/// The compaction locks of one or many logs (with no LOG: every session
/// under $DSH_HOME). No clock reading unless asked: `ageMs` and `now` only
/// with --age or --now.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Locks {
    /// One entry per log, in the order given.
    pub logs: Vec<Entry>,
    /// The counts over every log.
    pub summary: Summary,
    /// With --age or --now: the time (epoch ms) ages are measured from.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "f64")]
    pub now: Option<f64>,
    /// Version of this document's shape; bumped on a breaking change.
    #[serde(rename = "schema_version")]
    pub schema_version: SchemaVersion,
}

impl Document for Locks {
    const NAME: &'static str = "locks";
    const TITLE: &'static str = "dsh locks --json";
}

/// One log of many.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Entry {
    /// A log read and scanned.
    Scanned(LogLocks),
    /// A log the loader refused.
    Refused(Refused),
}

/// The locks of one log.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LogLocks {
    /// The log as given on the command line (`-` for standard input).
    pub file: String,
    /// The session id of the log's header.
    pub session: String,
    /// The log's lock state.
    pub state: LockState,
    /// The seq of the newest compaction/start or compaction/end, or null.
    #[schemars(with = "Option<u64>")]
    pub last_bracket_seq: Option<u64>,
    /// The seq of the newest session/end-seed, or null.
    #[schemars(with = "Option<u64>")]
    pub last_end_seed_seq: Option<u64>,
    /// The seq of the log's last event, or null.
    #[schemars(with = "Option<u64>")]
    pub last_seq: Option<u64>,
    /// Every compaction/start, in log order.
    pub brackets: Vec<Bracket>,
    /// Bracket anomalies (nested starts, ends without a start, id or owner
    /// mismatches, turn boundaries crossing a bracket).
    pub anomalies: Vec<Anomaly>,
    /// What a crash (or a writer mid-write) left at the end of the log — a
    /// cut last Zstandard frame (with the file offset of its last whole
    /// frame), a torn last line, a region the loader drops — and the remedy
    /// (`dsh repair`); null when the end is whole. Writers refuse such a
    /// log.
    pub damage: Option<String>,
}

/// A compaction/start and what became of it.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Bracket {
    /// The compaction/start's seq.
    #[schemars(with = "u64")]
    pub seq: u64,
    /// As logged (a string, or whatever the log holds).
    pub compaction_id: OwnedValue,
    /// As logged, when the start names the command that began it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub source_command_id: Option<OwnedValue>,
    /// The owning turn as logged (a number, or null for a manual
    /// compaction).
    pub turn: OwnedValue,
    /// The turn open when it started, or null.
    #[schemars(with = "Option<u64>")]
    pub open_turn: Option<f64>,
    /// Its time (epoch ms).
    pub time: f64,
    /// Only with --age or --now: now minus time.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "f64", range(min = 0))]
    pub age_ms: Option<f64>,
    /// With ageMs: how far the start's time is ahead of the reference time
    /// (clock skew); its ageMs is then 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "f64", extend("exclusiveMinimum" = 0))]
    pub clock_skew_ms: Option<f64>,
    /// What became of it.
    pub status: LockStatus,
    /// How a matched bracket ended; null for the others.
    pub outcome: Option<Outcome>,
    /// The compaction/end's seq, or null.
    #[schemars(with = "Option<u64>")]
    pub end_seq: Option<u64>,
    /// The compaction/end error, or null.
    pub error: OwnedValue,
    /// The session/end-seed that made it stale, or null.
    #[schemars(with = "Option<u64>")]
    pub end_seed_seq: Option<u64>,
    /// The compaction/start that superseded it, or null.
    #[schemars(with = "Option<u64>")]
    pub superseded_by: Option<u64>,
    /// The summary it landed, or null.
    #[schemars(with = "Option<u64>")]
    pub summary_seq: Option<u64>,
    /// The checkpoint it landed, or null.
    #[schemars(with = "Option<u64>")]
    pub checkpoint_seq: Option<u64>,
}

/// How a matched bracket ended.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// A compaction/end without an error.
    Ok,
    /// A compaction/end with an error.
    Failed,
}

/// The counts over every log.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Summary {
    /// Logs listed.
    pub logs: u64,
    /// Busy locks.
    pub busy: u64,
    /// Stale locks.
    pub stale: u64,
    /// Bracket anomalies.
    pub anomalies: u64,
    /// Unreadable logs.
    pub errors: u64,
    /// Logs whose end is damaged (see `damage`).
    pub damaged: u64,
}

impl Bracket {
    /// A bracket; `ageMs` only when a reference time is given.
    pub fn of(b: &Found, now: Option<f64>) -> Bracket {
        // Never negative: a start stamped ahead of this clock has age 0 and
        // says by how much it is ahead.
        let age = now.map(|now| now - b.time);
        Bracket {
            seq: b.seq,
            compaction_id: b.compaction_id.clone(),
            source_command_id: b.source_command_id.clone(),
            turn: b.turn.clone(),
            open_turn: b.open_turn,
            time: b.time,
            age_ms: age.map(|a| a.max(0.0)),
            clock_skew_ms: age.filter(|a| *a < 0.0).map(|a| -a),
            status: b.status,
            outcome: match b.status {
                LockStatus::Matched if b.error.is_some() => Some(Outcome::Failed),
                LockStatus::Matched => Some(Outcome::Ok),
                _ => None,
            },
            end_seq: b.end_seq,
            error: b.error.clone().unwrap_or(Value::Null),
            end_seed_seq: b.end_seed_seq,
            superseded_by: b.superseded_by,
            summary_seq: b.summary_seq,
            checkpoint_seq: b.checkpoint_seq,
        }
    }
}

impl LogLocks {
    /// The locks of log `file` (its session id, what a crash left at its
    /// end); ages measured from `now` when given.
    pub fn of(
        file: String,
        r: &LockReport,
        session: String,
        damage: Option<String>,
        now: Option<f64>,
    ) -> LogLocks {
        LogLocks {
            file,
            session,
            state: r.state,
            last_bracket_seq: r.last_bracket_seq,
            last_end_seed_seq: r.last_end_seed_seq,
            last_seq: r.last_seq,
            brackets: r.brackets.iter().map(|b| Bracket::of(b, now)).collect(),
            anomalies: r.anomalies.clone(),
            damage,
        }
    }
}

impl Locks {
    /// The envelope of `logs`, with the counts `[busy, stale, anomalies,
    /// errors, damaged]`.
    pub fn of(logs: Vec<Entry>, counts: [u64; 5], now: Option<f64>) -> Locks {
        let [busy, stale, anomalies, errors, damaged] = counts;
        Locks {
            summary: Summary {
                logs: logs.len() as u64,
                busy,
                stale,
                anomalies,
                errors,
                damaged,
            },
            logs,
            now,
            schema_version: SchemaVersion,
        }
    }
}

/// Releasing the live compaction lock of one log (or, with --dry-run, what
/// would be appended).
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Release {
    /// A busy lock released (or, dry, what would be appended).
    Done(Box<Released>),
    /// The lock was not busy: nothing to release.
    Nothing(NothingToRelease),
}

impl Document for Release {
    const NAME: &'static str = "locks-release";
    const TITLE: &'static str = "dsh locks --release --json";
}

/// A busy lock released (or, with --dry-run, what would be appended).
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Released {
    /// The log as given on the command line (`-` for standard input).
    pub file: String,
    /// The session id of the log's header.
    pub session: String,
    /// The lock state after the run (before it, for a dry run).
    pub state: LockState,
    /// The busy compaction/start.
    pub bracket: Bracket,
    /// The events appended (or that would be): the crash-repair closers of
    /// an interrupted turn, then session/end-seed.
    #[schemars(with = "Vec<shape::Event>")]
    pub appended: Vec<OwnedValue>,
    /// Not with --dry-run: the copy written with --out, or null.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub out: Option<Option<String>>,
    /// Whether the log (or its copy) was written.
    pub released: bool,
    /// Only with --dry-run: nothing was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "True")]
    pub dry_run: Option<True>,
    /// Version of this document's shape; bumped on a breaking change.
    #[serde(rename = "schema_version")]
    pub schema_version: SchemaVersion,
}

/// `--release` on a log whose lock is not busy.
#[derive(Debug, Serialize, JsonSchema)]
pub struct NothingToRelease {
    /// The log as given on the command line (`-` for standard input).
    pub file: String,
    /// The session id of the log's header.
    pub session: String,
    /// Always false.
    pub released: False,
    /// The lock state (free or stale).
    pub state: LockState,
    /// Always null: no busy compaction/start.
    pub bracket: (),
    /// Always empty.
    #[schemars(with = "[shape::Event; 0]")]
    pub appended: [OwnedValue; 0],
    /// Version of this document's shape; bumped on a breaking change.
    #[serde(rename = "schema_version")]
    pub schema_version: SchemaVersion,
}

/// The value `true` (a key that is there only when it is true).
#[derive(Debug, Clone, Copy)]
pub struct True;

/// The value `false`.
#[derive(Debug, Clone, Copy)]
pub struct False;

macro_rules! constant {
    ($t:ty, $v:expr, $name:expr) => {
        impl Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_bool($v)
            }
        }
        impl JsonSchema for $t {
            fn inline_schema() -> bool {
                true
            }
            fn schema_name() -> std::borrow::Cow<'static, str> {
                $name.into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({ "const": $v })
            }
        }
    };
}
constant!(True, true, "True");
constant!(False, false, "False");
