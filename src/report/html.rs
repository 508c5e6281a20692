//! The HTML of a report: one self-contained document per session (inline
//! CSS, inline SVG, one tiny inline script that records script errors into
//! a DOM attribute) and an index page for many sessions.

use std::fmt::Write;

use super::SessionReport;
use super::svg::{self, Chart, Series, VMarker};

/// Text as HTML content or attribute value: `& < > " '` as entities, control
/// characters (but tab and newline) as their visible Control Pictures, so no
/// log text can open an element, end an attribute or vanish.
pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + s.len() / 8);
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            '\n' | '\t' => o.push(c),
            '\r' => o.push('\u{240D}'),
            c if (c as u32) < 0x20 => {
                o.push(char::from_u32(0x2400 + c as u32).unwrap_or('\u{FFFD}'))
            }
            '\u{7F}' => o.push('\u{2421}'),
            c if ('\u{80}'..='\u{9F}').contains(&c) => o.push('\u{FFFD}'),
            c => o.push(c),
        }
    }
    o
}

/// A section added to a session page (the side-by-side view).
#[derive(Debug, Clone)]
pub struct Section {
    /// Element id.
    pub id: String,
    /// Heading.
    pub title: String,
    /// Its HTML (already escaped).
    pub html: String,
}

const CSS: &str = r#"
:root{--bg:#fff;--fg:#1b1b1f;--muted:#5b5f6b;--line:#d6d8de;--panel:#f5f6f8;--c1:#1f6fd1;--c2:#c2410c;--c3:#15803d;--c4:#7c3aed;--c5:#6b7280;--cmp:#b91c1c;--prn:#a16207;--shade:#fdf2d0}
@media (prefers-color-scheme:dark){:root{--bg:#15171c;--fg:#e8e9ed;--muted:#a4a9b6;--line:#3a3f4b;--panel:#1f2229;--c1:#6aa7ff;--c2:#ff9a5c;--c3:#4ade80;--c4:#c4a5ff;--c5:#9ca3af;--cmp:#f87171;--prn:#facc15;--shade:#3b3420}}
*{box-sizing:border-box}
body{margin:0 auto;max-width:1240px;padding:16px 20px;background:var(--bg);color:var(--fg);font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;overflow-wrap:anywhere}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid var(--line)}
.muted{color:var(--muted)}
table{border-collapse:collapse;width:100%;table-layout:fixed;margin:.5em 0}
th,td{border:1px solid var(--line);padding:3px 6px;text-align:left;vertical-align:top;overflow-wrap:anywhere}
th{background:var(--panel)}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px}dl.facts dt{color:var(--muted)}dl.facts dd{margin:0}
figure{margin:.8em 0}
svg.chart{width:100%;height:300px;display:block;background:var(--panel);border:1px solid var(--line)}
.grid{stroke:var(--line);stroke-width:1}
.axis{fill:var(--muted);font-size:12px}
.line{fill:none;stroke-width:1.6;vector-effect:non-scaling-stroke}
.dashed{stroke-dasharray:6 4}
.s1{stroke:var(--c1)}.s2{stroke:var(--c2)}.s3{stroke:var(--c3)}.s4{stroke:var(--c4)}.s5{stroke:var(--c5)}
.marker line{stroke-width:1.5;vector-effect:non-scaling-stroke}
.marker-compaction line{stroke:var(--cmp)}.marker-prune line{stroke:var(--prn);stroke-dasharray:3 3}
ul.legend{list-style:none;padding:0;margin:.3em 0;display:flex;flex-wrap:wrap;gap:4px 18px}
ul.legend li::before{content:"";display:inline-block;width:18px;height:3px;margin-right:6px;vertical-align:middle;background:currentColor}
.l1{color:var(--c1)}.l2{color:var(--c2)}.l3{color:var(--c3)}.l4{color:var(--c4)}.l5{color:var(--c5)}.lc{color:var(--cmp)}.lp{color:var(--prn)}
ul.legend li span{color:var(--fg)}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:var(--panel);border:1px solid var(--line);padding:8px;margin:.3em 0;font:13px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
details{margin:.3em 0}summary{cursor:pointer}
.note{border-left:4px solid var(--prn);padding:4px 10px;background:var(--panel)}
tr.replaced td:first-child{background:var(--shade)}tr.mark td{border-top:2px solid var(--cmp)}
table.side td{font-size:13px}
.sev-error{color:var(--cmp);font-weight:600}.sev-warning{color:var(--prn)}
@media print{:root{--bg:#fff;--fg:#000;--muted:#5b5f6b;--line:#d6d8de;--panel:#f5f6f8;--c1:#1f6fd1;--c2:#c2410c;--c3:#15803d;--c4:#7c3aed;--c5:#6b7280;--cmp:#b91c1c;--prn:#a16207;--shade:#fdf2d0}body{max-width:none;padding:0;font-size:11pt}summary{list-style:none;cursor:auto;font-weight:600}summary::-webkit-details-marker{display:none}svg.chart{height:220px;break-inside:avoid}table{break-inside:auto}tr{break-inside:avoid}a{color:inherit}}
@media print{details::details-content{content-visibility:visible;display:block}}
"#;

/// The page's only script: it records script errors and the page's width
/// into attributes of `<html>` (what the browser tests read).
const SCRIPT: &str = "<script>(function(){var d=document.documentElement;window.addEventListener('error',function(e){d.setAttribute('data-errors',(d.getAttribute('data-errors')||'')+e.message+';')});window.addEventListener('load',function(){d.setAttribute('data-scroll-width',String(d.scrollWidth))})})();</script>";

fn head(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><meta name=\"color-scheme\" content=\"light dark\"><meta name=\"generator\" content=\"dsh {}\"><title>{}</title><style>{CSS}</style>{SCRIPT}</head><body>",
        env!("CARGO_PKG_VERSION"),
        escape(title)
    )
}

/// A number with thousands separators.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return "—".into();
    }
    let neg = v < 0.0;
    let i = v.abs().round() as u128;
    let d = i.to_string();
    let mut o = String::new();
    for (k, ch) in d.chars().enumerate() {
        if k > 0 && (d.len() - k).is_multiple_of(3) {
            o.push(',');
        }
        o.push(ch);
    }
    if neg { format!("-{o}") } else { o }
}

