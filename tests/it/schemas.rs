//! Every `--json` document dsh prints validates against its published JSON
//! Schema in `schemas/`, on the bundled samples and, when `../shared` is
//! there, on a handful of corpus logs; and the schemas are strict enough to
//! reject a broken document.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::{Value as J, json};

use crate::provider::{Reply, Server, deepseek_sse};
use crate::support::{TestEnv, dsh, root, sample, shared};

/// The published schemas by name (`surface` for `surface.schema.json`).
fn schemas() -> &'static BTreeMap<String, (J, jsonschema::Validator)> {
    static S: OnceLock<BTreeMap<String, (J, jsonschema::Validator)>> = OnceLock::new();
    S.get_or_init(|| {
        let mut out = BTreeMap::new();
        for e in std::fs::read_dir(root().join("schemas")).unwrap() {
            let p = e.unwrap().path();
            let file = p.file_name().unwrap().to_string_lossy().into_owned();
            let Some(name) = file.strip_suffix(".schema.json") else {
                panic!("schemas/{file}: every file is NAME.schema.json");
            };
            let schema: J = serde_json::from_slice(&std::fs::read(&p).unwrap())
                .unwrap_or_else(|e| panic!("schemas/{file} is not JSON: {e}"));
            assert_eq!(
                schema["$schema"],
                json!("https://json-schema.org/draft/2020-12/schema"),
                "schemas/{file}: draft 2020-12"
            );
            assert_eq!(
                schema["$id"],
                json!(format!("urn:dsh:schema:{name}")),
                "schemas/{file}: $id names the document"
            );
            let v = jsonschema::draft202012::new(&schema)
                .unwrap_or_else(|e| panic!("schemas/{file} is not a valid schema: {e}"));
            out.insert(name.to_string(), (schema, v));
        }
        out
    })
}

/// The errors of `doc` against schema `name` (empty: valid).
fn errors(name: &str, doc: &J) -> Vec<String> {
    let (_, v) = schemas()
        .get(name)
        .unwrap_or_else(|| panic!("no schemas/{name}.schema.json"));
    v.iter_errors(doc)
        .take(5)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

/// Whether a document is the refusal every command prints instead of its
/// own document (`schemas/error.schema.json`).
fn is_refusal(doc: &J) -> bool {
    const KEYS: &[&str] = &[
        "error",
        "kind",
        "stage",
        "file",
        "line",
        "seq",
        "hint",
        "schema_version",
    ];
    doc.get("error").is_some_and(J::is_string)
        && doc
            .as_object()
            .is_some_and(|o| o.keys().all(|k| KEYS.contains(&k.as_str())))
}

/// Validate `doc` against `name` (or the refusal schema when it is one).
fn check(name: &str, doc: &J, what: &str) {
    let name = if is_refusal(doc) { "error" } else { name };
    let errs = errors(name, doc);
    assert!(
        errs.is_empty(),
        "{what}: not a valid {name} document:\n  {}\n{:.600}",
        errs.join("\n  "),
        doc.to_string()
    );
}

/// Run dsh and return its exit status and the JSON documents it printed
/// (one per line for JSON Lines, else one).
fn run(cmd: &mut assert_cmd::Command) -> (i32, Vec<J>) {
    let out = cmd.output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let docs = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l:.300}")))
        .collect();
    (out.status.code().unwrap_or(-1), docs)
}

