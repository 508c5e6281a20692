//! The smaller things a person meets at the terminal (issue 41): refusals
//! say why and what to do on stderr everywhere, limits count every row,
//! `--fail-over` says how many are over, `locks` lists findings, `--json`
//! is refused where it means nothing, flags are suggested by meaning,
//! examples never wrap into lines that read as commands, dates are local
//! and typed as `YYYYMMDD` too.

use crate::sessions::{DAY, HOUR, JUL1, authored_log, put};
use crate::support::TestEnv;

const DS: &str = "deepseek-official";
const FLASH: &str = "deepseek-v4-flash";

/// A home with a small session, one far over its window and one whose
/// header lacks `delegationDepth` (refused unless --lenient).
fn home(env: &TestEnv) -> std::path::PathBuf {
    let home = env.dsh_home();
    let small = r#"{"inputTokens":100,"outputTokens":10}"#;
    let huge = r#"{"inputTokens":5000000,"outputTokens":10}"#;
    put(
        &home,
        "/w/a",
        "small-0001",
        &authored_log(
            "small-0001",
            "/w/a",
            JUL1,
            "small",
            &[(JUL1 + HOUR, DS, FLASH, small)],
        ),
    );
    put(
        &home,
        "/w/a",
        "huge-0002",
        &authored_log(
            "huge-0002",
            "/w/a",
            JUL1,
            "huge",
            &[(JUL1 + 2 * HOUR, DS, FLASH, huge)],
        ),
    );
    let old = authored_log(
        "old-0003",
        "/w/b",
        JUL1,
        "old",
        &[(JUL1 + DAY, DS, FLASH, small)],
    )
    .replacen(",\"delegationDepth\":0", "", 1);
    put(&home, "/w/b", "old-0003", &old);
    home
}

