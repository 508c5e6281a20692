//! `dsh health`: hand-built logs for each finding kind (a positive and
//! near misses), genlog logs with compactions, the corpus, and the seqs of
//! every finding read back from the log.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Value as J, json};

use crate::support::{TestEnv, corpus_logs, shared};

/// A log written the harness's way, event by event.
struct Log {
    lines: Vec<String>,
    seq: u64,
    time: u64,
    turn: u64,
    step: u64,
    /// The surface, in order (seqs).
    surface: Vec<u64>,
    calls: u64,
    system: String,
    /// Result seq → its turn and step.
    results: HashMap<u64, (u64, u64)>,
}

const PREAMBLE: &str = "This is an automatically generated checkpoint.\n\n<compacted-summary>";

impl Log {
    fn new(id: &str) -> Log {
        let head = json!({"type":"session","version":0,"id":id,"createdAt":1780000000000u64,"cwd":"/work/health","delegationDepth":0});
        let mut l = Log {
            lines: vec![head.to_string()],
            seq: 0,
            time: 1_780_000_000_000,
            turn: 0,
            step: 0,
            surface: Vec::new(),
            calls: 0,
            system: "You are a careful agent.".into(),
            results: HashMap::new(),
        };
        l.header("initial");
        l.ev(
            "request/context",
            json!({"provider":"deepseek-official","model":"deepseek-v4-flash","contextWindow":128000}),
        );
        l
    }

    fn raw(&mut self, ty: &str, data: J, op: Option<J>, sources: Option<Vec<u64>>) -> u64 {
        let seq = self.seq;
        let mut e = json!({"type": ty, "seq": seq, "time": self.time, "data": data});
        if let Some(s) = sources {
            e["sourceEventSeqs"] = json!(s);
        }
        if let Some(op) = op {
            e["surfaceOp"] = op;
        }
        self.lines.push(e.to_string());
        self.seq += 1;
        self.time += 1000;
        seq
    }

    fn ev(&mut self, ty: &str, data: J) -> u64 {
        self.raw(ty, data, None, None)
    }

    fn append(&mut self, ty: &str, data: J, sources: Option<Vec<u64>>) -> u64 {
        let seq = self.raw(ty, data, Some(json!("append")), sources);
        self.surface.push(seq);
        seq
    }

    fn header(&mut self, reason: &str) -> u64 {
        let h = json!({"header": {"config": {"provider": "deepseek-official", "model": "deepseek-v4-flash"},
            "system": self.system, "tools": [{"name":"read","description":"Read a file","parameters":{}}]},
            "reason": reason});
        self.ev("request/header", h)
    }

    fn turn_start(&mut self, prompt: &str) -> u64 {
        self.turn += 1;
        self.step = 0;
        let s = self.ev("turn/start", json!({"turn": self.turn}));
        self.step_start();
        let m = json!({"id": format!("u{}", self.seq), "role": "user", "content": [{"type":"text","text":prompt}], "source": {"kind": "user"}});
        self.append("user/message", m, None);
        s
    }

    fn step_start(&mut self) {
        self.step += 1;
        self.ev("step/start", json!({"turn": self.turn, "step": self.step}));
    }

    fn step_end(&mut self) {
        self.ev("step/end", json!({"turn": self.turn, "step": self.step}));
    }

    fn turn_end(&mut self, kind: &str) -> u64 {
        self.step_end();
        self.ev(
            "turn/end",
            json!({"turn": self.turn, "reason": {"kind": kind}}),
        )
    }

    /// An answered request with this prompt size.
    fn model(&mut self, content: Vec<J>, prompt: u64) -> u64 {
        let m = json!({"id": format!("a{}", self.seq), "role": "assistant", "content": content,
            "source": {"kind": "model", "provider": "deepseek-official", "model": "deepseek-v4-flash"}});
        self.append(
            "assistant/message",
            json!({"turn": self.turn, "step": self.step, "message": m,
                "usage": {"inputTokens": prompt, "outputTokens": 20}}),
            Some(vec![]),
        )
    }

    fn say(&mut self, text: &str) -> u64 {
        self.model(vec![json!({"type":"text","text":text})], 2000)
    }

