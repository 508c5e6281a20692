//! One rule for `.` (and any working directory): a command that reads one
//! log takes the project's newest session by its log's last event (not the
//! file's mtime) and says which on stderr; a command that reads many takes
//! all of the project's sessions; text and `--json` agree. Run in real
//! pseudo-terminals at 80 and 200 columns, from inside the project.

use std::path::{Path, PathBuf};

use crate::pty;
use crate::sessions::{DAY, HOUR, JUL1, authored_log, put};
use crate::support::TestEnv;

const DS: &str = "deepseek-official";
const FLASH: &str = "deepseek-v4-flash";

/// A project directory with two sessions: `older-0001` (two requests, its
/// last event on July 1st, but the newest file by mtime) and `newer-0002`
/// (one request a day later, packed as `.jsonl.zstd`, an old mtime).
struct Project {
    env: TestEnv,
    dir: PathBuf,
    older: PathBuf,
    newer: PathBuf,
}

fn project() -> Project {
    let env = TestEnv::new();
    let dir = env.home().join("proj");
    std::fs::create_dir_all(&dir).unwrap();
    let dir = std::fs::canonicalize(dir).unwrap();
    let cwd = dir.to_str().unwrap();
    let home = env.dsh_home();
    let usage = r#"{"inputTokens":1000,"outputTokens":10}"#;
    let newer_plain = put(
        &home,
        cwd,
        "newer-0002",
        &authored_log(
            "newer-0002",
            cwd,
            JUL1 + DAY,
            "first-newer",
            &[(JUL1 + DAY + HOUR, DS, FLASH, usage)],
        ),
    );
    let newer = newer_plain.with_extension("jsonl.zstd");
    let out = env
        .dsh()
        .args(["pack", "-o"])
        .arg(&newer)
        .arg(&newer_plain)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    std::fs::remove_file(&newer_plain).unwrap();
    let older = put(
        &home,
        cwd,
        "older-0001",
        &authored_log(
            "older-0001",
            cwd,
            JUL1,
            "first-older",
            &[
                (JUL1 + HOUR, DS, FLASH, usage),
                (JUL1 + 2 * HOUR, DS, FLASH, usage),
            ],
        ),
    );
    // mtime says the opposite of the logs' own times.
    let ago = std::time::SystemTime::now() - std::time::Duration::from_secs(86_400 * 30);
    std::fs::File::options()
        .append(true)
        .open(&newer)
        .unwrap()
        .set_modified(ago)
        .unwrap();
    Project {
        env,
        dir,
        older,
        newer,
    }
}

impl Project {
    /// `dsh ARGS` from inside the project, in a terminal `cols` wide.
    fn run(&self, cols: u16, args: &[&str]) -> Option<(String, i32)> {
        let home = self.env.dsh_home();
        pty::run(
            cols,
            Some(&self.dir),
            args,
            &[("DSH_HOME", home.to_str().unwrap())],
        )
    }

    fn out(&self, name: &str) -> String {
        self.env.home().join(name).display().to_string()
    }
}

/// Whether `text` names the session of `log` (its id appears, or its
/// title), and never the other one's.
fn names_only(text: &str, log: &Path, other: &Path) -> bool {
    let id = |p: &Path| {
        p.parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned()
    };
    let title = |p: &Path| {
        if id(p).starts_with("newer") {
            "first-newer"
        } else {
            "first-older"
        }
    };
    let names = |p: &Path| text.contains(&id(p)[..8]) || text.contains(title(p));
    names(log) && !names(other)
}

#[test]
fn a_command_that_reads_one_log_takes_the_newest_by_its_last_event_and_says_so() {
    let p = project();
    let unpacked = p.out("unpacked.jsonl");
    let commands: Vec<Vec<&str>> = vec![
        vec!["surface"],
        vec!["messages"],
        vec!["header"],
        vec!["events"],
        vec!["view"],
        vec!["load"],
        vec!["prune", "--dry-run", "--allow-closed-turn"],
        vec![
            "compact",
            "--dry-run",
            "--route",
            "deepseek-official/deepseek-v4-flash",
        ],
        vec!["locks", "--release", "--dry-run"],
        vec!["unpack", "--force", "-o", &unpacked],
    ];
    for cols in [80, 200] {
        for cmd in &commands {
            for json in [false, true] {
                let mut args = cmd.clone();
                if json {
                    args.push("--json");
                }
                args.push(".");
                let Some((text, _)) = p.run(cols, &args) else {
                    return;
                };
                let note = text
                    .lines()
                    .find(|l| l.starts_with("dsh: note: .:"))
                    .unwrap_or_else(|| panic!("dsh {args:?} at {cols}: no note:\n{text}"));
                assert!(
                    note.contains("the newest of its 2 sessions (last event 2026-07-02 11:00)"),
                    "dsh {args:?}: {note}"
                );
                assert!(note.contains(&*p.newer.to_string_lossy()), "{note}");
                // JSON names what it read; text need not, but never names
                // the other one.
                let rest = text.replace(note, "");
                let ok = if json {
                    names_only(&rest, &p.newer, &p.older)
                } else {
                    !names_only(&rest, &p.older, &p.newer) && !rest.contains("older-00")
                };
                assert!(
                    ok,
                    "dsh {args:?} at {cols} columns reads the newer session only:\n{text}"
                );
            }
        }
    }
    // --quiet takes the same session without a word.
    let (text, _) = p.run(80, &["surface", "--quiet", "--json", "."]).unwrap();
    assert!(!text.contains("dsh: note:"), "{text}");
    assert!(names_only(&text, &p.newer, &p.older), "{text}");
}

