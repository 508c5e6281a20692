//! Following a log while the harness writes it: poll, read what changed,
//! and tell a write in progress from damage.
//!
//! [`Follower::poll`] looks at the file (device, inode, length, time). An
//! unchanged file costs one `stat`. A file that grew by streamed chunks only
//! is followed from the last read's `crate::log::tail::Mark` (only the new
//! bytes are read); anything else (a new event, a compaction, a new
//! lifecycle, a replaced or shortened file) is read whole again. A line
//! still being written is a torn tail, which a read leaves out and reports
//! in [`Snapshot::torn`], not an error; a read that fails while the file
//! keeps changing is retried at the next change, and reported only once
//! the file has stood still for `SETTLE`.

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::log::LogSource;
use crate::log::tail::{self, Growth};
use crate::sessions::{Refused, ScanOptions};

use super::Snapshot;

/// How long a file must stand still before a failed read is reported.
const SETTLE: Duration = Duration::from_secs(2);

/// What a file looked like: its identity (device, inode), length and
/// modification time (ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Seen {
    dev: u64,
    ino: u64,
    pub(super) size: u64,
    pub(super) mtime_ns: i64,
}

impl Seen {
    /// The file's identity as text: `dev:ino`.
    pub(super) fn key(&self) -> String {
        format!("{}:{}", self.dev, self.ino)
    }
}

/// What one poll found.
#[derive(Debug)]
pub enum Update {
    /// Nothing changed.
    Unchanged,
    /// Chunks were appended (the model is streaming): the snapshot's
    /// counts and clock moved, its figures hold.
    Streamed(u64),
    /// The log was read whole again.
    Read,
    /// A read failed while the file was still changing: waited on.
    Waiting,
    /// A read failed and the file stands still: the reason.
    Failed(Refused),
}

/// A log being followed.
#[derive(Debug)]
pub struct Follower {
    path: PathBuf,
    opts: ScanOptions,
    snap: Option<Snapshot>,
    seen: Option<Seen>,
    /// A failed read, the file as it was then, and since when it stood so.
    failed: Option<(Refused, Seen, Instant)>,
}

pub(super) fn look(path: &std::path::Path) -> std::io::Result<Seen> {
    let m = std::fs::metadata(path)?;
    Ok(Seen {
        dev: m.dev(),
        ino: m.ino(),
        size: m.len(),
        mtime_ns: m.mtime().saturating_mul(1_000_000_000) + m.mtime_nsec(),
    })
}

impl Follower {
    /// Follow the log at `path`; nothing is read until the first poll.
    pub fn new(path: PathBuf, opts: ScanOptions) -> Follower {
        Follower {
            path,
            opts,
            snap: None,
            seen: None,
            failed: None,
        }
    }

    /// The session as last read (and followed).
    pub fn snapshot(&self) -> Option<&Snapshot> {
        self.snap.as_ref()
    }

    /// Look again; `now` is the clock (for `SETTLE`).
    pub fn poll(&mut self, now: Instant) -> Update {
        let seen = match look(&self.path) {
            Ok(s) => s,
            Err(e) => return Update::Failed(Refused::io(&self.path, e)),
        };
        if let Some((r, at, since)) = &self.failed {
            if *at != seen {
                self.failed = None;
                return self.read(seen, now);
            }
            if now.duration_since(*since) >= SETTLE {
                return Update::Failed(r.clone());
            }
            return Update::Waiting;
        }
        if self.seen == Some(seen) {
            return Update::Unchanged;
        }
        let same_file = self
            .seen
            .is_some_and(|s| (s.dev, s.ino) == (seen.dev, seen.ino));
        if let (true, Some(snap)) = (same_file, &mut self.snap)
            && let Some(mark) = snap.mark
        {
            match tail::follow(&self.path, &mark) {
                Ok(Growth::Same) => {
                    self.seen = Some(seen);
                    return Update::Unchanged;
                }
                Ok(Growth::Chunks(a)) => {
                    snap.apply(&a);
                    self.seen = Some(seen);
                    return Update::Streamed(a.chunks);
                }
                Ok(Growth::Other) | Err(_) => {}
            }
        }
        self.read(seen, now)
    }

    fn read(&mut self, seen: Seen, now: Instant) -> Update {
        match Snapshot::read(&LogSource::File(self.path.clone()), &self.opts) {
            Ok(s) => {
                self.snap = Some(s);
                self.seen = Some(seen);
                Update::Read
            }
            Err(r) => {
                self.failed = Some((r, seen, now));
                Update::Waiting
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_log_is_followed_through_streaming_a_torn_line_and_new_events() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("s.jsonl");
        let text = std::fs::read_to_string("samples/compacted.jsonl").unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let is_chunk =
            |l: &str| l.contains(r#""type":"assistant/chunk""#) || l.contains(r#"-chunks","seq0""#);
        let cut = lines.iter().position(|l| is_chunk(l)).unwrap();
        std::fs::write(&log, lines[..cut].join("\n") + "\n").unwrap();
        let mut f = Follower::new(log.clone(), ScanOptions::default());
        let t0 = Instant::now();
        assert!(matches!(f.poll(t0), Update::Read));
        assert!(matches!(f.poll(t0), Update::Unchanged));
        let tokens = f.snapshot().unwrap().tokens;
        let mut w = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        writeln!(w, "{}", lines[cut]).unwrap();
        assert!(matches!(f.poll(t0), Update::Streamed(1)));
        // Half a line: a write in progress, not damage.
        let next = lines[cut + 1];
        w.write_all(&next.as_bytes()[..10]).unwrap();
        let u = f.poll(t0);
        assert!(matches!(u, Update::Streamed(0)), "{u:?}");
        assert_eq!(f.snapshot().unwrap().torn, 10);
        writeln!(w, "{}", &next[10..]).unwrap();
        assert!(!matches!(f.poll(t0), Update::Failed(_)));
        assert_eq!(f.snapshot().unwrap().torn, 0);
        // The rest, compaction included: read whole.
        for l in &lines[cut + 2..] {
            writeln!(w, "{l}").unwrap();
        }
        assert!(matches!(f.poll(t0), Update::Read));
        let s = f.snapshot().unwrap();
        assert_eq!(s.compactions, 1);
        assert_ne!(s.tokens, tokens);
        // Damage that stands still is reported, after a while.
        writeln!(w, "not json").unwrap();
        writeln!(w, r#"{{"type":"turn/end","seq":999,"time":1,"data":{{}}}}"#).unwrap();
        assert!(matches!(f.poll(t0), Update::Waiting));
        assert!(matches!(
            f.poll(t0 + Duration::from_millis(100)),
            Update::Waiting
        ));
        assert!(matches!(f.poll(t0 + SETTLE), Update::Failed(_)));
    }
}
