//! Totals that hold on real homes (issue 42): one unpriced session never
//! blanks a total, and a fork's inherited seed is counted once, in the
//! session that made its requests.

use std::path::{Path, PathBuf};

use dsh::Value;
use serde_json::{Value as J, json};

use crate::support::{TestEnv, sample};

/// The coding-session sample on another route (priced or not).
fn rerouted(provider: &str, model: &str, id: &str) -> String {
    std::fs::read_to_string(sample("coding-session.jsonl"))
        .unwrap()
        .replace("\"deepseek-official\"", &format!("\"{provider}\""))
        .replace("\"deepseek-v4-flash\"", &format!("\"{model}\""))
        .replace("\"sample-coding-session\"", &format!("\"{id}\""))
}

/// A fork child of `parent` (its text): the parent's events copied as the
/// seed (`seedLength`), a `session/end-seed`, then one turn of its own
/// with one model request, the way the harness writes a fork.
fn fork_of(parent: &str, id: &str) -> String {
    let mut lines = parent.lines();
    let head: J = serde_json::from_str(lines.next().unwrap()).unwrap();
    let events: Vec<J> = lines.map(|l| serde_json::from_str(l).unwrap()).collect();
    // The seed as the parent's stored events (a packed row stays packed).
    let stored: u64 = events
        .iter()
        .map(|e| {
            e.get("seq")
                .map(|_| 1)
                .unwrap_or_else(|| e["data"]["dt"].as_array().unwrap().len() as u64 + 1)
        })
        .sum();
    let last_time = events
        .iter()
        .filter_map(|e| e.get("time").and_then(|t| t.as_u64()))
        .max()
        .unwrap();
    let mut out = vec![
        json!({"type": "session", "version": 0, "id": id, "createdAt": last_time + 10,
               "cwd": head["cwd"], "parentSession": head["id"], "seedLength": stored,
               "origin": "subagent", "delegationDepth": 1})
        .to_string(),
    ];
    out.extend(events.iter().map(|e| e.to_string()));
    let mut seq = stored;
    let mut time = last_time + 100;
    let mut ev = |ty: &str, data: J, op: bool| {
        let mut e = json!({"type": ty, "seq": seq, "time": time, "data": data});
        if op {
            e["surfaceOp"] = json!("append");
        }
        seq += 1;
        time += 5;
        e.to_string()
    };
    let header = events
        .iter()
        .rfind(|e| e["type"] == "request/header")
        .unwrap()["data"]["header"]
        .clone();
    let route = &header["config"];
    out.push(ev("session/end-seed", json!({}), false));
    out.push(ev("turn/start", json!({"turn": 9}), false));
    out.push(ev("step/start", json!({"turn": 9, "step": 1}), false));
    out.push(ev(
        "user/message",
        json!({"content": [{"type": "text", "text": "What did we fix?"}], "source": {"kind": "user"}, "role": "user", "id": "fork-u"}),
        true,
    ));
    out.push(ev(
        "request/header",
        json!({"header": header, "reason": "resume"}),
        false,
    ));
    out.push(ev(
        "assistant/message",
        json!({"turn": 9, "step": 1, "message": {"role": "assistant", "content": [{"type": "text", "text": "The unicode_keys test."}],
               "source": {"kind": "model", "provider": route["provider"], "model": route["model"]}, "id": "fork-a"},
               "usage": {"inputTokens": 40, "outputTokens": 6, "cacheReadTokens": 3200}}),
        true,
    ));
    out.push(ev("step/end", json!({"turn": 9, "step": 1}), false));
    out.push(ev(
        "turn/end",
        json!({"turn": 9, "reason": {"kind": "completed"}}),
        false,
    ));
    out.join("\n") + "\n"
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn num(v: &Value<'_>, path: &[&str]) -> Option<f64> {
    let mut x = v;
    for k in path {
        x = x.get(k)?;
    }
    x.as_f64()
}

/// The row of `session` in a `{logs: [...]}` document.
fn row<'a>(v: &'a Value<'static>, key: &str, session: &str) -> &'a Value<'static> {
    v.get("logs")
        .and_then(|l| l.as_arr())
        .unwrap()
        .iter()
        .find(|r| r.get(key).and_then(|s| s.as_str()).as_deref() == Some(session))
        .unwrap_or_else(|| panic!("no row for {session}"))
}

