//! A summary that was paid for but could not be appended (the log was
//! replaced, deleted or changed while the model worked) is kept beside the
//! log, so the user loses nothing.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::event::{Kind, OwnedEvent};

/// The summary's text: the text blocks of the `compaction/summary`'s
/// `summary`, joined by blank lines.
pub fn unsaved_text(batch: &[OwnedEvent]) -> String {
    let Some(ev) = batch.iter().find(|e| e.kind == Kind::CompactionSummary) else {
        return String::new();
    };
    let blocks = ev.data().get("summary").and_then(|s| s.as_arr());
    let texts: Vec<String> = blocks
        .into_iter()
        .flatten()
        .filter_map(|b| {
            b.get("text")
                .and_then(|t| t.as_str())
                .map(|t| t.into_owned())
        })
        .collect();
    texts.join("\n\n")
}

/// Write `batch` (the events that would have been appended, one JSON line
/// each) beside `log` as `NAME.unsaved-summary-ID.jsonl`, never over an
/// existing file. Returns its path.
pub fn save_unsaved(
    log: &Path,
    compaction_id: &str,
    batch: &[OwnedEvent],
) -> std::io::Result<PathBuf> {
    let name = log
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "session.jsonl".into());
    let id: String = compaction_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let dir = match log.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let path = dir.join(format!("{name}.unsaved-summary-{id}.jsonl"));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)?;
    let mut text = String::new();
    for ev in batch {
        text.push_str(&ev.value.to_json());
        text.push('\n');
    }
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    Ok(path)
}
