//! `dsh cache`'s output: each log's `--json` report and readable tables,
//! the many-log document and table, the causes and their costs.

use anyhow::Result;
use dsh::cache::{
    Block, BreakEven, CacheReport, Cause, Idle, Position, Prices, Replacement, Request,
    RequestCost, Segment, Totals,
};
use dsh::json::{OwnedValue, Value};

use crate::cli::ctx::{Ctx, SCHEMA_VERSION, load_error_json};
use crate::cli::render;
use crate::cli::render::hidden::hidden_json;
use crate::cli::render::outln;

/// The sentence every report carries.
pub const NOT_A_BILL: &str = "Predictions are what the provider's published cache rule implies on dsh's token positions, not the provider's bill: the provider decides what it keeps.";

/// The `--json` document of many logs (refused ones listed by file).
pub fn many_json(
    reports: &[CacheReport],
    hidden: &[Option<dsh::hidden_prefix::HiddenPrefix>],
    errors: &[(String, dsh::LoadError)],
    cross: Option<u64>,
    prices: &dyn Prices,
) -> OwnedValue {
    let mut totals = Totals::default();
    let mut logs: Vec<OwnedValue> = Vec::new();
    for (r, h) in reports.iter().zip(hidden) {
        totals.add(r);
        logs.push(report_json(r, prices).with("hiddenPrefix", hidden_json(h)));
    }
    // Refused logs as measure and verify list them: flat, named by file.
    for (file, e) in errors {
        let mut v = load_error_json(e);
        if let Value::Obj(o) = &mut v {
            o.retain(|(k, _)| !k.eq_str("schema_version") && !k.eq_str("file"));
            o.insert(0, (dsh::json::JStr::from_text("file"), file.clone().into()));
        }
        logs.push(v);
    }
    Value::obj()
        .with("logs", Value::Arr(logs))
        .with(
            "summary",
            Value::obj()
                .with("logs", (reports.len() as u64).into())
                .with("errors", (errors.len() as u64).into())
                .with("crossSession", cross_json(cross, reports))
                .with(
                    "totals",
                    totals_json(
                        &totals,
                        &cause_costs(reports, prices),
                        predicted_cost(reports, prices),
                    ),
                ),
        )
        .with("note", NOT_A_BILL.into())
        .with("schema_version", SCHEMA_VERSION.into())
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

/// What one log cannot see.
pub const ONE_LOG: &str = "one log alone: hits on prefixes other sessions left in the provider's cache are invisible to it (give several logs or a home)";

/// Requests whose predicted hit is another session's prefix.
pub fn cross_hits(reports: &[CacheReport]) -> usize {
    reports
        .iter()
        .flat_map(|r| &r.requests)
        .filter(|q| q.cross_session.is_some())
        .count()
}

pub fn cross_json(lifetime: Option<u64>, reports: &[CacheReport]) -> OwnedValue {
    match lifetime {
        None => Value::Null,
        Some(lt) => Value::obj()
            .with("lifetimeMs", lt.into())
            .with("hits", (cross_hits(reports) as u64).into()),
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

pub fn block_json(b: &Option<Block>) -> OwnedValue {
    match b {
        None => Value::Null,
        Some(b) => {
            let mut v = Value::obj().with("part", b.as_str().into());
            match b {
                Block::System => {}
                Block::Tools { tool } => v = v.with("tool", tool.as_deref().into()),
                Block::Content {
                    index,
                    kind,
                    tool_call,
                    result_content,
                } => {
                    v = v
                        .with("index", (*index as u64).into())
                        .with("type", kind.as_str().into())
                        .with("toolCall", tool_call.map(|x| x as u64).into())
                        .with("resultContent", result_content.map(|x| x as u64).into())
                }
            }
            v
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

/// The predicted prompt cost of many reports: the sum over the priced
/// requests and the count of the rest; `None` when requests exist and none
/// has a price.
pub fn predicted_cost(reports: &[CacheReport], prices: &dyn Prices) -> Option<RequestCost> {
    let mut all = RequestCost::zero();
    let mut any = false;
    for r in reports {
        match r.predicted_cost(prices) {
            Some(c) => {
                all.add(&c);
                any |= c.unpriced < r.totals().requests || r.totals().requests == 0;
            }
            None => all.unpriced += r.totals().requests,
        }
    }
    (any || all.unpriced == 0).then_some(all)
}

pub fn cost_json(c: Option<RequestCost>) -> OwnedValue {
    match c {
        None => Value::Null,
        Some(c) => Value::obj()
            .with("hit", c.hit.into())
            .with("write", c.write.into())
            .with("uncached", c.uncached.into())
            .with("total", c.total().into())
            .with("currency", c.currency.into())
            .with("unpricedRequests", (c.unpriced as u64).into()),
    }
}

/// Per cause: what its priced requests' predicted misses cost, over many
/// reports (`None`: none of them priced), and how many had no price.
pub type Costs = std::collections::HashMap<String, (Option<f64>, usize)>;

pub fn cause_costs(reports: &[CacheReport], prices: &dyn Prices) -> Costs {
    let mut out = Costs::new();
    for r in reports {
        let unpriced = r.unpriced_by_cause(prices);
        for (k, c) in r.miss_cost_by_cause(prices) {
            let n = unpriced.get(&k).copied().unwrap_or(0);
            let e = out.entry(k).or_insert((None, 0));
            e.0 = match (e.0, c) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            };
            e.1 += n;
        }
    }
    out
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

pub fn cause_json(c: &Cause) -> OwnedValue {
    let mut v = Value::obj().with("kind", c.key().into());
    match c {
        Cause::Header { part } => v = v.with("part", part.as_str().into()),
        Cause::Route { from, to } => {
            v = v
                .with("from", from.as_str().into())
                .with("to", to.as_str().into())
        }
        Cause::Idle { gap_ms } => v = v.with("gapMs", (*gap_ms).into()),
        Cause::Fork { parent } => v = v.with("parent", parent.as_str().into()),
        Cause::CrossSession { session } => v = v.with("session", session.as_str().into()),
        _ => {}
    }
    if let Some(s) = c.seq() {
        v = v.with("seq", s.into());
    }
    v
}

pub fn reported_json(u: &dsh::cache::Reported) -> OwnedValue {
    Value::obj()
        .with("inputTokens", u.input_tokens.into())
        .with("cacheReadTokens", u.cache_read_tokens.into())
        .with("cacheWriteTokens", u.cache_write_tokens.into())
        .with("outputTokens", u.output_tokens.into())
        .with("promptTokens", u.prompt().into())
}

pub fn break_even_json(b: BreakEven) -> OwnedValue {
    match b {
        BreakEven::At { request, after } => Value::obj()
            .with("request", (request as u64).into())
            .with("after", (after as u64).into()),
        BreakEven::NotPaidBack => "not paid back by the end of the log".into(),
        BreakEven::Unknown => Value::Null,
    }
}

pub fn request_json(r: &CacheReport, q: &Request, prices: &dyn Prices) -> OwnedValue {
    let first = match &q.first_changed {
        None => Value::Null,
        Some(p) => {
            let mut v = Value::obj()
                .with("tokens", p.tokens.into())
                .with("segment", p.segment.as_str().into())
                .with("block", block_json(&p.block))
                .with("blockTokens", p.block_tokens.into());
            if let Segment::Node {
                seq,
                position,
                kind,
            } = &p.segment
            {
                v = v
                    .with("seq", (*seq).into())
                    .with("position", (*position as u64).into())
                    .with("type", kind_name(*kind).into());
            }
            v
        }
    };
    let idle: OwnedValue = match q.idle {
        Idle::None => Value::Null,
        Idle::Unknown => "unknown".into(),
        Idle::Gap { ms, expired } => Value::obj()
            .with("gapMs", ms.into())
            .with("expired", expired.into()),
    };
    Value::obj()
        .with("index", (q.index as u64).into())
        .with("seq", q.seq.into())
        .with("inherited", q.inherited.into())
        .with(
            "failed",
            q.failed.as_ref().map_or(Value::Null, |f| {
                Value::obj().with("code", f.code.as_str().into())
            }),
        )
        .with("turn", q.turn.into())
        .with("step", q.step.into())
        .with("route", q.route.as_str().into())
        .with("promptTokens", q.prompt_tokens.into())
        .with("messages", (q.messages as u64).into())
        .with("firstChanged", first)
        .with("cause", cause_json(&q.cause))
        .with("crossSession", q.cross_session.clone().into())
        .with(
            "headerChanges",
            Value::Arr(q.header_changes.iter().map(|h| h.as_str().into()).collect()),
        )
        .with("freshTokens", q.fresh_tokens.into())
        .with("recomputedTokens", q.recomputed_tokens.into())
        .with("predictedHit", q.predicted_hit.into())
        .with("rule", dsh::cache::rule_for(&q.provider).into())
        .with(
            "predicted",
            Value::obj().with("deepseek", q.deepseek_hit.into()).with(
                "anthropic",
                Value::obj()
                    .with("hit", q.anthropic.hit.into())
                    .with("write", q.anthropic.write().into())
                    .with("write5m", q.anthropic.write_5m.into())
                    .with("write1h", q.anthropic.write_1h.into()),
            ),
        )
        .with("predictedMiss", q.predicted_miss().into())
        .with("predictedCost", cost_json(r.request_cost(q, prices)))
        .with(
            "reported",
            q.reported.as_ref().map_or(Value::Null, reported_json),
        )
        .with("idle", idle)
}

pub fn kind_name(k: dsh::Kind) -> &'static str {
    match k {
        dsh::Kind::UserMessage => "user/message",
        dsh::Kind::AssistantMessage => "assistant/message",
        dsh::Kind::ToolResult => "tool/result",
        dsh::Kind::SystemMessage => "system/message",
        _ => "other",
    }
}

pub fn replacement_json(r: &CacheReport, i: usize, prices: &dyn Prices) -> OwnedValue {
    let x = &r.replacements[i];
    let summary = match &x.summary {
        None => Value::Null,
        Some(s) => Value::obj()
            .with("seq", s.seq.into())
            .with("provider", s.provider.as_str().into())
            .with("model", s.model.as_str().into())
            .with("usage", s.usage.as_ref().map_or(Value::Null, reported_json))
            .with("tokens", s.tokens().into()),
    };
    let cost = match r.replacement_cost(i, prices) {
        None => Value::Null,
        Some(c) => Value::obj()
            .with("recompute", c.recompute.into())
            .with("recomputeWrite", c.recompute_write.into())
            .with("summary", c.summary.into())
            .with("saved", c.saved.into())
            .with("breakEven", break_even_json(c.break_even))
            .with("currency", c.currency.into()),
    };
    let (w5, w1) = match (x.next_request, &x.covered_by) {
        (Some(n), None) => r.requests[n].recomputed_writes(),
        _ => (0, 0),
    };
    Value::obj()
        .with("seq", x.seq.into())
        .with("kind", x.kind.as_str().into())
        .with("position", (x.position as u64).into())
        .with("shadowedTokens", x.shadowed_tokens.into())
        .with("replacementTokens", x.replacement_tokens.into())
        .with("nextRequest", x.next_request.map(|n| n as u64).into())
        .with("recomputedTokens", x.recomputed_tokens.into())
        .with("recomputedWrite5m", w5.into())
        .with("recomputedWrite1h", w1.into())
        .with(
            "coveredBy",
            x.covered_by.as_ref().map_or(Value::Null, cause_json),
        )
        .with("summary", summary)
        .with("savedTokens", (x.saved_tokens() as f64).into())
        .with("savedRequests", (x.saved.len() as u64).into())
        .with("supersededBy", x.superseded_by.into())
        .with("breakEven", break_even_json(x.break_even_tokens))
        .with("cost", cost)
}

pub fn totals_json(t: &Totals, costs: &Costs, cost: Option<RequestCost>) -> OwnedValue {
    Value::obj()
        .with("requests", (t.requests as u64).into())
        .with("failedRequests", (t.failed_requests as u64).into())
        .with("promptTokens", t.prompt_tokens.into())
        .with("predictedHit", t.predicted_hit.into())
        .with("predictedRate", t.predicted_rate().into())
        .with("predictedWrite5m", t.predicted_write_5m.into())
        .with("predictedWrite1h", t.predicted_write_1h.into())
        .with("predictedCost", cost_json(cost))
        .with(
            "unpricedRequests",
            (cost.map_or(t.requests, |c| c.unpriced) as u64).into(),
        )
        .with("reportedRequests", (t.reported_requests as u64).into())
        .with("reportedPrompt", t.reported_prompt.into())
        .with("reportedHit", t.reported_hit.into())
        .with("reportedRate", t.reported_rate().into())
        .with("calibration", t.calibration().into())
        .with(
            "byCause",
            Value::Arr(
                t.by_cause
                    .iter()
                    .map(|(k, n, miss, rec)| {
                        Value::obj()
                            .with("cause", k.as_str().into())
                            .with("requests", (*n as u64).into())
                            .with("predictedMiss", (*miss).into())
                            .with("recomputedTokens", (*rec).into())
                            .with("missCostUsd", costs.get(k).and_then(|c| c.0).into())
                            .with(
                                "unpricedRequests",
                                (costs.get(k).map_or(0, |c| c.1) as u64).into(),
                            )
                    })
                    .collect(),
            ),
        )
}

pub fn report_json(r: &CacheReport, prices: &dyn Prices) -> OwnedValue {
    Value::obj()
        .with("file", r.file.as_str().into())
        .with("session", r.session.as_str().into())
        .with("timesReal", r.times_real.into())
        .with("attemptsNotSent", (r.attempts_not_sent as u64).into())
        .with("calibrated", r.calibrated.into())
        .with("tokenizer", r.tokenizer.map(|e| e.name()).into())
        .with(
            "rule",
            Value::obj()
                .with(
                    "deepseek",
                    Value::obj()
                        .with("block", r.deepseek.block.into())
                        .with("commonPrefixUnits", r.deepseek.common_prefix_units.into()),
                )
                .with(
                    "anthropic",
                    Value::obj()
                        .with("breakpoints", r.anthropic.breakpoints.to_string().into())
                        .with(
                            "layout",
                            Value::Arr(
                                r.anthropic
                                    .breakpoints
                                    .list()
                                    .iter()
                                    .map(|b| {
                                        Value::obj()
                                            .with("at", b.at.as_str().into())
                                            .with("ttl", b.ttl.as_str().into())
                                            .with("ttlMs", b.ttl.ms().into())
                                    })
                                    .collect(),
                            ),
                        )
                        .with("minTokens", r.anthropic.min_tokens.into())
                        .with("lookbackBlocks", (r.anthropic.lookback as u64).into()),
                ),
        )
        .with(
            "requests",
            Value::Arr(
                r.requests
                    .iter()
                    .map(|q| request_json(r, q, prices))
                    .collect(),
            ),
        )
        .with(
            "replacements",
            Value::Arr(
                (0..r.replacements.len())
                    .map(|i| replacement_json(r, i, prices))
                    .collect(),
            ),
        )
        .with(
            "totals",
            totals_json(
                &r.totals(),
                &cause_costs(std::slice::from_ref(r), prices),
                r.predicted_cost(prices),
            ),
        )
        .with("note", NOT_A_BILL.into())
}