/// Every reading command on `log`, each document validated.
fn check_readers(log: &Path) {
    let l = log.to_str().unwrap();
    let what = |args: &[&str]| format!("dsh {} {l}", args.join(" "));
    for (schema, args, lines) in [
        ("surface", &["surface", "--json"][..], false),
        ("header", &["header", "--json"], false),
        ("load", &["load", "--json"], false),
        ("load", &["load", "--json", "--lenient"], false),
        ("measure", &["measure", "--json"], false),
        (
            "measure",
            &["measure", "--json", "--tokenizer", "o200k"],
            false,
        ),
        (
            "measure",
            &["measure", "--json", "--tokenizer", "deepseek-v4"],
            false,
        ),
        (
            "cache",
            &["cache", "--json", "--tokenizer", "deepseek-v4"],
            false,
        ),
        ("measure", &["measure", "--json", "--fill"], false),
        ("events", &["events", "--json", "--all"], true),
        ("view", &["view", "--json"], false),
        ("view", &["view", "--json", "--all", "--survival"], false),
        (
            "view",
            &["view", "--json", "--tokenizer", "deepseek-v4"],
            false,
        ),
        ("messages", &["messages", "--json"], false),
        ("verify", &["verify", "--json"], false),
        ("locks", &["locks", "--json"], false),
        ("cache", &["cache", "--json"], false),
        ("simulate", &["simulate", "--json", "--steps"], false),
        (
            "simulate",
            &["simulate", "--json", "--tokenizer", "deepseek-v4"],
            false,
        ),
        (
            "cache",
            &[
                "cache",
                "--json",
                "--tokenizer",
                "o200k",
                "--lifetime",
                "5m",
            ],
            false,
        ),
        ("prune", &["prune", "-n", "--json"], false),
        (
            "prune",
            &["prune", "-n", "--json", "--allow-closed-turn"],
            false,
        ),
        ("compact", &["compact", "-n", "--json"], false),
        (
            "compact",
            &["compact", "-n", "--json", "--mode", "overflow"],
            false,
        ),
        (
            "locks-release",
            &["locks", "--release", "-n", "--json"],
            false,
        ),
    ] {
        let (code, docs) = run(dsh().args(args).arg("-q").arg(log));
        assert!(
            code != 70 && code != 2,
            "{}: exit {code}, internal or usage error",
            what(args)
        );
        if !lines {
            assert_eq!(docs.len(), 1, "{}: one document", what(args));
        }
        for d in &docs {
            check(schema, d, &what(args));
        }
    }
}

fn samples() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(root().join("samples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.to_string_lossy();
            n.ends_with(".jsonl") || n.ends_with(".jsonl.zstd")
        })
        .collect();
    out.sort();
    out
}

#[test]
fn every_command_on_every_sample_prints_its_documented_shape() {
    for log in samples() {
        check_readers(&log);
    }
    // --at, and a measurement of standard input.
    let (_, docs) = run(dsh()
        .args(["measure", "--json", "--at", "20"])
        .arg(sample("coding-session.jsonl")));
    check("measure", &docs[0], "measure --at");
    assert_eq!(docs[0]["at"], json!(20));
    let (_, docs) = run(dsh()
        .args(["surface", "--json", "-"])
        .pipe_stdin(sample("coding-session.jsonl"))
        .unwrap());
    check("surface", &docs[0], "surface -");
    assert_eq!(docs[0]["file"], json!("-"));
    // An absolute retain budget instead of a ratio.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[compaction]\nretainTokens = 100\n").unwrap();
    let (_, docs) = run(dsh()
        .args(["measure", "--json", "--config"])
        .arg(&config)
        .arg(sample("coding-session.jsonl")));
    check("measure", &docs[0], "measure with retainTokens");
    assert_eq!(docs[0]["policy"]["retainTokensAbsolute"], json!(100));
    let (_, docs) = run(dsh()
        .args(["compact", "-n", "--json", "--retain-tokens", "100"])
        .arg(sample("compacted.jsonl")));
    check("compact", &docs[0], "compact --retain-tokens");
    assert_eq!(docs[0]["policy"]["retainTokensAbsolute"], json!(100));
    let (_, docs) = run(dsh().args(["verify", "--list-checks", "--json"]));
    check("verify-checks", &docs[0], "verify --list-checks");
}

#[test]
fn single_log_documents_name_the_file_and_session() {
    let log = sample("coding-session.jsonl");
    for args in [
        &["surface", "--json"][..],
        &["header", "--json"],
        &["load", "--json"],
        &["measure", "--json"],
        &["verify", "--json"],
        &["prune", "-n", "--json"],
        &["compact", "-n", "--json"],
        &["locks", "--release", "-n", "--json"],
    ] {
        let (_, docs) = run(dsh().args(args).arg(&log));
        let d = &docs[0];
        assert_eq!(d["file"], json!(log.to_str().unwrap()), "{args:?}");
        assert_eq!(d["session"], json!("sample-coding-session"), "{args:?}");
        assert_eq!(d["schema_version"], json!(1), "{args:?}");
    }
    let (_, lines) = run(dsh().args(["events", "--json"]).arg(&log));
    assert!(
        lines
            .iter()
            .all(|l| l["file"] == json!(log.to_str().unwrap()))
    );
}

