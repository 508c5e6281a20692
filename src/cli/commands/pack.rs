//! `dsh pack` and `dsh unpack`: convert between a plain JSONL log and the
//! harness's multi-frame Zstandard artifact.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use dsh::pack::{Batching, Converted, PackError};

use crate::cli::ctx::Ctx;
use crate::cli::exit::{Status, StatusError, UsageError};
use crate::cli::render;
use crate::cli::render::outln;
use crate::cli::writes::Target;

/// Write a log as the harness stores it: a multi-frame `.jsonl.zstd` artifact.
///
/// The first Zstandard frame holds exactly the header line; then one
/// complete, checksummed frame per batch of lines, as the harness's writer
/// appends them. A plain log does not record its append batches, so by
/// default a turn (its lines up to `turn/end`) makes one frame; `--lines N`
/// makes one frame per N lines instead. The input may be plain or an
/// artifact (re-framed); nothing in it is changed: `dsh unpack` gives the
/// same bytes back. The input file is only read; OUT is written to a
/// temporary file beside it and renamed into place, so it is whole or absent.
///
/// Refused: an input with a torn last line (it would be dropped; exit 3),
/// OUT naming the input, an existing OUT without --force, a terminal as OUT.
///
/// With --json: `{"file", "out", "lines", "frames", "plainBytes",
/// "writtenBytes", "input": "jsonl"|"zstd", "dryRun", "schema_version"}`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  dsh pack session.jsonl -o session.jsonl.zstd\n  dsh pack --lines 200 big.jsonl -o big.jsonl.zstd\n  dsh pack -n --json session.jsonl -o x.zstd    # sizes only, nothing written"
)]
pub struct PackArgs {
    /// The log to pack (plain or Zstandard; `-` for standard input).
    #[arg(value_name = "LOG")]
    pub log: String,
    /// Where to write the artifact (`-` for standard output, not a terminal).
    #[arg(long, short, value_name = "OUT")]
    pub out: PathBuf,
    /// One frame per N lines instead of one per turn.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    pub lines: Option<u64>,
    /// Replace OUT if it exists.
    #[arg(long)]
    pub force: bool,
    /// Convert and report the sizes, writing nothing.
    #[arg(long, short = 'n')]
    pub dry_run: bool,
}

/// Write an artifact's lines back as a plain JSONL log.
///
/// The reverse of `dsh pack`: every line of every frame, in order, as plain
/// JSONL (a plain input is copied as it is). Frames are decompressed one at
/// a time, so memory stays bounded whatever the artifact's size. OUT is
/// written to a temporary file beside it and renamed into place.
///
/// Refused: an artifact whose last frame is torn (its lost lines cannot be
/// recovered; exit 3), OUT naming the input, an existing OUT without
/// --force, a terminal as OUT.
///
/// With --json: the same document as `dsh pack --json`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  dsh unpack session.jsonl.zstd -o session.jsonl\n  dsh unpack session.jsonl.zstd -o - | jq -c 'select(.type == \"turn/end\")'"
)]
pub struct UnpackArgs {
    /// The artifact to unpack (`-` for standard input).
    #[arg(value_name = "LOG")]
    pub log: String,
    /// Where to write the plain log (`-` for standard output).
    #[arg(long, short, value_name = "OUT")]
    pub out: PathBuf,
    /// Replace OUT if it exists.
    #[arg(long)]
    pub force: bool,
    /// Convert and report the sizes, writing nothing.
    #[arg(long, short = 'n')]
    pub dry_run: bool,
}

/// Run `dsh pack`.
pub fn run_pack(ctx: &mut Ctx, args: &PackArgs) -> Result<Status> {
    let batching = match args.lines {
        Some(n) => Batching::Lines(usize::try_from(n).unwrap_or(usize::MAX)),
        None => Batching::Turns,
    };
    convert(
        ctx,
        &args.log,
        &args.out,
        args.force,
        args.dry_run,
        true,
        |src, limits, w| dsh::pack::pack(src, limits, batching, w),
    )
}

