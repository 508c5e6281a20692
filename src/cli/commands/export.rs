//! `dsh export`: tidy tables of many sessions as Parquet, CSV or JSON Lines.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use dsh::export::{ExportOptions, Format, TABLES, TableWriter};
use dsh::meter::tokenizer::Encoding;
use dsh::sessions::ScanOptions;

use crate::cli::ctx::Ctx;
use crate::cli::exit::{Status, UsageError};
use crate::cli::render::export as show;

/// Export sessions as tables: sessions, requests, compactions, prunes,
/// locks, findings.
///
/// Reads every session under $DSH_HOME (default) or under the given homes,
/// directories or logs (each a home, labelled with its directory's name or
/// by --home-label NAME=PATH), in parallel, and writes one file per table
/// into OUT (`OUT/requests.parquet`, …): `sessions` (one row per session,
/// the columns of `dsh sessions`), `requests` (one row per model request
/// with reported usage: the agent's and the compaction summariser's, its
/// cost and, for the agent's, the prompt's size in DSH's estimate and its
/// pressure on the route's window), `compactions` (one row per compaction
/// bracket: seqs, mode as recorded, status, the shadowed range and its
/// tokens, the summary's), `prunes`, `locks` (every `compaction/start` and
/// how it ended) and `findings` (`dsh health`). Every row has its home, its
/// log's path in that home and a stable key (docs/export.md). Rows are
/// streamed out as logs are read; a log the reader refuses is left out and
/// reported.
///
/// OUT is written as a temporary directory beside it and renamed into place,
/// so it is whole or absent. Refused: an existing non-empty OUT without
/// --force.
///
/// --incremental (Parquet) writes Hive-style partitions
/// (`OUT/requests/date=2026-07-09/part-….parquet`) and a manifest, and on
/// later runs reads only new or grown logs, appending their new rows
/// atomically; a log that shrank or changed before its end is re-exported
/// whole and reported.
///
/// Exit status: 0; 3 when a log was refused (the others are exported).
///
/// With --json: `{"out", "format", "dryRun", "logs", "tables": [{"name",
/// "path", "rows", "columns"}], "refused": [{"file", "error", …}],
/// "incremental"?: {"run", "read", "new", "grown", "rewritten": [{"home",
/// "log", "why"}], "unchanged", "missing", "stillRefused", "recovered",
/// "files"},
/// "schema_version"}`.
#[derive(Debug, Clone, clap::Args)]
#[command(
    after_help = "Examples:\n  dsh export --out exports/today              # every session under $DSH_HOME, as Parquet\n  dsh export --format csv --out /tmp/x ~/.dsh  # CSV\n  dsh export -n --out exports/today            # what would be written\n  dsh export --tokenizer deepseek-v4 --out x   # request prompts in DeepSeek's own tokens too\n  duckdb -c \"SELECT model, sum(output_tokens) FROM 'exports/*/requests.parquet' GROUP BY ALL\""
)]
pub struct ExportArgs {
    /// DSH homes, directories of sessions or logs (default: $DSH_HOME).
    #[arg(value_name = "HOME|DIR|LOG")]
    pub paths: Vec<String>,
    /// Another home, labelled NAME in every table's `home` column (repeat
    /// for each developer's home).
    #[arg(long, value_name = "NAME=PATH")]
    pub home_label: Vec<String>,
    /// Hive-style partitions and a manifest; later runs read only new or
    /// grown logs and append (Parquet only).
    #[arg(long)]
    pub incremental: bool,
    /// The tables' format.
    #[arg(long, value_enum, default_value_t = FormatArg::Parquet)]
    pub format: FormatArg,
    /// The directory to write (created; one file per table).
    #[arg(long, short, value_name = "DIR")]
    pub out: PathBuf,
    /// Replace OUT when it exists and is not empty (not with --incremental,
    /// which extends it).
    #[arg(long)]
    pub force: bool,
    /// Read everything and report what would be written, writing nothing.
    #[arg(long, short = 'n')]
    pub dry_run: bool,
    /// The dsh config file (routes' context windows, [[prices]]).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Logs read at once (0: one per core).
    #[arg(long, short, value_name = "N", default_value_t = 0)]
    pub jobs: usize,
    /// With --format csv: write cells that begin with = + - @ tab or CR as
    /// they are. By default such a cell (a number aside) gets a leading `'`
    /// so a spreadsheet shows it as text instead of evaluating it (OWASP's
    /// advice against CSV injection).
    #[arg(long)]
    pub csv_formulas: bool,
    /// Also count each agent request's prompt with a real tokenizer
    /// (deepseek-v4: the request as DeepSeek renders it), in the requests
    /// table's provider_* columns.
    #[arg(long, value_name = "ENCODING", value_parser = ["o200k", "cl100k", "deepseek-v4"])]
    pub tokenizer: Option<String>,
}

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    /// Apache Parquet (Snappy).
    Parquet,
    /// CSV with a header row.
    Csv,
    /// JSON Lines.
    Jsonl,
}

