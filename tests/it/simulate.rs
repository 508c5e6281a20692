//! `dsh simulate`: open-loop replay under other compaction policies.

use std::path::Path;

use dsh::cache::NoPrices;
use dsh::simulate::{SimOptions, SimPolicy, StepKind, SummarySize, simulate};
use dsh::{LoadOptions, LogSource};

use crate::support::{corpus_logs, dsh, rows_one_by_one, sample, shared};

/// A policy that never fires: threshold far beyond the window, no pruning.
fn never() -> SimPolicy {
    SimPolicy {
        threshold_ratio: Some(100.0),
        no_prune: true,
        ..SimPolicy::default()
    }
}

fn opts(policies: Vec<SimPolicy>) -> SimOptions {
    SimOptions {
        policies,
        ..SimOptions::default()
    }
}

/// Every simulated request size equals the meter at that request, on the
/// log cut just before it was sent (`dsh measure --at SEQ-1`).
/// Returns how many requests were compared, `None` for a log the meter
/// refuses.
fn identity(log: &Path, limit: usize) -> Option<usize> {
    let src = LogSource::File(log.to_path_buf());
    let sim = simulate(
        &src,
        &LoadOptions::default(),
        &opts(vec![never()]),
        &NoPrices,
    )
    .ok()?;
    let (rec, row) = (&sim.rows[0], &sim.rows[1]);
    // Only a request over the window makes such a policy act (the
    // overflow path).
    if row.overflows == 0 {
        assert_eq!(row.compactions + row.prunes, 0, "{}", log.display());
    }
    assert_eq!(rec.request_sizes.len(), row.request_sizes.len());
    // Without recorded replacements the simulated surface is the recorded
    // one; with them, the simulated row drops them (it is its own policy).
    let plain = rec.compactions + rec.prunes + row.compactions + row.prunes == 0;
    let step = (row.request_sizes.len() / limit).max(1);
    let mut n = 0;
    for (i, &(seq, size)) in rec.request_sizes.iter().enumerate() {
        if plain {
            assert_eq!(
                row.request_sizes[i].1,
                size,
                "{} request {i}",
                log.display()
            );
        }
        if i % step != 0 {
            continue;
        }
        let lo = LoadOptions {
            upto: Some(seq - 1),
            ..LoadOptions::default()
        };
        let (_, m) = dsh::meter::measure(&src, &lo, None).expect("measures");
        assert_eq!(
            m.total_tokens,
            size,
            "{}: request at step/start seq {seq}",
            log.display()
        );
        n += usize::from(plain);
    }
    Some(n)
}

#[test]
fn a_policy_that_never_fires_reproduces_the_meter_at_every_request_on_the_samples() {
    let mut compared = 0;
    for e in std::fs::read_dir(sample("")).unwrap().flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "jsonl") {
            compared += identity(&p, 50).unwrap_or(0);
        }
    }
    assert!(compared > 10, "{compared} requests compared");
}

#[test]
#[cfg_attr(
    no_shared,
    ignore = "needs ../shared (corpus, reference answers, spec examples) beside the checkout"
)]
fn a_policy_that_never_fires_reproduces_the_meter_on_corpus_logs() {
    let Some(sh) = shared("simulate identity on the corpus") else {
        return;
    };
    let mut compared = 0;
    for (_, p) in corpus_logs(&sh).iter().take(40) {
        compared += identity(p, 5).unwrap_or(0);
    }
    assert!(compared > 10, "{compared} requests compared");
}

