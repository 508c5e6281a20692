//! Format generations v1–v3 (docs/generations.md): every log of the shared
//! corpus that DSH's own published migrations carried to a newer generation
//! (`../shared/corpus/generations/<log>/session.vN.jsonl`) reads as its v0
//! original does, but for the differences the migration itself defines.

use std::path::{Path, PathBuf};

use dsh::log::{LoadOptions, LogSource};
use serde_json::Value as J;

use crate::support::{TestEnv, appends, assert_verifies, shared};

/// What a reading must agree on, with the migration's own differences
/// taken out: seqs (G2 renumbers them), the G3 `system/message` head (the
/// request header's prompt, moved onto the surface), and G3's plugin
/// renames (`tools-code-mode` → `tools-ptc`).
#[derive(Debug, PartialEq)]
struct Reading {
    /// The surface as (type, tokens), the system head left out.
    nodes: Vec<(String, u64)>,
    /// The model-visible messages, system-role ones left out.
    messages: Vec<String>,
    /// `measure()`: total, baseline, delta, and the composition.
    measure: String,
    /// `verify`'s verdict.
    verdict: String,
}

fn renamed_back(json: String) -> String {
    json.replace("\"tools-ptc\"", "\"tools-code-mode\"")
}

fn read(path: &Path) -> Result<Reading, String> {
    let src = LogSource::File(path.to_path_buf());
    let opts = LoadOptions::default();
    let (log, m) = dsh::meter::measure(&src, &opts, None).map_err(|e| e.to_string())?;
    let nodes = log
        .surface
        .nodes
        .iter()
        .filter(|n| n.kind != dsh::Kind::SystemMessage)
        .map(|n| (format!("{:?}", n.kind), n.tokens))
        .collect();
    let mut out = Vec::new();
    dsh::derive::write_messages_json(&log, &mut out).map_err(|e| e.to_string())?;
    let all: J = serde_json::from_slice(&out).unwrap();
    let messages = all
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| renamed_back(m.to_string()))
        .collect();
    let c = &m.composition;
    let measure = format!(
        "total {} baseline {:?} {} delta {} system {} tools {} messages {} user {}/{} assistant {}/{} results {}/{} adjustment {}",
        m.total_tokens,
        m.baseline.kind,
        m.baseline.tokens,
        m.surface_delta_tokens,
        c.system_tokens,
        c.tools_tokens,
        c.message_tokens,
        c.user_tokens,
        c.user_nodes,
        c.assistant_tokens,
        c.assistant_nodes,
        c.tool_result_tokens,
        c.tool_result_nodes,
        c.anchor_adjustment
    );
    let verdict = format!("{:?}", dsh::verify::verify(&src, &opts).verdict(false));
    Ok(Reading {
        nodes,
        messages,
        measure,
        verdict,
    })
}

/// `(v0 original, [(generation, file)])` for every migrated log.
fn migrated(shared: &Path) -> Vec<(PathBuf, Vec<(u64, PathBuf)>)> {
    let gens = shared.join("corpus/generations");
    let Ok(rd) = std::fs::read_dir(&gens) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs.into_iter()
        .filter_map(|d| {
            let name = d.file_name()?.to_str()?.to_string();
            let original = shared.join("corpus/real").join(format!("{name}.jsonl"));
            let files: Vec<(u64, PathBuf)> = (1..=3)
                .map(|v| (v, d.join(format!("session.v{v}.jsonl"))))
                .filter(|(_, f)| f.is_file())
                .collect();
            (original.is_file() && !files.is_empty()).then_some((original, files))
        })
        .collect()
}

