//! Reading and folding: `dsh surface`, `messages`, `header`, `events` on the
//! bundled samples, every input form, and `--lenient`.

use dsh::json::Value;
use predicates::prelude::*;

use crate::support::{dsh, json_of, sample};

const SESSION_NODES: [u64; 16] = [
    4, 26, 28, 49, 51, 53, 63, 70, 88, 90, 92, 102, 104, 114, 121, 135,
];

fn seqs(v: &Value<'_>, key: &str) -> Vec<u64> {
    v.get(key)
        .and_then(|a| a.as_arr())
        .map(|a| a.iter().map(|x| x.as_count().unwrap()).collect())
        .unwrap_or_default()
}

#[test]
fn surface_of_a_coding_session() {
    let p = sample("coding-session.jsonl");
    let (v, code) = json_of(&["surface", "--json", p.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert_eq!(seqs(&v, "nodes"), SESSION_NODES);
    assert_eq!(v.get("replaceGeneration").unwrap().as_count(), Some(0));
    // Heuristic prices per node: the user prompt has an emoji (2 UTF-16 units).
    let tokens: Vec<u64> = v
        .get("positions")
        .unwrap()
        .as_arr()
        .unwrap()
        .iter()
        .map(|p| p.get("tokens").unwrap().as_count().unwrap())
        .collect();
    assert_eq!(
        tokens,
        [
            27, 62, 219, 54, 138, 44, 49, 25, 56, 23, 77, 15, 153, 38, 28, 42
        ]
    );
}

#[test]
fn zstd_artifact_reads_like_the_plain_log() {
    let plain = json_of(&[
        "surface",
        "--json",
        sample("coding-session.jsonl").to_str().unwrap(),
    ])
    .0;
    let z = json_of(&[
        "surface",
        "--json",
        sample("coding-session.jsonl.zstd").to_str().unwrap(),
    ])
    .0;
    // The same document but for the file it names.
    let zpath = sample("coding-session.jsonl.zstd").display().to_string();
    let ppath = sample("coding-session.jsonl").display().to_string();
    assert!(z.to_json().contains(&zpath));
    assert_eq!(plain.to_json(), z.to_json().replace(&zpath, &ppath));
    let m1 = dsh()
        .args(["messages", "--json"])
        .arg(sample("coding-session.jsonl"))
        .output()
        .unwrap()
        .stdout;
    let m2 = dsh()
        .args(["messages", "--json"])
        .arg(sample("coding-session.jsonl.zstd"))
        .output()
        .unwrap()
        .stdout;
    assert_eq!(m1, m2);
}

#[test]
fn stdin_reads_plain_and_zstd() {
    for name in ["coding-session.jsonl", "coding-session.jsonl.zstd"] {
        let bytes = std::fs::read(sample(name)).unwrap();
        let out = dsh()
            .args(["surface", "--json", "-"])
            .write_stdin(bytes)
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}");
        let v = Value::parse(std::str::from_utf8(&out.stdout).unwrap()).unwrap();
        assert_eq!(seqs(&v, "nodes"), SESSION_NODES, "{name}");
    }
}

#[test]
fn compaction_and_prune_replace_at_the_shadowed_position() {
    let (v, _) = json_of(&[
        "surface",
        "--json",
        sample("compacted.jsonl").to_str().unwrap(),
    ]);
    assert_eq!(seqs(&v, "nodes"), [43, 38, 52]);
    assert_eq!(v.get("replaceGeneration").unwrap().as_count(), Some(2));
    let reps = v.get("replacements").unwrap().as_arr().unwrap();
    assert_eq!(seqs(&reps[0], "shadowedSeqs"), [21]);
    // The second replacement covers the pruned node 40 at position 2, not seqs 4..31.
    assert_eq!(seqs(&reps[1], "shadowedSeqs"), [4, 19, 40, 31]);
    let (m, _) = json_of(&[
        "messages",
        "--json",
        sample("compacted.jsonl").to_str().unwrap(),
    ]);
    let first = &m.as_arr().unwrap()[0];
    assert_eq!(
        first
            .get("source")
            .unwrap()
            .get("plugin")
            .unwrap()
            .as_str()
            .unwrap(),
        "compact"
    );
}

#[test]
fn messages_are_the_stored_messages_in_surface_order() {
    let out = dsh()
        .args(["messages", "--json"])
        .arg(sample("coding-session.jsonl"))
        .output()
        .unwrap();
    let v = Value::parse(std::str::from_utf8(&out.stdout).unwrap()).unwrap();
    let ids: Vec<String> = v
        .as_arr()
        .unwrap()
        .iter()
        .map(|m| m.get("id").unwrap().as_str().unwrap().into_owned())
        .collect();
    assert_eq!(ids.len(), 16);
    assert_eq!(ids[0], "msg-u-1");
    assert_eq!(ids[2], "msg-r-call_test_1");
    assert_eq!(ids[15], "msg-a-135");
    // Exactly as stored: the line's message object, byte for byte.
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with(
        r#"[{"content":[{"type":"text","text":"The parser test `unicode_keys` fails."#
    ));
    // The readable view names roles and tool calls.
    dsh()
        .arg("messages")
        .arg(sample("coding-session.jsonl"))
        .assert()
        .success()
        .stdout(predicate::str::contains("→ call call_test_1 bash"))
        .stdout(predicate::str::contains("16 message(s)"));
}

