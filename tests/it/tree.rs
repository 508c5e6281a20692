//! `dsh sessions --tree`: each child under its parent, forks and subagents
//! named, and every subtree's cost the sum of its sessions'.

use serde_json::Value as J;

use crate::sessions::{DAY, JUL1, authored_log};
use crate::support::{TestEnv, shared};

/// Every node: its children name it as parent, and its subtree sums its
/// own figures and its children's subtrees. Returns the sessions seen.
fn check(n: &J) -> u64 {
    let mut sessions = 1;
    let mut cost = n["own"]["costUsd"].as_f64().unwrap();
    let mut requests = n["own"]["requests"].as_u64().unwrap();
    for c in n["children"].as_array().unwrap() {
        assert_eq!(c["parent"], n["session"], "{c}");
        assert_ne!(c["relation"], "root");
        sessions += check(c);
        cost += c["subtree"]["costUsd"].as_f64().unwrap();
        requests += c["subtree"]["requests"].as_u64().unwrap();
    }
    assert_eq!(n["subtree"]["sessions"].as_u64(), Some(sessions));
    assert_eq!(n["subtree"]["requests"].as_u64(), Some(requests));
    assert!((n["subtree"]["costUsd"].as_f64().unwrap() - cost).abs() < 1e-12);
    sessions
}

fn tree(env: &TestEnv, path: &std::path::Path) -> J {
    let out = env
        .dsh()
        .args(["sessions", "--tree", "--json"])
        .arg(path)
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap()
}

fn find<'a>(nodes: &'a J, id: &str) -> Option<&'a J> {
    for n in nodes.as_array().unwrap() {
        if n["session"] == id {
            return Some(n);
        }
        if let Some(x) = find(&n["children"], id) {
            return Some(x);
        }
    }
    None
}

#[test]
fn a_home_of_parents_subagents_and_an_orphan() {
    let env = TestEnv::new();
    let dir = env.home().join("home/sessions/--w--");
    let usage = r#"{"inputTokens":1000,"outputTokens":50}"#;
    let write = |id: &str, parent: Option<&str>, origin: bool, n: usize| {
        let reqs: Vec<(i64, &str, &str, &str)> = (0..n)
            .map(|i| {
                (
                    JUL1 + i as i64 * DAY,
                    "deepseek-official",
                    "deepseek-v4-flash",
                    usage,
                )
            })
            .collect();
        let mut text = authored_log(id, "/w", JUL1, "task", &reqs);
        if let Some(p) = parent {
            let extra = if origin {
                r#","origin":"subagent""#
            } else {
                ""
            };
            text = text.replacen(
                r#""delegationDepth":0"#,
                &format!(r#""parentSession":"{p}"{extra},"delegationDepth":1"#),
                1,
            );
        }
        let d = dir.join(id);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("session.jsonl"), text).unwrap();
    };
    write("root", None, false, 2);
    write("kid-a", Some("root"), true, 1);
    write("kid-b", Some("root"), false, 3);
    write("grandkid", Some("kid-a"), true, 2);
    write("lost", Some("nowhere"), true, 1);
    let v = tree(&env, &env.home().join("home"));
    let roots = &v["trees"];
    assert_eq!(roots.as_array().unwrap().len(), 2, "{v}");
    let total: u64 = roots.as_array().unwrap().iter().map(check).sum();
    assert_eq!(total, 5);
    let root = find(roots, "root").unwrap();
    assert_eq!(root["subtree"]["sessions"], 4);
    assert_eq!(root["subtree"]["requests"], 8);
    assert_eq!(find(roots, "kid-a").unwrap()["relation"], "subagent");
    assert_eq!(find(roots, "kid-b").unwrap()["relation"], "child");
    assert_eq!(
        find(&root["children"], "grandkid").unwrap()["relation"],
        "subagent"
    );
    assert_eq!(find(roots, "lost").unwrap()["relation"], "orphan");
    assert_eq!(v["summary"]["sessions"], 5);
    let out = env
        .dsh()
        .args(["sessions", "--tree"])
        .arg(env.home().join("home"))
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("└─ grandkid") || text.contains("└─ grandkid"),
        "{text}"
    );
    assert!(text.contains("5 session(s) in 2 tree(s)"), "{text}");
}

#[test]
fn the_corpus_forks_and_subagents_hang_under_their_parents() {
    let Some(shared) = shared("the_corpus_forks_and_subagents_hang_under_their_parents") else {
        return;
    };
    let env = TestEnv::new();
    let v = tree(&env, &shared.join("corpus/real"));
    let roots = &v["trees"];
    let seen: u64 = roots.as_array().unwrap().iter().map(check).sum();
    assert_eq!(Some(seen), v["summary"]["sessions"].as_u64());
    // The in-process fork and its parent.
    let fork = find(roots, "ada8966c-9fa3-441b-8721-37ff1e795e6a").unwrap();
    assert_eq!(fork["relation"], "fork");
    let parent = find(roots, "96cf59c9-b347-48b9-b234-a5200913ad05").unwrap();
    assert!(
        parent["children"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["session"] == fork["session"])
    );
    // Two generations of subagents.
    let two = roots
        .as_array()
        .unwrap()
        .iter()
        .find(|r| {
            r["subtree"]["sessions"] == 3
                && r["children"][0]["children"]
                    .as_array()
                    .is_some_and(|c| c.len() == 1)
        })
        .expect("a depth-two delegation");
    assert_eq!(two["children"][0]["relation"], "subagent");
}
