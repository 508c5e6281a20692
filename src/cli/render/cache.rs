//! `dsh cache`'s output: each log's `--json` report and readable tables,
//! the many-log document and table, the causes and their costs.

use anyhow::Result;
use dsh::cache::{
    Block, BreakEven, CacheReport, CauseCosts as Costs, NOT_A_BILL, ONE_LOG, Position, Prices,
    Replacement, Request, RequestCost, Segment, Totals, cause_costs, cross_hits, predicted_cost,
};
use dsh::hidden_prefix::HiddenPrefix;

use crate::cli::ctx::Ctx;
use crate::cli::render;
use crate::cli::render::hidden::hidden_line;
use crate::cli::render::outln;

/// The default output for one log (`--by cause`: only the causes).
pub fn print_one(
    ctx: &Ctx,
    r: &CacheReport,
    hidden: &Option<HiddenPrefix>,
    by_cause: bool,
    prices: &dyn Prices,
) -> Result<()> {
    if by_cause {
        let costs = cause_costs(std::slice::from_ref(r), prices);
        outln!(ctx.out, "{}", cause_table(&r.totals(), &costs))?;
    } else {
        human_one(ctx, r, prices)?;
        if let Some(h) = hidden {
            outln!(ctx.out, "{}", hidden_line(h))?;
        }
    }
    outln!(ctx.out, "{ONE_LOG}")?;
    Ok(())
}

/// The default output for many logs: one row each, the causes, the totals.
pub fn print_many(
    ctx: &Ctx,
    reports: &[CacheReport],
    unreadable: usize,
    cross: Option<u64>,
    by_cause: bool,
    prices: &dyn Prices,
) -> Result<()> {
    let mut totals = Totals::default();
    let mut t = render::table(&[
        "log",
        "requests",
        "prompt",
        "predicted hit",
        "reported hit",
        "recomputed",
        "replacements",
        "top cause",
    ]);
    t.drop_first(&["replacements", "recomputed", "reported hit"]);
    for r in reports {
        let tt = r.totals();
        totals.add(r);
        let top = tt
            .by_cause
            .iter()
            .find(|c| c.0 != "first" && c.0 != "append" && c.3 > 0)
            .map(|c| c.0.clone())
            .unwrap_or_else(|| "—".into());
        t.add_row(vec![
            render::log_label(&r.file, ctx.home.as_deref()),
            render::num(tt.requests as u64),
            render::num(tt.prompt_tokens),
            rate(tt.predicted_rate()),
            rate(tt.reported_rate()),
            render::num(tt.by_cause.iter().map(|c| c.3).sum()),
            render::num(r.replacements.len() as u64),
            top,
        ]);
    }
    if !by_cause {
        outln!(ctx.out, "{t}")?;
    }
    outln!(
        ctx.out,
        "{}",
        cause_table(&totals, &cause_costs(reports, prices))
    )?;
    outln!(
        ctx.out,
        "{} log(s), {} request(s), {} unreadable; predicted hit {} of the prompt, reported {}",
        reports.len(),
        totals.requests,
        unreadable,
        rate(totals.predicted_rate()),
        rate(totals.reported_rate()),
    )?;
    cost_lines(ctx, &totals, predicted_cost(reports, prices))?;
    match cross {
        Some(lt) => outln!(
            ctx.out,
            "cross-session: requests ordered by time across the logs, one provider account assumed; a prefix stays usable {} after its last use (--cross-session-lifetime); {} request(s) hit another session's prefix",
            human_ms(lt),
            cross_hits(reports)
        )?,
        None => outln!(
            ctx.out,
            "cross-session cache off (--cross-session-lifetime 0)"
        )?,
    }
    outln!(ctx.out, "{NOT_A_BILL}")?;
    Ok(())
}

/// A lifetime as the largest whole unit: `6h`, `90m`, `45s`.
pub fn human_ms(ms: u64) -> String {
    match ms {
        m if m % 86_400_000 == 0 => format!("{}d", m / 86_400_000),
        m if m % 3_600_000 == 0 => format!("{}h", m / 3_600_000),
        m if m % 60_000 == 0 => format!("{}m", m / 60_000),
        m if m % 1000 == 0 => format!("{}s", m / 1000),
        m => format!("{m}ms"),
    }
}

