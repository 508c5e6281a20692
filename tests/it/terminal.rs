//! Everyday terminal use: pipes that close early, terminal width, color,
//! lookups by working directory and id prefix.

use std::process::{Command, Stdio};

use crate::support::{dsh, sample};

/// Run dsh with its stdout a pipe whose reader is gone before dsh writes
/// (as `dsh … | head -0` would), and return (exit code, stderr).
fn closed_pipe(args: &[&str]) -> (i32, String) {
    let bin = assert_cmd::cargo::cargo_bin("dsh");
    let mut child = Command::new(bin)
        .args(args)
        .env_remove("DSH_HOME")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_closed_pipe_ends_every_reader_quietly_with_its_own_status() {
    let log = sample("coding-session.jsonl");
    let log = log.to_str().unwrap();
    let busy = sample("locks-busy.jsonl");
    let cases: &[&[&str]] = &[
        &["measure", log],
        &["measure", "--nodes", log],
        &["measure", "--json", log],
        &["surface", log],
        &["surface", "--json", log],
        &["header", log],
        &["load", log],
        &["messages", log],
        &["messages", "--json", log],
        &["events", log],
        &["verify", log],
        &["locks", log],
        &["locks", busy.to_str().unwrap()],
        &["prune", "--dry-run", "--allow-closed-turn", log],
        &["completions", "bash"],
    ];
    for args in cases {
        let whole = dsh().args(*args).output().unwrap();
        let (code, err) = closed_pipe(args);
        assert_eq!(
            Some(code),
            whole.status.code(),
            "`dsh {}` into a closed pipe: {err}",
            args.join(" ")
        );
        assert!(
            !err.contains("internal error") && !err.contains("Broken pipe"),
            "`dsh {}`: {err}",
            args.join(" ")
        );
    }
}