    /// A tool call in its own step: (call seq, result seq).
    fn call(&mut self, name: &str, args: J, result: &str) -> (u64, u64) {
        self.calls += 1;
        let id = format!("call_{}", self.calls);
        let args = args.to_string();
        self.model(
            vec![json!({"type":"tool-call","id":id,"name":name,"arguments":args})],
            2000,
        );
        let c = self.ev(
            "tool/call",
            json!({"turn": self.turn, "step": self.step, "callId": id, "name": name, "arguments": args}),
        );
        let m = json!({"id": format!("r{}", self.seq), "role": "user", "source": {"kind": "tool", "callId": id},
            "content": [{"type":"tool-result","toolCallId": id, "content": [{"type":"text","text":result}], "isError": false}]});
        let r = self.append(
            "tool/result",
            json!({"turn": self.turn, "step": self.step, "message": m}),
            Some(vec![c]),
        );
        self.results.insert(r, (self.turn, self.step));
        self.step_end();
        self.step_start();
        (c, r)
    }

    /// A prune of one result: (prune seq, replacement seq).
    fn prune(&mut self, result: u64, call_id: &str) -> (u64, u64) {
        let p = self.ev(
            "compaction/prune",
            json!({"shadowedRange": {"start": result, "end": result}, "shadowedSeqs": [result], "shadowedTokenCount": 500}),
        );
        let m = json!({"id": format!("r{result}"), "role": "user", "source": {"kind": "tool", "callId": call_id},
            "content": [{"type":"tool-result","toolCallId": call_id, "content": [{"type":"text","text":"[pruned]"}], "isError": false}]});
        let (turn, step) = self.results[&result];
        let r = self.raw(
            "tool/result",
            json!({"turn": turn, "step": step, "message": m}),
            Some(json!({"op":"replace","start":result,"end":result})),
            Some(vec![p, result]),
        );
        let i = self.surface.iter().position(|s| *s == result).unwrap();
        self.surface[i] = r;
        (p, r)
    }

    /// A compaction bracket of the open turn over the surface's first
    /// `n` nodes: (start, summary, end); `error` fails it instead.
    fn compact(&mut self, n: usize, error: Option<&str>, summary: &str) -> (u64, Option<u64>, u64) {
        let id = format!("cmp-{}", self.seq);
        let turn = if self.turn == 0 {
            J::Null
        } else {
            json!(self.turn)
        };
        let s = self.ev(
            "compaction/start",
            json!({"compactionId": id, "turn": turn}),
        );
        if let Some(e) = error {
            let end = self.ev(
                "compaction/end",
                json!({"compactionId": id, "turn": turn, "error": e}),
            );
            return (s, None, end);
        }
        let shadowed: Vec<u64> = self.surface[..n].to_vec();
        let (a, b) = (shadowed[0], shadowed[n - 1]);
        let sum = self.ev(
            "compaction/summary",
            json!({"compactionId": id, "summary": [{"type":"text","text":summary}],
                "shadowedRange": {"start": a, "end": b}, "shadowedSeqs": shadowed,
                "shadowedTokenCount": 100, "provider": "deepseek-official", "model": "deepseek-v4-flash",
                "usage": {"inputTokens": 3000, "outputTokens": 200}}),
        );
        let mut src = vec![s, sum];
        src.extend(&shadowed);
        let m = json!({"id": format!("c{}", self.seq), "role": "user",
            "content": [{"type":"text","text":PREAMBLE},{"type":"text","text":summary},{"type":"text","text":"</compacted-summary>"}],
            "source": {"kind": "plugin", "plugin": "compact", "compactionId": id}});
        let c = self.raw(
            "user/message",
            m,
            Some(json!({"op":"replace","start":a,"end":b})),
            Some(src),
        );
        self.surface.drain(..n);
        self.surface.insert(0, c);
        let end = self.ev("compaction/end", json!({"compactionId": id, "turn": turn}));
        (s, Some(sum), end)
    }

    /// A failed attempt: its finish chunk with this failure code.
    fn fail(&mut self, code: &str) -> u64 {
        self.ev(
            "assistant/chunk",
            json!({"turn": self.turn, "step": self.step, "chunk": {"type":"finish",
                "reason": {"kind":"error","failure":{"message":"failed","code":code}}}}),
        )
    }

