//! The writer's unit tests: units, frames, roll-back and refusals.

use super::write::{Payload, WriteOps, write_payload};
use super::*;
use crate::log::load;
use std::io::Write as _;
use std::os::unix::fs::FileExt;

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

/// [`open_turn_log`] written to `session.jsonl` in `dir`: its path and source.
fn open_turn_file(dir: &Path) -> (PathBuf, LogSource) {
    let path = dir.join("session.jsonl");
    fs::write(&path, open_turn_log()).unwrap();
    (path.clone(), LogSource::File(path))
}

fn user_msg(seq: u64) -> OwnedEvent {
    let line = format!(
        r#"{{"type":"user/message","seq":{seq},"time":99,"data":{{"role":"user","content":[{{"type":"text","text":"{}"}}],"source":{{"kind":"user"}},"id":"u{seq}"}},"surfaceOp":"append"}}"#,
        "x".repeat(300)
    );
    let v = Value::parse(&line).unwrap().into_owned();
    owned_event(Kind::UserMessage, seq, v)
}

/// An appender on `src` with the default options and no observer.
fn opened(src: &LogSource, target: AppendTarget) -> Appender {
    Appender::open(src, target, &AppendOptions::default(), &mut noop()).unwrap()
}

fn loaded(path: &Path) -> LoadedLog {
    load(
        &LogSource::File(path.to_path_buf()),
        &LoadOptions::default(),
        &mut |_: &Event<'_>, _: &Folded<'_>| {},
    )
    .unwrap()
}

