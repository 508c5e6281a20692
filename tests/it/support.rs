//! Shared helpers for the integration tests.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use dsh::json::Value;

/// The crate root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A bundled sample.
pub fn sample(name: &str) -> PathBuf {
    root().join("samples").join(name)
}

/// `../shared` beside the checkout, when it is there. Prints why a test
/// skips when it is not, so a skip is never silent.
pub fn shared(test: &str) -> Option<PathBuf> {
    let p = root().join("../shared");
    if p.join("corpus").is_dir() || p.join("spec").is_dir() {
        Some(p)
    } else {
        eprintln!(
            "SKIPPED {test}: ../shared (the conformance corpus and spec) is not beside the checkout"
        );
        None
    }
}

/// Variables that would let the machine's environment into a test: the
/// user's dsh home and config, provider keys and endpoints, proxies, and
/// terminal settings. [`TestEnv`] removes them all.
const LEAKY_VARS: &[&str] = &[
    "DSH_HOME",
    "DSH_CONFIG",
    "DSH_PAGER",
    "PAGER",
    "COLUMNS",
    "LINES",
    "TZ",
    "TZDIR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "DEEPSEEK_API_KEY",
    "DEEPSEEK_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
];

/// Corpus logs on which dsh departs from the reference on purpose, with
/// the reason: the reference (rc.8) reads only format v0; dsh reads every
/// generation DSH writes (v0–v3, docs/generations.md). dsh must *read*
/// these, where the reference refuses them.
pub const READS_WHERE_THE_REFERENCE_REFUSES: &[(&str, &str)] = &[(
    "edge-version-1",
    "a format-v1 log: rc.8 reads only v0, dsh reads v0–v3",
)];

/// Whether dsh reads this corpus log although the reference refuses it
/// ([`READS_WHERE_THE_REFERENCE_REFUSES`]).
pub fn read_where_the_reference_refuses(name: &str) -> bool {
    READS_WHERE_THE_REFERENCE_REFUSES
        .iter()
        .any(|(n, _)| *n == name)
}

/// A hermetic environment for running `dsh`: an empty `HOME` of its own
/// (so `~/.dsh` and `~/.config/dsh` do not exist), `XDG_CONFIG_HOME` inside
/// it, `NO_COLOR`, and none of [`LEAKY_VARS`]. Every integration test runs
/// the binary through one of these (via [`dsh`] or [`TestEnv::dsh`]).
pub struct TestEnv {
    home: tempfile::TempDir,
}

impl TestEnv {
    /// A fresh, empty environment.
    pub fn new() -> Self {
        TestEnv {
            home: tempfile::tempdir().unwrap(),
        }
    }

    /// The pinned `HOME`.
    pub fn home(&self) -> &Path {
        self.home.path()
    }

    /// Where `~/.dsh` would be (not created).
    pub fn dsh_home(&self) -> PathBuf {
        self.home().join(".dsh")
    }

    /// The `dsh` binary under test, in this environment.
    pub fn dsh(&self) -> Command {
        let mut c = Command::cargo_bin("dsh").unwrap();
        pin(&mut c, self.home());
        c
    }
}

impl Default for TestEnv {
    fn default() -> Self {
        Self::new()
    }
}

fn pin(c: &mut Command, home: &Path) {
    for var in LEAKY_VARS {
        c.env_remove(var);
    }
    c.env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("NO_COLOR", "1")
        // Dates show in the local zone: pin it.
        .env("TZ", "UTC");
}

fn pin_process(c: &mut std::process::Command, home: &Path) {
    for var in LEAKY_VARS {
        c.env_remove(var);
    }
    c.env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("NO_COLOR", "1")
        // Dates show in the local zone: pin it.
        .env("TZ", "UTC");
}

fn shared_env() -> &'static TestEnv {
    static SHARED: std::sync::OnceLock<TestEnv> = std::sync::OnceLock::new();
    SHARED.get_or_init(TestEnv::new)
}

/// [`dsh`] as a `std::process::Command`, for tests that spawn the binary
/// and signal it or read its pipes while it runs.
pub fn dsh_process() -> std::process::Command {
    let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("dsh"));
    pin_process(&mut c, shared_env().home());
    c
}

/// The `dsh` binary under test in a shared empty environment (one per test
/// process; nothing is ever written into it). Tests that need their own
/// home, config or keys set them on the returned command, or use a
/// [`TestEnv`] of their own.
pub fn dsh() -> Command {
    shared_env().dsh()
}

/// Run dsh and parse its stdout as one JSON document.
pub fn json_of(args: &[&str]) -> (Value<'static>, i32) {
    shared_env().json(args)
}

impl TestEnv {
    /// Run dsh in this environment and parse its stdout as one JSON
    /// document: (document, exit code).
    pub fn json(&self, args: &[&str]) -> (Value<'static>, i32) {
        json_output(self.dsh().args(args).output().unwrap())
    }
}

