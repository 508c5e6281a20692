//! The HTML of one session's page: one self-contained document (inline CSS,
//! inline SVG, the one small inline script of `markup::head`).

use std::fmt::Write;

use super::markup::{self, Section, escape, num, opt_num, pct, table, table_or, usd};
use super::svg::{self, Chart, Marker, Series, Shape, Style, Swatch, Unit, XAxis};
use super::{Compaction, SessionReport};
use crate::cache::BreakEven;
use crate::civil::Zone;

/// How a session page is written.
#[derive(Debug, Clone)]
pub struct PageOptions<'a> {
    /// The zone times and days are shown in.
    pub zone: &'a Zone,
    /// The dashboard the page belongs to (a link back), relative to it.
    pub index: Option<&'a str>,
}

/// A time in the page's zone, `—` when unknown.
fn time(t: Option<i64>, zone: &Zone) -> String {
    t.map_or("—".into(), |ms| zone.date_time(ms))
}

/// The x positions of a session's charts: over time when the log's times
/// are real, else over requests labelled by turn; one position per request
/// (`xs`), events between requests half way between their neighbours.
struct Axis {
    x: XAxis,
    xs: Vec<f64>,
    seqs: Vec<u64>,
    bucket: usize,
    over_time: bool,
    /// Where each request is, in words: its time, or its turn.
    at: Vec<String>,
}

impl Axis {
    fn new(r: &SessionReport, zone: &Zone) -> Axis {
        let n = r.points.len();
        let times: Vec<i64> = r.points.iter().filter_map(|p| p.time).collect();
        // Over time when every request has a real time and they span a
        // minute at least (shorter, round ticks would not fall between them).
        let span = times
            .iter()
            .max()
            .zip(times.iter().min())
            .map_or(0, |(a, b)| a - b);
        let over_time = r.times_real && n > 0 && times.len() == n && span >= 60_000;
        let (x, xs) = if over_time {
            let (lo, hi) = (times[0], *times.iter().max().unwrap_or(&times[0]));
            let lo = times.iter().copied().min().unwrap_or(lo);
            (
                svg::time_axis(lo, hi, zone),
                times.iter().map(|&t| t as f64).collect(),
            )
        } else {
            let turns: Vec<Option<u64>> = r.points.iter().map(|p| p.turn).collect();
            (
                svg::request_axis(n, &turns),
                (0..n).map(|i| i as f64).collect(),
            )
        };
        let at = r
            .points
            .iter()
            .map(|p| match (over_time, p.time, p.turn) {
                (true, Some(t), _) => zone.date_time(t),
                (false, _, Some(t)) => t.to_string(),
                _ => "—".into(),
            })
            .collect();
        Axis {
            x,
            xs,
            seqs: r.points.iter().map(|p| p.seq).collect(),
            bucket: svg::bucket(n, r.max_points),
            over_time,
            at,
        }
    }

    /// Where bucket `i` is: its first request's time or turn (turns: the
    /// range when they differ).
    fn where_at(&self, i: usize) -> String {
        let first = i * self.bucket;
        let last = ((i + 1) * self.bucket).min(self.at.len()).saturating_sub(1);
        match (self.at.get(first), self.at.get(last)) {
            (Some(a), Some(b)) if !self.over_time && a != b => format!("{a}–{b}"),
            (Some(a), _) => a.clone(),
            _ => String::new(),
        }
    }

    /// Where the event `seq` falls: on its request, or half way between the
    /// requests around it.
    fn at_seq(&self, seq: u64) -> f64 {
        let k = self.seqs.partition_point(|&s| s < seq);
        match (
            self.xs.get(k),
            k.checked_sub(1).and_then(|j| self.xs.get(j)),
        ) {
            (Some(&x), _) if self.seqs[k] == seq => x,
            (Some(&next), Some(&prev)) => (prev + next) / 2.0,
            (Some(&x), None) | (None, Some(&x)) => x,
            (None, None) => 0.0,
        }
    }

    /// The bucket `i`'s x: the mean of its requests'.
    fn bucket_x(&self, i: usize) -> f64 {
        let c = &self.xs[i * self.bucket..((i + 1) * self.bucket).min(self.xs.len())];
        c.iter().sum::<f64>() / c.len().max(1) as f64
    }