#[test]
#[cfg_attr(
    no_shared,
    ignore = "needs ../shared (corpus, reference answers, spec examples) beside the checkout"
)]
fn every_migrated_log_reads_as_its_v0_original() {
    let Some(shared) = shared("every_migrated_log_reads_as_its_v0_original") else {
        return;
    };
    let logs = migrated(&shared);
    assert!(logs.len() >= 90, "only {} migrated logs found", logs.len());
    let mut failures = Vec::new();
    let mut per_generation = [0usize; 4];
    for (original, files) in &logs {
        let want = read(original).unwrap_or_else(|e| panic!("{}: {e}", original.display()));
        for (v, f) in files {
            match read(f) {
                Err(e) => failures.push(format!("{}: refused: {e}", f.display())),
                Ok(got) if got != want => {
                    let what = if got.nodes != want.nodes {
                        format!("surface {:?} vs {:?}", got.nodes, want.nodes)
                    } else if got.messages != want.messages {
                        "messages".to_string()
                    } else if got.measure != want.measure {
                        format!("measure {} vs {}", got.measure, want.measure)
                    } else {
                        format!("verify {} vs {}", got.verdict, want.verdict)
                    };
                    failures.push(format!("{}: {what}", f.display()));
                }
                Ok(_) => per_generation[*v as usize] += 1,
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The corpus as migrated: 92 logs reach v1, 90 v2, 85 v3.
    assert!(
        per_generation[1] >= 92 && per_generation[2] >= 90 && per_generation[3] >= 85,
        "{per_generation:?}"
    );
}

/// The cache and simulate analyses agree too (the G3 head is a header
/// change, an attempt's embedded chunks are chunks with their times).
#[test]
#[cfg_attr(
    no_shared,
    ignore = "needs ../shared (corpus, reference answers, spec examples) beside the checkout"
)]
fn cache_and_simulate_agree_across_generations() {
    let Some(shared) = shared("cache_and_simulate_agree_across_generations") else {
        return;
    };
    let env = TestEnv::new();
    // Seq-valued members differ by renumbering, surface positions by the
    // G3 head at position 0; the rest must not.
    fn strip(v: &mut J) {
        match v {
            J::Object(o) => {
                o.retain(|k, _| {
                    !(k == "file"
                        || k == "seq"
                        || k == "position"
                        || k.ends_with("Seq")
                        || k.ends_with("Seqs"))
                });
                o.values_mut().for_each(strip);
            }
            J::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let run = |cmd: &str, f: &Path| -> J {
        let out = env.dsh().args([cmd, "--json"]).arg(f).output().unwrap();
        let mut v: J = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
            panic!(
                "{cmd} {}: {}",
                f.display(),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        strip(&mut v);
        v
    };
    let mut failures = Vec::new();
    // Every v3 log (the generation DSH writes today) and a sample of the others.
    for (i, (original, files)) in migrated(&shared).iter().enumerate() {
        for cmd in ["cache", "simulate"] {
            let want = run(cmd, original);
            for (v, f) in files {
                if *v != 3 && i % 8 != 0 {
                    continue;
                }
                if run(cmd, f) != want {
                    failures.push(format!("{cmd} {}", f.display()));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A log of a generation this dsh does not read is refused as newer, in
/// dsh's words, and a v1 header with a key v1 does not define is corrupt.
#[test]
fn newer_generations_and_foreign_header_keys_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let v4 = dir.path().join("session.v4.jsonl");
    std::fs::write(
        &v4,
        "{\"type\":\"session\",\"version\":4,\"id\":\"x\",\"createdAt\":1,\"isSeeded\":false,\"delegationDepth\":0}\n",
    )
    .unwrap();
    let out = crate::support::dsh()
        .arg("surface")
        .arg(&v4)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("log format v4, newer than this dsh reads (v0–v3)"),
        "{err}"
    );
    assert!(!err.contains("harness reads only"), "{err}");
    let v1 = dir.path().join("session.v1.jsonl");
    std::fs::write(
        &v1,
        "{\"type\":\"session\",\"version\":1,\"id\":\"x\",\"createdAt\":1,\"delegationDepth\":0,\"mode\":\"x\"}\n",
    )
    .unwrap();
    let out = crate::support::dsh()
        .arg("surface")
        .arg(&v1)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("\"mode\", which format v1 does not define"),
        "{err}"
    );
    // A v2 header needs isSeeded.
    let v2 = dir.path().join("session.v2.jsonl");
    std::fs::write(
        &v2,
        "{\"type\":\"session\",\"version\":2,\"id\":\"x\",\"createdAt\":1,\"delegationDepth\":0}\n",
    )
    .unwrap();
    let out = crate::support::dsh()
        .arg("surface")
        .arg(&v2)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("isSeeded"));
}

/// DSH's own read-back of a generation 1–3 log (`../shared/tools/migrate
/// --check`: the official codec and validator); `None`, said, when the
/// tool cannot run here (no ../shared, no Node, no npm registry).
fn official_check(shared: &Path, file: &Path) -> Option<Result<(), String>> {
    let tool = shared.join("tools/migrate/migrate");
    let out = std::process::Command::new(&tool)
        .arg("--check")
        .arg(file)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(line) = text.lines().find(|l| l.starts_with('{')) else {
        eprintln!(
            "SKIPPED official read-back of {}: {}",
            file.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
        return None;
    };
    let v: J = serde_json::from_str(line).ok()?;
    if v["ok"] == true {
        Some(Ok(()))
    } else if v.get("error").is_some() && v.get("version").is_some() {
        Some(Err(v["error"].to_string()))
    } else {
        eprintln!("SKIPPED official read-back of {}: {line}", file.display());
        None
    }
}

/// A copy of a bundled sample's generation-`v` file.
fn sample_copy(dir: &Path, name: &str, v: u64) -> PathBuf {
    let from = crate::support::sample(&format!("generations/{name}/session.v{v}.jsonl"));
    let to = dir.join(format!("{name}.v{v}.jsonl"));
    std::fs::copy(from, &to).unwrap();
    to
}

/// The events a writer appended to the generation-`v` copy `log`.
#[track_caller]
fn appended(writer: &mut assert_cmd::Command, log: &Path, v: u64) -> Vec<J> {
    let (text, _) = appends(writer, log, &format!("v{v}"));
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// What a writer appends to a v1–v3 log is the log's own generation:
/// range-encoded sources from v1 on, `{op, startSeq, endSeq}` in v3; the
/// log stays clean for `verify` and for DSH's own codec.
fn assert_stored_in_generation(v: u64, new: &[J]) {
    for e in new {
        if let Some(op) = e.get("surfaceOp").filter(|o| o.is_object()) {
            // serde_json's map sorts the keys.
            let keys: Vec<&str> = op.as_object().unwrap().keys().map(|k| k.as_str()).collect();
            let want = if v == 3 {
                ["endSeq", "op", "startSeq"]
            } else {
                ["end", "op", "start"]
            };
            assert_eq!(keys, want, "v{v}: seq {}", e["seq"]);
        }
        if let Some(src) = e.get("sourceEventSeqs").and_then(|s| s.as_array()) {
            let plain: Vec<u64> = src.iter().filter_map(|m| m.as_u64()).collect();
            let increasing = plain.windows(2).all(|w| w[0] < w[1]);
            let has_run_of_three = increasing && plain.windows(3).any(|w| w[0] + 2 == w[2]);
            assert!(
                !has_run_of_three,
                "v{v}: a run of three stays range-encoded: {e}"
            );
        }
    }
}

#[test]
fn prune_appends_in_the_logs_generation() {
    let env = TestEnv::new();
    let dir = tempfile::tempdir().unwrap();
    for v in 1..=3 {
        let log = sample_copy(dir.path(), "prune-example", v);
        let new = appended(env.dsh().args(["prune", "--json"]), &log, v);
        let types: Vec<&str> = new.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(
            types,
            [
                "compaction/prune",
                "tool/result",
                "compaction/prune",
                "tool/result"
            ],
            "v{v}"
        );
        assert_stored_in_generation(v, &new);
        assert_verifies(env.dsh(), &log, &format!("v{v}"));
        if let Some(shared) = shared("prune_appends_in_the_logs_generation (official read-back)")
            && let Some(r) = official_check(&shared, &log)
        {
            r.unwrap_or_else(|e| panic!("v{v}: DSH's codec refuses dsh's prune: {e}"));
        }
    }
}

#[test]
fn compact_appends_in_the_logs_generation_and_keeps_the_system_head() {
    use crate::provider::{Reply, Server, deepseek_sse};
    let env = TestEnv::new();
    let dir = tempfile::tempdir().unwrap();
    let summary = "## Primary Request and Intent\n- Prune.\n\n## Current Work\n- Done.";
    for v in 1..=3 {
        let log = sample_copy(dir.path(), "prune-closed", v);
        let server = Server::start(vec![Reply::Sse(deepseek_sse(summary))]);
        let mut compact = env.dsh();
        compact
            .env("DEEPSEEK_API_KEY", "sk-test-generations")
            .args([
                "compact",
                "--json",
                "--retry-delay",
                "0",
                "--retain-tokens",
                "10",
            ])
            .args([
                "--route",
                "deepseek-official/deepseek-v4-flash",
                "--base-url",
            ])
            .arg(&server.base);
        let new = appended(&mut compact, &log, v);
        let types: Vec<&str> = new.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert!(
            types.ends_with(&[
                "compaction/start",
                "compaction/summary",
                "user/message",
                "compaction/end"
            ]),
            "v{v}: {types:?}"
        );
        assert_stored_in_generation(v, &new);
        let requests = server.join();
        let body: J = serde_json::from_slice(&requests[0].body).unwrap();
        if v == 3 {
            // The head is never compacted, and the request leads with it.
            let surface = env
                .dsh()
                .args(["surface", "--json"])
                .arg(&log)
                .output()
                .unwrap();
            let s: J = serde_json::from_slice(&surface.stdout).unwrap();
            assert_eq!(s["positions"][0]["type"], "system/message", "{s}");
            assert_eq!(body["messages"][0]["role"], "system", "{body}");
        }
        assert_verifies(env.dsh(), &log, &format!("v{v}"));
        if let Some(shared) = shared("compact_appends_in_the_logs_generation (official read-back)")
            && let Some(r) = official_check(&shared, &log)
        {
            r.unwrap_or_else(|e| panic!("v{v}: DSH's codec refuses dsh's compaction: {e}"));
        }
    }
}

#[test]
fn locks_release_appends_in_the_logs_generation() {
    let env = TestEnv::new();
    let dir = tempfile::tempdir().unwrap();
    for v in 1..=3 {
        let log = sample_copy(dir.path(), "locks-busy", v);
        let new = appended(env.dsh().args(["locks", "--release", "--yes"]), &log, v);
        // Released as a resuming harness does: a new lifecycle's marker.
        assert_eq!(new.last().unwrap()["type"], "session/end-seed", "v{v}");
        assert_eq!(new.last().unwrap()["data"], serde_json::json!({}), "v{v}");
        let after = env
            .dsh()
            .args(["locks", "--json"])
            .arg(&log)
            .output()
            .unwrap();
        let l: J = serde_json::from_slice(&after.stdout).unwrap();
        let busy = l["logs"][0]["brackets"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["status"] == "busy")
            .count();
        assert_eq!(busy, 0, "v{v}: {}", l["logs"][0]["brackets"]);
        if let Some(shared) =
            shared("locks_release_appends_in_the_logs_generation (official read-back)")
            && let Some(r) = official_check(&shared, &log)
        {
            r.unwrap_or_else(|e| panic!("v{v}: DSH's codec refuses dsh's release: {e}"));
        }
    }
}

/// A home as DSH ≥ 0.1.5 leaves it: v0 plain, v0 Zstandard, v3 Zstandard,
/// and a session directory that kept its v0 file beside the v3 one. Each
/// session is listed once, from its newest generation; names DSH does not
/// give (`.v0`, `.V3`, `.v03`, temporaries) are not sessions.
#[test]
fn a_home_of_mixed_generations_lists_each_session_once_at_its_newest() {
    let env = TestEnv::new();
    let home = tempfile::tempdir().unwrap();
    let proj = home.path().join("sessions/--w--");
    let (plain, packed, v3, both) = (
        proj.join("a0-plain"),
        proj.join("b0-zstd"),
        proj.join("c3-zstd"),
        proj.join("d3-both"),
    );
    for d in [&plain, &packed, &v3, &both] {
        std::fs::create_dir_all(d).unwrap();
    }
    let sample = crate::support::sample;
    let copy = |from: &str, to: PathBuf| {
        std::fs::copy(sample(from), to).unwrap();
    };
    copy("prune-closed.jsonl", plain.join("session.jsonl"));
    for bad in [
        "session.v0.jsonl",
        "session.V3.jsonl",
        "session.v03.jsonl",
        "session.v3.jsonl.tmp",
    ] {
        copy("generations/compacted/session.v3.jsonl", plain.join(bad));
    }
    let pack = |from: &str, to: PathBuf| {
        let out = env
            .dsh()
            .arg("pack")
            .arg(sample(from))
            .arg("-o")
            .arg(to)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    pack("prune-example.jsonl", packed.join("session.jsonl.zstd"));
    pack(
        "generations/verify-clean/session.v3.jsonl",
        v3.join("session.v3.jsonl.zstd"),
    );
    copy("locks-busy.jsonl", both.join("session.jsonl"));
    copy(
        "generations/locks-busy/session.v3.jsonl",
        both.join("session.v3.jsonl"),
    );
    let run = |args: &[&str]| {
        let out = env
            .dsh()
            .env("DSH_HOME", home.path())
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let json = |args: &[&str]| -> J { serde_json::from_slice(&run(args)).unwrap() };
    let s = json(&["sessions", "--json"]);
    let logs = s["logs"].as_array().unwrap();
    let mut seen: Vec<(String, u64)> = logs
        .iter()
        .map(|l| {
            let file = Path::new(l["file"].as_str().unwrap());
            let dir = file
                .parent()
                .unwrap()
                .file_name()
                .unwrap()
                .to_str()
                .unwrap();
            (dir.to_string(), l["generation"].as_u64().unwrap())
        })
        .collect();
    seen.sort();
    let want: Vec<(String, u64)> = [
        ("a0-plain", 0),
        ("b0-zstd", 0),
        ("c3-zstd", 3),
        ("d3-both", 3),
    ]
    .iter()
    .map(|(d, g)| (d.to_string(), *g))
    .collect();
    assert_eq!(seen, want, "{s}");
    let older: Vec<&J> = logs
        .iter()
        .filter(|l| l.get("olderGenerations").is_some())
        .collect();
    assert_eq!(older.len(), 1, "{s}");
    assert!(
        older[0]["file"]
            .as_str()
            .unwrap()
            .ends_with("d3-both/session.v3.jsonl")
    );
    assert_eq!(
        older[0]["olderGenerations"],
        serde_json::json!(["session.jsonl"])
    );
    // The text listing says so under the table.
    let text = String::from_utf8(run(&["sessions"])).unwrap();
    assert!(
        text.contains("1 session(s) also keep older format generations"),
        "{text}"
    );
    // usage sees the v3 session's requests, read from its Zstandard file
    // (the only one of the four that reports usage).
    let u = json(&["usage", "--json", "--session"]);
    assert_eq!(u["totals"]["requests"], 3, "{u}");
    assert_eq!(u["totals"]["summariserRequests"], 2, "{u}");
    // export, the same four sessions.
    let out = tempfile::tempdir().unwrap();
    let exp = out.path().join("x");
    run(&["export", "--format", "csv", "--out", exp.to_str().unwrap()]);
    let rows = std::fs::read_to_string(exp.join("sessions.csv"))
        .unwrap()
        .lines()
        .count();
    assert_eq!(rows, 1 + 4);
    // A v3 session is found by its id (its directory's name) and by a
    // unique prefix of it.
    for key in ["d3-both", "d3-b"] {
        let h = json(&["header", "--json", key]);
        assert!(
            h["file"]
                .as_str()
                .unwrap()
                .ends_with("d3-both/session.v3.jsonl"),
            "{h}"
        );
    }
}

/// Commands that never look into embedded streams check them straight from
/// the bytes (the stream lane): they accept and refuse exactly the logs the
/// commands that read streams do.
#[test]
fn the_stream_lane_accepts_and_refuses_as_the_normal_way() {
    let env = TestEnv::new();
    let dir = tempfile::tempdir().unwrap();
    let original = std::fs::read_to_string(crate::support::sample(
        "generations/compacted/session.v3.jsonl",
    ))
    .unwrap();
    let first = r#""dt":[2,2]"#;
    assert!(original.contains(first));
    // (change to the first stream's first run, accepted?)
    let cases = [
        (r#""dt":[2]"#, false),
        (r#""dt":[2,2,2]"#, false),
        (r#""dt":[2,-2]"#, true),
        (r#""dt" : [2,2]"#, true),
        (r#""dt":[2.5,2]"#, false),
        (r#""dt":[2,2],"extra":1"#, false),
    ];
    for (n, (with, accepted)) in cases.iter().enumerate() {
        let log = dir.path().join(format!("case{n}.jsonl"));
        std::fs::write(&log, original.replacen(first, with, 1)).unwrap();
        for cmd in ["surface", "measure", "locks", "prune"] {
            let mut c = env.dsh();
            c.arg(cmd);
            if cmd == "prune" {
                c.arg("--dry-run");
            }
            let out = c.arg(&log).output().unwrap();
            let code = out.status.code();
            if *accepted {
                assert!(
                    code == Some(0) || (cmd == "locks" && code == Some(1)),
                    "{cmd} case {n} ({with}): {code:?} {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            } else {
                assert_eq!(
                    code,
                    Some(3),
                    "{cmd} case {n} ({with}): {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
    }
}
