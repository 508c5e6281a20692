//! Secret scrubbing cannot corrupt text: a key of 1 to 7 characters (a
//! local server's dummy key) is not scrubbed as a substring, with a
//! warning; a long key is scrubbed as a whole token only.

use serde_json::Value as J;

use crate::compact::{SUMMARY, closed_log, write_log};
use crate::provider::{Reply, Server, deepseek_sse};
use crate::support::dsh;

/// Compact `closed_log()` with `key`, the provider answering `summary`:
/// (exit code, stderr, the compaction/summary text appended).
fn compact_with(key: &str, summary: &str) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path(), "s.jsonl", &closed_log());
    let server = Server::start(vec![Reply::Sse(deepseek_sse(summary))]);
    let out = dsh()
        .env("DEEPSEEK_API_KEY", key)
        .args([
            "compact",
            "--json",
            "--retry-delay",
            "0",
            "--base-url",
            &server.base,
        ])
        .arg(&log)
        .output()
        .unwrap();
    server.join();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let text = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<J>(l).ok())
        .find(|e| e["type"] == "compaction/summary")
        .map(|e| {
            e["data"]["summary"][0]["text"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .unwrap_or_default();
    (out.status.code().unwrap_or(-1), stderr, text)
}

#[test]
fn keys_of_one_to_seven_characters_never_corrupt_the_summary() {
    for key in ["a", "e", "xt", "tex", "text", "Prima", "Primar", "Current"] {
        assert!(SUMMARY.contains(key), "{key}");
        let (code, stderr, text) = compact_with(key, SUMMARY);
        assert_eq!(code, 0, "key {key:?}: {stderr}");
        assert_eq!(
            text, SUMMARY,
            "key {key:?}: the summary is as the model wrote it"
        );
        assert!(
            stderr.contains("shorter than 8 characters"),
            "key {key:?}: a warning: {stderr}"
        );
        assert!(!stderr.contains("[REDACTED]"), "{stderr}");
    }
}

#[test]
fn a_long_key_is_scrubbed_as_a_whole_token_only() {
    let key = "sk-test-abcdefgh";
    let echoed = SUMMARY.replace(
        "- cargo",
        &format!("- cargo, key {key}, and {key}9 is another token"),
    );
    let (code, stderr, text) = compact_with(key, &echoed);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        text.contains("key [REDACTED], and sk-test-abcdefgh9 is another token"),
        "{text}"
    );
    assert!(!stderr.contains("shorter than"), "{stderr}");
}
