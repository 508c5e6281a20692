//! `dsh repair`: the remedy for a log whose end a crash left damaged — a
//! Zstandard artifact whose last frame was cut short, or a plain log with a
//! torn last line or a damaged region the loader drops. The file is cut
//! back to the end of its last whole frame (or line), under the writer's
//! lock, after the same last look every writer takes (the path still names
//! the file, it did not change since it was read). The bytes cut off are
//! kept beside the log first (`NAME.cut-OFFSET`), so nothing is lost.
//!
//! It refuses while a writer may be live: another dsh holds the lock, or
//! the file was modified less than [`RepairOptions::min_age`] ago (a
//! harness, which takes no lock, may be mid-write).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::error::AppendError;
use super::lock::{LockKind, acquire};
use crate::log::{Container, LoadOptions, LoadedLog, LogSource};

/// What is wrong with the end of a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Damage {
    /// The last Zstandard frame was cut short at `whole_end`.
    CutFrame {
        /// Where the last whole frame ends (file offset).
        whole_end: u64,
    },
    /// A plain log's last line has no newline.
    TornLine {
        /// Where it starts.
        offset: u64,
    },
    /// A plain log's lines after a damaged one, which the loader drops.
    Dropped {
        /// The first dropped line.
        line: u64,
        /// How many.
        lines: u64,
        /// Why.
        reason: String,
    },
}

impl Damage {}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Damage::CutFrame { whole_end } => write!(
                f,
                "the last Zstandard frame is cut short (its last whole frame ends at file byte {whole_end})"
            ),
            Damage::TornLine { offset } => {
                write!(
                    f,
                    "the last line is torn (no newline; it starts at byte {offset})"
                )
            }
            Damage::Dropped {
                line,
                lines,
                reason,
            } => write!(
                f,
                "a damaged region the loader drops ({lines} line(s) from line {line}: {reason})"
            ),
        }
    }
}

/// What a repair does (or, dry, would do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepairPlan {
    /// The log.
    pub path: PathBuf,
    /// Its container.
    pub container: Container,
    /// What is wrong.
    pub damage: Damage,
    /// The file's length now.
    pub file_len: u64,
    /// The length it is cut back to (the end of the last whole frame or line).
    pub keep_len: u64,
    /// Events the log keeps (the header aside).
    pub events_kept: u64,
    /// Events readers take now that the cut drops (the whole lines of a cut
    /// frame's decodable blocks; they stay in the bytes kept beside).
    pub events_dropped: u64,
    /// Why a real run would refuse (a writer may be live), if it would.
    pub refusal: Option<String>,
}

/// The options of [`repair`].
#[derive(Debug, Clone)]
pub struct RepairOptions {
    /// How the log is read.
    pub load: LoadOptions,
    /// Wait this long for another writer's lock (`None`: fail at once).
    pub wait: Option<Duration>,
    /// A file modified more recently than this may have a live writer: refused.
    pub min_age: Duration,
}

impl Default for RepairOptions {
    fn default() -> Self {
        RepairOptions {
            load: LoadOptions::default(),
            wait: None,
            min_age: Duration::from_secs(10),
        }
    }
}

/// What a repair did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepairReport {
    /// The plan it carried out.
    pub plan: RepairPlan,
    /// Where the bytes cut off were kept.
    pub saved_to: PathBuf,
}

fn io_err<'p>(path: &'p Path, op: &'static str) -> impl FnOnce(std::io::Error) -> AppendError + 'p {
    move |source| AppendError::Open {
        path: path.to_path_buf(),
        op,
        source,
    }
}

/// The damage of `log` (read from `file`, `file_len` bytes) and the length
/// that removes it; `None` when its end is whole. An artifact whose damage
/// is not in its last frame cannot be cut back without losing whole frames:
/// an error.
fn damage_of(
    log: &LoadedLog,
    file: &File,
    path: &Path,
    file_len: u64,
) -> Result<Option<(Damage, u64)>, AppendError> {
    match log.container {
        Container::Zstd => {
            // The loader's word, checked against the file's own frames.
            let mut data = Vec::new();
            let mut r = file;
            r.seek(SeekFrom::Start(0))
                .and_then(|_| r.read_to_end(&mut data))
                .map_err(io_err(path, "read the log"))?;
            let (end, whole) = crate::log::reader::complete_frames_end(&data);
            if whole {
                if log.torn.is_some() || log.dropped.is_some() {
                    return Err(AppendError::Invalid {
                        seq: log.stored_events,
                        message: "the artifact's frames are whole but its text ends damaged: cutting whole frames would lose events; `dsh unpack` the whole lines and pack them again".into(),
                    });
                }
                return Ok(None);
            }
            Ok(Some((Damage::CutFrame { whole_end: end }, end)))
        }
        Container::Plain => {
            if let Some(d) = &log.dropped {
                return Ok(Some((
                    Damage::Dropped {
                        line: d.line,
                        lines: d.lines,
                        reason: d.reason.clone(),
                    },
                    log.committed_len,
                )));
            }
            match &log.torn {
                Some(t) => Ok(Some((Damage::TornLine { offset: t.offset }, t.offset))),
                None if file_len > log.committed_len => Ok(Some((
                    Damage::TornLine {
                        offset: log.committed_len,
                    },
                    log.committed_len,
                ))),
                None => Ok(None),
            }
        }
    }
}

