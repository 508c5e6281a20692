//! The append-only writer: the one way dsh changes a session log.
//!
//! Every write says which lifecycle it belongs to ([`Lifecycle`], an
//! [`AppendOptions`] field, default [`Lifecycle::Resume`]):
//!
//! * **Resume** — a new lifecycle of the session, as when the harness resumes
//!   it: the crash-repair closers of an open final turn and the
//!   `session/end-seed` marker (unless the log already ends with one) come
//!   first, then the caller's events (session-log §10.3, §11.4). The closers
//!   close an open turn, so what follows is outside any turn. Used by
//!   `dsh prune`, `dsh locks --release` and manual compaction (`dsh compact`
//!   on a log whose last turn is closed: end-seed first when the log does
//!   not end with one, then the bracket with `turn: null`).
//! * **Continue** — the still-running lifecycle goes on: no closers, no
//!   end-seed; the caller's events land inside the open final turn, as the
//!   live agent writes them. Used by automatic compaction (`dsh compact` in
//!   pressure or overflow mode on a log whose last turn is open: the prune
//!   pairs and the bracket owned by that turn, exactly where the reference's
//!   pre-step or request-error listener writes them, compaction §2.8). Only
//!   for a log whose final turn is open; everything else is refused as for
//!   Resume (torn tail, damaged region, live compaction lock, another
//!   writer, a changed file, invalid events).
//!
//! The cycle, all under one exclusive advisory lock (`flock`) on the log file:
//!
//! 1. [`Appender::open`] locks the file (waiting up to
//!    [`AppendOptions::wait`], or failing fast), then loads and validates the
//!    whole log, and refuses a torn tail, a dropped (damaged) region, or a
//!    file that changed under it. A live compaction lock (§10.4 BUSY) makes
//!    every [`Appender::append`] refuse; [`Appender::release_compaction_lock`]
//!    is the way out.
//! 2. [`Appender::append`] validates the batch exactly as the loader would
//!    (envelope, message shapes, surface rules, seq continuity, the lifecycle
//!    prefix first), re-checks that the file has not grown, and writes:
//!    * **plain JSONL**: complete `\n`-terminated lines, in *units* that become
//!      visible all at once. A unit is written body first with its first byte
//!      left as a hole (a NUL on read), fsynced, then the first byte is written
//!      and fsynced. Until that one-byte write lands, the unit is one
//!      unparsable line plus lines the loader drops (a torn region), so a
//!      `kill -9` or a crash at any point leaves either none or all of the unit
//!      visible. A unit never holds a `turn/end` after its first line, because
//!      a readable `turn/end` after a damaged line makes the whole log corrupt
//!      (§3.6); so a batch is split before such a `turn/end`. The only
//!      `turn/end` a writer appends is the last crash-repair closer, and the
//!      loader recomputes any closers that did not land yet, so the loaded log
//!      is always either the old one or the whole batch.
//!    * **`.jsonl.zstd`**: one new, complete, checksummed Zstandard frame,
//!      then fsync. (A frame that is cut short is a torn final frame; the
//!      reader recovers only complete blocks from it, so a batch up to one
//!      Zstandard block — 128 KiB of text — is all-or-nothing.)
//!
//!    On any error the file is cut back to its length before the batch.
//!    Bytes that were in the file are never rewritten.
//! 3. Several batches may follow under the same lock (compaction appends its
//!    start, then summary + checkpoint + end); each is validated against the
//!    log as the previous batches left it.
//!
//! Targets: the log itself, a copy (`--out`: the log's bytes copied to a
//! temporary file beside the target, the batches appended to it, then linked
//! into place by [`Appender::finish`]), or a dry run that validates and
//! reports without touching anything.
//!
//! Harness lock file: the rc.8 JSONL backend (`dsh-session-persistence-jsonl`)
//! keeps no lock file beside `session.jsonl[.zstd]`; its single-writer rule
//! is in-process only. So there is none to respect, and a harness that has
//! the session open is not visible offline: do not write to a session a
//! running harness holds.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::event::{Event, Kind, OwnedEvent, owned_event};
use crate::json::Value;
use crate::lock::{LockReport, LockScan, LockState};
use crate::log::{Container, Folded, LoadError, LoadOptions, LoadedLog, LogSource, Observer};
use crate::surface::{NodeBody, Surface, check_local, node_facts};

/// Where the appended events go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AppendTarget {
    /// Append to the log itself.
    InPlace,
    /// Copy the log to this path (which must not exist) and append there.
    Copy(PathBuf),
    /// Validate and report; write nothing.
    DryRun,
}

/// Which lifecycle the appended events belong to (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lifecycle {
    /// A new lifecycle, as a resuming harness starts it: the first batch
    /// begins with [`Appender::lifecycle_prefix`] (crash-repair closers of an
    /// open final turn, then `session/end-seed` unless the log ends with one).
    #[default]
    Resume,
    /// The live lifecycle continues inside the open final turn: no prefix;
    /// the first appended event gets the seq after the last stored event.
    /// Refused (at the first append) when the final turn is not open.
    Continue,
}

impl Lifecycle {
    /// `"resume"` / `"continue"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Lifecycle::Resume => "resume",
            Lifecycle::Continue => "continue",
        }
    }
}

/// How to append.
#[derive(Debug, Clone, Default)]
pub struct AppendOptions {
    /// Which lifecycle the appended events belong to (default Resume).
    pub lifecycle: Lifecycle,
    /// How long to wait for another writer's lock; `None` fails at once.
    pub wait: Option<Duration>,
    /// How to read and validate the log.
    pub load: LoadOptions,
    /// Test hook: write each unit in several pieces with this pause after
    /// each step, so that tests can kill the process mid-write. Harmless:
    /// the protocol is the same, only slower.
    pub debug_pause: Option<Duration>,
}

/// Why the log may not be written as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Blocker {
    /// Bytes after the last complete line (a writer is active, or crashed).
    TornTail {
        /// Where the committed prefix ends (logical bytes).
        committed_len: u64,
        /// Length of the fragment.
        len: u64,
        /// Plain JSONL (the hint names a truncation).
        plain: bool,
    },
    /// Complete lines the loader drops after a damaged line.
    Dropped {
        /// First dropped line.
        line: u64,
        /// How many lines.
        lines: u64,
        /// Why.
        reason: String,
        /// Where the committed prefix ends (logical bytes).
        committed_len: u64,
    },
    /// A live compaction lock (session-log §10.4 BUSY).
    CompactionLock {
        /// Seq of the unmatched `compaction/start`.
        seq: u64,
        /// Its compactionId, as JSON.
        compaction_id: String,
        /// `turn N` or `standalone compaction`.
        owner: String,
    },
}

impl std::fmt::Display for Blocker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Blocker::TornTail {
                committed_len,
                len,
                plain,
            } => {
                write!(
                    f,
                    "the log ends with {len} byte(s) after its last complete line (a torn write at byte {committed_len}): a writer may still be active, or one crashed"
                )?;
                if *plain {
                    write!(
                        f,
                        "; a resuming harness cuts it off; by hand: truncate -s {committed_len} LOG"
                    )?;
                }
                Ok(())
            }
            Blocker::Dropped {
                line,
                lines,
                reason,
                committed_len,
            } => write!(
                f,
                "the log has a damaged region the loader drops ({lines} line(s) from line {line}: {reason}); a resuming harness cuts it off; by hand: truncate -s {committed_len} LOG"
            ),
            Blocker::CompactionLock {
                seq,
                compaction_id,
                owner,
            } => write!(
                f,
                "a live compaction lock: compaction/start at seq {seq} (compactionId {compaction_id}, {owner}) has no compaction/end and no later session/end-seed; the reference refuses every compaction while it is held. If that compaction crashed, `dsh locks --release LOG` appends the session/end-seed a resuming harness writes"
            ),
        }
    }
}

