//! Reliability trials, ignored by default (they take minutes):
//!
//! ```sh
//! DSH_TRIALS=20 cargo test --release --test it trials:: -- --ignored --nocapture --test-threads 1
//! ```
//!
//! Concurrent writers (prune × prune, compact × compact, prune × compact,
//! plain and Zstandard, with and without `--wait`), kill -9 at random
//! moments of prune and compact, a full disk at every few hundred bytes of
//! free space (needs root for a small tmpfs), and a log replaced or deleted
//! while a writer waits. Every trial checks that the original bytes are
//! still the file's prefix, that nothing panicked or hung, and that the log
//! loads with no damage a writer left (or, after a kill, that `dsh repair`
//! and `dsh locks --release` lead back to a log every writer accepts). Each
//! prints one line of figures.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::compact::{KEY, SUMMARY};
use crate::provider::{Reply, Server, deepseek_sse};
use crate::support::{dsh_process, sample};

fn trials() -> u64 {
    std::env::var("DSH_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
}

/// A tiny deterministic generator.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n.max(1)
    }
}

#[derive(Default, Debug)]
struct Tally {
    trials: u64,
    lost: u64,
    panics: u64,
    hangs: u64,
    damaged: u64,
    unrecoverable: u64,
    refused_busy: u64,
}

impl Tally {
    fn line(&self, what: &str) -> String {
        format!(
            "{what}: {} trials, {} with original bytes lost, {} panics/internal errors, {} hangs, {} left damaged, {} not recoverable, {} refused busy (exit 4)",
            self.trials,
            self.lost,
            self.panics,
            self.hangs,
            self.damaged,
            self.unrecoverable,
            self.refused_busy
        )
    }

    fn assert_sound(&self, what: &str) {
        println!("{}", self.line(what));
        assert_eq!(
            (self.lost, self.panics, self.hangs, self.unrecoverable),
            (0, 0, 0, 0),
            "{}",
            self.line(what)
        );
    }
}