#[test]
fn one_unpriced_session_leaves_every_priced_total_and_counts_itself() {
    let env = TestEnv::new();
    let dir = tempfile::tempdir().unwrap();
    let priced = rerouted("deepseek-official", "deepseek-chat", "priced");
    write(dir.path(), "priced.jsonl", &priced);
    write(
        dir.path(),
        "unpriced.jsonl",
        &rerouted("local-llm", "my-model", "unpriced"),
    );
    let d = dir.path().to_str().unwrap();
    let requests = priced.matches("\"assistant/message\"").count() as f64;

    let (u, code) = env.json(&["usage", "--json", "--session", d]);
    assert_eq!(code, 0);
    let cost = num(&u, &["totals", "costUsd"]).expect("a total cost");
    assert!(cost > 0.0);
    assert_eq!(num(&u, &["totals", "unpricedRequests"]), Some(requests));

    let (s, _) = env.json(&["sessions", "--json", d]);
    assert!(num(&s, &["summary", "costUsd"]).is_some_and(|c| (c - cost).abs() < 1e-12));
    let un = row(&s, "session", "unpriced");
    assert_eq!(num(un, &["unpricedRequests"]), Some(requests));
    assert_eq!(
        un.get("costUsd").map(|c| matches!(c, Value::Null)),
        Some(true)
    );

    let (c, _) = env.json(&["cache", "--json", d]);
    let t = c.get("summary").and_then(|x| x.get("totals")).unwrap();
    assert!(num(t, &["predictedCost", "total"]).is_some_and(|x| x > 0.0));
    assert_eq!(num(t, &["unpricedRequests"]), Some(requests));
    for cause in t.get("byCause").and_then(|b| b.as_arr()).unwrap() {
        // Every cause has priced requests (the two sessions are alike).
        assert!(num(cause, &["missCostUsd"]).is_some(), "{cause:?}");
    }

    // simulate over the unpriced session alone: no cost anywhere, said so;
    // a summariser that made no call costs 0.
    let (v, _) = env.json(&[
        "simulate",
        "--json",
        dir.path().join("unpriced.jsonl").to_str().unwrap(),
    ]);
    for r in v.get("rows").and_then(|r| r.as_arr()).unwrap() {
        assert!(num(r, &["unpricedRequests"]).is_some_and(|n| n >= requests));
        assert_eq!(num(r, &["summariserCalls"]), Some(0.0));
        assert_eq!(num(r, &["summariserCost"]), Some(0.0));
    }
    assert_eq!(
        v.get("cheapestBy").and_then(|b| b.as_str()).as_deref(),
        Some("tokens")
    );
    let (v, _) = env.json(&[
        "simulate",
        "--json",
        dir.path().join("priced.jsonl").to_str().unwrap(),
    ]);
    assert_eq!(
        v.get("cheapestBy").and_then(|b| b.as_str()).as_deref(),
        Some("cost")
    );

    // The text says how many were left out.
    let out = env
        .dsh()
        .args(["cache", "--by", "cause", d])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!(
            "{requests} of {} requests have no known price",
            2.0 * requests
        )),
        "{text}"
    );
}

#[test]
fn a_forks_inherited_requests_are_counted_once() {
    let env = TestEnv::new();
    let dir = tempfile::tempdir().unwrap();
    let parent = rerouted("deepseek-official", "deepseek-chat", "parent");
    let child = fork_of(&parent, "child");
    write(dir.path(), "parent.jsonl", &parent);
    let child_path = write(dir.path(), "child.jsonl", &child);
    let d = dir.path().to_str().unwrap();
    let parent_requests = parent.matches("\"assistant/message\"").count() as f64;

    let (s, code) = env.json(&["sessions", "--json", d]);
    assert_eq!(code, 0, "{s:?}");
    let c = row(&s, "session", "child");
    assert_eq!(num(c, &["requests"]), Some(1.0));
    assert_eq!(num(c, &["agentRequests"]), Some(1.0));
    assert_eq!(num(c, &["inheritedRequests"]), Some(parent_requests));
    assert_eq!(
        c.get("forkOf").and_then(|p| p.as_str()).as_deref(),
        Some("parent")
    );
    let p = row(&s, "session", "parent");
    assert_eq!(num(p, &["requests"]), Some(parent_requests));
    assert!(p.get("forkOf").is_some_and(|f| matches!(f, Value::Null)));

    // usage: the home's total is the parent's plus the fork's own request.
    let (u, _) = env.json(&["usage", "--json", d]);
    assert_eq!(
        num(&u, &["totals", "requests"]),
        Some(parent_requests + 1.0)
    );
    let (u1, _) = env.json(&["usage", "--json", child_path.to_str().unwrap()]);
    assert_eq!(num(&u1, &["totals", "requests"]), Some(1.0));
    assert_eq!(num(&u1, &["totals", "inputTokens"]), Some(40.0));

    // simulate on the fork alone: one request of its own.
    let (v, _) = env.json(&["simulate", "--json", child_path.to_str().unwrap()]);
    let rec = &v.get("rows").and_then(|r| r.as_arr()).unwrap()[0];
    assert_eq!(num(rec, &["requests"]), Some(1.0));
    assert_eq!(num(rec, &["inheritedRequests"]), Some(parent_requests));

    // export: the requests table holds each request once.
    let out = dir.path().join("out");
    let st = env
        .dsh()
        .args(["export", "--format", "jsonl", "--out"])
        .arg(&out)
        .arg(d)
        .output()
        .unwrap();
    assert!(st.status.success(), "{st:?}");
    let reqs = std::fs::read_to_string(out.join("requests.jsonl")).unwrap();
    let agent = reqs.lines().filter(|l| l.contains("\"agent\"")).count() as f64;
    assert_eq!(agent, parent_requests + 1.0, "{reqs}");

    // The text names the relation.
    let out = env
        .dsh()
        .args(["sessions", d])
        .env("COLUMNS", "250")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("fork of"), "{text}");
}