fn json_output(out: std::process::Output) -> (Value<'static>, i32) {
    let code = out.status.code().unwrap_or(-1);
    let text = String::from_utf8(out.stdout).unwrap();
    let v = Value::parse(text.trim())
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {text:.300}"))
        .into_owned();
    (v, code)
}

/// The stdout of a finished command that must have succeeded (its stderr
/// in the failure message).
#[track_caller]
pub fn stdout_ok(out: std::process::Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A writable copy of a file in a fresh temporary directory.
pub fn copy_of(src: &Path, name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join(name);
    std::fs::copy(src, &p).unwrap();
    let mut perm = std::fs::metadata(&p).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perm.set_readonly(false);
    std::fs::set_permissions(&p, perm).unwrap();
    (dir, p)
}

/// A log loaded as it is stored, no observer.
pub fn load(p: &Path) -> dsh::LoadedLog {
    dsh::log::load(
        &dsh::log::LogSource::File(p.to_path_buf()),
        &dsh::log::LoadOptions::default(),
        &mut |_: &dsh::Event<'_>, _: &dsh::log::Folded<'_>| {},
    )
    .unwrap()
}

/// A command's output parsed as one JSON document.
pub fn json(out: &[u8]) -> Value<'static> {
    let text = String::from_utf8_lossy(out);
    Value::parse(text.trim())
        .unwrap_or_else(|e| panic!("not JSON ({e}): {text:.300}"))
        .into_owned()
}

/// Runs a writer on `log` (its last argument): it must succeed (`what`,
/// its stdout and stderr otherwise) and only append. What it appended,
/// and its output.
#[track_caller]
pub fn appends(cmd: &mut Command, log: &Path, what: &str) -> (String, std::process::Output) {
    let before = std::fs::read(log).unwrap();
    let out = cmd.arg(log).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{what}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let after = std::fs::read(log).unwrap();
    assert!(
        after.starts_with(&before),
        "{what}: a writer never rewrites a byte"
    );
    (
        String::from_utf8(after[before.len()..].to_vec()).unwrap(),
        out,
    )
}

/// `dsh verify -q` finds the log clean: exit 0 (`what` and its findings
/// otherwise).
#[track_caller]
pub fn assert_verifies(mut dsh: Command, log: &Path, what: &str) {
    let v = dsh.args(["verify", "-q"]).arg(log).output().unwrap();
    assert_eq!(
        v.status.code(),
        Some(0),
        "{what}: {}",
        String::from_utf8_lossy(&v.stdout)
    );
}

/// Parse a file as one JSON document.
pub fn read_json(p: &Path) -> Value<'static> {
    let bytes = std::fs::read(p).unwrap();
    Value::parse(std::str::from_utf8(&bytes).unwrap())
        .unwrap()
        .into_owned()
}

/// Check that `actual` holds every key and value of `expected` (extra object
/// keys allowed, arrays and scalars equal, numbers by value).
pub fn contains(expected: &Value<'_>, actual: &Value<'_>, path: &str) -> Result<(), String> {
    match (expected, actual) {
        (Value::Obj(e), Value::Obj(_)) => {
            for (k, v) in e {
                let key = k.to_lossy();
                let Some(a) = actual.get(&key) else {
                    return Err(format!("{path}.{key}: missing"));
                };
                contains(v, a, &format!("{path}.{key}"))?;
            }
            Ok(())
        }
        (Value::Arr(e), Value::Arr(a)) => {
            if e.len() != a.len() {
                return Err(format!("{path}: length {} != {}", a.len(), e.len()));
            }
            for (i, (x, y)) in e.iter().zip(a).enumerate() {
                contains(x, y, &format!("{path}[{i}]"))?;
            }
            Ok(())
        }
        _ => {
            if expected.deep_eq(actual) {
                Ok(())
            } else {
                Err(format!(
                    "{path}: {} != {}",
                    actual.to_json(),
                    expected.to_json()
                ))
            }
        }
    }
}

