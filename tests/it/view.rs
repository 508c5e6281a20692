//! `dsh view` and the library's alignment and survival figures.

use dsh::view::{ModelSide, ReplacementKind, ViewOptions, align, align_log};
use dsh::{LoadOptions, LogSource};

use crate::support::sample;

fn view_of(path: &std::path::Path, upto: Option<u64>) -> dsh::view::View {
    let opts = LoadOptions {
        upto,
        ..LoadOptions::default()
    };
    align(
        &LogSource::File(path.into()),
        &opts,
        &ViewOptions::default(),
    )
    .unwrap()
}

#[test]
fn compacted_sample_links_every_replaced_event_to_its_checkpoint() {
    let v = view_of(&sample("compacted.jsonl"), None);
    let seqs: Vec<u64> = v.surface.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [43, 38, 52]);
    for s in [4, 19, 31] {
        let row = v.rows.iter().find(|r| r.seq == s).unwrap();
        assert!(
            matches!(
                row.model,
                ModelSide::Replaced {
                    by: 43,
                    position: Some(0),
                    replacement: ReplacementKind::Checkpoint,
                    ..
                }
            ),
            "{row:?}"
        );
    }
}

/// A hand-authored log: turn 1 asks, calls a tool, gets a long result and
/// answers; turn 2 prunes the result (seq 10 for 4) and compacts 1–5 into
/// checkpoint 13.
fn authored() -> (tempfile::TempDir, std::path::PathBuf) {
    use serde_json::json;
    let marker = "\n\n[... tool result middle pruned ...]\n\n";
    let result = |text: String| {
        json!({"id":"msg-r-c1","role":"user","content":[{"type":"tool-result","toolCallId":"c1",
            "content":[{"type":"text","text":text}],"isError":false}],"source":{"kind":"tool","callId":"c1"}})
    };
    let long = format!("alpha beta gamma {} omega end", "filler ".repeat(50));
    let summary =
        "Fixed src/parser.rs: parse_line now keeps 4096 bytes. Ran `cargo test --locked`.";
    let checkpoint = json!({"id":"msg-checkpoint-1","role":"user","content":[
        {"type":"text","text":"This is an automatically generated checkpoint.\n\n<compacted-summary>"},
        {"type":"text","text":summary},{"type":"text","text":"</compacted-summary>"}],
        "source":{"kind":"plugin","plugin":"compact","compactionId":"cmp-t-1"}});
    let events = vec![
        json!({"type":"turn/start","data":{"turn":1}}),
        json!({"type":"user/message","data":{"role":"user","id":"msg-u-1","source":{"kind":"user"},"content":[{"type":"text",
            "text":"Fix the bug in src/parser.rs where parse_line drops 4096 bytes; see https://example.com/issue/7."}]},"surfaceOp":"append"}),
        json!({"type":"assistant/message","data":{"turn":1,"step":1,"message":{"role":"assistant","id":"msg-a-2",
            "source":{"kind":"model","provider":"deepseek-official","model":"deepseek-v4-flash"},
            "content":[{"type":"text","text":"Running the tests in tests/it/parse.rs."},
            {"type":"tool-call","id":"c1","name":"bash","arguments":"{\"command\":\"cargo test --locked\"}"}]}},
            "sourceEventSeqs":[],"surfaceOp":"append"}),
        json!({"type":"tool/call","data":{"turn":1,"step":1,"callId":"c1","name":"bash","arguments":"{\"command\":\"cargo test --locked\"}"}}),
        json!({"type":"tool/result","data":{"turn":1,"step":1,"message":result(long)},"sourceEventSeqs":[3],"surfaceOp":"append"}),
        json!({"type":"assistant/message","data":{"turn":1,"step":2,"message":{"role":"assistant","id":"msg-a-5",
            "source":{"kind":"model","provider":"deepseek-official","model":"deepseek-v4-flash"},
            "content":[{"type":"text","text":"The fix keeps MAX_LINE at 8192."}]}},"sourceEventSeqs":[],"surfaceOp":"append"}),
        json!({"type":"turn/end","data":{"turn":1,"reason":{"kind":"completed"}}}),
        json!({"type":"turn/start","data":{"turn":2}}),
        json!({"type":"user/message","data":{"role":"user","id":"msg-u-8","source":{"kind":"user"},"content":[{"type":"text","text":"Continue."}]},"surfaceOp":"append"}),
        json!({"type":"compaction/prune","data":{"shadowedRange":{"start":4,"end":4},"shadowedSeqs":[4],"shadowedTokenCount":90}}),
        json!({"type":"tool/result","data":{"turn":1,"step":1,"message":result(format!("alpha beta gamma{marker}omega end"))},
            "sourceEventSeqs":[4],"surfaceOp":{"op":"replace","start":4,"end":4}}),
        json!({"type":"compaction/start","data":{"compactionId":"cmp-t-1","turn":2}}),
        json!({"type":"compaction/summary","data":{"compactionId":"cmp-t-1","summary":[{"type":"text","text":summary}],
            "shadowedRange":{"start":1,"end":5},"shadowedSeqs":[1,2,10,5],"shadowedTokenCount":100}}),
        json!({"type":"user/message","data":checkpoint,"sourceEventSeqs":[11,12,1,2,10,5],"surfaceOp":{"op":"replace","start":1,"end":5}}),
        json!({"type":"compaction/end","data":{"compactionId":"cmp-t-1","turn":2}}),
        json!({"type":"turn/end","data":{"turn":2,"reason":{"kind":"completed"}}}),
    ];
    let mut text = json!({"type":"session","version":0,"id":"t-view","createdAt":1767225600000u64,
        "cwd":"/home/dev/t","delegationDepth":0})
    .to_string();
    text.push('\n');
    for (i, mut e) in events.into_iter().enumerate() {
        e["seq"] = json!(i);
        e["time"] = json!(1767225600001u64 + i as u64);
        text.push_str(&e.to_string());
        text.push('\n');
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

#[test]
fn authored_log_links_replaced_events_and_shows_pruned_head_marker_tail() {
    let (_d, log) = authored();
    let v = view_of(&log, None);
    let surface: Vec<u64> = v.surface.iter().map(|e| e.seq).collect();
    assert_eq!(surface, [13, 8]);
    assert_eq!(v.surface[0].stands_for, [1, 2, 4, 5]);
    assert_eq!(v.surface[0].source_event_seqs, [11, 12, 1, 2, 10, 5]);
    for s in [1, 2, 4, 5, 10] {
        let row = v.rows.iter().find(|r| r.seq == s).unwrap();
        let ModelSide::Replaced {
            by,
            position,
            replacement,
            via,
            first,
            ..
        } = &row.model
        else {
            panic!("{row:?}")
        };
        assert_eq!(
            (*by, *position, *replacement),
            (13, Some(0), ReplacementKind::Checkpoint)
        );
        assert_eq!(via, &if s == 4 { vec![10] } else { vec![] });
        assert_eq!(*first, s == 1);
    }
    for s in [9, 11, 12, 14] {
        let row = v.rows.iter().find(|r| r.seq == s).unwrap();
        let want = if s == 9 { 10 } else { 13 };
        assert_eq!(
            row.model,
            ModelSide::Marker {
                replacement: Some(want)
            },
            "{s}"
        );
    }
    assert_eq!(
        v.rows.iter().find(|r| r.seq == 0).unwrap().model,
        ModelSide::Hidden
    );
    assert_eq!(
        v.replacements
            .iter()
            .map(|r| r.markers.clone())
            .collect::<Vec<_>>(),
        [vec![9], vec![11, 12, 14]]
    );

    // As it stood after the prune: the pruned result is on the surface.
    let v = view_of(&log, Some(10));
    let e = v.surface.iter().find(|e| e.seq == 10).unwrap();
    let p = e.pruned.as_ref().unwrap();
    assert_eq!(
        (p.head.as_str(), p.marker.as_str(), p.tail.as_str()),
        (
            "alpha beta gamma",
            "[... tool result middle pruned ...]",
            "omega end"
        )
    );
    let row = v.rows.iter().find(|r| r.seq == 4).unwrap();
    assert!(
        matches!(
            row.model,
            ModelSide::Replaced {
                by: 10,
                position: Some(2),
                replacement: ReplacementKind::Pruned,
                first: true,
                ..
            }
        ),
        "{row:?}"
    );
}

#[test]
fn survival_on_the_authored_log() {
    let (_d, log) = authored();
    let (loaded, v) = align_log(
        &LogSource::File(log),
        &LoadOptions::default(),
        &ViewOptions::default(),
    )
    .unwrap();
    let s = dsh::survival::of_view(&loaded, &v).unwrap();
    assert_eq!(s.compactions.len(), 1);
    let c = &s.compactions[0];
    assert_eq!(
        (c.checkpoint_seq, c.summary_seq, c.replaced.clone()),
        (13, Some(12), vec![1, 2, 10, 5])
    );
    let b = &c.categories;
    assert_eq!(
        (b.paths.survived.clone(), b.paths.lost.clone()),
        (
            vec!["src/parser.rs".to_string()],
            vec!["tests/it/parse.rs".to_string()]
        )
    );
    assert_eq!(
        (b.identifiers.survived.clone(), b.identifiers.lost.clone()),
        (vec!["parse_line".to_string()], vec!["MAX_LINE".to_string()])
    );
    assert_eq!(
        (b.numbers.survived.clone(), b.numbers.lost.clone()),
        (vec!["4096".to_string()], vec!["8192".to_string()])
    );
    assert_eq!(b.commands.survived, ["cargo test --locked"]);
    assert_eq!(b.urls.lost, ["https://example.com/issue/7"]);
    assert_eq!((s.totals.all.total, s.totals.all.kept), (8, 4));
}

#[test]
fn columns_fit_80_and_200() {
    let (_d, log) = authored();
    for cols in [80usize, 200] {
        let out = crate::support::dsh()
            .env("COLUMNS", cols.to_string())
            .args(["view", "--color", "never"])
            .arg(&log)
            .output()
            .unwrap();
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        for line in text.lines() {
            let w = unicode_width::UnicodeWidthStr::width(line);
            assert!(w <= cols, "{cols}: {w} columns: {line}");
        }
        assert!(text.contains("▒"), "replaced rows are shaded");
        let marker = if cols == 80 {
            "── compaction summary: [1, 2, 10, 5]"
        } else {
            "── compaction summary: [1, 2, 10, 5] → checkpoint 13 ──"
        };
        assert!(text.contains(marker), "{text}");
    }
    let out = crate::support::dsh()
        .env("COLUMNS", "200")
        .args(["view", "--color", "never", "--at", "10"])
        .arg(&log)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("alpha beta gamma [... tool result middle pruned ...] omega end"),
        "{text}"
    );
    let out = crate::support::dsh()
        .args(["view", "--survival", "--color", "never"])
        .arg(&log)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("lost: tests/it/parse.rs"), "{text}");
    assert!(text.contains("4/8 terms kept (50%)"), "{text}");
}

