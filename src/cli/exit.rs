//! Exit statuses: part of the interface, documented in the README.

/// How `dsh` ends. The README's exit-code table lists exactly these.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Success.
    Ok = 0,
    /// The command ran and found something: violations, a log over its
    /// threshold with `--fail-over`, a busy lock.
    Findings = 1,
    /// Bad command line.
    Usage = 2,
    /// A log is unreadable or invalid (the reference refuses it).
    InvalidLog = 3,
    /// A write was refused: a live compaction lock or another writer holds the log.
    Busy = 4,
    /// The summarising provider failed (the failed bracket was recorded).
    Provider = 5,
    /// Anything else (a bug, an I/O failure while writing output).
    Internal = 70,
    /// Ended by SIGHUP (128 + 1); a compaction bracket in progress was closed.
    Hangup = 129,
    /// Ended by SIGINT (128 + 2, Ctrl-C); a compaction bracket in progress was closed.
    Interrupted = 130,
    /// Ended by SIGTERM (128 + 15); a compaction bracket in progress was closed.
    Terminated = 143,
}

impl Status {
    /// 0 when no log was refused, else 3: the status of a command that
    /// reads many logs and goes on past the refused ones.
    pub fn of_refusals(refused: usize) -> Status {
        if refused == 0 {
            Status::Ok
        } else {
            Status::InvalidLog
        }
    }

    /// The process exit code.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The worse of two statuses (for many-file commands).
    pub fn worst(self, other: Status) -> Status {
        fn rank(s: Status) -> u8 {
            match s {
                Status::Ok => 0,
                Status::Findings => 1,
                Status::InvalidLog => 2,
                Status::Busy => 3,
                Status::Provider => 4,
                Status::Usage => 5,
                Status::Internal => 6,
                Status::Hangup | Status::Interrupted | Status::Terminated => 7,
            }
        }
        if rank(other) > rank(self) {
            other
        } else {
            self
        }
    }
}

/// Pick the status for an error that reached the top.
pub fn status_for(err: &anyhow::Error) -> Status {
    for cause in err.chain() {
        if let Some(io) = cause.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::BrokenPipe
        {
            return Status::Ok;
        }
        if cause.is::<dsh::LoadError>() {
            return Status::InvalidLog;
        }
        if let Some(u) = cause.downcast_ref::<UsageError>() {
            let _ = u;
            return Status::Usage;
        }
        if let Some(s) = cause.downcast_ref::<StatusError>() {
            return s.status;
        }
    }
    Status::Internal
}

/// A usage problem found after argument parsing.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// An error that carries its own exit status.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct StatusError {
    /// The status.
    pub status: Status,
    /// The message.
    pub message: String,
}
