//! `dsh sessions`: a home of authored logs listed, filtered, sorted and
//! totalled; unknown times shown and sorted last; locks and refusals; the
//! table at 80 and 200 columns.

use std::path::{Path, PathBuf};
use std::process::Command;

use dsh::json::Value;

use crate::support::{TestEnv, rows_one_by_one, sample};

/// 2026-07-01T10:00:00Z.
pub const JUL1: i64 = 1_782_900_000_000;
pub const HOUR: i64 = 3_600_000;
pub const DAY: i64 = 24 * HOUR;

/// One model request of an authored log: time, provider, model, usage JSON.
pub type Req<'a> = (i64, &'a str, &'a str, &'a str);

/// An authored G0 log: one turn per request (user message, one step, the
/// assistant message with its usage); `created` 0 for a normalised header.
pub fn authored_log(id: &str, cwd: &str, created: i64, title: &str, reqs: &[Req<'_>]) -> String {
    let mut out = format!(
        "{{\"type\":\"session\",\"version\":0,\"id\":\"{id}\",\"createdAt\":{created},\"cwd\":\"{cwd}\",\"delegationDepth\":0}}\n"
    );
    let mut seq = 0;
    let mut ev = |out: &mut String, time: i64, ty: &str, data: String, surface: bool| {
        let op = if surface {
            ",\"surfaceOp\":\"append\""
        } else {
            ""
        };
        out.push_str(&format!(
            "{{\"type\":\"{ty}\",\"seq\":{seq},\"time\":{time},\"data\":{data}{op}}}\n"
        ));
        seq += 1;
    };
    for (i, (time, provider, model, usage)) in reqs.iter().enumerate() {
        let turn = i + 1;
        ev(
            &mut out,
            *time,
            "turn/start",
            format!("{{\"turn\":{turn}}}"),
            false,
        );
        let text = if i == 0 {
            title.to_string()
        } else {
            format!("go on {turn}")
        };
        ev(
            &mut out,
            *time,
            "user/message",
            format!(
                "{{\"id\":\"u{turn}\",\"role\":\"user\",\"content\":[{{\"type\":\"text\",\"text\":\"{text}\"}}],\"source\":{{\"kind\":\"user\"}}}}"
            ),
            true,
        );
        ev(
            &mut out,
            *time,
            "step/start",
            format!("{{\"turn\":{turn},\"step\":1}}"),
            false,
        );
        if i == 0 {
            let header = format!(
                "{{\"header\":{{\"config\":{{\"provider\":\"{provider}\",\"model\":\"{model}\"}}}},\"reason\":\"initial\"}}"
            );
            ev(&mut out, *time, "request/header", header, false);
        }
        ev(
            &mut out,
            *time,
            "assistant/message",
            format!(
                "{{\"turn\":{turn},\"step\":1,\"message\":{{\"id\":\"a{turn}\",\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":\"done {turn}\"}}],\"source\":{{\"kind\":\"model\",\"provider\":\"{provider}\",\"model\":\"{model}\"}}}},\"usage\":{usage}}}"
            ),
            true,
        );
        ev(
            &mut out,
            *time,
            "step/end",
            format!("{{\"turn\":{turn},\"step\":1}}"),
            false,
        );
        ev(
            &mut out,
            *time,
            "turn/end",
            format!("{{\"turn\":{turn},\"reason\":{{\"kind\":\"completed\"}}}}"),
            false,
        );
    }
    out
}

/// Put a log into `home` where the DSH backend keeps it.
pub fn put(home: &Path, cwd: &str, id: &str, text: &str) -> PathBuf {
    let d = home
        .join("sessions")
        .join(dsh::log::source::project_dir_name(Some(cwd)))
        .join(dsh::log::source::session_dir_name(id));
    std::fs::create_dir_all(&d).unwrap();
    let f = d.join("session.jsonl");
    std::fs::write(&f, text).unwrap();
    f
}

/// A home with four sessions in two projects (one with a normalised,
/// unknown start), a busy lock and a refused log.
pub fn demo_home(env: &TestEnv) -> PathBuf {
    let home = env.dsh_home();
    let flash = "deepseek-v4-flash";
    let ds = "deepseek-official";
    put(
        &home,
        "/home/dev/alpha",
        "alpha-0001",
        &authored_log(
            "alpha-0001",
            "/home/dev/alpha",
            JUL1,
            "Fix the failing parser test",
            &[
                (
                    JUL1 + HOUR,
                    ds,
                    flash,
                    r#"{"inputTokens":1000000,"outputTokens":10}"#,
                ),
                (
                    JUL1 + 2 * HOUR,
                    ds,
                    flash,
                    r#"{"inputTokens":20,"outputTokens":5,"cacheReadTokens":300}"#,
                ),
            ],
        ),
    );
    put(
        &home,
        "/home/dev/alpha/sub",
        "alpha-0002",
        &authored_log(
            "alpha-0002",
            "/home/dev/alpha/sub",
            JUL1 + 4 * DAY,
            "Write the release notes",
            &[(
                JUL1 + 4 * DAY + HOUR,
                ds,
                "mystery-model",
                r#"{"inputTokens":7,"outputTokens":3}"#,
            )],
        ),
    );
    put(
        &home,
        "/home/dev/beta",
        "beta-0003",
        &authored_log(
            "beta-0003",
            "/home/dev/beta",
            0,
            "A recorded snapshot",
            &[(0, ds, flash, r#"{"inputTokens":11,"outputTokens":2}"#)],
        ),
    );
    let busy = std::fs::read_to_string(sample("locks-busy.jsonl")).unwrap();
    put(&home, "/home/dev/beta", "busy-0004", &busy);
    let refused = std::fs::read_to_string(sample("refused.jsonl")).unwrap();
    put(&home, "/home/dev/beta", "refused-0005", &refused);
    home
}

fn ids(v: &Value<'_>) -> Vec<String> {
    v.get("logs")
        .unwrap()
        .as_arr()
        .unwrap()
        .iter()
        .map(|l| {
            l.get("session")
                .and_then(|s| s.as_str())
                .map_or_else(|| "REFUSED".to_string(), |s| s.into_owned())
        })
        .collect()
}

#[test]
fn the_authored_logs_are_valid() {
    let text = authored_log(
        "x",
        "/p",
        JUL1,
        "hi",
        &[(JUL1, "p", "m", r#"{"inputTokens":1,"outputTokens":1}"#)],
    );
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("x.jsonl");
    std::fs::write(&f, text).unwrap();
    let out = crate::support::dsh()
        .args(["verify", f.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn sessions_lists_the_home_with_times_locks_refusals_and_totals() {
    let env = TestEnv::new();
    demo_home(&env);
    let (v, code) = env.json(&["sessions", "--json"]);
    assert_eq!(code, 3, "a refused log makes the exit status 3");
    // Oldest first; the unknown start after every known one, the refusal last.
    assert_eq!(
        ids(&v),
        [
            "sample-locks-busy",
            "alpha-0001",
            "alpha-0002",
            "beta-0003",
            "REFUSED"
        ]
    );
    let logs = v.get("logs").unwrap().as_arr().unwrap();
    let alpha = &logs[1];
    assert_eq!(
        alpha.get("project").unwrap().as_str().unwrap(),
        "/home/dev/alpha"
    );
    assert_eq!(
        alpha.get("title").unwrap().as_str().unwrap(),
        "Fix the failing parser test"
    );
    assert_eq!(alpha.get("turns").unwrap().as_f64(), Some(2.0));
    assert_eq!(alpha.get("events").unwrap().as_f64(), Some(13.0));
    assert_eq!(
        alpha.get("started").unwrap().as_str().unwrap(),
        "2026-07-01T10:00:00.000Z"
    );
    assert_eq!(
        alpha.get("lastActivity").unwrap().as_str().unwrap(),
        "2026-07-01T12:00:00.000Z"
    );
    assert!(alpha.get("pressurePercent").unwrap().as_f64().unwrap() > 0.0);
    assert_eq!(alpha.get("generation").unwrap().as_f64(), Some(0.0));
    assert!(matches!(
        alpha.get("overThreshold"),
        Some(Value::Bool(false))
    ));
    // 1,000,000 uncached input at 0.14 + tiny rest.
    let cost = alpha.get("costUsd").unwrap().as_f64().unwrap();
    assert!((cost - 0.14).abs() < 0.001, "{cost}");
    let beta = &logs[3];
    assert!(
        matches!(beta.get("started"), Some(Value::Null)),
        "never invented"
    );
    assert!(
        matches!(beta.get("costUsd"), Some(Value::Null)),
        "dated price, unknown time"
    );
    assert!(
        matches!(logs[2].get("costUsd"), Some(Value::Null)),
        "unknown model"
    );
    let busy = &logs[0];
    assert_eq!(
        busy.get("lock")
            .unwrap()
            .get("state")
            .unwrap()
            .as_str()
            .unwrap(),
        "busy"
    );
    let refused = &logs[4];
    assert!(
        refused
            .get("error")
            .unwrap()
            .as_str()
            .unwrap()
            .contains("seq gap")
    );
    let totals = v.get("summary").unwrap();
    assert_eq!(totals.get("sessions").unwrap().as_f64(), Some(4.0));
    assert_eq!(totals.get("refused").unwrap().as_f64(), Some(1.0));
    assert_eq!(totals.get("busy").unwrap().as_f64(), Some(1.0));
    assert_eq!(v.get("schema_version").unwrap().as_f64(), Some(1.0));

    // --reverse turns the known ones round; unknowns stay last.
    let (v, _) = env.json(&["sessions", "--json", "--reverse"]);
    assert_eq!(
        ids(&v)[..4],
        ["alpha-0002", "alpha-0001", "sample-locks-busy", "beta-0003"]
    );
    // Largest cost first, unpriced after, then --limit.
    // --limit counts every row: refused ones (last) too.
    let (v, _) = env.json(&["sessions", "--json", "--sort", "cost", "--limit", "1"]);
    assert_eq!(ids(&v), ["alpha-0001"]);
    assert_eq!(v.get("matched").unwrap().as_f64(), Some(5.0));
    let refused = v.get("summary").unwrap().get("refused").unwrap().as_f64();
    assert_eq!(refused, Some(1.0), "the summary still counts it");
    let (v, _) = env.json(&["sessions", "--json", "--limit", "5"]);
    assert_eq!(ids(&v).len(), 5);
    assert_eq!(ids(&v)[4], "REFUSED");
}

#[test]
fn sessions_filters_by_project_and_time() {
    let env = TestEnv::new();
    demo_home(&env);
    // The project and everything below it.
    let (v, code) = env.json(&["sessions", "--json", "--project", "/home/dev/alpha"]);
    assert_eq!(code, 0, "a project filter leaves the refused log out");
    assert_eq!(ids(&v), ["alpha-0001", "alpha-0002"]);
    let (v, _) = env.json(&["sessions", "--json", "--cwd", "/home/dev/alpha/sub"]);
    assert_eq!(ids(&v), ["alpha-0002"]);
    // Activity from the 3rd on: the session of the 5th; the one with
    // unknown times is left out and counted.
    let (v, _) = env.json(&["sessions", "--json", "--since", "2026-07-03"]);
    assert_eq!(ids(&v), ["alpha-0002"]);
    assert_eq!(v.get("leftOutUnknownTime").unwrap().as_f64(), Some(1.0));
    let (v, _) = env.json(&[
        "sessions",
        "--json",
        "--since",
        "2026-07-01",
        "--until",
        "2026-07-02",
    ]);
    assert_eq!(ids(&v), ["alpha-0001"]);
    // A span back from now: nothing of July 2026 is within the last hour.
    let (v, _) = env.json(&["sessions", "--json", "--since", "1h"]);
    assert!(ids(&v).iter().all(|i| i != "alpha-0001"));
    let (v, code) = env.json(&["sessions", "--json", "--busy"]);
    assert_eq!((ids(&v), code), (vec!["sample-locks-busy".to_string()], 0));
    let out = env
        .dsh()
        .args(["sessions", "--since", "last tuesday"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn sessions_csv_and_table() {
    let env = TestEnv::new();
    demo_home(&env);
    let out = env.dsh().args(["sessions", "--csv"]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("file,session,project,title,started,"),
        "{text}"
    );
    assert_eq!(lines.len(), 6, "a header and five rows: {text}");
    assert!(text.contains(",busy,"));
    let out = env.dsh().args(["sessions"]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("unknown"), "{text}");
    assert!(text.contains("4 session(s)"), "{text}");
    assert!(
        text.contains("refused refused-0005 (reason on stderr)"),
        "{text}"
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("refused-0005/session.jsonl: line 13: corrupt session log"),
        "{err}"
    );
    assert!(text.contains("busy"), "{text}");
    let both = env
        .dsh()
        .args(["sessions", "--csv", "--json"])
        .output()
        .unwrap();
    assert_eq!(both.status.code(), Some(2));
}

#[test]
fn an_empty_or_missing_home() {
    let env = TestEnv::new();
    let out = env.dsh().args(["sessions"]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "no home: the one-line error every home command gives"
    );
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
    assert!(out.stdout.is_empty());
    // Nor is a home, directory or log that is not there a table.
    let gone = env.home().join("nowhere");
    let out = env.dsh().arg("sessions").arg(&gone).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
    std::fs::create_dir_all(env.dsh_home().join("sessions")).unwrap();
    let (v, code) = env.json(&["sessions", "--json"]);
    assert_eq!(code, 0);
    assert_eq!(ids(&v).len(), 0);
}

/// `dsh ARGS` in a pseudo-terminal of `cols` columns with `DSH_HOME` set.
pub fn in_terminal(cols: u16, home: &Path, args: &[&str]) -> Option<String> {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("SKIPPED pseudo-terminal test: `script` (util-linux) is not installed");
        return None;
    }
    let bin = assert_cmd::cargo::cargo_bin("dsh");
    let quoted: Vec<String> = std::iter::once(bin.display().to_string())
        .chain(args.iter().map(|a| a.to_string()))
        .map(|a| format!("'{}'", a.replace('\'', r"'\''")))
        .collect();
    let cmd = format!("stty cols {cols} rows 50; {}", quoted.join(" "));
    let pinned = tempfile::tempdir().unwrap();
    let out = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .env_remove("COLUMNS")
        .env_remove("CLICOLOR_FORCE")
        .env("NO_COLOR", "1")
        .env("TERM", "xterm-256color")
        .env("DSH_PAGER", "cat")
        .env("HOME", pinned.path())
        .env("XDG_CONFIG_HOME", pinned.path().join(".config"))
        .env("DSH_HOME", home)
        .output()
        .unwrap();
    Some(String::from_utf8_lossy(&out.stdout).replace('\r', ""))
}

pub fn widest(text: &str) -> usize {
    text.lines()
        .map(unicode_width::UnicodeWidthStr::width)
        .max()
        .unwrap_or(0)
}

#[test]
fn sessions_fit_80_columns_and_use_200() {
    let env = TestEnv::new();
    let home = demo_home(&env);
    let Some(narrow) = in_terminal(80, &home, &["sessions"]) else {
        return;
    };
    // The refusal's reason is on stderr, whole (the terminal wraps it).
    let (errors, narrow): (Vec<&str>, Vec<&str>) =
        narrow.lines().partition(|l| l.starts_with("dsh: error:"));
    assert!(errors[0].contains("seq gap"), "{errors:?}");
    let narrow = narrow.join("\n");
    assert!(widest(&narrow) <= 80, "{narrow}");
    assert!(
        narrow.contains("left out at 80 columns: project, started"),
        "the columns left out are named: {narrow}"
    );
    assert!(
        narrow.contains("activity") && narrow.contains("cost $"),
        "{narrow}"
    );
    assert_eq!(
        narrow.lines().filter(|l| l.starts_with('│')).count(),
        7,
        "one line per row (header, five sessions, totals): {narrow}"
    );
    let wide = in_terminal(200, &home, &["sessions"]).unwrap();
    assert!(!wide.contains("left out at"), "{wide}");
    assert!(widest(&wide) <= 200, "{wide}");
    assert!(widest(&wide) > 80, "{wide}");
    assert!(
        wide.contains("events") && wide.contains("project"),
        "{wide}"
    );
}

#[test]
fn a_project_named_through_a_symlink_matches_its_recorded_cwd() {
    let env = TestEnv::new();
    let dirs = tempfile::tempdir().unwrap();
    let real = std::fs::canonicalize(dirs.path()).unwrap().join("real");
    std::fs::create_dir_all(&real).unwrap();
    let link = dirs.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let cwd = real.to_str().unwrap();
    let req = (JUL1, "p", "m", r#"{"inputTokens":1,"outputTokens":1}"#);
    put(
        &env.dsh_home(),
        cwd,
        "linked",
        &authored_log("linked", cwd, JUL1, "hi", &[req]),
    );
    let (v, _) = env.json(&["sessions", "--json", "--project", link.to_str().unwrap()]);
    assert_eq!(ids(&v), ["linked"]);
    let (v, _) = env.json(&["usage", "--json", "--cwd", link.to_str().unwrap()]);
    assert_eq!(
        v.get("totals").unwrap().get("requests").unwrap().as_f64(),
        Some(1.0)
    );
}

/// The last activity is the latest time of any stored event, chunks of
/// packed rows included: a session whose latest time is inside a row (its
/// clock jumped, or the process stopped mid-stream) has it there, and a row
/// whose times go back counts its latest, not its last.
#[test]
fn the_last_activity_counts_the_times_inside_packed_rows() {
    let base = std::fs::read_to_string(sample("coding-session.jsonl")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    // The last text row: its last chunk a day later, or its middle one.
    let at = base.rfind("{\"type\":\"text-chunks\"").unwrap();
    let end = at + base[at..].find('\n').unwrap();
    let row: serde_json::Value = serde_json::from_str(&base[at..end]).unwrap();
    let n = row["data"]["dt"].as_array().unwrap().len();
    assert!(n >= 2, "the row has three chunks or more");
    let time0 = row["time0"].as_i64().unwrap();
    for (case, dt) in [
        ("last", {
            let mut dt = vec![1i64; n];
            dt[n - 1] = DAY;
            dt
        }),
        ("middle", {
            let mut dt = vec![1i64; n];
            dt[0] = DAY;
            dt[1] = -DAY;
            dt
        }),
    ] {
        let mut edited = row.clone();
        edited["data"]["dt"] = serde_json::json!(dt);
        let packed = format!("{}{}{}", &base[..at], edited, &base[end..]);
        let mut scans = Vec::new();
        for (form, text) in [
            ("packed", packed.clone()),
            ("lines", rows_one_by_one(&packed)),
        ] {
            let p = dir.path().join(format!("{case}-{form}.jsonl"));
            std::fs::write(&p, text).unwrap();
            let s = dsh::sessions::scan(
                &dsh::LogSource::File(p),
                &dsh::sessions::ScanOptions::default(),
            )
            .unwrap();
            scans.push(s.last_activity);
        }
        assert_eq!(scans[0], scans[1], "{case}: packed and one by one");
        let latest = dt
            .iter()
            .scan(time0, |t, d| {
                *t += d;
                Some(*t)
            })
            .max();
        assert!(latest.unwrap() > time0 + DAY - 1, "{case}");
        assert_eq!(scans[0], latest, "{case}");
    }
}
