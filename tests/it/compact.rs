//! `dsh compact` end to end against the loopback provider in `support`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use assert_cmd::Command;
use serde_json::{Value as J, json};

use crate::provider::{Reply, Server, anthropic_sse, deepseek_sse};

pub(crate) const KEY: &str = "sk-test-SECRET-9f8e7d";
pub(crate) const SUMMARY: &str = "## Primary Request and Intent\n- Explain the build.\n\n## Key Technical Concepts\n- cargo\n\n## Files and Code\n- (none)\n\n## Errors and Fixes\n- (none)\n\n## Pending Jobs\n- (none)\n\n## Current Work\n- Explaining.\n\n## Next Step\n- (none)\n\n## Critical Context\n- (none)";

fn header() -> J {
    json!({"type":"session","version":0,"id":"s-compact","createdAt":0,"cwd":"/tmp","delegationDepth":0})
}

/// A closed turn: user prompt, a read call and its (long) result, an answer.
pub(crate) fn closed_log() -> Vec<J> {
    let src = json!({"kind":"model","provider":"deepseek-official","model":"deepseek-v4-flash"});
    let long: String = (1..=60)
        .map(|i| format!("line {i}: fn build() {{ cargo(); }}\n"))
        .collect();
    let mut ev = vec![
        json!({"type":"turn/start","data":{"turn":1}}),
        json!({"type":"step/start","data":{"turn":1,"step":1}}),
        json!({"type":"user/message","data":{"role":"user","content":[{"type":"text","text":"Explain how the build works, reading build.rs first. ".repeat(8)}],"source":{"kind":"user"},"id":"u1"},"surfaceOp":"append"}),
        json!({"type":"request/header","data":{"header":{"config":{"provider":"deepseek-official","model":"deepseek-v4-flash"},"system":"You are a careful coding agent.","tools":[{"name":"read","description":"Read a file.","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}]},"reason":"initial"}}),
        json!({"type":"assistant/message","data":{"turn":1,"step":1,"message":{"role":"assistant","content":[{"type":"tool-call","id":"call_1","name":"read","arguments":"{\"path\":\"build.rs\"}"}],"source":src,"id":"a1"}},"surfaceOp":"append"}),
        json!({"type":"tool/call","data":{"turn":1,"step":1,"callId":"call_1","name":"read","arguments":"{\"path\":\"build.rs\"}"}}),
        json!({"type":"tool/result","data":{"turn":1,"step":1,"message":{"role":"user","content":[{"type":"tool-result","toolCallId":"call_1","content":[{"type":"text","text":long}]}],"source":{"kind":"tool","callId":"call_1"},"id":"t1"}},"surfaceOp":"append"}),
        json!({"type":"step/end","data":{"turn":1,"step":1}}),
        json!({"type":"step/start","data":{"turn":1,"step":2}}),
        json!({"type":"assistant/message","data":{"turn":1,"step":2,"message":{"role":"assistant","content":[{"type":"text","text":"It runs cargo."}],"source":src,"id":"a2"}},"surfaceOp":"append"}),
        json!({"type":"step/end","data":{"turn":1,"step":2}}),
        json!({"type":"turn/end","data":{"turn":1,"reason":{"kind":"completed"}}}),
    ];
    for (i, e) in ev.iter_mut().enumerate() {
        let o = e.as_object_mut().unwrap();
        o.insert("seq".into(), json!(i));
        o.insert("time".into(), json!(1_700_000_000_000u64 + i as u64));
    }
    ev
}

pub(crate) fn write_log(dir: &Path, name: &str, events: &[J]) -> PathBuf {
    let p = dir.join(name);
    let mut s = header().to_string();
    s.push('\n');
    for e in events {
        s.push_str(&e.to_string());
        s.push('\n');
    }
    std::fs::write(&p, s).unwrap();
    p
}

fn lines(p: &Path) -> Vec<J> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// dsh in the shared test environment, with the test key set.
fn dsh() -> Command {
    let mut c = crate::support::dsh();
    c.env("DEEPSEEK_API_KEY", KEY);
    c
}

fn surface_nodes(p: &Path) -> J {
    let stdout =
        crate::support::stdout_ok(dsh().args(["surface", "--json"]).arg(p).output().unwrap());
    let v: J = serde_json::from_str(&stdout).unwrap();
    v["nodes"].clone()
}

struct Run {
    code: i32,
    json: J,
    stdout: String,
    stderr: String,
}

fn compact(log: &Path, base: &str, extra: &[&str]) -> Run {
    let out = dsh()
        .args([
            "compact",
            "--json",
            "--base-url",
            base,
            "--retry-delay",
            "0",
        ])
        .args(extra)
        .arg(log)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    Run {
        code: out.status.code().unwrap_or(-1),
        json: serde_json::from_str(stdout.trim()).unwrap_or(J::Null),
        stdout,
        stderr: String::from_utf8_lossy(&out.stderr).to_string(),
    }
}

/// Manual compaction of `closed_log()` (12 events, no end-seed): a new
/// lifecycle, so `session/end-seed` at seq 12, then the bracket from 13.
fn assert_manual_committed(log: &Path) {
    let all = lines(log);
    assert_eq!(
        all[12],
        json!({"type":"session/end-seed","seq":12,"time":all[12]["time"],"data":{}})
    );
    assert_committed(log, 13, J::Null);
}

fn assert_committed(log: &Path, before: usize, turn: J) {
    let all = lines(log);
    let new = &all[before..];
    let types: Vec<&str> = new.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "compaction/start",
            "compaction/summary",
            "user/message",
            "compaction/end"
        ]
    );
    let cid = new[0]["data"]["compactionId"].as_str().unwrap();
    assert_eq!(cid.len(), 36);
    assert_eq!(new[0]["data"], json!({"compactionId": cid, "turn": turn}));
    let s = &new[1]["data"];
    assert_eq!(s["shadowedSeqs"], json!([2, 4, 6]));
    assert_eq!(s["shadowedRange"], json!({"start": 2, "end": 6}));
    assert_eq!(s["llmStreamCall"], json!(true));
    assert_eq!(s["summary"], json!([{"type":"text","text":SUMMARY}]));
    assert_eq!(s["maxTokens"], json!(8192));
    let cp = &new[2];
    let start = before as u64;
    assert_eq!(cp["sourceEventSeqs"], json!([start, start + 1, 2, 4, 6]));
    assert_eq!(cp["surfaceOp"], json!({"op":"replace","start":2,"end":6}));
    assert_eq!(
        cp["data"]["source"],
        json!({"kind":"plugin","plugin":"compact","compactionId":cid})
    );
    let content = cp["data"]["content"].as_array().unwrap();
    assert_eq!(content.len(), 3);
    assert!(
        content[0]["text"]
            .as_str()
            .unwrap()
            .ends_with("\n\n<compacted-summary>")
    );
    assert_eq!(content[1]["text"], json!(SUMMARY));
    assert_eq!(content[2]["text"], json!("</compacted-summary>"));
    assert_eq!(new[3]["data"], json!({"compactionId": cid, "turn": turn}));
    assert_eq!(surface_nodes(log), json!([start + 2, 9]));
}

#[test]
fn manual_compaction_commits_the_bracket_deepseek() {
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path(), "s.jsonl", &closed_log());
    let server = Server::start(vec![Reply::Sse(deepseek_sse(SUMMARY))]);
    let r = compact(&log, &server.base, &[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.json["mode"], json!("manual"));
    assert_eq!(r.json["outcome"], json!("compacted"));
    let b = &r.json["brackets"][0];
    assert!(b["shadowedTokenCount"].as_u64().unwrap() > b["checkpointTokens"].as_u64().unwrap());
    assert_eq!(
        b["usage"],
        json!({"inputTokens":172,"outputTokens":140,"cacheReadTokens":3328,"reasoningTokens":6})
    );
    assert_manual_committed(&log);
    assert_eq!(r.json["lifecycle"], json!("resume"));
    assert_eq!(r.json["endSeedSeq"], json!(12));
    assert_eq!(r.json["appendedSeqs"], json!([12, 13, 14, 15, 16]));
    // The result passes the reference's invariants (a standalone bracket
    // outside any turn, after the new lifecycle's marker).
    let v = dsh().args(["verify", "-q"]).arg(&log).output().unwrap();
    assert_eq!(
        v.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&v.stdout)
    );
    let reqs = server.join();
    assert_eq!(reqs.len(), 1);
    let q = &reqs[0];
    assert_eq!(
        (q.method.as_str(), q.path.as_str()),
        ("POST", "/chat/completions")
    );
    assert_eq!(
        q.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(q.header("x-deepseek-harness-compact"), Some("1"));
    assert_eq!(q.header("x-deepseek-harness-session-id"), Some("s-compact"));
    assert_eq!(q.header("accept"), Some("text/event-stream"));
    let body: J = serde_json::from_slice(&q.body).unwrap();
    let msgs = body["messages"].as_array().unwrap();
    let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "user"]);
    assert_eq!(
        msgs[4]["content"].as_str().unwrap().encode_utf16().count(),
        1802
    );
    assert_eq!(body["max_tokens"], json!(8192));
    assert_eq!(body["reasoning_effort"], json!("high"));
    assert!(!r.stdout.contains(KEY) && !r.stderr.contains(KEY));
    assert!(!std::fs::read_to_string(&log).unwrap().contains(KEY));
}

#[test]
fn manual_compaction_commits_the_bracket_anthropic() {
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path(), "s.jsonl", &closed_log());
    let server = Server::start(vec![Reply::Sse(anthropic_sse(SUMMARY))]);
    let r = compact(&log, &server.base, &["--kind", "anthropic"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_manual_committed(&log);
    let all = lines(&log);
    assert_eq!(
        all[14]["data"]["usage"],
        json!({"inputTokens":172,"outputTokens":140,"cacheReadTokens":3328})
    );
    assert_eq!(
        all[14]["data"]["rawOutput"][0],
        json!({"type":"reasoning","text":"plan"})
    );
    let q = &server.join()[0];
    assert_eq!(q.path, "/v1/messages");
    assert_eq!(q.header("x-api-key"), Some(KEY));
    assert_eq!(q.header("anthropic-version"), Some("2023-06-01"));
    let body: J = serde_json::from_slice(&q.body).unwrap();
    assert_eq!(body["system"], json!("You are a careful coding agent."));
    assert_eq!(body["tools"][0]["input_schema"]["type"], json!("object"));
}

/// A failure must close the bracket with exactly this error, leave the
/// surface as it was, keep the log loadable and the lock free, and never
/// show the key.
fn assert_failed(log: &Path, r: &Run, before_nodes: &J, error: &str, code: i32) {
    assert_eq!(r.code, code, "{}{}", r.stdout, r.stderr);
    let all = lines(log);
    let new = &all[12..];
    let types: Vec<&str> = new.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        ["session/end-seed", "compaction/start", "compaction/end"],
        "{error}"
    );
    assert_eq!(new[2]["data"]["error"], json!(error));
    assert_eq!(new[2]["data"]["turn"], J::Null);
    assert_eq!(
        new[1]["data"]["compactionId"],
        new[2]["data"]["compactionId"]
    );
    assert_eq!(r.json["brackets"][0]["startSeq"], json!(13));
    assert_eq!(r.json["brackets"][0]["endSeq"], json!(14));
    assert_eq!(&surface_nodes(log), before_nodes);
    assert_eq!(r.json["error"]["message"], json!(error));
    for text in [&r.stdout, &r.stderr, &std::fs::read_to_string(log).unwrap()] {
        assert!(!text.contains(KEY), "the key leaked");
    }
    // The lock is free again: a dry run selects the same range.
    let again = dsh()
        .args(["compact", "--dry-run", "--json"])
        .arg(log)
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(0));
}

fn fault(
    replies: Vec<Reply>,
    extra: &[&str],
    error: &str,
    code: i32,
) -> Vec<crate::provider::Captured> {
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path(), "s.jsonl", &closed_log());
    let before = surface_nodes(&log);
    let server = Server::start(replies);
    let r = compact(&log, &server.base, extra);
    assert_failed(&log, &r, &before, error, code);
    server.join()
}

