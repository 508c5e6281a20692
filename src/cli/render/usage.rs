//! `dsh usage`' output: the price table, CSV and the table with its notes.

use anyhow::Result;
use dsh::civil;
use dsh::doc::usage as doc;
use dsh::json::Value;
use dsh::price::PriceTable;
use dsh::usage::{GroupBy, Report, Sums};

use crate::cli::csv;
use crate::cli::ctx::Ctx;
use crate::cli::exit::Status;
use crate::cli::render::{self, outln};

/// Providers priced through another that reaches the same endpoint.
fn alias_pairs(table: &PriceTable) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let priced: std::collections::BTreeSet<&str> = table
        .entries()
        .iter()
        .map(|p| p.provider.as_str())
        .collect();
    for (p, _) in table.endpoints() {
        if priced.contains(p.as_str()) {
            continue;
        }
        if let Some(a) = table
            .aliases(p)
            .into_iter()
            .skip(1)
            .find(|a| priced.contains(a.as_str()))
        {
            out.push((p.clone(), a));
        }
    }
    out
}

fn aliases(table: &PriceTable) -> Vec<String> {
    alias_pairs(table)
        .into_iter()
        .map(|(p, a)| {
            format!(
                "provider {p} reaches the same endpoint as {a} (its base URL's host): priced as {a}"
            )
        })
        .collect()
}

pub fn print_prices(ctx: &Ctx, table: &PriceTable) -> Result<Status> {
    let entries = table.entries();
    if ctx.json {
        ctx.print_doc(&doc::Prices::of(&entries, alias_pairs(table)))?;
        return Ok(Status::Ok);
    }
    let mut t = render::table(&[
        "provider",
        "model",
        "from",
        "input",
        "cache hit",
        "cache write",
        "1h write",
        "output",
        "off-peak in/hit/out",
        "confirmed",
        "origin",
        "read",
        "source",
    ]);
    t.drop_first(&[
        "source",
        "read",
        "origin",
        "1h write",
        "cache write",
        "provider",
    ]);
    let f = |x: f64| Value::Num(x).to_json();
    for p in &entries {
        t.add_row(vec![
            p.provider.clone(),
            p.model.clone(),
            p.from_ms
                .map_or_else(|| "—".into(), |ms| civil::date_time(ms, civil::Offset::UTC)),
            f(p.rates.input),
            f(p.rates.cache_hit),
            f(p.rates.cache_write),
            p.rates.cache_write_1h.map_or_else(|| "—".into(), f),
            f(p.rates.output),
            p.off_peak.map_or_else(String::new, |o| {
                let w = match p.windows {
                    dsh::price::Windows::Peak => "",
                    dsh::price::Windows::Night => " (night)",
                };
                format!("{} / {} / {}{w}", f(o.input), f(o.cache_hit), f(o.output))
            }),
            if p.confirmed { "yes" } else { "no" }.into(),
            p.origin.as_str().into(),
            p.read.clone().unwrap_or_else(|| "—".into()),
            p.source.clone(),
        ]);
    }
    outln!(ctx.out, "{t}")?;
    outln!(
        ctx.out,
        "USD per million tokens; `from` in UTC (— : from the model's release). With off-peak rates, the others apply only in DeepSeek's peak windows (weekdays 01:00–04:00 and 06:00–10:00 UTC); (night): the 2025 night discount, off-peak rates 16:30–00:30 UTC daily. Add or correct entries with [[prices]] in the config file."
    )?;
    for a in aliases(table) {
        outln!(ctx.out, "{a}")?;
    }
    if entries.iter().any(|p| !p.confirmed) {
        outln!(
            ctx.out,
            "confirmed no: the figures or the effective date were read only in third-party summaries of the provider's page, or assumed; costs that use them are footnoted. A [[prices]] entry for the same provider, model and date replaces one."
        )?;
    }
    Ok(Status::Ok)
}

fn sum_cells(s: &Sums) -> Vec<String> {
    let t = &s.tokens;
    vec![
        render::num(s.requests),
        render::num(s.summariser_requests),
        render::num_f64(t.input),
        render::num_f64(t.cache_read),
        render::num_f64(t.cache_write),
        render::num_f64(t.output),
        render::num_f64(t.reasoning),
        render::num_f64(t.total()),
        match (s.cost(), s.unconfirmed) {
            (Some(_), 1..) => format!("{}*", render::usd(s.cost())),
            _ => render::usd(s.cost()),
        },
        match s.without_cost() {
            0 => String::new(),
            n => render::num(n),
        },
    ]
}