#[test]
fn many_log_documents_share_one_envelope() {
    let logs = samples();
    let missing = "no-such-log.jsonl";
    for (schema, args) in [
        ("measure-many", &["measure", "--json", "-q"][..]),
        ("measure-many", &["measure", "--json", "-q", "--fill"]),
        ("verify-many", &["verify", "--json", "-q"]),
        ("locks", &["locks", "--json", "-q"]),
        ("locks", &["locks", "--json", "-q", "--age"]),
        ("cache", &["cache", "--json", "-q"]),
    ] {
        let mut cmd = dsh();
        cmd.args(args).args(&logs);
        if schema != "locks" {
            cmd.arg(missing);
        }
        let (_, docs) = run(&mut cmd);
        let d = &docs[0];
        check(schema, d, &format!("{args:?}"));
        let entries = d["logs"].as_array().unwrap();
        assert!(entries.len() >= logs.len(), "{args:?}");
        assert!(d["summary"].is_object(), "{args:?}: a summary");
        for e in entries {
            assert!(
                e["file"].is_string(),
                "{args:?}: every entry names its file"
            );
            assert!(
                e["session"].is_string() || e["error"].is_string(),
                "{args:?}: every entry names its session, or why there is none: {e}"
            );
        }
    }
}

#[test]
fn locks_json_holds_no_clock_reading_unless_asked() {
    let log = sample("locks-busy.jsonl");
    let (_, a) = run(dsh().args(["locks", "--json"]).arg(&log));
    let (_, b) = run(dsh().args(["locks", "--json"]).arg(&log));
    assert_eq!(a, b, "the same log, the same document");
    assert!(!a[0].to_string().contains("ageMs"));
    let (_, c) = run(dsh()
        .args(["locks", "--json", "--now", "1767225900000"])
        .arg(&log));
    check("locks", &c[0], "locks --now");
    let b0 = &c[0]["logs"][0]["brackets"][0];
    assert_eq!(
        b0["ageMs"].as_f64().unwrap(),
        1767225900000.0 - b0["time"].as_f64().unwrap()
    );
    assert_eq!(c[0]["now"], json!(1767225900000u64));
}

/// A copy of a sample in a temporary directory.
fn copy_of(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join(name);
    std::fs::copy(sample(name), &p).unwrap();
    (dir, p)
}

