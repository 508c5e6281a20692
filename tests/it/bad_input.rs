//! Every class of malformed input: one clear error naming file, line and seq,
//! a stable exit code, never a panic.

use std::path::PathBuf;

use predicates::prelude::*;

use crate::support::{dsh, sample};

fn session_lines() -> Vec<String> {
    std::fs::read_to_string(sample("coding-session.jsonl"))
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

fn write(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// Run `surface` and check the refusal: exit 3, the file and the given
/// fragments on stderr, the JSON error on stdout, no panic.
fn refused(p: &PathBuf, fragments: &[&str]) {
    let out = dsh().arg("surface").arg(p).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        !stderr.contains("panicked") && !stderr.contains("internal error"),
        "{stderr}"
    );
    assert!(
        stderr.contains(p.file_name().unwrap().to_str().unwrap()),
        "names the file: {stderr}"
    );
    for f in fragments {
        assert!(stderr.contains(f), "expected {f:?} in: {stderr}");
    }
    dsh()
        .args(["surface", "--json"])
        .arg(p)
        .assert()
        .code(3)
        .stdout(predicate::str::starts_with("{\"error\":"));
}

#[test]
fn bad_json_before_a_committed_turn_end() {
    let mut l = session_lines();
    l[10] = l[10][..l[10].len() / 2].to_string();
    let dir = tempfile::tempdir().unwrap();
    let p = write(&dir, "bad-json.jsonl", (l.join("\n") + "\n").as_bytes());
    refused(&p, &["line 11:", "unparsable committed event at line 10"]);
}

#[test]
fn bad_json_in_the_tail_is_a_torn_tail() {
    let mut l = session_lines();
    let n = l.len();
    l[n - 1] = "{not json".into();
    let dir = tempfile::tempdir().unwrap();
    let p = write(&dir, "tail.jsonl", (l.join("\n") + "\n").as_bytes());
    dsh()
        .arg("surface")
        .arg(&p)
        .assert()
        .success()
        .stderr(predicate::str::contains("dropped 1 line(s)"));
}

#[test]
fn seq_gap() {
    refused(
        &sample("refused.jsonl"),
        &["line 13:", "seq gap in committed region"],
    );
}

#[test]
fn replace_of_an_unknown_node() {
    let mut l = session_lines();
    // Turn the last user prompt into a replacement of a seq that is not on the surface.
    let i = l
        .iter()
        .position(|x| x.contains("\"id\":\"msg-u-3\"}") && x.contains("user/message"))
        .unwrap();
    l[i] = l[i].replace(
        "\"surfaceOp\":\"append\"",
        "\"sourceEventSeqs\":[5],\"surfaceOp\":{\"op\":\"replace\",\"start\":5,\"end\":5}",
    );
    let dir = tempfile::tempdir().unwrap();
    let p = write(&dir, "replace.jsonl", (l.join("\n") + "\n").as_bytes());
    refused(&p, &["seq 121", "start seq 5 not found in surface"]);
}

#[test]
fn wrong_header() {
    let mut l = session_lines();
    l[0] = l[0].replace("\"type\":\"session\"", "\"type\":\"sesion\"");
    let dir = tempfile::tempdir().unwrap();
    let p = write(&dir, "header.jsonl", (l.join("\n") + "\n").as_bytes());
    refused(&p, &["line 1:", "first line is not a session header"]);
    let mut l = session_lines();
    l[0] = l[0].replace("\"version\":0", "\"version\":7");
    let p = write(&dir, "newer.jsonl", (l.join("\n") + "\n").as_bytes());
    refused(&p, &["log format v7", "newer than this dsh reads (v0–v3)"]);
    let mut l = session_lines();
    l[0] = l[0].replace("\"version\":0", "\"version\":-1");
    let p = write(&dir, "older.jsonl", (l.join("\n") + "\n").as_bytes());
    refused(&p, &["log format v-1", "older than any"]);
}

#[test]
fn zstd_checksum_failure() {
    let mut bytes = std::fs::read(sample("coding-session.jsonl.zstd")).unwrap();
    // Flip a byte of the last frame's checksum (the file's last 4 bytes).
    let n = bytes.len();
    bytes[n - 2] ^= 0xFF;
    let dir = tempfile::tempdir().unwrap();
    let p = write(&dir, "checksum.jsonl.zstd", &bytes);
    refused(&p, &["fails to decompress"]);
}

#[test]
fn zstd_truncated_frames() {
    let bytes = std::fs::read(sample("coding-session.jsonl.zstd")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    // Cut inside the last frame: a torn final frame, the earlier turns load.
    let p = write(&dir, "torn.jsonl.zstd", &bytes[..bytes.len() - 40]);
    dsh()
        .arg("surface")
        .arg(&p)
        .assert()
        .success()
        .stderr(predicate::str::contains("torn"));
    // Cut inside the first frame: no header at all.
    let p = write(&dir, "headerless.jsonl.zstd", &bytes[..12]);
    refused(&p, &["header-less"]);
}

#[test]
fn binary_garbage() {
    let dir = tempfile::tempdir().unwrap();
    let garbage: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let p = write(&dir, "garbage.bin", &garbage);
    refused(&p, &[]);
}

#[test]
fn empty_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(&dir, "empty.jsonl", b"");
    refused(&p, &["empty or header-less"]);
}

#[test]
fn directory_without_a_session() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "hello").unwrap();
    dsh()
        .arg("surface")
        .arg(dir.path())
        .assert()
        .code(3)
        .stderr(predicate::str::contains("holds no session log"));
}

