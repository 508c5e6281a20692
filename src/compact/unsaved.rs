//! A summary that was paid for but could not be appended (the log was
//! replaced, deleted or changed while the model worked) is kept beside the
//! log, so the user loses nothing.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::event::{Kind, OwnedEvent};

/// A summary paid for but not appended (`unsavedSummary` of `--json`).
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Unsaved {
    /// The bracket's compactionId.
    pub compaction_id: String,
    /// The file it was kept in, or null when it could not be written.
    pub saved_to: Option<String>,
    /// The summary's text.
    pub text: String,
}

/// Keep the summary a failed run received but could not append beside
/// `log` ([`save_unsaved`]); `None` when there is none.
pub fn keep_unsaved(log: &Path, f: &super::Failure) -> Option<Unsaved> {
    let b = f.report.brackets.iter().find(|b| b.unsaved.is_some())?;
    let batch = b.unsaved.as_deref()?;
    Some(Unsaved {
        compaction_id: b.compaction_id.clone(),
        saved_to: save_unsaved(log, &b.compaction_id, batch)
            .ok()
            .map(|p| p.display().to_string()),
        text: unsaved_text(batch),
    })
}

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