#[test]
fn writes_print_their_documented_shape() {
    // prune, for real.
    let (_d, log) = copy_of("prune-closed.jsonl");
    let (code, docs) = run(dsh()
        .args([
            "prune",
            "--json",
            "--allow-closed-turn",
            "--time",
            "1767225800000",
        ])
        .arg(&log));
    assert_eq!(code, 0, "{docs:?}");
    check("prune", &docs[0], "prune");
    assert_eq!(docs[0]["written"], json!(true));
    // locks --release, for real and with --out.
    let (_d, log) = copy_of("locks-busy.jsonl");
    let out = log.with_file_name("copy.jsonl");
    let (code, docs) = run(dsh()
        .args(["locks", "--release", "--json", "--out"])
        .arg(&out)
        .arg(&log));
    assert_eq!(code, 0, "{docs:?}");
    check("locks-release", &docs[0], "locks --release --out");
    let (code, docs) = run(dsh()
        .args(["locks", "--release", "--yes", "--json"])
        .arg(&log));
    assert_eq!(code, 0, "{docs:?}");
    check("locks-release", &docs[0], "locks --release");
    assert_eq!(docs[0]["released"], json!(true));
    // Nothing left to release.
    let (_, docs) = run(dsh()
        .args(["locks", "--release", "--yes", "--json"])
        .arg(&log));
    check("locks-release", &docs[0], "locks --release (free)");
    // repair: dry and real on a torn log, and on a whole one.
    let (_d, log) = copy_of("torn.jsonl");
    for args in [
        &["repair", "-n", "--json", "--force"][..],
        &["repair", "--force", "--json"],
        &["repair", "--json"],
    ] {
        let (code, docs) = run(dsh().args(args).arg(&log));
        assert_eq!(code, 0, "{docs:?}");
        check("repair", &docs[0], &args.join(" "));
    }
    // pack and unpack, dry and real.
    let packed = log.with_file_name("packed.jsonl.zstd");
    let plain = log.with_file_name("plain.jsonl");
    for (schema, cmd, from, to) in [
        ("pack", "pack", &log, &packed),
        ("unpack", "unpack", &packed, &plain),
    ] {
        for dry in [true, false] {
            let mut c = dsh();
            c.args([cmd, "--json", "--out"]).arg(to);
            if dry {
                c.arg("--dry-run");
            }
            let (code, docs) = run(c.arg(from));
            assert_eq!(code, 0, "{cmd}: {docs:?}");
            check(schema, &docs[0], cmd);
            assert_eq!(docs[0]["dryRun"], json!(dry));
        }
    }
    // report: one page, then a directory with an index.
    let page = log.with_file_name("report.html");
    let (code, docs) = run(dsh().args(["report", "--json", "-o"]).arg(&page).arg(&log));
    assert_eq!(code, 0, "report: {docs:?}");
    check("report", &docs[0], "report");
    let dir = log.with_file_name("reports");
    let (code, docs) = run(dsh()
        .args(["report", "--json", "-o"])
        .arg(&dir)
        .arg(&log)
        .arg(sample("compacted.jsonl")));
    assert_eq!(code, 0, "report DIR: {docs:?}");
    check("report", &docs[0], "report DIR");
    assert!(docs[0]["index"].is_string());
}

const SUMMARY: &str = "## Primary Request and Intent\n- Fix the test.\n\n## Key Technical Concepts\n- cargo\n\n## Files and Code\n- (none)\n\n## Errors and Fixes\n- (none)\n\n## Pending Jobs\n- (none)\n\n## Current Work\n- Done.\n\n## Next Step\n- (none)\n\n## Critical Context\n- (none)";

/// A closed turn with a long tool result: enough history for a summary
/// to be smaller than what it replaces.
fn closed_log() -> (tempfile::TempDir, PathBuf) {
    let src = json!({"kind":"model","provider":"deepseek-official","model":"deepseek-v4-flash"});
    let long: String = (1..=80)
        .map(|i| format!("line {i}: fn build() {{ cargo(); }}\n"))
        .collect();
    let mut lines = vec![
        json!({"type":"session","version":0,"id":"s-schema","createdAt":0,"cwd":"/tmp","delegationDepth":0}),
    ];
    let events = [
        json!({"type":"turn/start","data":{"turn":1}}),
        json!({"type":"step/start","data":{"turn":1,"step":1}}),
        json!({"type":"user/message","data":{"role":"user","content":[{"type":"text","text":"Explain the build. ".repeat(20)}],"source":{"kind":"user"},"id":"u1"},"surfaceOp":"append"}),
        json!({"type":"request/header","data":{"header":{"config":{"provider":"deepseek-official","model":"deepseek-v4-flash"},"system":"You are a careful coding agent.","tools":[]},"reason":"initial"}}),
        json!({"type":"assistant/message","data":{"turn":1,"step":1,"message":{"role":"assistant","content":[{"type":"tool-call","id":"call_1","name":"read","arguments":"{}"}],"source":src,"id":"a1"}},"surfaceOp":"append"}),
        json!({"type":"tool/call","data":{"turn":1,"step":1,"callId":"call_1","name":"read","arguments":"{}"}}),
        json!({"type":"tool/result","data":{"turn":1,"step":1,"message":{"role":"user","content":[{"type":"tool-result","toolCallId":"call_1","content":[{"type":"text","text":long}]}],"source":{"kind":"tool","callId":"call_1"},"id":"t1"}},"surfaceOp":"append"}),
        json!({"type":"step/end","data":{"turn":1,"step":1}}),
        json!({"type":"step/start","data":{"turn":1,"step":2}}),
        json!({"type":"assistant/message","data":{"turn":1,"step":2,"message":{"role":"assistant","content":[{"type":"text","text":"It runs cargo."}],"source":src,"id":"a2"}},"surfaceOp":"append"}),
        json!({"type":"step/end","data":{"turn":1,"step":2}}),
        json!({"type":"turn/end","data":{"turn":1,"reason":{"kind":"completed"}}}),
    ];
    for (i, mut e) in events.into_iter().enumerate() {
        e["seq"] = json!(i);
        e["time"] = json!(1_700_000_000_000u64 + i as u64);
        lines.push(e);
    }
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&p, text).unwrap();
    (dir, p)
}

