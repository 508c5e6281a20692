//! `dsh usage`: grouping, the summariser's calls, prices by date and
//! window, unknown models and times, `[[prices]]`, CSV, the width of the
//! table, and the sums recomputed independently (plain serde_json over the
//! lines) on the corpus and on generated logs.

use std::collections::BTreeMap;
use std::path::Path;

use dsh::json::Value;

use crate::sessions::{HOUR, authored_log, demo_home, in_terminal, put, widest};
use crate::support::{TestEnv, corpus_logs, sample, shared};

fn num(v: &Value<'_>, k: &str) -> f64 {
    v.get(k)
        .and_then(|x| x.as_f64())
        .unwrap_or_else(|| panic!("{k} in {}", v.to_json()))
}

fn groups(v: &Value<'_>) -> Vec<Value<'static>> {
    v.get("groups")
        .unwrap()
        .as_arr()
        .unwrap()
        .iter()
        .map(|g| g.to_owned_value())
        .collect()
}

fn keys(v: &Value<'_>) -> Vec<String> {
    groups(v)
        .iter()
        .map(|g| g.get("key").unwrap().as_str().unwrap().into_owned())
        .collect()
}

#[test]
fn usage_groups_by_day_week_month_session_and_project() {
    let env = TestEnv::new();
    demo_home(&env);
    let (v, code) = env.json(&["usage", "--json"]);
    assert_eq!(code, 3, "the refused log");
    assert_eq!(v.get("groupBy").unwrap().as_str().unwrap(), "day");
    // Unknown (a zero time) last; the busy-lock sample reports no usage.
    assert_eq!(keys(&v), ["2026-07-01", "2026-07-05", "unknown"]);
    let g = groups(&v);
    assert_eq!(num(&g[0], "requests"), 2.0);
    assert_eq!(num(&g[0], "inputTokens"), 1_000_020.0);
    assert_eq!(num(&g[0], "cacheReadTokens"), 300.0);
    assert!(
        (num(&g[0], "costUsd") - (0.14 + 20.0 * 0.14e-6 + 300.0 * 0.0028e-6 + 15.0 * 0.28e-6))
            .abs()
            < 1e-12
    );
    assert!(
        matches!(g[1].get("costUsd"), Some(Value::Null)),
        "mystery-model has no price"
    );
    assert_eq!(num(&g[1], "unpricedRequests"), 1.0);
    assert_eq!(num(&g[2], "untimedRequests"), 1.0);
    assert_eq!(
        v.get("logs").unwrap().as_arr().unwrap().len(),
        1,
        "the refusal"
    );

    let (v, _) = env.json(&["usage", "--json", "--weekly"]);
    assert_eq!(keys(&v), ["2026-06-29", "unknown"], "weeks by their Monday");
    let (v, _) = env.json(&["usage", "--json", "--monthly"]);
    assert_eq!(keys(&v), ["2026-07", "unknown"]);
    let (v, _) = env.json(&["usage", "--json", "--project"]);
    let k = keys(&v);
    assert_eq!(
        k[0], "/home/dev/alpha",
        "the only priced project first: {k:?}"
    );
    assert_eq!(k.len(), 3);
    let (v, _) = env.json(&["usage", "--json", "--session", "--breakdown"]);
    let g = groups(&v);
    assert_eq!(g[0].get("session").unwrap().as_str().unwrap(), "alpha-0001");
    assert!(
        g[0].get("file")
            .unwrap()
            .as_str()
            .unwrap()
            .ends_with("session.jsonl")
    );
    let models = g[0].get("models").unwrap().as_arr().unwrap();
    assert_eq!(
        models[0].get("model").unwrap().as_str().unwrap(),
        "deepseek-v4-flash"
    );
    let totals = v.get("totals").unwrap();
    assert_eq!(totals.get("models").unwrap().as_arr().unwrap().len(), 2);
}

#[test]
fn usage_counts_the_summariser_and_prices_by_window_and_offset() {
    let env = TestEnv::new();
    let home = env.dsh_home();
    // 2026-12-03 is a Thursday: 02:00 UTC is DeepSeek peak time, 12:00 not.
    let thu = 1_796_256_000_000; // 2026-12-03T00:00:00Z
    put(
        &home,
        "/p",
        "w",
        &authored_log(
            "w",
            "/p",
            thu,
            "peak and off-peak",
            &[
                (
                    thu + 2 * HOUR,
                    "deepseek-official",
                    "deepseek-flash",
                    r#"{"inputTokens":1000000,"outputTokens":0}"#,
                ),
                (
                    thu + 12 * HOUR,
                    "deepseek-official",
                    "deepseek-flash",
                    r#"{"inputTokens":1000000,"outputTokens":0}"#,
                ),
                (
                    thu + 20 * HOUR,
                    "deepseek-official",
                    "deepseek-flash",
                    r#"{"inputTokens":0,"outputTokens":1000000}"#,
                ),
            ],
        ),
    );
    let (v, _) = env.json(&["usage", "--json"]);
    let g = groups(&v);
    assert_eq!(keys(&v), ["2026-12-03"]);
    assert!((num(&g[0], "costUsd") - (0.30 + 0.15 + 0.60)).abs() < 1e-12);
    // Eight hours east, the 20:00 UTC request falls on the 4th.
    let (v, _) = env.json(&["usage", "--json", "--tz", "+08:00"]);
    assert_eq!(keys(&v), ["2026-12-03", "2026-12-04"]);
    assert_eq!(v.get("tz").unwrap().as_str().unwrap(), "+08:00");
    // A named zone from the zone database: New York is five hours behind
    // UTC in December, so the 02:00 UTC request is on the 2nd there.
    if std::path::Path::new("/usr/share/zoneinfo/America/New_York").exists() {
        let (v, _) = env.json(&["usage", "--json", "--tz", "America/New_York"]);
        assert_eq!(keys(&v), ["2026-12-02", "2026-12-03"]);
        assert_eq!(v.get("tz").unwrap().as_str().unwrap(), "America/New_York");
    } else {
        eprintln!("SKIPPED --tz America/New_York: no /usr/share/zoneinfo");
    }
    let (v, _) = env.json(&["usage", "--json", "--since", "2026-12-03T10:00Z"]);
    assert_eq!(num(v.get("totals").unwrap(), "requests"), 2.0);
    // The summariser's calls (compaction/summary usage) are counted apart.
    let compacted = std::fs::read_to_string(sample("compacted.jsonl")).unwrap();
    put(&home, "/q", "c", &compacted);
    let (v, _) = env.json(&["usage", "--json", "--session"]);
    let t = v.get("totals").unwrap();
    assert_eq!(num(t, "summariserRequests"), 1.0);
    let out = env
        .dsh()
        .args(["usage", "--tz", "Mars/Olympus_Mons"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn prices_come_from_the_table_and_the_config() {
    let env = TestEnv::new();
    let (v, code) = env.json(&["usage", "--prices", "--json"]);
    assert_eq!(code, 0);
    let p = v.get("prices").unwrap().as_arr().unwrap();
    assert!(p.iter().all(|e| {
        e.get("source")
            .unwrap()
            .as_str()
            .unwrap()
            .starts_with("https://")
    }));
    assert!(
        p.iter()
            .any(|e| e.get("peakWindows").is_some_and(|w| w.is_str("deepseek")))
    );
    let cfg = env.home().join("dsh.toml");
    std::fs::write(
        &cfg,
        r#"
[[prices]]
provider = "deepseek-official"
model = "mystery-model"
from = "2026-01-01"
input = 1.0
cacheHit = 0.1
output = 2.0
source = "our contract"
"#,
    )
    .unwrap();
    let c = cfg.to_str().unwrap();
    let (v, _) = env.json(&["usage", "--prices", "--json", "--config", c]);
    let mine: Vec<_> = v
        .get("prices")
        .unwrap()
        .as_arr()
        .unwrap()
        .iter()
        .filter(|e| e.get("origin").unwrap().is_str("config"))
        .map(|e| e.to_owned_value())
        .collect();
    assert_eq!(mine.len(), 1);
    assert_eq!(
        num(&mine[0], "cacheWrite"),
        1.0,
        "cache writes default to the input rate"
    );
    demo_home(&env);
    let (v, _) = env.json(&["usage", "--json", "--config", c]);
    let g = groups(&v);
    assert!(
        (num(&g[1], "costUsd") - (7.0 + 6.0) / 1e6).abs() < 1e-15,
        "{}",
        g[1].to_json()
    );
    let text = String::from_utf8(
        env.dsh()
            .args(["usage", "--prices", "--config", c])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert!(
        text.contains("mystery-model") && text.contains("config"),
        "{text}"
    );
    std::fs::write(
        &cfg,
        "[[prices]]\nprovider = \"p\"\nmodel = \"m\"\ninput = -1\ncacheHit = 0\noutput = 0\n",
    )
    .unwrap();
    let out = env.dsh().args(["usage", "--config", c]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("prices[0].input"));
}

#[test]
fn usage_csv_and_table() {
    let env = TestEnv::new();
    demo_home(&env);
    let out = env
        .dsh()
        .args(["usage", "--csv", "--breakdown"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "day,provider,model,requests,summariser_requests,input_tokens,cache_read_tokens,cache_write_tokens,output_tokens,reasoning_tokens,total_tokens,cost_usd,priced_requests,unpriced_requests,untimed_requests,unconfirmed_requests"
    );
    assert!(
        lines
            .iter()
            .any(|l| l
                .starts_with("2026-07-05,deepseek-official,mystery-model,1,0,7,0,0,3,0,10,,0,1,0")),
        "{text}"
    );
    let out = env.dsh().args(["usage"]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("│ total"), "{text}");
    assert!(text.contains("—"), "no price shows a dash: {text}");
    assert!(text.contains("unknown"), "{text}");
}

#[test]
fn usage_fits_80_columns_and_uses_200() {
    let env = TestEnv::new();
    let home = demo_home(&env);
    let Some(narrow) = in_terminal(80, &home, &["usage", "--breakdown"]) else {
        return;
    };
    // Standard error (the refused log's reason) is not a table.
    let narrow: String = narrow
        .lines()
        .filter(|l| !l.starts_with("dsh: "))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(widest(&narrow) <= 80, "{narrow}");
    assert!(narrow.contains("└ deepseek-v4-flash"), "{narrow}");
    assert!(
        narrow.contains("cost $") && narrow.contains("input"),
        "{narrow}"
    );
    let wide = in_terminal(200, &home, &["usage", "--breakdown"]).unwrap();
    assert!(
        wide.contains("reasoning") && wide.contains("cache write"),
        "{wide}"
    );
    assert!(widest(&wide) <= 200);
}

fn without_surrogates(line: &str) -> String {
    let re = regex::Regex::new(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}").unwrap();
    re.replace_all(line, "\\uFFFD").into_owned()
}

/// The per-file sums of the raw usage fields, read with serde_json alone:
/// `assistant/message` and `compaction/summary` lines with a `usage` object,
/// a fork child's seed (its parent's records, before the header's
/// `seedLength` or a `session/end-seed {inherited: true}`) skipped.
fn raw_sums(path: &Path) -> [f64; 7] {
    let mut s = [0.0; 7];
    let text = std::fs::read_to_string(path).unwrap();
    let head: serde_json::Value =
        serde_json::from_str(text.lines().next().unwrap_or("{}")).unwrap_or_default();
    let cut = head.get("parentSession").and_then(|_| {
        let marker = text.lines().rev().find_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).ok()?;
            (v["type"] == "session/end-seed" && v["data"]["inherited"] == true)
                .then(|| v["seq"].as_u64())
                .flatten()
        });
        marker.or(head["seedLength"].as_u64())
    });
    for line in text.lines().skip(1) {
        // serde_json refuses lone surrogate escapes (which JavaScript and
        // dsh read); text is irrelevant here, so every surrogate escape
        // becomes U+FFFD before a second try.
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line)
            .or_else(|_| serde_json::from_str(&without_surrogates(line)))
        else {
            continue;
        };
        if cut.is_some_and(|c| v["seq"].as_u64().is_some_and(|q| q < c)) {
            continue;
        }
        let ty = v["type"].as_str().unwrap_or_default();
        let summary = ty == "compaction/summary";
        if ty != "assistant/message" && !summary {
            continue;
        }
        let u = &v["data"]["usage"];
        if !u.is_object() {
            continue;
        }
        let f = |k: &str| u[k].as_f64().unwrap_or(0.0);
        s[0] += if summary { 0.0 } else { 1.0 };
        s[1] += if summary { 1.0 } else { 0.0 };
        s[2] += f("inputTokens");
        s[3] += f("cacheReadTokens");
        s[4] += f("cacheWriteTokens");
        s[5] += f("outputTokens");
        s[6] += f("reasoningTokens");
    }
    s
}

const FIELDS: [&str; 7] = [
    "requests",
    "summariserRequests",
    "inputTokens",
    "cacheReadTokens",
    "cacheWriteTokens",
    "outputTokens",
    "reasoningTokens",
];

/// Compare `dsh usage --session --json DIR` with [`raw_sums`] of every log
/// in `dir` that dsh reads; returns how many were compared.
fn compare_dir(dir: &Path, lenient: bool) -> usize {
    let mut args = vec!["usage", "--session", "--json", "-q"];
    if lenient {
        args.push("--lenient");
    }
    let d = dir.to_str().unwrap();
    args.push(d);
    let out = crate::support::dsh().args(&args).output().unwrap();
    let v = Value::parse(std::str::from_utf8(&out.stdout).unwrap().trim())
        .unwrap()
        .into_owned();
    let mut by_file: BTreeMap<String, Value<'static>> = BTreeMap::new();
    for g in v.get("groups").unwrap().as_arr().unwrap() {
        by_file.insert(
            g.get("file").unwrap().as_str().unwrap().into_owned(),
            g.to_owned_value(),
        );
    }
    let refused: Vec<String> = v
        .get("logs")
        .unwrap()
        .as_arr()
        .unwrap()
        .iter()
        .map(|l| l.get("file").unwrap().as_str().unwrap().into_owned())
        .collect();
    let mut compared = 0;
    let mut bad = Vec::new();
    for f in dsh::log::source::discover(dir) {
        let name = f.display().to_string();
        if refused.contains(&name) {
            continue;
        }
        let raw = raw_sums(&f);
        let zero = [0.0; 7];
        let got: Vec<f64> = match by_file.get(&name) {
            Some(g) => FIELDS.iter().map(|k| num(g, k)).collect(),
            None => zero.to_vec(),
        };
        if got != raw {
            bad.push(format!("{name}: dsh {got:?} != raw {raw:?}"));
        }
        compared += 1;
    }
    assert!(
        bad.is_empty(),
        "{} mismatches:\n{}",
        bad.len(),
        bad.join("\n")
    );
    compared
}

#[test]
#[cfg_attr(
    no_shared,
    ignore = "needs ../shared (corpus, genlog) beside the checkout"
)]
fn usage_equals_the_raw_sums_on_the_corpus() {
    let Some(shared) = shared("usage_equals_the_raw_sums_on_the_corpus") else {
        return;
    };
    // Every corpus log, each in a directory of its own (a flat directory of
    // loose files is a tree of logs for dsh).
    let tmp = tempfile::tempdir().unwrap();
    for (name, path) in corpus_logs(&shared) {
        std::fs::copy(&path, tmp.path().join(format!("{name}.jsonl"))).unwrap();
    }
    let n = compare_dir(tmp.path(), true);
    assert!(n > 120, "compared {n} corpus logs");
}

