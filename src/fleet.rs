//! The fleet export: many homes in one Hive-partitioned directory, grown
//! night after night by reading only what changed.
//!
//! Layout of the output directory:
//!
//! ```text
//! OUT/requests/date=2026-07-09/part-00003-0000.parquet    event tables: rows appended per run
//! OUT/prunes/date=…/part-….parquet
//! OUT/sessions/date=…/part-….parquet                      state tables: rewritten whole per run
//! OUT/compactions/…  OUT/locks/…  OUT/findings/…
//! OUT/_dsh/manifest.json                                  what was exported, per log
//! OUT/_dsh/state-00003.jsonl                              the state tables' rows, per log
//! ```
//!
//! A row's partition is the UTC date of its time (a session's start, a
//! finding's session start), `date=unknown` when the log records none.
//!
//! **What is read again.** The manifest remembers each log by its home and
//! path: size, device and inode, modification time and a hash of its last
//! bytes (up to `TAIL`). A log whose size, inode and time are unchanged
//! is not read. One that grew, and whose bytes up to the old size still end
//! with the remembered tail, is read again and only its new requests and
//! prunes are appended (its state rows are replaced). One that shrank, was
//! replaced (another inode) or changed before its old end is re-exported
//! whole: every event file holding its rows is rewritten without them, and
//! it is reported ([`Change::Rewritten`]). A log no longer found keeps its
//! rows ([`Report::missing`]).
//!
//! **Atomic runs.** A run writes every new file into `OUT/_dsh/staging-N/`,
//! then commits by renaming the new manifest into place; only then are the
//! files moved into the table directories and the superseded ones deleted.
//! The manifest lists those moves and deletions, so a run killed at any
//! point leaves the previous export whole (before the commit) or is
//! completed by the next run (`recover`, which every run starts with).
//!
//! Parquet only: rewriting a changed log's files reads them back.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::civil;
use crate::export::{Cell, ColumnType, ExportError, Place, Row, TABLES, TableSpec};
use crate::sessions::Refused;

/// Bytes at the end of a log the manifest hashes.
const TAIL: u64 = 4096;

/// The tables whose rows are appended (one row per logged event that never
/// changes); the others are rewritten whole each run.
const EVENT_TABLES: [usize; 2] = [1, 3];

/// Where the manifest lives in the output directory.
pub const MANIFEST: &str = "_dsh/manifest.json";

/// A fleet export failed.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// Writing or reading a table failed.
    #[error(transparent)]
    Export(#[from] ExportError),
    /// A file of the output directory.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: std::io::Error,
    },
    /// The manifest is not one this dsh wrote.
    #[error("{path}: not a dsh export manifest ({why})")]
    Manifest {
        /// The file.
        path: PathBuf,
        /// Why.
        why: String,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> FleetError + '_ {
    move |source| FleetError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// One log as the manifest remembers it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
struct LogEntry {
    /// Home label.
    pub home: String,
    /// Path relative to the home.
    pub log: String,
    /// Path as read.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Device.
    pub dev: u64,
    /// Inode.
    pub ino: u64,
    /// Modification time, ns since the epoch.
    pub mtime_ns: i128,
    /// FNV-1a 64 of the last `tail_len` bytes, hex.
    pub tail_hash: String,
    /// How many bytes `tail_hash` covers.
    pub tail_len: u64,
    /// Per event table (by name), the last seq whose row was written.
    pub last_seq: BTreeMap<String, u64>,
    /// The event files holding its rows.
    pub files: Vec<String>,
    /// Why the reader refused it, when it did (it is read again once it
    /// changes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

/// The manifest.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
struct Manifest {
    /// `1`.
    pub version: u32,
    /// The last committed run.
    pub run: u64,
    /// Logs by `HOME:LOG`.
    pub logs: BTreeMap<String, LogEntry>,
    /// Files of each table, relative to the output directory.
    pub files: BTreeMap<String, Vec<String>>,
    /// The state rows' file (relative), if any.
    pub state: Option<String>,
    /// Moves still to do after the commit: (from, to), relative.
    pub pending: Vec<(String, String)>,
    /// Files still to delete after the commit.
    pub delete: Vec<String>,
}

/// What became of one log in a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Not in the manifest: read whole.
    New,
    /// Grew past what was exported: read again, new rows appended.
    Grown,
    /// Shrank, was replaced or changed before its old end: re-exported whole.
    Rewritten,
    /// Unchanged: not read.
    Unchanged,
}

/// What a run did.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The run's number.
    pub run: u64,
    /// Per log: its place and what became of it.
    pub logs: Vec<(Place, Change)>,
    /// Why each rewritten log was rewritten.
    pub rewritten: Vec<(Place, String)>,
    /// Logs read (new, grown, rewritten).
    pub read: u64,
    /// Logs the manifest has that were not among the inputs (kept).
    pub missing: Vec<String>,
    /// Rows written per table this run (state tables: all their rows).
    pub rows: [u64; 6],
    /// Files written per table this run.
    pub files: [u64; 6],
    /// Logs refused this run.
    pub refused: Vec<Refused>,
    /// Logs refused by an earlier run and unchanged since (not read again),
    /// with the reason.
    pub still_refused: Vec<(Place, String)>,
    /// A crashed run's commit completed first.
    pub recovered: bool,
}