#[test]
fn missing_file_and_usage_errors() {
    dsh()
        .args(["surface", "/nonexistent/x.jsonl"])
        .assert()
        .code(3)
        .stderr(predicate::str::contains("no such file"));
    dsh().args(["surface"]).assert().code(2);
    dsh().args(["no-such-command"]).assert().code(2);
}

#[test]
fn refusals_name_the_rule_they_broke() {
    use dsh::log::{LoadOptions, LoadRule, LogSource, load};
    let rule_of = |p: &PathBuf| {
        load(
            &LogSource::File(p.clone()),
            &LoadOptions::default(),
            &mut |_: &dsh::Event<'_>, _: &dsh::log::Folded<'_>| {},
        )
        .unwrap_err()
        .rule
    };
    assert_eq!(rule_of(&sample("refused.jsonl")), Some(LoadRule::SeqGap));
    let dir = tempfile::tempdir().unwrap();
    let mut l = session_lines();
    l[0] = l[0].replace("\"type\":\"session\"", "\"type\":\"sesion\"");
    let p = write(&dir, "header.jsonl", (l.join("\n") + "\n").as_bytes());
    assert_eq!(rule_of(&p), Some(LoadRule::Header));
    let mut l = session_lines();
    let i = l
        .iter()
        .position(|x| x.contains("\"id\":\"msg-u-3\"}") && x.contains("user/message"))
        .unwrap();
    l[i] = l[i].replace(
        "\"surfaceOp\":\"append\"",
        "\"sourceEventSeqs\":[5],\"surfaceOp\":{\"op\":\"replace\",\"start\":5,\"end\":5}",
    );
    let p = write(&dir, "replace.jsonl", (l.join("\n") + "\n").as_bytes());
    assert_eq!(rule_of(&p), Some(LoadRule::Surface("R10")));
    let mut l = session_lines();
    l[10] = l[10][..l[10].len() / 2].to_string();
    let p = write(&dir, "bad-json.jsonl", (l.join("\n") + "\n").as_bytes());
    assert_eq!(rule_of(&p), Some(LoadRule::Unparsable));
}