/// The predicted cache writes and prompt cost, when there are any.
pub fn cost_lines(ctx: &Ctx, t: &Totals, cost: Option<RequestCost>) -> Result<()> {
    if t.predicted_write_5m + t.predicted_write_1h > 0 {
        outln!(
            ctx.out,
            "predicted cache writes (Anthropic): {} tokens to 5-minute entries (1.25× input), {} to 1-hour entries (2×)",
            render::num(t.predicted_write_5m),
            render::num(t.predicted_write_1h),
        )?;
    }
    if let Some(c) = cost.filter(|_| t.requests > 0) {
        outln!(
            ctx.out,
            "predicted prompt cost: {} (hits {}, cache writes {}, uncached {}){}",
            usd(Some(c.total())),
            usd(Some(c.hit)),
            usd(Some(c.write)),
            usd(Some(c.uncached)),
            if c.unpriced > 0 { " ¹" } else { "" },
        )?;
    }
    let unpriced = cost.map_or(t.requests, |c| c.unpriced);
    if t.requests > 0 && unpriced > 0 {
        outln!(
            ctx.out,
            "¹ {} of {} requests have no known price (their route at their time: `dsh usage --prices`); costs sum the priced ones",
            render::num(unpriced as u64),
            render::num(t.requests as u64),
        )?;
    }
    Ok(())
}

pub fn rate(r: Option<f64>) -> String {
    r.map_or_else(|| "—".into(), |x| format!("{:.1}%", x * 100.0))
}

pub fn opt_num(x: Option<f64>) -> String {
    x.map_or_else(|| "—".into(), render::num_f64)
}

pub fn turn_step(q: &Request) -> String {
    match (q.turn, q.step) {
        (Some(t), Some(s)) => format!("{t}.{s}"),
        _ => "—".into(),
    }
}

/// `TOKENS @ pos P #B` (block B of the node at surface position P; `#B.I`
/// for item I of a tool result's content), `TOKENS @ tools:NAME`,
/// `TOKENS @ system`, `TOKENS (end)`.
pub fn position(p: &Option<Position>) -> String {
    match p {
        None => "—".into(),
        Some(p) => {
            let at = render::num(p.block_tokens);
            match (&p.segment, &p.block) {
                (
                    Segment::Node { position, .. },
                    Some(Block::Content {
                        index,
                        result_content,
                        ..
                    }),
                ) => match result_content {
                    Some(j) => format!("{at} @ pos {position} #{index}.{j}"),
                    None => format!("{at} @ pos {position} #{index}"),
                },
                (Segment::Node { position, .. }, _) => format!("{at} @ pos {position}"),
                (Segment::Tools, Some(Block::Tools { tool: Some(t) })) => {
                    format!("{at} @ tools:{t}")
                }
                (Segment::End, _) => format!("{at} (end)"),
                (s, _) => format!("{at} @ {}", s.as_str()),
            }
        }
    }
}

pub fn break_even(b: BreakEven) -> String {
    match b {
        BreakEven::At { request, after } => format!("at request {request} ({after} after)"),
        BreakEven::NotPaidBack => "not paid back by the end of the log".into(),
        BreakEven::Unknown => "—".into(),
    }
}

/// A cause's cost cell: the priced sum, and how many were left out.
pub fn cause_cost(costs: &Costs, k: &str) -> String {
    match costs.get(k) {
        None => "—".into(),
        Some((c, 0)) => usd(*c),
        Some((None, _)) => "— (no price)".into(),
        Some((c, n)) => format!("{} (+{n} unpriced)", usd(*c)),
    }
}

pub fn usd(x: Option<f64>) -> String {
    match x {
        None => "—".into(),
        Some(_) => format!("{} USD", render::usd(x)),
    }
}