#[test]
#[cfg_attr(
    no_shared,
    ignore = "needs ../shared (corpus, reference answers, spec examples) beside the checkout"
)]
fn the_pressure_worked_example_prunes_then_compacts_the_reference_range() {
    let Some(sh) = shared("simulate on the pressure example") else {
        return;
    };
    let src = LogSource::File(sh.join("spec/examples/compact-pressure.input.jsonl"));
    let o = SimOptions {
        summary: Some(SummarySize::Tokens(200)),
        ..opts(vec![SimPolicy::default()])
    };
    let sim = simulate(&src, &LoadOptions::default(), &o, &NoPrices).unwrap();
    let row = &sim.rows[1];
    // The reference (compact-pressure.appended.jsonl): prune pair on 12,
    // then the range {2..22} = [2, 10, <replacement of 12>, 20, 22].
    let prune = row
        .steps
        .iter()
        .find(|s| s.kind == StepKind::Prune)
        .unwrap();
    assert_eq!(prune.shadowed, vec![12]);
    let c = row
        .steps
        .iter()
        .find(|s| s.kind == StepKind::Compaction)
        .expect("a compaction at the tail hook");
    assert_eq!(
        c.request_seq, 34,
        "the pre-step of step 4, on the log as it stands"
    );
    assert_eq!(c.shadowed.len(), 5);
    assert_eq!((c.shadowed[0], c.shadowed[1]), (2, 10));
    assert!(c.shadowed[2] >= 1 << 48, "the simulated replacement of 12");
    assert_eq!(&c.shadowed[3..], &[20, 22]);
    assert_eq!(row.unbalanced, 0);
    // Replaying the example with its appended bracket as recorded: the
    // recorded row finds that bracket and that prune.
    let dir = tempfile::tempdir().unwrap();
    let both = dir.path().join("both.jsonl");
    let mut text =
        std::fs::read_to_string(sh.join("spec/examples/compact-pressure.input.jsonl")).unwrap();
    text.push_str(
        &std::fs::read_to_string(sh.join("spec/examples/compact-pressure.appended.jsonl")).unwrap(),
    );
    std::fs::write(&both, text).unwrap();
    let sim = simulate(
        &LogSource::File(both),
        &LoadOptions::default(),
        &opts(vec![]),
        &NoPrices,
    )
    .unwrap();
    let rec = &sim.rows[0];
    assert_eq!((rec.compactions, rec.prunes), (1, 1));
}

#[test]
#[cfg_attr(
    no_shared,
    ignore = "needs ../shared (corpus, reference answers, spec examples) beside the checkout"
)]
fn properties_hold_over_a_threshold_grid() {
    let Some(sh) = shared("simulate properties") else {
        return;
    };
    let mut logs: Vec<_> = corpus_logs(&sh).into_iter().map(|x| x.1).take(25).collect();
    logs.push(sh.join("spec/examples/compact-pressure.input.jsonl"));
    let policies: Vec<SimPolicy> = [0.3, 0.5, 0.7, 0.9]
        .iter()
        .map(|&t| SimPolicy {
            threshold_ratio: Some(t),
            retention: Some(dsh::policy::Retention::Ratio(0.1)),
            ..SimPolicy::default()
        })
        .collect();
    let mut fired = 0;
    for log in logs {
        let src = LogSource::File(log.clone());
        let o = SimOptions {
            context_window: Some(8000),
            summary: Some(SummarySize::Ratio(0.1)),
            ..opts(policies.clone())
        };
        let Ok(sim) = simulate(&src, &LoadOptions::default(), &o, &NoPrices) else {
            continue;
        };
        let first = |i: usize| {
            sim.rows[i]
                .steps
                .iter()
                .find(|s| s.kind == StepKind::Compaction)
                .map(|s| s.request)
        };
        for i in 1..sim.rows.len() {
            let r = &sim.rows[i];
            assert_eq!(r.unbalanced, 0, "{}: {}", log.display(), r.label);
            // After each pressure compaction: below the threshold, or a note says why not.
            let threshold = 8000.0 * [0.3, 0.5, 0.7, 0.9][i - 1];
            let above = r
                .steps
                .iter()
                .filter(|s| s.kind == StepKind::Compaction && s.tokens_after >= threshold)
                .count();
            assert!(
                above == 0 || !r.notes.is_empty(),
                "{}: {}",
                log.display(),
                r.label
            );
            fired += r.compactions;
            // A lower threshold never fires later for the first compaction.
            if i > 1
                && let Some(later) = first(i)
            {
                let earlier = first(i - 1).expect("the lower threshold fired too");
                assert!(earlier <= later, "{}: {} vs {}", log.display(), i - 1, i);
            }
        }
    }
    assert!(fired > 0);
}

