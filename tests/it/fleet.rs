//! `dsh export --incremental`: three homes, appends and new sessions, the
//! logs read again counted, the DuckDB query pack against `dsh usage`, a
//! log rewritten before its end, and kill -9 in the middle of a run.

use std::path::{Path, PathBuf};

use serde_json::Value as J;

use crate::sessions::{DAY, HOUR, JUL1, authored_log};
use crate::support::{TestEnv, root};

const USAGE: &str =
    r#"{"inputTokens":1200,"cacheReadTokens":300,"outputTokens":80,"reasoningTokens":10}"#;

/// A session of `n` requests, one a day from `day0`, in home `home`.
fn write_session(home: &Path, project: &str, id: &str, day0: i64, n: usize) -> PathBuf {
    let reqs: Vec<(i64, &str, &str, &str)> = (0..n)
        .map(|i| {
            (
                JUL1 + (day0 + i as i64) * DAY + HOUR,
                "deepseek-official",
                "deepseek-v4-flash",
                USAGE,
            )
        })
        .collect();
    let text = authored_log(id, project, JUL1 + day0 * DAY, "a title", &reqs);
    let dir = home
        .join("sessions")
        .join(dsh::log::source::project_dir_name(Some(project)))
        .join(id);
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("session.jsonl");
    std::fs::write(&p, text).unwrap();
    p
}

/// Grow a session to `n` requests by appending only (checked).
fn grow(path: &Path, project: &str, id: &str, day0: i64, n: usize) {
    let old = std::fs::read_to_string(path).unwrap();
    let home = path.ancestors().nth(4).unwrap().to_path_buf();
    let new_path = write_session(&home, project, id, day0, n);
    let new = std::fs::read_to_string(&new_path).unwrap();
    assert!(new.starts_with(&old), "an append only");
    std::fs::write(path, &old).unwrap();
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    std::io::Write::write_all(&mut f, &new.as_bytes()[old.len()..]).unwrap();
}

fn export(env: &TestEnv, out: &Path, homes: &[(&str, &Path)]) -> J {
    let mut c = env.dsh();
    c.args(["export", "--incremental", "--json", "--out"])
        .arg(out);
    for (name, p) in homes {
        c.arg("--home-label").arg(format!("{name}={}", p.display()));
    }
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Python's `duckdb`, when importable: the query pack's file `sql` run in
/// `dir`, rows as JSON arrays. `None` (and a SKIPPED line) without it,
/// except on CI, where `.ci/run` installs it and its absence fails.
fn duckdb(dir: &Path, sql: &str) -> Option<Vec<J>> {
    let script = r#"
import duckdb, json, sys, datetime
con = duckdb.connect()
rows = con.execute(open(sys.argv[1]).read()).fetchall()
print(json.dumps([list(r) for r in rows], default=str))
"#;
    let o = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(root().join("docs/queries").join(sql))
        .current_dir(dir)
        .output();
    match o {
        Ok(o) if o.status.success() => Some(serde_json::from_slice(&o.stdout).unwrap()),
        Ok(o) if String::from_utf8_lossy(&o.stderr).contains("No module named 'duckdb'") => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI: .ci/run installs Python duckdb"
            );
            eprintln!(
                "SKIPPED the DuckDB checks: Python duckdb is not installed (pip install duckdb)"
            );
            None
        }
        Ok(o) => panic!("duckdb {sql}: {}", String::from_utf8_lossy(&o.stderr)),
        Err(e) => panic!("python3: {e}"),
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 + 1e-9 * b.abs()
}