pub fn cause_table(t: &Totals, costs: &Costs) -> render::table::Tbl {
    let mut c = render::table(&[
        "cause",
        "requests",
        "predicted miss",
        "recomputed",
        "miss cost",
    ]);
    for (k, n, miss, rec) in &t.by_cause {
        c.add_row(vec![
            k.clone(),
            render::num(*n as u64),
            render::num(*miss),
            render::num(*rec),
            cause_cost(costs, k),
        ]);
    }
    c
}

/// One row per request of a log (Anthropic's writes where its rule predicts).
pub fn requests_table(r: &CacheReport, prices: &dyn Prices) -> render::table::Tbl {
    let a = &r.anthropic;
    // Anthropic's writes, per TTL and in money, where its rule predicts.
    let show_writes = !a.breakpoints.is_none()
        && r.requests
            .iter()
            .any(|q| dsh::cache::rule_for(&q.provider) == "anthropic");
    let mut head = vec![
        "#",
        "seq",
        "turn.step",
        "prompt",
        "first changed",
        "cause",
        "recomputed",
        "predicted hit",
        "miss",
        "reported hit",
        "reported prompt",
    ];
    if show_writes {
        head.extend(["write 5m", "write 1h", "write cost"]);
    }
    let mut t = render::table(&head);
    // At 80 columns: the request, its cause, where it changed, hit and miss.
    t.drop_first(&[
        "write cost",
        "reported prompt",
        "turn.step",
        "seq",
        "recomputed",
        "write 1h",
        "reported hit",
        "write 5m",
    ]);
    for q in &r.requests {
        let mut row = vec![
            q.index.to_string(),
            q.seq.to_string(),
            turn_step(q),
            render::num(q.prompt_tokens),
            position(&q.first_changed),
            {
                let mut c = q.cause.describe();
                if let Some(f) = &q.failed {
                    c = format!("{c} · failed {}", f.code);
                }
                if q.inherited {
                    c = format!("{c} · inherited");
                }
                c
            },
            render::num(q.recomputed_tokens),
            render::num(q.predicted_hit),
            render::num(q.predicted_miss()),
            opt_num(q.reported.map(|u| u.cache_read_tokens)),
            opt_num(q.reported.map(|u| u.prompt())),
        ];
        if show_writes {
            if dsh::cache::rule_for(&q.provider) == "anthropic" {
                let (w5, w1) = q.predicted_writes();
                row.extend([
                    render::num(w5),
                    render::num(w1),
                    usd(r.request_cost(q, prices).map(|c| c.write)),
                ]);
            } else {
                row.extend(["—".into(), "—".into(), "—".into()]);
            }
        }
        t.add_row(row);
    }
    t
}

/// One row per replacement (prune or compaction) of a log: what it cost
/// and when it paid back.
pub fn replacements_table(r: &CacheReport, prices: &dyn Prices) -> render::table::Tbl {
    let mut t = render::table(&[
        "seq",
        "kind",
        "pos",
        "shadowed",
        "now",
        "next request",
        "recomputed",
        "summariser",
        "saved",
        "over",
        "break-even (tokens)",
        "cost / saved",
        "break-even (cost)",
    ]);
    // At 80 columns: what was replaced, what it cost and when it paid back.
    t.drop_first(&[
        "pos",
        "next request",
        "now",
        "over",
        "break-even (cost)",
        "cost / saved",
        "summariser",
    ]);
    for (i, x) in r.replacements.iter().enumerate() {
        let cost = r.replacement_cost(i, prices);
        t.add_row(vec![
            x.seq.to_string(),
            x.kind.as_str().into(),
            x.position.to_string(),
            render::num(x.shadowed_tokens),
            render::num(x.replacement_tokens),
            x.next_request.map_or("—".into(), |n| n.to_string()),
            recomputed_cell(x),
            x.summary.as_ref().map_or("—".into(), |s| match s.usage {
                Some(_) => render::num_f64(s.tokens()),
                None => "no usage".into(),
            }),
            signed(x.saved_tokens()),
            format!("{} req", x.saved.len()),
            break_even(x.break_even_tokens),
            cost.map_or("—".into(), |c| {
                format!(
                    "{} / {}",
                    usd(Some(c.recompute + c.summary)),
                    usd(Some(c.saved))
                )
            }),
            cost.map_or("—".into(), |c| break_even(c.break_even)),
        ]);
    }
    t
}

