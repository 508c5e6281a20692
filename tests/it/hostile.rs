//! Text from the log never drives the terminal nor a spreadsheet: a log
//! with every control-character class in every text field, through every
//! command, into a pipe and a pseudo-terminal; CSV cells a spreadsheet
//! would evaluate.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{TestEnv, sample};

/// Every class of the escaping rule (C0, DEL, C1, bidi and line-breaking
/// format characters) and the sequences a hostile tool result would carry:
/// window title (OSC 0), clipboard (OSC 52), hyperlink (OSC 8), blink
/// (SGR outside dsh's palette), clear screen.
fn hostile() -> String {
    let mut s: String = (0u32..0x20)
        .chain(0x7f..0xa0)
        .map(|c| char::from_u32(c).unwrap())
        .collect();
    s.push_str("\u{61c}\u{200e}\u{200f}\u{2028}\u{2029}\u{202e}\u{2066}\u{2069}");
    s.push_str("\x1b]0;PWNED\x07\x1b]52;c;aGk=\x07\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\");
    s.push_str("\x1b[5;35m\x1b[2J\x1b[1;31m");
    s
}

/// Append [`hostile`] to every string of a log but the structural ones.
fn poison(v: &mut serde_json::Value, key: &str) {
    const KEEP: &[&str] = &["type", "role", "surfaceOp", "target", "kind", "op"];
    match v {
        serde_json::Value::String(s) if !KEEP.contains(&key) => s.push_str(&hostile()),
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| poison(x, key)),
        serde_json::Value::Object(o) => o.iter_mut().for_each(|(k, x)| poison(x, k)),
        _ => {}
    }
}

fn poisoned(sample_name: &str, to: &Path) {
    let text = std::fs::read_to_string(sample(sample_name)).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
        poison(&mut v, "");
        out.push_str(&serde_json::to_string(&v).unwrap());
        out.push('\n');
    }
    std::fs::write(to, out).unwrap();
}

/// The raw control characters in `bytes`: all of the rule's but newline,
/// tab and (from a terminal) carriage return, after taking out dsh's own
/// palette of colors.
fn raw_controls(bytes: &[u8]) -> Vec<String> {
    let palette =
        regex::bytes::Regex::new(r"\x1b\[(0|1|2|22|31|32|33|39|1;31|38;5;9|38;5;10|38;5;11)?m")
            .unwrap();
    let text = String::from_utf8_lossy(&palette.replace_all(bytes, &b""[..])).into_owned();
    text.chars()
        .filter(|&c| {
            (c < ' ' && !matches!(c, '\n' | '\t' | '\r'))
                || ('\u{7f}'..'\u{a0}').contains(&c)
                || matches!(
                    c,
                    '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{2028}' | '\u{2029}'
                )
                || ('\u{202a}'..='\u{202e}').contains(&c)
                || ('\u{2066}'..='\u{2069}').contains(&c)
        })
        .map(|c| format!("{:?}", c))
        .collect()
}

struct Fixture {
    _dir: tempfile::TempDir,
    compacted: PathBuf,
    coding: PathBuf,
    home: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let compacted = dir.path().join("compacted.jsonl");
    let coding = dir.path().join("coding.jsonl");
    poisoned("compacted.jsonl", &compacted);
    poisoned("coding-session.jsonl", &coding);
    let home = dir.path().join("home");
    let session = home.join("sessions/--home-x--/s1");
    std::fs::create_dir_all(&session).unwrap();
    std::fs::copy(&compacted, session.join("session.jsonl")).unwrap();
    Fixture {
        _dir: dir,
        compacted,
        coding,
        home,
    }
}