fn status(code: u16, body: J) -> Reply {
    Reply::Status(code, vec![], body.to_string())
}

#[test]
fn fault_server_error_retried_then_recorded() {
    let e = || {
        status(
            500,
            json!({"error":{"message":"upstream exploded","type":"server_error"}}),
        )
    };
    let reqs = fault(
        vec![e(), e(), e()],
        &["--retries", "2"],
        "upstream exploded",
        5,
    );
    assert_eq!(reqs.len(), 3, "one attempt plus two retries");
}

#[test]
fn fault_rate_limit_then_success() {
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path(), "s.jsonl", &closed_log());
    let server = Server::start(vec![
        Reply::Status(
            429,
            vec![("retry-after".into(), "0".into())],
            json!({"error":{"message":"slow down"}}).to_string(),
        ),
        Reply::Sse(deepseek_sse(SUMMARY)),
    ]);
    let r = compact(&log, &server.base, &[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.json["brackets"][0]["attempts"], json!(2));
    assert_manual_committed(&log);
    assert_eq!(server.join().len(), 2);
}

#[test]
fn fault_idle_timeout() {
    let reqs = fault(
        vec![Reply::Stall(Duration::from_secs(3))],
        &["--timeout", "1"],
        "DeepSeek stream idle timeout after 1000ms",
        5,
    );
    assert_eq!(reqs.len(), 1, "a timeout is not retried");
}

#[test]
fn fault_connection_lost_mid_stream() {
    let head = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"## Primary\"}}]}\n\n";
    fault(
        vec![Reply::CutChunked(head.into())],
        &[],
        "DeepSeek connection lost while streaming the reply: Error while decoding chunks",
        5,
    );
}

#[test]
fn fault_malformed_sse() {
    fault(
        vec![Reply::Sse("data: {oops\n\n".into())],
        &[],
        "malformed SSE payload: {oops",
        5,
    );
}

#[test]
fn fault_stream_without_done() {
    let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"},\"finish_reason\":\"stop\"}]}\n\n";
    fault(
        vec![Reply::Sse(body.into())],
        &[],
        "SSE stream ended without [DONE]",
        5,
    );
}

#[test]
fn fault_empty_reply() {
    fault(
        vec![Reply::Sse("data: [DONE]\n\n".into())],
        &[],
        "model returned a completed response with no content",
        5,
    );
}

#[test]
fn fault_reasoning_only() {
    let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"hmm\",\"content\":\" \\n\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    fault(
        vec![Reply::Sse(body.into())],
        &[],
        "summarization produced no text summary content",
        5,
    );
}

#[test]
fn fault_truncated_at_token_cap() {
    let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"## Primary\"},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n";
    fault(
        vec![Reply::Sse(body.into())],
        &[],
        "summarization truncated at the token cap (incomplete checkpoint)",
        5,
    );
}

#[test]
fn fault_summary_larger_than_source() {
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path(), "s.jsonl", &closed_log());
    let before = surface_nodes(&log);
    let shadowed: u64 = {
        let out = dsh()
            .args(["surface", "--json"])
            .arg(&log)
            .output()
            .unwrap();
        let v: J = serde_json::from_slice(&out.stdout).unwrap();
        v["positions"].as_array().unwrap()[..3]
            .iter()
            .map(|p| p["tokens"].as_u64().unwrap())
            .sum()
    };
    let big = "x".repeat(12_000);
    let server = Server::start(vec![Reply::Sse(deepseek_sse(&big))]);
    let r = compact(&log, &server.base, &[]);
    // 98 framing + q(12000)+4 = 3102
    let msg = format!(
        "summary is not smaller than the shadowed content (3102 estimated framed tokens >= {shadowed})"
    );
    assert_failed(&log, &r, &before, &msg, 5);
    server.join();
}

#[test]
fn fault_context_window_exceeded() {
    let msg = "This model's maximum context length is 131072 tokens. However, you requested 140000 tokens.";
    fault(
        vec![status(
            400,
            json!({"error":{"message":msg,"type":"invalid_request_error"}}),
        )],
        &[],
        msg,
        5,
    );
}

