//! What the writer refuses, and how a write fails.

use std::io;
use std::path::PathBuf;

use crate::log::LoadError;

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
    /// A Zstandard artifact whose last frame was cut short.
    CutFrame {
        /// File offset where the last whole frame ends.
        whole_end: u64,
        /// The file's length.
        file_len: u64,
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
                        "; a resuming harness cuts it off; `dsh repair LOG` does the same (by hand: truncate -s {committed_len} LOG)"
                    )?;
                }
                Ok(())
            }
            Blocker::CutFrame {
                whole_end,
                file_len,
            } => write!(
                f,
                "the last Zstandard frame is cut short ({} byte(s) at file byte {whole_end}): a writer may still be active, or one crashed; the last whole frame ends at file byte {whole_end}: `dsh repair LOG` cuts the file back to it (by hand: truncate -s {whole_end} LOG)",
                file_len - whole_end
            ),
            Blocker::Dropped {
                line,
                lines,
                reason,
                committed_len,
            } => write!(
                f,
                "the log has a damaged region the loader drops ({lines} line(s) from line {line}: {reason}); a resuming harness cuts it off; `dsh repair LOG` does the same (by hand: truncate -s {committed_len} LOG)"
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
    /// Standard input (or a pipe read like it) cannot be written to.
    #[error(
        "cannot write to a log read from standard input or a pipe; name the log's regular file"
    )]
    Stdin,
    /// The log is a pipe or a device, not a regular file.
    #[error(
        "{path}: not a regular file (a pipe or a device): dsh writes only to a log's regular file; save the stream to a file first (reading commands and --dry-run read it as a stream)"
    )]
    NotRegular {
        /// The path.
        path: PathBuf,
    },
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
    /// The path no longer names the file dsh opened, or the file shrank,
    /// between validation and the first byte of a batch.
    #[error(
        "{path}: {what} while dsh held it; nothing was written (dsh writes only to the file it validated). Check what is at the path now (`dsh verify`), then run the command again"
    )]
    Replaced {
        /// The log.
        path: PathBuf,
        /// What happened.
        what: String,
    },
    /// A writer may be live: `dsh repair` refuses to cut the log.
    #[error("{path}: refusing to repair: {why}")]
    Live {
        /// The log.
        path: PathBuf,
        /// Why.
        why: String,
    },
    /// Another program wrote to the log while dsh was appending to it.
    #[error(
        "{path}: another program wrote to the log while dsh was appending (it does not take the writer lock: a running harness?): {what}; {left}. Stop the other writer, then check the log with `dsh verify`"
    )]
    Interleaved {
        /// The log.
        path: PathBuf,
        /// What dsh saw.
        what: String,
        /// What dsh did with its own bytes.
        left: String,
    },
    /// The copy target exists.
    #[error("{path}: already exists; --out writes a new file")]
    TargetExists {
        /// The target.
        path: PathBuf,
    },
    /// The copy target's directory is missing or not a directory.
    #[error("{path}: cannot write the copy there: {why}")]
    BadTarget {
        /// The target.
        path: PathBuf,
        /// What is wrong with its directory.
        why: String,
    },
    /// A Zstandard batch that no frame layout keeps safe under a crash cut.
    #[error(
        "{path}: refusing to append: the events from seq {seq} must become visible together, but {why}; nothing was written (a plain .jsonl log has no such limit)"
    )]
    NotAtomic {
        /// The log.
        path: PathBuf,
        /// First seq of the unit.
        seq: u64,
        /// Why it cannot be kept whole.
        why: String,
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
                | AppendError::Replaced { .. }
                | AppendError::Live { .. }
                | AppendError::Interleaved { .. }
        )
    }
}
