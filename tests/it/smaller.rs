//! The smaller reliability findings: finite, sane prices with the limit
//! said; a failed write naming its file once; ages never negative; `-`
//! meaning standard output or refused; a warning before the key goes to a
//! link-local, metadata or plain-http remote host.

use std::process::Command;

use serde_json::Value as J;

use crate::support::{TestEnv, sample};

#[test]
fn prices_must_be_finite_and_sane_and_the_limit_is_said() {
    let env = TestEnv::new();
    let dir = tempfile::tempdir().unwrap();
    for bad in ["1.7e308", "1e7", "-1", "nan", "inf"] {
        let cfg = dir.path().join("c.toml");
        std::fs::write(
            &cfg,
            format!(
                "[[prices]]\nprovider = \"deepseek-official\"\nmodel = \"m\"\ninput = {bad}\ncacheHit = 0.1\noutput = 2.0\n"
            ),
        )
        .unwrap();
        let out = env
            .dsh()
            .args(["usage", "--config"])
            .arg(&cfg)
            .arg(sample("coding-session.jsonl"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {err}");
        assert!(err.contains("from 0 to 1000000"), "{bad}: {err}");
    }
}

/// A full disk: a tmpfs of a few KiB (needs root; skipped otherwise).
struct Full {
    dir: tempfile::TempDir,
}

impl Full {
    fn new() -> Option<Full> {
        let dir = tempfile::tempdir().unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=8k", "tmpfs"])
            .arg(dir.path())
            .output()
            .is_ok_and(|o| o.status.success());
        if !ok {
            eprintln!("SKIPPED full-disk case: cannot mount a small tmpfs (not root?)");
            return None;
        }
        // Fill it.
        let _ = std::fs::write(dir.path().join("fill"), vec![0u8; 64 << 10]);
        Some(Full { dir })
    }
}

impl Drop for Full {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).output();
    }
}

#[test]
fn a_failed_write_names_its_file_once() {
    let Some(full) = Full::new() else {
        return;
    };
    let env = TestEnv::new();
    let out_dir = full.dir.path().join("x");
    let out = env
        .dsh()
        .args(["export", "--format", "jsonl", "--out"])
        .arg(&out_dir)
        .arg(sample("coding-session.jsonl"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(70), "{err}");
    assert!(
        err.contains(&out_dir.display().to_string()),
        "names the file: {err}"
    );
    assert_eq!(
        err.matches("os error 28").count(),
        1,
        "the OS message once: {err}"
    );
}

#[test]
fn a_lock_stamped_ahead_of_the_clock_has_no_negative_age() {
    let env = TestEnv::new();
    let busy = sample("locks-busy.jsonl");
    // The reference time an hour before the busy start.
    let text = std::fs::read_to_string(&busy).unwrap();
    let start: J = text
        .lines()
        .filter_map(|l| serde_json::from_str::<J>(l).ok())
        .find(|e| e["type"] == "compaction/start")
        .unwrap();
    let now = start["time"].as_f64().unwrap() - 3_600_000.0;
    let out = env
        .dsh()
        .args(["locks", "--json", "--now", &format!("{now}")])
        .arg(&busy)
        .output()
        .unwrap();
    let v: J = serde_json::from_slice(&out.stdout).unwrap();
    let b = &v["logs"][0]["brackets"][0];
    assert_eq!(b["ageMs"], 0.0, "{b}");
    assert_eq!(b["clockSkewMs"], 3_600_000.0, "{b}");
    // The table and the release plan say it, with no negative age.
    let out = env
        .dsh()
        .args([
            "locks",
            "--release",
            "--dry-run",
            "--now",
            &format!("{now}"),
        ])
        .arg(&busy)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("ahead of this clock: clock skew"), "{text}");
    assert!(
        !text.contains("in the future ago") && !text.contains("-1h"),
        "{text}"
    );
}

#[test]
fn a_dash_means_standard_output_or_is_refused() {
    let env = TestEnv::new();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("p.jsonl");
    std::fs::copy(sample("prune-open-turn.jsonl"), &log).unwrap();
    let busy = dir.path().join("b.jsonl");
    std::fs::copy(sample("locks-busy.jsonl"), &busy).unwrap();
    let cases: Vec<(Vec<&str>, &std::path::Path)> = vec![
        (vec!["prune", "--out", "-"], &log),
        (vec!["locks", "--release", "--out", "-"], &busy),
        (vec!["export", "--out", "-"], &log),
    ];
    for (args, target) in cases {
        let out = env
            .dsh()
            .current_dir(dir.path())
            .args(&args)
            .arg(target)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("standard output"), "{args:?}: {err}");
        assert!(
            !dir.path().join("-").exists(),
            "{args:?} made a file named -"
        );
    }
}

#[test]
fn the_key_is_not_sent_to_a_metadata_or_plain_http_host_without_a_word() {
    let env = TestEnv::new();
    for (url, said) in [
        ("http://169.254.169.254/v1", "metadata"),
        ("https://[fe80::1]/v1", "metadata"),
        ("http://api.example.com/v1", "unencrypted"),
    ] {
        let out = env
            .dsh()
            .env("DEEPSEEK_API_KEY", "sk-test-0123456789")
            .args(["compact", "--dry-run", "--base-url", url])
            .arg(sample("coding-session.jsonl"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(said), "{url}: {err}");
        assert!(!err.contains("sk-test-0123456789"), "{err}");
    }
    let out = env
        .dsh()
        .env("DEEPSEEK_API_KEY", "sk-test-0123456789")
        .args([
            "compact",
            "--dry-run",
            "--base-url",
            "http://127.0.0.1:9/v1",
        ])
        .arg(sample("coding-session.jsonl"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("metadata") && !err.contains("unencrypted"),
        "{err}"
    );
}