#[test]
fn fault_unauthorized_never_shows_the_key() {
    let body = json!({"error":{"message":format!("Authentication Fails, your api key: {KEY} is invalid"),"type":"authentication_error"}});
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path(), "s.jsonl", &closed_log());
    let before = surface_nodes(&log);
    let server = Server::start(vec![status(401, body)]);
    let r = compact(&log, &server.base, &[]);
    assert_failed(
        &log,
        &r,
        &before,
        "Authentication Fails, your api key: [REDACTED] is invalid",
        5,
    );
    assert!(r.stderr.contains("$DEEPSEEK_API_KEY"), "{}", r.stderr);
    assert_eq!(r.json["error"]["code"], json!("AUTH"));
    assert_eq!(server.join().len(), 1, "401 is not retried");
}

#[test]
fn missing_key_is_a_usage_error_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path(), "s.jsonl", &closed_log());
    let out = dsh()
        .env_remove("DEEPSEEK_API_KEY")
        .args(["compact", "--base-url", "http://127.0.0.1:9"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("$DEEPSEEK_API_KEY"));
    assert_eq!(lines(&log).len(), 12);
}

#[test]
fn dry_run_shows_range_and_request_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path(), "s.jsonl", &closed_log());
    let bytes = std::fs::read(&log).unwrap();
    let out = dsh()
        .args([
            "compact",
            "--dry-run",
            "--json",
            "--base-url",
            "http://127.0.0.1:9",
        ])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: J = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["outcome"], json!("dry-run"));
    let b = &v["brackets"][0];
    assert_eq!(b["shadowedSeqs"], json!([2, 4, 6]));
    assert_eq!(b["request"]["path"], json!("/chat/completions"));
    assert_eq!(
        b["request"]["headers"]["authorization"],
        json!("Bearer [REDACTED]")
    );
    assert_eq!(
        b["request"]["body"]["messages"].as_array().unwrap().len(),
        5
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains(KEY));
    assert_eq!(std::fs::read(&log).unwrap(), bytes);
}