    fn write(&self, dir: &Path, name: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, self.lines.join("\n") + "\n").unwrap();
        p
    }
}

fn health(env: &TestEnv, args: &[&str], logs: &[&Path]) -> (J, i32) {
    let out = env
        .dsh()
        .args(["health", "--json"])
        .args(args)
        .args(logs)
        .output()
        .unwrap();
    let v: J = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (v, out.status.code().unwrap())
}

/// (kind, severity, seqs) of one log's findings.
fn findings(env: &TestEnv, log: &Path) -> Vec<(String, String, Vec<u64>)> {
    let (v, _) = health(env, &[], &[log]);
    check_seqs(env, &v);
    let mut out = Vec::new();
    for s in v["sessions"].as_array().unwrap() {
        for f in s["findings"].as_array().unwrap() {
            out.push((
                f["kind"].as_str().unwrap().to_string(),
                f["severity"].as_str().unwrap().to_string(),
                f["seqs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_u64().unwrap())
                    .collect(),
            ));
        }
    }
    out
}

fn kinds(f: &[(String, String, Vec<u64>)]) -> Vec<&str> {
    f.iter().map(|x| x.0.as_str()).collect()
}

/// The event types a finding of each kind may point at.
fn allowed(kind: &str) -> &'static [&'static str] {
    match kind {
        "compaction-loop" => &[
            "compaction/start",
            "compaction/summary",
            "compaction/end",
            "assistant/message",
        ],
        "lost-context-reread" => &[
            "tool/result",
            "compaction/summary",
            "compaction/prune",
            "tool/call",
        ],
        "summary-failure" => &["compaction/start", "compaction/summary", "compaction/end"],
        "overflow" => &[
            "assistant/chunk",
            "assistant/attempt",
            "compaction/start",
            "compaction/end",
            "assistant/message",
            "turn/end",
            "turn/start",
            "session/end-seed",
            "step/start",
        ],
        "cache-churn" => &["request/header"],
        "stale-lock" => &["compaction/start", "session/end-seed"],
        "abandoned-turn" => &["turn/start", "turn/end", "session/end-seed"],
        k => panic!("unknown kind {k}"),
    }
}

/// Every finding's seqs name events of the log that show it: read each
/// log's events back (`dsh events --json --all`) and check their types.
fn check_seqs(env: &TestEnv, v: &J) {
    for s in v["sessions"].as_array().unwrap() {
        let file = s["file"].as_str().unwrap();
        let out = env
            .dsh()
            .args(["events", "--json", "--all", file])
            .output()
            .unwrap();
        let types: HashMap<u64, String> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .filter_map(|l| serde_json::from_str::<J>(l).ok())
            .filter_map(|e| Some((e["seq"].as_u64()?, e["type"].as_str()?.to_string())))
            .collect();
        for f in s["findings"].as_array().unwrap() {
            let kind = f["kind"].as_str().unwrap();
            let seqs = f["seqs"].as_array().unwrap();
            assert!(!seqs.is_empty(), "{file}: {f}");
            for q in seqs {
                let q = q.as_u64().unwrap();
                let ty = types
                    .get(&q)
                    .unwrap_or_else(|| panic!("{file}: seq {q} of {f} is no event"));
                assert!(
                    allowed(kind).contains(&ty.as_str()),
                    "{file}: {kind} seq {q} is {ty}"
                );
            }
        }
    }
}