fn run(env: &TestEnv, args: &[&str]) -> (i32, String, String) {
    let out = env.dsh().args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn every_many_log_command_gives_the_refusal_and_its_hint_on_stderr() {
    let env = TestEnv::new();
    home(&env);
    let out = env.home().join("out");
    let report = out.join("report");
    let export = out.join("export");
    for args in [
        vec!["measure"],
        vec!["verify"],
        vec!["locks"],
        vec!["sessions"],
        vec!["usage"],
        vec!["cache"],
        vec!["export", "--out", export.to_str().unwrap()],
        vec!["report", "-o", report.to_str().unwrap()],
        vec!["sessions", "--json"],
        vec!["measure", "--json"],
    ] {
        let (code, _, err) = run(&env, &args);
        assert_eq!(code, 3, "dsh {args:?}: {err}");
        let line = err
            .lines()
            .find(|l| l.contains("old-0003"))
            .unwrap_or_else(|| panic!("dsh {args:?} names no refusal: {err}"));
        assert!(line.starts_with("dsh: error: "), "{line}");
        assert!(line.contains("delegationDepth"), "dsh {args:?}: {line}");
        assert!(line.contains("--lenient"), "dsh {args:?}: the hint: {line}");
        assert_eq!(
            err.lines().filter(|l| l.contains("old-0003")).count(),
            1,
            "dsh {args:?} says it once: {err}"
        );
    }
}

#[test]
fn fail_over_counts_what_is_over_and_refusals_fail_only_when_nothing_was_read() {
    let env = TestEnv::new();
    let home = home(&env);
    let (code, out, _) = run(&env, &["measure", "--fail-over"]);
    assert_eq!(code, 1, "one is over: {out}");
    assert!(
        out.contains("1 of 2 over the compaction threshold (1 refused, reasons on stderr)"),
        "{out}"
    );
    let (code, json, _) = run(&env, &["measure", "--fail-over", "--json"]);
    assert_eq!(code, 1);
    assert!(json.contains(r#""overThreshold":1"#), "{json}");
    // Nothing over, one refused: the gate passes, the refusal is said.
    let small = home.join("sessions/--w-a--/small-0001/session.jsonl");
    let old = home.join("sessions/--w-b--/old-0003/session.jsonl");
    let (code, out, err) = run(
        &env,
        &[
            "measure",
            "--fail-over",
            small.to_str().unwrap(),
            old.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("0 of 1 over"), "{out}");
    assert!(err.contains("--lenient"), "{err}");
    // Nothing could be read: 3.
    let (code, _, _) = run(
        &env,
        &[
            "measure",
            "--fail-over",
            old.to_str().unwrap(),
            old.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 3);
    // Without --fail-over a refusal is exit 3, as before.
    let (code, _, _) = run(
        &env,
        &["measure", small.to_str().unwrap(), old.to_str().unwrap()],
    );
    assert_eq!(code, 3);
}

#[test]
fn locks_lists_findings_unless_all() {
    let env = TestEnv::new();
    let home = env.dsh_home();
    let small = r#"{"inputTokens":100,"outputTokens":10}"#;
    for id in ["free-0001", "free-0002"] {
        put(
            &home,
            "/w/a",
            id,
            &authored_log(id, "/w/a", JUL1, id, &[(JUL1, DS, FLASH, small)]),
        );
    }
    let busy = put(&home, "/w/a", "busy-0003", "");
    std::fs::copy(crate::support::sample("locks-busy.jsonl"), &busy).unwrap();
    let (code, out, _) = run(&env, &["locks"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("busy"), "{out}");
    assert!(!out.contains("free-000"), "free logs are not listed: {out}");
    assert!(
        out.contains("2 log(s) with nothing to report not listed (--all lists them)"),
        "{out}"
    );
    let (_, all, _) = run(&env, &["locks", "--all"]);
    assert!(all.contains("free-000") && all.contains("free"), "{all}");
    assert!(!all.contains("not listed"), "{all}");
    // JSON always holds every log.
    let (_, json, _) = run(&env, &["locks", "--json"]);
    assert_eq!(json.matches(r#""file":"#).count(), 3, "{json}");
}

#[test]
fn json_is_refused_where_it_means_nothing() {
    let env = TestEnv::new();
    let (code, out, err) = run(&env, &["completions", "bash", "--json"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--json has nothing to describe"), "{err}");
    assert!(!out.contains("_dsh"), "no script: {out}");
}

#[test]
fn an_unknown_flag_suggests_the_one_meant() {
    let env = TestEnv::new();
    let (code, _, err) = run(&env, &["simulate", "--threshold", "0.6", "x.jsonl"]);
    assert_eq!(code, 2);
    let tips: Vec<&str> = err.lines().filter(|l| l.contains("tip:")).collect();
    assert!(
        tips[0].contains("did you mean --threshold-ratio <R>?"),
        "{err}"
    );
    assert!(
        tips[0].contains("share of the window"),
        "what it does: {err}"
    );
    assert!(
        err.contains("--threshold-chars"),
        "the other one too: {err}"
    );
    assert!(
        err.contains("Usage: dsh simulate [OPTIONS] <LOG>..."),
        "{err}"
    );
    let (_, _, err) = run(&env, &["measure", "--window=64000"]);
    assert!(err.contains("did you mean --context-window"), "{err}");
    let (_, _, err) = run(&env, &["simulate", "--retain", "0.1", "x.jsonl"]);
    assert!(
        err.contains("did you mean --retain-ratio"),
        "a ratio takes 0.1: {err}"
    );
    let (_, _, err) = run(&env, &["simulate", "--retain", "4096", "x.jsonl"]);
    assert!(err.contains("--retain-tokens"), "{err}");
}

/// `dsh ARGS` in a pseudo-terminal `cols` wide; `None` without `script`.
fn in_terminal(cols: u16, args: &[&str], env: &[(&str, &str)]) -> Option<String> {
    crate::pty::run(cols, None, args, env).map(|(text, _)| text)
}

#[test]
fn examples_never_wrap_into_lines_that_read_as_commands() {
    let commands = [
        "surface",
        "messages",
        "header",
        "measure",
        "events",
        "view",
        "load",
        "prune",
        "compact",
        "verify",
        "locks",
        "sessions",
        "usage",
        "cache",
        "simulate",
        "report",
        "export",
        "pack",
        "unpack",
        "completions",
        "statusline",
        "watch",
    ];
    for cmd in commands {
        let examples = |cols| -> Option<Vec<String>> {
            let text = in_terminal(cols, &[cmd, "-h"], &[])?;
            let at = text.find("Examples:").unwrap_or(text.len());
            Some(text[at..].lines().skip(1).map(str::to_string).collect())
        };
        let Some(narrow) = examples(80) else { return };
        let wide = examples(200).unwrap();
        // At 200 columns each example is one line: the command, then its
        // comment. At 80 every line is one of those commands, or a comment.
        let commands: Vec<String> = wide
            .iter()
            .map(|l| l.split("  # ").next().unwrap().trim_end().to_string())
            .collect();
        // A command continued with ` \` is one command.
        let mut joined: Vec<String> = Vec::new();
        let mut open = false;
        for line in &narrow {
            assert!(
                unicode_width::UnicodeWidthStr::width(line.as_str()) <= 80,
                "dsh {cmd} -h at 80 columns: {line:?}"
            );
            match joined.last_mut() {
                Some(last) if open => {
                    last.push(' ');
                    last.push_str(line.trim_start());
                }
                _ => joined.push(line.clone()),
            }
            open = joined.last().unwrap().ends_with(" \\");
            if open {
                let last = joined.last_mut().unwrap();
                last.truncate(last.len() - 2);
            }
        }
        for line in &joined {
            let t = line.trim_start();
            assert!(
                t.is_empty()
                    || t.starts_with('#')
                    || wide.contains(line)
                    || commands.iter().any(|c| c == line),
                "dsh {cmd} -h at 80 columns: {line:?} is neither an example nor a comment:\n{}",
                narrow.join("\n")
            );
        }
    }
}

#[test]
fn dates_are_local_unless_told_and_take_yyyymmdd() {
    let env = TestEnv::new();
    home(&env);
    let at = |tz: &str, extra: &[&str]| -> String {
        let mut args = vec!["sessions", "--sort", "activity"];
        args.extend_from_slice(extra);
        let out = env.dsh().args(&args).env("TZ", tz).output().unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    // 2026-07-01 11:00 UTC is 19:00 in Shanghai.
    assert!(at("Asia/Shanghai", &[]).contains("2026-07-01 19:00"));
    assert!(
        at("CST-8", &[]).contains("2026-07-01 19:00"),
        "a POSIX rule in $TZ"
    );
    assert!(at("Asia/Shanghai", &["--utc"]).contains("2026-07-01 11:00"));
    assert!(at("UTC", &["--tz", "+02:00"]).contains("2026-07-01 13:00"));
    let usage = |args: &[&str]| -> String {
        let out = env
            .dsh()
            .args(args)
            .env("TZ", "Asia/Shanghai")
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let json = usage(&["usage", "--json"]);
    assert!(json.contains(r#""tz":"Asia/Shanghai""#), "{json}");
    let compact = usage(&["usage", "--json", "--since", "20260701"]);
    assert_eq!(
        compact,
        usage(&["usage", "--json", "--since", "2026-07-01"])
    );
    assert!(compact.contains(r#""key":"2026-07-01""#), "{compact}");
    assert!(!usage(&["usage", "--json", "--since", "20260702"]).contains("2026-07-01"));
}