#[test]
fn the_cli_prints_a_table_json_and_a_sweep() {
    let out = dsh()
        .env("COLUMNS", "80")
        .args([
            "simulate",
            "--context-window",
            "4000",
            "--summary-tokens",
            "100",
        ])
        .args(["--sweep", "threshold=0.5:0.9:0.2,retain=0.08:0.16:0.08"])
        .arg(sample("coding-session.jsonl"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("recorded"), "{text}");
    assert!(text.contains("Open-loop replay"), "{text}");
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    let (v, code) = crate::support::json_of(&[
        "simulate",
        "--json",
        "--steps",
        "--no-prune",
        sample("coding-session.jsonl").to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    assert_eq!(
        v.get("rows").and_then(|r| r.as_arr()).map(|r| r.len()),
        Some(2)
    );
}

/// A growing session: after every step, `dsh compact --mode pressure`
/// against the loopback provider (as the live agent's pre-step hook would);
/// then `simulate` with the same policy finds exactly those prunes and
/// compactions, at the same requests, over the same ranges.
#[test]
fn replaying_under_the_recorded_policy_finds_the_recorded_compactions() {
    use crate::provider::{Reply, Server, deepseek_sse};
    use serde_json::{Value as J, json};
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("grow.jsonl");
    let header = json!({"type":"session","version":0,"id":"s-grow","createdAt":0,"cwd":"/home/dev/p","delegationDepth":0});
    std::fs::write(&log, format!("{header}\n")).unwrap();
    let src = json!({"kind":"model","provider":"deepseek-official","model":"deepseek-v4-flash"});
    let push = |evs: Vec<J>| {
        let text = std::fs::read_to_string(&log).unwrap();
        let first = text.lines().count() as u64 - 1;
        let mut out = text;
        for (seq, mut e) in (first..).zip(evs) {
            let o = e.as_object_mut().unwrap();
            o.insert("seq".into(), json!(seq));
            o.insert("time".into(), json!(1_700_000_000_000u64 + seq));
            out.push_str(&e.to_string());
            out.push('\n');
        }
        std::fs::write(&log, out).unwrap();
    };
    push(vec![json!({"type":"turn/start","data":{"turn":1}})]);
    let steps = 14;
    let mut compactions = 0;
    for k in 1..=steps {
        let mut evs = vec![json!({"type":"step/start","data":{"turn":1,"step":k}})];
        if k == 1 {
            evs.push(json!({"type":"user/message","data":{"role":"user","content":[{"type":"text","text":"Read every file. ".repeat(10)}],"source":{"kind":"user"},"id":"u1"},"surfaceOp":"append"}));
            evs.push(json!({"type":"request/header","data":{"header":{"config":{"provider":"deepseek-official","model":"deepseek-v4-flash"},"system":"You are a careful coding agent.","tools":[]},"reason":"initial"}}));
        }
        let call = format!("call_{k}");
        // Every fourth result is long enough for the pruner.
        let n = if k % 4 == 0 {
            9000
        } else {
            1200 + 100 * k as usize
        };
        let body: String = "abcdefghij".repeat(n / 10);
        evs.push(json!({"type":"assistant/message","data":{"turn":1,"step":k,"message":{"role":"assistant","content":[{"type":"tool-call","id":call,"name":"read","arguments":"{}"}],"source":src,"id":format!("a{k}")}},"surfaceOp":"append"}));
        evs.push(json!({"type":"tool/call","data":{"turn":1,"step":k,"callId":call,"name":"read","arguments":"{}"}}));
        evs.push(json!({"type":"tool/result","data":{"turn":1,"step":k,"message":{"role":"user","content":[{"type":"tool-result","toolCallId":call,"content":[{"type":"text","text":body}]}],"source":{"kind":"tool","callId":call},"id":format!("t{k}")}},"surfaceOp":"append"}));
        evs.push(json!({"type":"step/end","data":{"turn":1,"step":k}}));
        push(evs);
        if k == steps {
            break;
        }
        let server = Server::start(vec![
            Reply::Sse(deepseek_sse("## Summary\n- read files")),
            Reply::Sse(deepseek_sse("## Summary\n- read files")),
            Reply::Sse(deepseek_sse("## Summary\n- read files")),
        ]);
        let out = crate::support::dsh()
            .env("DEEPSEEK_API_KEY", "sk-test")
            .args([
                "compact",
                "--json",
                "-q",
                "--mode",
                "pressure",
                "--retry-delay",
                "0",
            ])
            .args(["--context-window", "6000", "--base-url", &server.base])
            .arg(&log)
            .output()
            .unwrap();
        let v: J = serde_json::from_slice(&out.stdout).unwrap_or(J::Null);
        if v["outcome"] == json!("compacted") {
            compactions += 1;
        }
    }
    assert!(
        compactions >= 2,
        "the session crossed its threshold more than once"
    );
    let o = SimOptions {
        context_window: Some(6000),
        ..opts(vec![SimPolicy::default()])
    };
    let sim = simulate(
        &LogSource::File(log.clone()),
        &LoadOptions::default(),
        &o,
        &NoPrices,
    )
    .unwrap();
    let (rec, row) = (&sim.rows[0], &sim.rows[1]);
    assert_eq!(rec.compactions, compactions);
    // Seqs of replacing nodes differ (the simulation numbers its own): compare
    // the agent's nodes and count the replacing ones.
    let replacing: std::collections::HashSet<u64> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str::<J>(l).unwrap())
        .filter(|e| e["surfaceOp"].is_object())
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    let norm = |steps: &[dsh::simulate::Step]| -> Vec<(StepKind, u64, Vec<Option<u64>>)> {
        steps
            .iter()
            .map(|s| {
                let sh = s
                    .shadowed
                    .iter()
                    .map(|&q| (q < 1 << 48 && !replacing.contains(&q)).then_some(q))
                    .collect();
                (s.kind, s.request_seq, sh)
            })
            .collect()
    };
    assert_eq!(norm(&row.steps), norm(&rec.steps));
    assert_eq!(
        row.request_sizes, rec.request_sizes,
        "the same pressure at every request"
    );
    assert!(rec.prunes > 0 && row.prunes == rec.prunes);
}

/// A replay that takes packed rows whole gives what it gives fed each
/// chunk: on the samples, and on rows whose times go back, start before the
/// event before them or end after the event after them (the clock's checks
/// then see every chunk, or the row's last).
#[test]
fn packed_rows_replay_as_their_chunks_one_by_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut logs = Vec::new();
    for name in [
        "coding-session.jsonl",
        "compacted.jsonl",
        "anthropic-cache.jsonl",
    ] {
        logs.push((
            name.to_string(),
            std::fs::read_to_string(sample(name)).unwrap(),
        ));
    }
    // The first row of a sample, its times going back, then starting early.
    let base = logs[0].1.clone();
    let at = base.find("\"dt\":[").unwrap() + "\"dt\":[".len();
    let close = at + base[at..].find(']').unwrap();
    logs.push((
        "back.jsonl".into(),
        format!("{}5,-3,1{}", &base[..at], &base[close..]),
    ));
    // In order, but its last chunk a day after the event that follows it.
    logs.push((
        "late.jsonl".into(),
        format!("{}1,1,86400000{}", &base[..at], &base[close..]),
    ));
    let t0 = base.find("\"time0\":").unwrap() + "\"time0\":".len();
    let t0_end = t0 + base[t0..].find(',').unwrap();
    logs.push((
        "early.jsonl".into(),
        format!("{}1000{}", &base[..t0], &base[t0_end..]),
    ));
    for (name, text) in &logs {
        assert!(text.contains("-chunks\""), "{name} has packed rows");
        let mut outs = Vec::new();
        for (form, body) in [("packed", text.clone()), ("lines", rows_one_by_one(text))] {
            let sub = dir.path().join(form);
            std::fs::create_dir_all(&sub).unwrap();
            let p = sub.join(name);
            std::fs::write(&p, body).unwrap();
            let out = dsh()
                .args(["simulate", "--json", "--steps", "--context-window", "4000"])
                .args(["--summary-tokens", "100"])
                .arg(&p)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{name} {form}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            outs.push(
                String::from_utf8(out.stdout)
                    .unwrap()
                    .replace(sub.to_str().unwrap(), ""),
            );
            // The clock the replay prices by: every time it asks rates at.
            let clock = Clock::default();
            let fires = SimOptions {
                context_window: Some(4000),
                summary: Some(SummarySize::Tokens(100)),
                ..opts(vec![SimPolicy::default()])
            };
            simulate(&LogSource::File(p), &LoadOptions::default(), &fires, &clock).unwrap();
            outs.push(format!("{:?}", clock.0.into_inner().unwrap()));
        }
        assert_eq!(outs[0], outs[2], "{name}: packed ≠ one by one");
        assert_eq!(outs[1], outs[3], "{name}: prices asked at other times");
    }
}

/// Records when rates are asked for; knows none.
#[derive(Default)]
struct Clock(std::sync::Mutex<Vec<(String, Option<i64>)>>);

impl dsh::cache::Prices for Clock {
    fn rates(
        &self,
        provider: &str,
        model: &str,
        time_ms: Option<i64>,
    ) -> Option<dsh::cache::Rates> {
        self.0
            .lock()
            .unwrap()
            .push((format!("{provider}/{model}"), time_ms));
        None
    }
}

/// Issue 42: simulate sizes every request at the point it was sent (the
/// log before its attempt's first record, after the turn's user message,
/// request header and splices), failed attempts included; on every corpus
/// log the recorded row's size of each request is `measure --at SEQ-1`
/// there, and no request that carried a prompt is sized 0.
#[test]
#[cfg_attr(
    no_shared,
    ignore = "needs ../shared (corpus, reference answers, spec examples) beside the checkout"
)]
fn every_corpus_request_is_sized_at_its_sent_point() {
    let Some(sh) = shared("simulate's sent points on the corpus") else {
        return;
    };
    let (mut logs, mut compared) = (0, 0);
    for (_, p) in corpus_logs(&sh) {
        let src = LogSource::File(p.clone());
        // At the recorded policy: the config's, which the recorded row
        // replays and a lane with no overrides simulates.
        let Ok(sim) = simulate(
            &src,
            &LoadOptions::default(),
            &opts(vec![SimPolicy::default()]),
            &NoPrices,
        ) else {
            continue;
        };
        logs += 1;
        let rec = &sim.rows[0];
        assert_eq!(rec.requests, rec.request_sizes.len());
        assert_eq!(sim.rows[1].requests, rec.requests, "{}", p.display());
        for &(seq, size) in &rec.request_sizes {
            assert!(seq > 0, "{}: a request sent before any record", p.display());
            let lo = LoadOptions {
                upto: Some(seq - 1),
                ..LoadOptions::default()
            };
            let (_, m) = dsh::meter::measure(&src, &lo, None).expect("measures");
            assert_eq!(
                m.total_tokens,
                size,
                "{}: request sent at seq {seq}",
                p.display()
            );
            assert!(
                size > 0.0,
                "{}: request sent at seq {seq} sized 0",
                p.display()
            );
            compared += 1;
        }
    }
    assert!(
        logs > 100 && compared > 300,
        "{logs} logs, {compared} requests"
    );
}

