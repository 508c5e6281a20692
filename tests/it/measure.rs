//! `dsh measure` and `dsh::meter`: the worked example of compaction §1.10,
//! replay errors, the corpus against the oracle's stored answers, the policy,
//! the config, tokenizer counts, many logs and `--fail-over`.

use std::path::{Path, PathBuf};

use dsh::json::Value;
use dsh::log::{LoadOptions, LogSource};
use dsh::meter::{BaselineKind, Meter, MeterError, measure};
use serde_json::{Value as J, json};

use crate::support::sample;

/// `../shared`, or `None` with a printed skip notice.
fn shared() -> Option<PathBuf> {
    crate::support::shared("measure")
}

use crate::support::dsh;

/// Run `dsh measure --json ARGS`, returning (exit code, parsed stdout).
fn measure_json(args: &[&str]) -> (i32, J) {
    let out = dsh()
        .arg("measure")
        .arg("--json")
        .args(args)
        .output()
        .unwrap();
    let code = out.status.code().unwrap();
    let v: J = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (code, v)
}

fn file(p: &Path) -> LogSource {
    LogSource::File(p.to_path_buf())
}

/// The §1.10 final output. The spec prints `logRevision` 29 for the bare
/// 29-event Session; the reference reader adds the two closers of the open
/// turn 2 (`step/end`, `turn/end`) and the end-seed marker: 32, as the
/// oracle prints.
fn final_a() -> J {
    serde_json::from_str(
        r#"{"logRevision":32,"baseline":{"kind":"usage","tokens":346,"usage":{"inputTokens":200,"outputTokens":18,"cacheReadTokens":128}},"surfaceDeltaTokens":16,"totalTokens":362,"surfaceTokens":126,"nodes":[{"seq":2,"tokens":26},{"seq":13,"tokens":27},{"seq":15,"tokens":34},{"seq":23,"tokens":23},{"seq":28,"tokens":16}]}"#,
    )
    .unwrap()
}

fn example_logs() -> Vec<PathBuf> {
    let mut v = vec![sample("measure-example.jsonl")];
    if let Some(s) = shared() {
        v.push(s.join("spec/examples/measure-example.jsonl"));
    }
    v
}

/// The library's `measure()` object, as `measure --json` prints it.
fn reference(m: &dsh::meter::Measurement) -> String {
    dsh::doc::to_string(&dsh::doc::measure::Reference::of(m))
}

fn oracle_keys(v: &J) -> J {
    let keys = [
        "logRevision",
        "baseline",
        "surfaceDeltaTokens",
        "totalTokens",
        "surfaceTokens",
        "nodes",
    ];
    J::Object(keys.iter().map(|k| (k.to_string(), v[k].clone())).collect())
}

#[test]
fn worked_example_a_final_output_byte_for_byte() {
    for log in example_logs() {
        let (code, v) = measure_json(&[log.to_str().unwrap()]);
        assert_eq!(code, 0, "{}", log.display());
        assert_eq!(oracle_keys(&v), final_a(), "{}", log.display());
        assert_eq!(v["schema_version"], 1);
        // The library's own object prints byte for byte as the spec's line
        // (key order and number formatting included).
        let (loaded, m) = measure(&file(&log), &LoadOptions::default(), None).unwrap();
        assert_eq!(
            reference(&m),
            r#"{"logRevision":32,"baseline":{"kind":"usage","tokens":346,"usage":{"inputTokens":200,"outputTokens":18,"cacheReadTokens":128}},"surfaceDeltaTokens":16,"totalTokens":362,"surfaceTokens":126,"nodes":[{"seq":2,"tokens":26},{"seq":13,"tokens":27},{"seq":15,"tokens":34},{"seq":23,"tokens":23},{"seq":28,"tokens":16}]}"#
        );
        assert_eq!(m.log_revision, loaded.session_length());
        assert_eq!(m.anchor_seq, Some(23));
        // Composition and the §1.8 projections.
        let c = &m.composition;
        assert_eq!(
            (c.system_tokens, c.tools_tokens, c.message_tokens),
            (16, 48, 126)
        );
        assert_eq!(
            (c.user_tokens, c.assistant_tokens, c.tool_result_tokens),
            (42, 50, 34)
        );
        assert_eq!(c.anchor_adjustment, 362.0 - 190.0);
        assert_eq!(
            dsh::doc::to_string(&dsh::doc::measure::Projections::of(&m.projections)),
            r#"{"contextBreakdown":{"systemTokens":16,"toolsTokens":48,"messageTokens":126},"contextPressure":{"contextWindow":1000000,"pressureTokens":328,"projectedTokens":367},"tokenUsage":{"uncachedInputTokens":240,"outputTokens":43,"cacheReadTokens":192,"cacheWriteTokens":0}}"#
        );
        // Policy: the logged window, default ratios.
        let pol = &v["policy"];
        assert_eq!(pol["contextWindow"], 1_000_000);
        assert_eq!(pol["contextWindowSource"], "request/context");
        assert_eq!(pol["contextSeq"], 4);
        assert_eq!(pol["thresholdTokens"], 800_000);
        assert_eq!(pol["retainTokens"], 160_000);
        assert_eq!(pol["overThreshold"], false);
        assert_eq!(pol["headroomTokens"], 800_000 - 362);
    }
}

