//! The pager for long human output on a terminal, as git does it:
//! `$DSH_PAGER`, else `$PAGER`, else `less -FRX` (which exits at once when
//! the text fits one screen, keeps colors and leaves the text on the screen).
//! An empty value or `cat` means no pager; `--no-pager` turns it off.
//! The pager starts only once the output is longer than the terminal
//! (see [`super::Out::page_when_long`]): what fits is printed as it is, and a
//! terminal that reports no height gets no pager.
//!
//! The pager's input pipe is put on file descriptor 1 itself, so every
//! writer (buffered, raw, comfy-table) reaches it unchanged. The width of
//! the terminal and the color decision are taken first, from the terminal.

use std::io::{IsTerminal, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::{Child, Command, Stdio};

/// A running pager; [`Pager::finish`] hands it the end of the text and
/// waits until the user leaves it.
pub struct Pager {
    child: Child,
    saved_stdout: OwnedFd,
}

/// The pager command the environment asks for, or `None` for no pager.
fn command() -> Option<String> {
    let pick = |k: &str| std::env::var(k).ok();
    let cmd = pick("DSH_PAGER")
        .or_else(|| pick("PAGER"))
        .unwrap_or_else(|| "less -FRX".to_string());
    let cmd = cmd.trim().to_string();
    (!cmd.is_empty() && cmd != "cat").then_some(cmd)
}

/// The height of the terminal on standard output, when output there should
/// be paged once it outgrows it: a terminal of known size and a pager asked
/// for (a terminal that reports no size, as a bare pseudo-terminal does,
/// gets no pager).
pub fn screen_rows() -> Option<usize> {
    if !std::io::stdout().is_terminal() {
        return None;
    }
    command()?;
    // SAFETY: winsize is plain integers, for which all zeroes is valid.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: TIOCGWINSZ on fd 1 fills the winsize struct passed by pointer.
    let ok = unsafe { libc::ioctl(1, libc::TIOCGWINSZ, &mut ws) } == 0;
    (ok && ws.ws_row > 1).then(|| usize::from(ws.ws_row) - 1)
}

/// Start the pager on standard output. A pager that cannot be started
/// means printing directly.
pub fn start() -> Option<Pager> {
    if !std::io::stdout().is_terminal() {
        return None;
    }
    let cmd = command()?;
    // Decided from the terminal before stdout becomes the pipe.
    let _ = super::width();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(&cmd)
        .env(
            "LESS",
            std::env::var("LESS").unwrap_or_else(|_| "FRX".into()),
        )
        .env("LV", std::env::var("LV").unwrap_or_else(|_| "-c".into()))
        .stdin(Stdio::piped())
        .spawn()
        .ok()?;
    let pipe = child.stdin.as_ref()?.as_raw_fd();
    let _ = std::io::stdout().flush();
    // SAFETY: fd 1 is open for the life of the process; dup gives a new
    // descriptor that the OwnedFd alone owns.
    let saved = unsafe { libc::dup(1) };
    // SAFETY: both descriptors are open; dup2 replaces fd 1 atomically.
    if saved < 0 || unsafe { libc::dup2(pipe, 1) } < 0 {
        if saved >= 0 {
            // SAFETY: `saved` came from dup above and nothing else owns it.
            drop(unsafe { OwnedFd::from_raw_fd(saved) });
        }
        let _ = child.kill();
        let _ = child.wait();
        return None;
    }
    Some(Pager {
        child,
        // SAFETY: `saved` came from dup above and nothing else owns it.
        saved_stdout: unsafe { OwnedFd::from_raw_fd(saved) },
    })
}

impl Pager {
    /// Close the pager's input (it sees the end of the text) and wait for it.
    pub fn finish(mut self) {
        let _ = std::io::stdout().flush();
        // Put the terminal back on fd 1, which closes fd 1's copy of the pipe.
        // SAFETY: both descriptors are open.
        unsafe { libc::dup2(self.saved_stdout.as_raw_fd(), 1) };
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}
