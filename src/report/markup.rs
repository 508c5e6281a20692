//! What every page of a report shares: escaping, number formats, the page
//! head (CSS and the inline script) and tables. The charts (`svg`), the
//! session page ([`html`]) and the home dashboard ([`dashboard`]) all build
//! on this module and on nothing of each other's but the charts.
//!
//! [`html`]: super::html
//! [`dashboard`]: super::dashboard

use std::fmt::Write;

/// A section of a page built elsewhere (the side-by-side view).
#[derive(Debug, Clone)]
pub struct Section {
    /// Element id.
    pub id: String,
    /// Heading.
    pub title: String,
    /// Its HTML (already escaped).
    pub html: String,
}

/// Text as HTML content or attribute value: `& < > " '` as entities, control
/// characters (but tab and newline) as their visible Control Pictures, so no
/// log text can open an element, end an attribute or vanish.
pub(crate) fn escape(s: &str) -> String {
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

/// A number with thousands separators, rounded to a whole.
pub(crate) fn num(v: f64) -> String {
    if !v.is_finite() {
        return "—".into();
    }
    let neg = v < 0.0 && v.round() != 0.0;
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

/// An optional number ([`num`]), `—` when unknown.
pub(crate) fn opt_num(v: Option<f64>) -> String {
    v.map_or("—".into(), num)
}

/// US dollars, one rule on every page: cents from $1 up, four decimals
/// below (`$0.0078`), `<$0.0001` (`>-$0.0001`) for a smaller amount that
/// is not zero, `—` when unknown.
pub(crate) fn usd(v: Option<f64>) -> String {
    match v {
        None => "—".into(),
        Some(v) if !v.is_finite() => "—".into(),
        Some(v) if v != 0.0 && v.abs() < 0.00005 => {
            if v < 0.0 { ">-$0.0001" } else { "<$0.0001" }.into()
        }
        Some(v) => {
            let places = if v.abs() >= 1.0 { 2 } else { 4 };
            let unit = 10f64.powi(places);
            let cents = (v.abs() * unit).round();
            let whole = (cents / unit).trunc();
            let frac = cents - whole * unit;
            let s = format!("${}.{:0w$}", num(whole), frac as u64, w = places as usize);
            if v < 0.0 { format!("-{s}") } else { s }
        }
    }
}

/// A rate (0..1) as a percentage with one decimal, `—` when unknown.
pub(crate) fn pct(v: Option<f64>) -> String {
    v.filter(|x| x.is_finite())
        .map_or("—".into(), |x| format!("{:.1}%", x * 100.0))
}

/// `text` cut to at most `max` characters at a word boundary, with `…`
/// when cut (a single longer word is cut inside).
pub(crate) fn cut_words(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let head: String = text.chars().take(max.saturating_sub(1)).collect();
    let at = head
        .char_indices()
        .rev()
        .find(|(_, c)| c.is_whitespace())
        .map(|(i, _)| i)
        .filter(|&i| i >= head.len() / 2)
        .unwrap_or(head.len());
    format!("{}…", head[..at].trim_end())
}

/// The pages' style sheet: light and dark palettes, phone and print
/// layouts.
const CSS: &str = r#"
:root{--bg:#fff;--fg:#1b1b1f;--muted:#5b5f6b;--line:#d6d8de;--panel:#f5f6f8;--c1:#1f6fd1;--c2:#c2410c;--c3:#15803d;--c4:#7c3aed;--c5:#6b7280;--c6:#0e7490;--c7:#a21caf;--c8:#854d0e;--cmp:#b91c1c;--prn:#0f766e;--ovf:#be185d;--warn:#92400e;--shade:#fdf2d0;--on:#fff}
@media (prefers-color-scheme:dark){:root{--bg:#15171c;--fg:#e8e9ed;--muted:#a4a9b6;--line:#3a3f4b;--panel:#1f2229;--c1:#6aa7ff;--c2:#ff9a5c;--c3:#4ade80;--c4:#c4a5ff;--c5:#9ca3af;--c6:#22d3ee;--c7:#f0abfc;--c8:#fcd34d;--cmp:#f87171;--prn:#2dd4bf;--ovf:#f472b6;--warn:#fbbf24;--shade:#3b3420;--on:#15171c}}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%;text-size-adjust:100%}
body{margin:0 auto;max-width:1240px;padding:16px 20px;background:var(--bg);color:var(--fg);font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;overflow-wrap:break-word}
h1{font-size:1.5em;margin:.2em 0;overflow-wrap:anywhere}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid var(--line)}h3{font-size:1.05em}
a{color:var(--c1)}
.muted{color:var(--muted)}
.empty{color:var(--muted);font-style:italic}
.tbl{overflow-x:auto;max-width:100%;margin:.5em 0}
table{border-collapse:collapse;width:100%;margin:0}
table.wide{min-width:720px}
caption{text-align:left;color:var(--muted);font-size:.9em;padding:2px 0}
th,td{border:1px solid var(--line);padding:3px 6px;text-align:left;vertical-align:top;overflow-wrap:break-word}
th{background:var(--panel)}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px}dl.facts dt{color:var(--muted)}dl.facts dd{margin:0;overflow-wrap:anywhere}
figure{margin:.8em 0}
.chart-box{position:relative;padding:28px 24px 4px 60px;background:var(--panel);border:1px solid var(--line)}
svg.chart{display:block;width:100%;overflow:visible}
.grid{stroke:var(--line);stroke-width:1}
.axis{fill:var(--muted);font-size:12px;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
.axis-title{fill:var(--fg);font-size:12px;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
.line{fill:none;stroke-width:1.8;vector-effect:non-scaling-stroke}
.dashed{stroke-dasharray:6 4}
.s1{stroke:var(--c1)}.s2{stroke:var(--c2)}.s3{stroke:var(--c3)}.s4{stroke:var(--c4)}.s5{stroke:var(--c5)}
.b1{fill:var(--c1)}.b2{fill:var(--c2)}.b3{fill:var(--c3)}.b4{fill:var(--c4)}.b5{fill:var(--c6)}.b6{fill:var(--c7)}.b7{fill:var(--c8)}.b8{fill:var(--c5)}
.marker line{stroke-width:1.5}
.marker-compaction line{stroke:var(--cmp)}.marker-compaction path{fill:var(--cmp)}
.marker-prune line{stroke:var(--prn);stroke-dasharray:4 3}.marker-prune path{fill:var(--prn)}
.marker-overflow path{fill:var(--ovf);stroke:var(--bg);stroke-width:1}
ul.legend{list-style:none;padding:0;margin:.4em 0;display:flex;flex-wrap:wrap;gap:4px 18px}
ul.legend li{display:flex;align-items:center;gap:6px}
ul.legend svg{width:22px;height:14px;flex:none}
.sw1{stroke:var(--c1)}.sw2{stroke:var(--c2)}.sw3{stroke:var(--c3)}.sw4{stroke:var(--c4)}.sw5{stroke:var(--c5)}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:var(--panel);border:1px solid var(--line);padding:8px;margin:.3em 0;font:13px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
code{font:13px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;overflow-wrap:anywhere}
details{margin:.3em 0}summary{cursor:pointer}
.note{border-left:4px solid var(--warn);padding:4px 10px;background:var(--panel)}
.badge{display:inline-block;padding:0 6px;border-radius:9px;font-size:.8em;font-weight:600;white-space:nowrap;vertical-align:1px}
.badge.over{background:var(--cmp);color:var(--on)}.badge.near{background:var(--warn);color:var(--on)}
tr.replaced td:first-child{background:var(--shade)}tr.mark td{border-top:2px solid var(--cmp)}
table.side td{font-size:13px;overflow-wrap:anywhere}
.sev-error{color:var(--cmp);font-weight:600}.sev-warning{color:var(--warn)}
.tiles{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:10px;margin:.8em 0;padding:0}
.tile{background:var(--panel);border:1px solid var(--line);padding:8px 12px;margin:0}
.tile dt{color:var(--muted);font-size:.85em}.tile dd{margin:0;font-size:1.35em;font-weight:600;font-variant-numeric:tabular-nums}.tile dd small{display:block;font-size:.6em;font-weight:400;color:var(--muted)}
.cols{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,420px),1fr));gap:0 24px}
.bar{display:block;height:5px;background:var(--line);margin-top:2px;border-radius:2px;overflow:hidden}.bar i{display:block;height:100%;background:var(--c1)}.bar i.over{background:var(--cmp)}
.controls{display:flex;flex-wrap:wrap;gap:6px 16px;align-items:center;margin:.5em 0}
.controls select{font:inherit;max-width:100%}
th button{font:inherit;font-weight:600;color:inherit;background:none;border:0;padding:0;cursor:pointer;text-align:inherit}
th[aria-sort=ascending] button::after{content:" ▲"}th[aria-sort=descending] button::after{content:" ▼"}
ul.flags,ul.refused{padding-left:1.2em;margin:.4em 0}ul.flags li,ul.refused li{margin:.2em 0}
ul.refused .files{display:block;color:var(--muted)}ul.refused code{font-size:12px}
.sid{display:block;color:var(--muted);font-size:.85em}
.clamp{display:-webkit-box;-webkit-line-clamp:2;line-clamp:2;-webkit-box-orient:vertical;overflow:hidden}
table.sessions td.last,table.sessions td.project{white-space:nowrap}table.sessions td.title{min-width:14em}
@media (max-width:700px){
body{padding:12px}
table.sessions,table.sessions tbody,table.sessions tr,table.sessions td{display:block}
table.sessions thead{display:none}
table.sessions caption{display:block}
table.sessions tr{display:grid;grid-template-columns:1fr 1fr 1fr;gap:2px 12px;border:1px solid var(--line);margin:0 0 8px;padding:6px 8px}
table.sessions td.project{grid-column:span 2;min-width:0}
table.sessions td{border:0;padding:1px 0;text-align:left;white-space:normal}
table.sessions td[data-label]::before{content:attr(data-label);display:block;color:var(--muted);font-size:.8em;font-weight:400}
table.sessions td.title{grid-column:1/-1;min-width:0}
table.cards{min-width:0}
table.cards,table.cards tbody,table.cards tr,table.cards td{display:block}
table.cards caption{display:block}
table.cards thead{display:none}
table.cards tr{display:grid;grid-template-columns:1fr 1fr;gap:2px 12px;border:1px solid var(--line);margin:0 0 8px;padding:6px 8px}
table.cards td{border:0;padding:1px 0;text-align:left;white-space:normal;min-width:0}
table.cards td[data-label]::before{content:attr(data-label);display:block;color:var(--muted);font-size:.8em}
.chart-box{padding-right:14px;padding-left:52px}
.tick-odd{display:none}
}
@media print{:root{--bg:#fff;--fg:#000;--muted:#5b5f6b;--line:#d6d8de;--panel:#f5f6f8;--c1:#1f6fd1;--c2:#c2410c;--c3:#15803d;--c4:#7c3aed;--c5:#6b7280;--c6:#0e7490;--c7:#a21caf;--c8:#854d0e;--cmp:#b91c1c;--prn:#0f766e;--ovf:#be185d;--warn:#92400e;--shade:#fdf2d0;--on:#fff}body{max-width:none;padding:0;font-size:11pt}summary{list-style:none;cursor:auto;font-weight:600}summary::-webkit-details-marker{display:none}.chart-box{break-inside:avoid}.tbl{overflow:visible}table{break-inside:auto}tr{break-inside:avoid}a{color:inherit}.controls{display:none}}
@media print{details::details-content{content-visibility:visible;display:block}}
"#;

/// The script every page has: it records script errors and the page's
/// width into attributes of `<html>` (what the browser tests read).
const SCRIPT: &str = "(function(){var d=document.documentElement;window.addEventListener('error',function(e){d.setAttribute('data-errors',(d.getAttribute('data-errors')||'')+e.message+';')});window.addEventListener('load',function(){d.setAttribute('data-scroll-width',String(d.scrollWidth))})})();";

/// The start of a page up to and including `<body>`: its title, the style
/// sheet, and the page's one script (the error recorder, then `script`).
pub(crate) fn head(title: &str, script: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><meta name=\"color-scheme\" content=\"light dark\"><meta name=\"generator\" content=\"dsh {}\"><title>{}</title><style>{CSS}</style><script>{SCRIPT}{script}</script></head><body>",
        env!("CARGO_PKG_VERSION"),
        escape(title)
    )
}

/// A table in its own scrolling box: header cells (name, numeric?) and rows
/// of escaped cells. `class` may name more than one class (`"x wide"`);
/// with `cards`, each row becomes a card of labelled cells on a phone.
pub(crate) fn table(
    class: &str,
    caption: &str,
    head: &[(&str, bool)],
    rows: &[Vec<String>],
) -> String {
    let mut s = format!(
        "<div class=\"tbl\"><table class=\"{class}\"><caption>{}</caption><thead><tr>",
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
    let cards = class.split_whitespace().any(|c| c == "cards");
    for r in rows {
        s.push_str("<tr>");
        for (i, c) in r.iter().enumerate() {
            let n = head.get(i).is_some_and(|h| h.1);
            let label = match head.get(i) {
                Some((h, _)) if cards => format!(" data-label=\"{}\"", escape(h)),
                _ => String::new(),
            };
            let _ = write!(
                s,
                "<td{}{label}>{c}</td>",
                if n { " class=\"n\"" } else { "" }
            );
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table></div>");
    s
}

/// [`table`], or one line saying there is nothing (`empty`) when `rows`
/// is empty.
pub(crate) fn table_or(
    class: &str,
    caption: &str,
    head: &[(&str, bool)],
    rows: &[Vec<String>],
    empty: &str,
) -> String {
    if rows.is_empty() {
        format!(
            "<p class=\"empty\" id=\"empty-{}\">{}</p>",
            first_class(class),
            escape(empty)
        )
    } else {
        table(class, caption, head, rows)
    }
}

fn first_class(class: &str) -> &str {
    class.split_whitespace().next().unwrap_or("")
}

#[cfg(test)]
mod tests {
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
        assert_eq!(num(-0.2), "0");
        assert_eq!(num(f64::NAN), "—");
    }

    #[test]
    fn one_cost_rule() {
        assert_eq!(usd(Some(12.345)), "$12.35");
        assert_eq!(usd(Some(1234.5)), "$1,234.50");
        assert_eq!(usd(Some(0.0265)), "$0.0265");
        assert_eq!(usd(Some(0.000548)), "$0.0005");
        assert_eq!(usd(Some(0.00001)), "<$0.0001");
        assert_eq!(usd(Some(0.0)), "$0.0000");
        assert_eq!(usd(Some(-0.5)), "-$0.5000");
        assert_eq!(usd(None), "—");
    }

    #[test]
    fn titles_are_cut_at_words() {
        assert_eq!(cut_words("short", 10), "short");
        assert_eq!(
            cut_words("Table schema next review function", 20),
            "Table schema next…"
        );
        assert_eq!(cut_words("abcdefghijklmnop", 6), "abcde…");
    }
}
