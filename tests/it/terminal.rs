//! Everyday terminal use: pipes that close early, terminal width, color,
//! lookups by working directory and id prefix.

use std::process::{Command, Stdio};

use crate::support::{dsh, sample};

/// Run dsh with its stdout a pipe whose reader is gone before dsh writes
/// (as `dsh … | head -0` would), and return (exit code, stderr).
fn closed_pipe(args: &[&str]) -> (i32, String) {
    let mut child = crate::support::dsh_process()
        .args(args)
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

/// Run dsh in a pseudo-terminal of `cols` columns (through `script`), and
/// return its output without escape sequences; `None` when `script` is absent.
fn in_terminal(cols: u16, args: &[&str]) -> Option<String> {
    let text = in_terminal_env(cols, args, &[("NO_COLOR", "1")])?;
    let ansi = regex::Regex::new(r"\x1b\[[0-9;?]*[A-Za-z]").unwrap();
    Some(ansi.replace_all(&text, "").into_owned())
}

/// [`in_terminal`] with these variables set, escape sequences kept.
fn in_terminal_env(cols: u16, args: &[&str], env: &[(&str, &str)]) -> Option<String> {
    in_terminal_sized(cols, 50, args, env)
}

/// [`in_terminal_env`] in a terminal of `rows` lines (0: one that reports
/// no height).
fn in_terminal_sized(cols: u16, rows: u16, args: &[&str], env: &[(&str, &str)]) -> Option<String> {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("SKIPPED pseudo-terminal test: `script` (util-linux) is not installed");
        return None;
    }
    let bin = assert_cmd::cargo::cargo_bin("dsh");
    let quoted: Vec<String> = std::iter::once(bin.display().to_string())
        .chain(args.iter().map(|a| a.to_string()))
        .map(|a| format!("'{}'", a.replace('\'', r"'\''")))
        .collect();
    let cmd = format!("stty cols {cols} rows {rows}; {}", quoted.join(" "));
    let home = tempfile::tempdir().unwrap();
    let out = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .env_remove("COLUMNS")
        .env_remove("DSH_HOME")
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .env("TERM", "xterm-256color")
        // The pager is tested on its own; elsewhere output comes straight.
        .env_remove("PAGER")
        .env("DSH_PAGER", "cat")
        // No user config or home can change what is printed.
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join(".config"))
        .envs(env.iter().copied())
        .output()
        .unwrap();
    Some(String::from_utf8_lossy(&out.stdout).replace('\r', ""))
}

fn widest(text: &str) -> usize {
    text.lines()
        .map(unicode_width::UnicodeWidthStr::width)
        .max()
        .unwrap_or(0)
}

#[test]
fn reports_fit_80_columns_and_use_200() {
    let log = sample("coding-session.jsonl");
    let log = log.to_str().unwrap();
    let compacted = sample("compacted.jsonl");
    let busy = sample("locks-busy.jsonl");
    let cases: &[&[&str]] = &[
        &["surface", log],
        &["measure", log],
        &["measure", "--nodes", log],
        &["measure", log, compacted.to_str().unwrap()],
        &["events", log],
        &["locks", busy.to_str().unwrap()],
        &["verify", log],
        &["header", log],
        &["load", log],
        &["prune", "--dry-run", "--allow-closed-turn", log],
    ];
    for cols in [80u16, 200] {
        for args in cases {
            let Some(text) = in_terminal(cols, args) else {
                return;
            };
            assert!(
                !text.trim().is_empty(),
                "`dsh {}` printed nothing",
                args.join(" ")
            );
            assert!(
                widest(&text) <= usize::from(cols),
                "{cols} columns: `dsh {}` has a {}-column line:\n{text}",
                args.join(" "),
                widest(&text)
            );
        }
    }
    let Some(wide) = in_terminal(200, &["surface", log]) else {
        return;
    };
    assert!(
        widest(&wide) > 120,
        "a 200-column terminal is used:\n{wide}"
    );
    let narrow = in_terminal(80, &["surface", log]).unwrap();
    assert!(
        narrow.contains('…'),
        "previews are cut with an ellipsis:\n{narrow}"
    );
    let rows = narrow.lines().filter(|l| l.starts_with('│')).count();
    assert_eq!(rows, 17, "one line per node plus the header:\n{narrow}");
}

