//! The HTML of a home's dashboard (`index.html` beside one page per
//! session): the totals, cost per day by model, the sessions nearest their
//! window, the compactions that cost most and whether they paid back, the
//! health flags, a sessions table that a small inline script sorts by any
//! column and filters by project (without the script it is a plain table,
//! the latest activity first), and the refused logs with their reasons.

use std::fmt::Write;

use super::fleet::{Entry, Fleet};
use super::html::break_even_text;
use super::markup::{self, cut_words, escape, num, pct, table, table_or, usd};
use super::svg::{self, Bars, Stack, Swatch, Unit};

/// The most sessions the "nearest their window" and "cost most" lists show.
const TOP: usize = 5;

/// Titles in the sessions table are cut to this many characters.
const TITLE_CHARS: usize = 90;

/// The dashboard's script: sorting and filtering the sessions table (the
/// page works without it). Numbers sort highest first on the first click,
/// text A to Z; rows without a value stay last.
const SCRIPT: &str = r#"document.addEventListener('DOMContentLoaded',function(){
var t=document.getElementById('sessions-table');if(!t)return;
var tb=t.tBodies[0],rows=[].slice.call(tb.rows),heads=[].slice.call(t.tHead.rows[0].cells);
var sel=document.getElementById('project-filter'),ord=document.getElementById('sort-order'),shown=document.getElementById('shown');
function val(r,k,n){var v=r.getAttribute('data-'+k);if(n)return v===null||v===''?null:parseFloat(v);return(v||'').toLowerCase();}
function sortBy(k,dir){var h=t.querySelector('th[data-key="'+k+'"]'),n=!!h&&h.hasAttribute('data-num');
rows.sort(function(a,b){var x=val(a,k,n),y=val(b,k,n);if(x===null&&y===null)return 0;if(x===null)return 1;if(y===null)return -1;return(x<y?-1:x>y?1:0)*dir;});
rows.forEach(function(r){tb.appendChild(r);});
heads.forEach(function(c){c.removeAttribute('aria-sort');});
if(h)h.setAttribute('aria-sort',dir>0?'ascending':'descending');
if(ord)ord.value=k+':'+dir;}
heads.forEach(function(h){var k=h.getAttribute('data-key');if(!k)return;
var b=document.createElement('button');b.type='button';b.textContent=h.textContent;h.textContent='';h.appendChild(b);
b.addEventListener('click',function(){var cur=h.getAttribute('aria-sort');
var dir=cur?(cur==='descending'?1:-1):(h.hasAttribute('data-num')?-1:1);sortBy(k,dir);});});
function filter(){var p=sel.value,n=0;rows.forEach(function(r){var ok=!p||r.getAttribute('data-project')===p;r.hidden=!ok;if(ok)n++;});
shown.textContent=n===rows.length?rows.length+' sessions':n+' of '+rows.length+' sessions';}
if(sel)sel.addEventListener('change',filter);
if(ord)ord.addEventListener('change',function(){var p=ord.value.split(':');sortBy(p[0],parseFloat(p[1]));});
var c=document.getElementById('controls');if(c)c.hidden=false;
});"#;

/// The dashboard page.
pub fn index_page(f: &Fleet) -> String {
    let mut s = markup::head("dsh report — sessions", SCRIPT);
    let span = f.span().map_or(String::new(), |(a, b)| {
        format!(", {} to {}", f.zone.date_time(a), f.zone.date_time(b))
    });
    let _ = write!(
        s,
        "<header><h1>Sessions</h1><p class=\"muted\" id=\"scope\">{} session(s) in {} project(s){span}; times in {}{}.</p></header><main>",
        f.entries.len(),
        f.projects().len(),
        escape(&f.zone.to_string()),
        if f.refused.is_empty() {
            String::new()
        } else {
            format!("; {} log(s) refused", f.refused.len())
        }
    );
    totals(&mut s, f);
    daily(&mut s, f);
    s.push_str("<div class=\"cols\">");
    nearest(&mut s, f);
    costly(&mut s, f);
    s.push_str("</div>");
    flags(&mut s, f);
    sessions(&mut s, f);
    refused(&mut s, f);
    let _ = writeln!(
        s,
        "</main><footer><p class=\"muted\">Written by dsh {} from the logs alone; cache and cost figures are predictions from published rules and prices, not a bill.</p></footer></body></html>",
        env!("CARGO_PKG_VERSION")
    );
    s
}