/// Wait for `child` at most a minute: (exit code, stderr), or `None` on a
/// hang (then it is killed).
fn finish(mut child: Child) -> Option<(i32, String)> {
    let t0 = Instant::now();
    loop {
        if let Ok(Some(_)) = child.try_wait() {
            let out = child.wait_with_output().unwrap();
            return Some((
                out.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            ));
        }
        if t0.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn panicked(code: i32, stderr: &str) -> bool {
    code == 70 || code == 101 || stderr.contains("internal error") || stderr.contains("panicked")
}

fn spawn(args: &[String], log: &Path) -> Child {
    dsh_process()
        .env("DEEPSEEK_API_KEY", KEY)
        .args(args)
        .arg(log)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn run(args: &[&str], log: &Path) -> (i32, String) {
    let out = dsh_process()
        .env("DEEPSEEK_API_KEY", KEY)
        .args(args)
        .arg(log)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

/// A fresh copy of `prune-closed.jsonl` (plain, or packed), in `dir`.
fn fresh(dir: &Path, zstd: bool) -> PathBuf {
    let plain = dir.join("s.jsonl");
    std::fs::copy(sample("prune-closed.jsonl"), &plain).unwrap();
    if !zstd {
        return plain;
    }
    let packed = dir.join("s.jsonl.zstd");
    let (code, out) = run(&["pack", "-q", "-o", packed.to_str().unwrap()], &plain);
    assert_eq!(code, 0, "{out}");
    std::fs::remove_file(&plain).unwrap();
    packed
}

/// Whether the log loads with no damaged end and `verify` finds no error
/// but V-SESS-5, which `prune --allow-closed-turn` is documented to cause
/// (its pairs land outside a turn).
fn sound(log: &Path) -> Result<(), String> {
    let out = dsh_process()
        .args(["verify", "--json", "-q"])
        .arg(log)
        .output()
        .unwrap();
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("verify printed no JSON ({e})"))?;
    if v["verdict"] == "refused" {
        return Err(format!("refused: {v}"));
    }
    let bad: Vec<&serde_json::Value> = v["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| {
            f["severity"] == "error" && f["check"] != "V-SESS-5" || f["check"] == "V-TAIL-1"
        })
        .collect();
    if !bad.is_empty() {
        return Err(format!("verify: {bad:?}"));
    }
    Ok(())
}

fn writer_args(cmd: &str, base: &str, wait: bool) -> Vec<String> {
    let mut a: Vec<String> = match cmd {
        "prune" => vec!["prune", "-q", "--allow-closed-turn"],
        _ => vec!["compact", "-q", "--retry-delay", "0", "--base-url", base],
    }
    .into_iter()
    .map(String::from)
    .collect();
    if wait {
        a.extend(["--wait".into(), "30".into()]);
    }
    a
}

#[test]
#[ignore]
fn trials_concurrent_writers() {
    let mut t = Tally::default();
    for (a, b) in [
        ("prune", "prune"),
        ("compact", "compact"),
        ("prune", "compact"),
    ] {
        for zstd in [false, true] {
            for wait in [false, true] {
                for _ in 0..trials() {
                    t.trials += 1;
                    let dir = tempfile::tempdir().unwrap();
                    let log = fresh(dir.path(), zstd);
                    let before = std::fs::read(&log).unwrap();
                    let server = Server::start(vec![
                        Reply::Sse(deepseek_sse(SUMMARY)),
                        Reply::Sse(deepseek_sse(SUMMARY)),
                    ]);
                    let c1 = spawn(&writer_args(a, &server.base, wait), &log);
                    let c2 = spawn(&writer_args(b, &server.base, wait), &log);
                    for r in [finish(c1), finish(c2)] {
                        match r {
                            None => t.hangs += 1,
                            Some((code, err)) => {
                                if panicked(code, &err) {
                                    t.panics += 1;
                                }
                                if code == 4 {
                                    t.refused_busy += 1;
                                }
                            }
                        }
                    }
                    let after = std::fs::read(&log).unwrap();
                    if after.len() < before.len() || after[..before.len()] != before[..] {
                        t.lost += 1;
                    }
                    if let Err(e) = sound(&log) {
                        eprintln!("{a} × {b} zstd={zstd} wait={wait}: {e}");
                        t.unrecoverable += 1;
                    }
                }
            }
        }
    }
    t.assert_sound("concurrent writers");
}

/// After a kill: repair a damaged end, release a held lock, then a writer
/// must succeed and `verify` must be clean of errors.
fn recover(log: &Path, t: &mut Tally) {
    let (_, out) = run(&["locks", "-q"], log);
    if out.contains("damaged end:") {
        t.damaged += 1;
        let (code, out) = run(&["repair", "--force"], log);
        if code != 0 {
            eprintln!("repair: {out}");
            t.unrecoverable += 1;
            return;
        }
    }
    let (code, out) = run(&["locks", "--release", "--yes", "-q"], log);
    if code != 0 {
        eprintln!("locks --release: {out}");
        t.unrecoverable += 1;
        return;
    }
    let (code, out) = run(&["prune", "-q", "--allow-closed-turn"], log);
    if code != 0 {
        eprintln!("prune after recovery: {out}");
        t.unrecoverable += 1;
        return;
    }
    if let Err(e) = sound(log) {
        eprintln!("after recovery: {e}");
        t.unrecoverable += 1;
    }
}

#[test]
#[ignore]
fn trials_kill_9() {
    let mut t = Tally::default();
    let mut rng = Lcg(0x9e3779b97f4a7c15);
    for cmd in ["prune", "compact"] {
        for zstd in [false, true] {
            for _ in 0..trials() * 4 {
                t.trials += 1;
                let dir = tempfile::tempdir().unwrap();
                let log = fresh(dir.path(), zstd);
                let before = std::fs::read(&log).unwrap();
                let server = Server::start(vec![Reply::Sse(deepseek_sse(SUMMARY))]);
                let mut args = writer_args(cmd, &server.base, false);
                if cmd == "prune" {
                    args.extend(["--debug-write-pause-ms".into(), "15".into()]);
                }
                let mut child = spawn(&args, &log);
                std::thread::sleep(Duration::from_millis(rng.next(250)));
                let _ = child.kill(); // SIGKILL
                match finish(child) {
                    None => t.hangs += 1,
                    Some((code, err)) if panicked(code, &err) && code != -1 => t.panics += 1,
                    Some(_) => {}
                }
                let after = std::fs::read(&log).unwrap();
                if after.len() < before.len() || after[..before.len()] != before[..] {
                    t.lost += 1;
                }
                recover(&log, &mut t);
            }
        }
    }
    t.assert_sound("kill -9 during prune and compact");
}

/// A tmpfs of `size` bytes mounted at a temporary directory (root only).
struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    fn mount(size: u64) -> Option<Tmpfs> {
        let d = tempfile::tempdir().unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}")])
            .arg("tmpfs")
            .arg(d.path())
            .output()
            .is_ok_and(|o| o.status.success());
        ok.then_some(Tmpfs(d))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).output();
    }
}

