//! What the commands that write (prune, compact, locks --release) share:
//! the clock, writer options and errors, and the parsing of their time
//! flags.

use std::time::Duration;

use anyhow::Result;
use dsh::append::{AppendError, AppendOptions};

use super::ctx::Ctx;
use super::exit::{Status, StatusError, UsageError};

/// The current time in epoch milliseconds.
pub fn now_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_millis() as f64)
}

/// Turn a writer error into an error with the right exit status.
pub fn append_error(e: AppendError) -> anyhow::Error {
    let status = match &e {
        AppendError::Load(_) => {
            let AppendError::Load(le) = e else {
                unreachable!()
            };
            return le.into();
        }
        AppendError::Unsupported { .. } => Status::InvalidLog,
        AppendError::Stdin
        | AppendError::NotRegular { .. }
        | AppendError::Symlink { .. }
        | AppendError::ReadOnly { .. }
        | AppendError::TargetExists { .. }
        | AppendError::BadTarget { .. } => Status::Usage,
        // --out names a place the copy cannot be made (no such directory,
        // no permission): nothing was written; a usage problem.
        AppendError::Open {
            op: "create the copy",
            source,
            ..
        } if matches!(
            source.kind(),
            std::io::ErrorKind::NotFound
                | std::io::ErrorKind::PermissionDenied
                | std::io::ErrorKind::ReadOnlyFilesystem
        ) =>
        {
            Status::Usage
        }
        e if e.is_busy() => Status::Busy,
        _ => Status::Internal,
    };
    StatusError {
        status,
        message: e.to_string(),
    }
    .into()
}

/// Writer options from the command line.
pub fn append_options(
    ctx: &Ctx,
    wait: Option<f64>,
    pause_ms: Option<u64>,
) -> Result<AppendOptions> {
    let wait = wait.map(|s| seconds("--wait", s)).transpose()?;
    Ok(AppendOptions {
        wait,
        load: ctx.load_options(),
        debug_pause: pause_ms.map(Duration::from_millis),
        ..AppendOptions::default()
    })
}

/// A seconds flag as a duration: a usage error (exit 2) when it is negative,
/// not a number, or too large for one.
pub fn seconds(flag: &str, s: f64) -> Result<Duration> {
    match Duration::try_from_secs_f64(s) {
        Ok(d) if s >= 0.0 => Ok(d),
        // `{:e}` keeps 1e300 short; a plain figure reads better otherwise.
        _ if s.abs() >= 1e9 => Err(UsageError(format!(
            "{flag} {s:e}: expected seconds >= 0 (and not absurdly large)"
        ))
        .into()),
        _ => Err(UsageError(format!(
            "{flag} {s}: expected seconds >= 0 (and not absurdly large)"
        ))
        .into()),
    }
}

/// A `--time` in ms since the epoch: at most 2^53 (exactly representable,
/// as the reference's numbers are), else a usage error.
pub fn time_ms(t: u64) -> Result<f64> {
    if t > 1 << 53 {
        return Err(UsageError(format!(
            "--time {t}: expected milliseconds since the epoch, at most 9007199254740992"
        ))
        .into());
    }
    Ok(t as f64)
}
