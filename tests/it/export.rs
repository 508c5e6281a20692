//! `dsh export`: the tables read back (Parquet with the `parquet` crate's
//! reader, CSV and JSON Lines parsed) agree with `dsh sessions --json` and
//! `dsh usage --json`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value as J;

use crate::support::*;

type Table = Vec<BTreeMap<String, J>>;

fn parquet_table(p: &Path) -> Table {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;
    let r = SerializedFileReader::try_from(p).unwrap();
    let mut out = Vec::new();
    for row in r.get_row_iter(None).unwrap() {
        let row = row.unwrap();
        let mut m = BTreeMap::new();
        for (name, f) in row.get_column_iter() {
            let v = match f {
                Field::Null => J::Null,
                Field::Bool(b) => J::Bool(*b),
                Field::Long(n) | Field::TimestampMillis(n) => J::from(*n),
                Field::Double(x) => J::from(*x),
                Field::Str(s) => J::from(s.as_str()),
                other => panic!("{name}: unexpected {other:?}"),
            };
            m.insert(name.clone(), v);
        }
        out.push(m);
    }
    out
}

/// RFC 4180 records (quoted fields may hold commas, quotes, line breaks).
fn csv_records(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut field)),
            (false, '\n') => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => field.push(c),
        }
    }
    rows
}

fn csv_table(p: &Path) -> Table {
    let recs = csv_records(&std::fs::read_to_string(p).unwrap());
    let head = &recs[0];
    recs[1..]
        .iter()
        .map(|r| {
            assert_eq!(r.len(), head.len(), "{}", p.display());
            head.iter()
                .zip(r)
                .map(|(h, v)| {
                    let v = if v.is_empty() {
                        J::Null
                    } else {
                        J::from(v.as_str())
                    };
                    (h.clone(), v)
                })
                .collect()
        })
        .collect()
}

fn jsonl_table(p: &Path) -> Table {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| match serde_json::from_str(l).unwrap() {
            J::Object(o) => o.into_iter().collect(),
            other => panic!("{other}"),
        })
        .collect()
}

fn read_table(dir: &Path, name: &str, format: &str) -> Table {
    let p = dir.join(format!("{name}.{format}"));
    match format {
        "parquet" => parquet_table(&p),
        "csv" => csv_table(&p),
        _ => jsonl_table(&p),
    }
}

fn num(v: Option<&J>) -> f64 {
    match v {
        Some(J::Number(n)) => n.as_f64().unwrap(),
        Some(J::String(s)) => s.parse().unwrap(),
        _ => 0.0,
    }
}

fn text(v: Option<&J>) -> String {
    v.and_then(|v| v.as_str()).unwrap_or_default().to_string()
}

fn json_doc(args: &[&str], paths: &[PathBuf]) -> J {
    let out = dsh().args(args).args(paths).output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Export `paths` in `format` and check the tables against `sessions` and
/// `usage`: the same sessions, the same per-session usage sums, the same
/// compaction and prune counts.
fn agrees(paths: &[PathBuf], format: &str) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("export");
    let run = dsh()
        .args(["export", "--json", "-q", "--format", format, "--out"])
        .arg(&out)
        .args(paths)
        .output()
        .unwrap();
    let doc: J = serde_json::from_slice(&run.stdout).unwrap();
    let sessions = json_doc(&["sessions", "--json", "-q"], paths);
    let usage = json_doc(&["usage", "--json", "-q", "--session"], paths);
    let listed: Vec<&J> = sessions["logs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l.get("session").is_some())
        .collect();
    let st = read_table(&out, "sessions", format);
    assert_eq!(st.len(), listed.len(), "{format}: one row per session");
    assert_eq!(doc["logs"].as_u64(), Some(listed.len() as u64));
    let rows_of = |name: &str| {
        doc["tables"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap()["rows"]
            .as_u64()
            .unwrap() as usize
    };
    assert_eq!(rows_of("sessions"), st.len());
    let mut ids: Vec<String> = st.iter().map(|r| text(r.get("session"))).collect();
    let mut want: Vec<String> = listed.iter().map(|l| text(l.get("session"))).collect();
    ids.sort();
    want.sort();
    assert_eq!(ids, want, "{format}: the same session ids");
    // Per-session sums of the requests table = usage --session.
    let req = read_table(&out, "requests", format);
    assert_eq!(rows_of("requests"), req.len());
    let mut sums: BTreeMap<String, [f64; 5]> = BTreeMap::new();
    for r in &req {
        let s = sums.entry(text(r.get("session"))).or_default();
        s[0] += 1.0;
        for (i, k) in [
            "input_tokens",
            "cache_read_tokens",
            "output_tokens",
            "reasoning_tokens",
        ]
        .iter()
        .enumerate()
        {
            s[i + 1] += num(r.get(*k));
        }
    }
    let groups = usage["groups"].as_array().unwrap();
    let mut keyed: BTreeMap<String, [f64; 5]> = BTreeMap::new();
    for g in groups {
        let s = keyed.entry(text(g.get("session"))).or_default();
        s[0] += num(g.get("requests")) + num(g.get("summariserRequests"));
        for (i, k) in [
            "inputTokens",
            "cacheReadTokens",
            "outputTokens",
            "reasoningTokens",
        ]
        .iter()
        .enumerate()
        {
            s[i + 1] += num(g.get(*k));
        }
    }
    assert_eq!(sums.len(), keyed.len(), "{format}: sessions with usage");
    for (id, s) in &sums {
        let u = keyed.get(id).unwrap_or_else(|| panic!("{id} in usage"));
        for i in 0..5 {
            assert!((s[i] - u[i]).abs() < 1e-6, "{format} {id}: {s:?} vs {u:?}");
        }
    }
    // Compactions and prunes per session id (corpus logs may share one) =
    // sessions' counts; each session row = its sessions entry (by file).
    let cmp = read_table(&out, "compactions", format);
    let prunes = read_table(&out, "prunes", format);
    let mut want: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for l in &listed {
        let w = want.entry(text(l.get("session"))).or_default();
        w.0 += l["compactions"].as_u64().unwrap();
        w.1 += l["prunes"].as_u64().unwrap();
        let row = st
            .iter()
            .find(|r| text(r.get("file")) == text(l.get("file")))
            .unwrap();
        assert_eq!(num(row.get("turns")), num(l.get("turns")), "{l}");
        assert_eq!(num(row.get("compactions")), num(l.get("compactions")));
    }
    for (id, (c, p)) in want {
        let landed = cmp
            .iter()
            .filter(|r| text(r.get("session")) == id && !r["summary_seq"].is_null())
            .count();
        assert_eq!(landed as u64, c, "{format} {id}: compactions");
        let n = prunes
            .iter()
            .filter(|r| text(r.get("session")) == id)
            .count();
        assert_eq!(n as u64, p, "{format} {id}: prunes");
    }
}

#[test]
fn export_agrees_with_sessions_and_usage_on_the_sample_home() {
    for format in ["parquet", "csv", "jsonl"] {
        agrees(&[sample("home")], format);
    }
}

#[test]
fn export_agrees_with_sessions_and_usage_on_the_corpus() {
    let Some(shared) = shared("export_agrees_with_sessions_and_usage_on_the_corpus") else {
        return;
    };
    let logs: Vec<PathBuf> = corpus_logs(&shared).into_iter().map(|(_, p)| p).collect();
    agrees(&logs, "parquet");
    agrees(&logs[..logs.len().min(20)], "csv");
}

#[test]
fn export_refuses_a_non_empty_target_and_dry_runs_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("keep"), "mine").unwrap();
    let r = dsh()
        .args(["export", "--format", "csv", "--out"])
        .arg(&out)
        .arg(sample("home"))
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).contains("--force"));
    assert!(out.join("keep").exists());
    let fresh = dir.path().join("y");
    let r = dsh()
        .args(["export", "-n", "--out"])
        .arg(&fresh)
        .arg(sample("home"))
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&r.stdout).contains("would write"));
    assert!(!fresh.exists(), "a dry run writes nothing");
    let r = dsh()
        .args(["export", "--force", "--format", "jsonl", "--out"])
        .arg(&out)
        .arg(sample("home"))
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(0));
    assert!(!out.join("keep").exists(), "--force replaced it");
    assert!(out.join("requests.jsonl").exists());
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left.len(), 1, "no temporary directory left: {left:?}");
}