impl FormatArg {
    fn format(self) -> Format {
        match self {
            FormatArg::Parquet => Format::Parquet,
            FormatArg::Csv => Format::Csv,
            FormatArg::Jsonl => Format::Jsonl,
        }
    }
}

/// Run it.
pub fn run(ctx: &mut Ctx, args: &ExportArgs) -> Result<Status> {
    let format = args.format.format();
    if !format.available() {
        return Err(UsageError(dsh::export::ExportError::NoParquet.to_string()).into());
    }
    if args.incremental {
        return incremental(ctx, args);
    }
    let out = &args.out;
    check_out(args)?;
    let opts = options(ctx, args)?;
    let (sources, mut refused) = crate::cli::homes::homes(ctx, &args.paths, &args.home_label)?;
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let tmp = if args.dry_run {
        None
    } else {
        std::fs::create_dir_all(&parent)
            .with_context(|| format!("{}: cannot create", parent.display()))?;
        Some(
            tempfile::Builder::new()
                .prefix(".dsh-export-")
                .tempdir_in(&parent)
                .with_context(|| format!("{}: cannot write", parent.display()))?,
        )
    };
    let file_name = |name: &str| format!("{name}.{}", format.as_str());
    let mut writers: Vec<Box<dyn TableWriter>> = Vec::new();
    // A failed write names its file once (the table's file under --out).
    let failed = |name: &str, e: dsh::export::ExportError| {
        anyhow::anyhow!(
            "{}: cannot write: {e}",
            Path::new(&args.out).join(file_name(name)).display()
        )
    };
    if let Some(t) = &tmp {
        for spec in &TABLES {
            let path = t.path().join(file_name(spec.name));
            let f = std::fs::File::create(&path)
                .with_context(|| format!("{}: cannot create", path.display()))?;
            writers.push(
                format
                    .writer_with(spec, f, !args.csv_formulas)
                    .map_err(|e| failed(spec.name, e))?,
            );
        }
    }
    let mut counts = [0u64; 6];
    let jobs = crate::cli::many::workers(args.jobs);
    let bar = ctx.progress(sources.len(), "exporting sessions");
    let mut logs = 0u64;
    dsh::export::export_many(&sources, &opts, jobs, &mut |_, r| {
        bar.inc(1);
        match r {
            Ok(rows) => {
                logs += 1;
                for (i, t) in rows.tables.iter().enumerate() {
                    counts[i] += t.len() as u64;
                    if let Some(w) = writers.get_mut(i) {
                        w.write_rows(t).map_err(|e| failed(TABLES[i].name, e))?;
                    }
                }
            }
            Err(e) => refused.push(e),
        }
        Ok::<(), anyhow::Error>(())
    })?;
    bar.finish_and_clear();
    for (w, spec) in writers.into_iter().zip(&TABLES) {
        w.finish().map_err(|e| failed(spec.name, e))?;
    }
    if let Some(t) = tmp {
        publish(t, out, &parent)?;
    }
    show::report(
        ctx,
        (&args.out, args.dry_run),
        format,
        logs,
        &counts,
        &refused,
        &file_name,
        None,
    )?;
    Ok(Status::of_refusals(refused.len()))
}