#[test]
fn out_writes_a_copy_and_leaves_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path(), "s.jsonl", &closed_log());
    let bytes = std::fs::read(&log).unwrap();
    let copy = dir.path().join("copy.jsonl");
    let server = Server::start(vec![Reply::Sse(deepseek_sse(SUMMARY))]);
    let r = compact(&log, &server.base, &["--out", copy.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(std::fs::read(&log).unwrap(), bytes);
    assert_manual_committed(&copy);
    server.join();
}

/// The complete, parseable event lines of a log that may be being written
/// (a unit in flight shows as a line starting with a NUL hole).
fn visible_lines(p: &Path) -> usize {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .skip(1)
        .take_while(|l| serde_json::from_str::<J>(l).is_ok())
        .count()
}

#[test]
fn kill_between_start_and_end_leaves_a_held_lock_with_a_way_out() {
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path(), "s.jsonl", &closed_log());
    let server = Server::start(vec![Reply::Stall(Duration::from_secs(30))]);
    let mut child = crate::support::dsh_process()
        .env("DEEPSEEK_API_KEY", KEY)
        .args(["compact", "--base-url", &server.base])
        .arg(&log)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    // end-seed (12) and compaction/start (13), written as one batch.
    while visible_lines(&log) < 14 {
        assert!(
            std::time::Instant::now() < deadline,
            "compaction/start never written"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let all = lines(&log);
    assert_eq!(all.len(), 14);
    assert_eq!(all[12]["type"], json!("session/end-seed"));
    assert_eq!(all[13]["type"], json!("compaction/start"));
    assert_eq!(all[13]["data"]["turn"], J::Null);
    // The log still loads, with the surface unchanged.
    assert_eq!(surface_nodes(&log), json!([2, 4, 6, 9]));
    // Every compaction now refuses: the lock is held (exit 4) and says how on.
    let busy = dsh()
        .args(["compact", "--json"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(busy.status.code(), Some(4));
    let v: J = serde_json::from_slice(&busy.stdout).unwrap();
    assert_eq!(
        v["error"]["message"],
        json!(
            "compaction: compaction already in progress; the session compaction lock is already active"
        )
    );
    let hint = v["error"]["hint"].as_str().unwrap();
    assert!(
        hint.contains(&format!("dsh locks --release --yes {}", log.display())),
        "{hint}"
    );
    assert_eq!(lines(&log).len(), 14, "a refused compaction writes nothing");
    // `dsh compact` has no lock-release flag of its own any more.
    let old = dsh()
        .args(["compact", "--release-lock"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(old.status.code(), Some(2));
    // The way forward: release (appends session/end-seed, as a resumed
    // harness does), then compaction works again.
    let rel = dsh()
        .args(["locks", "--release", "--yes", "--json"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(
        rel.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&rel.stderr)
    );
    let rv: J = serde_json::from_slice(&rel.stdout).unwrap();
    assert_eq!(rv["released"], json!(true));
    assert_eq!(rv["state"], json!("stale"));
    let all = lines(&log);
    assert_eq!(all.len(), 15);
    assert_eq!(all[14]["type"], json!("session/end-seed"));
    assert_eq!(all[14]["seq"], json!(14));
    assert_eq!(all[14]["data"], json!({}));
    let server2 = Server::start(vec![Reply::Sse(deepseek_sse(SUMMARY))]);
    let r = compact(&log, &server2.base, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // The log ends with an end-seed: no second marker, the bracket follows.
    assert_eq!(r.json["endSeedSeq"], J::Null);
    assert_eq!(r.json["brackets"][0]["startSeq"], json!(15));
    assert_committed(&log, 15, J::Null);
    drop(server);
    server2.join();
}

/// Copy a spec example into `dir`, writable (the originals are read-only,
/// and the writer refuses a read-only log).
fn example_copy(ex: &Path, name: &str, dir: &Path) -> PathBuf {
    let log = dir.join("p.jsonl");
    std::fs::write(&log, std::fs::read(ex.join(name)).unwrap()).unwrap();
    log
}

fn shared() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/spec/examples");
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!("skipping: ../shared/spec/examples is absent");
        None
    }
}

/// Drop `time`, the compaction ids and the checkpoint message id.
fn normalized(line: &str) -> String {
    let mut v = dsh::json::Value::parse(line).unwrap().into_owned();
    v.remove("time");
    if let Some(d) = v.get_mut("data") {
        if d.has("compactionId") {
            d.set("compactionId", "ID".into());
        }
        if d.get("source").is_some_and(|s| s.has("compactionId")) {
            d.get_mut("source")
                .unwrap()
                .set("compactionId", "ID".into());
            d.set("id", "MSG".into());
        }
    }
    v.to_json()
}

#[test]
#[cfg_attr(
    no_shared,
    ignore = "needs ../shared (corpus, reference answers, spec examples) beside the checkout"
)]
fn pressure_worked_example_reproduces_the_reference_bracket_and_request() {
    let Some(ex) = shared() else { return };
    let dir = tempfile::tempdir().unwrap();
    let log = example_copy(&ex, "compact-pressure.input.jsonl", dir.path());
    let expected = std::fs::read_to_string(ex.join("compact-pressure.appended.jsonl")).unwrap();
    let summary_text = expected
        .lines()
        .map(|l| serde_json::from_str::<J>(l).unwrap())
        .find(|e| e["type"] == "compaction/summary")
        .unwrap()["data"]["summary"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    let server = Server::start(vec![Reply::Sse(deepseek_sse(&summary_text))]);
    let r = compact(&log, &server.base, &["-q"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.json["mode"], json!("pressure"));
    // Automatic compaction continues the open turn: no closers, no end-seed.
    assert_eq!(r.json["lifecycle"], json!("continue"));
    assert_eq!(r.json["endSeedSeq"], J::Null);
    assert_eq!(r.json["appendedSeqs"], json!([34, 35, 36, 37, 38, 39]));
    assert_eq!(r.json["contextWindow"], json!(4000));
    assert_eq!(r.json["contextWindowSource"], json!("request/context"));
    assert_eq!(
        r.json["pruned"],
        json!([{"originalSeq":12,"replacementSeq":35,"callId":"call_1","charsBefore":11999,"charsAfter":5159}])
    );
    assert_eq!(r.json["tokensBefore"], json!(5429));
    assert_eq!(r.json["tokensAfterPrune"], json!(3719));
    assert_eq!(r.json["tokensAfter"], json!(1547));
    assert_eq!(r.json["thresholdTokens"], json!(3200));
    assert_eq!(r.json["retainTokens"], json!(640));
    assert_eq!(r.json["brackets"][0]["checkpointTokens"], json!(207));
    let text = std::fs::read_to_string(&log).unwrap();
    let ours: Vec<String> = text.lines().skip(35).map(normalized).collect();
    let theirs: Vec<String> = expected.lines().map(normalized).collect();
    assert_eq!(ours.len(), 6);
    for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
        assert_eq!(a, b, "appended event {i} differs");
    }
    assert_eq!(surface_nodes(&log), json!([38, 30, 32]));
    // The meter's in-memory re-measure equals a fresh `dsh measure` of the
    // written log, and the result passes the reference's invariants.
    let m = dsh()
        .args(["measure", "--json", "-q"])
        .arg(&log)
        .output()
        .unwrap();
    let m: J = serde_json::from_slice(&m.stdout).unwrap();
    assert_eq!(m["totalTokens"], json!(1547));
    assert_eq!(m["surfaceTokens"], json!(1239));
    let v = dsh().args(["verify", "-q"]).arg(&log).output().unwrap();
    assert_eq!(
        v.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&v.stdout)
    );
    // The captured request body, byte for byte.
    let req = &server.join()[0];
    let captured = std::fs::read(ex.join("compact-pressure.summarizer-request.json")).unwrap();
    let want = dsh::json::Value::parse(std::str::from_utf8(&captured).unwrap()).unwrap();
    assert_eq!(
        String::from_utf8(req.body.clone()).unwrap(),
        want.get("body").unwrap().to_json()
    );
    assert_eq!(req.path, want.get("path").unwrap().as_str().unwrap());
    for h in [
        "content-type",
        "accept",
        "x-deepseek-harness-session-id",
        "x-deepseek-harness-compact",
    ] {
        assert_eq!(
            req.header(h),
            want.get("headers")
                .unwrap()
                .get(h)
                .unwrap()
                .as_str()
                .as_deref(),
            "{h}"
        );
    }
}

#[test]
#[cfg_attr(
    no_shared,
    ignore = "needs ../shared (corpus, reference answers, spec examples) beside the checkout"
)]
fn overflow_mode_prunes_and_reports_retry_authorization() {
    let Some(ex) = shared() else { return };
    let dir = tempfile::tempdir().unwrap();
    let log = example_copy(&ex, "compact-pressure.input.jsonl", dir.path());
    // A 27-character summary (§11 variant): checkpoint 109, total 1449.
    let server = Server::start(vec![Reply::Sse(deepseek_sse(
        "## Checkpoint\n- short note.",
    ))]);
    let r = compact(&log, &server.base, &["-q", "--mode", "overflow"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.json["mode"], json!("overflow"));
    assert_eq!(
        r.json["brackets"][0]["shadowedSeqs"],
        json!([2, 10, 35, 20, 22])
    );
    assert_eq!(r.json["brackets"][0]["checkpointTokens"], json!(109));
    assert_eq!(r.json["tokensAfter"], json!(1449));
    assert_eq!(r.json["retryAuthorized"], json!(true));
    server.join();
}

#[test]
#[cfg_attr(
    no_shared,
    ignore = "needs ../shared (corpus, reference answers, spec examples) beside the checkout"
)]
fn pressure_below_threshold_writes_nothing() {
    let Some(ex) = shared() else { return };
    let dir = tempfile::tempdir().unwrap();
    let log = example_copy(&ex, "compact-pressure.input.jsonl", dir.path());
    let bytes = std::fs::read(&log).unwrap();
    // cw 8000: threshold 6400 > 5429; cw 4700: pruning alone suffices.
    let r = compact(
        &log,
        "http://127.0.0.1:9",
        &["-q", "--context-window", "8000"],
    );
    assert_eq!(
        (r.code, r.json["outcome"].clone()),
        (0, json!("below-threshold"))
    );
    assert_eq!(std::fs::read(&log).unwrap(), bytes);
    let r = compact(
        &log,
        "http://127.0.0.1:9",
        &["-q", "--context-window", "4700"],
    );
    assert_eq!(
        (r.code, r.json["outcome"].clone()),
        (0, json!("pruned-below-threshold"))
    );
    let all = lines(&log);
    assert_eq!(all.len(), 36);
    assert_eq!(all[34]["type"], json!("compaction/prune"));
    assert_eq!(
        all[35]["surfaceOp"],
        json!({"op":"replace","start":12,"end":12})
    );
}

/// The scripted user's path: only a config file at the default location
/// (`$XDG_CONFIG_HOME/dsh/config.toml`) names the base URL and the key's
/// variable; the key is in that variable; `--route` picks the target.
#[test]
fn config_file_gives_route_key_variable_and_policy() {
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path(), "s.jsonl", &closed_log());
    let server = Server::start(vec![Reply::Sse(deepseek_sse(SUMMARY))]);
    let xdg = dir.path().join("xdg");
    std::fs::create_dir_all(xdg.join("dsh")).unwrap();
    let cfg = xdg.join("dsh").join("config.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"[compaction]
maxTokens = 4096

[[routes]]
provider = "deepseek-official"
baseURL = "{}"
apiKeyEnv = "DSH_IT_COMPACT_KEY"
reasoningEffort = "max"
models = [ {{ id = "deepseek-v4-flash", contextWindow = 64000 }} ]
"#,
            server.base
        ),
    )
    .unwrap();
    let out = Command::cargo_bin("dsh")
        .unwrap()
        .env_clear()
        .env("HOME", dir.path())
        .env("XDG_CONFIG_HOME", &xdg)
        .env("DSH_IT_COMPACT_KEY", KEY)
        .args([
            "compact",
            "--json",
            "--route",
            "deepseek-official/deepseek-v4-flash",
        ])
        .arg(&log)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    let v: J = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(v["config"], json!(cfg.display().to_string()));
    assert_eq!(
        v["summarizer"],
        json!({"kind":"deepseek","baseURL":server.base,"apiKeyEnv":"DSH_IT_COMPACT_KEY","reasoningEffort":"max"})
    );
    assert_eq!(v["policy"]["maxTokens"], json!(4096));
    assert_eq!(v["appendedSeqs"], json!([12, 13, 14, 15, 16]));
    let all = lines(&log);
    assert_eq!(all[12]["type"], json!("session/end-seed"));
    assert_eq!(all[14]["data"]["maxTokens"], json!(4096));
    assert_eq!(surface_nodes(&log), json!([15, 9]));
    let q = &server.join()[0];
    assert_eq!(
        q.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let body: J = serde_json::from_slice(&q.body).unwrap();
    assert_eq!(body["max_tokens"], json!(4096));
    assert_eq!(body["reasoning_effort"], json!("max"));
    for text in [&stdout, &stderr, &std::fs::read_to_string(&log).unwrap()] {
        assert!(!text.contains(KEY), "the key leaked");
    }
    // The variable the config names is the only place the key is read from.
    let out = Command::cargo_bin("dsh")
        .unwrap()
        .env_clear()
        .env("HOME", dir.path())
        .env("XDG_CONFIG_HOME", &xdg)
        .env("DEEPSEEK_API_KEY", KEY)
        .args(["compact", "--route", "deepseek-official/deepseek-v4-flash"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("$DSH_IT_COMPACT_KEY"), "{err}");
    assert!(!err.contains(KEY));
    // A broken config is a usage error naming the file, before anything is
    // written.
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[compaction]\nthresholdRatio = 1.5\n").unwrap();
    let n = lines(&log).len();
    let out = dsh()
        .args(["compact", "--config"])
        .arg(&bad)
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("BasicCompactionConfig.thresholdRatio (1.5) must be a number in (0, 1]")
    );
    assert_eq!(lines(&log).len(), n);
}