fn csv_sums(s: &Sums) -> Vec<String> {
    let t = &s.tokens;
    let n = |x: f64| csv::num(Some(x));
    vec![
        s.requests.to_string(),
        s.summariser_requests.to_string(),
        n(t.input),
        n(t.cache_read),
        n(t.cache_write),
        n(t.output),
        n(t.reasoning),
        n(t.total()),
        csv::num(s.cost()),
        s.priced.to_string(),
        s.unpriced.to_string(),
        s.untimed.to_string(),
        s.unconfirmed.to_string(),
    ]
}

pub fn print_csv(ctx: &Ctx, rep: &Report, by: GroupBy, breakdown: bool, guard: bool) -> Result<()> {
    let mut head = vec![by.as_str().to_string()];
    if by == GroupBy::Session {
        head.extend(["file".into(), "project".into()]);
    }
    if breakdown {
        head.extend(["provider".into(), "model".into()]);
    }
    head.extend(
        [
            "requests",
            "summariser_requests",
            "input_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
            "output_tokens",
            "reasoning_tokens",
            "total_tokens",
            "cost_usd",
            "priced_requests",
            "unpriced_requests",
            "untimed_requests",
            "unconfirmed_requests",
        ]
        .map(String::from),
    );
    let mut out = csv::record(&head, guard);
    for g in &rep.groups {
        let mut lead = vec![g.key.clone()];
        if by == GroupBy::Session {
            lead.push(g.file.clone().unwrap_or_default());
            lead.push(g.project.clone().unwrap_or_default());
        }
        if breakdown {
            for (p, m, s) in &g.models {
                let mut f = lead.clone();
                f.extend([p.clone(), m.clone()]);
                f.extend(csv_sums(s));
                out.push_str(&csv::record(&f, guard));
            }
        } else {
            lead.extend(csv_sums(&g.sums));
            out.push_str(&csv::record(&lead, guard));
        }
    }
    ctx.out.write_all(out.as_bytes())?;
    Ok(())
}

/// The readable table, its total row and the notes under it.
pub fn print_table(ctx: &mut Ctx, rep: &Report, by: GroupBy, breakdown: bool) -> Result<()> {
    ctx.page();
    let first = match by {
        GroupBy::Day => "date",
        GroupBy::Week => "week of",
        GroupBy::Month => "month",
        GroupBy::Session => "session",
        GroupBy::Project => "project",
    };
    let mut t = render::table(&[
        first,
        "requests",
        "summariser",
        "input",
        "cache read",
        "cache write",
        "output",
        "reasoning",
        "total",
        "cost $",
        "no price",
    ]);
    t.drop_first(&[
        "cache write",
        "reasoning",
        "total",
        "requests",
        "no price",
        "summariser",
    ]);
    for g in &rep.groups {
        let mut row = vec![g.key.clone()];
        row.extend(sum_cells(&g.sums));
        t.add_row(row);
        if breakdown {
            for (p, m, s) in &g.models {
                let mut row = vec![format!("└ {m} ({p})")];
                row.extend(sum_cells(s));
                t.add_row(row);
            }
        }
    }
    let mut row = vec!["total".to_string()];
    row.extend(sum_cells(&rep.totals));
    t.add_row(row);
    outln!(ctx.out, "{t}")?;
    if rep.groups.is_empty() {
        outln!(ctx.out, "no requests with reported usage")?;
    }
    if rep.outside_unknown_time > 0 {
        outln!(
            ctx.out,
            "{} request(s) with unknown times were left out by --since/--until",
            render::num(rep.outside_unknown_time)
        )?;
    }
    let t = &rep.totals;
    if t.unconfirmed > 0 {
        outln!(
            ctx.out,
            "* unconfirmed price: {} request(s), {} USD of the cost, priced with an entry not confirmed on the provider's own page; `dsh usage --prices` marks them",
            render::num(t.unconfirmed),
            render::usd(Some(t.unconfirmed_cost))
        )?;
    }
    if t.without_cost() > 0 {
        outln!(
            ctx.out,
            "no price: {} request(s) are counted in tokens but not in cost ({} with no price for their model at their date, {} whose price depends on a time the log does not record); `dsh usage --prices` lists the table",
            render::num(t.without_cost()),
            render::num(t.unpriced),
            render::num(t.untimed)
        )?;
    }
    Ok(())
}
