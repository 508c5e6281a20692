//! `dsh measure`'s output: the report of one log (its `--json` document
//! and its readable form) and the cells the many-log table shares.

use dsh::json::{OwnedValue, Value};
use dsh::meter::Measurement;
use dsh::meter::tokenizer::{Encoding, TokenCounts};
use dsh::policy::{Budgets, Capacity, Policy, Retention};

use std::path::Path;

use crate::cli::ctx::{Ctx, SCHEMA_VERSION};
use crate::cli::render;
use crate::cli::render::{Out, Tone, outln, paint};

/// The policy resolved for one log.
pub struct PolicyReport {
    pub policy: Policy,
    pub capacity: Capacity,
    pub budgets: Budgets,
    pub logged_seq: Option<u64>,
}

/// Everything measured for one log.
pub struct Report {
    pub file: String,
    pub session: String,
    pub m: Measurement,
    pub node_kinds: Vec<dsh::Kind>,
    pub policy: Result<PolicyReport, String>,
    pub tokens: Option<(TokenCounts, f64)>,
    /// With DeepSeek's tokenizer on a log whose system prompt or tools are
    /// placeholders: the hidden prefix estimated from the first usage.
    pub hidden: Option<u64>,
    pub fill: Option<dsh::fill::Fill>,
}

pub fn num(x: f64) -> OwnedValue {
    Value::Num(x)
}

pub fn policy_json(p: &Result<PolicyReport, String>, total: f64) -> OwnedValue {
    match p {
        Err(e) => Value::obj().with("error", e.as_str().into()),
        Ok(p) => {
            let b = &p.budgets;
            let mut v = Value::obj()
                .with("provider", p.policy.provider.as_str().into())
                .with("model", p.policy.model.as_str().into())
                .with("modelPolicy", p.policy.overridden.into())
                .with("contextWindow", num(p.capacity.context_window))
                .with("contextWindowSource", p.capacity.source.as_str().into());
            if let Some(s) = p.logged_seq {
                v = v.with("contextSeq", s.into());
            }
            v = v.with("thresholdRatio", num(p.policy.threshold_ratio));
            v = match p.policy.retention {
                Retention::Ratio(r) => v.with("retainRatio", num(r)),
                Retention::Tokens(t) => v.with("retainTokensAbsolute", t.into()),
            };
            v.with("thresholdTokens", b.threshold_tokens.into())
                .with("retainTokens", b.retain_tokens.into())
                .with("overThreshold", b.over_threshold(total).into())
                .with("headroomTokens", num(b.headroom(total)))
                .with(
                    "percentOfWindow",
                    num(round2(total / b.context_window as f64 * 100.0)),
                )
        }
    }
}

pub fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

pub fn tokenizer_json(t: &(TokenCounts, f64)) -> OwnedValue {
    let (c, _elapsed) = t;
    let nodes: Vec<OwnedValue> = c
        .nodes
        .iter()
        .map(|n| {
            Value::obj()
                .with("seq", n.seq.into())
                .with("tokens", n.tokens.into())
        })
        .collect();
    Value::obj()
        .with("encoding", c.encoding.name().into())
        .with("systemTokens", c.system_tokens.into())
        .with("toolsTokens", c.tools_tokens.into())
        .with("messageTokens", c.message_tokens.into())
        .with("totalTokens", c.total_tokens.into())
        .with("textBytes", c.text_bytes.into())
        .with("nodes", Value::Arr(nodes))
}

pub fn report_json(r: &Report, at: Option<u64>, with_schema: bool) -> OwnedValue {
    let mut v = r.m.to_value();
    v = v
        .with("file", r.file.as_str().into())
        .with("session", r.session.as_str().into())
        .with("composition", r.m.composition_value())
        .with(
            "projections",
            match &r.m.projections {
                Ok(p) => p.to_value(),
                Err((seq, msg)) => Value::obj()
                    .with("error", msg.as_str().into())
                    .with("seq", (*seq).into()),
            },
        )
        .with("policy", policy_json(&r.policy, r.m.total_tokens))
        .with("anchorSeq", r.m.anchor_seq.into())
        .with("headerSeq", r.m.header_seq.into())
        .with("headerOverride", r.m.header_override.into());
    if let Some(a) = at {
        v = v.with("at", a.into());
    }
    if let Some(t) = &r.tokens {
        v = v.with(
            "tokenizer",
            tokenizer_json(t).with("hiddenPrefixTokens", r.hidden.into()),
        );
    }
    if let Some(f) = &r.fill {
        v = v.with("fill", f.to_value());
    }
    if with_schema {
        v = v.with("schema_version", SCHEMA_VERSION.into());
    }
    v
}

pub fn fmt_tokens(x: f64) -> String {
    render::num_f64(x)
}