#[test]
fn compaction_loops_and_compactions_that_stay_over() {
    let env = TestEnv::new();
    let dir = env.home();
    // Three compactions within three requests.
    let mut l = Log::new("loop");
    l.turn_start("go");
    for i in 0..3 {
        l.say(&format!("step {i}"));
        l.say("more");
        l.compact(2, None, "summary");
    }
    l.say("done");
    l.turn_end("completed");
    let f = findings(&env, &l.write(dir, "loop.jsonl"));
    assert_eq!(kinds(&f), ["compaction-loop"], "{f:?}");
    assert_eq!(f[0].1, "warn");
    assert_eq!(f[0].2.len(), 6, "three starts and three summaries");
    // Near miss: the same three, twelve requests apart.
    let mut l = Log::new("spread");
    l.turn_start("go");
    for _ in 0..3 {
        for _ in 0..12 {
            l.say("work");
        }
        l.compact(2, None, "summary");
    }
    l.say("done");
    l.turn_end("completed");
    let p = l.write(dir, "spread.jsonl");
    assert!(findings(&env, &p).is_empty());
    // … which a tighter flag calls a loop.
    let (v, _) = health(&env, &["--loop-requests", "30"], &[&p]);
    assert_eq!(v["summary"]["findings"], 1);
    // Still over the threshold (102,400 of 128,000) after a compaction.
    let mut l = Log::new("over");
    l.turn_start("go");
    l.say("a");
    l.say("b");
    let (s, sum, e) = l.compact(2, None, "summary");
    let m = l.model(vec![json!({"type":"text","text":"big"})], 110_000);
    l.turn_end("completed");
    let f = findings(&env, &l.write(dir, "over.jsonl"));
    assert_eq!(
        f,
        [(
            "compaction-loop".into(),
            "error".into(),
            vec![s, sum.unwrap(), e, m]
        )]
    );
    // Near miss: just under it.
    let mut l = Log::new("under");
    l.turn_start("go");
    l.say("a");
    l.say("b");
    l.compact(2, None, "summary");
    l.model(vec![json!({"type":"text","text":"fits"})], 102_399);
    l.turn_end("completed");
    assert!(findings(&env, &l.write(dir, "under.jsonl")).is_empty());
}

#[test]
fn a_read_again_after_its_result_was_shadowed() {
    let env = TestEnv::new();
    let dir = env.home();
    let big = "x".repeat(2000);
    let mut l = Log::new("reread");
    l.turn_start("go");
    let (_, r1) = l.call("read", json!({"path": "a.txt"}), &big);
    l.call("read", json!({"path": "b.txt"}), &big);
    let (p, _) = l.prune(r1, "call_1");
    let (c3, r3) = l.call("read", json!({"path": "a.txt"}), &big);
    // b.txt was never shadowed: reading it again is not lost context.
    l.call("read", json!({"path": "b.txt"}), &big);
    l.say("done");
    l.turn_end("completed");
    let f = findings(&env, &l.write(dir, "reread.jsonl"));
    assert_eq!(
        f,
        [(
            "lost-context-reread".into(),
            "warn".into(),
            vec![r1, p, c3, r3]
        )]
    );
    let (v, _) = health(&env, &[], &[&dir.join("reread.jsonl")]);
    let cost = &v["sessions"][0]["findings"][0]["cost"];
    assert!(cost["tokens"].as_f64().unwrap() >= 500.0, "{cost}");
    assert!(cost["costUsd"].as_f64().unwrap() > 0.0, "{cost}");
    // Near misses: the same file read twice with nothing shadowed, another
    // file after a compaction, and a small result under the threshold.
    let mut l = Log::new("twice");
    l.turn_start("go");
    l.call("read", json!({"path": "a.txt"}), &big);
    l.call("read", json!({"path": "a.txt"}), &big);
    l.compact(3, None, "summary");
    l.call("read", json!({"path": "c.txt"}), &big);
    l.call("read", json!({"path": "a.txt", "offset": 40}), &big);
    // Its latest result (the second read) is still on the surface.
    l.call("read", json!({"path": "a.txt"}), &big);
    l.say("done");
    l.turn_end("completed");
    assert!(findings(&env, &l.write(dir, "twice.jsonl")).is_empty());
    let mut l = Log::new("small");
    l.turn_start("go");
    let (_, r) = l.call("read", json!({"path": "a.txt"}), "tiny");
    l.prune(r, "call_1");
    l.call("read", json!({"path": "a.txt"}), "tiny");
    l.turn_end("completed");
    assert!(findings(&env, &l.write(dir, "small.jsonl")).is_empty());
}

