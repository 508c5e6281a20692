//! The writer under stress: kill -9 mid-append, concurrent writers.

use std::fs;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use dsh::append::{AppendOptions, AppendTarget, Appender};
use dsh::json::Value;
use dsh::log::LogSource;

use crate::support::{copy_of, load, sample};

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

/// A log whose open turn holds `n` oversized tool results (CJK text, so each
/// replacement is about 18 KB): pruning it appends one batch of `n` pairs.
fn many_results_log(n: usize) -> String {
    let mut rng = Lcg(0xf2);
    let texts: Vec<String> = (0..n)
        .map(|_| {
            (0..9000)
                .map(|_| char::from_u32(0x4e00 + rng.next(3000) as u32).unwrap())
                .collect()
        })
        .collect();
    crate::prune::results_log("big-prune", &texts)
}

/// Lines of `plain` that a crash may end after: not a `compaction/prune`
/// (its replacement follows), not inside summary → checkpoint → end.
fn safe_counts(plain: &str) -> Vec<usize> {
    let mut safe = vec![0];
    let mut bracket = false;
    for (i, line) in plain.lines().enumerate() {
        let ty = Value::parse(line)
            .unwrap()
            .get("type")
            .and_then(|t| t.as_str())
            .unwrap()
            .to_string();
        match ty.as_str() {
            "compaction/summary" => bracket = true,
            "compaction/end" => bracket = false,
            _ => {}
        }
        if ty != "compaction/prune" && !bracket {
            safe.push(i + 1);
        }
    }
    safe
}

/// A prune batch of about 220 KB (more than one 128 KiB Zstandard block)
/// cut at every byte: what a reader recovers from the torn frame (a
/// streaming decoder fed byte by byte, as the reader decodes a torn final
/// frame) never ends between a `compaction/prune` and its replacement; and
/// the loader, on a sample of those cuts (every 1999th byte and a few bytes
/// around every change), agrees and loads the log.
#[test]
fn a_zstd_batch_cut_at_any_byte_never_shows_half_a_pair() {
    use zstd::stream::raw::{Decoder, InBuffer, Operation, OutBuffer};
    let text = many_results_log(14);
    let (head, body) = text.split_at(text.find('\n').unwrap() + 1);
    let mut bytes = zstd::bulk::compress(head.as_bytes(), 3).unwrap();
    bytes.extend(zstd::bulk::compress(body.as_bytes(), 3).unwrap());
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join("session.jsonl.zstd");
    fs::write(&log, &bytes).unwrap();
    let orig = load(&log).stored_events;
    crate::support::stdout_ok(
        crate::support::dsh_process()
            .args(["prune", "-q", "--allow-closed-turn"])
            .arg(&log)
            .output()
            .unwrap(),
    );
    let after = fs::read(&log).unwrap();
    let frame = &after[bytes.len()..];
    let plain = String::from_utf8(zstd::stream::decode_all(frame).unwrap()).unwrap();
    assert!(plain.len() > 200_000, "a batch of {} bytes", plain.len());
    assert_eq!(plain.matches("\"compaction/prune\"").count(), 14);
    let safe = safe_counts(&plain);
    let all = plain.lines().count();
    // Every byte: the lines a torn frame of that length shows.
    let mut dec = Decoder::new().unwrap();
    let mut outbuf = vec![0u8; plain.len() + 1];
    let (mut produced, mut newlines) = (0usize, 0usize);
    let mut visible = vec![0usize; frame.len() + 1];
    let mut partial = 0;
    for c in 1..=frame.len() {
        let mut input = InBuffer::around(&frame[c - 1..c]);
        loop {
            let mut o = OutBuffer::around_pos(&mut outbuf[..], produced);
            dec.run(&mut input, &mut o).unwrap();
            let now = o.pos();
            let grew = now > produced;
            newlines += memchr::memchr_iter(b'\n', &outbuf[produced..now]).count();
            produced = now;
            if input.pos() == 1 && !grew {
                break;
            }
        }
        visible[c] = newlines;
        if safe.binary_search(&newlines).is_err() {
            partial += 1;
        }
    }
    assert_eq!(visible[frame.len()], all);
    let changes: Vec<usize> = (1..=frame.len())
        .filter(|&c| visible[c] != visible[c - 1])
        .collect();
    eprintln!(
        "{} cuts (every byte of a {}-byte frame holding {} bytes of JSONL, {all} events): {partial} show a partial unit; {} distinct states",
        frame.len() + 1,
        frame.len(),
        plain.len(),
        changes.len() + 1
    );
    assert_eq!(partial, 0, "cuts that show half a prune pair");
    assert!(
        changes.len() > 1,
        "a large batch becomes visible in safe steps"
    );
    // The loader agrees on a sample of the cuts.
    let mut sample: Vec<usize> = (0..=frame.len()).step_by(1999).collect();
    for &c in &changes {
        sample.extend(c.saturating_sub(2)..=(c + 1).min(frame.len()));
    }
    sample.sort_unstable();
    sample.dedup();
    let cut = d.path().join("cut.jsonl.zstd");
    for &c in &sample {
        let mut b = bytes.clone();
        b.extend_from_slice(&frame[..c]);
        fs::write(&cut, &b).unwrap();
        let l = load(&cut);
        assert_eq!(
            (l.stored_events - orig) as usize,
            visible[c],
            "cut at byte {c} of the frame"
        );
    }
    eprintln!("the loader agreed on {} of those cuts", sample.len());
}

