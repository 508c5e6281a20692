//! SIGINT, SIGTERM and SIGHUP while a command writes (compaction §5.6).
//!
//! Outside a guarded section a signal ends dsh at once with 128 + the
//! signal's number, as the default disposition would (nothing is being
//! written). Inside one ([`guard`]) it only records the request in
//! [`CANCEL`]; the operation stops at its next safe point (a compaction
//! closes its open bracket with `compaction/end{error: "interrupted"}`),
//! and the command then exits with [`status`].

use std::sync::Mutex;

use dsh::cancel::Cancel;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

use crate::cli::exit::Status;

/// The cancellation request of the running command.
pub static CANCEL: Cancel = Cancel::new();

/// Whether a guarded section is running. The signal thread holds the lock
/// while it exits, so a section never starts after an exit began.
static GUARDED: Mutex<bool> = Mutex::new(false);

/// The exit status for a signal number.
pub fn status_for(sig: i32) -> Status {
    match sig {
        SIGHUP => Status::Hangup,
        SIGTERM => Status::Terminated,
        _ => Status::Interrupted,
    }
}

/// The exit status of a recorded signal, if one arrived.
pub fn status() -> Option<Status> {
    CANCEL.code().map(status_for)
}

/// Install the handlers (once). On failure signals keep their default
/// disposition.
fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
            return;
        };
        let _ = std::thread::Builder::new()
            .name("dsh-signals".into())
            .spawn(move || {
                for sig in signals.forever() {
                    let guarded = GUARDED.lock().unwrap_or_else(|e| e.into_inner());
                    if *guarded {
                        CANCEL.cancel(sig);
                    } else {
                        std::process::exit(i32::from(status_for(sig).code()));
                    }
                }
            });
    });
}

/// Catch the signals for the rest of the process: until a [`Guard`] exists
/// they end dsh at once.
pub fn catch() {
    install();
}

/// While the returned value lives, a signal is only recorded.
pub fn guard() -> Guard {
    install();
    *GUARDED.lock().unwrap_or_else(|e| e.into_inner()) = true;
    Guard
}

/// A guarded section; dropping it makes signals end dsh at once again.
pub struct Guard;

impl Drop for Guard {
    fn drop(&mut self) {
        *GUARDED.lock().unwrap_or_else(|e| e.into_inner()) = false;
    }
}