/// Run dsh on a log whose first line is `header` and return its stderr.
fn refusal_of(first_line: &str, cmd: &str) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.jsonl");
    std::fs::write(&p, format!("{first_line}\n")).unwrap();
    let out = dsh().args([cmd, p.to_str().unwrap()]).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn a_refused_header_names_its_problem_and_the_next_step() {
    let (code, err) = refusal_of(
        r#"{"type":"session","version":0,"id":"s","createdAt":1}"#,
        "surface",
    );
    assert_eq!(code, 3);
    assert!(err.contains("first line is not a session header"), "{err}");
    assert!(
        err.contains("delegationDepth") && err.contains("--lenient"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    let (_, err) = refusal_of(
        r#"{"type":"session","version":0,"id":"s","createdAt":-5,"delegationDepth":0}"#,
        "header",
    );
    assert!(
        err.contains("createdAt") && !err.contains("--lenient"),
        "{err}"
    );
    let (_, err) = refusal_of(
        r#"{"type":"session","version":0,"createdAt":1,"delegationDepth":0}"#,
        "load",
    );
    assert!(err.contains(r#"has no "id""#), "{err}");
    // The JSON error keeps the reference's message and adds the hint.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.jsonl");
    std::fs::write(
        &p,
        "{\"type\":\"session\",\"version\":0,\"id\":\"s\",\"createdAt\":1}\n",
    )
    .unwrap();
    let out = dsh()
        .args(["surface", "--json", p.to_str().unwrap()])
        .output()
        .unwrap();
    let v = dsh::Value::parse(std::str::from_utf8(&out.stdout).unwrap().trim()).unwrap();
    assert_eq!(
        v.get("error").and_then(|e| e.as_str()).as_deref(),
        Some("corrupt session log: first line is not a session header")
    );
    assert!(
        v.get("hint")
            .and_then(|h| h.as_str())
            .is_some_and(|h| h.contains("--lenient"))
    );
}

#[test]
fn other_agents_transcripts_are_recognised() {
    for (line, agent) in [
        (
            r#"{"parentUuid":null,"isSidechain":false,"sessionId":"a","uuid":"b","type":"user","message":{"role":"user","content":"hi"}}"#,
            "Claude Code",
        ),
        (
            r#"{"type":"summary","summary":"x","leafUuid":"b"}"#,
            "Claude Code",
        ),
        (
            r#"{"timestamp":"2025-01-01T00:00:00Z","type":"session_meta","payload":{"id":"x"}}"#,
            "Codex",
        ),
        (
            r#"{"id":"ses_1","projectID":"p","directory":"/w","title":"t","time":{"created":1}}"#,
            "OpenCode",
        ),
    ] {
        let (code, err) = refusal_of(line, "measure");
        assert_eq!(code, 3);
        assert!(
            err.contains(&format!(
                "not a DSH session log (looks like a {agent} transcript)"
            )),
            "{agent}: {err}"
        );
    }
}

#[test]
fn a_single_frame_zstd_file_gets_the_command_that_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl.zst");
    let plain = std::fs::read(sample("compacted.jsonl")).unwrap();
    std::fs::write(&p, zstd::encode_all(&plain[..], 3).unwrap()).unwrap();
    let out = dsh()
        .args(["events", p.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains(&format!("zstd -dc {} | dsh events -", p.display())),
        "{err}"
    );
}

#[test]
fn every_reading_command_reads_standard_input() {
    for (name, args) in [
        ("compacted.jsonl", &["surface"][..]),
        ("compacted.jsonl", &["messages"]),
        ("compacted.jsonl", &["messages", "--json"]),
        ("compacted.jsonl", &["header"]),
        ("compacted.jsonl", &["load"]),
        ("compacted.jsonl", &["measure"]),
        ("compacted.jsonl", &["events"]),
        ("compacted.jsonl", &["events", "--json"]),
        ("compacted.jsonl", &["verify"]),
        ("compacted.jsonl", &["locks"]),
        ("prune-open-turn.jsonl", &["prune", "--dry-run"]),
        (
            "compacted.jsonl",
            &["compact", "--dry-run", "--route", "deepseek/deepseek-chat"],
        ),
        // Repeated step labels: measure and compact read the log twice.
        ("meter-repeated-labels.jsonl", &["measure"]),
        ("meter-repeated-labels.jsonl", &["measure", "--json"]),
        (
            "meter-repeated-labels.jsonl",
            &["compact", "--dry-run", "--route", "deepseek/deepseek-chat"],
        ),
    ] {
        let input = std::fs::read(sample(name)).unwrap();
        let out = dsh()
            .args(args)
            .arg("-")
            .write_stdin(input)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.code().is_some_and(|c| c <= 1),
            "{args:?} - < {name}: {err}"
        );
        assert!(!out.stdout.is_empty(), "{args:?} printed something");
        assert!(
            !err.contains("dsh-stdin-"),
            "the spool file stays hidden: {err}"
        );
    }
    // Standard input is never written to, spooled or not.
    let input = std::fs::read(sample("compacted.jsonl")).unwrap();
    dsh()
        .args(["compact", "--route", "deepseek/deepseek-chat", "-"])
        .write_stdin(input)
        .assert()
        .code(2);
}

/// Address space every bomb must stay within (256 MiB).
const BOMB_KIB: u64 = 256 << 10;

/// A header frame, then one frame of RLE blocks holding `newlines` bytes of
/// `\n` (a multiple of 128 KiB): a few KB on disk.
fn zstd_bomb(newlines: usize) -> Vec<u8> {
    zstd_rle_bomb(b'\n', newlines)
}

/// [`zstd_bomb`] of any byte.
fn zstd_rle_bomb(byte: u8, newlines: usize) -> Vec<u8> {
    const BLOCK: usize = 128 << 10;
    let header = format!("{}\n", session_lines()[0]);
    let mut out = zstd::encode_all(header.as_bytes(), 3).unwrap();
    // Magic, no content size or checksum, a 128 KiB window.
    out.extend([0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x38]);
    let blocks = newlines / BLOCK;
    for i in 0..blocks {
        let last = (i + 1 == blocks) as u32;
        let h = ((BLOCK as u32) << 3) | (1 << 1) | last;
        out.extend(&h.to_le_bytes()[..3]);
        out.push(byte);
    }
    out
}

fn refused_capped(args: &[&str], file: &str, stdin: Option<std::fs::File>) -> String {
    let mut c = crate::support::dsh_capped(BOMB_KIB);
    c.args(args);
    if let Some(f) = stdin {
        c.stdin(f);
    }
    let out = c.output().unwrap();
    let err = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(3), "{args:?}: {err}");
    assert!(err.contains(file), "{args:?} names {file}: {err}");
    err
}

#[test]
fn zstd_bombs_are_refused_within_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let b100m = write(&dir, "b100m.jsonl.zstd", &zstd_bomb(100 << 20));
    let p = b100m.to_str().unwrap();
    refused_capped(&["surface", p], "b100m.jsonl.zstd", None);
    // Past a small decompression limit: the limit is named.
    let bx = write(&dir, "bx.jsonl.zstd", &zstd_rle_bomb(b'x', 100 << 20));
    let err = refused_capped(
        &["--max-decompressed", "10M", "surface", bx.to_str().unwrap()],
        "bx.jsonl.zstd",
        None,
    );
    assert!(err.contains("exceeds the limit of 10485760 bytes"), "{err}");
    let b1g = write(&dir, "b1g.jsonl.zstd", &zstd_bomb(1 << 30));
    refused_capped(&["verify", b1g.to_str().unwrap()], "b1g.jsonl.zstd", None);
}

#[test]
fn endless_stdin_is_refused_within_bounded_memory() {
    let zero = std::fs::File::open("/dev/zero").unwrap();
    let err = refused_capped(&["--max-line-bytes", "8M", "surface", "-"], "-", Some(zero));
    assert!(err.contains("exceeds the limit of 8388608 bytes"), "{err}");
}

#[test]
fn a_many_log_scan_reports_a_bomb_and_carries_on() {
    let dir = tempfile::tempdir().unwrap();
    write(&dir, "bomb.jsonl.zstd", &zstd_bomb(100 << 20));
    let good = session_lines().join("\n") + "\n";
    write(&dir, "good.jsonl", good.as_bytes());
    let d = dir.path().to_str().unwrap();
    for cmd in ["verify", "measure"] {
        let out = crate::support::dsh_capped(BOMB_KIB)
            .args(["--max-decompressed", "10M", cmd, "--json", d])
            .output()
            .unwrap();
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_ne!(out.status.code(), Some(134), "{cmd}: {all}");
        assert!(all.contains("bomb.jsonl.zstd"), "{cmd}: {all}");
        assert!(all.contains("good.jsonl"), "{cmd} went on: {all}");
    }
}

#[test]
fn extreme_flag_values_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        &dir,
        "s.jsonl",
        (session_lines().join("\n") + "\n").as_bytes(),
    );
    let p = p.to_str().unwrap();
    let max = u64::MAX.to_string();
    let runs: [&[&str]; 6] = [
        &["compact", "--dry-run", "--wait", "1e300", p],
        &["prune", "--dry-run", "--wait", "1e300", p],
        &["compact", "--timeout", &max, p],
        &["compact", "--retry-delay", &max, p],
        &["prune", "--dry-run", "--time", "9007199254740993", p],
        &["compact", "--dry-run", "--wait", "-1", p],
    ];
    for args in runs {
        let out = dsh()
            .env("DEEPSEEK_API_KEY", "k")
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(!err.contains("internal error"), "{args:?}: {err}");
    }
}