/// The events (lines after the header) of an artifact's first `end` bytes.
fn whole_frame_events(file: &File, path: &Path, end: u64) -> Result<u64, AppendError> {
    let mut data = vec![0u8; end as usize];
    file.read_exact_at(&mut data, 0)
        .map_err(io_err(path, "read the log"))?;
    let plain = zstd::stream::decode_all(&data[..]).map_err(io_err(path, "read the log"))?;
    let lines = memchr::memchr_iter(b'\n', &plain).count() as u64;
    Ok(lines.saturating_sub(1))
}

/// Why a real repair would refuse now: the file was modified less than
/// `min_age` ago.
fn live_writer(file: &File, path: &Path, min_age: Duration) -> Result<Option<String>, AppendError> {
    let md = file.metadata().map_err(io_err(path, "inspect the log"))?;
    let age = md
        .modified()
        .ok()
        .and_then(|m| SystemTime::now().duration_since(m).ok())
        .unwrap_or_default();
    Ok((age < min_age).then(|| {
        format!(
            "the log was modified {:.1} s ago: a writer (a running harness?) may still be writing it; wait until it is done (or stopped), or pass --force",
            age.as_secs_f64()
        )
    }))
}

/// Plan a repair of the log at `path` without the lock and without writing
/// (`dsh repair --dry-run`): `None` when its end is whole.
pub fn plan(path: &Path, opts: &RepairOptions) -> Result<Option<RepairPlan>, AppendError> {
    let file = File::open(path).map_err(io_err(path, "open the log"))?;
    plan_open(&file, path, opts)
}

fn plan_open(
    file: &File,
    path: &Path,
    opts: &RepairOptions,
) -> Result<Option<RepairPlan>, AppendError> {
    let file_len = file
        .metadata()
        .map_err(io_err(path, "inspect the log"))?
        .len();
    let source = LogSource::File(path.to_path_buf());
    let log = crate::log::load(
        &source,
        &opts.load,
        &mut |_: &crate::Event<'_>, _: &crate::log::Folded<'_>| {},
    )?;
    let Some((damage, keep_len)) = damage_of(&log, file, path, file_len)? else {
        return Ok(None);
    };
    let events_kept = match damage {
        Damage::CutFrame { whole_end } => whole_frame_events(file, path, whole_end)?,
        _ => log.stored_events,
    };
    Ok(Some(RepairPlan {
        events_dropped: log.stored_events.saturating_sub(events_kept),
        path: path.to_path_buf(),
        container: log.container,
        damage,
        file_len,
        keep_len,
        events_kept,
        refusal: live_writer(file, path, opts.min_age)?,
    }))
}

/// Cut the log at `path` back to the end of its last whole frame or line,
/// under the writer's lock: `None` when its end is whole (nothing written).
/// The bytes cut off are kept beside it first (`NAME.cut-OFFSET`).
pub fn repair(path: &Path, opts: &RepairOptions) -> Result<Option<RepairReport>, AppendError> {
    let md = std::fs::symlink_metadata(path).map_err(io_err(path, "inspect the log"))?;
    if md.file_type().is_symlink() || !md.is_file() {
        return Err(AppendError::NotRegular {
            path: path.to_path_buf(),
        });
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(io_err(path, "open the log for repair"))?;
    acquire(&file, LockKind::Exclusive, opts.wait, path)?;
    super::recheck::still_names(path, &file)?;
    let Some(plan) = plan_open(&file, path, opts)? else {
        return Ok(None);
    };
    if let Some(why) = &plan.refusal {
        return Err(AppendError::Live {
            path: path.to_path_buf(),
            why: why.clone(),
        });
    }
    let mut cut = vec![0u8; (plan.file_len - plan.keep_len) as usize];
    file.read_exact_at(&mut cut, plan.keep_len)
        .map_err(io_err(path, "read the damaged end"))?;
    let saved_to = keep_beside(path, plan.keep_len, &cut)?;
    // The last look: still the file that was read, still as long.
    super::recheck::still_names(path, &file)?;
    let now = file
        .metadata()
        .map_err(io_err(path, "inspect the log"))?
        .len();
    if now != plan.file_len {
        let _ = std::fs::remove_file(&saved_to);
        return Err(AppendError::Changed {
            path: path.to_path_buf(),
            what: format!("{now} bytes on disk, {} read", plan.file_len),
        });
    }
    file.set_len(plan.keep_len)
        .and_then(|()| file.sync_all())
        .map_err(io_err(path, "cut the log back"))?;
    Ok(Some(RepairReport { plan, saved_to }))
}

/// Write `bytes` to `NAME.cut-OFFSET` beside `path` (never over a file).
fn keep_beside(path: &Path, offset: u64, bytes: &[u8]) -> Result<PathBuf, AppendError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let saved = path.with_file_name(format!("{name}.cut-{offset}"));
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&saved)
        .map_err(io_err(&saved, "keep the damaged end"))?;
    f.write_all(bytes)
        .and_then(|()| f.sync_all())
        .map_err(io_err(&saved, "keep the damaged end"))?;
    Ok(saved)
}