#[test]
#[ignore]
fn trials_full_disk() {
    let mut t = Tally::default();
    for zstd in [false, true] {
        for k in 0..trials() * 4 {
            let Some(fs) = Tmpfs::mount(256 << 10) else {
                println!("full disk: SKIPPED (cannot mount a tmpfs: not root?)");
                return;
            };
            t.trials += 1;
            let log = fresh(fs.0.path(), zstd);
            let before = std::fs::read(&log).unwrap();
            // Leave k × 512 bytes free (or as close as tmpfs pages allow).
            let free = {
                let out = Command::new("df")
                    .args(["-B1", "--output=avail"])
                    .arg(fs.0.path())
                    .output()
                    .unwrap();
                String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .nth(1)
                    .unwrap()
                    .trim()
                    .parse::<u64>()
                    .unwrap()
            };
            let fill = free.saturating_sub(k * 512);
            let _ = std::fs::write(fs.0.path().join("fill"), vec![1u8; fill as usize]);
            match finish(spawn(&writer_args("prune", "", false), &log)) {
                None => t.hangs += 1,
                Some((code, err)) => {
                    if code != 0 && code != 70 || err.contains("panicked") {
                        eprintln!("full disk, {k}: exit {code}: {err}");
                        t.panics += 1;
                    }
                }
            }
            let after = std::fs::read(&log).unwrap();
            if after.len() < before.len() || after[..before.len()] != before[..] {
                t.lost += 1;
            }
            let _ = std::fs::remove_file(fs.0.path().join("fill"));
            if let Err(e) = sound(&log) {
                eprintln!("full disk, {k} (zstd={zstd}): {e}");
                t.unrecoverable += 1;
            }
        }
    }
    t.assert_sound("full disk during prune");
}

#[test]
#[ignore]
fn trials_replaced_while_waiting() {
    let mut t = Tally::default();
    for delete in [false, true] {
        for zstd in [false, true] {
            for _ in 0..trials() {
                t.trials += 1;
                let dir = tempfile::tempdir().unwrap();
                let log = fresh(dir.path(), zstd);
                let go = Arc::new(AtomicBool::new(false));
                let server = Server::start(vec![Reply::Gated(go.clone(), deepseek_sse(SUMMARY))]);
                let child = spawn(&writer_args("compact", &server.base, false), &log);
                let t0 = Instant::now();
                while server.requests().is_empty() && t0.elapsed() < Duration::from_secs(30) {
                    std::thread::sleep(Duration::from_millis(5));
                }
                let copy = std::fs::read(&log).unwrap();
                if delete {
                    std::fs::remove_file(&log).unwrap();
                } else {
                    let tmp = log.with_extension("saving");
                    std::fs::write(&tmp, &copy).unwrap();
                    std::fs::rename(&tmp, &log).unwrap();
                }
                go.store(true, Ordering::SeqCst);
                match finish(child) {
                    None => t.hangs += 1,
                    Some((code, err)) => {
                        if panicked(code, &err) {
                            t.panics += 1;
                        }
                        if code == 4 {
                            t.refused_busy += 1;
                        } else {
                            eprintln!("replaced (delete={delete}): exit {code}: {err}");
                            t.unrecoverable += 1;
                        }
                    }
                }
                let saved = std::fs::read_dir(dir.path()).unwrap().flatten().any(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .contains(".unsaved-summary-")
                });
                if !saved {
                    t.lost += 1;
                }
                if !delete && std::fs::read(&log).unwrap() != copy {
                    t.lost += 1;
                }
            }
        }
    }
    t.assert_sound("log replaced or deleted while compact waits for the model");
}