pub fn human_one(ctx: &Ctx, r: &CacheReport, prices: &dyn Prices) -> Result<()> {
    let tok = r.tokenizer.map_or("heuristic", |e| e.name());
    outln!(ctx.out, "{} (session {})", r.file, r.session)?;
    if let Some(k) = r.calibrated {
        outln!(
            ctx.out,
            "calibrated: token figures rescaled by {k:.2}× (reported ÷ computed prompt size)"
        )?;
    }
    let a = &r.anthropic;
    outln!(
        ctx.out,
        "positions: {tok} tokens; rules: DeepSeek prefix units (input and output ends, common prefixes; hits in blocks of {}), on anthropic routes Anthropic breakpoints {}; times {}",
        r.deepseek.block,
        if a.breakpoints.is_none() {
            "none (DSH sends no cache_control: nothing cached)".to_string()
        } else {
            format!(
                "{} (prompt tools → system → messages; {}-block lookback; prefixes from {} tokens{})",
                a.breakpoints,
                a.lookback,
                render::num(a.min_tokens),
                if r.times_real {
                    ""
                } else {
                    "; TTLs not applied to normalised times"
                }
            )
        },
        if r.times_real {
            "real"
        } else {
            "normalised (idle gaps unknown)"
        }
    )?;
    outln!(ctx.out, "{}", requests_table(r, prices))?;
    if !r.replacements.is_empty() {
        outln!(ctx.out, "{}", replacements_table(r, prices))?;
    }
    let tt = r.totals();
    let costs = cause_costs(std::slice::from_ref(r), prices);
    outln!(ctx.out, "{}", cause_table(&tt, &costs))?;
    outln!(
        ctx.out,
        "{} request(s): predicted hit {} of {} prompt tokens ({}); reported {} of {} ({}) over {} request(s) with usage",
        tt.requests,
        render::num(tt.predicted_hit),
        render::num(tt.prompt_tokens),
        rate(tt.predicted_rate()),
        render::num_f64(tt.reported_hit),
        render::num_f64(tt.reported_prompt),
        rate(tt.reported_rate()),
        tt.reported_requests,
    )?;
    cost_lines(ctx, &tt, r.predicted_cost(prices))?;
    if tt.failed_requests > 0 || r.attempts_not_sent > 0 {
        outln!(
            ctx.out,
            "failed attempts: {} counted as requests (the provider received them: they streamed, or failed as only a provider that read the prompt does), {} not counted (refused before any answer)",
            tt.failed_requests,
            r.attempts_not_sent
        )?;
    }
    if let Some(k) = r.calibrated {
        outln!(
            ctx.out,
            "calibrated: every token figure above is dsh's ({tok}) × {k:.2}, the ratio of the prompt size the provider reported to dsh's on this session's requests with usage"
        )?;
    } else if let Some(c) = tt.calibration() {
        outln!(
            ctx.out,
            "calibration: the provider counted {:.2}× the prompt tokens dsh computes ({tok}) on those requests",
            c
        )?;
    }
    outln!(ctx.out, "{NOT_A_BILL}")?;
    Ok(())
}

pub fn signed(n: i64) -> String {
    if n < 0 {
        format!("-{}", render::num(n.unsigned_abs()))
    } else {
        render::num(n as u64)
    }
}

pub fn recomputed_cell(x: &Replacement) -> String {
    match (&x.covered_by, x.next_request) {
        (_, None) => match x.superseded_by {
            Some(s) => format!("— (shadowed by {s})"),
            None => "—".into(),
        },
        (Some(c), _) => format!("0 (within {})", c.describe()),
        (None, _) => render::num(x.recomputed_tokens),
    }
}