/// Runs of [`commands`] so far: each gets output paths of its own.
static OUTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Every command that prints, on the poisoned logs.
fn commands(f: &Fixture) -> Vec<Vec<String>> {
    let c = f.compacted.display().to_string();
    let k = f.coding.display().to_string();
    let h = f.home.display().to_string();
    let bad_path = format!("{}/missing\x1b]0;x\x07.jsonl", f.home.display());
    // Outputs named with control characters: the paths dsh prints back.
    let out_dir = f.home.parent().unwrap().join(format!(
        "out\x1b]0;t\x07-{}",
        OUTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&out_dir).unwrap();
    let report = out_dir.join("r\x1b[2J.html").display().to_string();
    let export = out_dir.join("e\x07x").display().to_string();
    let cases: Vec<Vec<&str>> = vec![
        vec!["surface", &c],
        vec!["messages", &c],
        vec!["messages", "--system", &k],
        vec!["header", &k],
        vec!["events", "--all", &c],
        vec!["view", &c],
        vec!["view", "--survival", &c],
        vec!["load", &c],
        vec!["measure", "--nodes", &k],
        vec!["verify", &c],
        vec!["locks", &c],
        vec!["cache", &k],
        vec!["simulate", &k],
        vec!["prune", "--dry-run", &k],
        vec![
            "compact",
            "-n",
            "--route",
            "deepseek-official/deepseek-v4-flash",
            &c,
        ],
        vec!["sessions", "--home", &h],
        vec!["sessions", "--csv", "--home", &h],
        vec!["usage", "--home", &h],
        vec!["usage", "--csv", "--session", "--breakdown", "--home", &h],
        vec!["verify", &bad_path],
        vec!["surface", &bad_path],
        vec!["report", &c, "-o", &report],
        vec!["export", "--format", "csv", "--out", &export, "--home", &h],
        vec!["repair", "--dry-run", &c],
        vec!["locks", "--release", "--dry-run", &c],
    ];
    cases
        .into_iter()
        .map(|c| c.into_iter().map(String::from).collect())
        .collect()
}

#[test]
fn no_raw_control_character_reaches_a_pipe() {
    let f = fixture();
    let env = TestEnv::new();
    let mut shown = 0;
    let all = commands(&f);
    for args in &all {
        let out = env.dsh().args(args).output().unwrap();
        for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            let bad = raw_controls(bytes);
            assert!(
                bad.is_empty(),
                "dsh {}: {stream} holds {bad:?}",
                args.join(" ").escape_debug()
            );
        }
        assert!(
            !out.stdout.is_empty() || !out.stderr.is_empty(),
            "dsh {}: printed nothing",
            args.join(" ").escape_debug()
        );
        let text = String::from_utf8_lossy(&out.stdout);
        let err = String::from_utf8_lossy(&out.stderr);
        if text.contains("\\u{1b}") || err.contains("\\u{1b}") {
            shown += 1;
        }
    }
    // The log's text is there, escaped (a preview may be cut before it).
    assert!(shown * 3 >= all.len() * 2, "{shown} of {}", all.len());
}

#[test]
fn no_raw_control_character_reaches_a_terminal() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("SKIPPED pseudo-terminal test: `script` (util-linux) is not installed");
        return;
    }
    let f = fixture();
    let bin = assert_cmd::cargo::cargo_bin("dsh");
    let home = tempfile::tempdir().unwrap();
    for args in commands(&f) {
        let quoted: Vec<String> = std::iter::once(bin.display().to_string())
            .chain(args.iter().cloned())
            .map(|a| format!("'{}'", a.replace('\'', r"'\''")))
            .collect();
        // Color on (a terminal, no NO_COLOR): dsh's palette is all that may pass.
        let cmd = format!("stty cols 120 rows 50; {} 2>&1", quoted.join(" "));
        let out = Command::new("script")
            .args(["-qec", &cmd, "/dev/null"])
            .env_remove("NO_COLOR")
            .env_remove("COLUMNS")
            .env_remove("DSH_HOME")
            .env("TERM", "xterm-256color")
            .env("DSH_PAGER", "cat")
            .env("HOME", home.path())
            .env("XDG_CONFIG_HOME", home.path().join(".config"))
            .output()
            .unwrap();
        let bad = raw_controls(&out.stdout);
        assert!(
            bad.is_empty(),
            "dsh {} in a terminal: {bad:?}",
            args.join(" ").escape_debug()
        );
        assert!(!out.stdout.is_empty(), "{args:?} printed nothing");
    }
}

