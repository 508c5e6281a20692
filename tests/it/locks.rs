//! `dsh locks`: the compaction-lock scan and `--release`.

use std::fs;

use dsh::json::Value;

use crate::support::{appends, copy_of, dsh, json, load, sample, shared};

fn statuses(v: &Value<'_>) -> Vec<String> {
    v.get("brackets")
        .unwrap()
        .as_arr()
        .unwrap()
        .iter()
        .map(|b| b.get("status").unwrap().as_str().unwrap().into_owned())
        .collect()
}

#[test]
#[cfg_attr(
    no_shared,
    ignore = "needs ../shared (corpus, reference answers, spec examples) beside the checkout"
)]
fn locks_on_the_spec_examples() {
    let Some(shared) = shared("locks_on_the_spec_examples") else {
        return;
    };
    let ex = shared.join("spec/examples");
    let out = dsh()
        .args(["locks", "--json", "-q"])
        .arg(ex.join("v0-lock-stale.jsonl"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v = json(&out.stdout);
    let log = &v.get("logs").unwrap().as_arr().unwrap()[0];
    assert!(log.get("state").unwrap().is_str("stale"));
    assert_eq!(statuses(log), ["stale"]);
    let b = &log.get("brackets").unwrap().as_arr().unwrap()[0];
    assert_eq!(b.get("seq").unwrap().as_f64(), Some(5.0));
    assert_eq!(b.get("endSeedSeq").unwrap().as_f64(), Some(7.0));
    assert_eq!(b.get("turn").unwrap().as_f64(), Some(1.0));

    let out = dsh()
        .args(["locks", "--json", "-q"])
        .arg(ex.join("v0-lock-busy.jsonl"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "a busy lock is a finding");
    let v = json(&out.stdout);
    assert_eq!(
        v.get("summary").unwrap().get("busy").unwrap().as_f64(),
        Some(1.0)
    );
    let log = &v.get("logs").unwrap().as_arr().unwrap()[0];
    assert!(log.get("state").unwrap().is_str("busy"));
    assert_eq!(log.get("lastBracketSeq").unwrap().as_f64(), Some(14.0));
    assert_eq!(log.get("lastEndSeedSeq").unwrap().as_f64(), Some(7.0));
    assert_eq!(statuses(log), ["stale", "busy"]);
    let b = &log.get("brackets").unwrap().as_arr().unwrap()[1];
    assert!(b.get("turn").unwrap().to_json() == "null");
    assert!(b.get("sourceCommandId").unwrap().is_str("cmd-0001"));
    // No clock reading unless asked: the same log gives the same document.
    assert!(b.get("ageMs").is_none(), "{}", b.to_json());
    assert!(v.get("now").is_none());
    let time = b.get("time").unwrap().as_f64().unwrap();
    let aged = |extra: &[&str]| {
        let out = dsh()
            .args(["locks", "--json", "-q"])
            .args(extra)
            .arg(ex.join("v0-lock-busy.jsonl"))
            .output()
            .unwrap();
        let v = json(&out.stdout);
        let log = &v.get("logs").unwrap().as_arr().unwrap()[0];
        let b = &log.get("brackets").unwrap().as_arr().unwrap()[1];
        (
            b.get("ageMs").and_then(|a| a.as_f64()),
            v.get("now").and_then(|n| n.as_f64()),
        )
    };
    let now = time + 90_000.0;
    assert_eq!(
        aged(&["--now", &format!("{now}")]),
        (Some(90_000.0), Some(now))
    );
    let (age, clock) = aged(&["--age"]);
    assert!(age.unwrap() > 0.0 && clock.unwrap() > time);

    let out = dsh()
        .args(["locks", "--json", "-q"])
        .arg(ex.join("v0-prune-and-two-compactions.jsonl"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v = json(&out.stdout);
    let log = &v.get("logs").unwrap().as_arr().unwrap()[0];
    assert!(log.get("state").unwrap().is_str("free"));
    assert_eq!(statuses(log), ["matched", "matched"]);
    assert!(log.get("anomalies").unwrap().as_arr().unwrap().is_empty());
}

#[test]
fn locks_classify_every_bracket_of_a_sample() {
    let out = dsh()
        .args(["locks", "--json", "-q"])
        .arg(sample("locks-busy.jsonl"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v = json(&out.stdout);
    let log = &v.get("logs").unwrap().as_arr().unwrap()[0];
    assert_eq!(statuses(log), ["stale", "matched", "matched", "busy"]);
    let b = log.get("brackets").unwrap().as_arr().unwrap();
    let num = |b: &Value<'_>, k: &str| b.get(k).and_then(|x| x.as_f64());
    assert_eq!(
        (num(&b[0], "seq"), num(&b[0], "endSeedSeq")),
        (Some(6.0), Some(8.0))
    );
    assert!(b[1].get("outcome").unwrap().is_str("ok"));
    assert_eq!(
        (
            num(&b[1], "summarySeq"),
            num(&b[1], "checkpointSeq"),
            num(&b[1], "endSeq")
        ),
        (Some(15.0), Some(16.0), Some(17.0))
    );
    assert!(b[2].get("outcome").unwrap().is_str("failed"));
    assert!(
        b[2].get("error")
            .unwrap()
            .as_str()
            .unwrap()
            .starts_with("summarization truncated")
    );
    assert_eq!(num(&b[3], "seq"), Some(24.0));
    assert!(b[3].get("compactionId").unwrap().is_str("cmp-manual"));
    // The table.
    let out = dsh()
        .args(["locks"])
        .arg(sample("locks-busy.jsonl"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("cmp-manual") && text.contains("busy"),
        "{text}"
    );
    assert!(text.contains("1 busy lock(s), 1 stale"), "{text}");
    // A log without compactions is free.
    let out = dsh()
        .args(["locks", "--json", "-q"])
        .arg(sample("prune-closed.jsonl"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v = json(&out.stdout);
    assert!(
        v.get("logs").unwrap().as_arr().unwrap()[0]
            .get("state")
            .unwrap()
            .is_str("free")
    );
}

#[test]
fn locks_release_appends_what_a_resuming_harness_writes() {
    let (_d, log) = copy_of(&sample("locks-open-turn.jsonl"), "session.jsonl");
    let before = fs::read(&log).unwrap();
    // Not a terminal and no --yes: say what it would do, change nothing.
    let out = dsh()
        .args(["locks", "--release"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("turn/end @9"), "{err}");
    assert!(err.contains("session/end-seed at seq 10"), "{err}");
    assert!(err.contains("--yes"), "{err}");
    assert_eq!(fs::read(&log).unwrap(), before);

    // Append-only: the compaction/start is still there, byte for byte.
    let release = [
        "locks",
        "--release",
        "--yes",
        "--json",
        "--time",
        "1767226000000",
    ];
    let (_, out) = appends(dsh().args(release), &log, "release");
    let v = json(&out.stdout);
    assert!(matches!(v.get("released"), Some(Value::Bool(true))));
    assert!(v.get("state").unwrap().is_str("stale"));
    let appended = v.get("appended").unwrap().as_arr().unwrap();
    assert_eq!(appended.len(), 2);
    assert_eq!(
        appended[1].to_json(),
        r#"{"type":"session/end-seed","seq":10,"time":1767226000000,"data":{}}"#
    );
    let after = fs::read(&log).unwrap();
    let text = String::from_utf8(after.clone()).unwrap();
    let tail: Vec<&str> = text.lines().rev().take(2).collect();
    assert!(tail[1].starts_with(r#"{"type":"turn/end","seq":9,"time":1767225901096,"data":{"turn":1,"reason":{"kind":"interrupted"}}}"#));
    let l = load(&log);
    assert!(l.closers.is_empty());
    assert!(l.ends_with_end_seed);
    // Now stale: exit 0, and a second release has nothing to do.
    let out = dsh()
        .args(["locks", "--json", "-q"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v = json(&out.stdout);
    assert_eq!(
        statuses(&v.get("logs").unwrap().as_arr().unwrap()[0]),
        ["stale"]
    );
    let out = dsh()
        .args(["locks", "--release", "--yes"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("nothing to release"));
    assert_eq!(fs::read(&log).unwrap(), after);
}

#[test]
fn locks_scan_every_session_under_dsh_home() {
    let home = tempfile::tempdir().unwrap();
    for (id, src) in [
        ("s-busy", "locks-busy.jsonl"),
        ("s-free", "prune-closed.jsonl"),
    ] {
        let dir = home.path().join("sessions/--home-dev-project--").join(id);
        fs::create_dir_all(&dir).unwrap();
        fs::copy(sample(src), dir.join("session.jsonl")).unwrap();
    }
    let out = dsh()
        .env("DSH_HOME", home.path())
        .args(["locks", "--json", "-q"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v = json(&out.stdout);
    let logs = v.get("logs").unwrap().as_arr().unwrap();
    assert_eq!(logs.len(), 2);
    let states: Vec<String> = logs
        .iter()
        .map(|l| l.get("state").unwrap().as_str().unwrap().into_owned())
        .collect();
    assert_eq!(states, ["busy", "free"]);
    // An unreadable log is reported and makes the exit 3.
    fs::write(
        home.path()
            .join("sessions/--home-dev-project--/s-free/session.jsonl"),
        "not json\n",
    )
    .unwrap();
    let out = dsh()
        .env("DSH_HOME", home.path())
        .args(["locks", "--json", "-q"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let v = json(&out.stdout);
    assert_eq!(
        v.get("summary").unwrap().get("errors").unwrap().as_f64(),
        Some(1.0)
    );
}

#[test]
fn locks_release_has_a_dry_run_and_writes_a_copy_with_out() {
    let (dir, log) = copy_of(&sample("locks-open-turn.jsonl"), "session.jsonl");
    let before = fs::read(&log).unwrap();
    // -n: the plan on stdout, nothing written, no confirmation needed.
    let out = dsh()
        .args(["locks", "--release", "-n"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("would append"), "{text}");
    assert!(text.contains("session/end-seed at seq 10"), "{text}");
    assert!(text.contains("nothing written"), "{text}");
    assert_eq!(fs::read(&log).unwrap(), before);
    let v = json(
        &dsh()
            .args(["locks", "--release", "--dry-run", "--json"])
            .arg(&log)
            .output()
            .unwrap()
            .stdout,
    );
    assert_eq!(v.get("dryRun").map(|d| d.is_true()), Some(true));
    assert_eq!(v.get("released").map(|d| d.is_true()), Some(false));
    // A dry run reads no clock: run twice, the same bytes.
    let again = || {
        dsh()
            .args(["locks", "--release", "--dry-run", "--json"])
            .arg(&log)
            .output()
            .unwrap()
            .stdout
    };
    assert_eq!(again(), again());
    assert!(
        !v.get("appended")
            .and_then(|a| a.as_arr())
            .unwrap()
            .is_empty()
    );
    assert_eq!(fs::read(&log).unwrap(), before);

    // --out: the copy gets the release, the log stays as it was.
    let copy = dir.path().join("released.jsonl");
    let out = dsh()
        .args(["locks", "--release", "--out"])
        .arg(&copy)
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(fs::read(&log).unwrap(), before);
    let after = fs::read(&copy).unwrap();
    assert!(after.starts_with(&before) && after.len() > before.len());
    let v = json(
        &dsh()
            .args(["locks", "--json"])
            .arg(&copy)
            .output()
            .unwrap()
            .stdout,
    );
    assert_eq!(
        v.get("summary")
            .and_then(|s| s.get("busy"))
            .and_then(|b| b.as_count()),
        Some(0)
    );
    // An existing --out file is refused.
    dsh()
        .args(["locks", "--release", "--out"])
        .arg(&copy)
        .arg(&log)
        .assert()
        .code(2);
}

/// Chunks counted without being built leave the scan as chunks seen one
/// by one leave it (last seq included).
#[test]
fn a_scan_over_counted_chunks_is_a_scan_over_every_chunk() {
    let mut paths: Vec<std::path::PathBuf> = fs::read_dir(crate::support::root().join("samples"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    if let Some(shared) = shared("a_scan_over_counted_chunks_is_a_scan_over_every_chunk") {
        paths.extend(
            crate::support::corpus_logs(&shared)
                .into_iter()
                .map(|(_, p)| p),
        );
    }
    for p in paths {
        let src = dsh::LogSource::File(p.clone());
        let mut fast = dsh::lock::LockScan::new();
        let skip = dsh::LoadOptions {
            skip_chunk_events: true,
            ..Default::default()
        };
        let Ok(_) = dsh::log::load(&src, &skip, &mut fast) else {
            continue;
        };
        let mut slow = dsh::lock::LockScan::new();
        let mut obs = |ev: &dsh::Event<'_>, f: &dsh::log::Folded<'_>| {
            if !f.synthetic {
                slow.observe(ev);
            }
        };
        dsh::log::load(&src, &dsh::LoadOptions::default(), &mut obs).unwrap();
        assert_eq!(
            format!("{:?}", fast.report()),
            format!("{:?}", slow.report()),
            "{}",
            p.display()
        );
    }
}
