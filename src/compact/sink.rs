//! Appending a compaction's events to a plain JSONL log that is being
//! continued as the live agent would (no crash-repair closers, no new
//! `session/end-seed`: the bracket belongs to the open turn it compacts).
//!
//! The file is held under an exclusive advisory lock for the whole
//! compaction, so every batch (the `compaction/start` before the model call,
//! then summary + checkpoint + end) is written with no other dsh writer in
//! between. Each batch is whole `\n`-terminated lines written at the end of
//! the file and fsynced; the file length is re-checked before each batch
//! (another program that does not take the lock is detected, not
//! overwritten), and on any write error the file is cut back to its length
//! before the batch.

use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::session::{Sink, SinkError};
use crate::event::OwnedEvent;
use crate::log::{Container, LoadedLog};

/// A locked plain JSONL log.
#[derive(Debug)]
pub struct FileSink {
    path: PathBuf,
    file: File,
    len: u64,
    /// Test hook: sleep this long after each batch (lets a test kill the
    /// process between `compaction/start` and `compaction/end`).
    pub pause_after_batch: Option<std::time::Duration>,
}

impl FileSink {
    /// Lock `log`'s file and check that it is exactly what was loaded: a
    /// plain JSONL file with no torn tail and no dropped region.
    pub fn open(log: &LoadedLog) -> Result<FileSink, SinkError> {
        let path = log
            .source
            .path()
            .ok_or_else(|| SinkError("cannot append to standard input".into()))?
            .to_path_buf();
        if log.container != Container::Plain {
            return Err(SinkError(format!(
                "{}: compaction writes plain JSONL logs only (this one is Zstandard)",
                path.display()
            )));
        }
        if let Some(t) = &log.torn {
            return Err(SinkError(format!(
                "{}: the log ends with a torn line ({} bytes at byte {}); a writer may be active, or crashed: repair it first",
                path.display(),
                t.len,
                t.offset
            )));
        }
        if let Some(d) = &log.dropped {
            return Err(SinkError(format!(
                "{}: {} damaged line(s) from line {} are dropped on load ({}); repair the log first",
                path.display(),
                d.lines,
                d.line,
                d.reason
            )));
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| {
                SinkError(format!(
                    "{}: cannot open for appending: {e}",
                    path.display()
                ))
            })?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(SinkError(format!(
                    "{}: another dsh process is writing this log",
                    path.display()
                )));
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(SinkError(format!("{}: cannot lock: {e}", path.display())));
            }
        }
        let len = file
            .metadata()
            .map_err(|e| SinkError(format!("{}: {e}", path.display())))?
            .len();
        if len != log.committed_len {
            return Err(SinkError(format!(
                "{}: the log changed while it was being read ({len} bytes on disk, {} loaded)",
                path.display(),
                log.committed_len
            )));
        }
        Ok(FileSink {
            path,
            file,
            len,
            pause_after_batch: None,
        })
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn write_batch(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.file.seek(SeekFrom::Start(self.len))?;
        self.file.write_all(bytes)?;
        self.file.sync_data()
    }
}

impl Sink for FileSink {
    fn append(&mut self, events: &[OwnedEvent]) -> Result<(), SinkError> {
        let now = self
            .file
            .metadata()
            .map_err(|e| SinkError(format!("{}: {e}", self.path.display())))?
            .len();
        if now != self.len {
            return Err(SinkError(format!(
                "{}: the log was changed by another program ({now} bytes on disk, {} expected)",
                self.path.display(),
                self.len
            )));
        }
        let mut text = String::new();
        for ev in events {
            ev.value.write_json(&mut text);
            text.push('\n');
        }
        if let Err(e) = self.write_batch(text.as_bytes()) {
            let _ = self.file.set_len(self.len);
            let _ = self.file.sync_data();
            return Err(SinkError(format!(
                "{}: write failed, batch rolled back: {e}",
                self.path.display()
            )));
        }
        self.len += text.len() as u64;
        if let Some(p) = self.pause_after_batch {
            std::thread::sleep(p);
        }
        Ok(())
    }

    fn sync(&mut self) -> Result<Vec<OwnedEvent>, SinkError> {
        // Other dsh writers are excluded by the lock; a program that ignores
        // it is caught by the length check of the next append.
        Ok(Vec::new())
    }
}
