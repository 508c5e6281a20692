//! Running dsh in a real pseudo-terminal: `script` for a command that
//! ends, `tmux` for one that keeps the screen (`dsh watch`). Each says it
//! skips when its tool is not installed.

use std::path::Path;
use std::process::Command;

/// Quote for `sh`.
pub fn quote(a: &str) -> String {
    format!("'{}'", a.replace('\'', r"'\''"))
}

/// `dsh ARGS` in a pseudo-terminal `cols` wide and 50 lines high, run from
/// `cwd` (default: here), with `env` set over a pinned environment (an
/// empty HOME, no user config, `NO_COLOR`, TZ=UTC, no pager): its screen
/// text (stdout and stderr, `\r` and escape sequences removed) and exit
/// status. `None` when `script` is not installed.
pub fn run(
    cols: u16,
    cwd: Option<&Path>,
    args: &[&str],
    env: &[(&str, &str)],
) -> Option<(String, i32)> {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("SKIPPED pseudo-terminal test: `script` (util-linux) is not installed");
        return None;
    }
    let bin = assert_cmd::cargo::cargo_bin("dsh");
    let quoted: Vec<String> = std::iter::once(bin.display().to_string())
        .chain(args.iter().map(|a| a.to_string()))
        .map(|a| quote(&a))
        .collect();
    let cd = cwd
        .map(|d| format!("cd {} && ", quote(&d.display().to_string())))
        .unwrap_or_default();
    let cmd = format!("stty cols {cols} rows 50; {cd}{}", quoted.join(" "));
    let home = tempfile::tempdir().unwrap();
    let out = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .env_remove("COLUMNS")
        .env_remove("DSH_HOME")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("PAGER")
        .env("NO_COLOR", "1")
        .env("TERM", "xterm-256color")
        .env("TZ", "UTC")
        .env("DSH_PAGER", "cat")
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join(".config"))
        .env("XDG_CACHE_HOME", home.path().join(".cache"))
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let ansi = regex::Regex::new(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07").unwrap();
    let text = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    Some((
        ansi.replace_all(&text, "").into_owned(),
        out.status.code().unwrap_or(-1),
    ))
}
