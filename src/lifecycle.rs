//! Which lifecycle a write belongs to: the one decision every dsh writer
//! (`dsh prune`, `dsh compact`, `dsh locks --release`) takes from the log's
//! tail before it appends anything (session-log §10.3, §11.4; compaction
//! §2.8, §13).
//!
//! | writer | last turn open | last turn closed |
//! |---|---|---|
//! | [`Writer::Prune`] | **continue** it: the pairs inside the open turn, as the live pre-step writes them | **resume** (end-seed first), and the command refuses unless told to write outside a turn |
//! | [`Writer::Compact`] | **continue** it: automatic compaction owned by the open turn | **resume**: manual compaction, `turn: null`, end-seed first |
//! | [`Writer::ReleaseLock`] | **resume**: the crash-repair closers, then `session/end-seed` | **resume**: `session/end-seed` |
//!
//! *Continue* writes no crash-repair closers and no `session/end-seed`;
//! *resume* writes what a resuming harness writes first (the closers of an
//! interrupted final turn, then the end-seed unless the log already ends
//! with one). Releasing a compaction lock is by definition a new lifecycle:
//! the end-seed is what turns a busy `compaction/start` into stale crash
//! evidence.
//!
//! ```
//! use dsh::append::Lifecycle;
//! use dsh::lifecycle::{Writer, decide};
//! assert_eq!(decide(Writer::Prune, true, false), Lifecycle::Continue);
//! assert_eq!(decide(Writer::Prune, false, false), Lifecycle::Resume);
//! assert_eq!(decide(Writer::ReleaseLock, true, false), Lifecycle::Resume);
//! ```

use crate::append::{AppendError, Appender, Lifecycle};

/// The dsh writers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writer {
    /// `dsh prune`: the tool-result pruner's pairs.
    Prune,
    /// `dsh compact`: prune pairs and compaction brackets.
    Compact,
    /// `dsh locks --release`: the end of a crashed compaction's lock.
    ReleaseLock,
}

/// The lifecycle of a write by `writer` to a log whose final turn is open
/// (`file_turn_open`, i.e. it has no `turn/end`) or closed. `resume` asks
/// for a new lifecycle even on an open turn (the reference's resumed
/// session, which the conformance oracle's `prune` models).
pub fn decide(writer: Writer, file_turn_open: bool, resume: bool) -> Lifecycle {
    match writer {
        Writer::ReleaseLock => Lifecycle::Resume,
        Writer::Prune | Writer::Compact if file_turn_open && !resume => Lifecycle::Continue,
        Writer::Prune | Writer::Compact => Lifecycle::Resume,
    }
}

/// [`decide`] for the log `app` holds, and set it on the writer (before its
/// first batch). Returns the lifecycle chosen.
pub fn apply(app: &mut Appender, writer: Writer, resume: bool) -> Result<Lifecycle, AppendError> {
    let lifecycle = decide(writer, app.file_turn_open(), resume);
    app.set_lifecycle(lifecycle)?;
    Ok(lifecycle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_writer_and_tail() {
        use Lifecycle::{Continue, Resume};
        let cases = [
            (Writer::Prune, true, false, Continue),
            (Writer::Prune, false, false, Resume),
            (Writer::Prune, true, true, Resume),
            (Writer::Compact, true, false, Continue),
            (Writer::Compact, false, false, Resume),
            (Writer::ReleaseLock, true, false, Resume),
            (Writer::ReleaseLock, false, false, Resume),
        ];
        for (w, open, resume, want) in cases {
            assert_eq!(decide(w, open, resume), want, "{w:?} open={open}");
        }
    }
}
