//! `dsh report`: a self-contained HTML page per session.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use dsh::json::{OwnedValue, Value};
use dsh::log::LogSource;
use dsh::report::html::{IndexEntry, Section};
use dsh::report::{ReportError, ReportOptions, SessionReport};

use crate::cli::ctx::{Ctx, SCHEMA_VERSION};
use crate::cli::exit::{Status, UsageError};
use crate::cli::render;
use crate::cli::render::outln;
use crate::cli::writes::Target;

/// Write a session as one self-contained HTML page (charts, tables, the
/// summaries of its compactions), or many sessions as a directory of pages
/// with an index.
///
/// The page needs no network: CSS and the charts (hand-written SVG) are
/// inline, and so is one tiny script that only records script errors. It
/// shows the pressure per model request (DSH's heuristic prompt size, the
/// provider-reported prompt, the threshold and the window, with every
/// compaction and prune marked), the prompt cache (predicted and reported
/// hits, the cost of the predicted misses, as `dsh cache`), the cost over
/// time (as `dsh usage`), tables of compactions (with what each summary
/// kept, as `dsh view --survival`), prunes, locks and verify findings, and
/// the transcript beside the model's view (as `dsh view`), one collapsible
/// block per turn (the last 3,000 events of a longer log). Every chart has a text description and a data table;
/// the page follows the system's light or dark mode and prints cleanly.
/// Per-request series longer than --max-points are downsampled (each point
/// the largest of its bucket), and the page says so.
///
/// One LOG: OUT is the page (`-` for standard output). Several LOGs, a
/// directory, a home, or no LOG (every session under $DSH_HOME): OUT is a
/// directory (created if missing) that receives `index.html` and one
/// `<session>.html` per session. Files are written to a temporary file
/// beside them and renamed into place; an existing file is refused without
/// --force.
///
/// With --json: `{"out", "index", "pages": [{"file", "session", "path",
/// "bytes", "requests", "compactions", "prunes", "downsampled"}],
/// "refused": [{"file", "error"}], "bytes", "schema_version"}`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  dsh report session.jsonl -o report.html\n  dsh report -o - session.jsonl > report.html\n  dsh report ~/.dsh -o reports/            # reports/index.html + one page per session\n  dsh report --json a.jsonl b.jsonl -o out/ --force"
)]
pub struct ReportArgs {
    /// Logs, session directories or homes (default: every session under $DSH_HOME).
    #[arg(value_name = "LOG")]
    pub logs: Vec<String>,
    /// The page (one LOG; `-` for standard output) or the directory (many).
    #[arg(long, short, value_name = "OUT")]
    pub out: PathBuf,
    /// Replace existing files.
    #[arg(long)]
    pub force: bool,
    /// Draw at most N points per per-request chart (downsampling beyond).
    #[arg(long, value_name = "N", default_value_t = dsh::report::DEFAULT_MAX_POINTS as u64,
          value_parser = clap::value_parser!(u64).range(10..=1_000_000))]
    pub max_points: u64,
    /// Leave out the side-by-side view and the survival figures (the
    /// replaced spans are not read again).
    #[arg(long)]
    pub no_view: bool,
    /// A dsh config file (policy, capacities, prices).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// What one page held.
struct Page {
    file: String,
    session: String,
    path: String,
    bytes: u64,
    requests: usize,
    compactions: usize,
    prunes: usize,
    downsampled: bool,
}

fn page_html(r: &SessionReport) -> String {
    let sections: Vec<Section> = match &r.view {
        Some(v) => vec![dsh::report::side::section(v, r.survival.as_ref())],
        None => Vec::new(),
    };
    dsh::report::html::session_page(r, &sections)
}

