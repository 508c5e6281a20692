//! `export --incremental`: what a run read, as text (its JSON is
//! [`dsh::doc::export::Incremental`]).

use super::{Out, outln};

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