#[test]
fn measure_context_window_zero_is_a_usage_error() {
    let out = dsh()
        .args(["measure", "--context-window", "0"])
        .arg(sample("coding-session.jsonl"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn an_empty_dsh_home_is_no_home_flag_error() {
    let out = dsh().env("DSH_HOME", "").arg("verify").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("--home <DIR>' but none"), "{err}");
}

#[test]
fn a_home_full_of_self_links_is_walked_once() {
    let home = tempfile::tempdir().unwrap();
    let sessions = home.path().join("sessions");
    let session = sessions.join("--proj--").join("s1");
    std::fs::create_dir_all(&session).unwrap();
    std::fs::copy(sample("compacted.jsonl"), session.join("session.jsonl")).unwrap();
    // 30 links back to the top: without a visited set the walk would enter
    // 30^4 (810,000) directories; 20 took about 10 s where this was found.
    for i in 0..30 {
        std::os::unix::fs::symlink(&sessions, sessions.join(format!("loop{i}"))).unwrap();
    }
    let started = std::time::Instant::now();
    let stdout = crate::support::stdout_ok(
        dsh()
            .args(["locks", "--json"])
            .arg(&sessions)
            .output()
            .unwrap(),
    );
    let v = dsh::Value::parse(stdout.trim()).unwrap();
    assert_eq!(
        v.get("logs").and_then(|l| l.as_arr()).map(|l| l.len()),
        Some(1)
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

#[test]
fn out_into_a_missing_directory_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("session.jsonl");
    std::fs::copy(sample("prune-open-turn.jsonl"), &log).unwrap();
    let before = std::fs::read(&log).unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    for out in [dir.path().join("nodir/x"), file.join("x")] {
        for cmd in [&["prune"][..], &["locks", "--release"], &["compact"]] {
            let o = dsh()
                .env("DEEPSEEK_API_KEY", "k")
                .args(cmd)
                .arg("--out")
                .arg(&out)
                .arg(&log)
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{cmd:?} --out {out:?}: {err}");
            assert!(!err.contains("internal error"), "{cmd:?}: {err}");
            assert!(
                err.contains("cannot write the copy there"),
                "{cmd:?}: {err}"
            );
        }
    }
    assert_eq!(std::fs::read(&log).unwrap(), before);
}

/// A log with a `user/message` whose `data` holds a value `depth` levels
/// deep (arrays or objects), as its last event or its first.
fn deep_log(dir: &tempfile::TempDir, depth: usize, objects: bool, last: bool) -> PathBuf {
    let nested = if objects {
        format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth))
    } else {
        format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
    };
    let msg = |seq: u64, extra: &str| {
        format!(
            r#"{{"type":"user/message","seq":{seq},"time":1,"data":{{"role":"user","content":[{{"type":"text","text":"hi"}}],"source":{{"kind":"user"}},"id":"u{seq}"{extra}}},"surfaceOp":"append"}}"#
        )
    };
    let deep = format!(r#","deep":{nested}"#);
    let (a, b) = if last {
        ("", deep.as_str())
    } else {
        (deep.as_str(), "")
    };
    let text = [
        r#"{"type":"session","version":0,"id":"deep","createdAt":1767225600000,"cwd":"/tmp","delegationDepth":0}"#.to_string(),
        msg(0, a),
        msg(1, b),
    ]
    .join("\n")
        + "\n";
    write(
        dir,
        &format!("d{depth}-{objects}-{last}.jsonl"),
        text.as_bytes(),
    )
}

/// Depths as the reference takes them (checked with the oracle): arrays
/// 600, 2000 and 3000 levels deep load, wherever the event is; objects 600
/// deep load, 2000 and 3000 deep make the reference's loader overflow its
/// stack, and the log is refused. A deep last event is never a torn tail,
/// and no writer advises truncating it.
#[test]
fn deep_nesting_is_accepted_and_refused_as_the_reference_does() {
    let dir = tempfile::tempdir().unwrap();
    for (depth, objects, accepted) in [
        (600, false, true),
        (2000, false, true),
        (3000, false, true),
        (600, true, true),
        (2000, true, false),
        (3000, true, false),
        (5000, false, false),
    ] {
        for last in [true, false] {
            let p = deep_log(&dir, depth, objects, last);
            let case = format!("depth {depth}, objects {objects}, last {last}");
            let out = dsh().args(["load", "--json"]).arg(&p).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            if accepted {
                assert_eq!(out.status.code(), Some(0), "{case}: {err}");
                let v = crate::support::json(&out.stdout);
                assert_eq!(
                    v.get("storedEvents").and_then(|n| n.as_count()),
                    Some(2),
                    "{case}"
                );
                assert!(!err.contains("torn"), "{case}: {err}");
            } else {
                assert_eq!(out.status.code(), Some(3), "{case}: {err}");
                assert!(
                    err.contains("nested deeper than the reference can load"),
                    "{case}: {err}"
                );
                assert!(err.contains("not a torn write"), "{case}: {err}");
            }
            let out = dsh()
                .args(["prune", "--dry-run", "--allow-closed-turn"])
                .arg(&p)
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!err.contains("truncate -s"), "{case}: {err}");
        }
    }
}

/// A named pipe that is fed `bytes` once, by a thread, when a reader opens it.
fn fifo_fed(dir: &tempfile::TempDir, name: &str, bytes: Vec<u8>) -> PathBuf {
    let p = dir.path().join(name);
    let st = std::process::Command::new("mkfifo")
        .arg(&p)
        .status()
        .unwrap();
    assert!(st.success());
    let q = p.clone();
    std::thread::spawn(move || {
        use std::io::Write as _;
        if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&q) {
            let _ = f.write_all(&bytes);
        }
    });
    p
}