fn tile(s: &mut String, id: &str, name: &str, value: &str, small: &str) {
    let _ = write!(
        s,
        "<div class=\"tile\" id=\"{id}\"><dt>{}</dt><dd>{value}<small>{small}</small></dd></div>",
        escape(name)
    );
}

fn totals(s: &mut String, f: &Fleet) {
    let t = &f.totals;
    s.push_str("<section id=\"totals\"><h2>At a glance</h2><dl class=\"tiles\">");
    tile(
        s,
        "total-sessions",
        "sessions",
        &num(f.entries.len() as f64),
        &if f.refused.is_empty() {
            format!("{} project(s)", f.projects().len())
        } else {
            format!("and {} refused log(s)", f.refused.len())
        },
    );
    tile(
        s,
        "total-requests",
        "requests",
        &num((t.requests + t.summariser_requests) as f64),
        &format!("{} by the summariser", num(t.summariser_requests as f64)),
    );
    tile(
        s,
        "total-tokens",
        "tokens",
        &short_tokens(t.tokens.total()),
        &format!(
            "{} in, {} out",
            short_tokens(t.tokens.input + t.tokens.cache_read + t.tokens.cache_write),
            short_tokens(t.tokens.output)
        ),
    );
    tile(
        s,
        "total-cost",
        "cost",
        &usd(t.cost()),
        &if t.without_cost() > 0 {
            format!(
                "{} request(s) without a price",
                num(t.without_cost() as f64)
            )
        } else {
            "every request priced".into()
        },
    );
    tile(
        s,
        "total-hit",
        "cache hit, predicted",
        &pct(f.hits.predicted_rate()),
        &format!("{} reported by the provider", pct(f.hits.reported_rate())),
    );
    s.push_str("</dl></section>");
}

/// Tokens for a tile: 1.2M, 34.5k, 950.
fn short_tokens(v: f64) -> String {
    if v >= 1e9 {
        format!("{:.1}G", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else {
        num(v)
    }
}

fn daily(s: &mut String, f: &Fleet) {
    s.push_str("<section id=\"daily\"><h2>Cost per day by model</h2>");
    let days: Vec<&crate::usage::Group> = f.days.groups.iter().filter(|g| g.known).collect();
    let unknown = f.days.groups.iter().find(|g| !g.known);
    if days.is_empty() {
        s.push_str(
            "<p class=\"empty\">No request has a recorded date: nothing to chart by day.</p>",
        );
    } else {
        let models: Vec<(String, String)> = f
            .days
            .models
            .iter()
            .map(|(p, m, _)| (p.clone(), m.clone()))
            .collect();
        const CLASSES: [&str; 8] = ["b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8"];
        let stacks: Vec<Stack> = models
            .iter()
            .enumerate()
            .map(|(i, (p, m))| Stack {
                name: format!("{p}/{m}"),
                class: CLASSES[i % CLASSES.len()],
                values: days
                    .iter()
                    .map(|g| {
                        g.models
                            .iter()
                            .find(|(gp, gm, _)| gp == p && gm == m)
                            .map_or(0.0, |(_, _, x)| x.cost)
                    })
                    .collect(),
            })
            .collect();
        let bars = Bars {
            id: "chart-daily",
            title: "Cost per day by model",
            desc: format!(
                "{} day(s) from {} to {}, {} model(s); {} in all.",
                days.len(),
                days[0].key,
                days[days.len() - 1].key,
                models.len(),
                usd(Some(days.iter().map(|g| g.sums.cost).sum()))
            ),
            categories: days.iter().map(|g| g.key[5..].to_string()).collect(),
            x_title: "day",
            unit: Unit::Usd,
            stacks: stacks.clone(),
        };
        let items: Vec<(Swatch, &str)> = stacks
            .iter()
            .map(|st| (Swatch::Bar(st.class), st.name.as_str()))
            .collect();
        let mut head: Vec<(&str, bool)> = vec![("day", false)];
        head.extend(stacks.iter().map(|st| (st.name.as_str(), true)));
        head.push(("all", true));
        let rows: Vec<Vec<String>> = days
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let mut r = vec![escape(&g.key)];
                r.extend(stacks.iter().map(|st| usd(Some(st.values[i]))));
                r.push(usd(g.sums.cost()));
                r
            })
            .collect();
        let _ = write!(
            s,
            "<figure>{}<figcaption>{}</figcaption></figure><details class=\"data\"><summary>Data table: cost per day</summary>{}</details>",
            bars.render(),
            svg::legend(&items),
            table(
                "data",
                &format!("cost per day ({}) and model, USD", f.zone),
                &head,
                &rows
            )
        );
    }
    if let Some(u) = unknown {
        let _ = write!(
            s,
            "<p class=\"muted\">{} request(s) with no recorded date ({}) are not drawn.</p>",
            num((u.sums.requests + u.sums.summariser_requests) as f64),
            usd(u.sums.cost())
        );
    }
    s.push_str("</section>");
}

