//! `dsh measure`'s output: the report of one log (its `--json` document
//! and its readable form) and the cells the many-log table shares.

use dsh::doc::SchemaVersion;
use dsh::doc::error::LogRefusal;
use dsh::doc::measure as doc;
use dsh::json::Value;
use dsh::measure::{PolicyReport, Report};
use dsh::meter::tokenizer::{Encoding, TokenCounts};

use std::path::Path;

use crate::cli::ctx::Ctx;
use crate::cli::render;
use crate::cli::render::{Out, Tone, outln, paint};

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

pub fn print_report(o: &Out, r: &Report, nodes: bool) -> std::io::Result<()> {
    let m = &r.m;
    outln!(o, "session {}  ({})", r.session, r.file)?;
    if let Some(at) = r.at {
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
                Value::Num(((b.threshold_ratio * 100.0) * 100.0).round() / 100.0).to_json(),
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
            render::kind_name(*k).to_string(),
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

/// One log of many: its report and the loader's warnings, or its refusal
/// (the JSON entry and the message for stderr).
pub type Outcome = Result<(Report, Vec<String>), (LogRefusal, String)>;

/// The many-log output: each log's refusal or warnings on stderr, then the
/// JSON document, or the table, the policy errors and the closing line.
/// `dirs`: the arguments that are directories. Returns the counts.
pub fn print_many(
    ctx: &Ctx,
    logs: &[(String, Outcome)],
    dirs: &[&Path],
) -> anyhow::Result<doc::Summary> {
    let mut summary = doc::Summary {
        logs: logs.len() as u64,
        ..doc::Summary::default()
    };
    let mut entries = Vec::new();
    let mut errors = Vec::new();
    let mut table = render::table(&[
        "log",
        "route",
        "tokens",
        "window",
        "%",
        "threshold",
        "headroom",
        "baseline",
    ]);
    table.drop_first(&["baseline", "route", "window", "threshold"]);
    for (file, outcome) in logs {
        let shown = match render::log_label(file, ctx.home.as_deref()) {
            label if label != *file => label,
            _ => short_name(file, dirs),
        };
        match outcome {
            Err((refusal, msg)) => {
                summary.refused += 1;
                // The reason and what to do, on one line, naming the file once.
                if msg.starts_with(&format!("{file}: ")) {
                    eprintln!("{} {msg}", render::error_tag());
                } else {
                    eprintln!("{} {file}: {msg}", render::error_tag());
                }
                entries.push(doc::Entry::Refused(refusal.clone()));
                // The reason is on stderr, once; the row only marks the log.
                // (In the tokens column, which a narrow terminal keeps.)
                table.add_toned_row(vec![
                    (shown.clone(), None),
                    (String::new(), None),
                    ("refused".into(), Some(Tone::Bad)),
                ]);
            }
            Ok((r, warnings)) => {
                if !ctx.quiet {
                    for w in warnings {
                        eprintln!("{} {}: {w}", render::warning_tag(), r.file);
                    }
                }
                let total = r.m.total_tokens;
                let over = r.over_threshold();
                if let Err(e) = &r.policy {
                    errors.push(format!("{shown}: policy: {e}"));
                }
                let [route, window, pct, thr, head] = policy_cells(&r.policy, total);
                summary.measured += 1;
                summary.over_threshold += u64::from(over);
                let hot = over.then_some(Tone::Bad);
                table.add_toned_row(vec![
                    (shown, None),
                    (route, None),
                    (fmt_tokens(total), hot),
                    (window, None),
                    (pct, hot),
                    (thr, None),
                    (head, hot),
                    (r.m.baseline.kind.as_str().to_string(), None),
                ]);
                entries.push(doc::Entry::Measured(Box::new(doc::Measured::of(r))));
            }
        }
    }
    if ctx.json {
        ctx.print_doc(&doc::Many {
            logs: entries,
            summary,
            schema_version: SchemaVersion,
        })?;
    } else {
        outln!(ctx.out, "{table}")?;
        for e in &errors {
            outln!(ctx.out, "{e}")?;
        }
        let s = &summary;
        outln!(
            ctx.out,
            "{}",
            over_line(s.over_threshold, s.measured, s.refused)
        )?;
    }
    Ok(summary)
}

/// The route, window, %, threshold and headroom cells of a measured log.
pub fn policy_cells(
    policy: &Result<PolicyReport, dsh::measure::NoPolicy>,
    total: f64,
) -> [String; 5] {
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