/// --out must name a directory dsh may fill: not `-`, not a non-empty one
/// without --force, not a file.
fn check_out(args: &ExportArgs) -> Result<()> {
    let out = &args.out;
    if out.as_os_str() == "-" {
        // `-` means standard output everywhere else; never a directory named `-`.
        return Err(UsageError(
            "--out -: export writes a directory of tables, which standard output cannot take: name a directory".into(),
        )
        .into());
    }
    if !args.force
        && let Ok(mut d) = std::fs::read_dir(out)
        && d.next().is_some()
    {
        return Err(UsageError(format!(
            "{}: exists and is not empty (--force replaces it)",
            out.display()
        ))
        .into());
    }
    not_a_file(out)?;
    Ok(())
}

/// OUT must not be a file (or a link to one).
fn not_a_file(out: &Path) -> Result<()> {
    if std::fs::symlink_metadata(out).is_ok_and(|m| !m.is_dir()) {
        return Err(UsageError(format!("{}: exists and is not a directory", out.display())).into());
    }
    Ok(())
}

/// Moves the finished tables into place: a directory already at --out
/// goes only once the new one is whole.
fn publish(t: tempfile::TempDir, out: &Path, parent: &Path) -> Result<()> {
    if std::fs::symlink_metadata(out).is_ok() {
        // --force (or an empty directory): the old one goes only once
        // the new one is whole.
        let old = tempfile::Builder::new()
            .prefix(".dsh-export-old-")
            .tempdir_in(parent)?;
        std::fs::rename(out, old.path().join("old"))
            .with_context(|| format!("{}: cannot replace", out.display()))?;
        let kept = t.keep();
        std::fs::rename(&kept, out).with_context(|| format!("{}: cannot write", out.display()))?;
        drop(old);
    } else {
        let kept = t.keep();
        std::fs::rename(&kept, out).with_context(|| format!("{}: cannot write", out.display()))?;
    }
    Ok(())
}

fn options(ctx: &Ctx, args: &ExportArgs) -> Result<ExportOptions> {
    let config = crate::cli::ctx::load_config(args.config.as_deref())?;
    Ok(ExportOptions {
        prices: config.price_table(),
        scan: ScanOptions {
            load: ctx.load_options(),
            no_meter: false,
            config,
        },
        thresholds: dsh::health::Thresholds::default(),
        tokenizer: args.tokenizer.as_deref().and_then(Encoding::parse),
    })
}

/// `--incremental`: the fleet export (dsh::fleet).
pub fn incremental(ctx: &mut Ctx, args: &ExportArgs) -> Result<Status> {
    if args.format != FormatArg::Parquet || !Format::Parquet.available() {
        return Err(
            UsageError("--incremental writes Parquet only (--format parquet)".into()).into(),
        );
    }
    if args.force {
        return Err(UsageError("--incremental extends OUT: --force does not apply".into()).into());
    }
    let out = &args.out;
    not_a_file(out)?;
    let fresh = std::fs::read_dir(out).map_or(true, |mut d| d.next().is_none());
    if !fresh && !out.join(dsh::fleet::MANIFEST).is_file() {
        return Err(UsageError(format!(
            "{}: not empty and holds no incremental export (no {})",
            out.display(),
            dsh::fleet::MANIFEST
        ))
        .into());
    }
    let opts = options(ctx, args)?;
    let (sources, mut refused) = crate::cli::homes::homes(ctx, &args.paths, &args.home_label)?;
    let inputs: Vec<dsh::fleet::Input> = sources
        .into_iter()
        .map(|(source, place)| dsh::fleet::Input { source, place })
        .collect();
    let bar = ctx.progress(inputs.len(), "exporting sessions");
    let jobs = crate::cli::many::workers(args.jobs);
    let mut rep = dsh::fleet::export(out, &inputs, &opts, jobs, args.dry_run, &mut || {
        bar.inc(1);
    })?;
    bar.finish_and_clear();
    refused.append(&mut rep.refused);
    let file_name = |name: &str| format!("{name}/");
    show::report(
        ctx,
        (&args.out, args.dry_run),
        Format::Parquet,
        rep.read,
        &rep.rows,
        &refused,
        &file_name,
        Some(&rep),
    )?;
    Ok(Status::of_refusals(refused.len()))
}