/// Why a write did not happen. The log is untouched in every case (a failed
/// write is cut back; see [`AppendError::RollbackFailed`] for the exception).
#[derive(Debug, thiserror::Error)]
pub enum AppendError {
    /// The log is not readable or not valid.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// Standard input cannot be written to.
    #[error("cannot write to a log read from standard input; name the file")]
    Stdin,
    /// The path is a symbolic link.
    #[error(
        "{path}: is a symbolic link (to {target}); dsh appends only to the real file: name it, or write a copy with --out"
    )]
    Symlink {
        /// The link.
        path: PathBuf,
        /// Where it points.
        target: String,
    },
    /// The file is not writable.
    #[error("{path}: the log is read-only ({why}); refusing to append")]
    ReadOnly {
        /// The log.
        path: PathBuf,
        /// Mode bits or the OS error.
        why: String,
    },
    /// Another process holds the writer lock.
    #[error(
        "{path}: another process holds the writer lock (a dsh prune, compact or locks --release is writing it){waited}; retry later or pass --wait SECONDS"
    )]
    WriterLocked {
        /// The log.
        path: PathBuf,
        /// `" (waited N s)"` or empty.
        waited: String,
    },
    /// The log may not be written as it is.
    #[error("{path}: refusing to append: {blocker}")]
    Blocked {
        /// The log.
        path: PathBuf,
        /// Why.
        blocker: Blocker,
    },
    /// The file changed between validation and the write.
    #[error(
        "{path}: the log changed while dsh held it ({what}); another program is writing it (a running harness?); nothing was written"
    )]
    Changed {
        /// The log.
        path: PathBuf,
        /// What differs.
        what: String,
    },
    /// A format generation dsh does not write.
    #[error(
        "{path}: a generation-{version} log; dsh appends only to generation-0 logs (the format of the rc.8 reference)"
    )]
    Unsupported {
        /// The log.
        path: PathBuf,
        /// Its header `version`.
        version: u64,
    },
    /// The copy target exists.
    #[error("{path}: already exists; --out writes a new file")]
    TargetExists {
        /// The target.
        path: PathBuf,
    },
    /// The batch breaks the lifecycle rule or a load-time rule.
    #[error("refusing to append an event the loader would refuse (seq {seq}): {message}")]
    Invalid {
        /// The offending event.
        seq: u64,
        /// Why.
        message: String,
    },
    /// An I/O operation failed; the file was cut back to its length before
    /// the batch.
    #[error("{path}: cannot {op}: {source}; the log was restored to its previous {len} bytes")]
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done.
        op: &'static str,
        /// Its length after the rollback.
        len: u64,
        /// The OS error.
        source: io::Error,
    },
    /// An I/O operation failed before anything was written.
    #[error("{path}: cannot {op}: {source}")]
    Open {
        /// The file.
        path: PathBuf,
        /// What was being done.
        op: &'static str,
        /// The OS error.
        source: io::Error,
    },
    /// The write failed and so did the rollback.
    #[error(
        "{path}: cannot {op}: {source}; and restoring its previous length {len} failed too: {rollback}; the loader drops the incomplete batch, but the file needs `truncate -s {len}`"
    )]
    RollbackFailed {
        /// The file.
        path: PathBuf,
        /// What was being done.
        op: &'static str,
        /// The length it should have.
        len: u64,
        /// The write error.
        source: io::Error,
        /// The rollback error.
        rollback: io::Error,
    },
}

impl AppendError {
    /// Whether the log is busy (writer lock, compaction lock, torn tail, or
    /// a concurrent change), as opposed to unusable or a failed write.
    pub fn is_busy(&self) -> bool {
        matches!(
            self,
            AppendError::WriterLocked { .. }
                | AppendError::Blocked { .. }
                | AppendError::Changed { .. }
        )
    }
}

/// What one [`Appender::append`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendReport {
    /// Seq of the first appended event.
    pub first_seq: u64,
    /// Number of events.
    pub events: u64,
    /// JSONL bytes of the batch (plaintext).
    pub bytes: u64,
    /// Bytes added to the file (the frame size for Zstandard; 0 for a dry run).
    pub written: u64,
    /// Physical offset where the batch starts.
    pub offset: u64,
    /// The file written (the log, or the temporary copy).
    pub path: Option<PathBuf>,
}

/// Tracks the open turn (for the open-turn rule of compaction §13).
#[derive(Debug, Default, Clone, Copy)]
struct TurnState {
    open: bool,
}

impl TurnState {
    fn observe(&mut self, ev: &Event<'_>) {
        match ev.kind {
            Kind::TurnStart => self.open = true,
            Kind::TurnEnd => self.open = false,
            _ => {}
        }
    }
}

struct Watch<'o> {
    scan: LockScan,
    turn: TurnState,
    inner: &'o mut dyn Observer,
}

impl Observer for Watch<'_> {
    fn event(&mut self, ev: &Event<'_>, folded: &Folded<'_>) {
        if !folded.synthetic {
            // The lock state is the file's: closers are not in it (yet).
            self.scan.observe(ev);
            self.turn.observe(ev);
        }
        self.inner.event(ev, folded);
    }
}

/// The physical file being appended to.
struct Sink {
    file: File,
    path: PathBuf,
}

/// Low-level write operations, so tests can make them fail.
trait WriteOps {
    fn write_at(&mut self, buf: &[u8], offset: u64) -> io::Result<()>;
    fn sync(&mut self) -> io::Result<()>;
    fn truncate(&mut self, len: u64) -> io::Result<()>;
}

impl WriteOps for File {
    fn write_at(&mut self, buf: &[u8], offset: u64) -> io::Result<()> {
        FileExt::write_all_at(self, buf, offset)
    }
    fn sync(&mut self) -> io::Result<()> {
        self.sync_all()
    }
    fn truncate(&mut self, len: u64) -> io::Result<()> {
        self.set_len(len)
    }
}

/// One batch, encoded.
enum Payload {
    /// Plain JSONL units (each made of complete lines).
    Units(Vec<Vec<u8>>),
    /// One Zstandard frame.
    Frame(Vec<u8>),
}

fn pause(p: Option<Duration>) {
    if let Some(d) = p {
        std::thread::sleep(d);
    }
}

/// Write `buf` at `offset`; with a debug pause, in four pieces.
fn write_paced(
    ops: &mut dyn WriteOps,
    buf: &[u8],
    offset: u64,
    p: Option<Duration>,
) -> io::Result<()> {
    if p.is_none() || buf.len() < 4 {
        return ops.write_at(buf, offset);
    }
    let step = buf.len().div_ceil(4);
    for (i, piece) in buf.chunks(step).enumerate() {
        ops.write_at(piece, offset + (i * step) as u64)?;
        pause(p);
    }
    Ok(())
}

/// The write protocol (module docs). Returns the new length, or the error
/// of the step that failed.
fn write_payload(
    ops: &mut dyn WriteOps,
    offset: u64,
    payload: &Payload,
    p: Option<Duration>,
) -> Result<u64, (&'static str, io::Error)> {
    match payload {
        Payload::Units(units) => {
            let mut at = offset;
            for unit in units {
                // Body first, with the first byte left as a hole: invisible.
                write_paced(ops, &unit[1..], at + 1, p).map_err(|e| ("append to the log", e))?;
                ops.sync().map_err(|e| ("fsync the log", e))?;
                pause(p);
                // One byte makes the whole unit visible at once.
                ops.write_at(&unit[..1], at)
                    .map_err(|e| ("append to the log", e))?;
                pause(p);
                ops.sync().map_err(|e| ("fsync the log", e))?;
                at += unit.len() as u64;
            }
            Ok(at)
        }
        Payload::Frame(frame) => {
            write_paced(ops, frame, offset, p).map_err(|e| ("append to the log", e))?;
            pause(p);
            ops.sync().map_err(|e| ("fsync the log", e))?;
            Ok(offset + frame.len() as u64)
        }
    }
}

