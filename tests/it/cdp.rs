//! A minimal Chrome DevTools Protocol client over `--remote-debugging-pipe`
//! (the browser reads commands on fd 3 and writes answers on fd 4, each
//! message JSON ended by a NUL byte), for the report's browser tests: emulate
//! dark mode or print media, evaluate scripts, take screenshots and print to
//! PDF in one headless Chromium, no network port and no extra crate.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value as J, json};

/// One headless browser with one page attached.
pub struct Browser {
    child: Child,
    to: File,
    from: BufReader<File>,
    next: u64,
    session: Option<String>,
    /// Events read while waiting for answers, oldest first.
    events: Vec<J>,
    _profile: tempfile::TempDir,
}

/// A pipe, both ends closed on exec (the child gets its copies by `dup2`).
fn pipe() -> (RawFd, RawFd) {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(rc, 0, "pipe2: {}", std::io::Error::last_os_error());
    (fds[0], fds[1])
}

const TIMEOUT: Duration = Duration::from_secs(60);

/// Headless Chromium as this machine runs it: no sandbox as root, no GPU,
/// and nothing that reaches for the (closed) network in the background.
pub const HEADLESS: [&str; 8] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
];

impl Browser {
    /// Start `browser` headless with a fresh profile, with `extra` flags.
    pub fn launch(browser: &Path, extra: &[&str]) -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let (cmd_r, cmd_w) = pipe();
        let (out_r, out_w) = pipe();
        let mut c = Command::new(browser);
        c.args(HEADLESS)
            .args([
                "--hide-scrollbars",
                "--remote-debugging-pipe",
                "--window-size=1280,2000",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .args(extra)
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: only async-signal-safe calls (fcntl, dup2) run in the child
        // between fork and exec. The ends are moved above 10 first, so that
        // one already numbered 3 or 4 is not clobbered; dup2 leaves the
        // copies at 3 and 4 open across exec.
        unsafe {
            c.pre_exec(move || {
                let high_r = libc::fcntl(cmd_r, libc::F_DUPFD_CLOEXEC, 10);
                let high_w = libc::fcntl(out_w, libc::F_DUPFD_CLOEXEC, 10);
                if high_r < 0
                    || high_w < 0
                    || libc::dup2(high_r, 3) < 0
                    || libc::dup2(high_w, 4) < 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = c.spawn().expect("chromium starts");
        // SAFETY: each descriptor came from pipe2 above and is owned once.
        let (to, from) = unsafe {
            libc::close(cmd_r);
            libc::close(out_w);
            (File::from_raw_fd(cmd_w), File::from_raw_fd(out_r))
        };
        let mut b = Browser {
            child,
            to,
            from: BufReader::new(from),
            next: 0,
            session: None,
            events: Vec::new(),
            _profile: profile,
        };
        let target = b.call("Target.createTarget", json!({"url": "about:blank"}));
        let id = target["targetId"].as_str().unwrap().to_string();
        let attached = b.call(
            "Target.attachToTarget",
            json!({"targetId": id, "flatten": true}),
        );
        b.session = Some(attached["sessionId"].as_str().unwrap().to_string());
        b.call("Page.enable", json!({}));
        b.call("Runtime.enable", json!({}));
        b.call("Network.enable", json!({}));
        b
    }

    /// Send a command to the page (or the browser before one is attached)
    /// and wait for its answer; a protocol error fails the test.
    pub fn call(&mut self, method: &str, params: J) -> J {
        self.next += 1;
        let id = self.next;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = &self.session {
            msg["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&msg).unwrap();
        bytes.push(0);
        self.to.write_all(&bytes).unwrap();
        self.to.flush().unwrap();
        let start = Instant::now();
        loop {
            assert!(start.elapsed() < TIMEOUT, "{method}: no answer");
            let m = self.read();
            if m["id"].as_u64() == Some(id) {
                if let Some(e) = m.get("error") {
                    panic!("{method}: {e}");
                }
                return m["result"].clone();
            }
            if m.get("method").is_some() {
                self.events.push(m);
            }
        }
    }

    fn read(&mut self) -> J {
        let mut buf = Vec::new();
        let n = self.from.read_until(0, &mut buf).unwrap();
        assert!(n > 0, "the browser closed its pipe");
        buf.pop();
        serde_json::from_slice(&buf).unwrap()
    }

    /// Wait for the page's event `method`, returning it.
    pub fn wait_for(&mut self, method: &str) -> J {
        let start = Instant::now();
        loop {
            if let Some(i) = self.events.iter().position(|e| e["method"] == method) {
                return self.events.remove(i);
            }
            assert!(start.elapsed() < TIMEOUT, "no {method}");
            let m = self.read();
            if m.get("method").is_some() {
                self.events.push(m);
            }
        }
    }

    /// Load a file and wait until it has loaded.
    pub fn open(&mut self, page: &Path) {
        self.events.clear();
        self.call(
            "Page.navigate",
            json!({"url": format!("file://{}", page.display())}),
        );
        self.wait_for("Page.loadEventFired");
    }

    /// The value of a script expression (JSON-serialisable).
    pub fn eval(&mut self, expr: &str) -> J {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true}),
        );
        if let Some(e) = r.get("exceptionDetails") {
            panic!("{expr}: {e}");
        }
        r["result"]["value"].clone()
    }

    /// The URLs the page requested since it was opened.
    pub fn requests(&self) -> Vec<String> {
        self.events
            .iter()
            .filter(|e| e["method"] == "Network.requestWillBeSent")
            .map(|e| {
                e["params"]["request"]["url"]
                    .as_str()
                    .unwrap_or("")
                    .to_string()
            })
            .collect()
    }

    /// Script errors and console errors the page reported so far.
    pub fn errors(&self) -> Vec<String> {
        self.events
            .iter()
            .filter(|e| {
                e["method"] == "Runtime.exceptionThrown"
                    || (e["method"] == "Runtime.consoleAPICalled" && e["params"]["type"] == "error")
            })
            .map(|e| e["params"].to_string())
            .collect()
    }

    /// Emulate a media type (`""`, `"print"`) and media features
    /// (`prefers-color-scheme`…).
    pub fn media(&mut self, media: &str, features: &[(&str, &str)]) {
        let features: Vec<J> = features
            .iter()
            .map(|(n, v)| json!({"name": n, "value": v}))
            .collect();
        self.call(
            "Emulation.setEmulatedMedia",
            json!({"media": media, "features": features}),
        );
    }

    /// Lay the page out as a screen `width` CSS pixels wide (a phone's
    /// when `mobile`: its viewport meta tag applies), `height` high.
    pub fn viewport(&mut self, width: u32, height: u32, mobile: bool) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile}),
        );
    }

    /// Turn the page's scripts off (or on again) for what is opened next.
    pub fn scripts(&mut self, on: bool) {
        self.call(
            "Emulation.setScriptExecutionDisabled",
            json!({"value": !on}),
        );
    }

    /// A PNG of the whole page.
    pub fn screenshot(&mut self) -> Vec<u8> {
        let r = self.call(
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": true}),
        );
        base64(r["data"].as_str().unwrap())
    }

    /// The page printed to PDF (A4, backgrounds as the print CSS has them).
    pub fn pdf(&mut self) -> Vec<u8> {
        let r = self.call(
            "Page.printToPDF",
            json!({"paperWidth": 8.27, "paperHeight": 11.69, "printBackground": false}),
        );
        base64(r["data"].as_str().unwrap())
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Standard base64 (with padding) to bytes.
fn base64(s: &str) -> Vec<u8> {
    let val = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => (c - b'A') as u32,
            b'a'..=b'z' => (c - b'a' + 26) as u32,
            b'0'..=b'9' => (c - b'0' + 52) as u32,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        }
    };
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    for chunk in s.as_bytes().chunks(4) {
        let pad = chunk.iter().filter(|&&c| c == b'=').count();
        let mut n = 0u32;
        for &c in chunk {
            n = n << 6 | if c == b'=' { 0 } else { val(c) };
        }
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    out
}

#[test]
fn base64_decodes() {
    assert_eq!(base64("aGVsbG8="), b"hello");
    assert_eq!(base64("aGk="), b"hi");
    assert_eq!(base64("YWJj"), b"abc");
}
