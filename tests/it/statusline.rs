//! `dsh statusline`: one line for a prompt, its figures the library's own
//! (`measure`, `sessions`), today's cost over the home, the cache that
//! makes it fast (read, cached, followed), templates, and what it does
//! outside a project. In pseudo-terminals at 80 and 200 columns.

use std::io::Write;
use std::path::PathBuf;

use dsh::json::Value;

use crate::pty;
use crate::sessions::{DAY, HOUR, authored_log, put};
use crate::support::{TestEnv, sample};

const DS: &str = "deepseek-official";
const FLASH: &str = "deepseek-v4-flash";

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// A home with a project of two sessions with requests today (UTC), and
/// one elsewhere whose requests were two days ago.
struct Home {
    env: TestEnv,
    dir: PathBuf,
    newest: PathBuf,
}

fn home() -> Home {
    let env = TestEnv::new();
    let dir = std::fs::canonicalize(env.home()).unwrap().join("proj");
    std::fs::create_dir_all(&dir).unwrap();
    let cwd = dir.to_str().unwrap();
    let today = now_ms() - now_ms() % DAY;
    let usage = r#"{"inputTokens":200000,"outputTokens":1000,"cacheReadTokens":50000}"#;
    let home = env.dsh_home();
    put(
        &home,
        cwd,
        "first-0001",
        &authored_log(
            "first-0001",
            cwd,
            today,
            "a",
            &[(today + 1000, DS, FLASH, usage)],
        ),
    );
    let newest = put(
        &home,
        cwd,
        "second-0002",
        &authored_log(
            "second-0002",
            cwd,
            today,
            "b",
            &[
                (today + 2000, DS, FLASH, usage),
                (today + 3000, DS, FLASH, usage),
            ],
        ),
    );
    let old = today - 2 * DAY;
    put(
        &home,
        "/elsewhere",
        "old-0003",
        &authored_log(
            "old-0003",
            "/elsewhere",
            old,
            "c",
            &[(old + HOUR, DS, FLASH, usage)],
        ),
    );
    Home { env, dir, newest }
}

impl Home {
    fn json(&self, args: &[&str]) -> Value<'static> {
        let out = self
            .env
            .dsh()
            .current_dir(&self.dir)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{:?}: {}",
            args,
            String::from_utf8_lossy(&out.stderr)
        );
        Value::parse(String::from_utf8(out.stdout).unwrap().trim())
            .unwrap()
            .into_owned()
    }
}

fn num(v: &Value<'_>, path: &[&str]) -> f64 {
    let mut v = v;
    for k in path {
        v = v.get(k).unwrap_or_else(|| panic!("no {k}"));
    }
    v.as_f64().unwrap()
}

#[test]
fn the_line_fits_the_terminal_and_says_pressure_next_compaction_and_costs() {
    let h = home();
    for cols in [80, 200] {
        let home_s = h.env.dsh_home();
        let Some((text, code)) = pty::run(
            cols,
            Some(&h.dir),
            &["statusline"],
            &[("DSH_HOME", home_s.to_str().unwrap())],
        ) else {
            return;
        };
        assert_eq!(code, 0, "{text}");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1, "one line, no note: {text:?}");
        let l = lines[0];
        assert!(unicode_width::UnicodeWidthStr::width(l) <= 80, "{l}");
        for part in ["%", " to compaction", " session", " today"] {
            assert!(l.contains(part), "{part}: {l}");
        }
    }
}