#[test]
fn json_is_strict() {
    let (_d, log) = authored();
    let out = crate::support::dsh()
        .args(["view", "--json"])
        .arg(&log)
        .output()
        .unwrap();
    assert!(out.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let schema: serde_json::Value = serde_json::from_slice(
        &std::fs::read(crate::support::root().join("schemas/view.schema.json")).unwrap(),
    )
    .unwrap();
    let v = jsonschema::draft202012::new(&schema).unwrap();
    assert!(v.is_valid(&doc));
    assert_eq!(
        doc["survival"]["totals"]["all"],
        serde_json::json!({"total": 8, "kept": 4})
    );
    let mut broken = doc.clone();
    broken["rows"][0]["model"]["status"] = serde_json::json!("gone");
    assert!(!v.is_valid(&broken), "an unknown status");
    let mut broken = doc.clone();
    broken["surface"][0]["extra"] = serde_json::json!(1);
    assert!(!v.is_valid(&broken), "an unknown key");
    // --at past the end is refused.
    let out = crate::support::dsh()
        .args(["view", "--at", "99"])
        .arg(&log)
        .output()
        .unwrap();
    assert!(!out.status.success());
}

/// The columns' event lines of `dsh view` (between the rule and the
/// footer), and the footer lines.
fn view_lines(args: &[&str]) -> (Vec<String>, Vec<String>, std::process::Output) {
    let out = crate::support::dsh()
        .env("COLUMNS", "120")
        .args(["view", "--color", "never"])
        .args(args)
        .arg(sample("compacted.jsonl"))
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    let body = lines.iter().skip(2).take_while(|l| l.contains(" │ "));
    let rows: Vec<String> = body.cloned().collect();
    let footer = lines.iter().skip(2 + rows.len()).cloned().collect();
    (rows, footer, out)
}

#[test]
fn limit_and_tail_pick_events_with_a_footer() {
    let (all, footer, _) = view_lines(&[]);
    assert_eq!(all.len(), 16);
    assert_eq!(footer.len(), 1, "{footer:?}");
    assert!(
        footer[0].starts_with("16 event(s) · 5 replaced"),
        "{footer:?}"
    );

    let (first, footer, _) = view_lines(&["--limit", "3"]);
    assert_eq!(first, all[..3]);
    assert_eq!(footer[0], "showing the first 3 of 16 events");
    assert!(
        footer[1].starts_with("16 event(s) · 5 replaced"),
        "{footer:?}"
    );

    let (last, footer, _) = view_lines(&["--tail", "4"]);
    assert_eq!(last, all[12..]);
    assert_eq!(footer[0], "showing the last 4 of 16 events");
    // The stand-in of a replaced span is still linked on a cut view.
    assert!(
        last.iter().any(|l| l.contains("#0 ⟲ checkpoint 43")),
        "{last:?}"
    );

    // A window past the length shows everything and says nothing more.
    let (same, footer, _) = view_lines(&["--tail", "100"]);
    assert_eq!(same, all);
    assert_eq!(footer.len(), 1);
    let (none, footer, _) = view_lines(&["--limit", "0"]);
    assert!(none.is_empty());
    assert_eq!(footer[0], "showing the first 0 of 16 events");
}

#[test]
fn limit_and_tail_are_refused_where_they_mean_nothing() {
    for args in [
        &["--json", "--tail", "2"][..],
        &["--json", "--limit", "2"],
        &["--survival", "--limit", "2"],
        &["--limit", "2", "--tail", "2"],
    ] {
        let (_, _, out) = view_lines(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(
            err.contains("--limit") || err.contains("--tail"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn events_and_view_describe_log_events_with_one_function() {
    let run = |args: &[&str]| {
        let out = crate::support::dsh()
            .env("COLUMNS", "200")
            .args(args)
            .args(["--color", "never"])
            .arg(sample("compacted.jsonl"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let events = run(&["events"]);
    let view = run(&["view"]);
    // The same words; the terminal table groups the thousands.
    assert!(events.contains("shadows [21] (7,270 tokens)"), "{events}");
    assert!(view.contains("shadows [21] (7270 tokens)"), "{view}");
    for same in [
        "\"cmp-sample-0001\"",
        "completed",
        "shadows [4,19,40,31] (1,373 tokens)",
    ] {
        assert!(events.contains(same), "{same}: {events}");
    }
    assert!(
        view.contains("shadows [4,19,40,31] (1373 tokens)"),
        "{view}"
    );
}

fn view_tokens(env: &crate::support::TestEnv, args: &[&str]) -> serde_json::Value {
    let out = crate::support::stdout_ok(env.dsh().arg("view").args(args).output().unwrap());
    serde_json::from_str(&out).unwrap()
}

/// `view --tokenizer` counts the model's view as `measure --tokenizer` does:
/// the same totals and nodes at any point, the provider's figure on the
/// header line beside DSH's.
#[test]
fn view_counts_the_models_view_in_a_providers_tokens_as_measure_does() {
    let env = crate::support::TestEnv::new();
    let log = sample("compacted.jsonl");
    let log = log.to_str().unwrap();
    for at in [None, Some("40")] {
        let mut args = vec!["--json", "--tokenizer", "o200k"];
        let mut margs = vec!["measure", "--json", "--tokenizer", "o200k"];
        if let Some(at) = at {
            args.extend(["--at", at]);
            margs.extend(["--at", at]);
        }
        args.push(log);
        margs.push(log);
        let v = view_tokens(&env, &args);
        let m: serde_json::Value = serde_json::from_str(&crate::support::stdout_ok(
            env.dsh().args(&margs).output().unwrap(),
        ))
        .unwrap();
        let (t, mt) = (&v["tokenizer"], &m["tokenizer"]);
        for key in [
            "encoding",
            "systemTokens",
            "toolsTokens",
            "totalTokens",
            "nodes",
        ] {
            assert_eq!(t[key], mt[key], "{key} at {at:?}");
        }
        assert_eq!(t["requestTokens"], t["totalTokens"]);
        assert!(t["hiddenPrefixTokens"].is_null());
        let seqs: Vec<_> = v["surface"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| &e["seq"])
            .collect();
        let counted: Vec<_> = t["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| &n["seq"])
            .collect();
        assert_eq!(seqs, counted, "one count per surface entry");
    }
    let text = crate::support::stdout_ok(
        env.dsh()
            .env("COLUMNS", "200")
            .args(["view", "--tokenizer", "o200k", log])
            .output()
            .unwrap(),
    );
    let last = text.lines().last().unwrap();
    assert!(
        last.starts_with("o200k: ") && last.contains("(DSH's estimate: "),
        "{last}"
    );
    let plain = crate::support::stdout_ok(env.dsh().args(["view", log]).output().unwrap());
    assert!(!plain.contains("o200k"));
}

/// With DeepSeek's encoding, a log whose system prompt is a `{{system}}`
/// placeholder gets the hidden prefix estimated from its first reported
/// usage: the request as sent then counts what DeepSeek reported.
#[test]
fn view_with_deepseeks_tokenizer_adds_a_placeholder_logs_hidden_prefix() {
    let env = crate::support::TestEnv::new();
    let path = env.home().join("placeholder.jsonl");
    crate::support::placeholder_log(&path, 6000);
    let log = path.to_str().unwrap();
    // As sent: the user message, before the answer.
    let v = view_tokens(
        &env,
        &["--json", "--tokenizer", "deepseek-v4", "--at", "3", log],
    );
    let t = &v["tokenizer"];
    let hidden = t["hiddenPrefixTokens"].as_u64().unwrap();
    assert!(hidden > 5900, "{t}");
    assert_eq!(t["requestTokens"], 6000, "{t}");
    assert_eq!(
        hidden + t["totalTokens"].as_u64().unwrap(),
        t["requestTokens"].as_u64().unwrap()
    );
    // After the answer the prefix is the same, the messages grew.
    let after = view_tokens(&env, &["--json", "--tokenizer", "deepseek-v4", log]);
    assert_eq!(after["tokenizer"]["hiddenPrefixTokens"], hidden);
    assert!(after["tokenizer"]["requestTokens"].as_u64().unwrap() > 6000);
}