/// A FIFO (as `<(cmd)` gives) or a character device is read as a stream,
/// like standard input (copied first by the commands that read twice); a
/// writer refuses it as not a regular file. Never "no such file".
#[test]
fn pipes_and_devices_are_read_as_streams_and_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let log = std::fs::read(sample("compacted.jsonl")).unwrap();
    let runs: [&[&str]; 7] = [
        &["load", "--json"],
        &["surface", "--json"],
        &["events"],
        &["measure"],
        &["verify"],
        &["messages", "--json"],
        &["prune", "--dry-run"],
    ];
    for (i, args) in runs.iter().enumerate() {
        let p = fifo_fed(&dir, &format!("pipe{i}"), log.clone());
        let out = dsh().args(*args).arg(&p).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(!out.stdout.is_empty(), "{args:?}");
    }
    // The same answer as from the file.
    let p = fifo_fed(&dir, "pipe-load", log.clone());
    let from_pipe = dsh().args(["surface", "--json"]).arg(&p).output().unwrap();
    let from_file = dsh()
        .args(["surface", "--json"])
        .arg(sample("compacted.jsonl"))
        .output()
        .unwrap();
    let strip = |o: &[u8]| {
        let mut v = crate::support::json(o);
        if let dsh::Value::Obj(m) = &mut v {
            m.retain(|(k, _)| !k.eq_str("file"));
        }
        v.to_json()
    };
    assert_eq!(strip(&from_pipe.stdout), strip(&from_file.stdout));
    // A character device: read, refused for what it holds.
    let out = dsh().args(["load", "/dev/null"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("header-less"), "{err}");
    // Writers refuse, before opening it.
    let p = dir.path().join("unfed");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&p)
            .status()
            .unwrap()
            .success()
    );
    for args in [
        &["prune"][..],
        &["locks", "--release"],
        &["prune", "--out", "x.jsonl"],
    ] {
        let out = dsh().args(args).arg(&p).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("not a regular file"), "{args:?}: {err}");
        assert!(!err.contains("no such file"), "{args:?}: {err}");
    }
    let out = dsh().args(["prune", "/dev/null"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("not a regular file"), "{err}");
}