fn fnv(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Hash of `len` bytes of `path` ending at `end`.
fn tail_hash(path: &Path, end: u64, len: u64) -> std::io::Result<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path)?;
    f.seek(SeekFrom::Start(end - len))?;
    let mut buf = vec![0; len as usize];
    f.read_exact(&mut buf)?;
    Ok(fnv(&buf))
}

/// The facts of a log on disk now.
fn stat(place: &Place, path: &Path) -> std::io::Result<LogEntry> {
    let md = std::fs::metadata(path)?;
    let size = md.len();
    let tail_len = size.min(TAIL);
    let mtime_ns = i128::from(md.mtime()) * 1_000_000_000 + i128::from(md.mtime_nsec());
    Ok(LogEntry {
        home: place.home.clone(),
        log: place.log.clone(),
        path: path.display().to_string(),
        size,
        dev: md.dev(),
        ino: md.ino(),
        mtime_ns,
        tail_hash: tail_hash(path, size, tail_len)?,
        tail_len,
        last_seq: BTreeMap::new(),
        files: Vec::new(),
        refused: None,
    })
}

/// How a log changed since `old`, and why when it must be rewritten.
fn classify(old: &LogEntry, now: &LogEntry, path: &Path) -> (Change, Option<String>) {
    if (old.dev, old.ino) != (now.dev, now.ino) {
        return (Change::Rewritten, Some("replaced by another file".into()));
    }
    if now.size < old.size {
        return (
            Change::Rewritten,
            Some(format!("shrank from {} to {} bytes", old.size, now.size)),
        );
    }
    let same_tail = tail_hash(path, old.size, old.tail_len).is_ok_and(|h| h == old.tail_hash);
    if !same_tail {
        return (Change::Rewritten, Some("changed before its old end".into()));
    }
    if now.size == old.size {
        (Change::Unchanged, None)
    } else {
        (Change::Grown, None)
    }
}

fn read_manifest(out: &Path) -> Result<Option<Manifest>, FleetError> {
    let path = out.join(MANIFEST);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(&path)(e)),
    };
    let m: Manifest = serde_json::from_str(&text).map_err(|e| FleetError::Manifest {
        path: path.clone(),
        why: e.to_string(),
    })?;
    if m.version != 1 {
        return Err(FleetError::Manifest {
            path,
            why: format!("version {}", m.version),
        });
    }
    Ok(Some(m))
}

/// Write `m` as the manifest, atomically (a temporary file renamed).
fn write_manifest(out: &Path, m: &Manifest) -> Result<(), FleetError> {
    let path = out.join(MANIFEST);
    let tmp = out.join("_dsh/manifest.json.tmp");
    let text = serde_json::to_string_pretty(m).expect("a manifest serialises");
    std::fs::write(&tmp, text).map_err(io(&tmp))?;
    std::fs::File::open(&tmp)
        .and_then(|f| f.sync_all())
        .map_err(io(&tmp))?;
    std::fs::rename(&tmp, &path).map_err(io(&path))?;
    if let Ok(d) = std::fs::File::open(out.join("_dsh")) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Complete a committed run's moves and deletions, and clear what a run
/// killed before its commit left (staging directories, stray files in the
/// tables). `true` when there was something to complete.
fn recover(out: &Path) -> Result<bool, FleetError> {
    let Some(mut m) = read_manifest(out)? else {
        return Ok(false);
    };
    let completed = !m.pending.is_empty() || !m.delete.is_empty();
    for (from, to) in &m.pending {
        let (from, to) = (out.join(from), out.join(to));
        if from.exists() {
            if let Some(d) = to.parent() {
                std::fs::create_dir_all(d).map_err(io(d))?;
            }
            std::fs::rename(&from, &to).map_err(io(&to))?;
        }
    }
    for f in &m.delete {
        let p = out.join(f);
        if p.exists() {
            std::fs::remove_file(&p).map_err(io(&p))?;
        }
    }
    // Whatever a table directory holds that the manifest does not list
    // was written by a run that never committed.
    let listed: std::collections::HashSet<&String> = m.files.values().flatten().collect();
    for spec in &TABLES {
        for f in files_under(&out.join(spec.name)) {
            let rel = relative(out, &f);
            if !listed.contains(&rel) {
                std::fs::remove_file(&f).map_err(io(&f))?;
            }
        }
    }
    if let Ok(rd) = std::fs::read_dir(out.join("_dsh")) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let keep =
                m.state.as_deref() == Some(&format!("_dsh/{name}")) || name == "manifest.json";
            if !keep {
                let p = e.path();
                let _ = if p.is_dir() {
                    std::fs::remove_dir_all(&p)
                } else {
                    std::fs::remove_file(&p)
                };
            }
        }
    }
    if completed {
        m.pending.clear();
        m.delete.clear();
        write_manifest(out, &m)?;
    }
    Ok(completed)
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(files_under(&p));
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn relative(out: &Path, p: &Path) -> String {
    p.strip_prefix(out)
        .unwrap_or(p)
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// The partition of a row: the UTC date of its time column.
fn date_of(spec: &TableSpec, row: &Row, session_start: Option<i64>) -> String {
    let time = match spec.name {
        "sessions" => {
            cell_time(spec, row, "started").or_else(|| cell_time(spec, row, "last_activity"))
        }
        "findings" => session_start,
        _ => cell_time(spec, row, "time"),
    };
    time.map_or_else(
        || "unknown".to_string(),
        |t| civil::date(t, civil::Offset::UTC).to_string(),
    )
}

/// A row's cell of column `col`.
fn cell<'r>(spec: &TableSpec, row: &'r Row, col: &str) -> Option<&'r Cell> {
    row.get(spec.columns.iter().position(|c| c.name == col)?)
}