#[test]
#[cfg_attr(
    no_shared,
    ignore = "needs ../shared (corpus, reference answers, spec examples) beside the checkout"
)]
fn config_capacity_policy_and_pruner_drive_pressure_and_flags_override() {
    let Some(ex) = shared() else { return };
    let dir = tempfile::tempdir().unwrap();
    let log = example_copy(&ex, "compact-pressure.input.jsonl", dir.path());
    let bytes = std::fs::read(&log).unwrap();
    let write_cfg = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let route = "[[routes]]\nprovider = \"deepseek-official\"\nmodels = [ { id = \"deepseek-v4-flash\", contextWindow = 8000 } ]\n";
    // The config's model entry wins over the logged request/context (4000):
    // threshold 6400 > 5429, nothing to do.
    let a = write_cfg("a.toml", route);
    let r = compact(&log, "http://127.0.0.1:9", &["-q", "--config", &a]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.json["outcome"], json!("below-threshold"));
    assert_eq!(r.json["contextWindow"], json!(8000));
    assert_eq!(r.json["contextWindowSource"], json!("config-model"));
    assert_eq!(r.json["thresholdTokens"], json!(6400));
    // A flag overrides the config.
    let r = compact(
        &log,
        "http://127.0.0.1:9",
        &[
            "-q",
            "--config",
            &a,
            "--context-window",
            "4000",
            "--dry-run",
        ],
    );
    assert_eq!(r.json["contextWindowSource"], json!("flag"));
    assert_eq!(r.json["thresholdTokens"], json!(3200));
    assert_eq!(r.json["outcome"], json!("dry-run"));
    assert_eq!(std::fs::read(&log).unwrap(), bytes);
    // A per-model policy (thresholdRatio 0.5: 4000 ≤ 5429) and a pruner that
    // keeps the 11 999-code-point result (thresholdChars 20000): no prune,
    // straight to a bracket (dry run).
    let c = write_cfg(
        "c.toml",
        &format!(
            "{route}[[compaction.modelPolicies]]\nprovider = \"deepseek-official\"\nmodel = \"deepseek-v4-flash\"\nthresholdRatio = 0.5\nretainTokens = 100\n[pruner]\nthresholdChars = 20000\n"
        ),
    );
    let r = compact(
        &log,
        "http://127.0.0.1:9",
        &["-q", "--config", &c, "--dry-run"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.json["policy"]["modelPolicy"], json!(true));
    assert_eq!(r.json["policy"]["retainTokensAbsolute"], json!(100));
    assert_eq!(r.json["thresholdTokens"], json!(4000));
    assert_eq!(r.json["retainTokens"], json!(100));
    assert_eq!(r.json["pruned"], json!([]));
    assert_eq!(r.json["tokensAfterPrune"], json!(5429));
    assert_eq!(
        r.json["brackets"][0]["shadowedSeqs"],
        json!([2, 10, 12, 20, 22])
    );
    assert_eq!(r.json["wouldAppend"], json!([]));
    // The default pruner budgets with the same policy: pruning alone
    // brings it below 4000 (3719), and the prune pair is written.
    let b = write_cfg(
        "b.toml",
        &format!("{route}[compaction]\nthresholdRatio = 0.5\n"),
    );
    let r = compact(&log, "http://127.0.0.1:9", &["-q", "--config", &b]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.json["outcome"], json!("pruned-below-threshold"));
    assert_eq!(r.json["tokensAfterPrune"], json!(3719));
    assert_eq!(r.json["appendedSeqs"], json!([34, 35]));
    assert_eq!(lines(&log).len(), 36);
}

#[test]
#[cfg_attr(
    no_shared,
    ignore = "needs ../shared (corpus, reference answers, spec examples) beside the checkout"
)]
fn overflow_recovery_disabled_by_max_overflow_retries_zero() {
    let Some(ex) = shared() else { return };
    let dir = tempfile::tempdir().unwrap();
    let log = example_copy(&ex, "compact-pressure.input.jsonl", dir.path());
    let bytes = std::fs::read(&log).unwrap();
    let r = compact(
        &log,
        "http://127.0.0.1:9",
        &["-q", "--mode", "overflow", "--max-overflow-retries", "0"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.json["outcome"], json!("overflow-disabled"));
    assert_eq!(r.json["retryAuthorized"], json!(false));
    assert_eq!(std::fs::read(&log).unwrap(), bytes);
}

/// The Zstandard frames of `data` (each complete).
fn zstd_frames(data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < data.len() {
        let n = zstd::zstd_safe::find_frame_compressed_size(&data[pos..]).unwrap();
        out.push(&data[pos..pos + n]);
        pos += n;
    }
    out
}

/// A `.jsonl.zstd` log as the harness writes it: the header line in its own
/// frame, then the events.
fn zstd_log(plain: &[u8]) -> Vec<u8> {
    let cut = plain.iter().position(|&b| b == b'\n').unwrap() + 1;
    let mut out = zstd::stream::encode_all(&plain[..cut], 3).unwrap();
    out.extend(zstd::stream::encode_all(&plain[cut..], 3).unwrap());
    out
}

fn zstd_text(p: &Path) -> String {
    String::from_utf8(zstd::stream::decode_all(&std::fs::read(p).unwrap()[..]).unwrap()).unwrap()
}

#[test]
#[cfg_attr(
    no_shared,
    ignore = "needs ../shared (corpus, reference answers, spec examples) beside the checkout"
)]
fn zstd_logs_get_one_frame_per_batch() {
    // Manual: two batches (end-seed + start, then summary + checkpoint + end).
    let dir = tempfile::tempdir().unwrap();
    let plain = write_log(dir.path(), "s.jsonl", &closed_log());
    let log = dir.path().join("s.jsonl.zstd");
    let before = zstd_log(&std::fs::read(&plain).unwrap());
    std::fs::write(&log, &before).unwrap();
    let server = Server::start(vec![Reply::Sse(deepseek_sse(SUMMARY))]);
    let r = compact(&log, &server.base, &[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    server.join();
    let after = std::fs::read(&log).unwrap();
    assert_eq!(&after[..before.len()], &before[..], "old bytes untouched");
    let frames = zstd_frames(&after[before.len()..]);
    assert_eq!(frames.len(), 2);
    let batch = |f: &[u8]| -> Vec<String> {
        String::from_utf8(zstd::stream::decode_all(f).unwrap())
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<J>(l).unwrap()["type"].to_string())
            .collect()
    };
    assert_eq!(
        batch(frames[0]),
        ["\"session/end-seed\"", "\"compaction/start\""]
    );
    assert_eq!(
        batch(frames[1]),
        [
            "\"compaction/summary\"",
            "\"user/message\"",
            "\"compaction/end\""
        ]
    );
    std::fs::write(dir.path().join("d.jsonl"), zstd_text(&log)).unwrap();
    assert_manual_committed(&dir.path().join("d.jsonl"));
    assert_eq!(surface_nodes(&log), json!([15, 9]));

    // Pressure (the worked example): prune pair, start, then the rest —
    // three frames, and the same events as on a plain log.
    let Some(ex) = shared() else { return };
    let input = std::fs::read(ex.join("compact-pressure.input.jsonl")).unwrap();
    let log = dir.path().join("p.jsonl.zstd");
    let before = zstd_log(&input);
    std::fs::write(&log, &before).unwrap();
    let expected = std::fs::read_to_string(ex.join("compact-pressure.appended.jsonl")).unwrap();
    let summary_text = expected
        .lines()
        .map(|l| serde_json::from_str::<J>(l).unwrap())
        .find(|e| e["type"] == "compaction/summary")
        .unwrap()["data"]["summary"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    let server = Server::start(vec![Reply::Sse(deepseek_sse(&summary_text))]);
    let r = compact(&log, &server.base, &["-q"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.json["tokensAfter"], json!(1547));
    server.join();
    let after = std::fs::read(&log).unwrap();
    assert_eq!(&after[..before.len()], &before[..]);
    assert_eq!(zstd_frames(&after[before.len()..]).len(), 3);
    let text = zstd_text(&log);
    let ours: Vec<String> = text.lines().skip(35).map(normalized).collect();
    let theirs: Vec<String> = expected.lines().map(normalized).collect();
    assert_eq!(ours, theirs);
}

#[test]
fn a_torn_tail_or_another_writer_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path(), "s.jsonl", &closed_log());
    let mut bytes = std::fs::read(&log).unwrap();
    bytes.extend_from_slice(br#"{"type":"user/mess"#);
    std::fs::write(&log, &bytes).unwrap();
    let r = compact(&log, "http://127.0.0.1:9", &[]);
    assert_eq!(r.code, 4, "{}", r.stderr);
    assert!(r.stderr.contains("torn write"), "{}", r.stderr);
    assert_eq!(std::fs::read(&log).unwrap(), bytes);
    // A dry run still shows the plan, and says what a real run would refuse.
    let out = dsh()
        .args(["compact", "--dry-run", "--json"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("a real run would refuse"));
    // Another dsh writer holds the log: busy, nothing written.
    let log = write_log(dir.path(), "t.jsonl", &closed_log());
    let bytes = std::fs::read(&log).unwrap();
    let f = std::fs::File::open(&log).unwrap();
    fs4::FileExt::try_lock(&f).unwrap();
    let r = compact(&log, "http://127.0.0.1:9", &[]);
    assert_eq!(r.code, 4, "{}", r.stderr);
    assert!(r.stderr.contains("writer lock"), "{}", r.stderr);
    drop(f);
    assert_eq!(std::fs::read(&log).unwrap(), bytes);
}

#[test]
fn a_key_given_as_the_variable_name_is_refused_and_never_echoed() {
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path(), "s.jsonl", &closed_log());
    let cfg = dir.path().join("config.toml");
    std::fs::write(&cfg, format!("[compaction]\n\n[[routes]]\nprovider = \"deepseek-official\"\napiKeyEnv = \"{KEY}\"\nmodels = [ {{ id = \"deepseek-v4-flash\", contextWindow = 64000 }} ]\n")).unwrap();
    let runs: [&[&str]; 4] = [
        &["compact", "--dry-run", "--json", "--api-key-env", KEY],
        &["compact", "--dry-run", "--api-key-env", KEY],
        &["compact", "--api-key-env", KEY],
        &[
            "compact",
            "--dry-run",
            "--json",
            "--config",
            cfg.to_str().unwrap(),
        ],
    ];
    for args in runs {
        let out = dsh().args(args).arg(&log).output().unwrap();
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!all.contains("SECRET"), "{args:?} echoed the key: {all}");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {all}");
        assert!(
            all.contains("NAME of an environment variable"),
            "{args:?}: {all}"
        );
    }
    assert!(!std::fs::read_to_string(&log).unwrap().contains("SECRET"));
}

#[test]
fn userinfo_in_the_base_url_is_never_printed() {
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path(), "s.jsonl", &closed_log());
    // Port 9 on loopback: nothing listens, the call fails at once.
    let url = "http://user:pw-SECRET-7@127.0.0.1:9";
    let runs: [&[&str]; 3] = [
        &["compact", "--dry-run", "--json", "--base-url", url],
        &["compact", "--dry-run", "--base-url", url],
        &["compact", "--json", "--base-url", url, "--retries", "0"],
    ];
    for args in runs {
        let out = dsh().args(args).arg(&log).output().unwrap();
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            !all.contains("SECRET"),
            "{args:?} printed the password: {all}"
        );
        assert!(
            !all.contains("user:"),
            "{args:?} printed the userinfo: {all}"
        );
    }
    assert!(!std::fs::read_to_string(&log).unwrap().contains("SECRET"));
}