fn usd(v: Option<f64>) -> String {
    match v {
        Some(v) if v.abs() < 0.01 && v != 0.0 => format!("${v:.4}"),
        Some(v) => format!("${v:.2}"),
        None => "—".into(),
    }
}

fn time(t: Option<i64>) -> String {
    match t {
        None => "—".into(),
        Some(ms) => crate::civil::date_time(ms, crate::civil::Offset::UTC),
    }
}

fn legend(items: &[(&str, &str)]) -> String {
    let mut s = String::from("<ul class=\"legend\" aria-hidden=\"true\">");
    for (class, name) in items {
        let _ = write!(
            s,
            "<li class=\"{class}\"><span>{}</span></li>",
            escape(name)
        );
    }
    s.push_str("</ul>");
    s
}

/// A table: header cells (name, numeric?) and rows of escaped cells.
fn table(class: &str, caption: &str, head: &[(&str, bool)], rows: &[Vec<String>]) -> String {
    let mut s = format!(
        "<table class=\"{class}\"><caption class=\"muted\">{}</caption><thead><tr>",
        escape(caption)
    );
    for (h, n) in head {
        let _ = write!(
            s,
            "<th{}>{}</th>",
            if *n { " class=\"n\"" } else { "" },
            escape(h)
        );
    }
    s.push_str("</tr></thead><tbody>");
    for r in rows {
        s.push_str("<tr>");
        for (i, c) in r.iter().enumerate() {
            let n = head.get(i).is_some_and(|h| h.1);
            let _ = write!(s, "<td{}>{c}</td>", if n { " class=\"n\"" } else { "" });
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table>");
    s
}

fn opt_num(v: Option<f64>) -> String {
    v.map_or("—".into(), num)
}

/// The per-request charts' x positions: bucket size and downsampled series.
struct Axis {
    bucket: usize,
    n: usize,
}

impl Axis {
    fn series(&self, v: Vec<Option<f64>>) -> Vec<Option<f64>> {
        svg::downsample(&v, self.bucket)
    }
    fn markers(&self, r: &SessionReport) -> Vec<VMarker> {
        r.markers
            .iter()
            .map(|m| VMarker {
                kind: m.kind.as_str(),
                // Between the last request before it and the first after.
                x: ((m.before_requests as f64) - 0.5).max(0.0) / self.bucket as f64,
                seq: m.seq,
                label: format!(
                    "{} at seq {} (after request {})",
                    m.kind.as_str(),
                    m.seq,
                    m.before_requests
                ),
            })
            .collect()
    }
}

/// One session's page. `sections` (the side-by-side view) come after the
/// tables.
pub fn session_page(r: &SessionReport, sections: &[Section]) -> String {
    let mut s = head(&format!("dsh report — {}", r.session));
    let _ = write!(
        s,
        "<header><h1>Session {}</h1><p class=\"muted\">{}</p></header><main>",
        escape(&r.session),
        escape(r.title.as_deref().unwrap_or("(no prompt)"))
    );
    // Facts.
    let route = r
        .route
        .as_ref()
        .map_or("—".to_string(), |(p, m)| format!("{p}/{m}"));
    let (cost, unpriced) = r.cost_total();
    let _ = write!(
        s,
        "<section id=\"facts\"><h2>Summary</h2><dl class=\"facts\"><dt>log</dt><dd>{}</dd><dt>project</dt><dd>{}</dd><dt>route</dt><dd>{}</dd><dt>events</dt><dd>{}</dd><dt>requests</dt><dd id=\"fact-requests\">{}</dd><dt>DSH estimate now</dt><dd id=\"fact-total-tokens\" data-value=\"{}\">{} tokens</dd><dt>window / threshold</dt><dd><span id=\"fact-window\" data-value=\"{}\">{}</span> / <span id=\"fact-threshold\" data-value=\"{}\">{}</span></dd><dt>compactions / prunes</dt><dd><span id=\"fact-compactions\">{}</span> / <span id=\"fact-prunes\">{}</span></dd><dt>predicted cache hit</dt><dd id=\"fact-predicted-hit\" data-value=\"{}\">{} tokens of {} ({})</dd><dt>reported cache hit</dt><dd id=\"fact-reported-hit\" data-value=\"{}\">{} tokens of {} reported prompt ({})</dd><dt>cost</dt><dd id=\"fact-cost\">{}{}</dd><dt>verify</dt><dd>{} finding(s)</dd></dl></section>",
        escape(&r.file),
        escape(&r.project),
        escape(&route),
        num(r.events as f64),
        num(r.points.len() as f64),
        r.total_tokens.map_or(String::new(), |t| t.to_string()),
        opt_num(r.total_tokens),
        r.window.map_or(String::new(), |w| w.to_string()),
        r.window.map_or("—".into(), |w| num(w as f64)),
        r.threshold.map_or(String::new(), |w| w.to_string()),
        r.threshold.map_or("—".into(), |w| num(w as f64)),
        r.compactions
            .iter()
            .filter(|c| c.summary_seq.is_some())
            .count(),
        r.prunes.len(),
        r.cache.predicted_hit,
        num(r.cache.predicted_hit as f64),
        num(r.cache.prompt_tokens as f64),
        r.cache
            .predicted_rate()
            .map_or("—".into(), |x| format!("{:.1}%", x * 100.0)),
        r.cache.reported_hit,
        num(r.cache.reported_hit),
        num(r.cache.reported_prompt),
        r.cache
            .reported_rate()
            .map_or("—".into(), |x| format!("{:.1}%", x * 100.0)),
        usd(Some(cost)),
        if unpriced > 0 {
            format!(" ({unpriced} request(s) without a known price)")
        } else {
            String::new()
        },
        r.findings.len(),
    );
    if !r.warnings.is_empty() {
        s.push_str("<div class=\"note\"><p>Warnings:</p><ul>");
        for w in &r.warnings {
            let _ = write!(s, "<li>{}</li>", escape(w));
        }
        s.push_str("</ul></div>");
    }
    let n = r.points.len();
    let axis = Axis {
        bucket: svg::bucket(n, r.max_points),
        n,
    };
    let sampled = axis.bucket > 1;
    if sampled {
        let _ = write!(
            s,
            "<p class=\"note\" id=\"downsampled\">The session has {} requests; the charts and their data tables show {} points, each the largest value of {} consecutive requests.</p>",
            num(n as f64),
            num(n.div_ceil(axis.bucket) as f64),
            axis.bucket
        );
    }
    pressure(&mut s, r, &axis);
    cache(&mut s, r, &axis);
    cost_chart(&mut s, r);
    tables(&mut s, r);
    for sec in sections {
        let _ = write!(
            s,
            "<section id=\"{}\"><h2>{}</h2>{}</section>",
            escape(&sec.id),
            escape(&sec.title),
            sec.html
        );
    }
    let _ = write!(
        s,
        "</main><footer><p class=\"muted\">Written by dsh {} from the log alone; cache and cost figures are predictions from published rules and prices, not a bill.</p></footer></body></html>",
        env!("CARGO_PKG_VERSION")
    );
    s.push('\n');
    s
}

fn data_table(
    title: &str,
    cols: &[&str],
    series: &[&Vec<Option<f64>>],
    bucket: usize,
    usd_cols: &[usize],
) -> String {
    let mut head: Vec<(&str, bool)> = vec![(if bucket > 1 { "requests" } else { "request" }, true)];
    head.extend(cols.iter().map(|c| (*c, true)));
    let len = series.iter().map(|v| v.len()).max().unwrap_or(0);
    let rows: Vec<Vec<String>> = (0..len)
        .map(|i| {
            let mut row = vec![if bucket > 1 {
                format!("{}–{}", i * bucket + 1, (i + 1) * bucket)
            } else {
                (i + 1).to_string()
            }];
            for (k, v) in series.iter().enumerate() {
                let x = v.get(i).copied().flatten();
                row.push(if usd_cols.contains(&k) {
                    usd(x)
                } else {
                    opt_num(x)
                });
            }
            row
        })
        .collect();
    format!(
        "<details class=\"data\"><summary>Data table: {}</summary>{}</details>",
        escape(title),
        table("data", title, &head, &rows)
    )
}

fn pressure(s: &mut String, r: &SessionReport, axis: &Axis) {
    let heur = axis.series(r.points.iter().map(|p| Some(p.heuristic as f64)).collect());
    let rep = axis.series(r.points.iter().map(|p| p.reported).collect());
    let thr = axis.series(
        r.points
            .iter()
            .map(|p| p.threshold.map(|t| t as f64))
            .collect(),
    );
    let win = axis.series(
        r.points
            .iter()
            .map(|p| p.window.map(|t| t as f64))
            .collect(),
    );
    let peak = r.points.iter().map(|p| p.heuristic).max().unwrap_or(0);
    let chart = Chart {
        id: "chart-pressure",
        title: "Context pressure per request",
        desc: format!(
            "{} requests. DSH's heuristic prompt size peaks at {} tokens; the threshold is {} and the window {} tokens at the end. {} compaction(s) and {} prune pass(es) are marked as vertical lines.",
            axis.n,
            num(peak as f64),
            r.threshold.map_or("unknown".into(), |t| num(t as f64)),
            r.window.map_or("unknown".into(), |t| num(t as f64)),
            r.compactions
                .iter()
                .filter(|c| c.summary_seq.is_some())
                .count(),
            r.prunes.len()
        ),
        series: vec![
            Series {
                name: "DSH heuristic".into(),
                class: "s1",
                values: heur.clone(),
                dashed: false,
            },
            Series {
                name: "provider-reported prompt".into(),
                class: "s2",
                values: rep.clone(),
                dashed: false,
            },
            Series {
                name: "threshold".into(),
                class: "s4",
                values: thr.clone(),
                dashed: true,
            },
            Series {
                name: "window".into(),
                class: "s5",
                values: win.clone(),
                dashed: true,
            },
        ],
        markers: axis.markers(r),
        unit: "tokens",
    };
    let _ = write!(
        s,
        "<section id=\"pressure\"><h2>Pressure</h2><figure>{}<figcaption>{}</figcaption></figure>{}</section>",
        chart.render(),
        legend(&[
            ("l1", "DSH heuristic"),
            ("l2", "provider-reported prompt"),
            ("l4", "threshold"),
            ("l5", "window"),
            ("lc", "compaction"),
            ("lp", "prune")
        ]),
        data_table(
            "pressure",
            &["heuristic", "reported", "threshold", "window"],
            &[&heur, &rep, &thr, &win],
            axis.bucket,
            &[]
        )
    );
}

fn cache(s: &mut String, r: &SessionReport, axis: &Axis) {
    let pred = axis.series(
        r.points
            .iter()
            .map(|p| Some(p.predicted_hit as f64))
            .collect(),
    );
    let rep = axis.series(r.points.iter().map(|p| p.reported_hit).collect());
    let miss = axis.series(
        r.points
            .iter()
            .map(|p| Some(p.predicted_miss as f64))
            .collect(),
    );
    let cost = axis.series(r.points.iter().map(|p| p.miss_cost).collect());
    let chart = Chart {
        id: "chart-cache",
        title: "Prompt cache per request",
        desc: format!(
            "Predicted cache hits total {} tokens of {} prompt tokens; the provider reported {} cache-read tokens.",
            num(r.cache.predicted_hit as f64),
            num(r.cache.prompt_tokens as f64),
            num(r.cache.reported_hit)
        ),
        series: vec![
            Series {
                name: "predicted hit".into(),
                class: "s3",
                values: pred.clone(),
                dashed: false,
            },
            Series {
                name: "reported hit".into(),
                class: "s2",
                values: rep.clone(),
                dashed: false,
            },
            Series {
                name: "predicted miss".into(),
                class: "s4",
                values: miss.clone(),
                dashed: true,
            },
        ],
        markers: Vec::new(),
        unit: "tokens",
    };
    let rows: Vec<Vec<String>> = r
        .miss_by_cause
        .iter()
        .map(|(k, n, miss, c)| vec![escape(k), n.to_string(), num(*miss as f64), usd(*c)])
        .collect();
    let _ = write!(
        s,
        "<section id=\"cache\"><h2>Cache</h2><figure>{}<figcaption>{}</figcaption></figure>{}<h3>Cost of misses by cause</h3>{}</section>",
        chart.render(),
        legend(&[
            ("l3", "predicted hit"),
            ("l2", "reported hit"),
            ("l4", "predicted miss")
        ]),
        data_table(
            "cache",
            &[
                "predicted hit",
                "reported hit",
                "predicted miss",
                "miss cost"
            ],
            &[&pred, &rep, &miss, &cost],
            axis.bucket,
            &[3]
        ),
        table(
            "misses",
            "predicted misses and their cost at the uncached input price",
            &[
                ("cause", false),
                ("requests", true),
                ("miss tokens", true),
                ("cost", true)
            ],
            &rows
        )
    );
}

fn cost_chart(s: &mut String, r: &SessionReport) {
    let n = r.cost.len();
    let b = svg::bucket(n, r.max_points);
    let mut acc = 0.0;
    let mut cum: Vec<Option<f64>> = Vec::with_capacity(n);
    for c in &r.cost {
        acc += c.usd.unwrap_or(0.0);
        cum.push(Some(acc));
    }
    let cum = svg::downsample(&cum, b);
    let (total, unpriced) = r.cost_total();
    let first = r.cost.iter().find_map(|c| c.time);
    let last = r.cost.iter().rev().find_map(|c| c.time);
    let chart = Chart {
        id: "chart-cost",
        title: "Cost over time",
        desc: format!(
            "Cumulative cost of {} provider-reported requests (agent and summariser) from {} to {}: {}{}.",
            n,
            time(first),
            time(last),
            usd(Some(total)),
            if unpriced > 0 {
                format!(", {unpriced} without a known price")
            } else {
                String::new()
            }
        ),
        series: vec![Series {
            name: "cumulative cost".into(),
            class: "s1",
            values: cum.clone(),
            dashed: false,
        }],
        markers: Vec::new(),
        unit: "USD",
    };
    let _ = write!(
        s,
        "<section id=\"cost\"><h2>Cost</h2><p class=\"muted\">From {} to {} (UTC).</p><figure>{}<figcaption>{}</figcaption></figure>{}</section>",
        time(first),
        time(last),
        chart.render(),
        legend(&[("l1", "cumulative cost (USD)")]),
        data_table("cost", &["cumulative USD"], &[&cum], b, &[0])
    );
}

fn tables(s: &mut String, r: &SessionReport) {
    // Compactions.
    let rows: Vec<Vec<String>> = r
        .compactions
        .iter()
        .map(|c| {
            let seqs = [c.start_seq, c.summary_seq, c.end_seq]
                .iter()
                .map(|x| x.map_or("—".into(), |v| v.to_string()))
                .collect::<Vec<_>>()
                .join(" / ");
            vec![
                format!(
                    "<span class=\"row-compaction\" data-seq=\"{}\">{}</span>",
                    c.summary_seq.map_or(String::new(), |v| v.to_string()),
                    escape(&c.id)
                ),
                seqs,
                escape(&c.trigger),
                escape(&c.mode),
                c.range.map_or("—".into(), |(a, b)| {
                    format!("{a}…{b} ({} nodes)", c.shadowed_nodes)
                }),
                num(c.shadowed_tokens),
                if c.summary_seq.is_some() {
                    format!("{} chars", num(c.summary_chars as f64))
                } else {
                    "—".into()
                },
                c.error.as_deref().map_or("—".into(), |e| {
                    format!("<span class=\"sev-error\">{}</span>", escape(e))
                }),
                c.survival.as_deref().map_or("—".into(), escape),
            ]
        })
        .collect();
    let _ = write!(
        s,
        "<section id=\"compactions\"><h2>Compactions</h2>{}",
        table(
            "compactions",
            "start / summary / end seqs; shadowed range as positions",
            &[
                ("id", false),
                ("seqs", false),
                ("trigger", false),
                ("mode", false),
                ("shadowed", false),
                ("tokens", true),
                ("summary", true),
                ("error", false),
                ("survival", false)
            ],
            &rows
        )
    );
    for c in r.compactions.iter().filter(|c| c.summary_seq.is_some()) {
        let _ = write!(
            s,
            "<details class=\"summary\" id=\"summary-{}\"><summary>Summary of {} (seq {}, {} by {})</summary><pre>{}</pre></details>",
            c.summary_seq.unwrap_or(0),
            escape(&c.id),
            c.summary_seq.unwrap_or(0),
            format_args!("{} chars", num(c.summary_chars as f64)),
            escape(&c.summariser),
            escape(&c.summary)
        );
    }
    s.push_str("</section>");
    // Prunes.
    let rows: Vec<Vec<String>> = r
        .prunes
        .iter()
        .map(|p| {
            vec![
                format!(
                    "<span class=\"row-prune\" data-seq=\"{}\">{}</span>",
                    p.seq, p.seq
                ),
                p.range.map_or("—".into(), |(a, b)| format!("{a}…{b}")),
                num(p.shadowed_nodes as f64),
                num(p.shadowed_tokens),
            ]
        })
        .collect();
    let _ = write!(
        s,
        "<section id=\"prunes\"><h2>Prunes</h2>{}</section>",
        table(
            "prunes",
            "tool-result prune passes",
            &[
                ("seq", true),
                ("shadowed range", false),
                ("results", true),
                ("tokens", true)
            ],
            &rows
        )
    );
    // Locks.
    let rows: Vec<Vec<String>> = r
        .locks
        .brackets
        .iter()
        .map(|b| {
            vec![
                b.seq.to_string(),
                escape(
                    &b.compaction_id
                        .as_str()
                        .map_or_else(|| b.compaction_id.to_json(), |s| s.into_owned()),
                ),
                escape(&b.owner()),
                escape(b.status.as_str()),
                b.end_seq.map_or("—".into(), |v| v.to_string()),
                b.error.as_ref().map_or("—".into(), |e| {
                    escape(&e.as_str().map_or_else(|| e.to_json(), |s| s.into_owned()))
                }),
            ]
        })
        .collect();
    let _ = write!(
        s,
        "<section id=\"locks\"><h2>Locks</h2><p>State: <strong>{}</strong></p>{}</section>",
        escape(r.locks.state.as_str()),
        table(
            "locks",
            "compaction/start brackets",
            &[
                ("seq", true),
                ("compaction", false),
                ("owner", false),
                ("status", false),
                ("end", true),
                ("error", false)
            ],
            &rows
        )
    );
    // Verify.
    let rows: Vec<Vec<String>> = r
        .findings
        .iter()
        .map(|f| {
            let sev = f.severity.as_str();
            vec![
                format!("<span class=\"sev-{sev}\">{sev}</span>"),
                escape(f.check.as_str()),
                f.seq.map_or("—".into(), |v| v.to_string()),
                escape(&f.message),
            ]
        })
        .collect();
    let _ = write!(
        s,
        "<section id=\"verify\"><h2>Verify findings</h2>{}{}</section>",
        if rows.is_empty() {
            "<p>No findings: the log is clean.</p>"
        } else {
            ""
        },
        table(
            "findings",
            "dsh verify",
            &[
                ("severity", false),
                ("check", false),
                ("seq", true),
                ("message", false)
            ],
            &rows
        )
    );
}

/// One row of the index page.
#[derive(Debug, Clone)]
pub struct IndexEntry {
    /// The page, relative to the index.
    pub href: String,
    /// Session id.
    pub session: String,
    /// The first prompt.
    pub title: Option<String>,
    /// The log.
    pub file: String,
    /// Requests, compactions, prunes.
    pub counts: (usize, usize, usize),
    /// The refusal, when the log could not be read.
    pub error: Option<String>,
}

/// The index page linking one page per session.
pub fn index_page(entries: &[IndexEntry]) -> String {
    let mut s = head("dsh report — sessions");
    let refused = entries.iter().filter(|e| e.error.is_some()).count();
    let _ = write!(
        s,
        "<header><h1>Sessions</h1><p class=\"muted\">{} session page(s){}</p></header><main>",
        entries.len() - refused,
        if refused > 0 {
            format!(", {refused} log(s) refused")
        } else {
            String::new()
        }
    );
    let rows: Vec<Vec<String>> = entries
        .iter()
        .map(|e| {
            let link = if e.error.is_some() {
                escape(&e.session)
            } else {
                format!("<a href=\"{}\">{}</a>", escape(&e.href), escape(&e.session))
            };
            vec![
                link,
                escape(e.title.as_deref().unwrap_or("")),
                escape(&e.file),
                e.counts.0.to_string(),
                e.counts.1.to_string(),
                e.counts.2.to_string(),
                e.error.as_deref().map_or(String::new(), |x| {
                    format!("<span class=\"sev-error\">{}</span>", escape(x))
                }),
            ]
        })
        .collect();
    s.push_str(&table(
        "sessions",
        "one page per session",
        &[
            ("session", false),
            ("prompt", false),
            ("log", false),
            ("requests", true),
            ("compactions", true),
            ("prunes", true),
            ("error", false),
        ],
        &rows,
    ));
    s.push_str("</main></body></html>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::super::MarkerKind;
    use super::*;

    #[test]
    fn escapes_markup_quotes_and_controls() {
        assert_eq!(escape("<script>\"'&"), "&lt;script&gt;&quot;&#39;&amp;");
        assert_eq!(escape("a\u{0}b\u{1b}\n"), "a\u{2400}b\u{241B}\n");
        assert_eq!(escape("\u{7f}\u{85}"), "\u{2421}\u{FFFD}");
    }

    #[test]
    fn numbers_read() {
        assert_eq!(num(1234567.0), "1,234,567");
        assert_eq!(num(-12.0), "-12");
        assert_eq!(num(f64::NAN), "—");
    }

    #[test]
    fn marker_kind_names() {
        assert_eq!(MarkerKind::Prune.as_str(), "prune");
    }
}