fn compact(log: &Path, base: &str) -> (i32, Vec<J>) {
    let env = TestEnv::new();
    run(env
        .dsh()
        .env("DEEPSEEK_API_KEY", "sk-test-schema")
        .args(["compact", "--json", "--retries", "0", "--retry-delay", "0"])
        .args(["--base-url", base])
        .arg(log)
        .timeout(std::time::Duration::from_secs(60)))
}

#[test]
fn compact_prints_its_documented_shape_on_success_and_failure() {
    let (_d, log) = closed_log();
    let server = Server::start(vec![Reply::Sse(deepseek_sse(SUMMARY))]);
    let (code, docs) = compact(&log, &server.base);
    server.join();
    check("compact", &docs[0], "compact");
    assert_eq!(
        docs[0]["outcome"],
        json!("compacted"),
        "exit {code}: {}",
        docs[0]["error"]
    );
    // A provider failure: the failed bracket is reported, with `error`.
    let (_d, log) = closed_log();
    let server = Server::start(vec![Reply::Status(
        500,
        vec![],
        json!({"error": {"message": "down"}}).to_string(),
    )]);
    let (code, docs) = compact(&log, &server.base);
    server.join();
    assert_eq!(code, 5, "{docs:?}");
    check("compact", &docs[0], "compact (provider failure)");
    assert!(docs[0]["error"]["message"].is_string());
    // A real run refused before the first byte (the provider's host does
    // not answer): compact's own refusal document.
    let (_d, log) = closed_log();
    let (code, docs) = compact(&log, "http://127.0.0.1:9");
    assert_eq!(code, 2, "{docs:?}");
    check(
        "compact",
        &docs[0],
        "compact (refused before the first byte)",
    );
    assert_eq!(docs[0]["written"], json!(false));
    // A refused log: the refusal document.
    let (code, docs) = run(dsh()
        .args(["compact", "--json"])
        .arg(sample("refused.jsonl")));
    assert_eq!(code, 3);
    check("compact", &docs[0], "compact (refused log)");
    assert!(is_refusal(&docs[0]));
}

#[test]
fn the_corpus_prints_documented_shapes() {
    let Some(shared) = shared("the_corpus_prints_documented_shapes") else {
        return;
    };
    let logs = crate::support::corpus_logs(&shared);
    // A handful, spread over the corpus (real, synthetic and edge logs).
    let step = (logs.len() / 8).max(1);
    let picked: Vec<&PathBuf> = logs.iter().step_by(step).map(|(_, p)| p).collect();
    for log in &picked {
        check_readers(log);
    }
    let (_, docs) = run(dsh().args(["measure", "--json", "-q"]).args(&picked));
    check("measure-many", &docs[0], "measure (corpus)");
    let (_, docs) = run(dsh().args(["verify", "--json", "-q"]).args(&picked));
    check("verify-many", &docs[0], "verify (corpus)");
}

