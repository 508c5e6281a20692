//! `export --incremental`: what a run read, as text and JSON.

use dsh::json::{OwnedValue, Value};

use super::{Out, outln};

/// `incremental` of `export --json`.
pub fn json(r: &dsh::fleet::Report) -> OwnedValue {
    let count = |c: dsh::fleet::Change| r.logs.iter().filter(|(_, x)| *x == c).count();
    let rewritten: Vec<OwnedValue> = r
        .rewritten
        .iter()
        .map(|(p, why)| {
            Value::obj()
                .with("home", p.home.as_str().into())
                .with("log", p.log.as_str().into())
                .with("why", why.as_str().into())
        })
        .collect();
    Value::obj()
        .with("run", r.run.into())
        .with("read", r.read.into())
        .with("new", count(dsh::fleet::Change::New).into())
        .with("grown", count(dsh::fleet::Change::Grown).into())
        .with("rewritten", Value::Arr(rewritten))
        .with("unchanged", count(dsh::fleet::Change::Unchanged).into())
        .with(
            "missing",
            Value::Arr(r.missing.iter().map(|m| m.as_str().into()).collect()),
        )
        .with("stillRefused", r.still_refused.len().into())
        .with("recovered", r.recovered.into())
        .with("files", r.files.iter().sum::<u64>().into())
}

/// The run's line, and one per log re-exported whole.
pub fn print(o: &Out, r: &dsh::fleet::Report) -> std::io::Result<()> {
    let count = |c: dsh::fleet::Change| r.logs.iter().filter(|(_, x)| *x == c).count();
    outln!(
        o,
        "run {}: {} log(s) read ({} new, {} grown, {} rewritten), {} unchanged{}",
        r.run,
        super::num(r.read),
        count(dsh::fleet::Change::New),
        count(dsh::fleet::Change::Grown),
        count(dsh::fleet::Change::Rewritten),
        count(dsh::fleet::Change::Unchanged),
        if r.recovered {
            "; a killed run's commit was completed first"
        } else {
            ""
        }
    )?;
    for (p, why) in &r.rewritten {
        outln!(o, "  re-exported whole: {}:{} ({why})", p.home, p.log)?;
    }
    if !r.still_refused.is_empty() {
        outln!(
            o,
            "  {} log(s) refused before and unchanged since: not read again",
            super::num(r.still_refused.len() as u64)
        )?;
    }

    Ok(())
}
