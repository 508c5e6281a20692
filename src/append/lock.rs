//! The writer's advisory lock on the log file (`flock`), with an optional wait.

use std::fs::File;
use std::path::Path;
use std::time::{Duration, Instant};

use super::AppendError;

pub(super) enum LockKind {
    Shared,
    Exclusive,
}

pub(super) fn acquire(
    file: &File,
    kind: LockKind,
    wait: Option<Duration>,
    path: &Path,
) -> Result<(), AppendError> {
    let start = Instant::now();
    loop {
        let r = match kind {
            LockKind::Shared => fs4::FileExt::try_lock_shared(file),
            LockKind::Exclusive => fs4::FileExt::try_lock(file),
        };
        match r {
            Ok(()) => return Ok(()),
            Err(fs4::TryLockError::WouldBlock) => {}
            Err(fs4::TryLockError::Error(e)) => {
                return Err(AppendError::Open {
                    path: path.to_path_buf(),
                    op: "lock the log",
                    source: e,
                });
            }
        }
        let limit = wait.unwrap_or_default();
        if start.elapsed() >= limit {
            return Err(AppendError::WriterLocked {
                path: path.to_path_buf(),
                waited: if limit.is_zero() {
                    String::new()
                } else {
                    format!(" (waited {:.1} s)", limit.as_secs_f64())
                },
            });
        }
        std::thread::sleep(
            Duration::from_millis(25)
                .min(limit.saturating_sub(start.elapsed()))
                .max(Duration::from_millis(1)),
        );
    }
}