#[test]
#[cfg_attr(
    no_shared,
    ignore = "needs ../shared (corpus, genlog) beside the checkout"
)]
fn usage_equals_the_raw_sums_on_generated_logs() {
    let Some(shared) = shared("usage_equals_the_raw_sums_on_generated_logs") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    for (seed, opts) in [
        (3, &["--compactions", "2", "--prune-passes", "1"][..]),
        (4, &["--restarts", "1", "--open-tail"][..]),
        (5, &["--no-pack"][..]),
    ] {
        let out = tmp.path().join(format!("gen-{seed}.jsonl"));
        let st = std::process::Command::new(shared.join("tools/genlog"))
            .args(["--events", "3000", "--seed", &seed.to_string(), "-o"])
            .arg(&out)
            .args(opts)
            .status()
            .unwrap();
        assert!(st.success());
    }
    assert_eq!(compare_dir(tmp.path(), false), 3);
}

#[test]
fn prices_in_the_config_are_validated() {
    use dsh::config::Config;
    let ok = Config::from_toml_str(
        r#"
[[prices]]
provider = "deepseek-official"
model = "deepseek-flash"
from = 2026-11-01T00:00:00Z
input = 0.3
cacheHit = 0.006
output = 1.2
offPeak = { input = 0.15, cacheHit = 0.003, output = 0.6 }

[[prices]]
provider = "deepseek-official"
model = "deepseek-flash"
from = "2026-12-01"
input = 0.2
cacheHit = 0.004
cacheWrite = 0.25
output = 1.0
"#,
    )
    .unwrap();
    assert_eq!(ok.prices.len(), 2);
    let off = ok.prices[0].off_peak.unwrap();
    assert_eq!((off.input, off.cache_write), (0.15, 0.15));
    assert_eq!(ok.prices[1].rates.cache_write, 0.25);
    assert_eq!(ok.prices[0].from_ms, Some(1_793_491_200_000));
    for (bad, says) in [
        (
            "[[prices]]\nmodel = \"m\"\ninput = 1\ncacheHit = 1\noutput = 1",
            "provider",
        ),
        (
            "[[prices]]\nprovider = \"p\"\nmodel = \"m\"\ninput = 1\noutput = 1",
            "cacheHit is required",
        ),
        (
            "[[prices]]\nprovider = \"p\"\nmodel = \"m\"\ninput = 1\ncacheHit = 1\noutput = 1\nfrom = \"soon\"",
            "from",
        ),
        (
            "[[prices]]\nprovider = \"p\"\nmodel = \"m\"\ninput = 1\ncacheHit = 1\noutput = 1\ncurrency = \"EUR\"",
            "unknown key",
        ),
        (
            "[[prices]]\nprovider = \"p\"\nmodel = \"m\"\ninput = 1\ncacheHit = 1\noutput = 1\noffPeak = { input = 1 }",
            "offPeak.cacheHit",
        ),
        (
            "[[prices]]\nprovider = \"p\"\nmodel = \"m\"\ninput = 1\ncacheHit = 1\noutput = 1\n[[prices]]\nprovider = \"p\"\nmodel = \"m\"\ninput = 2\ncacheHit = 1\noutput = 1",
            "duplicate",
        ),
        ("prices = 3", "array of tables"),
    ] {
        let e = Config::from_toml_str(bad).unwrap_err().to_string();
        assert!(e.contains(says), "{bad}: {e}");
    }
}