#[test]
fn a_key_the_provider_echoes_is_redacted_from_what_is_appended() {
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path(), "s.jsonl", &closed_log());
    let echoed = SUMMARY.replace("- cargo", &format!("- cargo, with the key {KEY}"));
    let server = Server::start(vec![Reply::Sse(deepseek_sse(&echoed))]);
    let r = compact(&log, &server.base, &[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.json["outcome"], json!("compacted"));
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains(KEY), "the key was appended to the log");
    assert!(text.contains("with the key [REDACTED]"));
    for out in [&r.stdout, &r.stderr] {
        assert!(!out.contains(KEY), "printed: {out}");
    }
    let surface = surface_nodes(&log).to_string();
    assert!(!surface.contains(KEY));
}

/// A signal while the summariser call is in flight closes the bracket with
/// one `compaction/end {error: "interrupted"}`, unlocks the log and exits
/// 128 + the signal's number.
#[test]
fn a_signal_during_the_summariser_call_closes_the_bracket() {
    for (sig, code) in [
        (libc::SIGINT, 130),
        (libc::SIGTERM, 143),
        (libc::SIGHUP, 129),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let log = write_log(dir.path(), "s.jsonl", &closed_log());
        // Accepts the request and never answers.
        let server = Server::start(vec![Reply::Stall(Duration::from_secs(60))]);
        let child = crate::support::dsh_process()
            .env("DEEPSEEK_API_KEY", KEY)
            .args(["compact", "--json", "--base-url", &server.base])
            .arg(&log)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        // end-seed (12) and compaction/start (13), written as one batch.
        while visible_lines(&log) < 14 {
            assert!(
                std::time::Instant::now() < deadline,
                "compaction/start never written"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let started = std::time::Instant::now();
        // SAFETY: a plain kill(2) of our own child.
        let rc = unsafe { libc::kill(child.id() as libc::pid_t, sig) };
        assert_eq!(rc, 0);
        let out = child.wait_with_output().unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the signal did not stop the call"
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "signal {sig}: {stderr}");
        assert!(stderr.contains("interrupted"), "{stderr}");
        let v: J = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["error"]["kind"], json!("cancelled"));
        assert_eq!(v["error"]["code"], json!("ABORTED"));
        assert_eq!(v["brackets"][0]["error"], json!("interrupted"));
        assert_eq!(v["brackets"][0]["endSeq"], json!(14));
        let all = lines(&log);
        assert_eq!(all.len(), 15, "exactly one event after the start");
        assert_eq!(all[13]["type"], json!("compaction/start"));
        let end = &all[14];
        assert_eq!(end["type"], json!("compaction/end"));
        assert_eq!(end["seq"], json!(14));
        assert_eq!(
            end["data"],
            json!({"compactionId": all[13]["data"]["compactionId"], "turn": null, "error": "interrupted"})
        );
        // The surface is unchanged, the log verifies and no lock is held.
        assert_eq!(surface_nodes(&log), json!([2, 4, 6, 9]));
        let verify = dsh().arg("verify").arg(&log).output().unwrap();
        assert_eq!(
            verify.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&verify.stdout)
        );
        let locks = dsh()
            .args(["locks", "--json", "-q"])
            .arg(&log)
            .output()
            .unwrap();
        assert_eq!(locks.status.code(), Some(0));
        let lv: J = serde_json::from_slice(&locks.stdout).unwrap();
        assert_eq!(lv["summary"]["busy"], json!(0), "{lv}");
        assert_eq!(lv["logs"][0]["state"], json!("free"), "{lv}");
        // The writer lock is gone too: the next compaction runs.
        let server2 = Server::start(vec![Reply::Sse(deepseek_sse(SUMMARY))]);
        let r = compact(&log, &server2.base, &[]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        // A new lifecycle: an end-seed at 15, the bracket from 16.
        assert_eq!(r.json["endSeedSeq"], json!(15));
        assert_eq!(r.json["brackets"][0]["startSeq"], json!(16));
        drop(server);
        server2.join();
    }
}

/// Before `compaction/start` (here: waiting for another writer's lock) a
/// signal ends dsh with 128 + its number and nothing is written.
#[test]
fn a_signal_before_the_bracket_exits_and_writes_nothing() {
    use std::os::fd::AsRawFd;
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path(), "s.jsonl", &closed_log());
    let before = std::fs::read(&log).unwrap();
    let holder = std::fs::File::open(&log).unwrap();
    // SAFETY: flock on a descriptor we own.
    assert_eq!(unsafe { libc::flock(holder.as_raw_fd(), libc::LOCK_EX) }, 0);
    let server = Server::start(vec![Reply::Sse(deepseek_sse(SUMMARY))]);
    let child = crate::support::dsh_process()
        .env("DEEPSEEK_API_KEY", KEY)
        .args(["compact", "--wait", "30", "--base-url", &server.base])
        .arg(&log)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    // SAFETY: a plain kill(2) of our own child.
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) },
        0
    );
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(143),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    drop(holder);
    assert_eq!(std::fs::read(&log).unwrap(), before, "nothing written");
    assert!(server.requests().is_empty(), "no one called");
}

/// `closed_log()` with an image beside the text of the tool result.
fn image_log() -> Vec<J> {
    let mut ev = closed_log();
    let img = json!({"type":"image","attachment":{"attachmentId":"sha256:5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e","mediaType":"image/png","bytes":48211,"width":1280,"height":720,"name":"shot.png"}});
    ev[6]["data"]["message"]["content"][0]["content"]
        .as_array_mut()
        .unwrap()
        .push(img);
    ev
}