#[test]
fn header_fold_and_context() {
    let (v, code) = json_of(&[
        "header",
        "--json",
        sample("coding-session.jsonl").to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    assert_eq!(v.get("headerSeq").unwrap().as_count(), Some(5));
    assert_eq!(
        v.get("context")
            .unwrap()
            .get("contextWindow")
            .unwrap()
            .as_count(),
        Some(128000)
    );
    let h = v.get("header").unwrap();
    let tools: Vec<String> = h
        .get("tools")
        .unwrap()
        .as_arr()
        .unwrap()
        .iter()
        .map(|t| t.get("name").unwrap().as_str().unwrap().into_owned())
        .collect();
    assert_eq!(tools, ["bash", "read_file"]);
    assert!(
        h.get("system")
            .unwrap()
            .as_str()
            .unwrap()
            .starts_with("You are dsh-agent")
    );
    dsh()
        .arg("header")
        .arg(sample("coding-session.jsonl"))
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "deepseek-official/deepseek-v4-flash",
        ))
        .stdout(predicate::str::contains("128,000"));
}

#[test]
fn torn_tail_is_reported_and_the_open_turn_closed_in_memory() {
    let p = sample("torn.jsonl");
    let before = std::fs::read(&p).unwrap();
    let out = dsh().args(["surface", "--json"]).arg(&p).output().unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("torn final line"), "{stderr}");
    assert!(stderr.contains("4 synthetic closer"), "{stderr}");
    let v = Value::parse(std::str::from_utf8(&out.stdout).unwrap()).unwrap();
    assert_eq!(seqs(&v, "nodes"), [4, 24, 26, 27]);
    // Reading never modifies the file.
    assert_eq!(before, std::fs::read(&p).unwrap());
    // The closers are marked synthetic in the transcript.
    dsh()
        .args(["events", "--type", "tool/result"])
        .arg(&p)
        .assert()
        .success()
        .stdout(predicate::str::contains("synthetic").count(2));
}

#[test]
fn refused_log_exits_3_with_a_json_error() {
    let p = sample("refused.jsonl");
    let (v, code) = json_of(&["surface", "--json", p.to_str().unwrap()]);
    assert_eq!(code, 3);
    let err = v.get("error").unwrap().as_str().unwrap().into_owned();
    assert_eq!(
        err,
        "corrupt session log: seq gap in committed region at line 12 (expected 14, got 15)"
    );
    assert_eq!(v.get("line").unwrap().as_count(), Some(13));
    dsh()
        .arg("surface")
        .arg(&p)
        .assert()
        .code(3)
        .stderr(predicate::str::contains("refused.jsonl"))
        .stderr(predicate::str::contains("line 13"));
}