/// A link to a session's page, its title cut at a word (and to two lines
/// on screen).
fn link(e: &Entry, chars: usize) -> String {
    let full = e.label();
    format!(
        "<a class=\"clamp\" href=\"{}\" title=\"{}\">{}</a>",
        escape(&e.page),
        escape(full),
        escape(&cut_words(full, chars))
    )
}

/// Pressure as a percentage with a bar, and a badge over the window.
fn pressure_cell(e: &Entry) -> String {
    let Some(p) = e.session.pressure else {
        return "—".into();
    };
    let badge = if p > 100.0 {
        " <span class=\"badge over\">over</span>"
    } else {
        ""
    };
    format!(
        "{p:.1}%{badge}<span class=\"bar\" aria-hidden=\"true\"><i class=\"{}\" style=\"width:{:.1}%\"></i></span>",
        if p > 100.0 { "over" } else { "" },
        p.clamp(0.0, 100.0)
    )
}

fn nearest(s: &mut String, f: &Fleet) {
    let rows: Vec<Vec<String>> = f
        .nearest_window(TOP)
        .into_iter()
        .map(|e| {
            vec![
                link(e, 60),
                format!(
                    "{}<span class=\"sid\">{} of {} tokens</span>",
                    pressure_cell(e),
                    e.session.surface_tokens.map_or("—".into(), short_tokens),
                    e.session.context_window.map_or("—".into(), short_tokens)
                ),
            ]
        })
        .collect();
    let _ = write!(
        s,
        "<section id=\"nearest\"><h2>Nearest their window</h2>{}</section>",
        table_or(
            "nearest",
            "DSH's estimate of the next request against the route's window",
            &[("session", false), ("pressure", true)],
            &rows,
            "No session has a known window."
        )
    );
}

fn costly(s: &mut String, f: &Fleet) {
    let (top, priced) = f.costliest_compactions(TOP);
    let top: Vec<_> = top
        .into_iter()
        .filter(|(_, c)| !priced || c.cost.is_some())
        .collect();
    let rows: Vec<Vec<String>> = top
        .into_iter()
        .map(|(e, c)| {
            vec![
                format!("{}<span class=\"sid\">seq {}</span>", link(e, 50), c.seq),
                if priced {
                    usd(c.cost)
                } else {
                    format!("{} tokens", num(c.cost_tokens))
                },
                if priced {
                    usd(c.saved)
                } else {
                    format!("{} tokens", num(c.saved_tokens as f64))
                },
                escape(&break_even_text(c.break_even)),
            ]
        })
        .collect();
    let _ = write!(
        s,
        "<section id=\"costly\"><h2>Compactions that cost most</h2>{}</section>",
        table_or(
            "costly",
            if priced {
                "the prompt recomputed after it and the summariser call, against the cache hits it saved later (as dsh cache)"
            } else {
                "no prices known: by tokens recomputed and summarised, against tokens saved"
            },
            &[
                ("session", false),
                ("cost", true),
                ("saved", true),
                ("paid back", false)
            ],
            &rows,
            "No compactions."
        )
    );
}

