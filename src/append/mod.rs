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
//!      then fsync. A frame that is cut short is a torn final frame, and the
//!      reader keeps the complete lines of its decodable blocks; so the frame
//!      is laid out with every block ending at a safe point (never between a
//!      `compaction/prune` and its replacement, never inside a bracket's
//!      summary → checkpoint → end), and checked (see `frame.rs`). A batch up
//!      to one Zstandard block (128 KiB of text) is all-or-nothing; a larger
//!      one becomes visible in whole units. A unit whose lines after its
//!      first exceed one block cannot be kept whole, and the batch is refused
//!      before anything is written ([`AppendError::NotAtomic`]).
//!
//!    Every byte is written through an `O_APPEND` descriptor and checked
//!    where it landed, so a program that appends without the lock (a
//!    running harness) is never overwritten; on such a surprise dsh removes
//!    only its own bytes, and only when nothing follows them, and fails with
//!    [`AppendError::Interleaved`] (exit 4).
//!
//!    On any error the file is cut back to its length before the batch
//!    (when only dsh's bytes follow it). Bytes that were in the file are
//!    never rewritten.
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
//!
//! ```
//! use dsh::append::{AppendOptions, AppendTarget, Appender};
//! // A dry run validates everything a write would, and writes nothing.
//! let src = dsh::LogSource::File("samples/prune-open-turn.jsonl".into());
//! let app = Appender::open(&src, AppendTarget::DryRun, &AppendOptions::default(), &mut |_: &dsh::Event<'_>, _: &dsh::log::Folded<'_>| {})?;
//! println!("next seq {}, {} blocker(s)", app.next_seq(), app.blockers().len());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::event::{Event, Kind, OwnedEvent, owned_event};
use crate::json::Value;
use crate::lock::{LockReport, LockScan, LockState};
use crate::log::{ChunkRun, Container, Folded, LoadOptions, LoadedLog, LogSource, Observer};
use crate::surface::{NodeBody, Surface, check_local, node_facts};

mod error;
mod frame;
mod lock;
mod recheck;
pub mod repair;
mod write;

pub use error::{AppendError, Blocker};
use lock::{LockKind, acquire};
use write::{EncodeError, Payload, Sink, commit, encode, encoded_len, last_record_seq};

/// The events a resuming harness writes first: the crash-repair closers of an
/// open final turn, then the `session/end-seed` marker unless the log already
/// ends with one (stamped `time`; the closers keep the last event's time).
fn lifecycle_prefix(log: &LoadedLog, time: f64) -> Vec<OwnedEvent> {
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
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

    /// Chunks change neither the locks (but their last seq) nor the turn.
    fn chunks(&mut self, run: &ChunkRun<'_>, folded: &Folded<'_>) {
        Observer::chunks(&mut self.scan, run, folded);
        self.inner.chunks(run, folded);
    }
}

/// A scan as the loader's observer: stored events only (closers and the
/// in-memory end-seed are not in the file); chunks change nothing but the
/// last seq, so the scan can load with
/// [`crate::LoadOptions::skip_chunk_events`].
impl Observer for LockScan {
    fn event(&mut self, ev: &Event<'_>, folded: &Folded<'_>) {
        if !folded.synthetic {
            self.observe(ev);
        }
    }