/// Run it.
pub fn run(ctx: &mut Ctx, args: &ReportArgs) -> Result<Status> {
    let config = crate::cli::ctx::load_config(args.config.as_deref())?;
    let opts = ReportOptions {
        load: ctx.load_options(),
        prices: config.price_table(),
        config,
        max_points: args.max_points as usize,
        side_by_side: !args.no_view,
    };
    let mut inputs = args.logs.clone();
    let all = inputs.is_empty();
    if all {
        inputs.push(ctx.home_sessions()?.display().to_string());
    }
    let single =
        inputs.len() == 1 && !all && !dsh::log::lookup::is_tree(&inputs[0], ctx.home.as_deref());
    let to_stdout = args.out.as_os_str() == "-";
    if to_stdout && ctx.json {
        return Err(
            UsageError("--json needs -o FILE (standard output carries the page)".into()).into(),
        );
    }
    if single {
        let src = ctx.resolve(&inputs[0])?;
        let r = match dsh::report::build(&src, &opts) {
            Ok(r) => r,
            Err(ReportError::Load(e)) => return Ok(ctx.report_load_error(&e)),
            Err(e) => return Err(e.into()),
        };
        warn(ctx, &r);
        let html = page_html(&r);
        if to_stdout {
            let mut w = ctx.out.stream();
            w.write_all(html.as_bytes())?;
            w.flush()?;
            return Ok(Status::Ok);
        }
        write_file(&args.out, src.path(), args.force, html.as_bytes())?;
        let page = page_of(&r, &args.out, html.len());
        finish(ctx, &args.out, None, &[page], &[])?;
        return Ok(Status::Ok);
    }
    if to_stdout {
        return Err(UsageError(
            "many sessions make a directory of pages: give -o DIR, not -o -".into(),
        )
        .into());
    }
    let dir = &args.out;
    if dir.exists() && !dir.is_dir() {
        return Err(UsageError(format!(
            "{}: many sessions make a directory of pages, and this is a file",
            dir.display()
        ))
        .into());
    }
    let index = dir.join("index.html");
    if !args.force && index.exists() {
        return Err(UsageError(format!(
            "{}: already exists (--force replaces it)",
            index.display()
        ))
        .into());
    }
    let mut sources: Vec<LogSource> = Vec::new();
    let mut refused: Vec<(String, String)> = Vec::new();
    for (arg, found) in inputs.iter().zip(ctx.resolve_each(&inputs)?) {
        match found {
            Ok(found) => sources.extend(found),
            Err(e) => refused.push((arg.clone(), ctx.describe_load_error(&e))),
        }
    }
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    let mut pages = Vec::new();
    let mut entries = Vec::new();
    let mut used = std::collections::HashSet::new();
    for src in &sources {
        match dsh::report::build(src, &opts) {
            Ok(r) => {
                warn(ctx, &r);
                let name = unique_name(&r.session, &mut used);
                let path = dir.join(&name);
                let html = page_html(&r);
                write_file(&path, src.path(), args.force, html.as_bytes())?;
                let p = page_of(&r, &path, html.len());
                entries.push(IndexEntry {
                    href: name,
                    session: r.session.clone(),
                    title: r.title.clone(),
                    file: r.file.clone(),
                    counts: (p.requests, p.compactions, p.prunes),
                    error: None,
                });
                pages.push(p);
            }
            Err(e) => {
                let msg = match &e {
                    ReportError::Load(le) => ctx.describe_load_error(le),
                    e => e.to_string(),
                };
                if !ctx.quiet || ctx.json {
                    eprintln!("{} {msg}", render::error_tag());
                }
                entries.push(IndexEntry {
                    href: String::new(),
                    session: src.display(),
                    title: None,
                    file: src.display(),
                    counts: (0, 0, 0),
                    error: Some(msg.clone()),
                });
                refused.push((src.display(), msg));
            }
        }
    }
    let html = dsh::report::html::index_page(&entries);
    write_file(&index, None, args.force, html.as_bytes())?;
    finish(ctx, dir, Some((&index, html.len())), &pages, &refused)?;
    Ok(if refused.is_empty() {
        Status::Ok
    } else {
        Status::InvalidLog
    })
}

fn warn(ctx: &Ctx, r: &SessionReport) {
    if !ctx.quiet && !ctx.json {
        for w in &r.warnings {
            eprintln!("{} {}: {w}", render::warning_tag(), r.file);
        }
    }
}

/// A file name for a session's page: its id with anything but
/// `[A-Za-z0-9._-]` as `_`, made unique.
fn unique_name(session: &str, used: &mut std::collections::HashSet<String>) -> String {
    let mut base: String = session
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    if base.is_empty() || base.starts_with('.') || base == "index" {
        base = format!("session-{base}");
    }
    let mut name = format!("{base}.html");
    let mut k = 2;
    while !used.insert(name.clone()) {
        name = format!("{base}-{k}.html");
        k += 1;
    }
    name
}

fn page_of(r: &SessionReport, path: &Path, bytes: usize) -> Page {
    Page {
        file: r.file.clone(),
        session: r.session.clone(),
        path: path.display().to_string(),
        bytes: bytes as u64,
        requests: r.points.len(),
        compactions: r
            .compactions
            .iter()
            .filter(|c| c.summary_seq.is_some())
            .count(),
        prunes: r.prunes.len(),
        downsampled: r.points.len() > r.max_points,
    }
}

fn write_file(out: &Path, input: Option<&Path>, force: bool, bytes: &[u8]) -> Result<()> {
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

fn finish(
    ctx: &mut Ctx,
    out: &Path,
    index: Option<(&Path, usize)>,
    pages: &[Page],
    refused: &[(String, String)],
) -> Result<()> {
    let total: u64 = pages.iter().map(|p| p.bytes).sum::<u64>() + index.map_or(0, |i| i.1 as u64);
    if ctx.json {
        let v = Value::obj()
            .with("out", out.display().to_string().into())
            .with(
                "index",
                index.map_or(Value::Null, |i| i.0.display().to_string().into()),
            )
            .with(
                "pages",
                Value::Arr(
                    pages
                        .iter()
                        .map(|p| -> OwnedValue {
                            Value::obj()
                                .with("file", p.file.as_str().into())
                                .with("session", p.session.as_str().into())
                                .with("path", p.path.as_str().into())
                                .with("bytes", p.bytes.into())
                                .with("requests", (p.requests as u64).into())
                                .with("compactions", (p.compactions as u64).into())
                                .with("prunes", (p.prunes as u64).into())
                                .with("downsampled", p.downsampled.into())
                        })
                        .collect(),
                ),
            )
            .with(
                "refused",
                Value::Arr(
                    refused
                        .iter()
                        .map(|(f, e)| {
                            Value::obj()
                                .with("file", f.as_str().into())
                                .with("error", e.as_str().into())
                        })
                        .collect(),
                ),
            )
            .with("bytes", total.into())
            .with("schema_version", SCHEMA_VERSION.into());
        ctx.print_json(&v)?;
        return Ok(());
    }
    if ctx.quiet {
        return Ok(());
    }
    for p in pages {
        outln!(
            ctx.out,
            "wrote {} ({} bytes): session {}, {} requests, {} compaction(s), {} prune(s){}",
            p.path,
            render::num(p.bytes),
            p.session,
            render::num(p.requests as u64),
            p.compactions,
            p.prunes,
            if p.downsampled {
                ", charts downsampled"
            } else {
                ""
            }
        )?;
    }
    if let Some((i, n)) = index {
        outln!(
            ctx.out,
            "wrote {} ({} bytes): {} page(s), {} refused",
            i.display(),
            render::num(n as u64),
            pages.len(),
            refused.len()
        )?;
    }
    Ok(())
}