/// `closed_log()` without its `turn/end`: an open turn (pressure mode).
fn open_log() -> Vec<J> {
    let mut ev = closed_log();
    ev.pop();
    ev
}

const PLACEHOLDER: &str = "[image omitted to fit request image limits; \"shot.png\" (sha256:5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e). No local normalized image path is available; ask the user to attach it again if needed.]";

/// Each check made before the first byte: the exit status, one error line
/// and one hint line, the log byte for byte as it was, no one called.
#[test]
fn pre_write_checks_refuse_with_a_hint_and_append_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(vec![Reply::Sse(deepseek_sse(SUMMARY))]);
    let base = server.base.clone();
    let pruner = dir.path().join("pruner.toml");
    std::fs::write(
        &pruner,
        "[pruner]\nthresholdChars = 100\nheadChars = 10\ntailChars = 10\n",
    )
    .unwrap();
    let pruner = pruner.to_str().unwrap().to_string();
    // A port nothing listens on: the connection is refused.
    let refused = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    struct Case<'a> {
        name: &'a str,
        events: Vec<J>,
        key: Option<&'a str>,
        args: Vec<&'a str>,
        code: i32,
        says: &'a str,
        hint: &'a str,
    }
    let cases = [
        Case {
            name: "key unset",
            events: closed_log(),
            key: None,
            args: vec!["--base-url", &base],
            code: 2,
            says: "$DEEPSEEK_API_KEY is not set",
            hint: "export DEEPSEEK_API_KEY",
        },
        Case {
            name: "key empty",
            events: closed_log(),
            key: Some(""),
            args: vec!["--base-url", &base],
            code: 2,
            says: "$DEEPSEEK_API_KEY is empty",
            hint: "--api-key-env",
        },
        Case {
            name: "route not configured",
            events: closed_log(),
            key: Some(KEY),
            args: vec!["--route", "acme/m1"],
            code: 2,
            says: "no route for provider \"acme\"",
            hint: "[[routes]] provider = \"acme\"",
        },
        Case {
            name: "base URL",
            events: closed_log(),
            key: Some(KEY),
            args: vec!["--base-url", "127.0.0.1:9/v1"],
            code: 2,
            says: "does not parse",
            hint: "http:// or https://",
        },
        Case {
            name: "connection refused",
            events: closed_log(),
            key: Some(KEY),
            args: vec!["--base-url", &refused],
            code: 2,
            says: "cannot reach the provider",
            hint: "reachable",
        },
        Case {
            name: "too large (manual)",
            events: closed_log(),
            key: Some(KEY),
            args: vec!["--base-url", &base, "--summarizer-context-window", "100"],
            code: 1,
            says: "does not fit the context window of deepseek-official/deepseek-v4-flash (100 tokens)",
            hint: "with a larger window (--route P/M, or --summarizer-context-window if the window is known better)",
        },
        Case {
            // Pressure would prune first: the refusal comes before the pairs.
            name: "too large (pressure, prunes first)",
            events: open_log(),
            key: Some(KEY),
            args: vec![
                "--base-url",
                &base,
                "--config",
                &pruner,
                "--context-window",
                "200",
            ],
            code: 1,
            says: "does not fit the context window",
            hint: "--retain-tokens",
        },
        Case {
            name: "images on a text-only route",
            events: image_log(),
            key: Some(KEY),
            args: vec!["--base-url", &base],
            code: 1,
            says: "cannot send image content",
            hint: "--images placeholder",
        },
        Case {
            name: "images, anthropic",
            events: image_log(),
            key: Some(KEY),
            args: vec!["--base-url", &base, "--kind", "anthropic"],
            code: 1,
            says: "cannot send image content",
            hint: "--images placeholder",
        },
    ];
    for c in cases {
        let log = write_log(dir.path(), "s.jsonl", &c.events);
        let before = std::fs::read(&log).unwrap();
        let mut cmd = crate::support::dsh();
        match c.key {
            Some(k) => cmd.env("DEEPSEEK_API_KEY", k),
            None => cmd.env_remove("DEEPSEEK_API_KEY"),
        };
        let out = cmd
            .args(["compact", "--retry-delay", "0"])
            .args(&c.args)
            .arg(&log)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(c.code), "{}: {err}", c.name);
        assert!(err.contains(c.says), "{}: {err}", c.name);
        let hints: Vec<&str> = err
            .lines()
            .filter(|l| l.starts_with("dsh: hint: "))
            .collect();
        assert_eq!(hints.len(), 1, "{}: {err}", c.name);
        assert!(hints[0].contains(c.hint), "{}: {err}", c.name);
        if c.name == "too large (manual)" {
            // Manual compaction keeps only the newest unit: no retain budget to offer.
            assert!(!hints[0].contains("--retain-tokens"), "{err}");
        }
        assert!(err.contains("nothing written"), "{}: {err}", c.name);
        assert!(!err.contains(KEY), "{}: {err}", c.name);
        assert_eq!(
            std::fs::read(&log).unwrap(),
            before,
            "{}: log changed",
            c.name
        );
        // With --json, one document saying the same.
        let mut cmd = crate::support::dsh();
        match c.key {
            Some(k) => cmd.env("DEEPSEEK_API_KEY", k),
            None => cmd.env_remove("DEEPSEEK_API_KEY"),
        };
        let out = cmd
            .args(["compact", "--json", "--retry-delay", "0"])
            .args(&c.args)
            .arg(&log)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(c.code), "{}", c.name);
        let v: J = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["written"], json!(false), "{}", c.name);
        assert!(
            v["error"]["hint"].as_str().unwrap().contains(c.hint),
            "{}",
            c.name
        );
        assert_eq!(
            std::fs::read(&log).unwrap(),
            before,
            "{}: log changed",
            c.name
        );
    }
    // A read-only log is refused by the writer, before anything else.
    let log = write_log(dir.path(), "ro.jsonl", &closed_log());
    let before = std::fs::read(&log).unwrap();
    let mut perm = std::fs::metadata(&log).unwrap().permissions();
    perm.set_readonly(true);
    std::fs::set_permissions(&log, perm).unwrap();
    let r = compact(&log, &base, &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("read-only"), "{}", r.stderr);
    assert_eq!(std::fs::read(&log).unwrap(), before);
    // So is a copy that cannot be made (--out into a missing directory).
    let ok = write_log(dir.path(), "ok.jsonl", &closed_log());
    let before_ok = std::fs::read(&ok).unwrap();
    let missing = dir.path().join("no-such-dir").join("copy.jsonl");
    let r = compact(&ok, &base, &["--out", missing.to_str().unwrap()]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(std::fs::read(&ok).unwrap(), before_ok);
    assert!(!missing.exists());
    // A dry run says the same as "would fail" (exit 1).
    let out = dsh()
        .args(["compact", "--dry-run", "--base-url", &base])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("would fail: the log is not writable"));
    assert!(server.requests().is_empty(), "no one was called");
}