pub fn fmt_u(x: u64) -> String {
    render::num(x)
}

pub fn bar(fraction: f64, width: usize) -> String {
    let f = if fraction.is_finite() {
        fraction.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let filled = (f * width as f64).round() as usize;
    format!("[{}{}]", "█".repeat(filled), "░".repeat(width - filled))
}

pub fn kind_name(k: dsh::Kind) -> &'static str {
    render::kind_name(k)
}

pub fn print_report(o: &Out, r: &Report, at: Option<u64>, nodes: bool) -> std::io::Result<()> {
    let m = &r.m;
    outln!(o, "session {}  ({})", r.session, r.file)?;
    if let Some(at) = at {
        outln!(o, "as it stood at seq {at}")?;
    }
    let total = m.total_tokens;
    print_pressure(o, r, total)?;
    print_baseline(o, m)?;
    let c = &m.composition;
    let bpe = r.tokens.as_ref().map(|t| &t.0);
    let enc_head = bpe.map(|t| format!("{} tokens", t.encoding.name()));
    outln!(o, "{}", composition_table(r, enc_head.as_deref()))?;
    print_projections(o, m)?;
    if let Some((b, secs)) = &r.tokens {
        outln!(
            o,
            "{}: {} tokens exactly vs {} by the heuristic (system + tools + surface); {} bytes in {:.2}s",
            b.encoding.name(),
            fmt_u(b.total_tokens),
            fmt_u(c.system_tokens + c.tools_tokens + c.message_tokens),
            fmt_u(b.text_bytes),
            secs
        )?;
        provider_line(o, r, b.encoding, b.total_tokens, r.hidden)?;
    }
    outln!(
        o,
        "{}",
        paint_dim(
            "how to read it: `tokens` is the harness's own estimate (about 4 characters a token, corrected by the provider's last reported usage: the \"provider anchor adjustment\" row), the figure compaction compares with the threshold; the provider lines are what the provider reported; --tokenizer o200k adds an exact count of the same text, --tokenizer deepseek-v4 DeepSeek's count of the whole request"
        )
    )?;
    if let Some(f) = &r.fill {
        render::fill::print(o, f)?;
    }
    if nodes {
        print_nodes(o, r, bpe, enc_head.as_deref())?;
    }
    Ok(())
}

/// The surface by part: nodes, heuristic tokens, share (and BPE tokens
/// under `enc_head`, with --tokenizer).
pub fn composition_table(r: &Report, enc_head: Option<&str>) -> render::table::Tbl {
    let m = &r.m;
    let total = m.total_tokens;
    let c = &m.composition;
    let bpe = r.tokens.as_ref().map(|t| &t.0);
    let mut head = vec!["part", "nodes", "tokens", "share"];
    if let Some(h) = enc_head {
        head.push(h);
    }
    let mut t = render::table(&head);
    let share = |x: f64| {
        if total > 0.0 {
            format!("{:.1}%", x / total * 100.0)
        } else {
            "-".into()
        }
    };
    let sum_kind = |k: dsh::Kind| -> u64 {
        bpe.map_or(0, |b| {
            b.nodes
                .iter()
                .zip(&r.node_kinds)
                .filter(|(_, nk)| **nk == k)
                .map(|(n, _)| n.tokens)
                .sum()
        })
    };
    let rows: Vec<(&str, String, f64, Option<u64>)> = vec![
        (
            "system prompt",
            "".into(),
            c.system_tokens as f64,
            bpe.map(|b| b.system_tokens),
        ),
        (
            "tool schemas",
            "".into(),
            c.tools_tokens as f64,
            bpe.map(|b| b.tools_tokens),
        ),
        (
            "user messages",
            c.user_nodes.to_string(),
            c.user_tokens as f64,
            bpe.map(|_| sum_kind(dsh::Kind::UserMessage)),
        ),
        (
            "assistant messages",
            c.assistant_nodes.to_string(),
            c.assistant_tokens as f64,
            bpe.map(|_| sum_kind(dsh::Kind::AssistantMessage)),
        ),
        (
            "tool results",
            c.tool_result_nodes.to_string(),
            c.tool_result_tokens as f64,
            bpe.map(|_| sum_kind(dsh::Kind::ToolResult)),
        ),
        (
            "provider anchor adjustment",
            "".into(),
            c.anchor_adjustment,
            None,
        ),
    ];
    for (name, nodes, tokens, b) in rows {
        let mut row = vec![name.to_string(), nodes, fmt_tokens(tokens), share(tokens)];
        if bpe.is_some() {
            row.push(b.map(fmt_u).unwrap_or_default());
        }
        t.add_row(row);
    }
    let mut row = vec![
        "total".to_string(),
        m.nodes.len().to_string(),
        fmt_tokens(total),
        share(total),
    ];
    if let Some(b) = bpe {
        row.push(fmt_u(b.total_tokens));
    }
    t.add_row(row);
    t
}