fn cell_time(spec: &TableSpec, row: &Row, col: &str) -> Option<i64> {
    match cell(spec, row, col)? {
        Cell::Time(t) => Some(*t),
        _ => None,
    }
}

fn cell_seq(spec: &TableSpec, row: &Row) -> Option<u64> {
    match cell(spec, row, "seq")? {
        Cell::Int(n) => Some(*n as u64),
        _ => None,
    }
}

/// A row's `session_key` (sessions: its `key`).
fn session_key(spec: &TableSpec, row: &Row) -> Option<String> {
    let col = if spec.name == "sessions" {
        "key"
    } else {
        "session_key"
    };
    match cell(spec, row, col)? {
        Cell::Str(s) => Some(s.clone()),
        _ => None,
    }
}

fn cell_json(c: &Cell) -> serde_json::Value {
    match c {
        Cell::Null => serde_json::Value::Null,
        Cell::Str(s) => s.clone().into(),
        Cell::Int(n) | Cell::Time(n) => (*n).into(),
        Cell::Float(x) => {
            serde_json::Number::from_f64(*x).map_or(serde_json::Value::Null, Into::into)
        }
        Cell::Bool(b) => (*b).into(),
    }
}

fn json_cell(v: &serde_json::Value, ty: ColumnType) -> Cell {
    match (v, ty) {
        (serde_json::Value::Null, _) => Cell::Null,
        (serde_json::Value::String(s), _) => Cell::Str(s.clone()),
        (serde_json::Value::Bool(b), _) => Cell::Bool(*b),
        (n, ColumnType::Float) => n.as_f64().map_or(Cell::Null, Cell::Float),
        (n, ColumnType::Time) => n.as_i64().map_or(Cell::Null, Cell::Time),
        (n, _) => n.as_i64().map_or(Cell::Null, Cell::Int),
    }
}

/// State rows by session key, per table index.
type State = BTreeMap<String, BTreeMap<usize, Vec<Row>>>;

fn read_state(out: &Path, m: &Manifest) -> Result<State, FleetError> {
    let mut st = State::new();
    let Some(rel) = &m.state else {
        return Ok(st);
    };
    let path = out.join(rel);
    let text = std::fs::read_to_string(&path).map_err(io(&path))?;
    for line in text.lines().filter(|l| !l.is_empty()) {
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| FleetError::Manifest {
                path: path.clone(),
                why: e.to_string(),
            })?;
        let (Some(k), Some(t), Some(cells)) = (v["k"].as_str(), v["t"].as_u64(), v["r"].as_array())
        else {
            continue;
        };
        let spec = &TABLES[t as usize];
        let row = cells
            .iter()
            .zip(spec.columns)
            .map(|(c, col)| json_cell(c, col.ty))
            .collect();
        st.entry(k.to_string())
            .or_default()
            .entry(t as usize)
            .or_default()
            .push(row);
    }
    Ok(st)
}

fn write_state(path: &Path, st: &State) -> Result<(), FleetError> {
    use std::io::Write;
    let f = std::fs::File::create(path).map_err(io(path))?;
    let mut w = std::io::BufWriter::new(f);
    for (k, tables) in st {
        for (t, rows) in tables {
            for r in rows {
                let line = serde_json::json!({"k": k, "t": t, "r": r.iter().map(cell_json).collect::<Vec<_>>()});
                writeln!(w, "{line}").map_err(io(path))?;
            }
        }
    }
    w.flush().map_err(io(path))?;
    w.get_ref().sync_all().map_err(io(path))?;
    Ok(())
}

mod run;
pub use run::{Input, export};