/// A valid document of each schema with one thing broken must be rejected,
/// so the tests above cannot pass by accepting anything.
#[test]
fn broken_documents_are_rejected() {
    let log = sample("coding-session.jsonl");
    let doc = |args: &[&str]| run(dsh().args(args).arg(&log)).1.remove(0);
    let surface = doc(&["surface", "--json"]);
    assert!(errors("surface", &surface).is_empty());
    let mut broken = surface.clone();
    broken.as_object_mut().unwrap().remove("file");
    assert!(!errors("surface", &broken).is_empty(), "missing file");
    let mut broken = surface.clone();
    broken["nodes"] = json!("4,26");
    assert!(
        !errors("surface", &broken).is_empty(),
        "nodes of the wrong type"
    );
    let mut broken = surface.clone();
    broken["positions"][0]["tokens"] = json!("27");
    assert!(
        !errors("surface", &broken).is_empty(),
        "a nested wrong type"
    );
    let mut broken = surface.clone();
    broken.as_object_mut().unwrap().remove("schema_version");
    assert!(
        !errors("surface", &broken).is_empty(),
        "missing schema_version"
    );
    let mut broken = surface;
    broken["schema_version"] = json!(2);
    assert!(
        !errors("surface", &broken).is_empty(),
        "another schema_version"
    );

    let measure = doc(&["measure", "--json"]);
    let mut broken = measure.clone();
    broken["policy"]
        .as_object_mut()
        .unwrap()
        .remove("thresholdTokens");
    assert!(
        !errors("measure", &broken).is_empty(),
        "policy without threshold"
    );
    let mut broken = measure;
    broken["undocumented"] = json!(true);
    assert!(
        !errors("measure", &broken).is_empty(),
        "an undocumented key"
    );

    let mut messages = doc(&["messages", "--json"]);
    assert!(errors("messages", &messages).is_empty());
    messages[0].as_object_mut().unwrap().remove("role");
    assert!(
        !errors("messages", &messages).is_empty(),
        "a message without role"
    );

    let mut verify = doc(&["verify", "--json"]);
    verify["verdict"] = json!("fine");
    assert!(!errors("verify", &verify).is_empty(), "an unknown verdict");

    let mut locks = doc(&["locks", "--json"]);
    locks["summary"]["busy"] = json!(-1);
    assert!(!errors("locks", &locks).is_empty(), "a negative count");

    // Nothing is a document of every kind: an empty object is rejected by
    // each schema.
    for name in schemas().keys() {
        assert!(!errors(name, &json!({})).is_empty(), "{name} accepts {{}}");
    }
}