/// The exit of a writer whose report cannot be printed (`>/dev/full`) says
/// the write landed; a full stderr (`2>/dev/full`) changes nothing.
#[test]
fn a_full_stdout_after_a_write_says_the_write_landed() {
    use crate::provider::{Reply, Server, deepseek_sse};
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
    };
    let dir = tempfile::tempdir().unwrap();
    // compact: the bracket is written, then printing fails.
    for json in [false, true] {
        let log = dir.path().join(format!("c{json}.jsonl"));
        std::fs::copy(sample("prune-closed.jsonl"), &log).unwrap();
        let before = std::fs::read(&log).unwrap().len();
        let server = Server::start(vec![Reply::Sse(deepseek_sse("A short summary."))]);
        let mut cmd = crate::support::dsh_process();
        cmd.env("DEEPSEEK_API_KEY", "k").args([
            "compact",
            "--retry-delay",
            "0",
            "--base-url",
            &server.base,
        ]);
        if json {
            cmd.arg("--json");
        }
        let out = cmd.arg(&log).stdout(full()).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(70), "{err}");
        assert!(err.contains("the write landed"), "{err}");
        assert!(err.contains("only printing the report failed"), "{err}");
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.len() > before && text.contains("\"compaction/end\""));
        drop(server.join());
    }
    // compact with a full stderr: written, exit 0.
    let log = dir.path().join("c2.jsonl");
    std::fs::copy(sample("prune-closed.jsonl"), &log).unwrap();
    let server = Server::start(vec![Reply::Sse(deepseek_sse("A short summary."))]);
    let out = crate::support::dsh_process()
        .env("DEEPSEEK_API_KEY", "k")
        .args(["compact", "--retry-delay", "0", "--base-url", &server.base])
        .arg(&log)
        .stderr(full())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        std::fs::read_to_string(&log)
            .unwrap()
            .contains("\"compaction/end\"")
    );
    drop(server.join());
    // locks --release.
    for (args, code) in [
        (&["--release", "--yes"][..], 70),
        (&["--release", "--yes", "--json"], 70),
    ] {
        let log = dir.path().join("l.jsonl");
        std::fs::copy(sample("locks-busy.jsonl"), &log).unwrap();
        let out = crate::support::dsh_process()
            .arg("locks")
            .args(args)
            .arg(&log)
            .stdout(full())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains("the write landed"), "{args:?}: {err}");
        assert!(
            std::fs::read_to_string(&log)
                .unwrap()
                .ends_with("\"data\":{}}\n")
        );
        let out = crate::support::dsh_process()
            .args(["locks", "--json"])
            .arg(&log)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "released: no busy lock left");
    }
    let log = dir.path().join("l.jsonl");
    std::fs::copy(sample("locks-busy.jsonl"), &log).unwrap();
    let out = crate::support::dsh_process()
        .args(["locks", "--release", "--yes"])
        .arg(&log)
        .stderr(full())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
}

/// An event without a readable `type` (a key spelled with an invalid UTF-8
/// byte, or none at all) is named as the reference names it: `"undefined"`;
/// a non-string type as JavaScript prints it.
#[test]
fn a_missing_event_type_is_undefined_as_in_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let head = session_lines()[0].clone() + "\n";
    for (line, want) in [
        (
            &b"{\"ty\xffpe\":\"user/message\",\"seq\":0,\"time\":1,\"data\":{}}\n"[..],
            "\"undefined\"",
        ),
        (b"{\"seq\":0,\"time\":1,\"data\":{}}\n", "\"undefined\""),
        (b"{\"type\":7,\"seq\":0,\"time\":1,\"data\":{}}\n", "\"7\""),
    ] {
        let mut bytes = head.as_bytes().to_vec();
        bytes.extend_from_slice(line);
        let p = write(&dir, "t.jsonl", &bytes);
        let out = dsh().args(["load"]).arg(&p).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{err}");
        assert!(
            err.contains(&format!("contains event type {want}")),
            "{err}"
        );
    }
}