    /// One value per request, downsampled, at the buckets' x.
    /// One value per request (`f` of each point), downsampled onto the axis.
    fn series(
        &self,
        r: &SessionReport,
        f: impl Fn(&super::Point) -> Option<f64>,
    ) -> Vec<(f64, Option<f64>)> {
        let v: Vec<Option<f64>> = r.points.iter().map(f).collect();
        svg::downsample(&v, self.bucket)
            .into_iter()
            .enumerate()
            .map(|(i, v)| (self.bucket_x(i), v))
            .collect()
    }
}

/// One session's page; the side-by-side view (when the report has it) and
/// `sections` come after the tables.
pub fn session_page(r: &SessionReport, sections: &[Section], o: &PageOptions<'_>) -> String {
    let mut s = markup::head(&format!("dsh report — {}", r.session), "");
    s.push_str("<header>");
    if let Some(i) = o.index {
        let _ = write!(
            s,
            "<p><a href=\"{}\" id=\"back\">← all sessions</a></p>",
            escape(i)
        );
    }
    let _ = write!(
        s,
        "<h1>Session {}</h1><p class=\"muted\">{}</p>",
        escape(&r.session),
        escape(r.title.as_deref().unwrap_or("(no prompt)"))
    );
    if let Some(f) = r.fill().filter(|f| *f > 1.0) {
        let _ = write!(
            s,
            "<p><span class=\"badge over\" id=\"over-window\">{:.1}% over the window</span> the next request would not fit the route's context window.</p>",
            (f - 1.0) * 100.0
        );
    }
    s.push_str("</header><main>");
    facts(&mut s, r, o.zone);
    let axis = Axis::new(r, o.zone);
    let n = r.points.len();
    if axis.bucket > 1 {
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
    cost_chart(&mut s, r, &axis, o.zone);
    compactions(&mut s, r);
    tables(&mut s, r);
    let side = r
        .view
        .as_ref()
        .map(|v| super::side::section(v, r.survival.as_ref()));
    for sec in side.iter().chain(sections) {
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
        "</main><footer><p class=\"muted\">Written by dsh {} from the log alone; times in {}; cache and cost figures are predictions from published rules and prices, not a bill.</p></footer></body></html>",
        env!("CARGO_PKG_VERSION"),
        escape(&o.zone.to_string())
    );
    s.push('\n');
    s
}

fn facts(s: &mut String, r: &SessionReport, zone: &Zone) {
    let route = r
        .route
        .as_ref()
        .map_or("—".to_string(), |(p, m)| format!("{p}/{m}"));
    let (cost, unpriced) = r.cost_total();
    let fill = r.fill().map_or(String::new(), |f| {
        let class = if f > 1.0 { "over" } else { "near" };
        if f > 1.0
            || r.threshold
                .is_some_and(|t| r.total_tokens.unwrap_or(0.0) >= t as f64)
        {
            format!(
                " <span class=\"badge {class}\">{:.1}% of the window</span>",
                f * 100.0
            )
        } else {
            format!(" ({:.1}% of the window)", f * 100.0)
        }
    });
    let first = r.cost.iter().find_map(|c| c.time);
    let last = r.cost.iter().rev().find_map(|c| c.time);
    let _ = write!(
        s,
        "<section id=\"facts\"><h2>Summary</h2><dl class=\"facts\"><dt>log</dt><dd>{}</dd><dt>project</dt><dd>{}</dd><dt>route</dt><dd>{}</dd><dt>time</dt><dd>{}</dd><dt>events</dt><dd>{}</dd><dt>model requests</dt><dd><span id=\"fact-requests\">{}</span>{}</dd><dt>DSH estimate now</dt><dd id=\"fact-total-tokens\" data-value=\"{}\">{} tokens{fill}</dd><dt>window / threshold</dt><dd><span id=\"fact-window\" data-value=\"{}\">{}</span> / <span id=\"fact-threshold\" data-value=\"{}\">{}</span></dd><dt>compactions / prunes</dt><dd><span id=\"fact-compactions\">{}</span> / <span id=\"fact-prunes\">{}</span></dd><dt>predicted cache hit</dt><dd id=\"fact-predicted-hit\" data-value=\"{}\">{} tokens of {} ({})</dd><dt>reported cache hit</dt><dd id=\"fact-reported-hit\" data-value=\"{}\">{} tokens of {} reported prompt ({})</dd><dt>cost</dt><dd id=\"fact-cost\">{}{}</dd><dt>verify</dt><dd>{} finding(s)</dd></dl></section>",
        escape(&r.file),
        if r.project.is_empty() {
            "—".to_string()
        } else {
            escape(&r.project)
        },
        escape(&route),
        match (first, last) {
            (Some(_), Some(_)) => format!(
                "{} to {} ({})",
                time(first, zone),
                time(last, zone),
                escape(&zone.to_string())
            ),
            _ => "unknown (no dated request)".into(),
        },
        num(r.events as f64),
        num(r.points.len() as f64),
        match r
            .cost
            .iter()
            .filter(|c| c.caller == crate::usage::Caller::Summariser)
            .count()
        {
            0 => String::new(),
            k => format!(" and {k} summariser call(s)"),
        },
        r.total_tokens.map_or(String::new(), |t| t.to_string()),
        opt_num(r.total_tokens),
        r.window.map_or(String::new(), |w| w.to_string()),
        r.window.map_or("—".into(), |w| num(w as f64)),
        r.threshold.map_or(String::new(), |w| w.to_string()),
        r.threshold.map_or("—".into(), |w| num(w as f64)),
        r.landed_compactions(),
        r.prunes.len(),
        r.cache.predicted_hit,
        num(r.cache.predicted_hit as f64),
        num(r.cache.prompt_tokens as f64),
        pct(r.cache.predicted_rate()),
        r.cache.reported_hit,
        num(r.cache.reported_hit),
        num(r.cache.reported_prompt),
        pct(r.cache.reported_rate()),
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
}

/// A data table under a chart: one row per point (or bucket) with its
/// requests and where they are (time or turn), then the series.
fn data_table(
    title: &str,
    axis: &Axis,
    cols: &[&str],
    series: &[&[(f64, Option<f64>)]],
    usd_cols: &[usize],
) -> String {
    let bucket = axis.bucket;
    let mut head: Vec<(&str, bool)> = vec![(if bucket > 1 { "requests" } else { "request" }, true)];
    head.push((
        if axis.over_time { "time" } else { "turn" },
        !axis.over_time,
    ));
    head.extend(cols.iter().map(|c| (*c, true)));
    let len = series.iter().map(|v| v.len()).max().unwrap_or(0);
    let rows: Vec<Vec<String>> = (0..len)
        .map(|i| {
            let mut row = vec![
                if bucket > 1 {
                    format!(
                        "{}–{}",
                        i * bucket + 1,
                        ((i + 1) * bucket).min(axis.xs.len())
                    )
                } else {
                    (i + 1).to_string()
                },
                axis.where_at(i),
            ];
            for (k, v) in series.iter().enumerate() {
                let x = v.get(i).and_then(|p| p.1);
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

/// The pressure chart's markers: a triangle per landed compaction, a
/// diamond per prune, a dot per point (or bucket) over its window.
fn pressure_markers(
    r: &SessionReport,
    axis: &Axis,
    heur: &[(f64, Option<f64>)],
    win: &[(f64, Option<f64>)],
) -> Vec<Marker> {
    let mut markers = Vec::new();
    for c in r.compactions.iter().filter(|c| c.summary_seq.is_some()) {
        let seq = c.summary_seq.unwrap_or(0);
        markers.push(Marker {
            kind: "compaction",
            shape: Shape::Triangle,
            x: axis.at_seq(seq),
            y: None,
            rule: true,
            seq,
            label: format!("compaction {} at seq {seq}", c.id),
        });
    }
    for p in &r.prunes {
        markers.push(Marker {
            kind: "prune",
            shape: Shape::Diamond,
            x: axis.at_seq(p.seq),
            y: None,
            rule: true,
            seq: p.seq,
            label: format!("prune at seq {} ({} results)", p.seq, p.shadowed_nodes),
        });
    }
    // One dot per point (or bucket) over its window.
    for (i, (x, v)) in heur.iter().enumerate() {
        if let (Some(v), Some(w)) = (v, win.get(i).and_then(|w| w.1))
            && *v > w
        {
            let seq = axis.seqs[i * axis.bucket];
            markers.push(Marker {
                kind: "overflow",
                shape: Shape::Circle,
                x: *x,
                y: Some(*v),
                rule: false,
                seq,
                label: format!("over the window: {} of {} tokens", num(*v), num(w)),
            });
        }
    }
    markers
}

/// The pressure chart's text description: `peak` heuristic tokens, `over`
/// requests over the window.
fn pressure_desc(r: &SessionReport, peak: u64, over: usize) -> String {
    format!(
        "{} requests. DSH's heuristic prompt size peaks at {} tokens; the threshold is {} and the window {} tokens at the end. {} compaction(s) (triangles at the top), {} prune pass(es) (diamonds at the bottom){}.",
        r.points.len(),
        num(peak as f64),
        r.threshold.map_or("unknown".into(), |t| num(t as f64)),
        r.window.map_or("unknown".into(), |t| num(t as f64)),
        r.landed_compactions(),
        r.prunes.len(),
        if over == 0 {
            String::new()
        } else {
            format!("; {} request(s) over the window (dots)", num(over as f64))
        }
    )
}

fn pressure(s: &mut String, r: &SessionReport, axis: &Axis) {
    let heur = axis.series(r, |p| Some(p.heuristic as f64));
    let rep = axis.series(r, |p| p.reported);
    // With a tokenizer: the prompt in the provider's own tokens.
    let theirs = axis.series(r, |p| p.provider.map(|t| t as f64));
    let counted = r.tokenizer.map(|e| format!("{e} count"));
    let thr = axis.series(r, |p| p.threshold.map(|t| t as f64));
    let win = axis.series(r, |p| p.window.map(|t| t as f64));
    let peak = r.points.iter().map(|p| p.heuristic).max().unwrap_or(0);
    let over: Vec<&super::Point> = r.over_window().collect();
    let markers = pressure_markers(r, axis, &heur, &win);
    let mut chart = Chart {
        id: "chart-pressure",
        title: "Context pressure per request",
        desc: pressure_desc(r, peak, over.len()),
        x: axis.x.clone(),
        unit: Unit::Tokens,
        series: vec![
            Series::new("DSH heuristic", "s1", Style::Solid, heur.clone()),
            Series::new("provider-reported prompt", "s2", Style::Solid, rep.clone()),
            Series::new("threshold", "s4", Style::Step, thr.clone()),
            Series::new("window", "s5", Style::Step, win.clone()),
        ],
        markers,
    };
    if let Some(name) = &counted {
        chart.series.insert(
            2,
            Series::new(name.clone(), "s3", Style::Solid, theirs.clone()),
        );
    }
    let mut items = vec![
        (Swatch::Line("s1", Style::Solid), "DSH heuristic"),
        (Swatch::Line("s2", Style::Solid), "provider-reported prompt"),
        (Swatch::Line("s4", Style::Step), "threshold"),
        (Swatch::Line("s5", Style::Step), "window"),
        (Swatch::Shape("compaction", Shape::Triangle), "compaction"),
        (Swatch::Shape("prune", Shape::Diamond), "prune"),
    ];
    if !over.is_empty() {
        items.push((Swatch::Shape("overflow", Shape::Circle), "over the window"));
    }
    let data = match &counted {
        Some(c) => {
            items.insert(2, (Swatch::Line("s3", Style::Solid), c.as_str()));
            data_table(
                "pressure",
                axis,
                &["heuristic", "reported", c, "threshold", "window"],
                &[&heur, &rep, &theirs, &thr, &win],
                &[],
            )
        }
        None => data_table(
            "pressure",
            axis,
            &["heuristic", "reported", "threshold", "window"],
            &[&heur, &rep, &thr, &win],
            &[],
        ),
    };
    let _ = write!(
        s,
        "<section id=\"pressure\"><h2>Pressure</h2>{}</section>",
        if r.points.is_empty() {
            "<p class=\"empty\">No model requests: nothing to chart.</p>".to_string()
        } else {
            format!(
                "<figure>{}<figcaption>{}</figcaption></figure>{}",
                chart.render(),
                svg::legend(&items),
                data
            )
        }
    );
}

fn cache(s: &mut String, r: &SessionReport, axis: &Axis) {
    let pred = axis.series(r, |p| Some(p.predicted_hit as f64));
    let rep = axis.series(r, |p| p.reported_hit);
    let miss = axis.series(r, |p| Some(p.predicted_miss as f64));
    let cost = axis.series(r, |p| p.miss_cost);
    let chart = Chart {
        id: "chart-cache",
        title: "Prompt cache per request",
        desc: format!(
            "Predicted cache hits total {} tokens of {} prompt tokens; the provider reported {} cache-read tokens.",
            num(r.cache.predicted_hit as f64),
            num(r.cache.prompt_tokens as f64),
            num(r.cache.reported_hit)
        ),
        x: axis.x.clone(),
        unit: Unit::Tokens,
        series: vec![
            Series::new("predicted hit", "s3", Style::Solid, pred.clone()),
            Series::new("reported hit", "s2", Style::Solid, rep.clone()),
            Series::new("predicted miss", "s4", Style::Dashed, miss.clone()),
        ],
        markers: Vec::new(),
    };
    let rows: Vec<Vec<String>> = r
        .miss_by_cause
        .iter()
        .map(|(k, n, miss, c)| vec![escape(k), n.to_string(), num(*miss as f64), usd(*c)])
        .collect();
    let body = if r.points.is_empty() {
        "<p class=\"empty\">No model requests: no prompt cache to predict.</p>".to_string()
    } else {
        format!(
            "<figure>{}<figcaption>{}</figcaption></figure>{}<h3>Cost of misses by cause</h3>{}",
            chart.render(),
            svg::legend(&[
                (Swatch::Line("s3", Style::Solid), "predicted hit"),
                (Swatch::Line("s2", Style::Solid), "reported hit"),
                (Swatch::Line("s4", Style::Dashed), "predicted miss"),
            ]),
            data_table(
                "cache",
                axis,
                &[
                    "predicted hit",
                    "reported hit",
                    "predicted miss",
                    "miss cost"
                ],
                &[&pred, &rep, &miss, &cost],
                &[3],
            ),
            table_or(
                "misses cards",
                "predicted misses and their cost at the uncached input price",
                &[
                    ("cause", false),
                    ("requests", true),
                    ("miss tokens", true),
                    ("cost", true)
                ],
                &rows,
                "No predicted misses."
            )
        )
    };
    let _ = write!(s, "<section id=\"cache\"><h2>Cache</h2>{body}</section>");
}

fn cost_chart(s: &mut String, r: &SessionReport, axis: &Axis, zone: &Zone) {
    let n = r.cost.len();
    if n == 0 {
        s.push_str("<section id=\"cost\"><h2>Cost</h2><p class=\"empty\">No provider-reported usage: nothing to price.</p></section>");
        return;
    }
    let b = svg::bucket(n, r.max_points);
    let mut acc = 0.0;
    let mut cum: Vec<(f64, Option<f64>)> = Vec::with_capacity(n);
    for c in &r.cost {
        acc += c.usd.unwrap_or(0.0);
        cum.push((axis.at_seq(c.seq), Some(acc)));
    }
    let cum: Vec<(f64, Option<f64>)> = cum
        .chunks(b)
        .map(|c| {
            (
                c.iter().map(|p| p.0).sum::<f64>() / c.len() as f64,
                c.last().and_then(|p| p.1),
            )
        })
        .collect();
    let (total, unpriced) = r.cost_total();
    let first = r.cost.iter().find_map(|c| c.time);
    let last = r.cost.iter().rev().find_map(|c| c.time);
    let chart = Chart {
        id: "chart-cost",
        title: "Cost over the session",
        desc: format!(
            "Cumulative cost of {} provider-reported requests (agent and summariser) from {} to {}: {}{}.",
            n,
            time(first, zone),
            time(last, zone),
            usd(Some(total)),
            if unpriced > 0 {
                format!(", {unpriced} without a known price")
            } else {
                String::new()
            }
        ),
        x: axis.x.clone(),
        unit: Unit::Usd,
        series: vec![Series::new(
            "cumulative cost",
            "s1",
            Style::Solid,
            cum.clone(),
        )],
        markers: Vec::new(),
    };
    let rows: Vec<Vec<String>> = cum
        .iter()
        .enumerate()
        .map(|(i, (_, v))| {
            let c = &r.cost[i * b];
            vec![
                if b > 1 {
                    format!("{}–{}", i * b + 1, ((i + 1) * b).min(n))
                } else {
                    (i + 1).to_string()
                },
                c.seq.to_string(),
                escape(c.caller.as_str()),
                time(c.time, zone),
                usd(*v),
            ]
        })
        .collect();
    let _ = write!(
        s,
        "<section id=\"cost\"><h2>Cost</h2><figure>{}<figcaption>{}</figcaption></figure><details class=\"data\"><summary>Data table: cost</summary>{}</details></section>",
        chart.render(),
        svg::legend(&[(Swatch::Line("s1", Style::Solid), "cumulative cost (USD)")]),
        table(
            "data",
            "cost",
            &[
                (if b > 1 { "requests" } else { "request" }, true),
                ("seq", true),
                ("caller", false),
                ("time", false),
                ("cumulative USD", true)
            ],
            &rows
        )
    );
}

/// A break-even in words.
pub(crate) fn break_even_text(b: BreakEven) -> String {
    match b {
        BreakEven::At { after: 1, .. } => "paid back at once".into(),
        BreakEven::At { after, .. } => format!("paid back after {after} requests"),
        BreakEven::NotPaidBack => "not paid back".into(),
        BreakEven::Unknown => "—".into(),
    }
}

fn compaction_row(c: &Compaction) -> Vec<String> {
    let seqs = [c.start_seq, c.summary_seq, c.end_seq]
        .iter()
        .map(|x| x.map_or("—".into(), |v| v.to_string()))
        .collect::<Vec<_>>()
        .join(" / ");
    let p = c.payback.as_ref();
    vec![
        format!(
            "<span class=\"row-compaction\" data-seq=\"{}\" data-cost=\"{}\" data-saved=\"{}\">{}</span>",
            c.summary_seq.map_or(String::new(), |v| v.to_string()),
            p.and_then(|p| p.cost_usd())
                .map_or(String::new(), |v| v.to_string()),
            p.and_then(|p| p.saved_usd())
                .map_or(String::new(), |v| v.to_string()),
            escape(&c.id)
        ),
        seqs,
        format!(
            "{}<br><span class=\"muted\">{}</span>",
            escape(&c.trigger),
            escape(&c.mode)
        ),
        c.range.map_or("—".into(), |(a, b)| {
            format!(
                "{a}…{b} ({} nodes, {} tokens)",
                c.shadowed_nodes,
                num(c.shadowed_tokens)
            )
        }),
        if c.summary_seq.is_some() {
            format!("{} chars", num(c.summary_chars as f64))
        } else {
            "—".into()
        },
        p.map_or("—".into(), |p| {
            format!(
                "{}<br><span class=\"muted\">{} tokens</span>",
                usd(p.cost_usd()),
                num(p.recomputed_tokens as f64 + p.summariser_tokens)
            )
        }),
        p.map_or("—".into(), |p| {
            format!(
                "{}<br><span class=\"muted\">{} tokens</span>",
                usd(p.saved_usd()),
                num(p.saved_tokens as f64)
            )
        }),
        p.map_or("—".into(), |p| {
            let (money, tokens) = (
                break_even_text(p.break_even()),
                break_even_text(p.break_even_tokens),
            );
            format!(
                "<span class=\"break-even\">{}</span>{}",
                escape(&money),
                if p.cost.is_some() && tokens != money {
                    format!("<span class=\"sid\">in tokens: {}</span>", escape(&tokens))
                } else {
                    String::new()
                }
            )
        }),
        c.error.as_deref().map_or("—".into(), |e| {
            format!("<span class=\"sev-error\">{}</span>", escape(e))
        }),
        c.survival.as_deref().map_or("—".into(), escape),
    ]
}

fn compactions(s: &mut String, r: &SessionReport) {
    let rows: Vec<Vec<String>> = r.compactions.iter().map(compaction_row).collect();
    let _ = write!(
        s,
        "<section id=\"compactions\"><h2>Compactions</h2>{}",
        table_or(
            "compactions wide cards",
            "start / summary / end seqs; shadowed range as positions; cost = the prompt recomputed at the next request and the summariser call, saved = the prompt tokens later requests did not send, priced as cache hits (as dsh cache)",
            &[
                ("id", false),
                ("seqs", false),
                ("trigger", false),
                ("shadowed", false),
                ("summary", true),
                ("cost", true),
                ("saved", true),
                ("break-even", false),
                ("error", false),
                ("survival", false)
            ],
            &rows,
            "No compactions."
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
}

fn tables(s: &mut String, r: &SessionReport) {
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
        table_or(
            "prunes",
            "tool-result prune passes",
            &[
                ("seq", true),
                ("shadowed range", false),
                ("results", true),
                ("tokens", true)
            ],
            &rows,
            "No prune passes."
        )
    );
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
        table_or(
            "locks cards",
            "compaction/start brackets",
            &[
                ("seq", true),
                ("compaction", false),
                ("owner", false),
                ("status", false),
                ("end", true),
                ("error", false)
            ],
            &rows,
            "No compaction/start brackets."
        )
    );
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
        "<section id=\"verify\"><h2>Verify findings</h2>{}</section>",
        table_or(
            "findings cards",
            "dsh verify",
            &[
                ("severity", false),
                ("check", false),
                ("seq", true),
                ("message", false)
            ],
            &rows,
            "No findings: the log is clean."
        )
    );
}