#[test]
fn worked_example_a_every_prefix() {
    // (seq, surfaceTokens, baseline kind, baseline tokens, surfaceDelta, total) — the §1.10 table.
    let table: &[(u64, u64, &str, f64, i64, f64)] = &[
        (0, 0, "none", 0.0, 0, 0.0),
        (1, 0, "none", 0.0, 0, 0.0),
        (2, 26, "estimated", 26.0, 0, 26.0),
        (3, 26, "estimated", 90.0, 0, 90.0),
        (4, 26, "estimated", 90.0, 0, 90.0),
        (8, 26, "estimated", 90.0, 0, 90.0),
        (12, 26, "estimated", 90.0, 0, 90.0),
        (13, 53, "usage", 129.0, 26, 155.0),
        (14, 53, "usage", 129.0, 26, 155.0),
        (15, 87, "usage", 129.0, 60, 189.0),
        (16, 87, "usage", 129.0, 60, 189.0),
        (22, 87, "usage", 129.0, 60, 189.0),
        (23, 110, "usage", 346.0, 0, 346.0),
        (27, 110, "usage", 346.0, 0, 346.0),
        (28, 126, "usage", 346.0, 16, 362.0),
    ];
    for log in example_logs() {
        for &(seq, surface, kind, base, delta, total) in table {
            let opts = LoadOptions {
                upto: Some(seq),
                ..LoadOptions::default()
            };
            let (_, m) = measure(&file(&log), &opts, None).unwrap();
            let got = (
                m.surface_tokens,
                m.baseline.kind.as_str(),
                m.baseline.tokens,
                m.surface_delta_tokens,
                m.total_tokens,
            );
            assert_eq!(
                got,
                (surface, kind, base, delta, total),
                "seq {seq} of {}",
                log.display()
            );
            // A prefix gets no closers, only the end-seed marker.
            assert_eq!(m.log_revision, seq + 2);
        }
    }
    // The same through the CLI flag.
    let (code, v) = measure_json(&[
        "--at",
        "13",
        sample("measure-example.jsonl").to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    assert_eq!(
        (v["totalTokens"].clone(), v["at"].clone()),
        (json!(155), json!(13))
    );
}

#[test]
fn worked_example_a_override_headers() {
    let log = sample("measure-example.jsonl");
    let (loaded, _) = measure(&file(&log), &LoadOptions::default(), None).unwrap();
    let logged = loaded.headers.header.clone().unwrap();
    // The same header passed explicitly: identical output.
    let (_, m) = measure(&file(&log), &LoadOptions::default(), Some(logged.clone())).unwrap();
    assert_eq!(
        (m.baseline.kind, m.total_tokens),
        (BaselineKind::Usage, 362.0)
    );
    // Without tools: estimated 16 + 126.
    let mut no_tools = logged.clone();
    no_tools.remove("tools");
    let (_, m) = measure(&file(&log), &LoadOptions::default(), Some(no_tools)).unwrap();
    assert_eq!(
        (
            m.baseline.kind,
            m.baseline.tokens,
            m.surface_delta_tokens,
            m.total_tokens
        ),
        (BaselineKind::Estimated, 142.0, 0, 142.0)
    );
    // Another model: any config difference voids the anchor.
    let mut pro = logged.clone();
    pro.get_mut("config")
        .unwrap()
        .set("model", Value::str("deepseek-v4-pro"));
    let (_, m) = measure(&file(&log), &LoadOptions::default(), Some(pro.clone())).unwrap();
    assert_eq!(
        (m.baseline.kind, m.total_tokens),
        (BaselineKind::Estimated, 190.0)
    );
    // Through the CLI.
    let (code, v) = measure_json(&["--header-json", &pro.to_json(), log.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert_eq!(v["totalTokens"], 190);
    assert_eq!(v["headerOverride"], true);
}

#[test]
#[cfg_attr(
    no_shared,
    ignore = "needs ../shared (corpus, reference answers, spec examples) beside the checkout"
)]
fn corpus_matches_the_oracle_through_the_library() {
    let Some(shared) = shared() else { return };
    let corpus = shared.join("corpus");
    let mut checked = 0;
    for set in ["real", "synthetic", "edge"] {
        let Ok(rd) = std::fs::read_dir(corpus.join(set)) else {
            continue;
        };
        let mut files: Vec<PathBuf> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .collect();
        files.sort();
        for f in files {
            let name = f.file_stem().unwrap().to_str().unwrap().to_string();
            let exp_path = corpus.join("expected").join(&name).join("measure.json");
            let Ok(text) = std::fs::read_to_string(&exp_path) else {
                continue;
            };
            let expected: J = serde_json::from_str(&text).unwrap();
            let got = measure(&file(&f), &LoadOptions::default(), None);
            match (expected.get("error"), got) {
                (Some(_), Ok(_)) if crate::support::read_where_the_reference_refuses(&name) => {}
                (Some(_), Err(_)) => {}
                (Some(e), Ok(_)) => panic!("{name}: the reference refuses ({e}) but dsh measured"),
                (None, Err(e)) => panic!("{name}: dsh refused: {e}"),
                (None, Ok((_, m))) => {
                    let mine: J = serde_json::from_str(&reference(&m)).unwrap();
                    assert_eq!(mine, expected, "{name}");
                }
            }
            checked += 1;
        }
    }
    assert!(checked >= 150, "only {checked} corpus logs checked");
}

#[test]
fn replay_errors_name_the_seq_and_exit_3() {
    let cases = [
        (
            "meter-step-twice.jsonl",
            5,
            "token meter: step/start at seq 5 arrived before turn 1/step 1 ended",
        ),
        (
            "meter-step-end-mismatch.jsonl",
            5,
            "token meter: step/end at seq 5 has no matching step/start event",
        ),
        (
            "meter-message-no-step.jsonl",
            6,
            "token meter: assistant/message at seq 6 has no matching step/start event",
        ),
        (
            "meter-cites-non-chunk.jsonl",
            9,
            "token meter: assistant/message at seq 9 source seq 4 is not assistant/chunk",
        ),
        (
            "meter-chunk-other-step.jsonl",
            10,
            "token meter: assistant/message at seq 10 source seq 9 belongs to another step",
        ),
    ];
    for (name, seq, message) in cases {
        let (code, v) = measure_json(&[sample(name).to_str().unwrap()]);
        assert_eq!(code, 3, "{name}");
        assert_eq!(v["error"], message, "{name}");
        assert_eq!(v["seq"], seq, "{name}");
        assert_eq!(v["stage"], "measure");
        match measure(&file(&sample(name)), &LoadOptions::default(), None) {
            Err(dsh::meter::MeasureError::Meter(MeterError::Replay { seq: s, message: m })) => {
                assert_eq!((s, m.as_str()), (seq, message));
            }
            other => panic!("{name}: {other:?}"),
        }
        // Readable mode: one line on stderr, exit 3.
        let out = dsh()
            .args(["measure", sample(name).to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(3));
        assert!(String::from_utf8_lossy(&out.stderr).contains(message));
    }
}

#[test]
fn anchor_reassembles_the_cited_chunks() {
    // Cited out of order (finish first): block-end replaces the text deltas,
    // max-tokens drops the unclosed tool call, the reasoning block assembles
    // from its delta alone: 15 + 6 + 4 = 25, so the delta after the anchor is
    // 53 − 25 = 28 (user 13 + the turn-2 prompt 15). Oracle: total 124.
    let (_, m) = measure(
        &file(&sample("meter-assembler.jsonl")),
        &LoadOptions::default(),
        None,
    )
    .unwrap();
    assert_eq!(
        reference(&m),
        r#"{"logRevision":23,"baseline":{"kind":"usage","tokens":96,"usage":{"inputTokens":50,"outputTokens":9,"cacheReadTokens":37}},"surfaceDeltaTokens":28,"totalTokens":124,"surfaceTokens":53,"nodes":[{"seq":2,"tokens":13},{"seq":14,"tokens":25},{"seq":19,"tokens":15}]}"#
    );
    // An explicit empty source list prices 0; usage below the estimate gives
    // an estimated anchor; an empty assistant message holds a 0-token node.
    let (_, m) = measure(
        &file(&sample("meter-estimated-anchor.jsonl")),
        &LoadOptions::default(),
        None,
    )
    .unwrap();
    assert_eq!(
        reference(&m),
        r#"{"logRevision":16,"baseline":{"kind":"estimated","tokens":113},"surfaceDeltaTokens":0,"totalTokens":113,"surfaceTokens":82,"nodes":[{"seq":2,"tokens":73},{"seq":5,"tokens":0},{"seq":12,"tokens":9}]}"#
    );
}

#[test]
fn chunks_of_an_earlier_step_with_the_same_labels() {
    // The reference accepts a message citing chunks of an earlier step that
    // carried the same turn/step. The streaming meter dropped them and says
    // so; `measure` measures again keeping every chunk (oracle: total 59).
    let src = file(&sample("meter-repeated-labels.jsonl"));
    let mut meter = Meter::new(None);
    let log = dsh::log::load(&src, &LoadOptions::default(), &mut meter).unwrap();
    assert!(matches!(
        meter.finish(&log),
        Err(MeterError::NeedsAllChunks { seq: 17, chunk: 5 })
    ));
    let (_, m) = measure(&src, &LoadOptions::default(), None).unwrap();
    assert_eq!(
        reference(&m),
        r#"{"logRevision":21,"baseline":{"kind":"estimated","tokens":127},"surfaceDeltaTokens":-68,"totalTokens":59,"surfaceTokens":28,"nodes":[{"seq":2,"tokens":18},{"seq":17,"tokens":10}]}"#
    );
}

#[test]
fn fail_over_and_the_context_window_flag() {
    let log = sample("measure-example.jsonl");
    let log = log.to_str().unwrap();
    // 400 × 0.8 = 320 ≤ 362: over.
    let (code, v) = measure_json(&["--fail-over", "--context-window", "400", log]);
    assert_eq!(code, 1);
    assert_eq!(v["policy"]["thresholdTokens"], 320);
    assert_eq!(v["policy"]["retainTokens"], 64);
    assert_eq!(v["policy"]["overThreshold"], true);
    assert_eq!(v["policy"]["contextWindowSource"], "flag");
    assert_eq!(v["policy"]["headroomTokens"], 320 - 362);
    // Without --fail-over the same log exits 0.
    assert_eq!(measure_json(&["--context-window", "400", log]).0, 0);
    // 1000 × 0.8 = 800 > 362: not over.
    assert_eq!(
        measure_json(&["--fail-over", "--context-window", "1000", log]).0,
        0
    );
    // A window whose retention reaches the threshold is the reference's error.
    let (code, v) = measure_json(&["--context-window", "1", log]);
    assert_eq!(code, 0);
    assert_eq!(
        v["policy"]["error"],
        "BasicCompactionConfig: deepseek-official/deepseek-v4-flash retainTokens (0) must be less than threshold tokens 0"
    );
}

#[test]
fn config_file_policies_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.toml");
    std::fs::write(
        &cfg,
        r#"
[compaction]
retainTokens = 10

[[compaction.modelPolicies]]
provider = "deepseek-official"
model = "deepseek-v4-flash"
thresholdRatio = 0.29

[[routes]]
provider = "deepseek-official"
models = [{ id = "deepseek-v4-flash", contextWindow = 100 }]
"#,
    )
    .unwrap();
    let log = sample("measure-example.jsonl");
    let (code, v) = measure_json(&[
        "--config",
        cfg.to_str().unwrap(),
        "--fail-over",
        log.to_str().unwrap(),
    ]);
    let p = &v["policy"];
    // 100 × 0.29 = 28.999999999999996 → 28 in double arithmetic.
    assert_eq!(p["thresholdTokens"], 28);
    assert_eq!(p["contextWindowSource"], "config-model");
    assert_eq!(p["modelPolicy"], true);
    assert_eq!(p["retainTokens"], 10);
    assert_eq!(p["retainTokensAbsolute"], 10);
    assert_eq!(code, 1);
    // $DSH_CONFIG is honoured too.
    let out = dsh()
        .env("DSH_CONFIG", &cfg)
        .args(["measure", "--json", log.to_str().unwrap()])
        .output()
        .unwrap();
    let v: J = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["policy"]["thresholdTokens"], 28);
    // An invalid config is a usage error with the reference's message.
    std::fs::write(&cfg, "[compaction]\nthresholdRatio = 2\n").unwrap();
    let out = dsh()
        .args([
            "measure",
            "--config",
            cfg.to_str().unwrap(),
            log.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("BasicCompactionConfig.thresholdRatio (2) must be a number in (0, 1]")
    );
    // An explicit config that does not exist is an error too.
    let out = dsh()
        .args([
            "measure",
            "--config",
            "/nonexistent/dsh.toml",
            log.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn route_flag_without_capacity() {
    let log = sample("measure-example.jsonl");
    let (code, v) = measure_json(&["--route", "other/model-x", log.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert_eq!(
        v["policy"]["error"],
        "compaction-basic: no context capacity for other/model-x; configure contextWindow on that adapter model"
    );
    assert_eq!(
        dsh()
            .args(["measure", "--route", "nonsense", log.to_str().unwrap()])
            .output()
            .unwrap()
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn tokenizer_counts_the_same_text() {
    let log = sample("measure-example.jsonl");
    let (code, v) = measure_json(&["--tokenizer", "o200k", log.to_str().unwrap()]);
    assert_eq!(code, 0);
    let t = &v["tokenizer"];
    assert_eq!(t["encoding"], "o200k");
    let nodes: u64 = t["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(t["messageTokens"].as_u64().unwrap(), nodes);
    assert_eq!(
        t["totalTokens"].as_u64().unwrap(),
        t["systemTokens"].as_u64().unwrap() + t["toolsTokens"].as_u64().unwrap() + nodes
    );
    // The counts are real BPE counts of the priced text, checked field by field.
    let (loaded, _) = measure(&file(&log), &LoadOptions::default(), None).unwrap();
    let mut c = dsh::meter::tokenizer::Counter::new(dsh::meter::tokenizer::Encoding::O200k);
    let header = loaded.headers.header.as_ref().unwrap();
    let sys = c.count_str(&header.get("system").unwrap().as_str().unwrap());
    assert_eq!(t["systemTokens"].as_u64().unwrap(), sys);
    let tools = c.count_str(&header.get("tools").unwrap().to_json());
    assert_eq!(t["toolsTokens"].as_u64().unwrap(), tools);
    assert_eq!(t["nodes"][1]["seq"], 13);
    let reasoning = c.count_str("Grep for FIXME notes...");
    let call = c.count_str("bash") + c.count_str("{\"command\":\"grep -rn FIXME lib\"}");
    assert_eq!(t["nodes"][1]["tokens"].as_u64().unwrap(), reasoning + call);
    // cl100k differs from o200k somewhere but covers the same text.
    let (_, w) = measure_json(&["--tokenizer", "cl100k", log.to_str().unwrap()]);
    assert_eq!(w["tokenizer"]["textBytes"], t["textBytes"]);
}

#[test]
fn readable_summary_composition_and_nodes() {
    let log = sample("measure-example.jsonl");
    let out = dsh()
        .args(["measure", "--nodes", log.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let s = String::from_utf8_lossy(&out.stdout);
    for want in [
        "route     deepseek-official/deepseek-v4-flash",
        "0.04% of the 1,000,000 window (request/context seq 4)",
        "362 (DSH estimate)",
        "threshold 800,000",
        "headroom 799,638",
        "provider usage 346 at assistant/message seq 23, surface delta +16",
        "system prompt",
        "tool results",
        "assistant/message",
    ] {
        assert!(s.contains(want), "missing {want:?} in:\n{s}");
    }
    // The per-node table lists every node with its price.
    assert!(
        s.lines()
            .any(|l| l.contains(" 15 ") && l.contains("tool/result") && l.contains(" 34 "))
    );
}

#[test]
fn many_logs_one_row_each_and_bad_files_do_not_stop_the_scan() {
    let dir = tempfile::tempdir().unwrap();
    for (name, src) in [
        ("a.jsonl", sample("measure-example.jsonl")),
        ("b.jsonl", sample("meter-assembler.jsonl")),
        ("c.jsonl", sample("meter-step-twice.jsonl")),
    ] {
        std::fs::copy(src, dir.path().join(name)).unwrap();
    }
    std::fs::write(dir.path().join("d.jsonl"), "{\"type\":\"nope\"}\n").unwrap();
    let (code, v) = measure_json(&[dir.path().to_str().unwrap()]);
    assert_eq!(code, 3);
    let logs = v["logs"].as_array().unwrap();
    assert_eq!(logs.len(), 4);
    assert_eq!(logs[0]["totalTokens"], 362);
    assert_eq!(logs[1]["totalTokens"], 124);
    assert!(logs[0]["file"].as_str().unwrap().ends_with("a.jsonl"));
    assert_eq!(logs[2]["stage"], "measure");
    assert_eq!(logs[2]["seq"], 5);
    assert!(
        logs[3]["error"]
            .as_str()
            .unwrap()
            .contains("first line is not a session header")
    );
    assert!(logs[3]["file"].as_str().unwrap().ends_with("d.jsonl"));
    assert_eq!(v["schema_version"], 1);
    // Readable: one row per log, the scan goes on, exit 3.
    let out = dsh()
        .args(["measure", "-j", "2", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(
        s.lines()
            .any(|l| l.contains("a.jsonl") && l.contains(" 362 ") && l.contains("usage"))
    );
    assert!(
        s.lines()
            .any(|l| l.contains("b.jsonl") && l.contains(" 124 "))
    );
    // A refused log's reason is on stderr, once; its row says refused.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "c.jsonl: token meter: step/start at seq 5 arrived before turn 1/step 1 ended"
        ),
        "{err}"
    );
    assert!(
        s.lines()
            .any(|l| l.contains("c.jsonl") && l.contains("refused"))
    );
    assert!(!s.contains("token meter: step/start"));
    // Only good logs, one over its threshold: --fail-over exits 1.
    let (code, v) = measure_json(&[
        "--fail-over",
        "--context-window",
        "400",
        sample("measure-example.jsonl").to_str().unwrap(),
        sample("meter-estimated-anchor.jsonl").to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    assert_eq!(v["logs"][0]["policy"]["overThreshold"], true);
    assert_eq!(v["logs"][1]["policy"]["overThreshold"], false);
    // A missing file among many is a row, not a stop.
    let (code, v) = measure_json(&[
        sample("measure-example.jsonl").to_str().unwrap(),
        "/nonexistent/x.jsonl",
    ]);
    assert_eq!(code, 3);
    assert_eq!(v["logs"][0]["totalTokens"], 362);
    assert!(v["logs"][1]["error"].is_string());
}

#[test]
fn refused_logs_are_exit_3_with_an_error_object() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"type\":\"nope\"}\n").unwrap();
    let (code, v) = measure_json(&[bad.to_str().unwrap()]);
    assert_eq!(code, 3);
    assert_eq!(
        v["error"],
        "corrupt session log: first line is not a session header"
    );
}

#[test]
fn a_caller_feeding_the_end_seed_marker_is_not_counted_twice() {
    let src = file(&sample("measure-example.jsonl"));
    let mut meter = Meter::new(None);
    let log = dsh::log::load(&src, &LoadOptions::default(), &mut meter).unwrap();
    let es = log.end_seed_event().unwrap();
    let folded = dsh::log::Folded {
        applied: None,
        surface: &log.surface,
        synthetic: true,
        canonical_line: None,
        canonical_offset: None,
    };
    dsh::log::Observer::event(&mut meter, &es, &folded);
    let m = meter.finish(&log).unwrap();
    assert_eq!(m.log_revision, 32);
    assert_eq!(m.log_revision, log.session_length());
    assert_eq!(m.total_tokens, 362.0);
}

#[test]
fn at_past_the_last_seq_is_refused_with_the_last_seq_named() {
    let log = sample("compacted.jsonl");
    let out = dsh()
        .args(["measure", "--at", "55"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--at 55 is past the end of the log (its last seq is 54)"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    // The last seq itself is fine.
    let ok = dsh()
        .args(["measure", "--at", "54"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(ok.status.code(), Some(0));
}

#[test]
fn a_warning_to_a_full_stderr_does_not_abort() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = crate::support::dsh_process()
        .arg("measure")
        .arg(crate::support::sample("torn.jsonl"))
        .stderr(full)
        .output()
        .unwrap();
    // The torn tail is warned about on stderr; that write fails, and dsh
    // carries on and reports on stdout as usual.
    assert_eq!(out.status.code(), Some(0), "{:?}", out.status);
    assert!(!out.stdout.is_empty());
}

#[test]
fn a_refused_log_among_many_is_reported_once_on_stderr() {
    let out = dsh()
        .args(["measure"])
        .arg(sample("refused.jsonl"))
        .arg(sample("compacted.jsonl"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.matches("seq gap").count(), 1, "{stderr}");
    assert!(!stdout.contains("seq gap"), "{stdout}");
    assert!(stdout.contains("refused"), "{stdout}");
}

/// The text the tokenizer column counts for one derived message, gathered
/// here independently of dsh's own walk (the module doc's rules).
fn priced_texts(content: Option<&Value<'_>>, out: &mut Vec<String>) {
    let Some(blocks) = content.and_then(|c| c.as_arr()) else {
        return;
    };
    for b in blocks {
        let ty = b.get("type").and_then(|t| t.as_str()).unwrap_or_default();
        let mut take = |k: &str| {
            if let Some(Value::Str(s)) = b.get(k) {
                out.push(s.to_lossy().into_owned());
            }
        };
        match &*ty {
            "text" | "reasoning" => take("text"),
            "tool-call" => {
                take("name");
                take("arguments");
            }
            "tool-result" => priced_texts(b.get("content"), out),
            _ => out.push(b.to_json()),
        }
    }
}

/// `--tokenizer` counts are tiktoken's, node by node, on corpus logs: the
/// fast counter (bpe-openai, a split of its own, a memo, many threads)
/// against `tiktoken-rs`'s `encode_ordinary`.
#[test]
fn tokenizer_counts_equal_tiktoken_on_the_corpus() {
    let Some(shared) = crate::support::shared("tokenizer_counts_equal_tiktoken_on_the_corpus")
    else {
        return;
    };
    let reference = tiktoken_rs::o200k_base_singleton();
    let cl = tiktoken_rs::cl100k_base_singleton();
    let mut nodes = 0;
    // Every third log, the largest ones included: tiktoken runs unoptimised here.
    for (name, path) in crate::support::corpus_logs(&shared).into_iter().step_by(3) {
        let Ok((log, _)) = measure(&file(&path), &LoadOptions::default(), None) else {
            continue;
        };
        let o = dsh::meter::tokenizer::count(&log, None, dsh::meter::tokenizer::Encoding::O200k)
            .unwrap();
        let c = dsh::meter::tokenizer::count(&log, None, dsh::meter::tokenizer::Encoding::Cl100k)
            .unwrap();
        let mut f = None;
        for (i, n) in log.surface.nodes.iter().enumerate() {
            let ev = log.read_body(&n.body, n.seq, &mut f).unwrap();
            let mut texts = Vec::new();
            if let Some(m) = dsh::surface::project(&ev) {
                priced_texts(m.get("content"), &mut texts);
            }
            let count = |bpe: &tiktoken_rs::CoreBPE| {
                texts
                    .iter()
                    .map(|t| bpe.encode_ordinary(t).len() as u64)
                    .sum::<u64>()
            };
            assert_eq!(
                o.nodes[i].tokens,
                count(reference),
                "{name} seq {} o200k",
                n.seq
            );
            assert_eq!(c.nodes[i].tokens, count(cl), "{name} seq {} cl100k", n.seq);
            nodes += 1;
        }
    }
    assert!(nodes > 250, "only {nodes} nodes compared");
}

/// The meter fed every chunk of a packed row one by one, as the loader
/// shows rows to an observer that does not take them whole.
struct OneByOne(Meter);

impl dsh::log::Observer for OneByOne {
    fn event(&mut self, ev: &dsh::Event<'_>, folded: &dsh::log::Folded<'_>) {
        self.0.event(ev, folded);
    }
}

/// A log's assistant messages citing only some of their chunks: every
/// third cited seq dropped, so that runs of a row's members are cut.
fn thinned(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let mut v: J = serde_json::from_str(line).unwrap();
        if v["type"] == "assistant/message"
            && let Some(seqs) = v.get_mut("sourceEventSeqs").and_then(|s| s.as_array_mut())
        {
            let kept: Vec<J> = seqs
                .iter()
                .enumerate()
                .filter(|(i, _)| i % 3 != 1)
                .map(|(_, s)| s.clone())
                .collect();
            *seqs = kept;
        }
        out.push_str(&serde_json::to_string(&v).unwrap());
        out.push('\n');
    }
    out
}

/// Rows are kept as one record each and a run of their members is fed to
/// the assembler as one delta: the measurement is the one the meter makes
/// from every chunk seen on its own, on logs with rows, cited in full and
/// in part, keeping the anchor's chunks or all of them.
#[test]
fn packed_rows_measure_as_their_chunks_one_by_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for name in [
        "coding-session.jsonl",
        "compacted.jsonl",
        "anthropic-cache.jsonl",
    ] {
        let text = std::fs::read_to_string(sample(name)).unwrap();
        assert!(text.contains("-chunks\""), "{name} has packed rows");
        for (variant, body) in [("full", text.clone()), ("thinned", thinned(&text))] {
            let p = dir.path().join(format!("{variant}-{name}"));
            std::fs::write(&p, &body).unwrap();
            for all in [false, true] {
                let meter = || {
                    let m = Meter::new(None);
                    if all { m.retaining_all_chunks() } else { m }
                };
                let mut whole = meter();
                let log = dsh::log::load(&file(&p), &LoadOptions::default(), &mut whole).unwrap();
                let mut single = OneByOne(meter());
                let log2 = dsh::log::load(&file(&p), &LoadOptions::default(), &mut single).unwrap();
                let a = format!("{:?}", whole.finish(&log));
                let b = format!("{:?}", single.0.finish(&log2));
                assert_eq!(a, b, "{variant} {name} (all chunks: {all})");
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 12);
}