/// The query pack's usage by day and by project equal `dsh usage --json`
/// over the same homes.
fn same_as_usage(env: &TestEnv, out: &Path, homes: &[(&str, &Path)]) -> bool {
    for (sql, flag) in [
        ("usage-by-day.sql", "--daily"),
        ("usage-by-project.sql", "--project"),
    ] {
        let Some(rows) = duckdb(out, sql) else {
            return false;
        };
        let mut c = env.dsh();
        c.args(["usage", "--json", flag]);
        for (_, p) in homes {
            c.arg(p);
        }
        let u: J = serde_json::from_slice(&c.output().unwrap().stdout).unwrap();
        let groups = u["groups"].as_array().unwrap();
        assert_eq!(rows.len(), groups.len(), "{sql}: {rows:?}");
        for (r, g) in rows.iter().zip(groups) {
            assert_eq!(r[0], g["key"], "{sql}");
            assert_eq!(r[1], g["requests"], "{sql} {r:?}");
            assert_eq!(r[2], g["summariserRequests"], "{sql}");
            for (i, k) in [
                "inputTokens",
                "cacheReadTokens",
                "cacheWriteTokens",
                "outputTokens",
                "reasoningTokens",
                "totalTokens",
            ]
            .iter()
            .enumerate()
            {
                assert_eq!(r[3 + i].as_f64(), g[k].as_f64(), "{sql} {k}");
            }
            assert!(
                close(r[9].as_f64().unwrap(), g["costUsd"].as_f64().unwrap()),
                "{sql} cost {r:?} {g}"
            );
            assert_eq!(r[10], g["pricedRequests"], "{sql}");
            let without =
                g["unpricedRequests"].as_u64().unwrap() + g["untimedRequests"].as_u64().unwrap();
            assert_eq!(r[11].as_u64(), Some(without), "{sql}");
        }
    }
    true
}

struct Fleet {
    env: TestEnv,
    homes: Vec<(String, PathBuf)>,
    out: PathBuf,
}

impl Fleet {
    fn new() -> Fleet {
        let env = TestEnv::new();
        let base = env.home().to_path_buf();
        let mut homes = Vec::new();
        for (h, name) in ["alice", "bob", "carol"].iter().enumerate() {
            let home = base.join(format!("{name}-dsh"));
            for s in 0..3 {
                let project = format!("/work/{name}/p{}", s % 2);
                write_session(
                    &home,
                    &project,
                    &format!("{name}-{s}"),
                    (h * 3 + s) as i64,
                    2 + s,
                );
            }
            homes.push((name.to_string(), home));
        }
        let out = base.join("fleet");
        Fleet { env, homes, out }
    }

    fn homes(&self) -> Vec<(&str, &Path)> {
        self.homes
            .iter()
            .map(|(n, p)| (n.as_str(), p.as_path()))
            .collect()
    }

    fn export(&self) -> J {
        export(&self.env, &self.out, &self.homes())["incremental"].clone()
    }

    fn session(&self, h: usize, s: usize) -> PathBuf {
        let (name, home) = &self.homes[h];
        let project = format!("/work/{name}/p{}", s % 2);
        home.join("sessions")
            .join(dsh::log::source::project_dir_name(Some(&project)))
            .join(format!("{name}-{s}"))
            .join("session.jsonl")
    }
}

#[test]
fn three_homes_appends_and_new_sessions_read_only_what_changed() {
    let f = Fleet::new();
    let run = f.export();
    assert_eq!(
        (run["read"].as_u64(), run["new"].as_u64()),
        (Some(9), Some(9))
    );
    assert!(f.out.join("requests").read_dir().unwrap().all(|d| {
        d.unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with("date=")
    }));
    let checked = same_as_usage(&f.env, &f.out, &f.homes());
    // Appends to two logs and a new session in the third home.
    grow(&f.session(0, 1), "/work/alice/p1", "alice-1", 1, 6);
    grow(&f.session(1, 2), "/work/bob/p0", "bob-2", 5, 7);
    write_session(&f.homes[2].1, "/work/carol/p9", "carol-new", 20, 2);
    let run = f.export();
    assert_eq!(run["read"], 3, "{run}");
    assert_eq!(
        (run["new"].as_u64(), run["grown"].as_u64()),
        (Some(1), Some(2))
    );
    assert_eq!(run["unchanged"], 7);
    if checked {
        assert!(same_as_usage(&f.env, &f.out, &f.homes()));
    }
    // Nothing changed: nothing read, no run.
    let again = f.export();
    assert_eq!(
        (again["read"].as_u64(), again["run"].as_u64()),
        (Some(0), run["run"].as_u64())
    );
    // A log rewritten before its end (same length, other bytes) is
    // re-exported whole, and said so.
    let p = f.session(2, 0);
    let text = std::fs::read_to_string(&p)
        .unwrap()
        .replace("\"done 1\"", "\"DONE 1\"");
    std::fs::write(&p, text).unwrap();
    let run = f.export();
    assert_eq!(run["read"], 1);
    assert!(
        run["rewritten"][0]["log"]
            .as_str()
            .unwrap()
            .ends_with("carol-0/session.jsonl")
    );
    assert_eq!(run["rewritten"][0]["why"], "changed before its old end");
    if checked {
        assert!(same_as_usage(&f.env, &f.out, &f.homes()));
    }
    // A log that shrank too.
    let p = f.session(1, 2);
    let short = authored_log(
        "bob-2",
        "/work/bob/p0",
        JUL1 + 5 * DAY,
        "a title",
        &[(
            JUL1 + 5 * DAY,
            "deepseek-official",
            "deepseek-v4-flash",
            USAGE,
        )],
    );
    std::fs::write(&p, short).unwrap();
    let run = f.export();
    assert!(
        run["rewritten"][0]["why"]
            .as_str()
            .unwrap()
            .starts_with("shrank"),
        "{run}"
    );
    if checked {
        assert!(same_as_usage(&f.env, &f.out, &f.homes()));
    }
}

