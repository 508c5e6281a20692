//! What the commands that write (prune, compact, locks --release) share:
//! the clock, writer options and errors, and the parsing of their time
//! flags.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;

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

/// A temporary file beside OUT, renamed over it once complete.
pub(crate) struct Target {
    /// The temporary file.
    pub(crate) tmp: tempfile::NamedTempFile,
    out: PathBuf,
}

impl Target {
    pub(crate) fn prepare(out: &Path, input: Option<&Path>, force: bool) -> Result<Target> {
        let dir = match out.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if !dir.is_dir() {
            return Err(UsageError(format!(
                "{}: no such directory for the output",
                dir.display()
            ))
            .into());
        }
        if let (Some(input), Ok(o)) = (input, std::fs::metadata(out))
            && let Ok(i) = std::fs::metadata(input)
        {
            use std::os::unix::fs::MetadataExt;
            if (i.dev(), i.ino()) == (o.dev(), o.ino()) {
                return Err(UsageError(format!(
                    "{}: the output is the input; dsh never rewrites a log in place",
                    out.display()
                ))
                .into());
            }
        }
        if !force && std::fs::symlink_metadata(out).is_ok() {
            return Err(UsageError(format!(
                "{}: already exists (--force replaces it)",
                out.display()
            ))
            .into());
        }
        // Created as any new file is (0666 less the umask), not 0600.
        let tmp = tempfile::Builder::new()
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
            .prefix(".dsh-")
            .suffix(".tmp")
            .tempfile_in(dir)
            .with_context(|| format!("{}: cannot create a file there", dir.display()))?;
        Ok(Target {
            tmp,
            out: out.to_path_buf(),
        })
    }

    pub(crate) fn commit(self, force: bool) -> Result<()> {
        let out = self.out;
        let r = if force {
            self.tmp.persist(&out).map(|_| ())
        } else {
            self.tmp.persist_noclobber(&out).map(|_| ())
        };
        r.map_err(|e| {
            if e.error.kind() == std::io::ErrorKind::AlreadyExists {
                UsageError(format!(
                    "{}: already exists (--force replaces it)",
                    out.display()
                ))
                .into()
            } else {
                anyhow::Error::new(e.error).context(format!("{}: cannot write", out.display()))
            }
        })
    }
}

/// Write `bytes` as the whole of OUT: beside it, synced, then renamed into
/// place ([`Target`]: never over the input, nor an existing file without
/// `force`).
pub(crate) fn write_whole(
    out: &Path,
    input: Option<&Path>,
    force: bool,
    bytes: &[u8],
) -> Result<()> {
    use std::io::Write;
    let target = Target::prepare(out, input, force)?;
    {
        let mut f = std::io::BufWriter::new(target.tmp.as_file());
        f.write_all(bytes)
            .and_then(|_| f.flush())
            .with_context(|| format!("{}: cannot write", out.display()))?;
    }
    target
        .tmp
        .as_file()
        .sync_all()
        .with_context(|| format!("{}: cannot write", out.display()))?;
    target.commit(force)
}

/// The reader of stdout went away (dsh ends quietly).
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