#[test]
fn raw_gives_the_stored_bytes_and_json_stays_json() {
    let f = fixture();
    let env = TestEnv::new();
    let out = env
        .dsh()
        .args(["--raw", "messages"])
        .arg(&f.compacted)
        .output()
        .unwrap();
    assert!(
        out.stdout.windows(7).any(|w| w == b"\x1b]0;PWN"),
        "--raw keeps the bytes"
    );
    let out = env
        .dsh()
        .args(["messages", "--json"])
        .arg(&f.compacted)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v.to_string().contains("PWNED"));
}

/// A home of one session whose texts a spreadsheet would evaluate: the
/// session id, the project directory, the title, the provider and model.
fn formula_home(dir: &Path) -> PathBuf {
    let home = dir.join("home");
    let session = home.join("sessions/--=cmd--/s1");
    std::fs::create_dir_all(&session).unwrap();
    let text = std::fs::read_to_string(sample("coding-session.jsonl")).unwrap();
    let text = text
        .replace("sample-coding-session", "@SUM(A1)")
        .replace(
            "The parser test `unicode_keys` fails.",
            "=HYPERLINK(\\\"http://evil\\\",\\\"x\\\")",
        )
        .replace("\"deepseek-official\"", "\"+cmd|' /C calc'!A0\"")
        .replace("\"deepseek-v4-flash\"", "\"-2+3\"");
    std::fs::write(session.join("session.jsonl"), text).unwrap();
    home
}

/// The fields of a CSV text (RFC 4180), quotes taken off.
fn csv_fields(text: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',' | '\n', false) => fields.push(std::mem::take(&mut cur)),
            (c, _) => cur.push(c),
        }
    }
    fields
}

fn triggers(fields: &[String]) -> Vec<&String> {
    fields
        .iter()
        .filter(|f| f.starts_with(['=', '+', '-', '@', '\t', '\r']) && f.parse::<f64>().is_err())
        .collect()
}

#[test]
fn csv_cells_a_spreadsheet_would_evaluate_begin_with_a_quote() {
    let dir = tempfile::tempdir().unwrap();
    let home = formula_home(dir.path());
    let env = TestEnv::new();
    let h = home.display().to_string();
    let export_dir = dir.path().join("x");
    let export_raw = dir.path().join("y");
    let runs: Vec<(Vec<String>, Option<PathBuf>)> = vec![
        (vec!["sessions".into(), "--csv".into()], None),
        (
            vec![
                "usage".into(),
                "--csv".into(),
                "--session".into(),
                "--breakdown".into(),
            ],
            None,
        ),
        (
            vec![
                "export".into(),
                "--format".into(),
                "csv".into(),
                "--out".into(),
                export_dir.display().to_string(),
            ],
            Some(export_dir.clone()),
        ),
    ];
    for (args, dir_out) in &runs {
        for raw in [false, true] {
            let mut a = args.clone();
            if raw {
                a.push("--csv-formulas".into());
            }
            if let Some(d) = dir_out {
                let target = if raw { &export_raw } else { d };
                let i = a.iter().position(|x| x == "--out").unwrap();
                a[i + 1] = target.display().to_string();
            }
            a.extend(["--home".into(), h.clone()]);
            let out = env.dsh().args(&a).output().unwrap();
            assert!(
                out.status.success(),
                "{a:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let mut text = String::from_utf8(out.stdout).unwrap();
            if dir_out.is_some() {
                let d = if raw {
                    &export_raw
                } else {
                    dir_out.as_ref().unwrap()
                };
                text = ["sessions", "requests", "compactions", "prunes", "locks"]
                    .iter()
                    .map(|t| std::fs::read_to_string(d.join(format!("{t}.csv"))).unwrap())
                    .collect();
            }
            let fields = csv_fields(&text);
            let live = triggers(&fields);
            if raw {
                assert!(
                    !live.is_empty(),
                    "{a:?}: --csv-formulas keeps the cells: {text}"
                );
            } else {
                assert!(live.is_empty(), "{a:?}: live formulas {live:?}");
                let guarded: Vec<&String> = fields.iter().filter(|f| f.starts_with("'")).collect();
                assert!(
                    guarded.iter().any(|f| f.starts_with("'=HYPERLINK"))
                        || guarded.iter().any(|f| f.starts_with("'@SUM")),
                    "{a:?}: {guarded:?}"
                );
            }
        }
    }
}