#[test]
fn its_figures_are_measure_s_and_usage_s() {
    let h = home();
    let s = h.json(&["statusline", "--json"]);
    assert_eq!(
        s.get("file").unwrap().as_str().unwrap(),
        h.newest.to_str().unwrap(),
        "the newest by its last event"
    );
    let newest = h.newest.to_str().unwrap();
    let m = h.json(&["measure", "--json", newest]);
    assert_eq!(num(&s, &["tokens"]), num(&m, &["totalTokens"]));
    assert_eq!(
        num(&s, &["thresholdTokens"]),
        num(&m, &["policy", "thresholdTokens"])
    );
    assert_eq!(
        num(&s, &["toCompaction"]),
        num(&m, &["policy", "headroomTokens"])
    );
    let sessions = h.json(&["sessions", "--json", newest]);
    let cost = num(
        &sessions.get("logs").unwrap().as_arr().unwrap()[0],
        &["costUsd"],
    );
    assert_eq!(num(&s, &["costUsd"]), cost);
    // Today: every session of the home with requests today, not older ones.
    let today = h.json(&["usage", "--json", "--since", &num_date(&s)]);
    assert_eq!(
        num(&s, &["today", "costUsd"]),
        num(&today, &["totals", "costUsd"])
    );
    assert!(
        num(&s, &["today", "costUsd"]) > cost,
        "the other session of today counts"
    );
}

fn num_date(s: &Value<'_>) -> String {
    s.get("today")
        .unwrap()
        .get("date")
        .unwrap()
        .as_str()
        .unwrap()
        .into_owned()
}

#[test]
fn the_cache_answers_until_the_log_changes_and_follows_streamed_chunks() {
    let env = TestEnv::new();
    let dir = env.home().join("s");
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("session.jsonl");
    let text = std::fs::read_to_string(sample("compacted.jsonl")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let is_chunk =
        |l: &str| l.contains(r#""type":"assistant/chunk""#) || l.contains(r#"-chunks","seq0""#);
    let a = lines.iter().position(|l| is_chunk(l)).unwrap();
    let b = a + lines[a..].iter().take_while(|l| is_chunk(l)).count();
    std::fs::write(&log, lines[..a].join("\n") + "\n").unwrap();
    let run = |extra: &[&str]| -> Value<'static> {
        let out = env
            .dsh()
            .args(["statusline", "--json"])
            .args(extra)
            .arg(&log)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        Value::parse(String::from_utf8(out.stdout).unwrap().trim())
            .unwrap()
            .into_owned()
    };
    let source = |v: &Value<'_>| v.get("source").unwrap().as_str().unwrap().into_owned();
    let first = run(&[]);
    assert_eq!(source(&first), "read");
    assert_eq!(source(&run(&[])), "cached");
    assert!(env.home().join(".cache/dsh/statusline.json").is_file());
    let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    for l in &lines[a..b] {
        writeln!(f, "{l}").unwrap();
    }
    let followed = run(&[]);
    assert_eq!(source(&followed), "followed");
    assert_eq!(
        followed.get("tokens").unwrap().as_f64(),
        first.get("tokens").unwrap().as_f64()
    );
    for l in &lines[b..] {
        writeln!(f, "{l}").unwrap();
    }
    let read = run(&[]);
    assert_eq!(source(&read), "read");
    let whole = run(&["--no-cache"]);
    assert_eq!(source(&whole), "read");
    assert_eq!(
        read.get("tokens").unwrap().as_f64(),
        whole.get("tokens").unwrap().as_f64()
    );
    assert_ne!(
        read.get("tokens").unwrap().as_f64(),
        first.get("tokens").unwrap().as_f64()
    );
}

#[test]
fn templates_and_refusals() {
    let h = home();
    let out = h
        .env
        .dsh()
        .current_dir(&h.dir)
        .args([
            "statusline",
            "--format",
            "{session}|{pressure}|{left}|{{x}}|{model}",
        ])
        .output()
        .unwrap();
    let line = String::from_utf8(out.stdout).unwrap();
    let parts: Vec<&str> = line.trim().split('|').collect();
    assert_eq!(parts[0], "second-0");
    assert!(parts[1].ends_with('%'), "{line}");
    assert_eq!(parts[3], "{x}");
    assert_eq!(parts[4], FLASH);
    let bad = h
        .env
        .dsh()
        .args(["statusline", "--format", "{nope}"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("{pressure}"),
        "names the ones there are"
    );
    // Outside any project: nothing on stdout, one line on stderr, exit 3.
    let nowhere = tempfile::tempdir().unwrap();
    let out = h
        .env
        .dsh()
        .current_dir(nowhere.path())
        .arg("statusline")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(out.stdout.is_empty());
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
}
