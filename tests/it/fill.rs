//! `dsh measure --fill`: where the surface's tokens go, adding up exactly.

use serde_json::Value as J;

use crate::support::{TestEnv, corpus_logs, sample, shared};

fn fill_of(env: &TestEnv, log: &std::path::Path) -> Option<J> {
    let out = env
        .dsh()
        .args(["measure", "--fill", "--json"])
        .arg(log)
        .output()
        .unwrap();
    if !out.status.success() {
        return None;
    }
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

/// The rows add up to the surface's tokens, to the token, with nothing
/// priced apart, and each tool's largest results are real nodes of it.
fn check(v: &J, name: &str) {
    let f = &v["fill"];
    let surface = v["surfaceTokens"].as_u64().unwrap();
    let parts = [
        "userTokens",
        "contextTokens",
        "assistantTokens",
        "summaryTokens",
        "reasoningTokens",
        "systemTokens",
        "otherTokens",
        "toolResultTokens",
        "toolCallTokens",
    ];
    let sum: u64 = parts.iter().map(|k| f[k].as_u64().unwrap()).sum();
    assert_eq!(sum, surface, "{name}: the parts");
    assert_eq!(f["totalTokens"].as_u64(), Some(surface), "{name}");
    assert_eq!(f["adjustedNodes"], 0, "{name}");
    let by_tool: u64 = f["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["resultTokens"].as_u64().unwrap())
        .sum();
    assert_eq!(by_tool, f["toolResultTokens"].as_u64().unwrap(), "{name}");
    let nodes: std::collections::HashMap<u64, u64> = v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["seq"].as_u64().unwrap(), n["tokens"].as_u64().unwrap()))
        .collect();
    for t in f["tools"].as_array().unwrap() {
        for l in t["largest"].as_array().unwrap() {
            let seq = l["seq"].as_u64().unwrap();
            assert_eq!(
                nodes.get(&seq),
                l["tokens"].as_u64().as_ref(),
                "{name} seq {seq}"
            );
        }
    }
}

#[test]
fn samples_add_up_and_name_their_tools() {
    let env = TestEnv::new();
    let v = fill_of(&env, &sample("coding-session.jsonl")).unwrap();
    check(&v, "coding-session");
    let tools: Vec<&str> = v["fill"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"bash") && tools.contains(&"read_file"),
        "{tools:?}"
    );
    let v = fill_of(&env, &sample("compacted.jsonl")).unwrap();
    check(&v, "compacted");
    assert!(v["fill"]["summaryTokens"].as_u64().unwrap() > 0);
    let out = env
        .dsh()
        .args(["measure", "--fill"])
        .arg(sample("coding-session.jsonl"))
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("tool results: bash"), "{text}");
    assert!(text.contains("what fills the surface"), "{text}");
}

#[test]
fn genlog_and_corpus_logs_add_up_exactly() {
    let Some(shared) = shared("genlog_and_corpus_logs_add_up_exactly") else {
        return;
    };
    let env = TestEnv::new();
    let mut measured = 0;
    for (i, extra) in [
        vec!["--compactions", "3", "--prune-passes", "2"],
        vec!["--restarts", "1", "--open-tail", "--image-rate", "0.2"],
    ]
    .into_iter()
    .enumerate()
    {
        let out = env.home().join(format!("gen{i}.jsonl"));
        let st = std::process::Command::new(shared.join("tools/genlog"))
            .args(["--events", "3000", "--seed", "5"])
            .args(extra)
            .arg("-o")
            .arg(&out)
            .status()
            .unwrap();
        assert!(st.success());
        check(&fill_of(&env, &out).unwrap(), "genlog");
        measured += 1;
    }
    for (name, path) in corpus_logs(&shared) {
        if let Some(v) = fill_of(&env, &path) {
            check(&v, &name);
            measured += 1;
        }
    }
    assert!(measured > 100, "{measured} logs measured");
}
