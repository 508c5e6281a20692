//! The writer under stress: kill -9 mid-append, concurrent writers.

use std::fs;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use dsh::append::{AppendOptions, AppendTarget, Appender};
use dsh::json::Value;
use dsh::log::LogSource;

use super::prune::{copy_of, load, sample};

/// A tiny deterministic generator (no dependency).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n.max(1)
    }
}

/// Wait until the file at `p` is longer than `len` (the writer has the
/// lock and is writing), or the child has exited.
fn wait_for_growth(p: &Path, len: usize, child: &mut std::process::Child) {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(10) {
        if fs::metadata(p)
            .map(|m| m.len() as usize > len)
            .unwrap_or(false)
            || child.try_wait().ok().flatten().is_some()
        {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Kill `dsh prune` at many moments; every time the log must load and show
/// either none or all of the batch. A third of the kills land at random
/// times from the start; the others land at random times after the first
/// bytes of the batch reached the file (mid-write); the last run is not
/// killed. Returns (none, all, killed mid-write but showing none).
fn kill_loop(log_src: &Path, name: &str, runs: u64, pause_ms: u64, pauses: u64) -> (u32, u32, u32) {
    let orig = load(log_src);
    let none = orig.event_count();
    let all = orig.session_length() + 4; // two prune pairs
    let mut rng = Lcg(0x5eed ^ runs);
    let (mut saw_none, mut saw_all, mut mid_write) = (0, 0, 0);
    // The write protocol pauses `pauses` times per run.
    let span = pause_ms * (pauses + 2);
    for i in 0..runs {
        let (_d, log) = copy_of(log_src, name);
        let before = fs::read(&log).unwrap();
        let mut child = crate::support::dsh_process()
            .args([
                "prune",
                "-q",
                "--resume",
                "--allow-closed-turn",
                "--debug-write-pause-ms",
            ])
            .arg(pause_ms.to_string())
            .arg(&log)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let last = i + 1 == runs;
        let at = rng.next(span);
        if !last {
            if i % 3 != 0 {
                wait_for_growth(&log, before.len(), &mut child);
            }
            std::thread::sleep(Duration::from_millis(at));
            let _ = child.kill(); // SIGKILL
        }
        let _ = child.wait();
        let after = fs::read(&log).unwrap();
        assert_eq!(
            &after[..before.len()],
            &before[..],
            "run {i}: old bytes rewritten"
        );
        let l = load(&log);
        let n = l.event_count();
        assert!(
            n == none || n == all,
            "run {i} (kill at +{at} ms): {n} events, want {none} (none) or {all} (all)"
        );
        if n == all {
            saw_all += 1;
            assert!(l.closers.is_empty());
            assert_eq!(l.surface.replace_generation, 2);
        } else {
            saw_none += 1;
            assert_eq!(l.surface.replace_generation, 0);
            if after.len() > before.len() {
                // Killed mid-write: bytes landed, yet none of them is visible
                // (or only closers the loader recomputes anyway).
                mid_write += 1;
            }
        }
    }
    (saw_none, saw_all, mid_write)
}

#[test]
fn kill_9_during_plain_appends_leaves_none_or_all() {
    let (none, all, mid) = kill_loop(
        &sample("prune-open-turn.jsonl"),
        "session.jsonl",
        30,
        10,
        12,
    );
    eprintln!(
        "plain: {none} run(s) ended with none of the batch ({mid} killed mid-write), {all} with all of it"
    );
    assert!(
        none > 0 && all > 0,
        "kills must land before and after the commit"
    );
    assert!(
        mid > 0,
        "some kills must land while the batch is being written"
    );
}

#[test]
fn kill_9_during_zstd_appends_leaves_none_or_all() {
    let text = fs::read_to_string(sample("prune-open-turn.jsonl")).unwrap();
    let (head, body) = text.split_at(text.find('\n').unwrap() + 1);
    let mut bytes = zstd::bulk::compress(head.as_bytes(), 3).unwrap();
    bytes.extend(zstd::bulk::compress(body.as_bytes(), 3).unwrap());
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("src.jsonl.zstd");
    fs::write(&src, &bytes).unwrap();
    let (none, all, mid) = kill_loop(&src, "session.jsonl.zstd", 16, 15, 5);
    eprintln!(
        "zstd: {none} run(s) ended with none of the batch ({mid} killed mid-write), {all} with all of it"
    );
    assert!(none > 0 && all > 0 && mid > 0);
}

fn user_message(seq: u64, text: &str) -> dsh::OwnedEvent {
    let line = format!(
        r#"{{"type":"user/message","seq":{seq},"time":1,"data":{{"role":"user","content":[{{"type":"text","text":"{text}"}}],"source":{{"kind":"user"}},"id":"w-{seq}"}},"surfaceOp":"append"}}"#
    );
    let v = Value::parse(&line).unwrap().into_owned();
    dsh::event::owned_event(dsh::Kind::UserMessage, seq, v)
}

#[test]
fn concurrent_writers_take_turns() {
    let (_d, log) = copy_of(&sample("prune-closed.jsonl"), "session.jsonl");
    let start = Arc::new(Barrier::new(2));
    let handles: Vec<_> = (0..2)
        .map(|w| {
            let log = log.clone();
            let start = start.clone();
            std::thread::spawn(move || {
                start.wait();
                let opts = AppendOptions {
                    wait: Some(Duration::from_secs(20)),
                    ..Default::default()
                };
                let t0 = Instant::now();
                let mut app = Appender::open(
                    &LogSource::File(log),
                    AppendTarget::InPlace,
                    &opts,
                    &mut |_: &dsh::Event<'_>, _: &dsh::log::Folded<'_>| {},
                )
                .unwrap();
                let waited = t0.elapsed();
                let mut batch = app.lifecycle_prefix(5.0);
                let seq = app.next_seq() + batch.len() as u64;
                for k in 0..3 {
                    batch.push(user_message(seq + k, &format!("writer {w} line {k}")));
                }
                // Hold the lock a while so the other writer must wait.
                std::thread::sleep(Duration::from_millis(300));
                app.append(&batch).unwrap();
                app.finish().unwrap();
                waited
            })
        })
        .collect();
    let waits: Vec<Duration> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert!(
        waits.iter().any(|w| *w >= Duration::from_millis(250)),
        "one writer waited for the other: {waits:?}"
    );
    let l = load(&log);
    // 14 events, then each writer's lifecycle (its end-seed) and 3 lines:
    // both batches landed, whole and one after the other.
    assert_eq!(l.stored_events, 22);
    let text = fs::read_to_string(&log).unwrap();
    let new: Vec<&str> = text.lines().skip(15).collect();
    let shape: Vec<String> = new
        .iter()
        .map(|l| match l.split("writer ").nth(1) {
            Some(rest) => rest[..1].to_string(),
            None if l.contains("session/end-seed") => "seed".to_string(),
            None => panic!("unexpected line {l}"),
        })
        .collect();
    let a = ["seed", "0", "0", "0", "seed", "1", "1", "1"];
    let b = ["seed", "1", "1", "1", "seed", "0", "0", "0"];
    assert!(shape == a || shape == b, "batches interleaved: {shape:?}");
}

#[test]
fn a_second_dsh_prune_fails_fast_or_waits() {
    let (_d, log) = copy_of(&sample("prune-closed.jsonl"), "session.jsonl");
    let before = fs::read(&log).unwrap();
    // The first holds the lock for a while (slow writes).
    let mut first = crate::support::dsh_process()
        .args([
            "prune",
            "-q",
            "--allow-closed-turn",
            "--debug-write-pause-ms",
            "150",
        ])
        .arg(&log)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Once bytes land, the first holds the lock for several pauses more.
    wait_for_growth(&log, before.len(), &mut first);
    let second = crate::support::dsh_process()
        .args(["prune", "--allow-closed-turn"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(second.status.code(), Some(4));
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(
        err.contains("another process holds the writer lock"),
        "{err}"
    );
    assert!(err.contains("--wait"), "{err}");
    let third = crate::support::dsh_process()
        .args(["prune", "--allow-closed-turn", "--wait", "20"])
        .arg(&log)
        .output()
        .unwrap();
    assert!(first.wait().unwrap().success());
    assert_eq!(third.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&third.stdout).contains("nothing to prune"));
    // Exactly one batch: the end-seed and one prune pair.
    let after = fs::read_to_string(&log).unwrap();
    assert!(after.len() > before.len());
    assert_eq!(after.lines().count(), 15 + 3);
    assert_eq!(after.matches("\"compaction/prune\"").count(), 1);
}