#[test]
fn events_filters_by_type_and_turn() {
    let p = sample("coding-session.jsonl");
    let out = dsh()
        .args(["events", "--json", "--type", "tool/", "--turn", "2"])
        .arg(&p)
        .output()
        .unwrap();
    assert!(out.status.success());
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| Value::parse(l).unwrap().into_owned())
        .collect();
    let got: Vec<(u64, String)> = lines
        .iter()
        .map(|l| {
            (
                l.get("seq").unwrap().as_count().unwrap(),
                l.get("type").unwrap().as_str().unwrap().into_owned(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (89, "tool/call".into()),
            (90, "tool/result".into()),
            (91, "tool/call".into()),
            (92, "tool/result".into()),
            (103, "tool/call".into()),
            (104, "tool/result".into())
        ]
    );
    assert!(
        lines
            .iter()
            .all(|l| l.get("turn").unwrap().as_count() == Some(2))
    );
    // Shadowed nodes are marked in the compacted sample.
    dsh()
        .arg("events")
        .arg(sample("compacted.jsonl"))
        .assert()
        .success()
        .stdout(predicate::str::contains("shadowed").count(5));
}

#[test]
fn events_json_rows_hold_each_event_as_json_stringify_writes_it() {
    // Lines written otherwise than `JSON.stringify` would (spaces, a `\u`
    // escape of a plain letter, `1.0`) among canonical ones: every row's
    // event is the serialised value, copied from the line or written again.
    let text = std::fs::read_to_string(sample("coding-session.jsonl")).unwrap();
    let original: Vec<String> = text.lines().map(str::to_string).collect();
    let mut lines = original.clone();
    // A legacy `turn/start` trigger, upgraded away in memory: the row shows
    // the upgraded event, not the line.
    assert!(lines[2].ends_with("\"data\":{\"turn\":1}}"));
    lines[2] = lines[2].replacen(
        "{\"turn\":1}",
        "{\"turn\":1,\"trigger\":{\"kind\":\"user\"}}",
        1,
    );
    lines[3] = lines[3].replacen("\"seq\":", "\"seq\" :  ", 1);
    lines[5] = lines[5].replacen("\"user/message\"", "\"\\u0075ser/message\"", 1);
    lines[4] = lines[4].replacen("\"turn\":1", "\"turn\":1.0", 1);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("respelled.jsonl");
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    let stdout = crate::support::stdout_ok(
        dsh()
            .args(["events", "--json", "--all"])
            .arg(&p)
            .output()
            .unwrap(),
    );
    let mut respelled = 0;
    for row in stdout.lines() {
        let v = Value::parse(row).unwrap();
        let line_no = v.get("line").unwrap().as_count().unwrap() as usize;
        let source = &lines[line_no - 1];
        let parsed = Value::parse(source).unwrap();
        if parsed.has("seq0") {
            continue; // a packed row: its chunks are built from it
        }
        let expected = if line_no == 3 {
            original[2].clone()
        } else {
            parsed.to_json()
        };
        // The row's event member, as written in the row.
        let at = row.find(",\"event\":").unwrap() + ",\"event\":".len();
        let end = row.rfind(",\"file\":").unwrap();
        assert_eq!(&row[at..end], expected, "line {line_no}");
        if expected != *source {
            respelled += 1;
        }
    }
    assert_eq!(respelled, 4, "the respelled and upgraded lines are shown");
}

#[test]
fn session_directory_id_and_cwd_resolve_under_dsh_home() {
    let home = tempfile::tempdir().unwrap();
    let dir = home
        .path()
        .join("sessions/--home-dev-dsh-demo--/sample-coding-session");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        sample("coding-session.jsonl.zstd"),
        dir.join("session.jsonl.zstd"),
    )
    .unwrap();
    for arg in [
        dir.to_str().unwrap(),
        "sample-coding-session",
        "/home/dev/dsh-demo",
    ] {
        let stdout = crate::support::stdout_ok(
            dsh()
                .env("DSH_HOME", home.path())
                .args(["surface", "--json", arg])
                .output()
                .unwrap(),
        );
        assert_eq!(
            seqs(&Value::parse(&stdout).unwrap(), "nodes"),
            SESSION_NODES,
            "{arg}"
        );
    }
    dsh()
        .env("DSH_HOME", home.path())
        .args(["surface", "no-such-session"])
        .assert()
        .code(3)
        .stderr(predicate::str::contains("no session with that id"));
}

#[test]
fn lenient_accepts_a_header_without_delegation_depth() {
    let text = std::fs::read_to_string(sample("coding-session.jsonl")).unwrap();
    let text = text.replacen(",\"delegationDepth\":0", "", 1);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("old.jsonl");
    std::fs::write(&p, text).unwrap();
    dsh()
        .args(["surface", "--json"])
        .arg(&p)
        .assert()
        .code(3)
        .stdout(predicate::str::contains(
            "first line is not a session header",
        ));
    dsh()
        .args(["--lenient", "surface", "--json"])
        .arg(&p)
        .assert()
        .success()
        .stderr(predicate::str::contains("no delegationDepth; assumed 0"));
}