/// Every corpus log: (name, path).
pub fn corpus_logs(shared: &Path) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for set in ["real", "synthetic", "edge"] {
        let Ok(rd) = std::fs::read_dir(shared.join("corpus").join(set)) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if let Some(stem) = name.strip_suffix(".jsonl") {
                out.push((stem.to_string(), p));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn the_test_environment_pins_home_and_hides_the_machine() {
    let env = TestEnv::new();
    // `locks` with no LOG means the whole home: it must look in the pinned
    // one, whatever the machine's DSH_HOME or HOME say.
    let out = env.dsh().arg("locks").output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    let home = env.dsh_home();
    assert!(text.contains(&*home.to_string_lossy()), "{text}");
    assert!(!home.exists(), "nothing was created in the pinned home");
}

/// [`dsh`] run under `sh -c 'ulimit -v KIB'`: the binary's address space is
/// capped, so a test fails if dsh ever holds more than `kib` KiB (an
/// allocation past it aborts the process).
pub fn dsh_capped(kib: u64) -> std::process::Command {
    let mut c = std::process::Command::new("sh");
    c.arg("-c")
        .arg(format!("ulimit -v {kib} && exec \"$0\" \"$@\""))
        .arg(assert_cmd::cargo::cargo_bin("dsh"));
    pin_process(&mut c, shared_env().home());
    c
}

/// `text`'s text and reasoning rows, each as `assistant/chunk` lines; every
/// other line as it is.
pub fn rows_one_by_one(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let delta = match v["type"].as_str() {
            Some("text-chunks") => "text-delta",
            Some("reasoning-chunks") => "reasoning-delta",
            _ => {
                out.push_str(line);
                out.push('\n');
                continue;
            }
        };
        let d = &v["data"];
        let mut t = v["time0"].as_i64().unwrap();
        for (i, piece) in d["texts"].as_array().unwrap().iter().enumerate() {
            if i > 0 {
                t += d["dt"][i - 1].as_i64().unwrap();
            }
            let chunk = serde_json::json!({
                "type": "assistant/chunk",
                "seq": v["seq0"].as_u64().unwrap() + i as u64,
                "time": t,
                "data": {"turn": d["turn"], "step": d["step"], "chunk": {"type": delta, "index": d["index"], "text": piece}},
            });
            out.push_str(&chunk.to_string());
            out.push('\n');
        }
    }
    out
}

/// Write at `path` a two-request DeepSeek session whose system prompt is a
/// `{{system}}` placeholder and whose tools are empty, the provider having
/// reported `reported` prompt tokens for the first request (seq 4; the
/// second is seq 9): a recorded fixture's shape, whose hidden prefix dsh
/// estimates with `--tokenizer deepseek-v4`.
pub fn placeholder_log(path: &Path, reported: u64) {
    use serde_json::json;
    let text = |t: &str| json!({"type": "text", "text": t});
    let src =
        json!({"kind": "model", "provider": "deepseek-official", "model": "deepseek-v4-flash"});
    let user = |id: &str, t: &str| json!({"id": id, "role": "user", "content": [text(t)], "source": {"kind": "user"}});
    let answer = |id: &str, t: &str| json!({"id": id, "role": "assistant", "content": [text(t)], "source": src});
    let usage = |input: u64, read: u64| json!({"inputTokens": input, "outputTokens": 12, "cacheReadTokens": read, "reasoningTokens": 0});
    let t0 = 1_780_000_000_000u64;
    let header = json!({"header": {"config": {"provider": "deepseek-official", "model": "deepseek-v4-flash"}, "system": "{{system}}", "tools": []}, "reason": "initial"});
    let lines = [
        json!({"type": "session", "version": 0, "id": "sess-placeholder", "createdAt": t0, "cwd": "/work", "delegationDepth": 0}),
        json!({"type": "turn/start", "seq": 0, "time": t0 + 1, "data": {"turn": 1}}),
        json!({"type": "step/start", "seq": 1, "time": t0 + 2, "data": {"turn": 1, "step": 1}}),
        json!({"type": "user/message", "seq": 2, "time": t0 + 3, "data": user("u1", "Which files changed in the last commit?"), "surfaceOp": "append"}),
        json!({"type": "request/header", "seq": 3, "time": t0 + 4, "data": header}),
        json!({"type": "assistant/message", "seq": 4, "time": t0 + 5, "data": {"turn": 1, "step": 1, "message": answer("a1", "Two files: src/main.rs and README.md."), "usage": usage(reported, 0)}, "surfaceOp": "append"}),
        json!({"type": "step/end", "seq": 5, "time": t0 + 6, "data": {"turn": 1, "step": 1}}),
        json!({"type": "turn/end", "seq": 6, "time": t0 + 7, "data": {"turn": 1, "reason": {"kind": "completed"}}}),
        json!({"type": "turn/start", "seq": 7, "time": t0 + 8, "data": {"turn": 2}}),
        json!({"type": "user/message", "seq": 8, "time": t0 + 9, "data": user("u2", "And in the one before?"), "surfaceOp": "append"}),
        json!({"type": "assistant/message", "seq": 9, "time": t0 + 10, "data": {"turn": 2, "step": 1, "message": answer("a2", "One file: Cargo.toml."), "usage": usage(30, reported / 128 * 128)}, "surfaceOp": "append"}),
        json!({"type": "turn/end", "seq": 10, "time": t0 + 11, "data": {"turn": 2, "reason": {"kind": "completed"}}}),
    ];
    let body: String = lines.iter().map(|l| l.to_string() + "\n").collect();
    std::fs::write(path, body).unwrap();
}