#[test]
fn summary_failures_and_their_retries() {
    let env = TestEnv::new();
    let dir = env.home();
    let mut l = Log::new("fail");
    l.turn_start("go");
    l.say("a");
    let (s1, _, e1) = l.compact(1, Some("summarizer timed out"), "");
    l.say("b");
    l.turn_end("completed");
    l.turn_start("again");
    l.say("c");
    let (s2, _, e2) = l.compact(1, Some("provider error"), "");
    let (s3, _, e3) = l.compact(1, Some("provider error"), "");
    l.say("d");
    l.turn_end("completed");
    l.turn_start("empty");
    let (s4, m4, e4) = l.compact(2, None, "   ");
    l.turn_end("completed");
    let f = findings(&env, &l.write(dir, "fail.jsonl"));
    assert_eq!(
        f,
        [
            ("summary-failure".into(), "warn".into(), vec![s1, e1]),
            (
                "summary-failure".into(),
                "error".into(),
                vec![s2, e2, s3, e3]
            ),
            (
                "summary-failure".into(),
                "warn".into(),
                vec![s4, m4.unwrap(), e4]
            ),
        ]
    );
    let mut l = Log::new("fine");
    l.turn_start("go");
    l.say("a");
    l.compact(1, None, "a summary");
    l.turn_end("completed");
    assert!(findings(&env, &l.write(dir, "fine.jsonl")).is_empty());
}

#[test]
fn overflows_recovered_or_not() {
    let env = TestEnv::new();
    let dir = env.home();
    let mut l = Log::new("overflow");
    l.turn_start("go");
    l.say("a");
    l.say("b");
    let f1 = l.fail("CONTEXT_WINDOW_EXCEEDED");
    let (s, _, e) = l.compact(2, None, "summary");
    let m = l.say("answered");
    l.turn_end("completed");
    l.turn_start("again");
    let f2 = l.fail("CONTEXT_WINDOW_EXCEEDED");
    l.step_end();
    let t = l.ev(
        "turn/end",
        json!({"turn": 2, "reason": {"kind": "error", "error": {"message": "too long", "code": "CONTEXT_WINDOW_EXCEEDED"}}}),
    );
    let f = findings(&env, &l.write(dir, "overflow.jsonl"));
    assert_eq!(
        f,
        [
            ("overflow".into(), "warn".into(), vec![f1, s, e, m]),
            ("overflow".into(), "error".into(), vec![f2, t]),
        ]
    );
    // Near miss: another failure code, retried and answered.
    let mut l = Log::new("ratelimit");
    l.turn_start("go");
    l.fail("RATE_LIMIT");
    l.say("answered");
    l.turn_end("completed");
    assert!(findings(&env, &l.write(dir, "ratelimit.jsonl")).is_empty());
}

#[test]
fn cache_churn_counts_prefix_breaks() {
    let env = TestEnv::new();
    let dir = env.home();
    let build = |changes: usize| {
        let mut l = Log::new("churn");
        let mut seqs = Vec::new();
        for i in 0..4 {
            l.turn_start("go");
            if i > 0 && i <= changes {
                l.system = format!("You are agent number {i}.");
                seqs.push(l.header("change"));
            } else if i > 0 {
                l.header("resume");
            }
            l.say("ok");
            l.turn_end("completed");
        }
        (l, seqs)
    };
    let (l, seqs) = build(3);
    let f = findings(&env, &l.write(dir, "churn.jsonl"));
    assert_eq!(f, [("cache-churn".into(), "warn".into(), seqs)]);
    let (v, _) = health(&env, &[], &[&dir.join("churn.jsonl")]);
    let cost = &v["sessions"][0]["findings"][0]["cost"];
    assert_eq!(
        cost["tokens"], 6000.0,
        "three first requests' uncached input"
    );
    // Near misses: two changes, and headers that repeat unchanged.
    let (l, _) = build(2);
    assert!(findings(&env, &l.write(dir, "two.jsonl")).is_empty());
    let (l, _) = build(0);
    assert!(findings(&env, &l.write(dir, "same.jsonl")).is_empty());
}

