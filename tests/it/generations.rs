//! Format generations v1–v3 (docs/generations.md): every log of the shared
//! corpus that DSH's own published migrations carried to a newer generation
//! (`../shared/corpus/generations/<log>/session.vN.jsonl`) reads as its v0
//! original does, but for the differences the migration itself defines.

use std::path::{Path, PathBuf};

use dsh::log::{LoadOptions, LogSource};
use serde_json::Value as J;

use crate::support::{TestEnv, shared};

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