#[test]
fn numbers_have_one_thousands_format_and_are_right_aligned() {
    let log = sample("coding-session.jsonl");
    let out = dsh()
        .args(["surface", log.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("1,050 token(s)"), "{text}");
    // The tokens column is right-aligned: `    27 ┆` not `27     ┆`.
    assert!(text.contains("┆     27 ┆"), "{text}");
}

#[test]
fn color_follows_the_flag_no_color_and_clicolor_force() {
    let log = sample("coding-session.jsonl");
    let busy = sample("locks-busy.jsonl");
    let refused = sample("refused.jsonl");
    let esc = |o: &std::process::Output| o.stdout.contains(&0x1b);
    for args in [
        vec!["measure", log.to_str().unwrap()],
        vec!["locks", busy.to_str().unwrap()],
        vec!["verify", refused.to_str().unwrap()],
    ] {
        let plain = dsh()
            .args(&args)
            .env_remove("CLICOLOR_FORCE")
            .output()
            .unwrap();
        assert!(!esc(&plain), "no color into a pipe: dsh {args:?}");
        let always = dsh().arg("--color=always").args(&args).output().unwrap();
        assert!(esc(&always), "--color always colors: dsh {args:?}");
        let forced = dsh()
            .args(&args)
            .env_remove("NO_COLOR")
            .env("CLICOLOR_FORCE", "1")
            .output()
            .unwrap();
        assert!(esc(&forced), "CLICOLOR_FORCE colors: dsh {args:?}");
        let never = dsh()
            .arg("--color=never")
            .args(&args)
            .env("CLICOLOR_FORCE", "1")
            .output()
            .unwrap();
        assert!(!esc(&never), "--color never wins: dsh {args:?}");
        // Color never changes the JSON.
        let json = dsh()
            .arg("--color=always")
            .arg("--json")
            .args(&args)
            .output()
            .unwrap();
        assert!(!esc(&json), "no color in JSON: dsh {args:?}");
    }
}

#[test]
fn no_color_on_a_terminal_means_no_escapes() {
    let log = sample("coding-session.jsonl");
    let Some(colored) = in_terminal_env(100, &["measure", log.to_str().unwrap()], &[]) else {
        return;
    };
    assert!(colored.contains('\x1b'), "a terminal gets color: {colored}");
    let plain = in_terminal_env(
        100,
        &["measure", log.to_str().unwrap()],
        &[("NO_COLOR", "1")],
    )
    .unwrap();
    assert!(!plain.contains('\x1b'), "NO_COLOR: {plain}");
}

/// A DSH home holding copies of a sample as sessions `ids` of working
/// directory `cwd`.
fn home_with(cwd: &std::path::Path, ids: &[&str]) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    for id in ids {
        let d = home
            .path()
            .join("sessions")
            .join(dsh::log::source::project_dir_name(cwd.to_str()))
            .join(dsh::log::source::session_dir_name(id));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::copy(sample("coding-session.jsonl"), d.join("session.jsonl")).unwrap();
    }
    home
}

