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

/// A program running in a tmux pane of its own (a private tmux server,
/// ended when this is dropped): its screen can be read while it runs.
pub struct Tmux {
    socket: String,
}

static SERVERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl Tmux {
    /// Start `args` (dsh's, the binary under test) in a `cols` × `rows`
    /// pane, from `cwd`, with a pinned environment plus `env`; the pane
    /// stays when the program ends. `None` when tmux is not installed.
    pub fn start(
        cols: u16,
        rows: u16,
        cwd: &Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Option<Tmux> {
        if Command::new("tmux").arg("-V").output().is_err() {
            eprintln!("SKIPPED terminal test: tmux is not installed");
            return None;
        }
        let n = SERVERS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let socket = format!("dsh-test-{}-{n}", std::process::id());
        let home = cwd.join(".tmux-home");
        std::fs::create_dir_all(&home).unwrap();
        let mut vars = vec![
            format!("PATH={}", std::env::var("PATH").unwrap_or_default()),
            format!("HOME={}", home.display()),
            format!("XDG_CONFIG_HOME={}", home.join(".config").display()),
            format!("XDG_CACHE_HOME={}", home.join(".cache").display()),
            "TERM=xterm-256color".to_string(),
            "TZ=UTC".to_string(),
            "NO_COLOR=1".to_string(),
        ];
        vars.extend(env.iter().map(|(k, v)| format!("{k}={v}")));
        let bin = assert_cmd::cargo::cargo_bin("dsh");
        let cmd = format!(
            "cd {} && exec env -i {} {} {}",
            quote(&cwd.display().to_string()),
            vars.iter().map(|v| quote(v)).collect::<Vec<_>>().join(" "),
            quote(&bin.display().to_string()),
            args.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" ")
        );
        let t = Tmux { socket };
        let ok = t
            .tmux(&[
                "new-session",
                "-d",
                "-x",
                &cols.to_string(),
                "-y",
                &rows.to_string(),
                "-s",
                "t",
                &cmd,
                ";",
                "set-option",
                "-t",
                "t",
                "remain-on-exit",
                "on",
            ])
            .status
            .success();
        assert!(ok, "tmux new-session failed");
        Some(t)
    }

    fn tmux(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args)
            .output()
            .unwrap()
    }

    /// The pane's screen now, one line per row, trailing blanks trimmed.
    pub fn screen(&self) -> String {
        let out = self.tmux(&["capture-pane", "-p", "-t", "t"]);
        String::from_utf8_lossy(&out.stdout).trim_end().to_string()
    }

    /// The screen once `ok` holds for it (checked every 50 ms for up to 15
    /// s); on timeout the test fails showing the screen and `what`.
    #[track_caller]
    pub fn wait_for(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(15);
        loop {
            let s = self.screen();
            if ok(&s) {
                return s;
            }
            if std::time::Instant::now() > until {
                panic!("waited for {what}; the screen is:\n{s}");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// Type keys (tmux names: `C-c`).
    pub fn keys(&self, keys: &str) {
        self.tmux(&["send-keys", "-t", "t", keys]);
    }

    /// The program's exit status once it ended.
    pub fn exit_status(&self) -> Option<i32> {
        let text = self.pane();
        let mut parts = text.split(' ');
        let (dead, status, pid) = (parts.next()?, parts.next()?, parts.next()?);
        if dead != "1" {
            return None;
        }
        // tmux may not have reaped it yet: a zombie's status is the 52nd
        // field of /proc/PID/stat (as waitpid gives it).
        status.parse().ok().or_else(|| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let after = &stat[stat.rfind(')')? + 2..];
            let code: i32 = after.split(' ').nth(49)?.trim().parse().ok()?;
            Some(if code & 0x7f == 0 {
                (code >> 8) & 0xff
            } else {
                128 + (code & 0x7f)
            })
        })
    }

    /// `dead status pid [process state]` of the pane, for a failure
    /// message.
    pub fn pane(&self) -> String {
        let out = self.tmux(&[
            "display-message",
            "-p",
            "-t",
            "t",
            "#{pane_dead} #{pane_dead_status} #{pane_pid}",
        ]);
        let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let pid = text.rsplit(' ').next().unwrap_or("").to_string();
        let ps = Command::new("ps")
            .args(["-o", "stat=,wchan=", "-p", &pid])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        format!("{text} [{ps}]")
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
    }
}
