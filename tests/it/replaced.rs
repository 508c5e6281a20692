//! A log replaced (by rename, as editors and sync tools save) or deleted
//! while a writer waits never gets a false success: nothing is written,
//! the exit is 4 with what happened, and a summary already paid for is kept.

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value as J;

use crate::compact::{KEY, SUMMARY, closed_log, write_log};
use crate::provider::{Reply, Server, deepseek_sse};
use crate::support::{dsh_process, sample};

#[derive(Clone, Copy, Debug)]
enum Swap {
    /// Copy the log, then move the copy over it.
    Rename,
    /// Remove the log.
    Delete,
}

fn swap(log: &Path, how: Swap) {
    match how {
        Swap::Rename => {
            let tmp = log.with_extension("saving");
            std::fs::copy(log, &tmp).unwrap();
            std::fs::rename(&tmp, log).unwrap();
        }
        Swap::Delete => std::fs::remove_file(log).unwrap(),
    }
}

fn wait_until(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn assert_refused(out: &std::process::Output, how: Swap) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(4), "{how:?}: {stderr}");
    let said = match how {
        Swap::Rename => "was replaced",
        Swap::Delete => "deleted",
    };
    assert!(stderr.contains(said), "{how:?}: {stderr}");
    assert!(stderr.contains("nothing was written"), "{stderr}");
    stderr
}

#[test]
fn compact_never_appends_to_a_log_replaced_or_deleted_while_the_model_works() {
    for how in [Swap::Rename, Swap::Delete] {
        let dir = tempfile::tempdir().unwrap();
        let log = write_log(dir.path(), "s.jsonl", &closed_log());
        let go = Arc::new(AtomicBool::new(false));
        let server = Server::start(vec![Reply::Gated(go.clone(), deepseek_sse(SUMMARY))]);
        let child = dsh_process()
            .env("DEEPSEEK_API_KEY", KEY)
            .args([
                "compact",
                "--json",
                "--retry-delay",
                "0",
                "--base-url",
                &server.base,
            ])
            .arg(&log)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // compaction/start is written before the request is sent.
        wait_until("the summary request", || !server.requests().is_empty());
        let before = std::fs::read(&log).unwrap();
        swap(&log, how);
        go.store(true, Ordering::SeqCst);
        let out = child.wait_with_output().unwrap();
        assert_refused(&out, how);
        let v: J = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["error"]["kind"], "busy", "{v}");
        // The summary paid for is kept beside the log.
        let u = &v["unsavedSummary"];
        assert!(
            u["text"].as_str().unwrap().contains("Primary Request"),
            "{v}"
        );
        let saved = PathBuf::from(u["savedTo"].as_str().expect("saved beside the log"));
        assert_eq!(saved.parent(), log.parent());
        let kept = std::fs::read_to_string(&saved).unwrap();
        let types: Vec<String> = kept
            .lines()
            .map(|l| {
                serde_json::from_str::<J>(l).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(
            types,
            ["compaction/summary", "user/message", "compaction/end"]
        );
        match how {
            // The file now at the path is the copy, untouched.
            Swap::Rename => assert_eq!(std::fs::read(&log).unwrap(), before),
            Swap::Delete => assert!(!log.exists()),
        }
        server.join();
    }
}

/// Hold the writer lock on `log` (as another dsh writer would).
fn hold_lock(log: &Path) -> std::fs::File {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(log)
        .unwrap();
    // SAFETY: flock on a descriptor we own.
    assert_eq!(unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) }, 0);
    f
}

/// Whether process `pid` has `log` open.
/// Whether `pid` holds `log` open for reading and writing: the writer's
/// own descriptor, the one it locks (a read-only open, such as sniffing the
/// container, comes earlier and would let the test swap the file before
/// the writer opened the one it locks).
fn has_open(pid: u32, log: &Path) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten().any(|fd| {
        let writable = || {
            let info = std::fs::read_to_string(format!(
                "/proc/{pid}/fdinfo/{}",
                fd.file_name().to_string_lossy()
            ))
            .unwrap_or_default();
            info.lines()
                .find_map(|l| l.strip_prefix("flags:"))
                .and_then(|f| u32::from_str_radix(f.trim(), 8).ok())
                .is_some_and(|flags| flags & 0o3 == 0o2)
        };
        std::fs::read_link(fd.path()).is_ok_and(|t| t == log) && writable()
    })
}

/// A writer waiting for the lock (`--wait`) while the log is replaced or
/// deleted: when it gets the lock, the path names another file or none.
fn writer_waiting(args: &[&str], sample_name: &str, how: Swap) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("s.jsonl");
    std::fs::copy(sample(sample_name), &log).unwrap();
    let log = log.canonicalize().unwrap();
    let held = hold_lock(&log);
    let child = dsh_process()
        .args(args)
        .args(["--wait", "30"])
        .arg(&log)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    wait_until("dsh to open the log", || has_open(pid, &log));
    let before = std::fs::read(&log).unwrap();
    swap(&log, how);
    drop(held);
    let out = child.wait_with_output().unwrap();
    assert_refused(&out, how);
    match how {
        Swap::Rename => assert_eq!(std::fs::read(&log).unwrap(), before),
        Swap::Delete => assert!(!log.exists()),
    }
}

#[test]
fn prune_and_locks_release_never_write_to_a_log_replaced_while_they_wait() {
    for how in [Swap::Rename, Swap::Delete] {
        writer_waiting(&["prune"], "prune-open-turn.jsonl", how);
        writer_waiting(&["locks", "--release", "--yes"], "locks-busy.jsonl", how);
    }
}