#[test]
fn a_session_is_found_by_its_working_directory_and_an_id_prefix() {
    let proj = tempfile::tempdir().unwrap();
    let cwd = std::fs::canonicalize(proj.path()).unwrap();
    let home = home_with(&cwd, &["5b1d6c2e-0f3a", "5b1d9999-aaaa"]);
    let found = |args: &[&str], dir: &std::path::Path| {
        dsh()
            .args(args)
            .env("DSH_HOME", home.path())
            .current_dir(dir)
            .output()
            .unwrap()
    };
    let root = crate::support::root();
    for (what, args, dir) in [
        (
            "absolute cwd",
            vec!["surface", cwd.to_str().unwrap()],
            root.as_path(),
        ),
        ("`.`", vec!["surface", "."], cwd.as_path()),
        ("id prefix", vec!["header", "5b1d6"], root.as_path()),
        ("measure .", vec!["measure", "."], cwd.as_path()),
        ("verify .", vec!["verify", "."], cwd.as_path()),
        ("measure home", vec!["measure"], root.as_path()),
        ("verify home", vec!["verify"], root.as_path()),
        ("locks home", vec!["locks"], root.as_path()),
    ] {
        let out = found(&args, dir);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let many = found(&["measure", "--json"], &root);
    let text = String::from_utf8_lossy(&many.stdout);
    assert_eq!(text.matches("\"file\"").count(), 2, "both sessions: {text}");
    // An ambiguous prefix lists the candidates and is a usage error.
    let amb = found(&["surface", "5b1d"], &root);
    let err = String::from_utf8_lossy(&amb.stderr);
    assert_eq!(amb.status.code(), Some(2), "{err}");
    assert!(
        err.contains("5b1d6c2e-0f3a") && err.contains("5b1d9999-aaaa"),
        "{err}"
    );
    // So it is among many LOGs, for every command that takes many: the
    // candidates, exit 2, and nothing measured.
    let sample = crate::support::sample("coding-session.jsonl");
    let sample = sample.to_str().unwrap();
    for cmd in ["measure", "verify", "locks"] {
        let amb = found(&[cmd, sample, "5b1d"], &root);
        let err = String::from_utf8_lossy(&amb.stderr);
        assert_eq!(amb.status.code(), Some(2), "{cmd}: {err}");
        assert!(
            err.contains("5b1d6c2e-0f3a") && err.contains("5b1d9999-aaaa"),
            "{cmd}: {err}"
        );
        assert!(amb.stdout.is_empty(), "{cmd}: {:?}", amb.stdout);
    }
    // An unknown directory says what was looked for.
    let none = found(&["surface", "."], &root.join("src"));
    assert_eq!(none.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&none.stderr).contains("working directory"));
}

#[test]
fn a_missing_home_is_the_same_one_line_usage_error_for_every_many_log_command() {
    let gone = tempfile::tempdir().unwrap().path().join("no-such-home");
    let mut seen = Vec::new();
    for cmd in ["measure", "verify", "locks", "sessions", "usage", "cache"] {
        let out = dsh().arg(cmd).env("DSH_HOME", &gone).output().unwrap();
        seen.push((
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        ));
    }
    assert_eq!(seen[0].0, Some(2), "{seen:?}");
    assert!(seen.iter().all(|s| s == &seen[0]), "{seen:?}");
    assert!(seen[0].1.contains("no DSH home"), "{seen:?}");
    assert_eq!(seen[0].1.lines().count(), 1, "one line: {seen:?}");
    assert!(seen.iter().all(|s| s.0 == Some(2)), "{seen:?}");
}

#[test]
fn long_output_on_a_terminal_goes_through_the_pager_unless_asked_not_to() {
    let log = sample("coding-session.jsonl");
    let log = log.to_str().unwrap();
    let pager = [("DSH_PAGER", "sed s/^/PAGED:/"), ("NO_COLOR", "1")];
    // verify's report of one clean log is short; the other three are
    // longer than a 6-line terminal.
    for cmd in ["surface", "messages", "events"] {
        let Some(paged) = in_terminal_sized(80, 6, &[cmd, log], &pager) else {
            return;
        };
        let lines: Vec<&str> = paged.lines().filter(|l| !l.is_empty()).collect();
        assert!(!lines.is_empty(), "{cmd} printed something");
        assert!(
            lines.iter().all(|l| l.starts_with("PAGED:")),
            "{cmd} goes through $DSH_PAGER:\n{paged}"
        );
        let direct = in_terminal_sized(80, 6, &["--no-pager", cmd, log], &pager).unwrap();
        assert!(
            !direct.contains("PAGED:"),
            "{cmd} --no-pager prints directly"
        );
        // Output that fits the screen, or a terminal of unknown height,
        // never starts the pager.
        let fits = in_terminal_sized(200, 500, &[cmd, log], &pager).unwrap();
        assert!(!fits.contains("PAGED:"), "{cmd} fits 500 rows:\n{fits}");
        assert!(fits.lines().filter(|l| !l.is_empty()).count() > 6);
        let unknown = in_terminal_sized(80, 0, &[cmd, log], &pager).unwrap();
        assert!(!unknown.contains("PAGED:"), "{cmd} with no known height");
    }
    // The exact request of `compact --dry-run` is long too.
    let compacted = sample("compacted.jsonl");
    let args = ["compact", "-n", compacted.to_str().unwrap()];
    let paged = in_terminal_sized(80, 6, &args, &pager).unwrap();
    assert!(
        paged
            .lines()
            .filter(|l| !l.is_empty())
            .all(|l| l.starts_with("PAGED:")),
        "compact -n goes through $DSH_PAGER:\n{paged}"
    );
    // Short reports and JSON never page.
    let json = in_terminal_env(80, &["surface", "--json", log], &pager).unwrap();
    assert!(!json.contains("PAGED:"));
    // Into a pipe nothing pages.
    let piped = dsh()
        .env("DSH_PAGER", "sed s/^/PAGED:/")
        .args(["surface", log])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&piped.stdout).contains("PAGED:"));
}

