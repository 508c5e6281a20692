//! `dsh export`'s report: the `--json` document or the tables written.

use std::path::Path;

use anyhow::Result;
use dsh::doc::error::LogRefusal;
use dsh::doc::export as doc;
use dsh::export::{Format, TABLES};
use dsh::sessions::Refused;

use crate::cli::ctx::Ctx;
use crate::cli::render::{self, outln};

#[allow(clippy::too_many_arguments)]
/// What was written (or would be), and what was refused.
pub fn report(
    ctx: &mut Ctx,
    (out, dry_run): (&Path, bool),
    format: Format,
    logs: u64,
    counts: &[u64; 6],
    refused: &[Refused],
    file_name: &dyn Fn(&str) -> String,
    fleet: Option<&dsh::fleet::Report>,
) -> Result<()> {
    let path = |name: &str| out.join(file_name(name));
    if ctx.json {
        let tables = std::array::from_fn(|i| {
            let spec = &TABLES[i];
            let file = path(spec.name).display().to_string();
            doc::Table::of(spec, file, counts[i])
        });
        ctx.print_doc(&doc::Export {
            out: out.display().to_string(),
            format,
            dry_run,
            logs,
            tables,
            refused: refused
                .iter()
                .map(|r| LogRefusal::of(&r.error, &r.file, true))
                .collect(),
            incremental: fleet.map(doc::Incremental::of),
            schema_version: dsh::doc::SchemaVersion,
        })?;
        return Ok(());
    }
    if let Some(r) = fleet {
        render::fleet::print(&ctx.out, r)?;
    }
    let verb = if dry_run { "would write" } else { "wrote" };
    outln!(
        ctx.out,
        "{verb} {} ({} session(s), {})",
        out.display(),
        render::num(logs),
        format.as_str()
    )?;
    for (spec, n) in TABLES.iter().zip(counts) {
        outln!(
            ctx.out,
            "  {:<12} {:>10} rows  {}",
            spec.name,
            render::num(*n),
            path(spec.name).display()
        )?;
    }
    ctx.say_refused(refused, " and left out")?;
    Ok(())
}