    fn chunks(&mut self, run: &ChunkRun<'_>, _folded: &Folded<'_>) {
        self.counted(run.last_seq());
    }
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
    /// The surface after the appends so far; `None` while it is the loaded
    /// log's as it stands (a resumed lifecycle before its first batch), so
    /// that opening copies no surface (one costs milliseconds on a large
    /// log) and only a batch does.
    surface: Option<Surface>,
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

/// The log file as locked for a write, and its (device, inode).
struct LockedLog {
    file: File,
    identity: (u64, u64),
}

/// What the file lock for `target` needs: the log opened and locked
/// (exclusively in place, shared for a copy), and the identity (device,
/// inode) of the file that was locked, so the writer can tell later that
/// the path still names it. A dry run locks nothing.
fn lock_for_target(
    p: &Path,
    target: &AppendTarget,
    wait: Option<Duration>,
) -> Result<Option<LockedLog>, AppendError> {
    match target {
        AppendTarget::InPlace => {
            let md = fs::symlink_metadata(p).map_err(open_err(p, "inspect the log"))?;
            if md.file_type().is_symlink() {
                let to = fs::read_link(p)
                    .map(|t| t.display().to_string())
                    .unwrap_or_else(|_| "?".into());
                return Err(AppendError::Symlink {
                    path: p.to_path_buf(),
                    target: to,
                });
            }
            if !md.is_file() {
                return Err(AppendError::Open {
                    path: p.to_path_buf(),
                    op: "append to the log",
                    source: io::Error::other("not a regular file"),
                });
            }
            let mode = md.permissions().mode();
            if mode & 0o222 == 0 {
                return Err(AppendError::ReadOnly {
                    path: p.to_path_buf(),
                    why: format!("mode {:04o}", mode & 0o7777),
                });
            }
            let f = OpenOptions::new()
                .read(true)
                .write(true)
                .open(p)
                .map_err(|e| match e.kind() {
                    io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem => {
                        AppendError::ReadOnly {
                            path: p.to_path_buf(),
                            why: e.to_string(),
                        }
                    }
                    _ => AppendError::Open {
                        path: p.to_path_buf(),
                        op: "open the log for appending",
                        source: e,
                    },
                })?;
            acquire(&f, LockKind::Exclusive, wait, p)?;
            // Waiting for the lock took time: the path must still name the
            // file that was locked (see `recheck`).
            recheck::still_names(p, &f)?;
            let md = f.metadata().map_err(open_err(p, "inspect the log"))?;
            Ok(Some(LockedLog {
                file: f,
                identity: (md.dev(), md.ino()),
            }))
        }
        AppendTarget::Copy(out) => {
            if out.as_os_str() == "-" {
                // `-` means standard output everywhere else; never a file named `-`.
                return Err(AppendError::BadTarget {
                    path: out.clone(),
                    why: "`-` would be standard output, which cannot take a copy of a log (it is written beside its place, then linked in): name a file".into(),
                });
            }
            if fs::symlink_metadata(out).is_ok() {
                return Err(AppendError::TargetExists { path: out.clone() });
            }
            check_target_dir(out)?;
            let f = File::open(p).map_err(open_err(p, "open the log"))?;
            acquire(&f, LockKind::Shared, wait, p)?;
            let md = f.metadata().map_err(open_err(p, "inspect the log"))?;
            Ok(Some(LockedLog {
                file: f,
                identity: (md.dev(), md.ino()),
            }))
        }
        AppendTarget::DryRun => Ok(None),
    }
}

/// A descriptor opened for append (`O_APPEND`) on the file at `p`, which
/// must still be the file `identity` names.
fn open_append(p: &Path, identity: (u64, u64)) -> Result<File, AppendError> {
    let f = OpenOptions::new()
        .append(true)
        .open(p)
        .map_err(open_err(p, "open the log for appending"))?;
    let md = f.metadata().map_err(open_err(p, "inspect the log"))?;
    if (md.dev(), md.ino()) != identity {
        return Err(AppendError::Changed {
            path: p.to_path_buf(),
            what: "the path now names another file".into(),
        });
    }
    Ok(f)
}

/// The directory a copy goes into must exist and be a directory (a usage
/// error, not a failed write).
fn check_target_dir(out: &Path) -> Result<(), AppendError> {
    let dir = match out.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let bad = |why: String| AppendError::BadTarget {
        path: out.to_path_buf(),
        why,
    };
    match fs::metadata(dir) {
        Ok(md) if md.is_dir() => Ok(()),
        Ok(_) => Err(bad(format!("{} is not a directory", dir.display()))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            Err(bad(format!("no directory {}", dir.display())))
        }
        Err(e) => Err(bad(format!("{}: {e}", dir.display()))),
    }
}

/// What stands in the way of a write to `log` (a dropped region, a torn
/// tail, a live compaction lock), and whether a compaction lock of another
/// process is busy.
fn blockers_of(log: &LoadedLog, scan: &LockScan) -> (Vec<Blocker>, bool) {
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
    if let Some(c) = &log.cut_frame {
        blockers.push(Blocker::CutFrame {
            whole_end: c.whole_end,
            file_len: c.file_len,
        });
    } else if let Some(t) = &log.torn {
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
    (blockers, foreign_busy)
}

/// Copy the first `len` bytes of the locked log `f` (at `p`) into a new
/// temporary file beside `out`, synced; [`Appender::finish`] links it into
/// place. Returns the temporary path and its open file.
fn copy_beside(f: &File, p: &Path, out: &Path, len: u64) -> Result<(PathBuf, File), AppendError> {
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
        .map_err(|e| match e.kind() {
            io::ErrorKind::PermissionDenied
            | io::ErrorKind::ReadOnlyFilesystem
            | io::ErrorKind::NotFound
            | io::ErrorKind::NotADirectory => AppendError::BadTarget {
                path: out.to_path_buf(),
                why: e.to_string(),
            },
            _ => open_err(&tmp, "create the copy")(e),
        })?;
    let mut src = f;
    let copied = src
        .seek(SeekFrom::Start(0))
        .and_then(|_| io::copy(&mut Read::by_ref(&mut src).take(len), &mut file))
        .and_then(|n| file.sync_all().map(|_| n));
    match copied {
        Ok(n) if n == len => Ok((tmp, file)),
        Ok(n) => {
            let _ = fs::remove_file(&tmp);
            Err(AppendError::Changed {
                path: p.to_path_buf(),
                what: format!("copied {n} of {len} bytes"),
            })
        }
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(AppendError::Open {
                path: tmp,
                op: "copy the log",
                source: e,
            })
        }
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
            (LogSource::Stdin | LogSource::Spooled(_), AppendTarget::DryRun) => None,
            (LogSource::Stdin | LogSource::Spooled(_), _) => return Err(AppendError::Stdin),
            (LogSource::File(p), _) => Some(p.clone()),
        };
        if let Some(p) = &path
            && target != AppendTarget::DryRun
            && !crate::log::source::is_regular(p)
            && fs::metadata(p).is_ok_and(|m| !m.is_dir())
        {
            return Err(AppendError::NotRegular { path: p.clone() });
        }
        let held = match &path {
            Some(p) => lock_for_target(p, &target, opts.wait)?,
            None => None,
        };
        let identity = held.as_ref().map(|h| h.identity);
        let locked = held.map(|h| h.file);
        let mut watch = Watch {
            scan: LockScan::new(),
            turn: TurnState::default(),
            inner: observer,
        };
        let log = crate::log::load(source, &opts.load, &mut watch)?;
        let Watch {
            scan,
            turn: file_turn,
            ..
        } = watch;
        let (blockers, foreign_busy) = blockers_of(&log, &scan);
        let mut app = Appender {
            target: target.clone(),
            surface: None,
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
                let append = open_append(&p, (now.dev(), now.ino()))?;
                app.sink = Some(Sink {
                    file,
                    append,
                    path: p,
                });
            }
            AppendTarget::Copy(out) => {
                let (tmp, file) = copy_beside(f, &p, out, len)?;
                app.copy = Some((tmp.clone(), out.clone()));
                let md = file
                    .metadata()
                    .map_err(open_err(&tmp, "inspect the copy"))?;
                let append = open_append(&tmp, (md.dev(), md.ino()))?;
                app.sink = Some(Sink {
                    file,
                    append,
                    path: tmp,
                });
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
        self.surface = match lifecycle {
            Lifecycle::Resume => {
                for c in &self.log.closers {
                    turn.observe(c);
                }
                None
            }
            Lifecycle::Continue => {
                // The closers are not written: drop the nodes they appended
                // (synthetic tool results are appends, always last).
                let mut surface = self.log.surface.clone();
                while surface.nodes.last().is_some_and(|n| n.seq >= stored) {
                    let n = surface.nodes.pop().expect("checked");
                    surface.tokens -= n.tokens;
                }
                Some(surface)
            }
        };
        self.turn = turn;
    }

    /// Choose the lifecycle after looking at the loaded log (e.g. Continue
    /// when [`Appender::file_turn_open`]), instead of in
    /// [`AppendOptions::lifecycle`]. Only before the first batch.
    pub(crate) fn set_lifecycle(&mut self, lifecycle: Lifecycle) -> Result<(), AppendError> {
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
    pub(crate) fn lifecycle(&self) -> Lifecycle {
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
    pub(crate) fn target(&self) -> &AppendTarget {
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
    pub(crate) fn surface(&self) -> &Surface {
        self.surface.as_ref().unwrap_or(&self.log.surface)
    }

    /// Take R16 fingerprints of events the caller read itself (a prune
    /// plan's [`crate::prune::PrunePlan::originals`]), so that validating
    /// a replacement of one does not read its line again.
    pub(crate) fn remember_originals(&mut self, known: &crate::surface::KnownOriginals) {
        // Fingerprints change no fold: the loaded surface may take them
        // while it stands for the appends' one.
        match &mut self.surface {
            Some(s) => s.remember(known),
            None => self.log.surface.remember(known),
        }
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

    /// [`Appender::append`] of events the caller shares: the surface keeps
    /// its new nodes' events without copying them (a pruner's batch carries
    /// megabytes of kept text).
    pub(crate) fn append_shared(
        &mut self,
        events: &[Arc<OwnedEvent>],
    ) -> Result<AppendReport, AppendError> {
        self.write_batch(events, false, None)
    }

    /// [`Appender::append`], then stream every event of the batch, once it is
    /// written, to `observer`, folded onto [`Appender::surface`] as the
    /// loader would have folded it (`synthetic: false`: they are in the file
    /// now, crash-repair closers included). Lets a fold that watched
    /// [`Appender::open`] — a [`crate::meter::Meter`], say — follow the
    /// appends without re-reading the log. Nothing is streamed when the
    /// write fails.
    pub(crate) fn append_observed(
        &mut self,
        events: &[OwnedEvent],
        observer: &mut dyn Observer,
    ) -> Result<AppendReport, AppendError> {
        self.write_batch(events, false, Some(observer))
    }

    /// The write protocol in order: refuse a blocked log, validate against
    /// scratch state, encode, re-check the file, write and sync, then
    /// commit the scratch state.
    fn write_batch<E: BatchEvent>(
        &mut self,
        events: &[E],
        releasing: bool,
        observer: Option<&mut dyn Observer>,
    ) -> Result<AppendReport, AppendError> {
        self.check_blocked(releasing)?;
        let Scratch {
            surface,
            locks,
            turn,
            seq,
        } = self.validate_batch(events, releasing)?;
        let (encoded, bytes) = self.encode_batch(events)?;
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
            && let Some((payload, _)) = &encoded
            && !events.is_empty()
        {
            // The last look: the path still names the file, as long as validated.
            recheck::recheck(sink, self.len)?;
            let path = sink.path.clone();
            let new_len = commit(sink, &path, self.len, payload, self.pause)?;
            report.written = new_len - self.len;
            report.path = Some(sink.path.clone());
            self.len = new_len;
        }
        let before = self.surface.replace(surface);
        self.locks = locks;
        self.turn = turn;
        self.next_seq = seq;
        if let Some(observer) = observer {
            self.observe_batch(before, events, observer);
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

    /// A log another writer holds busy takes no batch but the one
    /// releasing it.
    fn check_blocked(&self, releasing: bool) -> Result<(), AppendError> {
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
        Ok(())
    }

    /// Validate the batch against scratch state (committed only once
    /// written).
    fn validate_batch<E: BatchEvent>(
        &self,
        events: &[E],
        releasing: bool,
    ) -> Result<Scratch, AppendError> {
        let mut surface = self.surface().clone();
        let mut locks = self.locks.clone();
        let mut turn = self.turn;
        let mut seq = self.next_seq;
        for ev in events {
            self.validate(ev, seq, &mut surface)?;
            let ev = ev.borrow();
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
        Ok(Scratch {
            surface,
            locks,
            turn,
            seq,
        })
    }

    /// The batch as written (`None` for a dry run on a plain log), and its
    /// byte count.
    fn encode_batch<E: BatchEvent>(
        &self,
        events: &[E],
    ) -> Result<(Option<(Payload, u64)>, u64), AppendError> {
        let path_of =
            |log: &LoadedLog| log.source.path().map(Path::to_path_buf).unwrap_or_default();
        // A dry run on a plain log needs only the byte count. (An artifact's
        // batch is still framed: the frame check can refuse it.)
        // Events as the log's generation stores them (G0: as built).
        let generation = self.log.generation();
        let stored: Option<Vec<OwnedEvent>> = (generation != crate::Generation::V0).then(|| {
            events
                .iter()
                .map(|e| crate::log::later::physical(e.borrow(), generation))
                .collect()
        });
        let encoded = if self.sink.is_none() && self.log.container == Container::Plain {
            None
        } else {
            let encoded = match &stored {
                Some(stored) => encode(stored, self.log.container),
                None => encode(events, self.log.container),
            };
            Some(encoded.map_err(|e| match e {
                EncodeError::Io(source) => AppendError::Open {
                    path: path_of(&self.log),
                    op: "compress the batch",
                    source,
                },
                EncodeError::Unsafe(u) => AppendError::NotAtomic {
                    path: path_of(&self.log),
                    seq: u.seq,
                    why: u.why,
                },
            })?)
        };
        let bytes = match (&encoded, &stored) {
            (Some((_, bytes)), _) => *bytes,
            (None, Some(stored)) => encoded_len(stored),
            (None, None) => encoded_len(events),
        };
        Ok((encoded, bytes))
    }

    /// Fold the written batch again, event by event, for the observer
    /// (validated, so nothing can fail), from the surface `before` it.
    fn observe_batch<E: BatchEvent>(
        &self,
        before: Option<Surface>,
        events: &[E],
        observer: &mut dyn Observer,
    ) {
        let mut s = before.unwrap_or_else(|| self.log.surface.clone());
        for shared in events {
            let ev = shared.borrow();
            let applied = match check_local(ev) {
                Ok(Some(op)) => s
                    .apply(ev, op, node_facts(ev), NodeBody::Owned(shared.shared()))
                    .ok(),
                _ => None,
            };
            observer.event(
                ev,
                &Folded {
                    applied: applied.as_ref(),
                    surface: &s,
                    synthetic: false,
                    canonical_line: None,
                    canonical_offset: None,
                },
            );
        }
    }

    /// One event, as the loader would check it at `seq`.
    fn validate(
        &self,
        shared: &impl BatchEvent,
        seq: u64,
        surface: &mut Surface,
    ) -> Result<(), AppendError> {
        let ev = shared.borrow();
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
        let generation = self.log.generation();
        let kind = Kind::in_generation(&ev.type_name(), generation);
        if kind != ev.kind {
            return Err(bad(format!(
                "event kind does not match its type \"{}\"",
                ev.type_name()
            )));
        }
        // Exactly the loader's rules for the log's generation, on the event
        // as it will be stored, so nothing written can make the log
        // unreadable.
        if generation.embedded_streams() {
            let mut stored = crate::log::later::physical(ev, generation);
            let checked = crate::log::later::check_event(&mut stored, generation)
                .map_err(|e| bad(e.to_string()))?;
            if let Some(op) = checked.op {
                if generation.system_head() {
                    crate::log::later::check_head(&stored, op, surface).map_err(bad)?;
                }
                surface
                    .apply(
                        &stored,
                        op,
                        node_facts(ev),
                        NodeBody::Owned(shared.shared()),
                    )
                    .map_err(|e| bad(e.message))?;
            }
            return Ok(());
        }
        if generation == crate::Generation::V0 {
            crate::log::legacy::check_retired(ev, &self.log.header.id)
                .map_err(|e| bad(e.message))?;
        }
        let (_, op) = crate::log::validate::check_event(ev).map_err(|e| bad(e.to_string()))?;
        if let Some(op) = op {
            let facts = node_facts(ev);
            surface
                .apply(ev, op, facts, NodeBody::Owned(shared.shared()))
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

/// An event of a batch, and how the surface comes to hold it once the
/// batch is folded: a copy of an event the caller owns, or a share of one
/// it shares.
/// What a validated batch leaves, committed once it is written.
struct Scratch {
    surface: Surface,
    locks: LockScan,
    turn: TurnState,
    /// The next seq after the batch.
    seq: u64,
}

trait BatchEvent: std::borrow::Borrow<OwnedEvent> {
    fn shared(&self) -> Arc<OwnedEvent>;
}

impl BatchEvent for OwnedEvent {
    fn shared(&self) -> Arc<OwnedEvent> {
        Arc::new(self.clone())
    }
}

impl BatchEvent for Arc<OwnedEvent> {
    fn shared(&self) -> Arc<OwnedEvent> {
        Arc::clone(self)
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
mod tests;
