//! The last look before a writer's first byte: under the lock, the path
//! must still name the file that was opened, locked and validated (same
//! device and inode), and that file must be exactly as long as validated.
//! A log replaced by rename (an editor's or a sync tool's save), deleted,
//! moved away, truncated or grown while dsh waited (for a model, for a
//! lock, for the user) gets nothing: the batch would land in a file no one
//! reads, or after bytes no one validated.

use std::fs::{self, File};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::error::AppendError;
use super::write::Sink;

/// The path still names `file` (same device and inode), and the file is
/// not deleted.
pub(super) fn still_names(path: &Path, file: &File) -> Result<(), AppendError> {
    let replaced = |what: &str| AppendError::Replaced {
        path: path.to_path_buf(),
        what: what.into(),
    };
    let inspect = |source| AppendError::Open {
        path: path.to_path_buf(),
        op: "inspect the log",
        source,
    };
    let held = file.metadata().map_err(inspect)?;
    match fs::metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(replaced(
            "the log was deleted or moved away (its path names no file now)",
        )),
        Err(e) => Err(inspect(e)),
        Ok(now) if (now.dev(), now.ino()) != (held.dev(), held.ino()) => Err(replaced(
            "the log was replaced: its path names another file now (saved by rename, as editors and sync tools do)",
        )),
        Ok(_) if held.nlink() == 0 => Err(replaced("the log was deleted")),
        Ok(_) => Ok(()),
    }
}

/// Check `sink` right before writing to it: its path still names its file
/// ([`still_names`]) and the file is `len` bytes long, no shorter (another
/// program truncated it) and no longer (another program wrote to it).
pub(super) fn recheck(sink: &Sink, len: u64) -> Result<(), AppendError> {
    still_names(&sink.path, &sink.file)?;
    let now = sink
        .file
        .metadata()
        .map_err(|source| AppendError::Open {
            path: sink.path.clone(),
            op: "inspect the log",
            source,
        })?
        .len();
    if now < len {
        return Err(AppendError::Replaced {
            path: sink.path.clone(),
            what: format!(
                "the log shrank from {len} to {now} bytes (truncated by another program)"
            ),
        });
    }
    if now != len {
        return Err(AppendError::Changed {
            path: sink.path.clone(),
            what: format!("{now} bytes on disk, {len} expected"),
        });
    }
    Ok(())
}