/// `--tokenizer` fills the requests table's provider columns with each
/// agent request's prompt as `dsh cache --tokenizer` sizes it (a
/// placeholder log's hidden prefix included, so the first request is the
/// size DeepSeek reported); without it they are null.
#[test]
fn export_tokenizer_counts_request_prompts_as_cache_does() {
    let env = TestEnv::new();
    let log = env.home().join("placeholder.jsonl");
    placeholder_log(&log, 6000);
    let cache: J = serde_json::from_str(&stdout_ok(
        env.dsh()
            .args(["cache", "--json", "--tokenizer", "deepseek-v4"])
            .arg(&log)
            .output()
            .unwrap(),
    ))
    .unwrap();
    let sized: BTreeMap<u64, f64> = cache["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["seq"].as_u64().unwrap(),
                r["promptTokens"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(sized.len(), 2);
    for tokenizer in [true, false] {
        let out = env.home().join(format!("out-{tokenizer}"));
        let mut cmd = env.dsh();
        cmd.args(["export", "--format", "jsonl", "--out"]).arg(&out);
        if tokenizer {
            cmd.args(["--tokenizer", "deepseek-v4"]);
        }
        stdout_ok(cmd.arg(&log).output().unwrap());
        let rows = read_table(&out, "requests", "jsonl");
        assert_eq!(rows.len(), 2);
        for r in &rows {
            let seq = r["seq"].as_u64().unwrap();
            if tokenizer {
                assert_eq!(r["tokenizer"], "deepseek-v4");
                assert_eq!(
                    r["provider_prompt_tokens"].as_f64(),
                    Some(sized[&seq]),
                    "{r:?}"
                );
                // On the session's window, as pressure_percent is on DSH's figure.
                match (r["pressure_percent"].as_f64(), r["surface_tokens"].as_f64()) {
                    (Some(p), Some(t)) => {
                        let window = t / p * 100.0;
                        let theirs = r["provider_pressure_percent"].as_f64().unwrap();
                        assert!(
                            (theirs - sized[&seq] / window * 100.0).abs() < 1e-9,
                            "{r:?}"
                        );
                    }
                    _ => assert!(r["provider_pressure_percent"].is_null(), "{r:?}"),
                }
                // DSH's own estimate stays beside it.
                assert_ne!(r["surface_tokens"], r["provider_prompt_tokens"]);
            } else {
                for k in [
                    "tokenizer",
                    "provider_prompt_tokens",
                    "provider_pressure_percent",
                ] {
                    assert!(r[k].is_null(), "{k}: {r:?}");
                }
            }
        }
        if tokenizer {
            let first = rows.iter().find(|r| r["seq"] == 4).unwrap();
            assert_eq!(first["provider_prompt_tokens"].as_f64(), Some(6000.0));
        }
    }
}