/// Write, or cut the file back to `offset` and say why not.
fn commit(
    ops: &mut dyn WriteOps,
    path: &Path,
    offset: u64,
    payload: &Payload,
    p: Option<Duration>,
) -> Result<u64, AppendError> {
    match write_payload(ops, offset, payload, p) {
        Ok(len) => Ok(len),
        Err((op, source)) => match ops.truncate(offset).and_then(|_| ops.sync()) {
            Ok(()) => Err(AppendError::Io {
                path: path.to_path_buf(),
                op,
                len: offset,
                source,
            }),
            Err(rollback) => Err(AppendError::RollbackFailed {
                path: path.to_path_buf(),
                op,
                len: offset,
                source,
                rollback,
            }),
        },
    }
}

/// Encode a batch: JSONL lines, split into units before every `turn/end`
/// that is not first in its unit (plain), or one frame (Zstandard).
fn encode(events: &[OwnedEvent], container: Container) -> io::Result<(Payload, u64)> {
    let mut units: Vec<Vec<u8>> = Vec::new();
    let mut cur: Vec<u8> = Vec::new();
    let mut total = 0u64;
    for ev in events {
        if ev.kind == Kind::TurnEnd && !cur.is_empty() {
            units.push(std::mem::take(&mut cur));
        }
        let line = ev.value.to_json();
        debug_assert!(!line.contains('\n'));
        cur.extend_from_slice(line.as_bytes());
        cur.push(b'\n');
        total += line.len() as u64 + 1;
    }
    if !cur.is_empty() {
        units.push(cur);
    }
    match container {
        Container::Plain => Ok((Payload::Units(units), total)),
        Container::Zstd => {
            let plain: Vec<u8> = units.concat();
            Ok((Payload::Frame(zstd_frame(&plain)?), total))
        }
    }
}

/// One complete, checksummed Zstandard frame (level 3, as Node's default).
pub fn zstd_frame(plain: &[u8]) -> io::Result<Vec<u8>> {
    let mut c = zstd::bulk::Compressor::new(zstd::DEFAULT_COMPRESSION_LEVEL)?;
    c.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true))?;
    c.compress(plain)
}

/// The events a resuming harness writes first: the crash-repair closers of an
/// open final turn, then the `session/end-seed` marker unless the log already
/// ends with one (stamped `time`; the closers keep the last event's time).
pub fn lifecycle_prefix(log: &LoadedLog, time: f64) -> Vec<OwnedEvent> {
    let mut out: Vec<OwnedEvent> = log.closers.clone();
    if log.end_seed_appended() {
        let seq = log.event_count();
        let v = Value::obj()
            .with("type", "session/end-seed".into())
            .with("seq", seq.into())
            .with("time", time.into())
            .with("data", Value::obj());
        out.push(owned_event(Kind::SessionEndSeed, seq, v));
    }
    out
}

enum LockKind {
    Shared,
    Exclusive,
}

fn acquire(
    file: &File,
    kind: LockKind,
    wait: Option<Duration>,
    path: &Path,
) -> Result<(), AppendError> {
    let start = Instant::now();
    loop {
        let r = match kind {
            LockKind::Shared => fs4::FileExt::try_lock_shared(file),
            LockKind::Exclusive => fs4::FileExt::try_lock(file),
        };
        match r {
            Ok(()) => return Ok(()),
            Err(fs4::TryLockError::WouldBlock) => {}
            Err(fs4::TryLockError::Error(e)) => {
                return Err(AppendError::Open {
                    path: path.to_path_buf(),
                    op: "lock the log",
                    source: e,
                });
            }
        }
        let limit = wait.unwrap_or_default();
        if start.elapsed() >= limit {
            return Err(AppendError::WriterLocked {
                path: path.to_path_buf(),
                waited: if limit.is_zero() {
                    String::new()
                } else {
                    format!(" (waited {:.1} s)", limit.as_secs_f64())
                },
            });
        }
        std::thread::sleep(
            Duration::from_millis(25)
                .min(limit.saturating_sub(start.elapsed()))
                .max(Duration::from_millis(1)),
        );
    }
}

/// Seq of the last record in a block of complete JSONL lines (rows count
/// their last member), or `None` when the last line is the header.
fn last_record_seq(plain: &[u8]) -> Option<u64> {
    let body = plain.strip_suffix(b"\n")?;
    let start = body.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let v = Value::parse(std::str::from_utf8(&body[start..]).ok()?).ok()?;
    if let Some(s) = v.get("seq").and_then(|s| s.as_count()) {
        return Some(s);
    }
    let row = crate::log::packed::check(&v).ok()?;
    Some(row.seq0 + row.count - 1)
}

/// The append-only writer. See the module docs.
pub struct Appender {
    target: AppendTarget,
    /// The log as loaded (before any append).
    log: LoadedLog,
    locks: LockScan,
    foreign_busy: bool,
    turn: TurnState,
    file_turn_open: bool,
    lifecycle: Lifecycle,
    blockers: Vec<Blocker>,
    /// The locked log file (exclusive in place, shared for a copy).
    locked: Option<File>,
    /// Where batches go (the log, or the temporary copy).
    sink: Option<Sink>,
    /// Physical length of the sink, as last verified.
    len: u64,
    /// Test hook (see [`AppendOptions::debug_pause`]).
    pause: Option<Duration>,
    /// Next seq in the file.
    next_seq: u64,
    /// The surface after the appends so far.
    surface: Surface,
    /// Batches appended.
    batches: u64,
    /// The temporary copy and its final path, until [`Appender::finish`].
    copy: Option<(PathBuf, PathBuf)>,
}

impl std::fmt::Debug for Appender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Appender")
            .field("target", &self.target)
            .field("source", &self.log.source)
            .field("len", &self.len)
            .field("next_seq", &self.next_seq)
            .finish()
    }
}

fn open_err<'p>(path: &'p Path, op: &'static str) -> impl FnOnce(io::Error) -> AppendError + 'p {
    move |source| AppendError::Open {
        path: path.to_path_buf(),
        op,
        source,
    }
}

