//! `dsh watch` against a log a test appends to in bursts, the way the
//! harness writes: streamed chunks, a line written in two halves, a
//! compaction bracket, a new lifecycle; plain and as Zstandard frames. The
//! screen is read (tmux) after each burst, at 80 and 200 columns; into a
//! pipe each change is one plain line; Ctrl-C ends it with status 0.

use std::io::{BufRead, Write};
use std::path::Path;

use crate::pty::Tmux;
use crate::support::sample;

/// `samples/compacted.jsonl` cut into the bursts a harness would write.
struct Bursts {
    /// Header and the first events, up to the first step's chunks.
    start: Vec<String>,
    /// The first step's chunks (the model streaming).
    chunks: Vec<String>,
    /// The assistant message that ends the step (written in two halves).
    message: String,
    /// The rest of turn 1, turn 2 with a prune and a compaction bracket.
    compaction: Vec<String>,
    /// The rest, then a `session/end-seed`: a new lifecycle.
    lifecycle: Vec<String>,
}

fn bursts() -> Bursts {
    let text = std::fs::read_to_string(sample("compacted.jsonl")).unwrap();
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    let is_chunk =
        |l: &str| l.contains(r#""type":"assistant/chunk""#) || l.contains(r#"-chunks","seq0""#);
    let a = lines.iter().position(|l| is_chunk(l)).unwrap();
    let b = a + lines[a..].iter().take_while(|l| is_chunk(l)).count();
    let c = lines
        .iter()
        .position(|l| l.contains(r#""type":"compaction/end""#))
        .unwrap()
        + 1;
    let mut lifecycle = lines[c..].to_vec();
    lifecycle.push(r#"{"type":"session/end-seed","seq":55,"time":1767225600350,"data":{}}"#.into());
    Bursts {
        start: lines[..a].to_vec(),
        chunks: lines[a..b].to_vec(),
        message: lines[b].clone(),
        compaction: lines[b + 1..c].to_vec(),
        lifecycle,
    }
}

fn text(lines: &[String]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// Appends to a log as the harness does: plain lines, or one Zstandard
/// frame per batch.
struct Writer {
    file: std::fs::File,
    zstd: bool,
}

impl Writer {
    fn create(path: &Path, zstd: bool, header: &str) -> Writer {
        let mut w = Writer {
            file: std::fs::File::create(path).unwrap(),
            zstd,
        };
        w.batch(&format!("{header}\n"));
        w
    }

    fn write(&mut self, bytes: &[u8]) {
        self.file.write_all(bytes).unwrap();
        self.file.flush().unwrap();
    }

    fn batch(&mut self, lines: &str) {
        let bytes = self.encode(lines);
        self.write(&bytes);
    }

    fn encode(&self, lines: &str) -> Vec<u8> {
        if self.zstd {
            zstd::bulk::compress(lines.as_bytes(), 3).unwrap()
        } else {
            lines.as_bytes().to_vec()
        }
    }
}

/// Run the bursts against `dsh watch` in a tmux pane `cols` wide.
fn watch_bursts(cols: u16, zstd: bool) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join(if zstd {
        "session.jsonl.zstd"
    } else {
        "session.jsonl"
    });
    let b = bursts();
    let mut w = Writer::create(&log, zstd, &b.start[0]);
    w.batch(&text(&b.start[1..]));
    let log_s = log.to_str().unwrap().to_string();
    let Some(t) = Tmux::start(
        cols,
        24,
        dir.path(),
        &["watch", "--interval", "50ms", &log_s],
        &[],
    ) else {
        return;
    };
    let first = t.wait_for("the first read", |s| s.contains("pressure"));
    assert!(
        first.contains("lifecycle 1") && first.contains("0 compaction(s)"),
        "{first}"
    );
    assert!(
        first.lines().all(|l| l.chars().count() <= cols as usize),
        "{first}"
    );
    let pressure = |s: &str| {
        s.lines()
            .find(|l| l.starts_with("pressure"))
            .unwrap_or("")
            .to_string()
    };
    let before = pressure(&first);

    // The model streams: counted, nothing else moves.
    w.batch(&text(&b.chunks));
    let s = t.wait_for("streamed chunks", |s| s.contains("streaming ("));
    assert_eq!(pressure(&s), before, "chunks change no figure:\n{s}");

    // The message in two halves: the first half is waited on.
    let bytes = w.encode(&format!("{}\n", b.message));
    let half = bytes.len() / 2;
    w.write(&bytes[..half]);
    let s = t.wait_for("a line being written", |s| s.contains("writing a line"));
    assert!(!s.contains("error"), "a torn tail is not damage:\n{s}");
    w.write(&bytes[half..]);
    // A screen caught mid-redraw shows neither; wait for the figures.
    let s = t.wait_for("the message read", |s| {
        !s.contains("writing a line") && !s.contains("streaming (") && s.contains("pressure")
    });
    assert!(!s.contains("error"), "{s}");
    assert!(s.contains("cache hit"), "the last request: {s}");

    // A prune and a compaction bracket.
    w.batch(&text(&b.compaction));
    let s = t.wait_for("the compaction", |s| {
        s.contains("1 compaction(s), 1 prune(s)")
    });
    assert_ne!(pressure(&s), before, "the surface changed:\n{s}");

    // A new lifecycle.
    w.batch(&text(&b.lifecycle));
    let s = t.wait_for("the new lifecycle", |s| s.contains("lifecycle 2"));
    assert!(s.contains("forecast"), "{s}");
    // Redrawn in place by dsh's own controls: one view, no escapes shown.
    assert_eq!(s.matches("dsh watch").count(), 1, "{s}");
    assert!(!s.contains("\\u{1b}"), "{s}");
    assert!(s.lines().all(|l| l.chars().count() <= cols as usize), "{s}");

    // Ctrl-C ends it cleanly.
    t.keys("C-c");
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let status = loop {
        if let Some(st) = t.exit_status() {
            break st;
        }
        assert!(
            std::time::Instant::now() < until,
            "still running ({}):\n{}",
            t.pane(),
            t.screen()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(status, 0, "{}", t.screen());
    // It never wrote: the log holds exactly what the test wrote.
    let written = std::fs::read(&log).unwrap().len();
    assert_eq!(w.file.metadata().unwrap().len() as usize, written);
}

#[test]
fn watch_follows_a_plain_log_at_80_and_200_columns() {
    watch_bursts(80, false);
    watch_bursts(200, false);
}

#[test]
fn watch_follows_zstandard_frames() {
    watch_bursts(80, true);
}

#[test]
fn into_a_pipe_each_change_is_one_plain_line() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("session.jsonl");
    let b = bursts();
    let mut w = Writer::create(&log, false, &b.start[0]);
    w.batch(&text(&b.start[1..]));
    let mut child = crate::support::dsh_process()
        .args(["watch", "--interval", "50ms"])
        .arg(&log)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert!(
        line.contains("lifecycle 1") && !line.contains('\x1b'),
        "{line:?}"
    );
    w.batch(&text(&b.chunks));
    w.batch(&format!("{}\n", b.message));
    w.batch(&text(&b.compaction));
    let mut seen = Vec::new();
    while !seen.iter().any(|l: &String| l.contains("1 compaction(s)")) {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "ended early: {seen:?}"
        );
        assert!(!line.contains('\x1b'), "{line:?}");
        seen.push(line.clone());
    }
    // SIGINT, as Ctrl-C sends it: a clean end.
    // SAFETY: signalling the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}