/// Run `dsh unpack`.
pub fn run_unpack(ctx: &mut Ctx, args: &UnpackArgs) -> Result<Status> {
    convert(
        ctx,
        &args.log,
        &args.out,
        args.force,
        args.dry_run,
        false,
        |src, limits, w| dsh::pack::unpack(src, limits, w),
    )
}

fn convert(
    ctx: &mut Ctx,
    log: &str,
    out: &Path,
    force: bool,
    dry_run: bool,
    binary: bool,
    run: impl FnOnce(&dsh::LogSource, dsh::log::Limits, &mut dyn Write) -> Result<Converted, PackError>,
) -> Result<Status> {
    let to_stdout = out.as_os_str() == "-";
    if to_stdout && ctx.json && !dry_run {
        return Err(
            UsageError("--json needs -o FILE (standard output carries the log)".into()).into(),
        );
    }
    if to_stdout && binary && !dry_run && std::io::stdout().is_terminal() {
        return Err(UsageError(
            "refusing to write a Zstandard artifact to a terminal: give -o FILE, or pipe it".into(),
        )
        .into());
    }
    let src = ctx.resolve(log)?;
    let result = if dry_run {
        run(&src, ctx.limits, &mut std::io::sink())
    } else if to_stdout {
        // The log's own bytes, or an artifact: for programs, never escaped.
        ctx.out.set_bytes();
        let mut w = ctx.out.stream();
        run(&src, ctx.limits, &mut w)
    } else {
        let target = Target::prepare(out, src.path(), force)?;
        let mut file = std::io::BufWriter::with_capacity(256 << 10, target.tmp.as_file());
        let r = run(&src, ctx.limits, &mut file);
        match r {
            Ok(done) => {
                file.flush()
                    .and_then(|_| target.tmp.as_file().sync_all())
                    .with_context(|| format!("{}: cannot write", out.display()))?;
                drop(file);
                target.commit(force)?;
                Ok(done)
            }
            Err(e) => Err(e),
        }
    };
    let done = match result {
        Ok(d) => d,
        Err(PackError::Load(e)) => return Err(e.into()),
        Err(e @ (PackError::TornTail { .. } | PackError::CutFrame { .. })) => {
            return Err(StatusError {
                status: Status::InvalidLog,
                message: format!("{}: {e}", src.display()),
            }
            .into());
        }
        Err(PackError::Write(e)) => {
            return Err(anyhow::Error::new(e).context(format!("{}: cannot write", out.display())));
        }
    };
    report(ctx, &src, out, to_stdout, dry_run, &done)?;
    Ok(Status::Ok)
}

fn report(
    ctx: &mut Ctx,
    src: &dsh::LogSource,
    out: &Path,
    to_stdout: bool,
    dry_run: bool,
    done: &Converted,
) -> Result<()> {
    if ctx.json {
        let doc = dsh::doc::pack::Pack::of(done, src.display(), out.display().to_string(), dry_run);
        ctx.print_doc(&doc)?;
        return Ok(());
    }
    if to_stdout && !dry_run {
        // Standard output carries the log; the summary would corrupt it.
        return Ok(());
    }
    let ratio = if done.plain_bytes > 0 {
        format!(
            " ({:.1}% of {})",
            done.written_bytes as f64 * 100.0 / done.plain_bytes as f64,
            bytes(done.plain_bytes)
        )
    } else {
        String::new()
    };
    let verb = if dry_run { "would write" } else { "wrote" };
    outln!(
        ctx.out,
        "{verb} {}: {} lines in {} frame(s), {}{ratio}",
        out.display(),
        render::num(done.lines),
        render::num(done.frames),
        bytes(done.written_bytes),
    )?;
    Ok(())
}

/// A byte count the way people read sizes (KiB, MiB, GiB).
fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut x = n as f64 / 1024.0;
    let mut unit = 0;
    while x >= 1024.0 && unit < UNITS.len() - 1 {
        x /= 1024.0;
        unit += 1;
    }
    format!("{x:.1} {}", UNITS[unit])
}