impl Appender {
    /// Lock the log, load and validate it, and get ready to append.
    ///
    /// `observer` sees every validated event of the load, as with
    /// [`crate::log::load`]. A dry run takes no lock and refuses nothing but
    /// an invalid log; [`Appender::blockers`] says what a real write would
    /// refuse.
    pub fn open(
        source: &LogSource,
        target: AppendTarget,
        opts: &AppendOptions,
        observer: &mut dyn Observer,
    ) -> Result<Appender, AppendError> {
        let path = match (source, &target) {
            (LogSource::Stdin, AppendTarget::DryRun) => None,
            (LogSource::Stdin, _) => return Err(AppendError::Stdin),
            (LogSource::File(p), _) => Some(p.clone()),
        };
        let mut locked: Option<File> = None;
        let mut identity = None;
        if let Some(p) = &path {
            match &target {
                AppendTarget::InPlace => {
                    let md = fs::symlink_metadata(p).map_err(open_err(p, "inspect the log"))?;
                    if md.file_type().is_symlink() {
                        let to = fs::read_link(p)
                            .map(|t| t.display().to_string())
                            .unwrap_or_else(|_| "?".into());
                        return Err(AppendError::Symlink {
                            path: p.clone(),
                            target: to,
                        });
                    }
                    if !md.is_file() {
                        return Err(AppendError::Open {
                            path: p.clone(),
                            op: "append to the log",
                            source: io::Error::other("not a regular file"),
                        });
                    }
                    let mode = md.permissions().mode();
                    if mode & 0o222 == 0 {
                        return Err(AppendError::ReadOnly {
                            path: p.clone(),
                            why: format!("mode {:04o}", mode & 0o7777),
                        });
                    }
                    let f =
                        OpenOptions::new()
                            .read(true)
                            .write(true)
                            .open(p)
                            .map_err(|e| match e.kind() {
                                io::ErrorKind::PermissionDenied
                                | io::ErrorKind::ReadOnlyFilesystem => AppendError::ReadOnly {
                                    path: p.clone(),
                                    why: e.to_string(),
                                },
                                _ => AppendError::Open {
                                    path: p.clone(),
                                    op: "open the log for appending",
                                    source: e,
                                },
                            })?;
                    acquire(&f, LockKind::Exclusive, opts.wait, p)?;
                    identity = Some((md.dev(), md.ino()));
                    locked = Some(f);
                }
                AppendTarget::Copy(out) => {
                    if fs::symlink_metadata(out).is_ok() {
                        return Err(AppendError::TargetExists { path: out.clone() });
                    }
                    let f = File::open(p).map_err(open_err(p, "open the log"))?;
                    acquire(&f, LockKind::Shared, opts.wait, p)?;
                    let md = f.metadata().map_err(open_err(p, "inspect the log"))?;
                    identity = Some((md.dev(), md.ino()));
                    locked = Some(f);
                }
                AppendTarget::DryRun => {}
            }
        }
        let mut watch = Watch {
            scan: LockScan::new(),
            turn: TurnState::default(),
            inner: observer,
        };
        let log = crate::log::load(source, &opts.load, &mut watch)?;
        if log.header.version != 0 {
            return Err(AppendError::Unsupported {
                path: PathBuf::from(source.display()),
                version: log.header.version,
            });
        }
        let Watch {
            scan,
            turn: file_turn,
            ..
        } = watch;
        let mut blockers = Vec::new();
        let plain = log.container == Container::Plain;
        if let Some(d) = &log.dropped {
            blockers.push(Blocker::Dropped {
                line: d.line,
                lines: d.lines,
                reason: d.reason.clone(),
                committed_len: log.committed_len,
            });
        }
        if let Some(t) = &log.torn {
            blockers.push(Blocker::TornTail {
                committed_len: t.offset,
                len: t.len,
                plain,
            });
        }
        let report = scan.report();
        let foreign_busy = report.state == LockState::Busy;
        if let Some(b) = report.busy() {
            blockers.push(Blocker::CompactionLock {
                seq: b.seq,
                compaction_id: b.compaction_id.to_json(),
                owner: b.owner(),
            });
        }
        let mut app = Appender {
            target: target.clone(),
            surface: log.surface.clone(),
            next_seq: log.stored_events,
            file_turn_open: file_turn.open,
            lifecycle: Lifecycle::Resume,
            turn: file_turn,
            locks: scan,
            foreign_busy,
            blockers,
            locked,
            sink: None,
            len: 0,
            pause: opts.debug_pause,
            batches: 0,
            copy: None,
            log,
        };
        app.apply_lifecycle(opts.lifecycle);
        let Some(p) = path else {
            return Ok(app);
        };
        if target == AppendTarget::DryRun {
            return Ok(app);
        }
        // A real write: nothing may stand in the way but a compaction lock
        // (which `append` refuses and `release_compaction_lock` clears).
        if let Some(b) = app
            .blockers
            .iter()
            .find(|b| !matches!(b, Blocker::CompactionLock { .. }))
        {
            return Err(AppendError::Blocked {
                path: p,
                blocker: b.clone(),
            });
        }
        let f = app.locked.as_ref().expect("a real target holds the log");
        // The file we locked is the file we loaded, and it did not grow.
        let now = fs::metadata(&p).map_err(open_err(&p, "inspect the log"))?;
        if Some((now.dev(), now.ino())) != identity {
            return Err(AppendError::Changed {
                path: p,
                what: "the path now names another file".into(),
            });
        }
        let len = f.metadata().map_err(open_err(&p, "inspect the log"))?.len();
        app.check_length(f, &p, len)?;
        app.len = len;
        match &target {
            AppendTarget::InPlace => {
                let file = f.try_clone().map_err(open_err(&p, "open the log"))?;
                app.sink = Some(Sink { file, path: p });
            }
            AppendTarget::Copy(out) => {
                let name = out
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "log".into());
                let tmp = out.with_file_name(format!(".{name}.dsh-tmp-{}", std::process::id()));
                let mut file = OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create_new(true)
                    .open(&tmp)
                    .map_err(open_err(&tmp, "create the copy"))?;
                let mut src = f;
                let copied = src
                    .seek(SeekFrom::Start(0))
                    .and_then(|_| io::copy(&mut Read::by_ref(&mut src).take(len), &mut file))
                    .and_then(|n| file.sync_all().map(|_| n));
                match copied {
                    Ok(n) if n == len => {}
                    Ok(n) => {
                        let _ = fs::remove_file(&tmp);
                        return Err(AppendError::Changed {
                            path: p,
                            what: format!("copied {n} of {len} bytes"),
                        });
                    }
                    Err(e) => {
                        let _ = fs::remove_file(&tmp);
                        return Err(AppendError::Open {
                            path: tmp,
                            op: "copy the log",
                            source: e,
                        });
                    }
                }
                app.copy = Some((tmp.clone(), out.clone()));
                app.sink = Some(Sink { file, path: tmp });
            }
            AppendTarget::DryRun => unreachable!(),
        }
        Ok(app)
    }

    /// Set the surface and turn state for `lifecycle` (before any batch).
    fn apply_lifecycle(&mut self, lifecycle: Lifecycle) {
        self.lifecycle = lifecycle;
        let stored = self.log.stored_events;
        let mut turn = TurnState {
            open: self.file_turn_open,
        };
        let mut surface = self.log.surface.clone();
        match lifecycle {
            Lifecycle::Resume => {
                for c in &self.log.closers {
                    turn.observe(c);
                }
            }
            Lifecycle::Continue => {
                // The closers are not written: drop the nodes they appended
                // (synthetic tool results are appends, always last).
                while surface.nodes.last().is_some_and(|n| n.seq >= stored) {
                    let n = surface.nodes.pop().expect("checked");
                    surface.tokens -= n.tokens;
                }
            }
        }
        self.turn = turn;
        self.surface = surface;
    }

    /// Choose the lifecycle after looking at the loaded log (e.g. Continue
    /// when [`Appender::file_turn_open`]), instead of in
    /// [`AppendOptions::lifecycle`]. Only before the first batch.
    pub fn set_lifecycle(&mut self, lifecycle: Lifecycle) -> Result<(), AppendError> {
        if self.batches > 0 {
            return Err(AppendError::Invalid {
                seq: self.next_seq,
                message: "the lifecycle is chosen before the first batch".into(),
            });
        }
        self.apply_lifecycle(lifecycle);
        Ok(())
    }

    /// The lifecycle the appends belong to.
    pub fn lifecycle(&self) -> Lifecycle {
        self.lifecycle
    }

    /// Verify that `len` bytes are exactly the log that was loaded.
    fn check_length(&self, f: &File, path: &Path, len: u64) -> Result<(), AppendError> {
        let changed = |what: String| AppendError::Changed {
            path: path.to_path_buf(),
            what,
        };
        match self.log.container {
            Container::Plain => {
                if len != self.log.committed_len {
                    return Err(changed(format!(
                        "{len} bytes on disk, {} validated",
                        self.log.committed_len
                    )));
                }
            }
            Container::Zstd => {
                let mut data = Vec::with_capacity(len as usize);
                let mut r = f;
                r.seek(SeekFrom::Start(0))
                    .and_then(|_| Read::by_ref(&mut r).take(len).read_to_end(&mut data))
                    .map_err(open_err(path, "read the log"))?;
                let (end, whole) = crate::log::reader::complete_frames_end(&data);
                if !whole || end != len {
                    return Err(changed(format!(
                        "a Zstandard frame ends at byte {end} of {len}"
                    )));
                }
                // The last frame must end with the last validated record.
                let mut start = 0usize;
                let mut last = 0usize;
                while start < data.len() {
                    let n = zstd::zstd_safe::find_frame_compressed_size(&data[start..])
                        .unwrap_or(data.len() - start);
                    last = start;
                    start += n;
                }
                let plain = zstd::stream::decode_all(&data[last..])
                    .map_err(|e| changed(format!("the last frame does not decode: {e}")))?;
                let want = self.log.stored_events.checked_sub(1);
                if last_record_seq(&plain) != want {
                    return Err(changed(
                        "its last frame is not the last validated record".into(),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Where the batches go.
    pub fn target(&self) -> &AppendTarget {
        &self.target
    }

    /// The log as loaded (before any append by this appender).
    pub fn log(&self) -> &LoadedLog {
        &self.log
    }

    /// The compaction-lock scan (the file as loaded plus this appender's
    /// own appends).
    pub fn compaction_lock(&self) -> LockReport {
        self.locks.report()
    }

    /// What a real write would refuse (a dry run reports; a real target
    /// refused all but the compaction lock at open).
    pub fn blockers(&self) -> &[Blocker] {
        &self.blockers
    }

    /// Whether the file's last turn is open (it needs crash-repair closers).
    pub fn file_turn_open(&self) -> bool {
        self.file_turn_open
    }

    /// Whether a turn is open at the point the next event would be appended.
    /// Resume: after the lifecycle prefix, i.e. after the closers that close
    /// an open final turn, so false for any loaded log (the reference only
    /// prunes inside a live turn, compaction §13). Continue: the file's open
    /// final turn, as the appends so far left it.
    pub fn turn_open(&self) -> bool {
        self.turn.open
    }

    /// The next seq in the file.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// The surface as the appends so far left it.
    pub fn surface(&self) -> &Surface {
        &self.surface
    }

    /// Batches appended so far.
    pub fn batches(&self) -> u64 {
        self.batches
    }

    /// The lifecycle prefix still to be written (empty after the first batch,
    /// and always under [`Lifecycle::Continue`]).
    pub fn lifecycle_prefix(&self, time: f64) -> Vec<OwnedEvent> {
        if self.lifecycle == Lifecycle::Continue
            || self.batches > 0
            || self.next_seq != self.log.stored_events
        {
            return Vec::new();
        }
        lifecycle_prefix(&self.log, time)
    }

    /// Append the lifecycle prefix a resuming harness writes (closers, then
    /// the `session/end-seed` marker), turning a live compaction lock into
    /// stale crash evidence. Never edits or removes the `compaction/start`.
    /// Returns `None` when the lock is not busy (nothing to release).
    /// Releasing starts a new lifecycle: refused under [`Lifecycle::Continue`].
    pub fn release_compaction_lock(
        &mut self,
        time: f64,
    ) -> Result<Option<AppendReport>, AppendError> {
        if !self.foreign_busy {
            return Ok(None);
        }
        if self.lifecycle == Lifecycle::Continue {
            return Err(AppendError::Invalid {
                seq: self.next_seq,
                message: "releasing a compaction lock starts a new lifecycle (session/end-seed); use Lifecycle::Resume".into(),
            });
        }
        let prefix = self.lifecycle_prefix(time);
        let report = self.write_batch(&prefix, true, None)?;
        Ok(Some(report))
    }

    /// Validate and append one batch (complete events with their final seqs,
    /// starting at [`Appender::next_seq`]). Under [`Lifecycle::Resume`] the
    /// first batch must start with the lifecycle prefix
    /// ([`Appender::lifecycle_prefix`]).
    pub fn append(&mut self, events: &[OwnedEvent]) -> Result<AppendReport, AppendError> {
        self.write_batch(events, false, None)
    }

    /// [`Appender::append`], then stream every event of the batch, once it is
    /// written, to `observer`, folded onto [`Appender::surface`] as the
    /// loader would have folded it (`synthetic: false`: they are in the file
    /// now, crash-repair closers included). Lets a fold that watched
    /// [`Appender::open`] — a [`crate::meter::Meter`], say — follow the
    /// appends without re-reading the log. Nothing is streamed when the
    /// write fails.
    pub fn append_observed(
        &mut self,
        events: &[OwnedEvent],
        observer: &mut dyn Observer,
    ) -> Result<AppendReport, AppendError> {
        self.write_batch(events, false, Some(observer))
    }

    fn write_batch(
        &mut self,
        events: &[OwnedEvent],
        releasing: bool,
        observer: Option<&mut dyn Observer>,
    ) -> Result<AppendReport, AppendError> {
        if self.foreign_busy && !releasing {
            let b = self
                .blockers
                .iter()
                .find(|b| matches!(b, Blocker::CompactionLock { .. }))
                .cloned()
                .expect("a busy log has a compaction-lock blocker");
            return Err(AppendError::Blocked {
                path: self
                    .log
                    .source
                    .path()
                    .map(Path::to_path_buf)
                    .unwrap_or_default(),
                blocker: b,
            });
        }
        // Validate against scratch state; commit it only once written.
        let mut surface = self.surface.clone();
        let mut locks = self.locks.clone();
        let mut turn = self.turn;
        let mut seq = self.next_seq;
        for ev in events {
            self.validate(ev, seq, &mut surface)?;
            locks.observe(ev);
            if self.lifecycle == Lifecycle::Continue || seq >= self.log.event_count() {
                turn.observe(ev);
            }
            seq += 1;
        }
        if releasing && locks.state() == LockState::Busy {
            return Err(AppendError::Invalid {
                seq: self.next_seq,
                message: "the batch does not release the compaction lock".into(),
            });
        }
        let (payload, bytes) =
            encode(events, self.log.container).map_err(|e| AppendError::Open {
                path: self
                    .log
                    .source
                    .path()
                    .map(Path::to_path_buf)
                    .unwrap_or_default(),
                op: "compress the batch",
                source: e,
            })?;
        let first_seq = self.next_seq;
        let mut report = AppendReport {
            first_seq,
            events: events.len() as u64,
            bytes,
            written: 0,
            offset: self.len,
            path: None,
        };
        if let Some(sink) = &mut self.sink
            && !events.is_empty()
        {
            // Re-check: nobody grew the file since it was validated.
            let now = sink
                .file
                .metadata()
                .map_err(open_err(&sink.path, "inspect the log"))?
                .len();
            if now != self.len {
                return Err(AppendError::Changed {
                    path: sink.path.clone(),
                    what: format!("{now} bytes on disk, {} expected", self.len),
                });
            }
            let new_len = commit(&mut sink.file, &sink.path, self.len, &payload, self.pause)?;
            report.written = new_len - self.len;
            report.path = Some(sink.path.clone());
            self.len = new_len;
        }
        let before = std::mem::replace(&mut self.surface, surface);
        self.locks = locks;
        self.turn = turn;
        self.next_seq = seq;
        if let Some(observer) = observer {
            // Fold again, event by event, for the observer (validated above,
            // so nothing can fail).
            let mut s = before;
            for ev in events {
                let applied = match check_local(ev) {
                    Ok(Some(op)) => s
                        .apply(
                            ev,
                            op,
                            node_facts(ev),
                            NodeBody::Owned(Arc::new(ev.clone())),
                        )
                        .ok(),
                    _ => None,
                };
                observer.event(
                    ev,
                    &Folded {
                        applied: applied.as_ref(),
                        surface: &s,
                        synthetic: false,
                    },
                );
            }
        }
        if releasing {
            self.foreign_busy = false;
            self.blockers
                .retain(|b| !matches!(b, Blocker::CompactionLock { .. }));
        }
        if !events.is_empty() {
            self.batches += 1;
        }
        Ok(report)
    }

    /// One event, as the loader would check it at `seq`.
    fn validate(
        &self,
        ev: &OwnedEvent,
        seq: u64,
        surface: &mut Surface,
    ) -> Result<(), AppendError> {
        let bad = |m: String| AppendError::Invalid { seq, message: m };
        if ev.seq != seq || ev.value.get("seq").and_then(|s| s.as_count()) != Some(seq) {
            return Err(bad(format!(
                "expected seq {seq}, the event says {}",
                ev.value.get("seq").map(|s| s.to_json()).unwrap_or_default()
            )));
        }
        let stored = self.log.stored_events;
        let count = self.log.event_count();
        if self.lifecycle == Lifecycle::Continue {
            if seq == stored && !self.file_turn_open {
                return Err(bad(
                    "Lifecycle::Continue appends inside the open final turn, and this log's last turn is closed: a new lifecycle (Lifecycle::Resume) starts with the session/end-seed marker".into(),
                ));
            }
        } else if seq < count {
            // A crash-repair closer: exactly the one the loader computed.
            let want = &self.log.closers[(seq - stored) as usize];
            if !want.value.deep_eq(&ev.value) {
                return Err(bad(
                    "the batch must start with the crash-repair closers of the open final turn"
                        .into(),
                ));
            }
            return Ok(());
        }
        if self.lifecycle == Lifecycle::Resume
            && seq == count
            && self.log.end_seed_appended()
            && ev.kind != Kind::SessionEndSeed
        {
            return Err(bad(
                "a new lifecycle starts with the session/end-seed marker".into(),
            ));
        }
        let kind = Kind::of(&ev.type_name());
        if kind != ev.kind {
            return Err(bad(format!(
                "event kind does not match its type \"{}\"",
                ev.type_name()
            )));
        }
        // Exactly the loader's rules, so nothing written can make the log unreadable.
        crate::log::legacy::check_retired(ev, &self.log.header.id).map_err(|e| bad(e.message))?;
        let (_, op) = crate::log::validate::check_event(ev).map_err(|e| bad(e.to_string()))?;
        if let Some(op) = op {
            let facts = node_facts(ev);
            surface
                .apply(ev, op, facts, NodeBody::Owned(Arc::new(ev.clone())))
                .map_err(|e| bad(e.message))?;
        }
        Ok(())
    }

    /// Publish a copy (link the temporary file into place) and release the
    /// lock. In place and dry runs: just release. Returns the file written.
    pub fn finish(mut self) -> Result<Option<PathBuf>, AppendError> {
        if let Some((tmp, out)) = self.copy.take() {
            let published = fs::hard_link(&tmp, &out);
            let _ = fs::remove_file(&tmp);
            if let Err(e) = published {
                return Err(if e.kind() == io::ErrorKind::AlreadyExists {
                    AppendError::TargetExists { path: out }
                } else {
                    AppendError::Open {
                        path: out,
                        op: "publish the copy",
                        source: e,
                    }
                });
            }
            if let Some(dir) = out.parent() {
                let dir = if dir.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    dir
                };
                if let Ok(d) = File::open(dir) {
                    let _ = d.sync_all();
                }
            }
            return Ok(Some(out));
        }
        Ok(self.sink.as_ref().map(|s| s.path.clone()))
    }
}

impl Drop for Appender {
    fn drop(&mut self) {
        if let Some((tmp, _)) = self.copy.take() {
            let _ = fs::remove_file(tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::load;
    use std::io::Write as _;

    const HEADER: &str =
        r#"{"type":"session","version":0,"id":"t","createdAt":0,"cwd":"/tmp","delegationDepth":0}"#;

    /// An open turn: call `a` has a result, call `b` none, the step is open.
    fn open_turn_log() -> String {
        let lines = [
            HEADER,
            r#"{"type":"turn/start","seq":0,"time":10,"data":{"turn":1}}"#,
            r#"{"type":"step/start","seq":1,"time":11,"data":{"turn":1,"step":1}}"#,
            r#"{"type":"user/message","seq":2,"time":12,"data":{"role":"user","content":[{"type":"text","text":"go"}],"source":{"kind":"user"},"id":"u1"},"surfaceOp":"append"}"#,
            r#"{"type":"assistant/message","seq":3,"time":13,"data":{"turn":1,"step":1,"message":{"role":"assistant","content":[{"type":"tool-call","id":"a","name":"bash","arguments":"{}"},{"type":"tool-call","id":"b","name":"bash","arguments":"{}"}],"source":{"kind":"model","provider":"p","model":"m"},"id":"a1"}},"surfaceOp":"append"}"#,
            r#"{"type":"tool/call","seq":4,"time":14,"data":{"turn":1,"step":1,"callId":"a","name":"bash","arguments":"{}"}}"#,
            r#"{"type":"tool/result","seq":5,"time":15,"data":{"turn":1,"step":1,"message":{"role":"user","content":[{"type":"tool-result","toolCallId":"a","content":[{"type":"text","text":"ok"}]}],"source":{"kind":"tool","callId":"a"},"id":"r1"}},"surfaceOp":"append"}"#,
        ];
        let mut s = lines.join("\n");
        s.push('\n');
        s
    }

    fn user_msg(seq: u64) -> OwnedEvent {
        let line = format!(
            r#"{{"type":"user/message","seq":{seq},"time":99,"data":{{"role":"user","content":[{{"type":"text","text":"{}"}}],"source":{{"kind":"user"}},"id":"u{seq}"}},"surfaceOp":"append"}}"#,
            "x".repeat(300)
        );
        let v = Value::parse(&line).unwrap().into_owned();
        owned_event(Kind::UserMessage, seq, v)
    }

    fn loaded(path: &Path) -> LoadedLog {
        load(
            &LogSource::File(path.to_path_buf()),
            &LoadOptions::default(),
            &mut |_: &Event<'_>, _: &Folded<'_>| {},
        )
        .unwrap()
    }

    /// Records every operation instead of doing it.
    #[derive(Default)]
    struct Recorder {
        ops: Vec<Op>,
    }
    #[derive(Clone)]
    enum Op {
        Write(u64, Vec<u8>),
        Sync,
    }
    impl WriteOps for Recorder {
        fn write_at(&mut self, buf: &[u8], offset: u64) -> io::Result<()> {
            self.ops.push(Op::Write(offset, buf.to_vec()));
            Ok(())
        }
        fn sync(&mut self) -> io::Result<()> {
            self.ops.push(Op::Sync);
            Ok(())
        }
        fn truncate(&mut self, _: u64) -> io::Result<()> {
            Ok(())
        }
    }

    /// Apply the first `n` operations, the last one cut to `cut` bytes.
    fn replay(base: &[u8], ops: &[Op], n: usize, cut: Option<usize>, path: &Path) {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .unwrap();
        f.write_all(base).unwrap();
        for (i, op) in ops[..n].iter().enumerate() {
            if let Op::Write(off, bytes) = op {
                let len = if i + 1 == n {
                    cut.unwrap_or(bytes.len())
                } else {
                    bytes.len()
                };
                f.write_all_at(&bytes[..len], *off).unwrap();
            }
        }
    }

    #[test]
    fn every_intermediate_state_of_a_plain_batch_is_none_or_all() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session.jsonl");
        let base = open_turn_log();
        fs::write(&path, &base).unwrap();
        let before = loaded(&path);
        assert_eq!(before.closers.len(), 3, "result for b, step/end, turn/end");
        let mut batch = lifecycle_prefix(&before, 50.0);
        batch.push(user_msg(before.session_length()));
        let (payload, _) = encode(&batch, Container::Plain).unwrap();
        let Payload::Units(units) = &payload else {
            panic!()
        };
        assert_eq!(units.len(), 2, "split before the turn/end closer");
        let mut rec = Recorder::default();
        write_payload(&mut rec, base.len() as u64, &payload, None).unwrap();
        let (none, all) = (before.event_count(), before.session_length() + 1);
        let mut seen_all = 0;
        let probe = dir.path().join("probe.jsonl");
        for n in 0..=rec.ops.len() {
            let max = match rec.ops.get(n.wrapping_sub(1)) {
                Some(Op::Write(_, b)) if n > 0 => b.len(),
                _ => 0,
            };
            let mut cuts: Vec<Option<usize>> = (0..max).step_by(13).map(Some).collect();
            cuts.push(None);
            for cut in cuts {
                replay(base.as_bytes(), &rec.ops, n, cut, &probe);
                let l = loaded(&probe);
                let count = l.event_count() + l.end_seed_appended() as u64;
                let n_events = l.event_count();
                assert!(
                    n_events == none || n_events == all,
                    "after {n} op(s), cut {cut:?}: {n_events} events (want {none} or {all})"
                );
                if n_events == all {
                    seen_all += 1;
                    assert_eq!(l.surface.seqs(), vec![2, 3, 5, 6, 10]);
                } else {
                    assert_eq!(count, none + 1);
                    assert_eq!(l.surface.seqs(), vec![2, 3, 5, 6]);
                }
            }
        }
        assert!(seen_all > 0);
    }

    #[test]
    fn a_zstd_batch_is_one_checksummed_frame() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session.jsonl.zstd");
        let base = open_turn_log();
        let (head, body) = base.split_at(HEADER.len() + 1);
        let mut bytes = zstd_frame(head.as_bytes()).unwrap();
        bytes.extend(zstd_frame(body.as_bytes()).unwrap());
        fs::write(&path, &bytes).unwrap();
        let src = LogSource::File(path.clone());
        let mut app = Appender::open(
            &src,
            AppendTarget::InPlace,
            &AppendOptions::default(),
            &mut |_: &Event<'_>, _: &Folded<'_>| {},
        )
        .unwrap();
        let mut batch = app.lifecycle_prefix(50.0);
        batch.push(user_msg(app.log().session_length()));
        let r = app.append(&batch).unwrap();
        assert_eq!(r.offset, bytes.len() as u64);
        app.finish().unwrap();
        let after = fs::read(&path).unwrap();
        assert_eq!(&after[..bytes.len()], &bytes[..], "old bytes untouched");
        let frame = &after[bytes.len()..];
        assert_eq!(
            zstd::zstd_safe::find_frame_compressed_size(frame).unwrap(),
            frame.len()
        );
        assert_ne!(frame[4] & 0x04, 0, "content checksum flag");
        let l = loaded(&path);
        assert_eq!(l.event_count(), 11);
        assert!(l.closers.is_empty());
        // Cut the new frame anywhere: the log loads as before (a torn frame).
        for cut in (1..frame.len()).step_by(7) {
            fs::write(&path, &after[..bytes.len() + cut]).unwrap();
            let l = loaded(&path);
            assert_eq!(l.stored_events, 6, "cut at {cut}");
            assert_eq!(l.event_count(), 9);
        }
    }

    /// Fails the n-th write (after writing part of it) or every sync.
    struct Failing {
        file: File,
        fail_write: usize,
        fail_truncate: bool,
        writes: usize,
    }
    impl WriteOps for Failing {
        fn write_at(&mut self, buf: &[u8], offset: u64) -> io::Result<()> {
            self.writes += 1;
            if self.writes == self.fail_write {
                FileExt::write_all_at(&self.file, &buf[..buf.len() / 2], offset)?;
                return Err(io::Error::from_raw_os_error(28)); // ENOSPC
            }
            FileExt::write_all_at(&self.file, buf, offset)
        }
        fn sync(&mut self) -> io::Result<()> {
            self.file.sync_all()
        }
        fn truncate(&mut self, len: u64) -> io::Result<()> {
            if self.fail_truncate {
                return Err(io::Error::other("cannot truncate"));
            }
            self.file.set_len(len)
        }
    }

    #[test]
    fn a_failed_write_is_cut_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session.jsonl");
        let base = open_turn_log();
        fs::write(&path, &base).unwrap();
        let before = loaded(&path);
        let batch = lifecycle_prefix(&before, 50.0);
        let (payload, _) = encode(&batch, Container::Plain).unwrap();
        for fail_write in 1..=4 {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
                .unwrap();
            let mut ops = Failing {
                file,
                fail_write,
                fail_truncate: false,
                writes: 0,
            };
            let e = commit(&mut ops, &path, base.len() as u64, &payload, None).unwrap_err();
            assert!(
                matches!(&e, AppendError::Io { len, source, .. } if *len == base.len() as u64 && source.raw_os_error() == Some(28)),
                "{e}"
            );
            assert!(e.to_string().contains("restored to its previous"));
            assert_eq!(
                fs::read_to_string(&path).unwrap(),
                base,
                "write {fail_write}"
            );
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let mut ops = Failing {
            file,
            fail_write: 3,
            fail_truncate: true,
            writes: 0,
        };
        let e = commit(&mut ops, &path, base.len() as u64, &payload, None).unwrap_err();
        assert!(matches!(e, AppendError::RollbackFailed { .. }), "{e}");
        // Even then the incomplete batch is invisible to the loader.
        assert_eq!(loaded(&path).event_count(), before.event_count());
    }

    #[test]
    fn the_batch_must_start_a_lifecycle_and_be_valid() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session.jsonl");
        fs::write(&path, open_turn_log()).unwrap();
        let src = LogSource::File(path.clone());
        let mut app = Appender::open(
            &src,
            AppendTarget::DryRun,
            &AppendOptions::default(),
            &mut |_: &Event<'_>, _: &Folded<'_>| {},
        )
        .unwrap();
        assert!(app.file_turn_open());
        assert!(!app.turn_open(), "the closers close the turn");
        // Skipping the closers.
        let e = app.append(&[user_msg(6)]).unwrap_err();
        assert!(e.to_string().contains("crash-repair closers"), "{e}");
        // The right prefix, then an event with a gap.
        let mut batch = app.lifecycle_prefix(5.0);
        batch.push(user_msg(11));
        let e = app.append(&batch).unwrap_err();
        assert!(e.to_string().contains("expected seq 10"), "{e}");
        // A replace of a node that is not on the surface.
        let mut batch = app.lifecycle_prefix(5.0);
        let mut bad = user_msg(10);
        bad.value.set(
            "surfaceOp",
            Value::parse(r#"{"op":"replace","start":77,"end":77}"#)
                .unwrap()
                .into_owned(),
        );
        bad.value.set("sourceEventSeqs", vec![7u64].into());
        batch.push(bad);
        assert!(app.append(&batch).is_err());
        // Retired shapes the loader refuses are never written either.
        let mut batch = app.lifecycle_prefix(5.0);
        let fallback = Value::parse(
            r#"{"type":"request/header","seq":10,"time":5,"data":{"header":{"config":{"provider":"p","model":"m"}},"reason":"fallback"}}"#,
        )
        .unwrap()
        .into_owned();
        batch.push(crate::event::owned_event(Kind::RequestHeader, 10, fallback));
        let e = app.append(&batch).unwrap_err();
        assert!(e.to_string().contains("fallback"), "{e}");
        // A good batch passes; the dry run wrote nothing.
        let mut batch = app.lifecycle_prefix(5.0);
        batch.push(user_msg(10));
        let r = app.append(&batch).unwrap();
        assert_eq!((r.first_seq, r.events, r.written), (6, 5, 0));
        assert_eq!(app.next_seq(), 11);
        assert!(app.lifecycle_prefix(5.0).is_empty());
        assert_eq!(app.surface().seqs(), vec![2, 3, 5, 6, 10]);
        assert_eq!(fs::read_to_string(&path).unwrap(), open_turn_log());
    }

    #[test]
    fn a_copy_takes_several_batches_and_appears_only_when_finished() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session.jsonl");
        fs::write(&path, open_turn_log()).unwrap();
        let out = dir.path().join("copy.jsonl");
        let src = LogSource::File(path.clone());
        let mut app = Appender::open(
            &src,
            AppendTarget::Copy(out.clone()),
            &AppendOptions::default(),
            &mut |_: &Event<'_>, _: &Folded<'_>| {},
        )
        .unwrap();
        let mut first = app.lifecycle_prefix(7.0);
        first.push(user_msg(10));
        app.append(&first).unwrap();
        assert!(!out.exists(), "published only by finish()");
        let r = app.append(&[user_msg(11)]).unwrap();
        assert_eq!((r.first_seq, r.events), (11, 1));
        assert_eq!(app.batches(), 2);
        assert_eq!(app.finish().unwrap(), Some(out.clone()));
        assert_eq!(fs::read_to_string(&path).unwrap(), open_turn_log());
        let l = loaded(&out);
        assert_eq!(l.stored_events, 12);
        assert_eq!(l.surface.seqs(), vec![2, 3, 5, 6, 10, 11]);
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 2, "no temporary file left");
        // Dropped without finish: no copy, no leftovers.
        let out2 = dir.path().join("copy2.jsonl");
        let mut app = Appender::open(
            &src,
            AppendTarget::Copy(out2.clone()),
            &AppendOptions::default(),
            &mut |_: &Event<'_>, _: &Folded<'_>| {},
        )
        .unwrap();
        let prefix = app.lifecycle_prefix(7.0);
        app.append(&prefix).unwrap();
        drop(app);
        assert!(!out2.exists());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    #[test]
    fn a_live_compaction_lock_refuses_appends_until_released() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session.jsonl");
        let mut text = open_turn_log();
        text.push_str(r#"{"type":"compaction/start","seq":6,"time":16,"data":{"compactionId":"c1","turn":1}}"#);
        text.push('\n');
        fs::write(&path, &text).unwrap();
        let src = LogSource::File(path.clone());
        let open = || {
            Appender::open(
                &src,
                AppendTarget::InPlace,
                &AppendOptions::default(),
                &mut |_: &Event<'_>, _: &Folded<'_>| {},
            )
            .unwrap()
        };
        let mut app = open();
        assert_eq!(app.compaction_lock().state, LockState::Busy);
        assert!(matches!(
            app.blockers(),
            [Blocker::CompactionLock { seq: 6, .. }]
        ));
        let batch = app.lifecycle_prefix(20.0);
        let e = app.append(&batch).unwrap_err();
        assert!(
            e.is_busy() && e.to_string().contains("live compaction lock"),
            "{e}"
        );
        assert_eq!(fs::read_to_string(&path).unwrap(), text);
        // Release: the closers (the bracket's turn ends), then the end-seed.
        let r = app.release_compaction_lock(20.0).unwrap().unwrap();
        assert_eq!((r.first_seq, r.events), (7, 4));
        assert_eq!(app.compaction_lock().state, LockState::Stale);
        assert!(app.blockers().is_empty());
        app.append(&[user_msg(11)]).unwrap();
        app.finish().unwrap();
        let after = fs::read_to_string(&path).unwrap();
        assert!(
            after.starts_with(&text),
            "the compaction/start is untouched"
        );
        let mut app = open();
        assert_eq!(app.compaction_lock().state, LockState::Stale);
        assert!(app.release_compaction_lock(30.0).unwrap().is_none());
        assert_eq!(app.compaction_lock().brackets[0].end_seed_seq, Some(10));
    }

    fn noop() -> impl FnMut(&Event<'_>, &Folded<'_>) {
        |_: &Event<'_>, _: &Folded<'_>| {}
    }

    #[test]
    fn continue_appends_inside_the_open_turn_without_a_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session.jsonl");
        fs::write(&path, open_turn_log()).unwrap();
        let src = LogSource::File(path.clone());
        let opts = AppendOptions {
            lifecycle: Lifecycle::Continue,
            ..AppendOptions::default()
        };
        let mut app = Appender::open(&src, AppendTarget::InPlace, &opts, &mut noop()).unwrap();
        assert_eq!(app.lifecycle(), Lifecycle::Continue);
        assert!(app.lifecycle_prefix(5.0).is_empty());
        assert!(app.turn_open(), "the closers are not written");
        assert_eq!(
            app.surface().seqs(),
            vec![2, 3, 5],
            "no synthetic result for b"
        );
        assert_eq!(app.next_seq(), 6);
        let tokens = app.surface().tokens;
        let mut seen = Vec::new();
        let r = app
            .append_observed(&[user_msg(6)], &mut |ev: &Event<'_>, f: &Folded<'_>| {
                seen.push((
                    ev.seq,
                    f.applied.map(|a| a.tokens),
                    f.surface.tokens,
                    f.synthetic,
                ))
            })
            .unwrap();
        assert_eq!((r.first_seq, r.events), (6, 1));
        // 300 characters: q(300) + 4 per block + 4 per message.
        assert_eq!(seen, vec![(6, Some(83), tokens + 83, false)]);
        assert_eq!(app.surface().tokens, tokens + 83);
        assert!(app.turn_open());
        app.finish().unwrap();
        let l = loaded(&path);
        assert_eq!(l.stored_events, 7);
        assert!(!l.ends_with_end_seed);
        // Still interrupted: the closers now follow the appended event.
        assert_eq!(l.closers.len(), 3);
        assert_eq!(l.closers[0].seq, 7);
        assert_eq!(l.surface.seqs(), vec![2, 3, 5, 6, 7]);
    }

    #[test]
    fn continue_needs_an_open_turn_and_cannot_release() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session.jsonl");
        fs::write(&path, open_turn_log()).unwrap();
        let src = LogSource::File(path.clone());
        // Resume once: closers and end-seed close the turn.
        let mut app = Appender::open(
            &src,
            AppendTarget::InPlace,
            &AppendOptions::default(),
            &mut noop(),
        )
        .unwrap();
        let prefix = app.lifecycle_prefix(5.0);
        app.append(&prefix).unwrap();
        // The lifecycle is chosen before the first batch.
        assert!(app.set_lifecycle(Lifecycle::Continue).is_err());
        app.finish().unwrap();
        let before = fs::read(&path).unwrap();
        let mut app = Appender::open(
            &src,
            AppendTarget::InPlace,
            &AppendOptions::default(),
            &mut noop(),
        )
        .unwrap();
        assert!(!app.file_turn_open());
        app.set_lifecycle(Lifecycle::Continue).unwrap();
        let e = app.append(&[user_msg(10)]).unwrap_err();
        assert!(e.to_string().contains("last turn is closed"), "{e}");
        drop(app);
        assert_eq!(fs::read(&path).unwrap(), before);
        // A live compaction lock: Continue refuses appends and cannot release.
        let mut text = open_turn_log();
        text.push_str(r#"{"type":"compaction/start","seq":6,"time":16,"data":{"compactionId":"c1","turn":1}}"#);
        text.push('\n');
        fs::write(&path, &text).unwrap();
        let opts = AppendOptions {
            lifecycle: Lifecycle::Continue,
            ..AppendOptions::default()
        };
        let mut app = Appender::open(&src, AppendTarget::InPlace, &opts, &mut noop()).unwrap();
        let e = app.append(&[user_msg(7)]).unwrap_err();
        assert!(e.is_busy(), "{e}");
        let e = app.release_compaction_lock(20.0).unwrap_err();
        assert!(e.to_string().contains("new lifecycle"), "{e}");
        drop(app);
        assert_eq!(fs::read_to_string(&path).unwrap(), text);
    }
}
