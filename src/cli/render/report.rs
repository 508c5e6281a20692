//! `dsh report`'s account of the pages it wrote.

use std::path::Path;

use anyhow::Result;
use dsh::doc::report as doc;
use dsh::report::SessionReport;
use dsh::report::fleet::RefusedLog;

use crate::cli::ctx::Ctx;
use crate::cli::render::{self, outln};

/// What one page held: its file, its size, its `--json` entry and its
/// line of text.
pub struct Page {
    pub file: String,
    pub bytes: u64,
    pub json: doc::Page,
    pub line: String,
}

/// A log's warnings on stderr, unless quiet or JSON.
pub fn warn(ctx: &Ctx, file: &str, warnings: &[String]) {
    if !ctx.quiet && !ctx.json {
        for w in warnings {
            eprintln!("{} {file}: {w}", render::warning_tag());
        }
    }
}

/// A written page's `--json` entry and line.
pub fn page_of(r: &SessionReport, path: &Path, bytes: usize) -> Page {
    let (requests, compactions) = (r.points.len(), r.landed_compactions());
    let downsampled = requests > r.max_points;
    Page {
        file: r.file.clone(),
        bytes: bytes as u64,
        json: doc::Page {
            file: r.file.clone(),
            session: r.session.clone(),
            path: path.display().to_string(),
            bytes: bytes as u64,
            requests: requests as u64,
            compactions: compactions as u64,
            prunes: r.prunes.len() as u64,
            downsampled,
        },
        line: format!(
            "wrote {} ({} bytes): session {}, {} requests, {compactions} compaction(s), {} prune(s){}",
            path.display(),
            render::num(bytes as u64),
            r.session,
            render::num(requests as u64),
            r.prunes.len(),
            if downsampled {
                ", charts downsampled"
            } else {
                ""
            }
        ),
    }
}

/// What was written: the `--json` document, or a line of text.
pub fn finish(
    ctx: &mut Ctx,
    out: &Path,
    index: Option<(&Path, usize)>,
    pages: &[Page],
    refused: &[RefusedLog],
) -> Result<()> {
    let total: u64 = pages.iter().map(|p| p.bytes).sum::<u64>() + index.map_or(0, |i| i.1 as u64);
    if ctx.json {
        ctx.print_doc(&doc::Report {
            out: out.display().to_string(),
            index: index.map(|i| i.0.display().to_string()),
            pages: pages.iter().map(|p| &p.json).collect(),
            refused: refused
                .iter()
                .map(|r| doc::Refused {
                    file: &r.file,
                    error: &r.reason,
                })
                .collect(),
            bytes: total,
            schema_version: dsh::doc::SchemaVersion,
        })?;
        return Ok(());
    }
    if ctx.quiet {
        return Ok(());
    }
    match index {
        // One page: what it holds.
        None => {
            for p in pages {
                outln!(ctx.out, "{}", p.line)?;
            }
        }
        // A dashboard: one line (--json lists every page).
        Some((i, n)) => outln!(
            ctx.out,
            "wrote {} ({} bytes) and {} session page(s) beside it ({} bytes in all){}",
            i.display(),
            render::num(n as u64),
            pages.len(),
            render::num(total),
            match refused.len() {
                0 => String::new(),
                k => format!("; {k} log(s) refused, listed on the dashboard"),
            }
        )?,
    }
    Ok(())
}
