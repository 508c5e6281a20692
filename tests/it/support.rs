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

/// The `dsh` binary under test.
pub fn dsh() -> Command {
    let mut c = Command::cargo_bin("dsh").unwrap();
    c.env_remove("DSH_HOME").env_remove("DSH_CONFIG");
    c
}

/// Run dsh and parse its stdout as one JSON document.
pub fn json_of(args: &[&str]) -> (Value<'static>, i32) {
    let out = dsh().args(args).output().unwrap();
    let code = out.status.code().unwrap_or(-1);
    let text = String::from_utf8(out.stdout).unwrap();
    let v = Value::parse(text.trim())
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {text:.300}"))
        .into_owned();
    (v, code)
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
