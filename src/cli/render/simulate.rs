//! `dsh simulate`'s readable output: the policy table, each row's notes
//! and, with --steps, its compactions and prunes.

use anyhow::Result;
use dsh::doc::simulate::OPEN_LOOP;
use dsh::simulate::{Ranking, Row, Simulation, SummarySource};

use crate::cli::ctx::Ctx;
use crate::cli::render;
use crate::cli::render::hidden::hidden_line;
use crate::cli::render::outln;

fn summary_line(s: SummarySource) -> String {
    match s {
        SummarySource::RecordedRatio(r) => {
            format!(
                "summaries sized as the recorded ones ({:.1}% of the tokens they shadow)",
                r * 100.0
            )
        }
        SummarySource::Tokens(n) => {
            format!("summaries of {} tokens (--summary-tokens)", render::num(n))
        }
        SummarySource::Ratio(r) => format!(
            "summaries at {:.1}% of the tokens they shadow (--summary-ratio)",
            r * 100.0
        ),
        SummarySource::Cap => {
            "no recorded summary: every summary at the policy's summary token cap".into()
        }
    }
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

pub fn human(
    ctx: &mut Ctx,
    file: &str,
    sim: &Simulation,
    steps: bool,
    elapsed: std::time::Duration,
) -> Result<()> {
    outln!(ctx.out, "session {}  ({file})", sim.session)?;
    outln!(ctx.out, "{}", summary_line(sim.summary))?;
    let cheapest = sim.cheapest();
    let tok = sim.tokenizer.map(|e| e.name());
    let t = policy_table(sim, cheapest.map(|c| c.0), tok);
    outln!(ctx.out, "{}", t.fitted(render::table::width()))?;
    if let Some((_, by)) = cheapest {
        let by = match by {
            Ranking::Cost => "ranked by total cost",
            Ranking::Tokens => "a row has no cost: ranked by cache-missed plus summariser tokens",
        };
        outln!(ctx.out, "* the cheapest policy that never overflows ({by})")?;
    }
    let unpriced = sim
        .rows
        .iter()
        .map(|r| r.unpriced_requests)
        .max()
        .unwrap_or(0);
    if unpriced > 0 {
        outln!(
            ctx.out,
            "¹ up to {} requests (agent or summariser) have no known price for their route at their time: costs sum the priced ones (`dsh usage --prices`)",
            render::num(unpriced as u64)
        )?;
    }
    for r in &sim.rows {
        row_details(ctx, r, steps)?;
    }
    outln!(
        ctx.out,
        "cmp: compaction brackets, p/o/m: of them pressure/overflow/manual; ovf: requests over the window where they were sent (recorded: or refused with CONTEXT_WINDOW_EXCEEDED); cost: cache misses and hits at the route's rates plus the summariser calls; billed in: the sum of the request sizes (DSH's estimate)."
    )?;
    if let Some(tok) = tok {
        outln!(
            ctx.out,
            "{tok}: ovf, missed, cost and the provider columns count each request as the provider does ({tok} tokens); peak, mean and billed in are DSH's estimate, which the compaction threshold is judged by."
        )?;
    }
    if let Some(h) = &sim.hidden_prefix {
        outln!(ctx.out, "{}", hidden_line(h))?;
    }
    outln!(ctx.out, "{OPEN_LOOP}")?;
    if !ctx.quiet {
        eprintln!("replayed in {:.2}s", elapsed.as_secs_f64());
    }
    Ok(())
}

/// One row per policy; the provider's columns with a tokenizer.
fn policy_table(sim: &Simulation, best: Option<usize>, tok: Option<&str>) -> render::table::Tbl {
    let mut head = vec![
        "policy",
        "cmp",
        "p/o/m",
        "prune",
        "ovf",
        "peak",
        "mean",
        "billed in",
        "missed",
        "summ.",
        "cost",
    ];
    if tok.is_some() {
        head.splice(7..7, ["peak (provider)", "billed (provider)"]);
    }
    let mut t = render::table(&head);
    t.drop_first(&["mean", "p/o/m", "summ.", "billed in", "billed (provider)"]);
    for (i, r) in sim.rows.iter().enumerate() {
        let mark = if Some(i) == best { " *" } else { "" };
        let mut cells = vec![
            format!("{}{mark}", r.label),
            render::num(r.compactions as u64),
            modes(r),
            render::num(r.prunes as u64),
            render::num(r.overflows as u64),
            pct(r.peak_pressure),
            pct(r.mean_pressure),
            render::num(r.billed_input as u64),
            render::num(r.cache_missed),
            render::num(r.summariser_tokens as u64),
            format!(
                "{}{}",
                render::usd(r.total_cost),
                if r.unpriced_requests > 0 { " ¹" } else { "" }
            ),
        ];
        if tok.is_some() {
            let p = r.provider.unwrap_or_default();
            cells.splice(7..7, [pct(p.peak_pressure), render::num(p.billed_input)]);
        }
        t.add_row(cells);
    }
    t
}

/// A policy's first notes and, with --steps, its compactions and prunes.
fn row_details(ctx: &mut Ctx, r: &Row, steps: bool) -> Result<()> {
    for n in r.notes.iter().take(2) {
        outln!(ctx.out, "{}: {n}", r.label)?;
    }
    if r.notes.len() > 2 {
        outln!(
            ctx.out,
            "{}: … {} more notes (--json)",
            r.label,
            r.notes.len() - 2
        )?;
    }
    if steps {
        let mut t = render::table(&[
            "request", "seq", "what", "before", "after", "shadowed", "tokens",
        ]);
        for s in &r.steps {
            let w = r.context_window.unwrap_or(0).max(1) as f64;
            t.add_row(vec![
                s.request.to_string(),
                s.request_seq.to_string(),
                s.kind.as_str().to_string(),
                pct(s.tokens_before / w),
                pct(s.tokens_after / w),
                shadow_range(&s.shadowed),
                render::num(s.shadowed_tokens),
            ]);
        }
        if !r.steps.is_empty() {
            outln!(ctx.out, "{}:", r.label)?;
            outln!(ctx.out, "{}", t.fitted(render::table::width()))?;
        }
    }
    Ok(())
}

/// Compactions by mode: pressure/overflow/manual.
fn modes(r: &Row) -> String {
    let m = r.compaction_modes;
    format!("{}/{}/{}", m.pressure, m.overflow, m.manual)
}

fn shadow_range(s: &[u64]) -> String {
    let show = |x: u64| {
        if x >= 1 << 48 {
            format!("sim{}", x - (1 << 48))
        } else {
            x.to_string()
        }
    };
    match s {
        [] => "—".into(),
        [a] => show(*a),
        [a, .., b] => format!("{}–{} ({})", show(*a), show(*b), s.len()),
    }
}