#[test]
fn a_command_that_reads_many_logs_takes_all_of_the_project_s_sessions() {
    let p = project();
    let commands: Vec<Vec<String>> = vec![
        vec!["measure".into()],
        vec!["verify".into()],
        vec!["locks".into(), "--all".into()],
        vec!["sessions".into()],
        vec!["cache".into()],
        vec!["simulate".into()],
        vec!["usage".into(), "--session".into()],
        vec![
            "export".into(),
            "--force".into(),
            "--out".into(),
            p.out("export"),
        ],
        vec![
            "report".into(),
            "--force".into(),
            "-o".into(),
            p.out("report"),
        ],
    ];
    for cols in [80, 200] {
        for cmd in &commands {
            for json in [false, true] {
                let mut args: Vec<&str> = cmd.iter().map(String::as_str).collect();
                if json {
                    args.push("--json");
                }
                args.push(".");
                let Some((text, code)) = p.run(cols, &args) else {
                    return;
                };
                assert!(
                    !text.contains("dsh: note:"),
                    "dsh {args:?}: nothing to choose:\n{text}"
                );
                // These count what they wrote (JSON names every page).
                let two = match (args[0], json) {
                    ("export", true) => Some(r#""logs":2"#),
                    ("export", false) => Some("(2 session(s)"),
                    ("report", false) => Some("2 session page(s)"),
                    _ => None,
                };
                if let Some(two) = two {
                    assert!(text.contains(two), "dsh {args:?}: {text}");
                    continue;
                }
                for log in [&p.older, &p.newer] {
                    let id = log.parent().unwrap().file_name().unwrap().to_string_lossy();
                    assert!(
                        text.contains(&id[..8]),
                        "dsh {args:?} at {cols} columns (exit {code}) leaves {id} out:\n{text}"
                    );
                }
            }
        }
    }
}

#[test]
fn the_rule_holds_for_an_absolute_working_directory_and_one_that_is_gone() {
    let p = project();
    let dir = p.dir.to_str().unwrap();
    let home = p.env.dsh_home();
    let (text, code) = pty::run(
        80,
        None,
        &["surface", "--json", dir],
        &[("DSH_HOME", home.to_str().unwrap())],
    )
    .unwrap();
    assert_eq!(code, 0, "{text}");
    assert!(names_only(&text, &p.newer, &p.older), "{text}");
    std::fs::remove_dir(&p.dir).unwrap();
    let (text, _) = pty::run(
        80,
        None,
        &["surface", "--json", dir],
        &[("DSH_HOME", home.to_str().unwrap())],
    )
    .unwrap();
    assert!(names_only(&text, &p.newer, &p.older), "{text}");
    let (text, _) = pty::run(
        80,
        None,
        &["sessions", "--json", dir],
        &[("DSH_HOME", home.to_str().unwrap())],
    )
    .unwrap();
    assert!(
        text.contains("older-0001") && text.contains("newer-0002"),
        "{text}"
    );
}

#[test]
fn statusline_and_watch_take_the_newest_too() {
    let p = project();
    let home = p.env.dsh_home();
    let env = [("DSH_HOME", home.to_str().unwrap())];
    for cols in [80, 200] {
        let Some((text, code)) = pty::run(cols, Some(&p.dir), &["statusline", "--json"], &env)
        else {
            return;
        };
        assert_eq!(code, 0, "{text}");
        assert!(names_only(&text, &p.newer, &p.older), "{text}");
        // The line itself: one line, no note (a prompt would show it each time).
        let (line, _) = pty::run(
            cols,
            Some(&p.dir),
            &["statusline", "--format", "{session}"],
            &env,
        )
        .unwrap();
        assert_eq!(line.trim(), "newer-00");
        let Some(t) = pty::Tmux::start(cols, 24, &p.dir, &["watch", "."], &env) else {
            return;
        };
        let screen = t.wait_for("the view", |s| s.contains("pressure"));
        assert!(names_only(&screen, &p.newer, &p.older), "{screen}");
    }
}