/// The provider's usage so far and the projections, or where they failed.
pub fn print_projections(o: &Out, m: &dsh::meter::Measurement) -> std::io::Result<()> {
    match &m.projections {
        Ok(p) => {
            let u = &p.token_usage;
            let cp = &p.context_pressure;
            outln!(
                o,
                "provider usage so far: {} uncached input, {} cache read, {} cache write, {} output",
                fmt_tokens(u.uncached_input_tokens),
                fmt_tokens(u.cache_read_tokens),
                fmt_tokens(u.cache_write_tokens),
                fmt_tokens(u.output_tokens)
            )?;
            if let (Some(pr), Some(pj)) = (cp.pressure_tokens, cp.projected_tokens) {
                outln!(
                    o,
                    "last request prompt: {} tokens; projected next prompt: {}",
                    fmt_tokens(pr),
                    fmt_tokens(pj)
                )?;
            }
            let drift = m.surface_tokens as f64 - p.context_breakdown.message_tokens;
            if drift != 0.0 {
                outln!(
                    o,
                    "note: the shadow-price projection differs from the surface by {} tokens (a replace without an adjacent metering event)",
                    fmt_tokens(drift)
                )?;
            }
        }
        Err((seq, msg)) => outln!(o, "projections: error at seq {seq}: {msg}")?,
    }
    Ok(())
}

/// Secondary text: dimmed when standard output gets color.
pub fn paint_dim(s: &str) -> String {
    if render::color::on() {
        let st = anstyle::Style::new().dimmed();
        format!("{st}{s}{st:#}")
    } else {
        s.to_string()
    }
}

/// With the route's provider's own tokenizer: its count against the window
/// (beside DSH's estimate, which stays the pressure figure the harness acts
/// on).
pub fn provider_line(
    o: &Out,
    r: &Report,
    enc: Encoding,
    counted: u64,
    hidden: Option<u64>,
) -> std::io::Result<()> {
    let Ok(p) = &r.policy else { return Ok(()) };
    if !enc.is_provider_of(&p.policy.provider) {
        return Ok(());
    }
    let window = p.budgets.context_window;
    let total = counted + hidden.unwrap_or(0);
    let left = window as i64 - total as i64;
    let what = match hidden {
        Some(h) => format!(
            "{} + {} hidden (the log's system prompt or tools are placeholders; estimated from the first usage) = {}",
            fmt_u(counted),
            fmt_u(h),
            fmt_u(total)
        ),
        None => fmt_u(total),
    };
    outln!(
        o,
        "provider  {} {} tokens: {:.2}% of the {} window, {}",
        what,
        enc.name(),
        total as f64 / window as f64 * 100.0,
        fmt_u(window),
        if left >= 0 {
            format!("{} left", fmt_u(left as u64))
        } else {
            format!("OVER by {}", fmt_u(left.unsigned_abs()))
        }
    )
}

/// The route, the pressure bar, the threshold and the retained budget (or
/// why there is no policy).
pub fn print_pressure(o: &Out, r: &Report, total: f64) -> std::io::Result<()> {
    match &r.policy {
        Ok(p) => {
            let b = &p.budgets;
            let window = b.context_window as f64;
            let src = match p.logged_seq {
                Some(s) => format!("request/context seq {s}"),
                None => p.capacity.source.as_str().to_string(),
            };
            outln!(
                o,
                "route     {}{}",
                p.policy.target_key(),
                if p.policy.overridden {
                    "  (model policy)"
                } else {
                    ""
                }
            )?;
            let tone = if b.over_threshold(total) {
                Tone::Bad
            } else {
                Tone::Good
            };
            outln!(
                o,
                "pressure  {} {} of the {} window ({src})",
                paint(&bar(total / window, 30), tone),
                paint(&format!("{:.2}%", total / window * 100.0), tone),
                fmt_u(b.context_window)
            )?;
            outln!(
                o,
                "tokens    {} (DSH estimate) · threshold {} ({}%) · {} {}",
                fmt_tokens(total),
                fmt_u(b.threshold_tokens),
                Value::Num(round2(b.threshold_ratio * 100.0)).to_json(),
                if b.over_threshold(total) {
                    paint("OVER by", Tone::Bad)
                } else {
                    "headroom".to_string()
                },
                fmt_tokens(b.headroom(total).abs())
            )?;
            outln!(
                o,
                "retain    {} tokens kept verbatim when compacting",
                fmt_u(b.retain_tokens)
            )?;
        }
        Err(e) => {
            outln!(o, "tokens    {} (DSH estimate)", fmt_tokens(total))?;
            outln!(o, "policy    {e}")?;
        }
    }
    Ok(())
}