/// Flags shown per session; the rest are on its page.
const FLAGS_SHOWN: usize = 3;

fn flags(s: &mut String, f: &Fleet) {
    s.push_str("<section id=\"flags\"><h2>Health flags</h2>");
    let flagged = f.flagged();
    if flagged.is_empty() {
        s.push_str("<p class=\"empty\">No flags: no verify or health finding, no held or stale lock, no session over its window, no torn log.</p></section>");
        return;
    }
    s.push_str("<ul class=\"flags\">");
    for e in flagged {
        let _ = write!(
            s,
            "<li data-session=\"{}\">{}<ul>",
            escape(&e.session.id),
            link(e, 60)
        );
        for fl in e.flags.iter().take(FLAGS_SHOWN) {
            let lv = fl.level.as_str();
            let _ = write!(
                s,
                "<li><span class=\"sev-{lv}\">{lv}</span> {}{}: {}</li>",
                fl.source,
                fl.seq.map_or(String::new(), |q| format!(" (seq {q})")),
                escape(&fl.message)
            );
        }
        if e.flags.len() > FLAGS_SHOWN {
            let _ = write!(
                s,
                "<li class=\"muted\">and {} more (on <a href=\"{}\">its page</a>, and from <code>dsh health</code>)</li>",
                e.flags.len() - FLAGS_SHOWN,
                escape(&e.page)
            );
        }
        s.push_str("</ul></li>");
    }
    s.push_str("</ul></section>");
}

/// The sessions table's columns: key (sort and data attribute), header,
/// numeric.
const COLUMNS: [(&str, &str, bool); 9] = [
    ("last", "last activity", true),
    ("project", "project", false),
    ("title", "session", false),
    ("requests", "requests", true),
    ("pressure", "pressure", true),
    ("compactions", "compactions", true),
    ("prunes", "prunes", true),
    ("cost", "cost", true),
    ("hit", "cache hit", true),
];

fn opt_attr(v: Option<f64>) -> String {
    v.filter(|x| x.is_finite())
        .map_or(String::new(), |x| x.to_string())
}

fn session_row(s: &mut String, e: &Entry, zone: &crate::civil::Zone) {
    let x = &e.session;
    let project = x.project.as_deref().unwrap_or("");
    let hit = e.cache.predicted_rate();
    let _ = write!(
        s,
        "<tr data-session=\"{}\" data-file=\"{}\" data-last=\"{}\" data-project=\"{}\" data-title=\"{}\" data-requests=\"{}\" data-pressure=\"{}\" data-compactions=\"{}\" data-prunes=\"{}\" data-cost=\"{}\" data-hit=\"{}\">",
        escape(&x.id),
        escape(&x.file),
        opt_attr(x.last_activity.map(|t| t as f64)),
        escape(project),
        escape(e.label()),
        e.sums.requests + e.sums.summariser_requests,
        opt_attr(x.pressure.map(|p| (p * 100.0).round() / 100.0)),
        x.compactions,
        x.prunes,
        opt_attr(e.sums.cost()),
        opt_attr(hit),
    );
    let cells = [
        x.last_activity
            .map_or("unknown".into(), |t| zone.date_time(t)),
        if project.is_empty() {
            "—".into()
        } else {
            format!(
                "<span title=\"{}\">{}</span>",
                escape(project),
                escape(&short_project(project))
            )
        },
        format!(
            "{}<span class=\"sid\">{}</span>",
            link(e, TITLE_CHARS),
            escape(&x.id.chars().take(8).collect::<String>())
        ),
        num((e.sums.requests + e.sums.summariser_requests) as f64),
        pressure_cell(e),
        num(x.compactions as f64),
        num(x.prunes as f64),
        usd(e.sums.cost()),
        format!(
            "{}<br><span class=\"sid\">{} reported</span>",
            pct(hit),
            pct(e.cache.reported_rate())
        ),
    ];
    for ((key, label, numeric), c) in COLUMNS.iter().zip(cells) {
        let _ = write!(
            s,
            "<td data-label=\"{label}\" class=\"{key}{}\">{c}</td>",
            if *numeric && *key != "last" { " n" } else { "" }
        );
    }
    s.push_str("</tr>");
}