/// schemas/ holds exactly the documents the tests above exercise, and
/// docs/json.md names each.
#[test]
fn every_schema_is_some_command_s_document() {
    let env = TestEnv::new();
    let names: BTreeSet<String> = schemas().keys().cloned().collect();
    let expected: BTreeSet<String> = [
        "cache",
        "compact",
        "error",
        "events",
        "export",
        "header",
        "health",
        "load",
        "locks",
        "locks-release",
        "measure",
        "measure-many",
        "messages",
        "pack",
        "prune",
        "repair",
        "report",
        "sessions",
        "sessions-tree",
        "simulate",
        "statusline",
        "surface",
        "unpack",
        "usage",
        "usage-prices",
        "verify",
        "verify-checks",
        "verify-many",
        "view",
        "watch",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(names, expected, "schemas/ holds one file per document");
    // The refusal: a log that is not there.
    let (code, docs) = run(env.dsh().args(["surface", "--json", "no-such-log.jsonl"]));
    assert_eq!(code, 3);
    check("surface", &docs[0], "surface (missing log)");
    assert!(is_refusal(&docs[0]));
    // The JSON output page names every schema file.
    let page = std::fs::read_to_string(root().join("docs/json.md")).unwrap();
    for n in &names {
        assert!(
            page.contains(&format!("schemas/{n}.schema.json")),
            "docs/json.md names schemas/{n}.schema.json"
        );
    }
}

/// Dry runs read no clock: the same log gives the same document, also a
/// second later.
#[test]
fn dry_runs_are_reproducible() {
    for args in [
        &["compact", "-n", "--json", "--mode", "overflow"][..],
        &["prune", "-n", "--json", "--allow-closed-turn"],
        &["locks", "--release", "-n", "--json"],
    ] {
        let log = match args[0] {
            "locks" => sample("locks-busy.jsonl"),
            _ => sample("prune-open-turn.jsonl"),
        };
        let once = || {
            dsh()
                .args(args)
                .arg("-q")
                .arg(&log)
                .output()
                .unwrap()
                .stdout
        };
        let first = once();
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(first, once(), "{args:?}");
    }
}

/// `sessions` and `usage` over a DSH home holding every sample.
#[test]
fn sessions_and_usage_print_their_documented_shapes() {
    let home = tempfile::tempdir().unwrap();
    for (i, log) in samples().iter().enumerate() {
        let d = home
            .path()
            .join("sessions")
            .join(format!("--home-dev-p{}--", i % 3))
            .join(format!("s{i}"));
        std::fs::create_dir_all(&d).unwrap();
        let name = if log.to_string_lossy().ends_with(".zstd") {
            "session.jsonl.zstd"
        } else {
            "session.jsonl"
        };
        std::fs::copy(log, d.join(name)).unwrap();
    }
    let with_home = |args: &[&str]| run(dsh().env("DSH_HOME", home.path()).args(args).arg("-q"));
    let (_, docs) = with_home(&["sessions", "--tree", "--json"]);
    check("sessions-tree", &docs[0], "sessions --tree");
    let (_, docs) = with_home(&["sessions", "--json"]);
    check("sessions", &docs[0], "sessions");
    assert!(docs[0]["logs"].as_array().unwrap().len() >= samples().len());
    for by in ["--daily", "--weekly", "--monthly", "--session", "--project"] {
        for breakdown in [false, true] {
            let mut args = vec!["usage", "--json", by];
            if breakdown {
                args.push("--breakdown");
            }
            let (_, docs) = with_home(&args);
            check("usage", &docs[0], &format!("{args:?}"));
        }
    }
    for args in [
        &["health", "--json"][..],
        &["health", "--json", "--all", "--fail-on", "warn"],
    ] {
        let (_, docs) = with_home(args);
        check("health", &docs[0], &format!("{args:?}"));
    }
    let (_, docs) = with_home(&["usage", "--prices", "--json"]);
    check("usage-prices", &docs[0], "usage --prices");
    let out = tempfile::tempdir().unwrap();
    for (format, dry) in [("parquet", "-n"), ("csv", "--force"), ("jsonl", "--force")] {
        let (_, docs) = with_home(&[
            "export",
            "--json",
            dry,
            "--format",
            format,
            "--out",
            out.path().to_str().unwrap(),
        ]);
        check("export", &docs[0], &format!("export --format {format}"));
    }
    let inc = tempfile::tempdir().unwrap();
    for _ in 0..2 {
        let (_, docs) = with_home(&[
            "export",
            "--json",
            "--incremental",
            "--out",
            inc.path().to_str().unwrap(),
        ]);
        check("export", &docs[0], "export --incremental");
    }
}

/// `statusline --json` and a line of `watch --json`, on every sample.
#[test]
fn statusline_and_watch_print_their_documented_shapes() {
    let env = TestEnv::new();
    for log in samples() {
        let what = log.display().to_string();
        let (code, docs) = run(env.dsh().args(["statusline", "--json", "-q"]).arg(&log));
        if code == 3 {
            continue;
        }
        assert_eq!(code, 0, "statusline {what}");
        check("statusline", &docs[0], &format!("statusline {what}"));
        let mut child = crate::support::dsh_process()
            .args(["watch", "--json", "-q"])
            .arg(&log)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
        let doc: J = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{what}: {e}: {line}"));
        check("watch", &doc, &format!("watch {what}"));
    }
}

/// Every schema generated from a document's type (`dsh::doc::schemas`)
/// is the committed file, byte for byte: a document cannot drift from its
/// schema. `DSH_BLESS_SCHEMAS=1 cargo test --test it schemas::committed`
/// writes them instead.
#[test]
fn committed_schemas_are_the_generated_ones() {
    let bless = std::env::var_os("DSH_BLESS_SCHEMAS").is_some();
    let generated = dsh::doc::schemas();
    assert!(generated.len() >= 2, "the documents converted so far");
    let mut stale = Vec::new();
    for (name, text) in generated {
        let path = root().join("schemas").join(format!("{name}.schema.json"));
        if bless {
            std::fs::write(&path, &text).unwrap();
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            stale.push(format!("schemas/{name}.schema.json"));
        }
    }
    assert!(
        stale.is_empty(),
        "{} differ from the schemas generated from their documents' types: \
         run `DSH_BLESS_SCHEMAS=1 cargo test --test it schemas::committed` and commit them",
        stale.join(", ")
    );
}