/// Where the figure is anchored: the provider's reported usage, or an estimate.
pub fn print_baseline(o: &Out, m: &dsh::meter::Measurement) -> std::io::Result<()> {
    let anchor = match (m.baseline.kind, m.anchor_seq) {
        (dsh::meter::BaselineKind::Usage, Some(s)) => {
            format!(
                "provider usage {} at assistant/message seq {s}",
                fmt_tokens(m.baseline.tokens)
            )
        }
        (dsh::meter::BaselineKind::Estimated, Some(s)) => format!(
            "estimate {} anchored at assistant/message seq {s}",
            fmt_tokens(m.baseline.tokens)
        ),
        (k, _) => format!("{} {}", k.as_str(), fmt_tokens(m.baseline.tokens)),
    };
    outln!(
        o,
        "baseline  {anchor}, surface delta {}{}",
        if m.surface_delta_tokens >= 0 { "+" } else { "" },
        m.surface_delta_tokens
    )?;
    Ok(())
}

/// `--nodes`: one row per surface node.
pub fn print_nodes(
    o: &Out,
    r: &Report,
    bpe: Option<&TokenCounts>,
    enc_head: Option<&str>,
) -> std::io::Result<()> {
    let m = &r.m;
    let mut head = vec!["pos", "seq", "type", "tokens"];
    if let Some(h) = &enc_head {
        head.push(h);
    }
    let mut t = render::table(&head);
    for (i, (n, k)) in m.nodes.iter().zip(&r.node_kinds).enumerate() {
        let mut row = vec![
            i.to_string(),
            n.seq.to_string(),
            kind_name(*k).to_string(),
            fmt_u(n.tokens),
        ];
        if let Some(b) = bpe {
            row.push(fmt_u(b.nodes[i].tokens));
        }
        t.add_row(row);
    }
    outln!(o, "{t}")?;
    Ok(())
}

/// The many-log output: the JSON document, or the table, the policy
/// errors and the closing line (`counts`: measured, over the threshold,
/// refused).
pub fn print_many(
    ctx: &Ctx,
    json_rows: Vec<OwnedValue>,
    table: &render::table::Tbl,
    errors: &[String],
    counts: [u64; 3],
) -> anyhow::Result<()> {
    let [measured, over_threshold, refused] = counts;
    if ctx.json {
        let summary = Value::obj()
            .with("logs", (json_rows.len() as u64).into())
            .with("measured", measured.into())
            .with("overThreshold", over_threshold.into())
            .with("refused", refused.into());
        ctx.print_json(
            &Value::obj()
                .with("logs", Value::Arr(json_rows))
                .with("summary", summary)
                .with("schema_version", SCHEMA_VERSION.into()),
        )?;
    } else {
        outln!(ctx.out, "{table}")?;
        for e in errors {
            outln!(ctx.out, "{e}")?;
        }
        outln!(ctx.out, "{}", over_line(over_threshold, measured, refused))?;
    }
    Ok(())
}

/// The route, window, %, threshold and headroom cells of a measured log.
pub fn policy_cells(policy: &Result<PolicyReport, String>, total: f64) -> [String; 5] {
    match policy {
        Ok(p) => {
            let b = &p.budgets;
            [
                p.policy.target_key(),
                fmt_u(b.context_window),
                format!("{:.2}%", total / b.context_window as f64 * 100.0),
                fmt_u(b.threshold_tokens),
                if b.over_threshold(total) {
                    format!("OVER {}", fmt_tokens(-b.headroom(total)))
                } else {
                    fmt_tokens(b.headroom(total))
                },
            ]
        }
        Err(_) => [
            "(no policy, below)".into(),
            "-".into(),
            "-".into(),
            "-".into(),
            "-".into(),
        ],
    }
}

/// `2 of 5 over the compaction threshold (1 refused, reasons on stderr)`.
pub fn over_line(over: u64, measured: u64, refused: u64) -> String {
    let mut s = format!("{over} of {measured} over the compaction threshold",);
    if refused > 0 {
        s.push_str(&format!(" ({refused} refused, reasons on stderr)"));
    }
    s
}

/// A log's path relative to the directory argument it was found under
/// (`dirs`: the arguments that are directories, found once, so that many
/// file arguments stay linear).
pub fn short_name(file: &str, dirs: &[&Path]) -> String {
    for dir in dirs {
        if let Ok(rest) = Path::new(file).strip_prefix(dir)
            && !rest.as_os_str().is_empty()
        {
            return rest.display().to_string();
        }
    }
    file.to_string()
}