#[test]
fn surface_table_is_readable() {
    dsh()
        .arg("surface")
        .arg(sample("compacted.jsonl"))
        .assert()
        .success()
        .stdout(predicate::str::contains("[4, 19, 40, 31]"))
        .stdout(predicate::str::contains("3 node(s)"));
}

#[test]
fn lenient_decodes_range_encoded_sources() {
    let text = std::fs::read_to_string(sample("coding-session.jsonl")).unwrap();
    // The first assistant message cites a contiguous run of chunks: write it as a range.
    let line = text
        .lines()
        .find(|l| l.contains("\"type\":\"assistant/message\""))
        .unwrap();
    let v = Value::parse(line).unwrap();
    let src: Vec<u64> = v
        .get("sourceEventSeqs")
        .unwrap()
        .as_arr()
        .unwrap()
        .iter()
        .map(|x| x.as_count().unwrap())
        .collect();
    assert!(src.windows(2).all(|w| w[1] == w[0] + 1));
    let plain = format!(
        "\"sourceEventSeqs\":{}",
        v.get("sourceEventSeqs").unwrap().to_json()
    );
    let ranged = format!("\"sourceEventSeqs\":[[{},{}]]", src[0], src[src.len() - 1]);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("ranges.jsonl");
    std::fs::write(&p, text.replacen(&plain, &ranged, 1)).unwrap();
    dsh().args(["surface", "--json"]).arg(&p).assert().code(3);
    let out = dsh()
        .args(["--lenient", "surface", "--json"])
        .arg(&p)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("range-encoded sourceEventSeqs decoded"));
    assert_eq!(
        seqs(
            &Value::parse(std::str::from_utf8(&out.stdout).unwrap()).unwrap(),
            "nodes"
        ),
        SESSION_NODES
    );
}

#[test]
fn a_reader_that_goes_away_is_not_an_error() {
    use std::io::Read;
    // A message far larger than a pipe's buffer, so the writer is still
    // writing when the reader closes its end.
    let big = "x".repeat(4 << 20);
    let text: String = std::fs::read_to_string(sample("coding-session.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let l = if l.contains("\"type\":\"user/message\"") {
                l.replacen("\"text\":\"", &format!("\"text\":\"{big}"), 1)
            } else {
                l.to_string()
            };
            l + "\n"
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("big.jsonl");
    std::fs::write(&log, text).unwrap();
    for args in [
        &["messages", "--json"][..],
        &["messages"][..],
        &["events"][..],
    ] {
        let mut child = crate::support::dsh_process()
            .args(args)
            .arg(&log)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut head = [0u8; 16];
        child.stdout.take().unwrap().read_exact(&mut head).unwrap();
        // The read end is dropped here.
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert!(
            out.stderr.is_empty(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn io_failures_keep_the_os_error_as_their_source() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.jsonl");
    let err = dsh::log::load(
        &dsh::LogSource::File(missing),
        &dsh::LoadOptions::default(),
        &mut |_: &dsh::Event<'_>, _: &dsh::log::Folded<'_>| {},
    )
    .unwrap_err();
    assert_eq!(err.kind, dsh::LoadErrorKind::Io);
    assert_eq!(err.io_kind(), Some(std::io::ErrorKind::NotFound));
    let source = std::error::Error::source(&err).expect("an io source");
    let io = source.downcast_ref::<std::io::Error>().unwrap();
    assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
    assert!(
        err.message().starts_with("cannot open the log: "),
        "{}",
        err.message()
    );
}

#[test]
fn a_line_that_never_ends_is_refused_at_the_line_limit() {
    // 2 MiB without a newline on stdin, against a 1 MiB line limit: a clear
    // refusal with exit 3, not unbounded growth.
    let endless = vec![b'x'; 2 << 20];
    let out = crate::support::dsh()
        .args(["--max-line-bytes", "1M", "surface", "-"])
        .write_stdin(endless)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("exceeds the limit of 1048576 bytes"), "{err}");
}