/// Issue 42: a request the provider refused with `CONTEXT_WINDOW_EXCEEDED`
/// and the overflow path's bracket after it (inside the failed step, before
/// the retry), as the harness writes them: the recorded row counts the
/// overflow and names the bracket's mode, and the config's policy, which is
/// the recorded one, finds the same.
#[test]
fn a_recorded_overflow_failure_and_its_recovery_are_counted_as_such() {
    let src = LogSource::File(sample("overflow-recovery.jsonl"));
    let sim = simulate(
        &src,
        &LoadOptions::default(),
        &opts(vec![SimPolicy::default()]),
        &NoPrices,
    )
    .unwrap();
    let (rec, row) = (&sim.rows[0], &sim.rows[1]);
    assert_eq!(rec.overflows, 1);
    assert_eq!(rec.failed, 1);
    assert_eq!(rec.compactions, 1);
    assert_eq!(
        (
            rec.compaction_modes.pressure,
            rec.compaction_modes.overflow,
            rec.compaction_modes.manual
        ),
        (0, 1, 0)
    );
    let kinds: Vec<StepKind> = rec.steps.iter().map(|s| s.kind).collect();
    assert_eq!(kinds, [StepKind::Overflow]);
    // The refused attempt was sized over the window where it was sent, and
    // is not billed (nothing shows the model read it).
    let w = rec.context_window.unwrap() as f64;
    assert!(rec.request_sizes.iter().any(|&(_, s)| s > w));
    let billed: f64 = rec
        .request_sizes
        .iter()
        .map(|x| x.1)
        .filter(|&s| s <= w)
        .sum();
    assert_eq!(rec.billed_input, billed);
    // The same policy, simulated: one overflow, recovered by one overflow
    // bracket over the same range.
    assert_eq!((row.overflows, row.unrecovered, row.failed), (1, 0, 1));
    assert_eq!(row.compaction_modes.overflow, 1);
    assert_eq!(row.compaction_modes.pressure, 0);
    assert_eq!(row.steps[0].shadowed, rec.steps[0].shadowed);
    // The JSON names the modes.
    let (v, code) = crate::support::json_of(&[
        "simulate",
        "--json",
        "--threshold-ratio",
        "0.8",
        sample("overflow-recovery.jsonl").to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    for r in v.get("rows").and_then(|r| r.as_arr()).unwrap() {
        let n = |k: &str| r.get(k).and_then(|x| x.as_f64());
        let modes = r.get("compactionModes").unwrap();
        assert_eq!(modes.get("overflow").and_then(|x| x.as_f64()), Some(1.0));
        assert_eq!(n("failedAttempts"), Some(1.0));
    }
}

/// A bracket with no owner (`turn: null`) is the manual path's; one
/// between steps of a turn, the pressure path's.
#[test]
fn recorded_brackets_are_named_by_where_the_log_puts_them() {
    let src = LogSource::File(sample("compacted.jsonl"));
    let sim = simulate(&src, &LoadOptions::default(), &opts(vec![]), &NoPrices).unwrap();
    let m = sim.rows[0].compaction_modes;
    assert_eq!((m.pressure, m.overflow, m.manual), (1, 0, 0));
    let text = std::fs::read_to_string(sample("compacted.jsonl")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("manual.jsonl");
    std::fs::write(
        &p,
        text.replace(
            r#""compactionId":"cmp-sample-0001","turn":2}"#,
            r#""compactionId":"cmp-sample-0001","turn":null}"#,
        ),
    )
    .unwrap();
    let sim = simulate(
        &LogSource::File(p),
        &LoadOptions::default(),
        &opts(vec![]),
        &NoPrices,
    )
    .unwrap();
    let m = sim.rows[0].compaction_modes;
    assert_eq!((m.pressure, m.overflow, m.manual), (0, 0, 1));
    assert_eq!(
        sim.rows[0]
            .steps
            .iter()
            .filter(|s| s.kind == StepKind::Manual)
            .count(),
        1
    );
}

/// With `--tokenizer deepseek-v4` every request is also counted as DeepSeek
/// renders it, where it was sent: the recorded row's provider figures are
/// `dsh cache --tokenizer deepseek-v4`'s (same requests, same counts), the
/// cache columns are in those tokens, and the window a request overflows
/// is judged by them, not by DSH's estimate.
#[test]
fn a_tokenizer_counts_requests_overflows_and_the_cache_as_the_provider_does() {
    let log = sample("coding-session.jsonl");
    let l = log.to_str().unwrap();
    let sim = |args: &[&str]| {
        let mut all = vec!["simulate", "--json"];
        all.extend_from_slice(args);
        all.push(l);
        let (v, code) = crate::support::json_of(&all);
        assert_eq!(code, 0, "{v:?}");
        v
    };
    let n = |v: &dsh::json::Value<'_>, path: &[&str]| {
        let mut x = v.clone();
        for k in path {
            x = x
                .get(k)
                .unwrap_or_else(|| panic!("{k} in {path:?}"))
                .clone();
        }
        x.as_f64().unwrap_or_else(|| panic!("{path:?} is a number"))
    };
    let (cache, code) =
        crate::support::json_of(&["cache", "--json", "--tokenizer", "deepseek-v4", l]);
    assert_eq!(code, 0);
    let v = sim(&["--tokenizer", "deepseek-v4"]);
    assert_eq!(
        v.get("tokenizer").and_then(|t| t.as_str()).as_deref(),
        Some("deepseek-v4")
    );
    let rec = &v.get("rows").and_then(|r| r.as_arr()).unwrap()[0];
    let prompt = n(&cache, &["totals", "promptTokens"]);
    let hit = n(&cache, &["totals", "predictedHit"]);
    assert_eq!(n(rec, &["provider", "billedInputTokens"]), prompt);
    assert_eq!(n(rec, &["cacheHitTokens"]), hit);
    assert_eq!(n(rec, &["cacheMissedTokens"]), prompt - hit);
    let window = n(rec, &["contextWindow"]);
    let dsh_peak = n(rec, &["peakPressure"]) * window;
    let provider_peak = n(rec, &["provider", "peakPressure"]) * window;
    assert!(
        (dsh_peak - provider_peak).abs() > 100.0,
        "the sample's two counts differ: {dsh_peak} vs {provider_peak}"
    );
    // A window between the two peaks: only the larger count overflows it.
    let between = ((dsh_peak + provider_peak) / 2.0).round() as u64;
    let w = between.to_string();
    let overflows = |args: &[&str]| {
        let mut a = vec!["--context-window", &w];
        a.extend_from_slice(args);
        let v = sim(&a);
        n(
            &v.get("rows").and_then(|r| r.as_arr()).unwrap()[0],
            &["overflows"],
        )
    };
    let (with, without) = (overflows(&["--tokenizer", "deepseek-v4"]), overflows(&[]));
    if provider_peak > dsh_peak {
        assert!(with >= 1.0 && without == 0.0, "{with} {without}");
    } else {
        assert!(with == 0.0 && without >= 1.0, "{with} {without}");
    }
    // Without a tokenizer: no provider figures.
    let plain = sim(&[]);
    assert!(matches!(
        plain.get("rows").and_then(|r| r.as_arr()).unwrap()[0].get("provider"),
        Some(dsh::json::Value::Null)
    ));
}

/// A log whose system prompt and tools are placeholders: `simulate
/// --tokenizer deepseek-v4` estimates the same hidden prefix as `dsh cache`
/// and counts it at the head of every request, so its recorded row's first
/// request is the size DeepSeek reported.
#[test]
fn a_placeholder_log_is_simulated_with_the_hidden_prefix_cache_estimates() {
    let test = "a_placeholder_log_is_simulated_with_the_hidden_prefix_cache_estimates";
    let Some(sh) = shared(test) else { return };
    let log = sh.join("corpus/real/acp__bash-tool-turn__session.jsonl");
    let l = log.to_str().unwrap();
    let (cache, _) = crate::support::json_of(&["cache", "--json", "--tokenizer", "deepseek-v4", l]);
    let (sim, code) =
        crate::support::json_of(&["simulate", "--json", "--tokenizer", "deepseek-v4", l]);
    assert_eq!(code, 0);
    let tokens = |v: &dsh::json::Value<'_>| {
        v.get("hiddenPrefix")
            .and_then(|h| h.get("tokens"))
            .and_then(|t| t.as_f64())
    };
    assert!(tokens(&cache).is_some_and(|t| t > 1000.0));
    assert_eq!(tokens(&sim), tokens(&cache));
    let rec = &sim.get("rows").and_then(|r| r.as_arr()).unwrap()[0];
    let billed = rec
        .get("provider")
        .and_then(|p| p.get("billedInputTokens"))
        .and_then(|b| b.as_f64());
    let prompt = cache
        .get("totals")
        .and_then(|t| t.get("promptTokens"))
        .and_then(|p| p.as_f64());
    assert_eq!(billed, prompt);
}