/// A dry run never exits 5: what the real run would fail at is reported as
/// "would fail: …" with exit 1; the range's tokens are weighed against the
/// summarising model's window, with a warning when they do not fit.
#[test]
fn dry_runs_report_what_would_fail_and_the_window() {
    let dir = tempfile::tempdir().unwrap();
    let run = |events: Vec<J>, key: Option<&str>, extra: &[&str]| {
        let log = write_log(dir.path(), "d.jsonl", &events);
        let before = std::fs::read(&log).unwrap();
        let mut cmd = crate::support::dsh();
        match key {
            Some(k) => cmd.env("DEEPSEEK_API_KEY", k),
            None => cmd.env_remove("DEEPSEEK_API_KEY"),
        };
        let text = cmd
            .args(["compact", "--dry-run", "--base-url", "http://127.0.0.1:9"])
            .args(extra)
            .arg(&log)
            .output()
            .unwrap();
        let mut cmd = crate::support::dsh();
        match key {
            Some(k) => cmd.env("DEEPSEEK_API_KEY", k),
            None => cmd.env_remove("DEEPSEEK_API_KEY"),
        };
        let json = cmd
            .args([
                "compact",
                "--dry-run",
                "--json",
                "--base-url",
                "http://127.0.0.1:9",
            ])
            .args(extra)
            .arg(&log)
            .output()
            .unwrap();
        assert_eq!(
            std::fs::read(&log).unwrap(),
            before,
            "a dry run writes nothing"
        );
        assert_eq!(text.status.code(), json.status.code());
        let v: J = serde_json::from_slice(&json.stdout).unwrap();
        (
            text.status.code().unwrap(),
            String::from_utf8_lossy(&text.stdout).to_string(),
            v,
        )
    };
    // Clean: exit 0, the request's tokens against the (logged or built-in) window.
    let (code, text, v) = run(closed_log(), Some(KEY), &[]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("summariser request: "), "{text}");
    assert!(
        text.contains("window of deepseek-official/deepseek-v4-flash (built-in)"),
        "{text}"
    );
    assert_eq!(v["wouldFail"], json!([]));
    assert_eq!(
        v["summarizerWindow"],
        json!({"tokens": 1000000, "source": "built-in"})
    );
    let tokens = v["brackets"][0]["requestTokens"].as_u64().unwrap();
    assert!(tokens > v["brackets"][0]["shadowedTokenCount"].as_u64().unwrap());
    assert_eq!(v["brackets"][0]["fits"], json!(true));
    assert_eq!(v["warnings"], json!([]));
    // Too large: a warning, fits false, would fail.
    let (code, text, v) = run(
        closed_log(),
        Some(KEY),
        &["--summarizer-context-window", "100"],
    );
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("warning") && text.contains("does not fit the summarising model's window"),
        "{text}"
    );
    assert!(
        text.contains("would fail: the summariser request"),
        "{text}"
    );
    assert_eq!(v["brackets"][0]["fits"], json!(false));
    assert!(
        v["warnings"][0]
            .as_str()
            .unwrap()
            .contains("does not fit the summarising model's window")
    );
    assert!(
        v["wouldFail"][0]["message"]
            .as_str()
            .unwrap()
            .contains("does not fit")
    );
    // Images: the refusal, with the way forward; never exit 5.
    for kind in ["deepseek", "anthropic"] {
        let (code, text, v) = run(image_log(), Some(KEY), &["--kind", kind]);
        assert_eq!(code, 1, "{kind}: {text}");
        assert!(
            text.contains("would fail: ") && text.contains("cannot send image content"),
            "{text}"
        );
        assert!(text.contains("--images placeholder"), "{text}");
        assert!(
            v["wouldFail"][0]["hint"]
                .as_str()
                .unwrap()
                .contains("--images placeholder")
        );
        let (code, text, v) = run(
            image_log(),
            Some(KEY),
            &["--kind", kind, "--images", "placeholder"],
        );
        assert_eq!(code, 0, "{kind}: {text}");
        assert_eq!(v["brackets"][0]["imagesReplaced"], json!(1));
        assert!(
            v["brackets"][0]["request"]["body"]
                .to_string()
                .contains("image omitted to fit request image limits")
        );
    }
    // No key: the real run would refuse.
    let (code, text, v) = run(closed_log(), None, &[]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("would fail: no API key"), "{text}");
    assert_eq!(v["outcome"], json!("dry-run"));
    // A route dsh does not know.
    let (code, text, _) = run(closed_log(), Some(KEY), &["--route", "acme/m1"]);
    assert_eq!(code, 0, "an explicit --base-url is a route: {text}");
}

/// `--images placeholder` (a dsh extension): the summariser receives each
/// image as the harness's offload placeholder text, captured at a loopback
/// provider, and the bracket commits.
#[test]
fn images_placeholder_sends_the_offload_text() {
    for (kind, sse) in [
        ("deepseek", deepseek_sse(SUMMARY)),
        ("anthropic", anthropic_sse(SUMMARY)),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let log = write_log(dir.path(), "s.jsonl", &image_log());
        let server = Server::start(vec![Reply::Sse(sse)]);
        let r = compact(
            &log,
            &server.base,
            &["--kind", kind, "--images", "placeholder"],
        );
        assert_eq!(r.code, 0, "{kind}: {}", r.stderr);
        assert_manual_committed(&log);
        let reqs = server.join();
        assert_eq!(reqs.len(), 1);
        let body: J = serde_json::from_slice(&reqs[0].body).unwrap();
        let text = body.to_string();
        assert!(
            text.contains(&serde_json::to_string(PLACEHOLDER).unwrap()[1..PLACEHOLDER.len()]),
            "{kind}: {text:.2000}"
        );
        assert!(
            !text.contains("\"image\""),
            "{kind}: no image block is sent"
        );
        assert!(!text.contains("image_url"), "{kind}");
        assert_eq!(r.json["brackets"][0]["imagesReplaced"], json!(1));
        // The log keeps the image; only the request carried the placeholder.
        assert!(
            std::fs::read_to_string(&log)
                .unwrap()
                .contains("\"type\":\"image\"")
        );
    }
}

/// Two Ctrl-C in a row while the model works: the first closes the bracket
/// (once), the second is honoured too; dsh ends promptly with 130 and the
/// log holds exactly one `compaction/end {error: "interrupted"}`.
#[test]
fn a_second_ctrl_c_still_ends_dsh_and_the_bracket_is_closed_once() {
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path(), "s.jsonl", &closed_log());
    let server = Server::start(vec![Reply::Stall(Duration::from_secs(60))]);
    let child = crate::support::dsh_process()
        .env("DEEPSEEK_API_KEY", KEY)
        .args(["compact", "--base-url", &server.base])
        .arg(&log)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while visible_lines(&log) < 14 {
        assert!(
            std::time::Instant::now() < deadline,
            "compaction/start never written"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let started = std::time::Instant::now();
    for _ in 0..2 {
        // SAFETY: a plain kill(2) of our own child.
        assert_eq!(
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) },
            0
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = child.wait_with_output().unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let all = lines(&log);
    let ends: Vec<&J> = all
        .iter()
        .filter(|e| e["type"] == "compaction/end")
        .collect();
    assert_eq!(ends.len(), 1);
    assert_eq!(ends[0]["data"]["error"], json!("interrupted"));
    assert_eq!(all.last().unwrap()["type"], json!("compaction/end"));
    drop(server);
}

/// The request a dry run would send is the same whether the range's
/// messages come from a mapped plain file, a decompressed artifact or
/// standard input (held in memory), for both wire formats.
#[test]
fn dry_run_requests_agree_across_plain_artifact_and_stdin() {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    let plain = samples.join("coding-session.jsonl");
    let packed = samples.join("coding-session.jsonl.zstd");
    let home = tempfile::tempdir().unwrap();
    let run = |route: &[&str], file: Option<&Path>| -> J {
        let mut c = Command::cargo_bin("dsh").unwrap();
        c.env("DSH_HOME", home.path())
            .env("XDG_CONFIG_HOME", home.path())
            .env("DEEPSEEK_API_KEY", KEY)
            .env("ANTHROPIC_API_KEY", KEY)
            .args(["compact", "--dry-run", "--json", "--images", "placeholder"])
            .args(route);
        match file {
            Some(f) => c.arg(f),
            None => c.arg("-").write_stdin(std::fs::read(&plain).unwrap()),
        };
        let out = c.output().unwrap();
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert!(!stdout.contains(KEY));
        let j: J = serde_json::from_str(&stdout).unwrap();
        assert_eq!(j["outcome"], "dry-run", "{j}");
        // The sample's one image goes as placeholder text.
        assert_eq!(j["brackets"][0]["imagesReplaced"], 1);
        j["brackets"][0]["request"]["body"].clone()
    };
    let routes: [&[&str]; 2] = [
        &["--route", "deepseek-official/deepseek-v4-flash"],
        &[
            "--route",
            "anthropic/claude-sonnet-4-5",
            "--kind",
            "anthropic",
            "--base-url",
            "http://127.0.0.1:9",
        ],
    ];
    for route in routes {
        let from_file = run(route, Some(&plain));
        let messages = from_file["messages"].as_array().expect("messages");
        assert!(messages.len() > 3, "{route:?}: {from_file}");
        assert_eq!(run(route, Some(&packed)), from_file, "{route:?}: artifact");
        assert_eq!(run(route, None), from_file, "{route:?}: stdin");
    }
}
