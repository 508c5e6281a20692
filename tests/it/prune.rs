//! `dsh prune`: reference-identical pruning, the open-turn rule, and the
//! writer's refusals as the command shows them.

use std::fs;
use std::path::Path;

use dsh::json::Value;
use dsh::log::{LoadOptions, LoadedLog, LogSource};

pub use crate::support::dsh;

use crate::support::{appends, assert_verifies, copy_of, json, load};
pub use crate::support::{contains, sample, shared};

fn lines(p: &Path) -> Vec<String> {
    fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn code_points(v: &Value<'_>) -> Vec<u32> {
    v.as_jstr().unwrap().code_points()
}

#[test]
#[cfg_attr(
    no_shared,
    ignore = "needs ../shared (corpus, reference answers, spec examples) beside the checkout"
)]
fn prune_example_reproduced_byte_for_byte() {
    let Some(shared) = shared("prune_example_reproduced_byte_for_byte") else {
        return;
    };
    let ex = shared.join("spec/examples");
    let log = load(&ex.join("prune.input.jsonl"));
    let expected = lines(&ex.join("prune.appended.jsonl"));
    // The example is a live session: the pass starts right after seq 9.
    let mut file = None;
    let candidates: Vec<_> = log
        .surface
        .nodes
        .iter()
        .filter(|n| n.kind == dsh::Kind::ToolResult)
        .map(|n| Ok((log.read_body(&n.body, n.seq, &mut file)?, n.tokens)))
        .collect();
    let cfg = dsh::prune::PruneConfig::default();
    let plan = dsh::prune::plan_nodes(&cfg, candidates, log.stored_events, 0.0, log.surface.tokens)
        .unwrap();
    assert_eq!(plan.events.len(), expected.len());
    for (ev, want) in plan.events.iter().zip(&expected) {
        let want_v = Value::parse(want).unwrap();
        let mut got = ev.value.clone();
        got.set("time", want_v.get("time").unwrap().clone().into_owned());
        assert_eq!(got.to_json(), *want, "seq {}", ev.seq);
    }
    assert_eq!(plan.chars_removed, 7682);
    let p: Vec<_> = plan.pruned.iter().map(dsh::doc::to_string).collect();
    assert_eq!(
        p,
        [
            r#"{"originalSeq":7,"replacementSeq":11,"callId":"call_a","charsBefore":9000,"charsAfter":5159}"#,
            r#"{"originalSeq":8,"replacementSeq":13,"callId":"call_b","charsBefore":9000,"charsAfter":5159}"#
        ]
    );
    assert_eq!(
        (plan.surface_tokens_before, plan.surface_tokens_after),
        (5372, 3452)
    );

    // The command continues the open turn: exactly the example's events,
    // in a dry run and written to a copy; `dsh verify` finds it clean.
    let with_time = |line: &str, want: &str| {
        let mut v = Value::parse(line).unwrap().into_owned();
        let t = Value::parse(want)
            .unwrap()
            .get("time")
            .unwrap()
            .to_owned_value();
        v.set("time", t);
        v.to_json()
    };
    let out = dsh()
        .args(["prune", "--dry-run", "--events", "-q"])
        .arg(ex.join("prune.input.jsonl"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let dry: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(dry.len(), expected.len());
    for (g, want) in dry.iter().zip(&expected) {
        assert_eq!(with_time(g, want), *want);
    }
    let (_d, copy) = copy_of(&ex.join("prune.input.jsonl"), "session.jsonl");
    let (appended, _) = appends(dsh().args(["prune", "-q"]), &copy, "prune");
    let appended: Vec<&str> = appended.lines().collect();
    assert_eq!(appended.len(), expected.len());
    for (g, want) in appended.iter().zip(&expected) {
        assert_eq!(with_time(g, want), *want);
    }
    assert_verifies(dsh(), &copy, "prune");

    // --resume: the reference's resumed session (what the oracle reports):
    // the same pairs after the resume prefix (closer at 10, end-seed at 11),
    // so every seq is 2 higher.
    let out = dsh()
        .args(["prune", "--dry-run", "--json", "--events", "--resume", "-q"])
        .arg(ex.join("prune.input.jsonl"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let got: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(got.len(), 6);
    assert!(got[0].starts_with(r#"{"type":"turn/end","seq":10,"time":1700000200009,"#));
    assert_eq!(
        got[1],
        r#"{"type":"session/end-seed","seq":11,"time":1700000200009,"data":{}}"#
    );
    for (g, want) in got[2..].iter().zip(&expected) {
        let shift = |s: &str| -> String {
            let mut v = Value::parse(s).unwrap().into_owned();
            v.set("time", Value::from(0u64));
            let seq = v.get("seq").unwrap().as_f64().unwrap();
            v.set("seq", Value::from(seq));
            v.to_json()
        };
        let mut gv = Value::parse(g).unwrap().into_owned();
        let seq = gv.get("seq").unwrap().as_f64().unwrap();
        gv.set("seq", Value::from(seq - 2.0));
        assert_eq!(shift(&gv.to_json()), shift(want));
    }
}

#[test]
#[cfg_attr(
    no_shared,
    ignore = "needs ../shared (corpus, reference answers, spec examples) beside the checkout"
)]
fn prune_dry_run_json_matches_the_oracle_on_the_corpus() {
    let Some(shared) = shared("prune_dry_run_json_matches_the_oracle_on_the_corpus") else {
        return;
    };
    let corpus = shared.join("corpus");
    let mut checked = 0;
    let mut pruning = 0;
    for set in ["real", "synthetic", "edge"] {
        let Ok(rd) = fs::read_dir(corpus.join(set)) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let Some(stem) = p
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .strip_suffix(".jsonl")
            else {
                continue;
            };
            let exp_path = corpus.join("expected").join(stem).join("prune.json");
            let Ok(bytes) = fs::read(&exp_path) else {
                continue;
            };
            let expected = Value::parse(std::str::from_utf8(&bytes).unwrap())
                .unwrap()
                .into_owned();
            let out = dsh()
                .args(["prune", "--dry-run", "--json", "--resume", "-q"])
                .arg(&p)
                .output()
                .unwrap();
            let actual = json(&out.stdout);
            if crate::support::read_where_the_reference_refuses(stem) {
                assert_eq!(out.status.code(), Some(0), "{stem}: dsh reads it");
            } else if expected.get("error").is_some() {
                assert_eq!(out.status.code(), Some(3), "{stem}: expected a refusal");
                assert!(actual.get("error").is_some(), "{stem}");
            } else {
                assert_eq!(out.status.code(), Some(0), "{stem}");
                if let Err(d) = contains(&expected, &actual, "$") {
                    panic!("{stem}: {d}");
                }
                if !expected.get("pruned").unwrap().as_arr().unwrap().is_empty() {
                    pruning += 1;
                }
            }
            checked += 1;
        }
    }
    assert!(checked > 100, "{checked} corpus logs");
    assert!(pruning > 0);
}

/// Our own stand-in for the spec's worked example (samples/prune-example*,
/// written by samples/generate_prune_example.py from the spec's rules, not
/// by dsh): the pairs continue the open turn and are byte for byte the
/// authored ones, in a dry run and in the file; verify finds it clean.
#[test]
fn prune_example_of_our_own_reproduced_byte_for_byte() {
    let expected = fs::read(sample("prune-example.appended.jsonl")).unwrap();
    let time = ["--time", "1767300000100"];
    let out = dsh()
        .args(["prune", "--dry-run", "--events", "-q"])
        .args(time)
        .arg(sample("prune-example.jsonl"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(expected.clone()).unwrap()
    );
    let (_d, log) = copy_of(&sample("prune-example.jsonl"), "session.jsonl");
    let (appended, _) = appends(dsh().args(["prune", "-q"]).args(time), &log, "prune");
    assert!(
        appended.as_bytes() == &expected[..],
        "the appended bytes differ from samples/prune-example.appended.jsonl"
    );
    let after = fs::read(&log).unwrap();
    assert_verifies(dsh(), &log, "prune");
    // Still the open turn (one closer in memory), and a second pass appends nothing.
    let l = load(&log);
    assert_eq!((l.stored_events, l.closers.len()), (14, 1));
    let out = dsh().args(["prune", "-q"]).arg(&log).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(fs::read(&log).unwrap(), after);
}

/// The bundled open-turn sample (two oversized results, the second CJK and
/// emoji; an open step with one pending call) stands in for the spec's
/// example when ../shared is absent: the pairs continue the open turn, with
/// the seqs and content the library's plan on the stored log gives.
#[test]
fn prune_on_an_open_turn_continues_it() {
    let (_d, log) = copy_of(&sample("prune-open-turn.jsonl"), "session.jsonl");
    let orig = load(&log);
    assert_eq!((orig.stored_events, orig.closers.len()), (9, 3));
    // What the live agent's pruner appends: the stored surface (no closers),
    // from the next seq.
    let mut file = None;
    let candidates: Vec<_> = orig
        .surface
        .nodes
        .iter()
        .filter(|n| n.kind == dsh::Kind::ToolResult && n.seq < orig.stored_events)
        .map(|n| Ok((orig.read_body(&n.body, n.seq, &mut file)?, n.tokens)))
        .collect();
    let plan = dsh::prune::plan_nodes(
        &dsh::prune::PruneConfig::default(),
        candidates,
        orig.stored_events,
        1767230000000.0,
        orig.surface.tokens,
    )
    .unwrap();
    assert_eq!(plan.events.len(), 4);
    let (appended, out) = appends(
        dsh().args(["prune", "--time", "1767230000000"]),
        &log,
        "prune",
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("appended 4 event(s) (seq 9–12: 2 prune pair(s)) inside the open turn"),
        "{text}"
    );
    let appended: Vec<&str> = appended.lines().collect();
    let want: Vec<String> = plan.events.iter().map(|e| e.value.to_json()).collect();
    assert_eq!(appended, want);
    // Still the same open turn: the loader computes the same closers, the
    // two replacements are on the surface, and verify finds it clean.
    let l = load(&log);
    assert_eq!((l.stored_events, l.closers.len()), (13, 3));
    assert_eq!(l.surface.replace_generation, 2);
    assert_verifies(dsh(), &log, "prune");
    // The JSON names the lifecycle.
    let (_d2, log2) = copy_of(&sample("prune-open-turn.jsonl"), "session.jsonl");
    let out = dsh()
        .args(["prune", "--dry-run", "--json", "-q"])
        .arg(&log2)
        .output()
        .unwrap();
    let v = json(&out.stdout);
    assert!(v.get("lifecycle").unwrap().is_str("continue"));
    // dsh appends at 9; the reference's keys answer for the resumed session.
    assert_eq!(
        v.get("write").unwrap().get("baseSeq").unwrap().as_f64(),
        Some(9.0)
    );
    assert!(v.get("baseSeq").unwrap().as_f64().unwrap() > 9.0);
    assert!(
        v.get("lifecycleEvents")
            .unwrap()
            .as_arr()
            .unwrap()
            .is_empty()
    );
    assert!(matches!(v.get("refused"), Some(Value::Null)));
}

#[test]
fn prune_refuses_outside_an_open_turn_by_default() {
    let (_d, log) = copy_of(&sample("prune-open-turn.jsonl"), "session.jsonl");
    let before = fs::read(&log).unwrap();
    // --resume closes the open turn first: refused without --allow-closed-turn.
    let out = dsh()
        .args(["prune", "--resume", "-q"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("prunes only inside an open turn"), "{err}");
    assert!(err.contains("crash-repair closers"), "{err}");
    assert!(err.contains("--allow-closed-turn"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert_eq!(fs::read(&log).unwrap(), before);
    let out = dsh()
        .args(["prune", "--json", "--resume", "-q"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v = json(&out.stdout);
    assert!(
        v.get("refused")
            .unwrap()
            .as_str()
            .unwrap()
            .contains("open turn")
    );
    assert!(matches!(v.get("written"), Some(Value::Bool(false))));
    assert!(matches!(v.get("openTurn"), Some(Value::Bool(false))));
    assert!(matches!(v.get("fileTurnOpen"), Some(Value::Bool(true))));
    assert_eq!(fs::read(&log).unwrap(), before);
    // A closed turn says so.
    let (_d2, closed) = copy_of(&sample("prune-closed.jsonl"), "session.jsonl");
    let before = fs::read(&closed).unwrap();
    let out = dsh().args(["prune", "-q"]).arg(&closed).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("this log's last turn is closed"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert_eq!(fs::read(&closed).unwrap(), before);
}

#[test]
fn prune_writes_the_lifecycle_then_the_pairs() {
    let (_d, log) = copy_of(&sample("prune-open-turn.jsonl"), "session.jsonl");
    let before = fs::read(&log).unwrap();
    let orig = load(&log);
    assert_eq!((orig.stored_events, orig.closers.len()), (9, 3));
    let out = dsh()
        .args([
            "prune",
            "--resume",
            "--allow-closed-turn",
            "--time",
            "1767230000000",
        ])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("pruned 2 tool result(s)"), "{text}");
    assert!(text.contains("appended 8 event(s) (seq 9–16: 3 crash-repair closer(s), the session/end-seed marker, 2 prune pair(s))"), "{text}");
    assert!(text.contains("invariant flags it"), "{text}");
    // Append-only: the old bytes are a prefix.
    let after = fs::read(&log).unwrap();
    assert_eq!(&after[..before.len()], &before[..]);
    let new = lines(&log)[10..].to_vec();
    assert_eq!(new.len(), 8);
    let types: Vec<String> = new
        .iter()
        .map(|l| {
            Value::parse(l)
                .unwrap()
                .get("type")
                .unwrap()
                .as_str()
                .unwrap()
                .into_owned()
        })
        .collect();
    assert_eq!(
        types,
        [
            "tool/result",
            "step/end",
            "turn/end",
            "session/end-seed",
            "compaction/prune",
            "tool/result",
            "compaction/prune",
            "tool/result"
        ]
    );
    assert_eq!(
        new[3],
        r#"{"type":"session/end-seed","seq":12,"time":1767230000000,"data":{}}"#
    );
    // The loader takes it: no closers left, two replacements on the surface.
    let l = load(&log);
    assert_eq!(l.stored_events, 17);
    assert!(l.closers.is_empty());
    assert_eq!(l.surface.seqs(), vec![2, 4, 14, 16, 9]);
    assert_eq!(l.surface.replace_generation, 2);
    // Replacement 14 keeps the head and tail of result 7, in code points.
    let orig_ev = &orig.node_events(&[7]).unwrap()[0];
    let new_ev = &l.node_events(&[14]).unwrap()[0];
    let text_of = |e: &dsh::OwnedEvent| {
        code_points(
            e.value
                .get("data")
                .unwrap()
                .get("message")
                .unwrap()
                .get("content")
                .unwrap()
                .as_arr()
                .unwrap()[0]
                .get("content")
                .unwrap()
                .as_arr()
                .unwrap()[0]
                .get("text")
                .unwrap(),
        )
    };
    let (o, n) = (text_of(orig_ev), text_of(new_ev));
    let marker: Vec<u32> = dsh::prune::PRUNE_MARKER.chars().map(|c| c as u32).collect();
    assert_eq!(n[..4096], o[..4096]);
    assert_eq!(n[4096..4096 + 39], marker[..]);
    assert_eq!(n[4135..], o[o.len() - 1024..]);
    // Idempotent: a second pass finds nothing and writes nothing.
    let out = dsh()
        .args(["prune", "--allow-closed-turn"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("nothing to prune"));
    assert_eq!(fs::read(&log).unwrap(), after);
}

#[test]
fn prune_json_reports_reference_keys_and_savings() {
    let (_d, log) = copy_of(&sample("prune-closed.jsonl"), "session.jsonl");
    let out = dsh()
        .args(["prune", "--dry-run", "--json", "-q"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v = json(&out.stdout);
    assert_eq!(v.get("baseSeq").unwrap().as_f64(), Some(15.0));
    assert_eq!(
        v.get("config").unwrap().to_json(),
        r#"{"thresholdChars":8192,"headChars":4096,"tailChars":1024}"#
    );
    let pruned = v.get("pruned").unwrap().as_arr().unwrap();
    assert_eq!(pruned.len(), 1);
    let p = &pruned[0];
    assert_eq!(p.get("originalSeq").unwrap().as_f64(), Some(7.0));
    assert_eq!(p.get("replacementSeq").unwrap().as_f64(), Some(16.0));
    assert!(p.get("callId").unwrap().is_str("call_a"));
    let before = p.get("charsBefore").unwrap().as_f64().unwrap();
    assert_eq!(p.get("charsAfter").unwrap().as_f64(), Some(5159.0));
    assert_eq!(
        v.get("charsRemoved").unwrap().as_f64(),
        Some(before - 5159.0)
    );
    // Surface savings equal the node price difference.
    let tb = p.get("tokensBefore").unwrap().as_f64().unwrap();
    let ta = p.get("tokensAfter").unwrap().as_f64().unwrap();
    assert_eq!(ta, (5159f64 / 4.0).ceil() + 4.0 + 4.0 + 4.0);
    let s = v.get("surfaceTokens").unwrap();
    assert_eq!(s.get("saved").unwrap().as_f64(), Some(tb - ta));
    // The lifecycle: only the end-seed (the turn is closed), at the pinned clock.
    assert!(v.get("lifecycle").unwrap().is_str("resume"));
    let lc = v.get("lifecycleEvents").unwrap().as_arr().unwrap();
    assert_eq!(lc.len(), 1);
    assert!(lc[0].get("type").unwrap().is_str("session/end-seed"));
    assert!(
        v.get("refused")
            .unwrap()
            .as_str()
            .unwrap()
            .contains("last turn is closed")
    );
    assert!(matches!(v.get("written"), Some(Value::Bool(false))));
}

#[test]
fn prune_config_flags_use_the_reference_rules() {
    let out = dsh()
        .args(["prune", "--dry-run", "--threshold-chars", "100"])
        .arg(sample("prune-closed.jsonl"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains(
        "ToolResultPruneConfig: headChars + marker + tailChars (5159) must be at most thresholdChars (100)"
    ));
    let out = dsh()
        .args([
            "prune",
            "--dry-run",
            "--json",
            "-q",
            "--threshold-chars",
            "1000",
            "--head-chars",
            "500",
            "--tail-chars",
            "100",
        ])
        .arg(sample("prune-closed.jsonl"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v = json(&out.stdout);
    let p = &v.get("pruned").unwrap().as_arr().unwrap()[0];
    assert_eq!(p.get("charsAfter").unwrap().as_f64(), Some(639.0));
}

/// `dsh prune --dry-run --json -q` with extra arguments.
fn prune_json(extra: &[&str], env: Option<(&str, &Path)>) -> (Option<i32>, Value<'static>, String) {
    let mut c = dsh();
    if let Some((k, v)) = env {
        c.env(k, v);
    }
    let out = c
        .args(["prune", "--dry-run", "--json", "-q"])
        .args(extra)
        .arg(sample("prune-closed.jsonl"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let v = if out.status.code() == Some(0) {
        json(&out.stdout)
    } else {
        Value::Null
    };
    (out.status.code(), v, stderr)
}

#[test]
fn prune_reads_its_budgets_from_the_config_and_flags_override_them() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.toml");
    fs::write(
        &cfg,
        "[pruner]\nthresholdChars = 1000\nheadChars = 500\ntailChars = 100\n",
    )
    .unwrap();
    let cfg_s = cfg.to_str().unwrap();
    let chars_after = |v: &Value<'_>| {
        v.get("pruned").unwrap().as_arr().unwrap()[0]
            .get("charsAfter")
            .unwrap()
            .as_f64()
    };
    // The config's budgets: 500 + 39 + 100 code points kept.
    let (code, v, _) = prune_json(&["--config", cfg_s], None);
    assert_eq!(code, Some(0));
    assert_eq!(
        v.get("config").unwrap().to_json(),
        r#"{"thresholdChars":1000,"headChars":500,"tailChars":100}"#
    );
    assert_eq!(chars_after(&v), Some(639.0));
    assert!(v.get("configFile").unwrap().is_str(cfg_s));
    // $DSH_CONFIG is honoured the same way.
    let (code, v, _) = prune_json(&[], Some(("DSH_CONFIG", &cfg)));
    assert_eq!(code, Some(0));
    assert_eq!(chars_after(&v), Some(639.0));
    // And the XDG location.
    let xdg = tempfile::tempdir().unwrap();
    fs::create_dir(xdg.path().join("dsh")).unwrap();
    fs::copy(&cfg, xdg.path().join("dsh/config.toml")).unwrap();
    let (code, v, _) = prune_json(&[], Some(("XDG_CONFIG_HOME", xdg.path())));
    assert_eq!(code, Some(0));
    assert_eq!(chars_after(&v), Some(639.0));
    // A flag overrides its budget only.
    let (code, v, _) = prune_json(&["--config", cfg_s, "--head-chars", "400"], None);
    assert_eq!(code, Some(0));
    assert_eq!(
        v.get("config").unwrap().to_json(),
        r#"{"thresholdChars":1000,"headChars":400,"tailChars":100}"#
    );
    assert_eq!(chars_after(&v), Some(539.0));
    // The combination is checked with the reference's rule and wording.
    let (code, _, err) = prune_json(&["--config", cfg_s, "--head-chars", "900"], None);
    assert_eq!(code, Some(2));
    assert!(
        err.contains(
            "ToolResultPruneConfig: headChars + marker + tailChars (1039) must be at most thresholdChars (1000)"
        ),
        "{err}"
    );
    // No config: the reference defaults, and no file named.
    let (code, v, _) = prune_json(&[], None);
    assert_eq!(code, Some(0));
    assert_eq!(chars_after(&v), Some(5159.0));
    assert!(matches!(v.get("configFile"), Some(Value::Null)));
    // A bad config, or a missing explicit one, is a usage error.
    fs::write(&cfg, "[pruner]\ntailChars = 1.5\n").unwrap();
    let (code, _, err) = prune_json(&["--config", cfg_s], None);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("ToolResultPruneConfig: tailChars (1.5) must be a non-negative integer"),
        "{err}"
    );
    let missing = dir.path().join("nope.toml");
    let (code, _, _) = prune_json(&["--config", missing.to_str().unwrap()], None);
    assert_eq!(code, Some(2));
}

/// Text of a tool result's nested content.
fn result_text(ev: &Value<'_>) -> String {
    let blocks = ev
        .get("data")
        .and_then(|d| d.get("message"))
        .and_then(|m| m.get("content"))
        .and_then(|c| c.as_arr())
        .and_then(|c| c.first())
        .and_then(|r| r.get("content"))
        .and_then(|c| c.as_arr())
        .unwrap();
    blocks
        .iter()
        .filter_map(|b| b.get("text").and_then(|t| t.as_str()))
        .collect()
}

#[test]
fn prune_reports_bpe_savings_per_tokenizer() {
    let (code, v, _) = prune_json(&["--tokenizer", "o200k,cl100k"], None);
    assert_eq!(code, Some(0));
    let t = v.get("tokenizers").unwrap().as_arr().unwrap();
    assert_eq!(t.len(), 2);
    let original = load(&sample("prune-closed.jsonl"))
        .node_events(&[7])
        .unwrap()
        .remove(0);
    let replacement = v.get("appended").unwrap().as_arr().unwrap()[1].clone();
    let (before_text, after_text) = (result_text(&original.value), result_text(&replacement));
    for (entry, bpe, name) in [
        (&t[0], tiktoken_rs::o200k_base_singleton(), "o200k"),
        (&t[1], tiktoken_rs::cl100k_base_singleton(), "cl100k"),
    ] {
        assert!(entry.get("encoding").unwrap().is_str(name));
        let count = |s: &str| bpe.encode_ordinary(s).len() as f64;
        let p = &entry.get("pruned").unwrap().as_arr().unwrap()[0];
        assert_eq!(p.get("originalSeq").unwrap().as_f64(), Some(7.0));
        let (b, a) = (count(&before_text), count(&after_text));
        assert!(a < b, "{name}: {a} < {b}");
        assert_eq!(p.get("before").unwrap().as_f64(), Some(b), "{name}");
        assert_eq!(p.get("after").unwrap().as_f64(), Some(a), "{name}");
        assert_eq!(entry.get("saved").unwrap().as_f64(), Some(b - a), "{name}");
        // The surface figures are measure --tokenizer's message tokens.
        let m = dsh()
            .args(["measure", "--json", "--tokenizer", name])
            .arg(sample("prune-closed.jsonl"))
            .output()
            .unwrap();
        let m = json(&m.stdout);
        let surface = m
            .get("tokenizer")
            .and_then(|t| t.get("messageTokens"))
            .and_then(|n| n.as_f64())
            .unwrap();
        assert_eq!(
            entry.get("before").unwrap().as_f64(),
            Some(surface),
            "{name}"
        );
        assert_eq!(
            entry.get("after").unwrap().as_f64(),
            Some(surface - (b - a)),
            "{name}"
        );
    }
    // Readable: a column per encoding and a savings line.
    let out = dsh()
        .args(["prune", "--dry-run", "--tokenizer", "o200k", "-q"])
        .arg(sample("prune-closed.jsonl"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("o200k tokens"), "{text}");
    let saved = t[0].get("saved").unwrap().as_f64().unwrap();
    // Human figures carry thousands separators: 12345 → 12,345.
    let digits = (saved as u64).to_string();
    let mut grouped = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(c);
    }
    assert!(text.contains(&format!("({grouped} saved)")), "{text}");
    // Unknown encodings are refused.
    dsh()
        .args(["prune", "--dry-run", "--tokenizer", "p50k"])
        .arg(sample("prune-closed.jsonl"))
        .assert()
        .code(2);
    // Without --tokenizer there is no such key.
    let (_, v, _) = prune_json(&[], None);
    assert!(v.get("tokenizers").is_none());
}

#[test]
fn prune_out_writes_a_copy_and_leaves_the_log() {
    let (d, log) = copy_of(&sample("prune-closed.jsonl"), "session.jsonl");
    let before = fs::read(&log).unwrap();
    let out_path = d.path().join("pruned.jsonl");
    let out = dsh()
        .args(["prune", "--allow-closed-turn", "--json", "-q", "--out"])
        .arg(&out_path)
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out.stdout);
    assert!(matches!(v.get("written"), Some(Value::Bool(true))));
    assert_eq!(
        v.get("out").unwrap().as_str().unwrap(),
        out_path.display().to_string()
    );
    assert_eq!(fs::read(&log).unwrap(), before, "the log is untouched");
    let copy = fs::read(&out_path).unwrap();
    assert_eq!(&copy[..before.len()], &before[..]);
    let l = load(&out_path);
    assert_eq!(l.stored_events, 14 + 3);
    assert_eq!(l.surface.replace_generation, 1);
    // No temporary file is left beside it.
    let names: Vec<_> = fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    // The target must be new.
    let out = dsh()
        .args(["prune", "--allow-closed-turn", "--out"])
        .arg(&out_path)
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("already exists"));
}

#[test]
fn prune_refuses_a_torn_tail_and_a_busy_compaction_lock() {
    let (_d, log) = copy_of(&sample("prune-closed.jsonl"), "session.jsonl");
    let committed = fs::metadata(&log).unwrap().len();
    let mut bytes = fs::read(&log).unwrap();
    bytes.extend_from_slice(br#"{"type":"step/start","seq":14,"#);
    fs::write(&log, &bytes).unwrap();
    let out = dsh()
        .args(["prune", "--allow-closed-turn"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("torn write"), "{err}");
    assert!(err.contains(&format!("truncate -s {committed}")), "{err}");
    assert_eq!(fs::read(&log).unwrap(), bytes);
    // A dry run still shows the plan and says what a write would refuse.
    let out = dsh()
        .args(["prune", "--dry-run", "--json", "-q"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        json(&out.stdout)
            .get("refused")
            .unwrap()
            .as_str()
            .unwrap()
            .contains("torn write")
    );

    let (_d, log) = copy_of(&sample("prune-closed.jsonl"), "session.jsonl");
    let mut bytes = fs::read(&log).unwrap();
    bytes.extend_from_slice(
        b"{\"type\":\"compaction/start\",\"seq\":14,\"time\":1767225702000,\"data\":{\"compactionId\":\"c-9\",\"turn\":null}}\n",
    );
    fs::write(&log, &bytes).unwrap();
    let out = dsh()
        .args(["prune", "--allow-closed-turn"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("live compaction lock: compaction/start at seq 14"),
        "{err}"
    );
    assert!(err.contains("dsh locks --release"), "{err}");
    assert_eq!(fs::read(&log).unwrap(), bytes);
}

#[test]
fn prune_refuses_read_only_symlinked_and_stdin_logs() {
    use std::os::unix::fs::PermissionsExt;
    let (d, log) = copy_of(&sample("prune-closed.jsonl"), "session.jsonl");
    let before = fs::read(&log).unwrap();
    fs::set_permissions(&log, fs::Permissions::from_mode(0o444)).unwrap();
    let out = dsh()
        .args(["prune", "--allow-closed-turn"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("read-only (mode 0444)"));
    assert_eq!(fs::read(&log).unwrap(), before);
    fs::set_permissions(&log, fs::Permissions::from_mode(0o644)).unwrap();

    let link = d.path().join("link.jsonl");
    std::os::unix::fs::symlink(&log, &link).unwrap();
    let out = dsh()
        .args(["prune", "--allow-closed-turn"])
        .arg(&link)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is a symbolic link"), "{err}");
    assert_eq!(fs::read(&log).unwrap(), before);
    // Reading through the link is fine.
    let out = dsh()
        .args(["prune", "--dry-run", "-q"])
        .arg(&link)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));

    let out = dsh()
        .args(["prune", "--allow-closed-turn", "-"])
        .write_stdin(before.clone())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("standard input"));
    let out = dsh()
        .args(["prune", "--dry-run", "--json", "-q", "-"])
        .write_stdin(before)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        json(&out.stdout)
            .get("pruned")
            .unwrap()
            .as_arr()
            .unwrap()
            .len(),
        1
    );
}

/// A small tmpfs, unmounted on drop.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(kib: u32) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().ok()?;
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={kib}k"), "tmpfs"])
            .arg(dir.path())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(Tmpfs { dir })
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.dir.path())
            .status();
    }
}

#[test]
fn prune_on_a_full_disk_fails_cleanly() {
    let Some(fs_) = Tmpfs::mount(64) else {
        eprintln!(
            "SKIPPED prune_on_a_full_disk_fails_cleanly: cannot mount a tmpfs here (needs root)"
        );
        return;
    };
    let log = fs_.dir.path().join("session.jsonl");
    fs::copy(sample("prune-closed.jsonl"), &log).unwrap();
    let before = fs::read(&log).unwrap();
    // Fill the rest of the file system.
    let mut filler = fs::File::create(fs_.dir.path().join("filler")).unwrap();
    let block = vec![b'x'; 4096];
    use std::io::Write;
    while filler.write_all(&block).is_ok() {}
    let _ = filler.flush();
    let out = dsh()
        .args(["prune", "--allow-closed-turn"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(70));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("No space left on device"), "{err}");
    assert!(err.contains("restored to its previous"), "{err}");
    assert_eq!(fs::read(&log).unwrap(), before, "the log is untouched");
    drop(filler);
}

#[test]
fn prune_appends_one_frame_to_a_zstd_log() {
    let text = fs::read_to_string(sample("prune-closed.jsonl")).unwrap();
    let (head, body) = text.split_at(text.find('\n').unwrap() + 1);
    let frame = |s: &str| zstd::bulk::compress(s.as_bytes(), 3).unwrap();
    let mut bytes = frame(head);
    bytes.extend(frame(body));
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join("session.jsonl.zstd");
    fs::write(&log, &bytes).unwrap();
    let out = dsh()
        .args(["prune", "--allow-closed-turn", "-q"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = fs::read(&log).unwrap();
    assert_eq!(&after[..bytes.len()], &bytes[..]);
    let new = &after[bytes.len()..];
    assert_eq!(
        zstd::zstd_safe::find_frame_compressed_size(new).unwrap(),
        new.len(),
        "exactly one frame"
    );
    let plain = zstd::stream::decode_all(new).unwrap();
    assert_eq!(String::from_utf8(plain).unwrap().lines().count(), 3);
    let l = load(&log);
    assert_eq!(l.stored_events, 17);
    assert_eq!(l.surface.replace_generation, 1);
}

#[test]
fn a_replacement_may_change_only_the_result_content() {
    // Prune for real, then tamper with the replacement result (R16).
    let (_d, log) = copy_of(&sample("prune-open-turn.jsonl"), "session.jsonl");
    let out = dsh()
        .args([
            "prune",
            "--allow-closed-turn",
            "-q",
            "--time",
            "1767230000000",
        ])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = fs::read_to_string(&log).unwrap();
    dsh().args(["surface", "-q"]).arg(&log).assert().code(0);
    let replacement = text
        .lines()
        .collect::<Vec<_>>()
        .iter()
        .rposition(|l| l.contains("\"type\":\"tool/result\"") && l.contains("\"op\":\"replace\""))
        .unwrap();
    for (from, to) in [
        ("\"isError\":false", "\"isError\":true"),
        ("\"role\":\"user\"", "\"role\":\"user\",\"extra\":1"),
    ] {
        let mut lines: Vec<String> = text.lines().map(String::from).collect();
        assert!(lines[replacement].contains(from), "{}", lines[replacement]);
        lines[replacement] = lines[replacement].replacen(from, to, 1);
        fs::write(&log, lines.join("\n") + "\n").unwrap();
        let out = dsh().args(["surface", "-q"]).arg(&log).output().unwrap();
        assert_eq!(out.status.code(), Some(3));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("may change only content"), "{err}");
        // From stdin every node stays in memory: the same answer.
        let out = dsh()
            .args(["surface", "-q", "-"])
            .write_stdin(fs::read(&log).unwrap())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(3));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("may change only content"), "{err}");
    }
}

#[test]
fn prune_past_a_file_size_limit_fails_cleanly() {
    use std::os::unix::process::CommandExt;
    let (_d, log) = copy_of(&sample("prune-closed.jsonl"), "session.jsonl");
    let before = fs::read(&log).unwrap();
    // Room for a few bytes of the batch, not all of it (`ulimit -f`).
    let limit = before.len() as u64 + 10;
    let mut cmd = crate::support::dsh_process();
    cmd.args(["prune", "--allow-closed-turn"]).arg(&log);
    // SAFETY: setrlimit is async-signal-safe; nothing else runs in the child.
    unsafe {
        cmd.pre_exec(move || {
            let r = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &r) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    // Not killed by SIGXFSZ: the write fails with EFBIG and is rolled back.
    assert_eq!(out.status.code(), Some(70), "{:?} {err}", out.status);
    assert!(err.contains("File too large"), "{err}");
    assert!(err.contains("restored to its previous"), "{err}");
    assert_eq!(fs::read(&log).unwrap(), before, "the log is untouched");
}

#[test]
fn prune_to_a_full_stdout_says_the_write_landed() {
    let (_d, log) = copy_of(&sample("prune-closed.jsonl"), "session.jsonl");
    let before = fs::read(&log).unwrap();
    let full = fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = crate::support::dsh_process()
        .args(["prune", "--allow-closed-turn"])
        .arg(&log)
        .stdout(full)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    // The batch was committed; only the report could not be printed.
    assert!(fs::read(&log).unwrap().len() > before.len());
    assert_eq!(out.status.code(), Some(70), "{err}");
    assert!(err.contains("the write landed"), "{err}");
    assert!(err.contains("only printing the report failed"), "{err}");
    assert!(!err.contains("rolled back"), "{err}");
}

/// A session `id` whose one step calls a tool per text and gets that text
/// back as its result (the turn left open).
pub fn results_log(id: &str, texts: &[String]) -> String {
    let mut lines = vec![
        format!(r#"{{"type":"session","version":0,"id":"{id}","createdAt":1767225600000,"cwd":"/home/dev/p","delegationDepth":0}}"#),
        r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#.to_string(),
        r#"{"type":"step/start","seq":1,"time":1,"data":{"turn":1,"step":1}}"#.to_string(),
        r#"{"type":"user/message","seq":2,"time":1,"data":{"role":"user","content":[{"type":"text","text":"go"}],"source":{"kind":"user"},"id":"m-u1"},"surfaceOp":"append"}"#.to_string(),
    ];
    let calls: Vec<String> = (0..texts.len())
        .map(|i| format!(r#"{{"type":"tool-call","id":"c{i}","name":"bash","arguments":"{{}}"}}"#))
        .collect();
    lines.push(format!(
        r#"{{"type":"assistant/message","seq":3,"time":1,"data":{{"turn":1,"step":1,"message":{{"role":"assistant","content":[{}],"source":{{"kind":"model","provider":"deepseek-official","model":"deepseek-v4-flash"}},"id":"m-a1"}}}},"surfaceOp":"append"}}"#,
        calls.join(",")
    ));
    let mut seq = 4;
    for i in 0..texts.len() {
        lines.push(format!(
            r#"{{"type":"tool/call","seq":{seq},"time":1,"data":{{"turn":1,"step":1,"callId":"c{i}","name":"bash","arguments":"{{}}"}}}}"#
        ));
        seq += 1;
    }
    for (i, text) in texts.iter().enumerate() {
        lines.push(format!(
            r#"{{"type":"tool/result","seq":{seq},"time":1,"data":{{"turn":1,"step":1,"message":{{"role":"user","content":[{{"type":"tool-result","toolCallId":"c{i}","content":[{{"type":"text","text":"{text}"}}],"isError":false}}],"source":{{"kind":"tool","callId":"c{i}"}},"id":"m-r{i}"}}}},"surfaceOp":"append"}}"#
        ));
        seq += 1;
    }
    lines.join("\n") + "\n"
}

/// The planner reads a result again only when its text's UTF-16 length
/// (counted while loading) exceeds the threshold: within it, the code
/// points cannot. A result beyond it by length but not by code points (a
/// run of emoji: two units each) is read, counted exactly and left alone.
#[test]
fn results_within_budget_by_length_are_not_read_again() {
    let small = "x".repeat(100);
    let emoji = "\u{1F600}".repeat(5000); // 10000 units, 5000 code points
    let big = "y".repeat(9000);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    fs::write(&p, results_log("bounds", &[small, emoji, big])).unwrap();
    let log = load(&p);
    let cfg = dsh::prune::PruneConfig::default();
    let plan = dsh::prune::plan(&log, &cfg, 2.0).unwrap();
    // Only the 9000-character result is pruned; the emoji one was counted.
    let pruned: Vec<(u64, u64)> = plan
        .pruned
        .iter()
        .map(|r| (r.original_seq, r.chars_before))
        .collect();
    assert_eq!(pruned, vec![(9, 9000)]);

    // The file's bytes gone (same length, so spans still fit): what is
    // read again fails, what is not read again cannot.
    let len = fs::metadata(&p).unwrap().len() as usize;
    fs::write(&p, " ".repeat(len)).unwrap();
    assert!(dsh::prune::plan(&log, &cfg, 2.0).is_err());
    let roomy = dsh::prune::PruneConfig {
        threshold_chars: 20_000,
        ..cfg
    };
    let plan = dsh::prune::plan(&log, &roomy, 2.0).unwrap();
    assert!(plan.events.is_empty());
    // At 9000 the big result is within budget by length, the emoji one
    // is not: it is read, and the read fails.
    let between = dsh::prune::PruneConfig {
        threshold_chars: 9_000,
        ..cfg
    };
    assert!(dsh::prune::plan(&log, &between, 2.0).is_err());
}

/// An artifact's results over the threshold by length are kept at load when
/// asked (`keep_results_over`): planning reads none of its lines again, and
/// plans what reading them again plans. A plain file keeps none.
#[test]
fn an_artifacts_long_results_are_kept_at_load_when_asked() {
    let big = "y".repeat(9000);
    let texts = ["x".repeat(100), big.clone(), "z".repeat(8000), big];
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("s.jsonl");
    fs::write(&plain, results_log("kept", &texts)).unwrap();
    let packed = dir.path().join("s.jsonl.zstd");
    let mut out = fs::File::create(&packed).unwrap();
    dsh::pack::pack(
        &LogSource::File(plain.clone()),
        dsh::log::Limits::default(),
        dsh::pack::Batching::Lines(2),
        &mut out,
    )
    .unwrap();
    drop(out);
    let cfg = dsh::prune::PruneConfig::default();
    let keep = LoadOptions {
        keep_results_over: Some(cfg.threshold_chars),
        ..LoadOptions::default()
    };
    let load_with = |p: &Path, opts: &LoadOptions| {
        dsh::log::load(
            &LogSource::File(p.to_path_buf()),
            opts,
            &mut |_: &dsh::Event<'_>, _: &dsh::log::Folded<'_>| {},
        )
        .unwrap()
    };
    let summary = |plan: &dsh::prune::PrunePlan| -> Vec<(u64, u64, u64)> {
        plan.pruned
            .iter()
            .map(|r| (r.original_seq, r.chars_before, r.chars_after))
            .collect()
    };
    let read_again =
        dsh::prune::plan(&load_with(&packed, &LoadOptions::default()), &cfg, 2.0).unwrap();
    assert_eq!(summary(&read_again).len(), 2);
    let kept = load_with(&packed, &keep);
    let plain_log = load_with(&plain, &keep);
    // Held: the artifact's two results over the threshold (seqs 9 and 11),
    // none of the plain file's, nothing without the option.
    let held = |log: &LoadedLog| -> Vec<u64> {
        log.surface
            .nodes
            .iter()
            .filter(|n| matches!(n.body, dsh::surface::NodeBody::Owned(_)))
            .map(|n| n.seq)
            .collect()
    };
    assert_eq!(held(&kept), [9, 11]);
    assert_eq!(held(&plain_log), Vec::<u64>::new());
    assert_eq!(
        held(&load_with(&packed, &LoadOptions::default())),
        Vec::<u64>::new()
    );
    // The artifact gone: the plan is the same.
    fs::write(&packed, b"").unwrap();
    let plan = dsh::prune::plan(&kept, &cfg, 2.0).unwrap();
    assert_eq!(summary(&plan), summary(&read_again));
    assert_eq!(
        plan.events
            .iter()
            .map(|e| e.value.to_json())
            .collect::<Vec<_>>(),
        read_again
            .events
            .iter()
            .map(|e| e.value.to_json())
            .collect::<Vec<_>>()
    );
    // A plain file's lines are read again: blanked, the plan fails.
    let len = fs::metadata(&plain).unwrap().len() as usize;
    fs::write(&plain, " ".repeat(len)).unwrap();
    assert!(dsh::prune::plan(&plain_log, &cfg, 2.0).is_err());
}