/// `dsh prune` (slowed down, so that its write has many windows) races a
/// program that appends lines without the writer lock, as a running harness
/// does. Over many trials no foreign line may be lost or damaged, and dsh
/// may exit 0 only when its batch sits whole right after the original log.
#[test]
fn a_racing_unlocked_appender_never_loses_a_line() {
    use std::io::Write as _;
    // DSH_TEST_RACE_TRIALS=N runs more.
    let trials: u64 = std::env::var("DSH_TEST_RACE_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(120);
    let (mut lost, mut ok, mut busy, mut races) = (0, 0, 0, 0);
    let mut rng = Lcg(0x0f4);
    for t in 0..trials {
        let (_d, log) = copy_of(&sample("prune-open-turn.jsonl"), "session.jsonl");
        let before = fs::read(&log).unwrap();
        let mut child = crate::support::dsh_process()
            .args([
                "prune",
                "-q",
                "--allow-closed-turn",
                "--debug-write-pause-ms",
                "1",
            ])
            .arg(&log)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Three foreign lines at random moments of the write.
        let mut foreign = Vec::new();
        if t % 2 == 1 {
            wait_for_growth(&log, before.len(), &mut child);
        }
        for k in 0..3 {
            std::thread::sleep(Duration::from_micros(rng.next(25_000)));
            let line = format!("{{\"type\":\"harness/foreign\",\"trial\":{t},\"k\":{k}}}\n");
            let mut f = fs::OpenOptions::new().append(true).open(&log).unwrap();
            f.write_all(line.as_bytes()).unwrap();
            foreign.push(line);
        }
        let out = child.wait_with_output().unwrap();
        let after = fs::read(&log).unwrap();
        assert_eq!(
            &after[..before.len()],
            &before[..],
            "trial {t}: old bytes rewritten"
        );
        let text = String::from_utf8_lossy(&after);
        for line in &foreign {
            if text.matches(line.as_str()).count() != 1 {
                lost += 1;
            }
        }
        let err = String::from_utf8_lossy(&out.stderr);
        match out.status.code() {
            Some(0) => {
                ok += 1;
                // dsh's batch is whole, right after the original bytes.
                let tail = &text[before.len()..];
                let first_foreign = tail.find("harness/foreign").unwrap_or(tail.len());
                let batch = &tail[..tail[..first_foreign].rfind('\n').map_or(0, |i| i + 1)];
                assert_eq!(
                    batch.matches("\"compaction/prune\"").count(),
                    2,
                    "trial {t}"
                );
            }
            Some(4) => {
                busy += 1;
                if err.contains("while dsh was appending") {
                    races += 1;
                    assert!(err.contains("dsh overwrote nothing"), "trial {t}: {err}");
                }
            }
            c => panic!("trial {t}: exit {c:?}: {err}"),
        }
    }
    eprintln!(
        "{trials} races, {} foreign lines: {lost} lost; dsh exited 0 {ok} times, 4 {busy} times ({races} caught mid-write)",
        trials * 3
    );
    assert_eq!(lost, 0, "foreign lines lost");
    assert!(races > 0, "some foreign lines must land while dsh writes");
}

/// `kill -9` while `dsh prune` writes a large batch (about 220 KB of JSONL,
/// more than one Zstandard block) to a `.jsonl.zstd` log: whatever the kill
/// leaves, the log loads and shows the old log plus whole units only.
#[test]
fn kill_9_during_a_large_zstd_batch_never_shows_half_a_pair() {
    let text = many_results_log(14);
    let (head, body) = text.split_at(text.find('\n').unwrap() + 1);
    let mut bytes = zstd::bulk::compress(head.as_bytes(), 3).unwrap();
    bytes.extend(zstd::bulk::compress(body.as_bytes(), 3).unwrap());
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("src.jsonl.zstd");
    fs::write(&src, &bytes).unwrap();
    let orig = load(&src).stored_events;
    let mut rng = Lcg(0x9e);
    let runs = 24;
    // Events visible after each killed run; the last run is not killed
    // and gives the whole batch (and so its safe points).
    let mut seen = Vec::new();
    let mut mid = 0;
    let mut whole = String::new();
    for i in 0..runs {
        let (_t, log) = copy_of(&src, "session.jsonl.zstd");
        let mut child = crate::support::dsh_process()
            .args([
                "prune",
                "-q",
                "--allow-closed-turn",
                "--debug-write-pause-ms",
                "20",
            ])
            .arg(&log)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let last = i + 1 == runs;
        if !last {
            wait_for_growth(&log, bytes.len(), &mut child);
            std::thread::sleep(Duration::from_millis(rng.next(90)));
            let _ = child.kill();
        }
        let _ = child.wait();
        let after = fs::read(&log).unwrap();
        assert_eq!(
            &after[..bytes.len()],
            &bytes[..],
            "run {i}: old bytes rewritten"
        );
        let n = (load(&log).stored_events - orig) as usize;
        if last {
            let plain = zstd::stream::decode_all(&after[bytes.len()..]).unwrap();
            whole = String::from_utf8(plain).unwrap();
        } else {
            mid += (after.len() > bytes.len()) as u32;
            seen.push(n);
        }
    }
    let safe = safe_counts(&whole);
    let partial = seen
        .iter()
        .filter(|n| safe.binary_search(n).is_err())
        .count();
    let some = seen.iter().filter(|&&n| n > 0).count();
    eprintln!(
        "{} kills ({mid} mid-write, {some} showing part or all of the batch): {partial} show half a unit",
        runs - 1
    );
    assert_eq!(partial, 0, "visible event counts {seen:?}, safe {safe:?}");
    assert!(mid > 0);
}