/// A log's path from its home's `sessions/` on (the whole path elsewhere).
fn short_file(f: &str) -> &str {
    f.rfind("/sessions/")
        .map_or(f, |i| &f[i + "/sessions/".len()..])
}

/// The last two parts of a project path: `…/dev/api`.
fn short_project(p: &str) -> String {
    let parts: Vec<&str> = p.trim_end_matches('/').rsplitn(3, '/').collect();
    if parts.len() == 3 && !parts[2].is_empty() {
        format!("…/{}/{}", parts[1], parts[0])
    } else {
        p.to_string()
    }
}

fn sessions(s: &mut String, f: &Fleet) {
    let _ = write!(
        s,
        "<section id=\"sessions\"><h2>Sessions</h2><div class=\"controls\" id=\"controls\" hidden><label>Project <select id=\"project-filter\"><option value=\"\">all projects</option>"
    );
    for p in f.projects() {
        let _ = write!(s, "<option value=\"{}\">{}</option>", escape(p), escape(p));
    }
    s.push_str("</select></label><label>Order <select id=\"sort-order\">");
    for (value, name) in [
        ("last:-1", "latest activity first"),
        ("cost:-1", "highest cost first"),
        ("pressure:-1", "highest pressure first"),
        ("requests:-1", "most requests first"),
        ("compactions:-1", "most compactions first"),
        ("hit:1", "lowest cache hit first"),
        ("project:1", "project, A to Z"),
        ("title:1", "title, A to Z"),
    ] {
        let _ = write!(s, "<option value=\"{value}\">{name}</option>");
    }
    let _ = write!(
        s,
        "</select></label><span id=\"shown\" class=\"muted\">{} sessions</span></div>",
        f.entries.len()
    );
    if f.entries.is_empty() {
        s.push_str("<p class=\"empty\">No session could be read.</p></section>");
        return;
    }
    s.push_str("<div class=\"tbl\"><table class=\"sessions\" id=\"sessions-table\"><caption>one row per session, as dsh sessions lists it; the latest activity first</caption><thead><tr>");
    for (key, label, numeric) in COLUMNS {
        let _ = write!(
            s,
            "<th data-key=\"{key}\"{}{}{}>{label}</th>",
            if key == "last" {
                " aria-sort=\"descending\""
            } else {
                ""
            },
            if numeric { " data-num" } else { "" },
            if numeric && key != "last" {
                " class=\"n\""
            } else {
                ""
            }
        );
    }
    s.push_str("</tr></thead><tbody>");
    for e in &f.entries {
        session_row(s, e, &f.zone);
    }
    s.push_str("</tbody></table></div></section>");
}

fn refused(s: &mut String, f: &Fleet) {
    if f.refused.is_empty() {
        return;
    }
    // One item per reason (as worded without the file), its logs listed.
    let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
    for r in &f.refused {
        let why = r
            .reason
            .strip_prefix(r.file.as_str())
            .and_then(|x| x.strip_prefix(": "))
            .unwrap_or(&r.reason);
        match groups.iter_mut().find(|g| g.0 == why) {
            Some(g) => g.1.push(&r.file),
            None => groups.push((why, vec![&r.file])),
        }
    }
    let _ = write!(
        s,
        "<section id=\"refused\"><h2>Refused logs ({})</h2><ul class=\"refused\">",
        f.refused.len()
    );
    for (why, files) in groups {
        let _ = write!(
            s,
            "<li><span class=\"why\">{}</span> <span class=\"files\">",
            escape(&cut_words(why, 300))
        );
        for (i, file) in files.iter().enumerate() {
            let _ = write!(
                s,
                "{}<code title=\"{}\">{}</code>",
                if i > 0 { ", " } else { "" },
                escape(file),
                escape(short_file(file))
            );
        }
        s.push_str("</span></li>");
    }
    s.push_str("</ul></section>");
}