#[test]
fn json_rows_that_wait_for_the_surface_read_their_lines_again_as_they_were_read() {
    // A row of `events --json` waits for the end of the log without its
    // event when the event is its line; the line is read again when the
    // row is written. Lines that are not (a spelling `JSON.stringify` would
    // not write, text decoded with replacement characters even where that
    // kept its length) are written from the event. Held or read in a
    // second pass, from the file or from standard input: the same rows.
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read(sample("coding-session.jsonl")).unwrap();
    // Every 🙂 cut short, with a byte after it: four bytes, as before.
    let emoji = "🙂".as_bytes();
    let mut log = Vec::new();
    let mut rest = &text[..];
    while let Some(at) = rest.windows(4).position(|w| w == emoji) {
        log.extend_from_slice(&rest[..at]);
        log.extend_from_slice(&emoji[..3]);
        log.push(b'x');
        rest = &rest[at + 4..];
    }
    log.extend_from_slice(rest);
    assert_eq!(log.len(), text.len());
    let spaced = log
        .windows(40)
        .position(|w| w.starts_with(br#"{"type":"user/message","seq":70"#))
        .unwrap();
    log.splice(spaced + 7..spaced + 8, b": ".iter().copied());
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, &log).unwrap();
    let path = path.to_str().unwrap();
    let run = |args: &[&str], stdin: Option<&[u8]>| {
        let mut cmd = dsh();
        cmd.args(args);
        if let Some(input) = stdin {
            cmd.write_stdin(input.to_vec());
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("rows are UTF-8")
    };
    let held = run(&["events", "--json", path], None);
    assert_eq!(
        held,
        run(&["events", "--json", "--debug-hold-bytes=0", path], None)
    );
    let piped = run(&["events", "--json", "-"], Some(&log));
    assert_eq!(held.lines().count(), piped.lines().count());
    let rows: Vec<serde_json::Value> = held
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let piped: Vec<serde_json::Value> = piped
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for (a, b) in rows.iter().zip(&piped) {
        assert_eq!(a["event"], b["event"]);
        assert_eq!(a["onSurface"], b["onSurface"]);
    }
    let event = |seq: u64| &rows.iter().find(|r| r["seq"] == seq).unwrap()["event"];
    let said = event(4)["data"]["content"][0]["text"].as_str().unwrap();
    assert!(said.ends_with("please. \u{FFFD}x"), "{said}");
    assert_eq!(event(70)["type"], "user/message");
    // The spaced line's row carries the event as serialised, not its line.
    let row70 = held
        .lines()
        .find(|l| l.starts_with(r#"{"seq":70,"#))
        .unwrap();
    assert!(
        row70.contains(r#","event":{"type":"user/message","seq":70,"#),
        "{row70}"
    );
}

#[test]
fn limit_and_tail_cut_long_listings() {
    let log = sample("coding-session.jsonl");
    let log = log.to_str().unwrap();
    let run = |args: &[&str]| {
        let out = dsh().args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let all = run(&["events", log]);
    let rows: Vec<&str> = all.lines().filter(|l| l.starts_with(' ')).collect();
    assert!(rows.len() > 4);
    let first = run(&["events", "--limit", "2", log]);
    let first_rows: Vec<&str> = first.lines().filter(|l| l.starts_with(' ')).collect();
    assert_eq!(first_rows, rows[..2].to_vec());
    assert!(first.contains(&format!("showing the first 2 of {} events", rows.len())));
    let last = run(&["events", "--tail", "2", log]);
    let last_rows: Vec<&str> = last.lines().filter(|l| l.starts_with(' ')).collect();
    assert_eq!(last_rows, rows[rows.len() - 2..].to_vec());

    let surface = run(&["surface", "--tail", "1", log]);
    assert!(surface.contains("showing the last 1 of"), "{surface}");
    let messages = run(&["messages", "--limit", "1", log]);
    assert_eq!(messages.matches("── ").count(), 1, "{messages}");
    assert!(messages.contains("showing the first 1 of"));

    // Rows that outgrow what the one-pass view holds are read again: the
    // same listing.
    let held_and_read_again_agree = |args: &[&str], log: &str, hold: &str| {
        let mut one: Vec<&str> = vec!["events"];
        one.extend_from_slice(args);
        one.push(log);
        let mut two = one.clone();
        two.insert(1, hold);
        assert_eq!(run(&one), run(&two), "{args:?} {log}");
    };
    for args in [&[][..], &["--tail", "2"], &["--limit", "3"]] {
        held_and_read_again_agree(args, log, "--debug-hold-bytes=200");
    }
    let shadowed = sample("compacted.jsonl");
    let shadowed = shadowed.to_str().unwrap();
    let once = run(&["events", shadowed]);
    assert!(once.contains("shadowed"), "{once}");
    assert_eq!(once, run(&["events", "--debug-hold-bytes=0", shadowed]));
    // So do `--json` rows (held whole, `onSurface` settled at the end) and
    // chunk rows, on a log where compaction took messages off the surface,
    // plain and as an artifact.
    let packed = sample("coding-session.jsonl.zstd");
    for log in [shadowed, log, packed.to_str().unwrap()] {
        for args in [
            &["--json"][..],
            &["--json", "--all"],
            &["--json", "--tail", "4"],
            &["--all"],
        ] {
            held_and_read_again_agree(args, log, "--debug-hold-bytes=0");
        }
    }
    let rows: Vec<serde_json::Value> = run(&["events", "--json", shadowed])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for on in [true, false] {
        assert!(
            rows.iter()
                .any(|r| r["onSurface"] == on && r["event"]["type"] == "user/message"),
            "a user message with onSurface {on}"
        );
    }

    let events_json = run(&["events", "--json", "--tail", "3", log]);
    assert_eq!(events_json.lines().count(), 3);
    for cmd in ["surface", "messages"] {
        dsh()
            .args([cmd, "--json", "--limit", "1", log])
            .assert()
            .code(2);
    }
    dsh()
        .args(["events", "--limit", "1", "--tail", "1", log])
        .assert()
        .code(2);
}

#[test]
fn every_reader_warns_about_an_open_turn_once() {
    let log = sample("prune-open-turn.jsonl");
    for cmd in [
        &["surface"][..],
        &["messages"],
        &["header"],
        &["events"],
        &["load"],
        &["measure"],
        &["verify"],
        &["locks"],
        &["prune", "-n"],
    ] {
        let out = dsh().args(cmd).arg(&log).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            err.matches("the last turn is open").count(),
            1,
            "dsh {}: {err}",
            cmd.join(" ")
        );
        let quiet = dsh().args(cmd).arg("-q").arg(&log).output().unwrap();
        assert!(
            !String::from_utf8_lossy(&quiet.stderr).contains("last turn"),
            "dsh {} -q",
            cmd.join(" ")
        );
    }
}

#[test]
fn reports_name_home_sessions_by_short_id_and_project() {
    let proj = tempfile::tempdir().unwrap();
    let cwd = std::fs::canonicalize(proj.path()).unwrap();
    let home = home_with(&cwd, &["5b1d6c2e-0f3a-4c1e", "7c2e0000-1111-2222"]);
    for cmd in ["measure", "verify", "locks"] {
        let out = dsh()
            .arg(cmd)
            .args((cmd == "locks").then_some("--all"))
            .env("DSH_HOME", home.path())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        for id in ["5b1d6c2e", "7c2e0000"] {
            assert!(text.contains(id), "dsh {cmd}: {text}");
        }
        assert!(
            !text.contains(&*home.path().to_string_lossy()),
            "dsh {cmd} shows the long path: {text}"
        );
        // JSON keeps the path itself.
        let json = dsh()
            .args([cmd, "--json"])
            .env("DSH_HOME", home.path())
            .output()
            .unwrap();
        assert!(
            String::from_utf8_lossy(&json.stdout).contains(&*home.path().to_string_lossy()),
            "dsh {cmd} --json"
        );
    }
}