/// Records every operation instead of doing it (on an in-memory image).
#[derive(Default)]
struct Recorder {
    image: Vec<u8>,
    ops: Vec<Op>,
}
#[derive(Clone)]
enum Op {
    Write(u64, Vec<u8>),
    Sync,
}
impl WriteOps for Recorder {
    fn append(&mut self, buf: &[u8]) -> io::Result<()> {
        self.ops
            .push(Op::Write(self.image.len() as u64, buf.to_vec()));
        self.image.extend_from_slice(buf);
        Ok(())
    }
    fn write_at(&mut self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.ops.push(Op::Write(offset, buf.to_vec()));
        let o = offset as usize;
        self.image[o..o + buf.len()].copy_from_slice(buf);
        Ok(())
    }
    fn read_at(&mut self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let o = (offset as usize).min(self.image.len());
        let n = buf.len().min(self.image.len() - o);
        buf[..n].copy_from_slice(&self.image[o..o + n]);
        Ok(n)
    }
    fn len(&mut self) -> io::Result<u64> {
        Ok(self.image.len() as u64)
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
    let mut rec = Recorder {
        image: base.as_bytes().to_vec(),
        ..Default::default()
    };
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
    let mut bytes = write::zstd_frame(head.as_bytes()).unwrap();
    bytes.extend(write::zstd_frame(body.as_bytes()).unwrap());
    fs::write(&path, &bytes).unwrap();
    let src = LogSource::File(path.clone());
    let mut app = opened(&src, AppendTarget::InPlace);
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
    fn append(&mut self, buf: &[u8]) -> io::Result<()> {
        let end = self.file.metadata()?.len();
        self.write_at(buf, end)
    }
    fn write_at(&mut self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.writes += 1;
        if self.writes == self.fail_write {
            FileExt::write_all_at(&self.file, &buf[..buf.len() / 2], offset)?;
            return Err(io::Error::from_raw_os_error(28)); // ENOSPC
        }
        FileExt::write_all_at(&self.file, buf, offset)
    }
    fn read_at(&mut self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let len = self.file.metadata()?.len();
        let n = (buf.len() as u64).min(len.saturating_sub(offset)) as usize;
        FileExt::read_exact_at(&self.file, &mut buf[..n], offset)?;
        Ok(n)
    }
    fn len(&mut self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
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
fn a_dry_run_counts_the_bytes_a_write_appends() {
    // A plain dry run only counts its bytes (it encodes nothing to write);
    // the count is what the write then appends, escapes and all.
    let dir = tempfile::tempdir().unwrap();
    let (path, src) = open_turn_file(dir.path());
    let batch = |app: &Appender| {
        let mut batch = app.lifecycle_prefix(5.0);
        let seq = app.next_seq() + batch.len() as u64;
        let line = format!(
            r#"{{"type":"user/message","seq":{seq},"time":99,"data":{{"role":"user","content":[{{"type":"text","text":"tab\t \"quote\" \u00e9 \ud83d\ude00 \u0001 \/"}}],"source":{{"kind":"user"}},"id":"u{seq}"}},"surfaceOp":"append"}}"#
        );
        let v = Value::parse(&line).unwrap().into_owned();
        batch.push(owned_event(Kind::UserMessage, seq, v));
        batch
    };
    let mut dry = opened(&src, AppendTarget::DryRun);
    let counted = dry.append(&batch(&dry)).unwrap();
    assert_eq!(counted.written, 0);
    drop(dry);
    let before = fs::metadata(&path).unwrap().len();
    let mut app = opened(&src, AppendTarget::InPlace);
    let wrote = app.append(&batch(&app)).unwrap();
    app.finish().unwrap();
    let grown = fs::metadata(&path).unwrap().len() - before;
    assert_eq!(counted.bytes, wrote.bytes);
    assert_eq!(counted.bytes, grown);
}

#[test]
fn a_shared_batch_is_kept_without_a_copy_and_written_like_an_owned_one() {
    // The same batch, owned and shared: the same report and file; the
    // shared one's new node holds the caller's event itself.
    let batch = |app: &Appender| {
        let mut batch = app.lifecycle_prefix(5.0);
        batch.push(user_msg(app.next_seq() + batch.len() as u64));
        batch
    };
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (owned_path, owned_src) = open_turn_file(a.path());
    let (shared_path, shared_src) = open_turn_file(b.path());
    let mut app = opened(&owned_src, AppendTarget::InPlace);
    let owned = app.append(&batch(&app)).unwrap();
    app.finish().unwrap();
    let mut app = opened(&shared_src, AppendTarget::InPlace);
    let events: Vec<Arc<OwnedEvent>> = batch(&app).into_iter().map(Arc::new).collect();
    let shared = app.append_shared(&events).unwrap();
    let last = app.surface().nodes.last().unwrap();
    let NodeBody::Owned(kept) = &last.body else {
        panic!("an appended node keeps its event")
    };
    assert!(Arc::ptr_eq(kept, events.last().unwrap()));
    app.finish().unwrap();
    assert_eq!((owned.bytes, owned.events), (shared.bytes, shared.events));
    assert_eq!(
        fs::read(&owned_path).unwrap(),
        fs::read(&shared_path).unwrap()
    );
}

#[test]
fn the_batch_must_start_a_lifecycle_and_be_valid() {
    let dir = tempfile::tempdir().unwrap();
    let (path, src) = open_turn_file(dir.path());
    let mut app = opened(&src, AppendTarget::DryRun);
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
    let (path, src) = open_turn_file(dir.path());
    let out = dir.path().join("copy.jsonl");
    let mut app = opened(&src, AppendTarget::Copy(out.clone()));
    let mut first = app.lifecycle_prefix(7.0);
    first.push(user_msg(10));
    app.append(&first).unwrap();
    assert!(!out.exists(), "published only by finish()");
    let r = app.append(&[user_msg(11)]).unwrap();
    assert_eq!((r.first_seq, r.events), (11, 1));
    assert_eq!(app.finish().unwrap(), Some(out.clone()));
    assert_eq!(fs::read_to_string(&path).unwrap(), open_turn_log());
    let l = loaded(&out);
    assert_eq!(l.stored_events, 12);
    assert_eq!(l.surface.seqs(), vec![2, 3, 5, 6, 10, 11]);
    let names: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(names.len(), 2, "no temporary file left");
    // Dropped without finish: no copy, no leftovers.
    let out2 = dir.path().join("copy2.jsonl");
    let mut app = opened(&src, AppendTarget::Copy(out2.clone()));
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
    text.push_str(
        r#"{"type":"compaction/start","seq":6,"time":16,"data":{"compactionId":"c1","turn":1}}"#,
    );
    text.push('\n');
    fs::write(&path, &text).unwrap();
    let src = LogSource::File(path.clone());
    let open = || opened(&src, AppendTarget::InPlace);
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
    let (path, src) = open_turn_file(dir.path());
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
    let (path, src) = open_turn_file(dir.path());
    // Resume once: closers and end-seed close the turn.
    let mut app = opened(&src, AppendTarget::InPlace);
    let prefix = app.lifecycle_prefix(5.0);
    app.append(&prefix).unwrap();
    // The lifecycle is chosen before the first batch.
    assert!(app.set_lifecycle(Lifecycle::Continue).is_err());
    app.finish().unwrap();
    let before = fs::read(&path).unwrap();
    let mut app = opened(&src, AppendTarget::InPlace);
    assert!(!app.file_turn_open());
    app.set_lifecycle(Lifecycle::Continue).unwrap();
    let e = app.append(&[user_msg(10)]).unwrap_err();
    assert!(e.to_string().contains("last turn is closed"), "{e}");
    drop(app);
    assert_eq!(fs::read(&path).unwrap(), before);
    // A live compaction lock: Continue refuses appends and cannot release.
    let mut text = open_turn_log();
    text.push_str(
        r#"{"type":"compaction/start","seq":6,"time":16,"data":{"compactionId":"c1","turn":1}}"#,
    );
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

/// A real file where another (unlocked) program appends `foreign` right
/// before or right after dsh's `nth` append.
struct Racing {
    sink: super::write::Sink,
    foreign: Vec<u8>,
    nth: usize,
    after: bool,
    appends: usize,
}
impl Racing {
    fn new(path: &Path, foreign: &str, nth: usize, after: bool) -> Racing {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .unwrap();
        let append = OpenOptions::new().append(true).open(path).unwrap();
        Racing {
            sink: super::write::Sink {
                file,
                append,
                path: path.to_path_buf(),
            },
            foreign: foreign.as_bytes().to_vec(),
            nth,
            after,
            appends: 0,
        }
    }
    fn intrude(&mut self) {
        let mut f = OpenOptions::new()
            .append(true)
            .open(&self.sink.path)
            .unwrap();
        f.write_all(&self.foreign).unwrap();
    }
}
impl WriteOps for Racing {
    fn append(&mut self, buf: &[u8]) -> io::Result<()> {
        self.appends += 1;
        let now = self.appends == self.nth;
        if now && !self.after {
            self.intrude();
        }
        self.sink.append(buf)?;
        if now && self.after {
            self.intrude();
        }
        Ok(())
    }
    fn write_at(&mut self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.sink.write_at(buf, offset)
    }
    fn read_at(&mut self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.sink.read_at(buf, offset)
    }
    fn len(&mut self) -> io::Result<u64> {
        self.sink.len()
    }
    fn sync(&mut self) -> io::Result<()> {
        self.sink.sync()
    }
    fn truncate(&mut self, len: u64) -> io::Result<()> {
        self.sink.truncate(len)
    }
}

#[test]
fn a_foreign_appender_is_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    let base = open_turn_log();
    let foreign = "{\"type\":\"foreign\"}\n";
    let before = {
        fs::write(&path, &base).unwrap();
        loaded(&path)
    };
    let mut batch = lifecycle_prefix(&before, 50.0);
    batch.push(user_msg(before.session_length()));
    for container in [Container::Plain, Container::Zstd] {
        let (payload, _) = encode(&batch, container).unwrap();
        for (nth, after) in [(1, false), (1, true), (2, false), (2, true)] {
            if nth == 2 && container == Container::Zstd {
                continue; // one append: the frame
            }
            fs::write(&path, &base).unwrap();
            let mut ops = Racing::new(&path, foreign, nth, after);
            let e = commit(&mut ops, &path, base.len() as u64, &payload, None).unwrap_err();
            let after_bytes = fs::read(&path).unwrap();
            let text = String::from_utf8_lossy(&after_bytes);
            let case = format!("{container:?}, foreign line at append {nth}, after: {after}");
            assert!(e.is_busy(), "{case}: {e}");
            assert!(matches!(e, AppendError::Interleaved { .. }), "{case}: {e}");
            assert!(
                e.to_string().contains("dsh overwrote nothing"),
                "{case}: {e}"
            );
            assert_eq!(&after_bytes[..base.len()], base.as_bytes(), "{case}");
            assert_eq!(
                text.matches(foreign).count(),
                1,
                "{case}: foreign line lost"
            );
            if !after && nth == 1 {
                // dsh's bytes landed after the foreign line, at the end:
                // removed, the foreign line stays.
                assert_eq!(after_bytes.len(), base.len() + foreign.len(), "{case}: {e}");
            } else {
                // The foreign line follows dsh's earlier bytes: both stay.
                assert!(after_bytes.len() > base.len() + foreign.len(), "{case}");
                assert!(after_bytes.ends_with(foreign.as_bytes()), "{case}");
            }
        }
    }
}