#[test]
fn every_row_has_its_home_log_and_key() {
    let f = Fleet::new();
    f.export();
    let Some(rows) = duckdb(&f.out, "health-findings.sql") else {
        return;
    };
    let _ = rows;
    let script = r#"
import duckdb, json
con = duckdb.connect()
out = {}
for t in ["sessions", "requests", "compactions", "prunes", "locks", "findings"]:
    try:
        r = con.execute(f"SELECT count(*), count(DISTINCT key), count(*) FILTER (WHERE home IS NULL OR log IS NULL) FROM read_parquet('{t}/*/*.parquet', hive_partitioning = true)").fetchone()
    except duckdb.IOException:
        r = (0, 0, 0)
    out[t] = list(r)
orphans = con.execute("SELECT count(*) FROM read_parquet('requests/*/*.parquet', hive_partitioning = true) r ANTI JOIN read_parquet('sessions/*/*.parquet', hive_partitioning = true) s ON r.session_key = s.key").fetchone()[0]
out["orphans"] = orphans
print(json.dumps(out))
"#;
    let o = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .current_dir(&f.out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: J = serde_json::from_slice(&o.stdout).unwrap();
    for t in ["sessions", "requests"] {
        assert!(v[t][0].as_u64().unwrap() > 0, "{v}");
        assert_eq!(v[t][0], v[t][1], "{t}: keys are unique");
        assert_eq!(v[t][2], 0, "{t}: home and log everywhere");
    }
    assert_eq!(v["sessions"][0], 9);
    assert_eq!(v["orphans"], 0, "every request joins its session");
}

#[test]
fn kill_9_during_an_export_leaves_it_readable_and_the_next_run_completes_it() {
    let f = Fleet::new();
    f.export();
    let bin = assert_cmd::cargo::cargo_bin("dsh");
    for (i, delay) in [0u64, 5, 15, 30, 60, 120].iter().enumerate() {
        grow(
            &f.session(i % 3, 2),
            &format!("/work/{}/p0", f.homes[i % 3].0),
            &format!("{}-2", f.homes[i % 3].0),
            (i % 3 * 3 + 2) as i64,
            5 + i,
        );
        write_session(
            &f.homes[i % 3].1,
            "/work/kill",
            &format!("k{i}"),
            30 + i as i64,
            3,
        );
        let mut c = std::process::Command::new(&bin);
        c.env("HOME", f.env.home()).env_remove("DSH_HOME");
        c.args(["export", "--incremental", "-q", "--out"])
            .arg(&f.out);
        for (n, p) in f.homes() {
            c.arg("--home-label").arg(format!("{n}={}", p.display()));
        }
        let mut child = c.spawn().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(*delay));
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        // Whatever was left is readable: every query of the pack runs.
        for sql in [
            "usage-by-day.sql",
            "usage-by-project.sql",
            "costliest-compactions.sql",
            "health-findings.sql",
        ] {
            if duckdb(&f.out, sql).is_none() {
                break;
            }
        }
    }
    let run = f.export();
    assert!(run["run"].as_u64().unwrap() >= 2, "{run}");
    // Completed: exactly what `dsh usage` says, and a further run reads
    // nothing.
    same_as_usage(&f.env, &f.out, &f.homes());
    assert_eq!(f.export()["read"], 0);
    // No staging left behind.
    let left: Vec<String> = std::fs::read_dir(f.out.join("_dsh"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("staging"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