#[test]
fn stale_locks_and_abandoned_turns() {
    let env = TestEnv::new();
    let dir = env.home();
    let mut l = Log::new("stale");
    let t1 = l.turn_start("go");
    l.say("a");
    let (s, _, _) = (
        l.ev("compaction/start", json!({"compactionId": "c1", "turn": 1})),
        0,
        0,
    );
    let seed = l.ev("session/end-seed", json!({}));
    let t2 = l.turn_start("again");
    l.say("b");
    let t3 = l.turn_start("once more");
    l.say("c");
    l.turn_end("completed");
    let f = findings(&env, &l.write(dir, "stale.jsonl"));
    assert_eq!(
        f,
        [
            ("abandoned-turn".into(), "warn".into(), vec![t1, seed]),
            ("stale-lock".into(), "warn".into(), vec![s, seed]),
            ("abandoned-turn".into(), "warn".into(), vec![t2, t3]),
        ]
    );
    // Near miss: every turn ends, every bracket closes.
    let mut l = Log::new("tidy");
    l.turn_start("go");
    l.say("a");
    l.compact(1, None, "summary");
    l.turn_end("completed");
    l.ev("session/end-seed", json!({}));
    l.turn_start("again");
    l.say("b");
    l.turn_end("aborted");
    assert!(findings(&env, &l.write(dir, "tidy.jsonl")).is_empty());
}

#[test]
fn fail_on_sets_the_exit_status_and_the_summary_ranks_kinds() {
    let env = TestEnv::new();
    let dir = env.home();
    let mut l = Log::new("mixed");
    l.turn_start("go");
    l.say("a");
    l.compact(1, Some("x"), "");
    l.compact(1, Some("y"), "");
    l.turn_end("completed");
    let bad = l.write(dir, "bad.jsonl");
    let mut l = Log::new("warn-only");
    l.turn_start("go");
    l.turn_start("again");
    l.turn_end("completed");
    let warn = l.write(dir, "warn.jsonl");
    let (v, code) = health(&env, &[], &[&bad, &warn]);
    assert_eq!(code, 0, "no --fail-on: findings do not fail");
    assert_eq!(v["summary"]["sessions"], 2);
    assert_eq!(v["summary"]["errors"], 1);
    assert_eq!(v["summary"]["kinds"][0]["kind"], "summary-failure");
    assert_eq!(v["summary"]["projects"][0]["project"], "/work/health");
    assert_eq!(health(&env, &["--fail-on", "error"], &[&bad]).1, 1);
    assert_eq!(health(&env, &["--fail-on", "error"], &[&warn]).1, 0);
    assert_eq!(health(&env, &["--fail-on", "warn"], &[&warn]).1, 1);
    let out = env
        .dsh()
        .args(["health", "--fail-on", "warn"])
        .arg(&bad)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("summary-failure") && text.contains("kind (costliest first)"),
        "{text}"
    );
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn genlog_compactions_and_the_corpus() {
    let Some(shared) = shared("genlog_compactions_and_the_corpus") else {
        return;
    };
    let env = TestEnv::new();
    let mut logs = Vec::new();
    for seed in 1..=3 {
        let out = env.home().join(format!("gen{seed}.jsonl"));
        let st = std::process::Command::new(shared.join("tools/genlog"))
            .args([
                "--events",
                "6000",
                "--compactions",
                "6",
                "--prune-passes",
                "3",
            ])
            .args(["--change-rate", "0.2", "--seed", &seed.to_string(), "-o"])
            .arg(&out)
            .status()
            .unwrap();
        assert!(st.success());
        logs.push(out);
    }
    let refs: Vec<&Path> = logs.iter().map(PathBuf::as_path).collect();
    let (v, _) = health(&env, &[], &refs);
    check_seqs(&env, &v);
    let kinds: Vec<&str> = v["summary"]["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"compaction-loop"), "{kinds:?}");
    // The corpus: every readable log checked, every seq read back.
    let corpus: Vec<PathBuf> = corpus_logs(&shared).into_iter().map(|(_, p)| p).collect();
    let refs: Vec<&Path> = corpus.iter().map(PathBuf::as_path).collect();
    let (v, _) = health(&env, &[], &refs);
    check_seqs(&env, &v);
    assert!(v["summary"]["sessions"].as_u64().unwrap() > 100);
}
