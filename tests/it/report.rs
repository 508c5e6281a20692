//! `dsh report`: the page's content, its escaping, its writer rules, and
//! the pages in a real browser (headless Chromium): no script errors, one
//! marker per compaction and prune, the table rows, the figures `dsh
//! measure --json` and `dsh cache --json` give; the home dashboard and a
//! session page at 390 and 1280 px, light and dark, with no horizontal
//! scrolling, chart text at least 10 px, a sessions table that sorts and
//! filters and holds the figures of `dsh sessions --json`; screenshots that
//! are not blank (kept under `target/report-artifacts/`). Without Chromium
//! the browser tests say they were skipped.

use std::path::{Path, PathBuf};
use std::process::Command as Std;

use serde_json::{Value as J, json};

use crate::support::{TestEnv, root, sample, shared};

pub fn chromium(test: &str) -> Option<PathBuf> {
    for name in ["chromium", "chromium-headless-shell", "chromium-browser"] {
        for dir in std::env::var("PATH").unwrap_or_default().split(':') {
            let p = Path::new(dir).join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    eprintln!(
        "SKIPPED {test}: no headless Chromium (install Debian's `chromium`; .ci/run does when it can)"
    );
    None
}

pub fn artifacts() -> PathBuf {
    let d = root().join("target/report-artifacts");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Write the report of `log` to `artifacts()/<name>.html` (it must
/// succeed) and give its path.
fn report_page(env: &TestEnv, log: &Path, name: &str) -> PathBuf {
    let page = artifacts().join(format!("{name}.html"));
    crate::support::stdout_ok(
        env.dsh()
            .args(["report", "--force", "-o"])
            .arg(&page)
            .arg(log)
            .output()
            .unwrap(),
    );
    page
}

/// Run the browser on a page: (stdout, stderr).
fn browse(browser: &Path, page: &Path, extra: &[String]) -> (String, String) {
    let profile = tempfile::tempdir().unwrap();
    let out = Std::new(browser)
        .args(crate::cdp::HEADLESS)
        .args([
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1280,2000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The value of attribute `attr` of the element with `id`.
fn attr_of(dom: &str, id: &str, attr: &str) -> Option<String> {
    let i = dom.find(&format!("id=\"{id}\""))?;
    let start = dom[..i].rfind('<')?;
    let end = start + dom[start..].find('>')?;
    let tag = &dom[start..end];
    let k = tag.find(&format!("{attr}=\""))? + attr.len() + 2;
    Some(tag[k..k + tag[k..].find('"')?].to_string())
}

/// The `<html …>` tag's attribute.
fn html_attr(dom: &str, attr: &str) -> Option<String> {
    let start = dom.find("<html")?;
    let tag = &dom[start..start + dom[start..].find('>')?];
    let k = tag.find(&format!("{attr}=\""))? + attr.len() + 2;
    Some(tag[k..k + tag[k..].find('"')?].to_string())
}

/// Rows of the body of the table with `class` (its first class), 0 when
/// the page says in one line that there are none.
fn rows(dom: &str, class: &str) -> usize {
    let Some(i) = [
        format!("<table class=\"{class}\""),
        format!("<table class=\"{class} "),
    ]
    .iter()
    .find_map(|t| dom.find(t)) else {
        assert!(
            dom.contains(&format!("id=\"empty-{class}\"")),
            "neither a table {class} nor a line saying it is empty"
        );
        return 0;
    };
    let body = &dom[i..i + dom[i..].find("</table>").unwrap()];
    let body = &body[body.find("<tbody>").unwrap()..];
    body.matches("<tr>").count()
}

/// The section with `id`.
fn section<'a>(dom: &'a str, id: &str) -> &'a str {
    let i = dom
        .find(&format!("<section id=\"{id}\""))
        .unwrap_or_else(|| panic!("no section {id}"));
    &dom[i..i + dom[i..].find("</section>").unwrap()]
}

fn types_in(log: &Path) -> (usize, usize, usize) {
    let text = std::fs::read_to_string(log).unwrap();
    let (mut starts, mut summaries, mut prunes) = (0, 0, 0);
    for l in text.lines().skip(1) {
        let v: J = serde_json::from_str(l).unwrap();
        match v["type"].as_str() {
            Some("compaction/start") => starts += 1,
            Some("compaction/summary") => summaries += 1,
            Some("compaction/prune") => prunes += 1,
            _ => {}
        }
    }
    (starts, summaries, prunes)
}

fn json_of(env: &TestEnv, args: &[&str], log: &Path) -> J {
    let out = env.dsh().args(args).arg(log).output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// Decode a PNG into its distinct colours (up to a few): enough to tell a
/// blank screenshot from a page.
fn png_colours(bytes: &[u8]) -> usize {
    png_pixels(bytes).1
}

/// Decode an 8-bit PNG: its pixels (RGB) and its distinct colours (up to 16).
fn png_pixels(bytes: &[u8]) -> (Vec<[u8; 3]>, usize) {
    use std::io::Read;
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
    let (mut w, mut h, mut ct, mut idat) = (0usize, 0usize, 0u8, Vec::new());
    let mut i = 8;
    while i + 8 <= bytes.len() {
        let len = u32::from_be_bytes(bytes[i..i + 4].try_into().unwrap()) as usize;
        let kind = &bytes[i + 4..i + 8];
        let data = &bytes[i + 8..i + 8 + len];
        match kind {
            b"IHDR" => {
                w = u32::from_be_bytes(data[0..4].try_into().unwrap()) as usize;
                h = u32::from_be_bytes(data[4..8].try_into().unwrap()) as usize;
                assert_eq!(data[8], 8, "8-bit channels");
                ct = data[9];
            }
            b"IDAT" => idat.extend_from_slice(data),
            _ => {}
        }
        i += 12 + len;
    }
    let bpp = match ct {
        2 => 3,
        6 => 4,
        0 => 1,
        4 => 2,
        c => panic!("colour type {c}"),
    };
    let mut raw = Vec::new();
    flate2::read::ZlibDecoder::new(&idat[..])
        .read_to_end(&mut raw)
        .unwrap();
    let stride = w * bpp;
    let mut prev = vec![0u8; stride];
    let mut cur = vec![0u8; stride];
    let mut seen = std::collections::HashSet::new();
    let mut pixels = Vec::with_capacity(w * h);
    for y in 0..h {
        let line = &raw[y * (stride + 1)..(y + 1) * (stride + 1)];
        let f = line[0];
        for x in 0..stride {
            let a = if x >= bpp { cur[x - bpp] as i32 } else { 0 };
            let b = prev[x] as i32;
            let c = if x >= bpp { prev[x - bpp] as i32 } else { 0 };
            let v = line[1 + x] as i32;
            cur[x] = match f {
                0 => v,
                1 => v + a,
                2 => v + b,
                3 => v + (a + b) / 2,
                4 => {
                    let p = a + b - c;
                    let (pa, pb, pc) = ((p - a).abs(), (p - b).abs(), (p - c).abs());
                    v + if pa <= pb && pa <= pc {
                        a
                    } else if pb <= pc {
                        b
                    } else {
                        c
                    }
                }
                _ => panic!("filter {f}"),
            } as u8;
        }
        for px in cur.chunks(bpp) {
            if seen.len() < 16 {
                seen.insert(px.to_vec());
            }
            pixels.push(match bpp {
                1 | 2 => [px[0]; 3],
                _ => [px[0], px[1], px[2]],
            });
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    (pixels, seen.len())
}

/// Everything the browser must show for one log.
fn check_in_browser(browser: &Path, env: &TestEnv, log: &Path, name: &str) {
    let dir = artifacts();
    let page = report_page(env, log, name);
    let (dom, stderr) = browse(browser, &page, &["--dump-dom".into()]);
    assert!(dom.contains("<html"), "{name}: a DOM was dumped: {stderr}");
    // No script errors, caught by the page or logged by the browser.
    assert_eq!(
        html_attr(&dom, "data-errors"),
        None,
        "{name}: script errors"
    );
    for l in stderr.lines() {
        assert!(
            !(l.contains("Uncaught") || (l.contains("CONSOLE") && l.contains("rror"))),
            "{name}: console error: {l}"
        );
    }
    // No horizontal scrolling at 1280 px.
    let sw: u32 = html_attr(&dom, "data-scroll-width")
        .expect("the load handler ran")
        .parse()
        .unwrap();
    assert!(sw <= 1280, "{name}: scrollWidth {sw} > 1280");
    // One marker per compaction and prune, and the table rows.
    let (starts, summaries, prunes) = types_in(log);
    let pressure = section(&dom, "pressure");
    assert_eq!(
        pressure
            .matches("class=\"marker marker-compaction\"")
            .count(),
        summaries,
        "{name}"
    );
    assert_eq!(
        pressure.matches("class=\"marker marker-prune\"").count(),
        prunes,
        "{name}"
    );
    assert_eq!(rows(&dom, "compactions"), starts, "{name}: compaction rows");
    assert_eq!(rows(&dom, "prunes"), prunes, "{name}: prune rows");
    assert_eq!(
        dom.matches("<details class=\"summary\"").count(),
        summaries,
        "{name}"
    );
    // The side-by-side view, one collapsible block per turn, and survival.
    assert!(
        dom.contains("<details class=\"turn\""),
        "{name}: side by side"
    );
    if summaries > 0 {
        assert!(dom.contains("id=\"survival-totals\""), "{name}: survival");
    }
    // The figures of measure and cache.
    let m = json_of(env, &["measure", "--json"], log);
    let fact = |id: &str| attr_of(&dom, id, "data-value").unwrap_or_else(|| panic!("{id}"));
    assert_eq!(
        fact("fact-total-tokens").parse::<f64>().unwrap(),
        m["totalTokens"].as_f64().unwrap()
    );
    assert_eq!(
        fact("fact-window").parse::<f64>().unwrap(),
        m["policy"]["contextWindow"].as_f64().unwrap()
    );
    assert_eq!(
        fact("fact-threshold").parse::<f64>().unwrap(),
        m["policy"]["thresholdTokens"].as_f64().unwrap()
    );
    let c = json_of(env, &["cache", "--json"], log);
    assert_eq!(
        fact("fact-predicted-hit").parse::<f64>().unwrap(),
        c["totals"]["predictedHit"].as_f64().unwrap()
    );
    assert_eq!(
        fact("fact-reported-hit").parse::<f64>().unwrap(),
        c["totals"]["reportedHit"].as_f64().unwrap()
    );
    assert!(dom.contains("<td class=\"n\">"), "{name}: numeric cells");
    let n_requests = c["requests"].as_array().unwrap().len();
    assert!(attr_of(&dom, "fact-requests", "id").is_some());
    assert!(section(&dom, "facts").contains(&format!(">{}<", thousands(n_requests))));
    // A screenshot that is not blank.
    let shot = dir.join(format!("{name}.png"));
    let _ = std::fs::remove_file(&shot);
    browse(
        browser,
        &page,
        &[format!("--screenshot={}", shot.display())],
    );
    let png = std::fs::read(&shot).unwrap_or_else(|e| panic!("{name}: no screenshot: {e}"));
    assert!(png_colours(&png) > 1, "{name}: the screenshot is blank");
}

fn thousands(n: usize) -> String {
    let d = n.to_string();
    let mut o = String::new();
    for (k, ch) in d.chars().enumerate() {
        if k > 0 && (d.len() - k).is_multiple_of(3) {
            o.push(',');
        }
        o.push(ch);
    }
    o
}

#[test]
fn samples_render_in_a_browser() {
    let Some(browser) = chromium("report::samples_render_in_a_browser") else {
        return;
    };
    let env = TestEnv::new();
    for s in [
        "compacted.jsonl",
        "coding-session.jsonl",
        "prune-closed.jsonl",
    ] {
        check_in_browser(
            &browser,
            &env,
            &sample(s),
            &format!("sample-{}", s.trim_end_matches(".jsonl")),
        );
    }
}

#[test]
#[cfg_attr(
    no_shared,
    ignore = "needs ../shared (tools/genlog) beside the checkout"
)]
fn genlog_sessions_render_in_a_browser() {
    let Some(shared) = shared("report::genlog_sessions_render_in_a_browser") else {
        return;
    };
    let Some(browser) = chromium("report::genlog_sessions_render_in_a_browser") else {
        return;
    };
    let env = TestEnv::new();
    let dir = tempfile::tempdir().unwrap();
    for (seed, compactions, prunes) in [(3, 4, 3), (11, 4, 3)] {
        let log = dir.path().join(format!("g{seed}.jsonl"));
        let st = Std::new(shared.join("tools/genlog"))
            .args(["--events", "4000", "--seed", &seed.to_string()])
            .args(["--compactions", &compactions.to_string()])
            .args(["--prune-passes", &prunes.to_string()])
            .arg("-o")
            .arg(&log)
            .status()
            .unwrap();
        assert!(st.success());
        let (_, summaries, p) = types_in(&log);
        assert!(summaries > 0 && p > 0, "genlog made compactions and prunes");
        check_in_browser(&browser, &env, &log, &format!("genlog-{seed}"));
        if seed == 3 {
            check_schemes(&browser, &env, &log, "scheme-genlog-3");
            // A long page with many markers fits a phone and a desktop.
            let page = artifacts().join("genlog-3.html");
            for width in [390, 1280] {
                for scheme in ["light", "dark"] {
                    crate::dashboard::look(&browser, &page, "genlog-3", width, scheme);
                }
            }
        }
    }
}

/// A log with markup, quotes and control characters in every text it has.
fn hostile_log() -> (tempfile::TempDir, PathBuf) {
    let evil = "</pre><script>document.title='pwned'</script>\"' onload=\"x\" \u{1}\u{1b}[31m";
    let src = json!({"kind":"model","provider":"deepseek-official","model":"deepseek-v4-flash"});
    let mut lines = vec![
        json!({"type":"session","version":0,"id":"s-<b>evil</b>","createdAt":0,"cwd":"/tmp/<i>x</i>","delegationDepth":0}),
    ];
    let events = [
        json!({"type":"turn/start","data":{"turn":1}}),
        json!({"type":"step/start","data":{"turn":1,"step":1}}),
        json!({"type":"user/message","data":{"role":"user","content":[{"type":"text","text":evil}],"source":{"kind":"user"},"id":"u1"},"surfaceOp":"append"}),
        json!({"type":"request/header","data":{"header":{"config":{"provider":"deepseek-official","model":"deepseek-v4-flash"},"system":evil,"tools":[]},"reason":"initial"}}),
        json!({"type":"assistant/message","data":{"turn":1,"step":1,"message":{"role":"assistant","content":[{"type":"text","text":evil}],"source":src,"id":"a1"}},"surfaceOp":"append"}),
        json!({"type":"step/end","data":{"turn":1,"step":1}}),
        json!({"type":"turn/end","data":{"turn":1,"reason":{"kind":"completed"}}}),
        json!({"type":"compaction/start","data":{"compactionId":evil,"turn":null}}),
        json!({"type":"compaction/end","data":{"compactionId":evil,"turn":null,"error":evil}}),
    ];
    for (i, mut e) in events.into_iter().enumerate() {
        e["seq"] = json!(i);
        e["time"] = json!(1_700_000_000_000u64 + i as u64);
        lines.push(e);
    }
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("evil.jsonl");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&p, text).unwrap();
    (dir, p)
}

#[test]
fn log_text_is_escaped() {
    let env = TestEnv::new();
    let (dir, log) = hostile_log();
    let page = dir.path().join("r.html");
    crate::support::stdout_ok(
        env.dsh()
            .args(["report", "-o"])
            .arg(&page)
            .arg(&log)
            .output()
            .unwrap(),
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(
        html.matches("<script").count(),
        1,
        "only the page's own script"
    );
    assert!(!html.contains("<b>evil") && !html.contains("<i>x"));
    assert!(!html.contains('\u{1}') && !html.contains('\u{1b}'));
    assert!(html.contains("&lt;script&gt;"));
    // Self-contained: nothing fetched from elsewhere.
    for bad in ["http://", "https://", "src=\"", "@import", "url("] {
        assert!(!html.contains(bad), "the page names {bad}");
    }
    if let Some(browser) = chromium("report::log_text_is_escaped (browser part)") {
        let (dom, _) = browse(&browser, &page, &["--dump-dom".into()]);
        assert_eq!(html_attr(&dom, "data-errors"), None);
        assert!(!dom.contains("<title>pwned"), "no log script ran");
    }
}

#[test]
fn writer_rules_and_json() {
    let env = TestEnv::new();
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("r.html");
    let log = sample("compacted.jsonl");
    let run = |extra: &[&str]| {
        env.dsh()
            .args(["report", "--json", "-o"])
            .arg(&page)
            .args(extra)
            .arg(&log)
            .output()
            .unwrap()
    };
    let out = run(&[]);
    assert!(out.status.success());
    let doc: J = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["pages"][0]["compactions"], json!(1));
    assert_eq!(
        doc["pages"][0]["bytes"].as_u64().unwrap(),
        std::fs::metadata(&page).unwrap().len()
    );
    // An existing page is refused without --force (exit 2), replaced with it.
    assert_eq!(run(&[]).status.code(), Some(2));
    assert!(run(&["--force"]).status.success());
    // Standard output carries the page itself.
    let out = env
        .dsh()
        .args(["report", "-o", "-"])
        .arg(&log)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(out.stdout.starts_with(b"<!DOCTYPE html>"));
    // A directory of pages with an index, one link per session.
    let pages = dir.path().join("pages");
    crate::support::stdout_ok(
        env.dsh()
            .args(["report", "-o"])
            .arg(&pages)
            .arg(&log)
            .arg(sample("coding-session.jsonl"))
            .output()
            .unwrap(),
    );
    let index = std::fs::read_to_string(pages.join("index.html")).unwrap();
    assert_eq!(index.matches("<tr data-session=").count(), 2);
    assert!(pages.join("sample-compacted.html").is_file());
}

#[test]
fn long_sessions_are_downsampled_and_say_so() {
    let env = TestEnv::new();
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("r.html");
    let out = env
        .dsh()
        .args(["report", "--json", "--max-points", "10", "-o"])
        .arg(&page)
        .arg(sample("coding-session.jsonl"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let doc: J = serde_json::from_slice(&out.stdout).unwrap();
    let html = std::fs::read_to_string(&page).unwrap();
    if doc["pages"][0]["requests"].as_u64().unwrap() > 10 {
        assert_eq!(doc["pages"][0]["downsampled"], json!(true));
        assert!(html.contains("id=\"downsampled\""));
    } else {
        assert!(!html.contains("id=\"downsampled\""));
    }
}

/// Every rendered text of the page against what is behind it (the nearest
/// ancestor with a background; SVG text by its fill, over the chart's
/// background), in the colour scheme the page is in: the scheme, the
/// body's background luminance, how many texts were measured, and the ten
/// lowest WCAG contrast ratios.
const CONTRAST_JS: &str = r#"(() => {
  const rgb = s => { const m = /rgba?\(([^)]+)\)/.exec(s); if (!m) return null;
    const p = m[1].split(/[\s,\/]+/).filter(x => x).map(Number);
    return {r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1}; };
  const lum = c => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b); };
  const behind = el => { for (let e = el; e; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor); if (c && c.a > 0) return c; }
    return rgb(getComputedStyle(document.documentElement).backgroundColor) || {r: 255, g: 255, b: 255, a: 1}; };
  const seen = new Set(); const out = [];
  const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = w.nextNode(); n; n = w.nextNode()) {
    const el = n.parentElement;
    if (!n.textContent.trim() || seen.has(el)) continue;
    seen.add(el);
    if (!el.checkVisibility({visibilityProperty: true, opacityProperty: true})) continue;
    const cs = getComputedStyle(el);
    const svg = el instanceof SVGElement;
    const fg = rgb(svg ? cs.fill : cs.color);
    const bg = behind(svg ? el.closest('svg') : el);
    const [hi, lo] = [lum(fg), lum(bg)].sort((a, b) => b - a);
    out.push({el: el.tagName.toLowerCase() + (el.getAttribute('class') ? '.' + el.getAttribute('class') : ''),
              text: n.textContent.trim().slice(0, 40), fg: svg ? cs.fill : cs.color,
              bg: `rgb(${bg.r}, ${bg.g}, ${bg.b})`, ratio: (hi + 0.05) / (lo + 0.05)});
  }
  out.sort((a, b) => a.ratio - b.ratio);
  return {dark: matchMedia('(prefers-color-scheme: dark)').matches,
          body: lum(behind(document.body)), texts: out.length, lowest: out.slice(0, 10),
          scrollWidth: document.documentElement.scrollWidth};
})()"#;

/// Each chart: its role, whether its accessible name and description
/// resolve to its `<title>` and `<desc>`, the description, and the rows of
/// the data table in its section.
const CHARTS_JS: &str = r#"[...document.querySelectorAll('svg.chart')].map(svg => {
  const ids = (svg.getAttribute('aria-labelledby') || '').split(/\s+/);
  const t = svg.querySelector(':scope > title'), d = svg.querySelector(':scope > desc');
  const table = svg.closest('section').querySelector('details.data table');
  return {id: svg.id, role: svg.getAttribute('role'),
          labelled: !!t && !!d && ids.includes(t.id) && ids.includes(d.id) && t.textContent.length > 0,
          desc: d ? d.textContent : '', rows: table ? table.tBodies[0].rows.length : 0};
})"#;

/// The page in print: every `<details>` with whether each part but its
/// `<summary>` is rendered, and whether the summary still draws a
/// disclosure marker.
const PRINT_JS: &str = r#"[...document.querySelectorAll('details')].map(d => {
  const s = d.querySelector(':scope > summary');
  return {cls: d.className, open: d.open,
          shown: [...d.children].filter(c => c !== s).every(c => c.checkVisibility()),
          marker: !!s && getComputedStyle(s).listStyleType !== 'none'};
})"#;

/// The mean luma (0–255) of a PNG's pixels, and its distinct colours (up
/// to 16).
fn png_stats(bytes: &[u8]) -> (f64, usize) {
    let (pixels, colours) = png_pixels(bytes);
    let luma: f64 = pixels
        .iter()
        .map(|p| 0.299 * p[0] as f64 + 0.587 * p[1] as f64 + 0.114 * p[2] as f64)
        .sum::<f64>()
        / pixels.len().max(1) as f64;
    (luma, colours)
}

/// The page, built from `log`, in dark and in light mode: see
/// [`check_page_schemes`].
fn check_schemes(browser: &Path, env: &TestEnv, log: &Path, name: &str) {
    let page = report_page(env, log, name);
    check_page_schemes(browser, &page, name, true);
}

/// A page in dark and in light mode: the scheme took, the background
/// follows it, every text is legible (contrast at least 4.5:1), no script
/// error, nothing fetched, no horizontal scrolling at 1280 px, every chart
/// with a text alternative and a data table (`charts`), and a screenshot
/// that is not blank and as dark or light as the scheme.
fn check_page_schemes(browser: &Path, page: &Path, name: &str, charts: bool) {
    let dir = artifacts();
    for scheme in ["dark", "light"] {
        let mut b = crate::cdp::Browser::launch(browser, &[]);
        b.media("", &[("prefers-color-scheme", scheme)]);
        b.open(page);
        let r = b.eval(CONTRAST_JS);
        let what = format!("{name}, {scheme} mode");
        assert_eq!(
            r["dark"],
            json!(scheme == "dark"),
            "{what}: the scheme took"
        );
        let body = r["body"].as_f64().unwrap();
        if scheme == "dark" {
            assert!(body < 0.05, "{what}: a dark background ({body})");
        } else {
            assert!(body > 0.8, "{what}: a light background ({body})");
        }
        assert!(r["texts"].as_u64().unwrap() > 20, "{what}: texts measured");
        for t in r["lowest"].as_array().unwrap() {
            assert!(
                t["ratio"].as_f64().unwrap() >= 4.5,
                "{what}: illegible text (contrast below 4.5:1): {t}"
            );
        }
        assert!(r["scrollWidth"].as_u64().unwrap() <= 1280, "{what}: {r}");
        assert!(b.errors().is_empty(), "{what}: {:?}", b.errors());
        // Nothing is fetched but the page itself.
        let own = format!("file://{}", page.display());
        for url in b.requests() {
            assert!(
                url == own || url.starts_with("data:"),
                "{what}: fetched {url}"
            );
        }
        // Every chart is an image with a text alternative (its title and a
        // description in words) and a data table in its section.
        let found = b.eval(CHARTS_JS);
        let found = found.as_array().unwrap();
        assert!(!charts || found.len() >= 3, "{what}: charts {found:?}");
        for c in found {
            assert_eq!(c["role"], json!("img"), "{what}: {c}");
            assert_eq!(c["labelled"], json!(true), "{what}: {c}");
            assert!(c["desc"].as_str().unwrap().len() > 20, "{what}: {c}");
            assert!(c["rows"].as_u64().unwrap() > 0, "{what}: a data table: {c}");
        }
        let png = b.screenshot();
        std::fs::write(dir.join(format!("{name}-{scheme}.png")), &png).unwrap();
        let (luma, colours) = png_stats(&png);
        assert!(colours > 1, "{what}: the screenshot is blank");
        if scheme == "dark" {
            assert!(
                luma < 80.0,
                "{what}: the screenshot is not dark (mean luma {luma:.0})"
            );
        } else {
            assert!(
                luma > 170.0,
                "{what}: the screenshot is not light (mean luma {luma:.0})"
            );
        }
    }
}

#[test]
fn dark_and_light_modes_are_legible_in_a_browser() {
    let Some(browser) = chromium("report::dark_and_light_modes_are_legible_in_a_browser") else {
        return;
    };
    let env = TestEnv::new();
    for s in ["compacted.jsonl", "coding-session.jsonl"] {
        let name = format!("scheme-{}", s.trim_end_matches(".jsonl"));
        check_schemes(&browser, &env, &sample(s), &name);
    }
    // The index of a directory of pages, one of them refused.
    let dir = artifacts().join("scheme-index");
    let out = env
        .dsh()
        .args(["report", "--force", "-o"])
        .arg(&dir)
        .arg(sample("compacted.jsonl"))
        .arg(sample("refused.jsonl"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "one log refused");
    let index = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(
        index.contains("1 session(s) in 1 project(s)") && index.contains("1 log(s) refused"),
        "{index}"
    );
    check_page_schemes(&browser, &dir.join("index.html"), "scheme-index", false);
}

#[test]
fn print_expands_every_collapsed_part_and_hides_the_toggles() {
    let Some(browser) =
        chromium("report::print_expands_every_collapsed_part_and_hides_the_toggles")
    else {
        return;
    };
    let env = TestEnv::new();
    let dir = artifacts();
    let page = report_page(&env, &sample("compacted.jsonl"), "print-compacted");
    // Printing from dark mode prints the light palette.
    let mut b = crate::cdp::Browser::launch(&browser, &[]);
    b.media("", &[("prefers-color-scheme", "dark")]);
    b.open(&page);
    // On screen the collapsible parts start closed, behind their toggles.
    let screen = b.eval(PRINT_JS);
    let parts = screen.as_array().unwrap();
    for class in ["data", "summary", "turn"] {
        assert!(
            parts.iter().any(|d| d["cls"] == class),
            "a collapsible {class}: {screen}"
        );
    }
    for d in parts {
        assert_eq!(d["open"], json!(false), "{d}");
        assert_eq!(d["shown"], json!(false), "closed on screen: {d}");
        assert_eq!(d["marker"], json!(true), "a toggle on screen: {d}");
    }
    b.media("print", &[("prefers-color-scheme", "dark")]);
    let print = b.eval(PRINT_JS);
    for d in print.as_array().unwrap() {
        assert_eq!(d["shown"], json!(true), "expanded in print: {d}");
        assert_eq!(d["marker"], json!(false), "no toggle in print: {d}");
    }
    let r = b.eval(CONTRAST_JS);
    assert!(r["body"].as_f64().unwrap() > 0.8, "print is light: {r}");
    for t in r["lowest"].as_array().unwrap() {
        assert!(t["ratio"].as_f64().unwrap() >= 4.5, "legible in print: {t}");
    }
    // The PDF itself: not empty, and longer than the page as it is on
    // screen with its parts closed.
    let pdf = b.pdf();
    std::fs::write(dir.join("print-compacted.pdf"), &pdf).unwrap();
    assert!(pdf.starts_with(b"%PDF-"), "a PDF");
    let pages = |pdf: &[u8]| {
        String::from_utf8_lossy(pdf)
            .matches("/Type /Page\n")
            .count()
    };
    let printed = pages(&pdf);
    assert!(printed >= 1, "pages in the PDF");
    b.call(
        "Runtime.evaluate",
        json!({"expression": "document.head.insertAdjacentHTML('beforeend', '<style>@media print{details::details-content{content-visibility:hidden}}</style>')"}),
    );
    let closed = pages(&b.pdf());
    assert!(
        printed > closed,
        "the expanded print ({printed} pages) is longer than a collapsed one ({closed})"
    );
    assert!(b.errors().is_empty(), "{:?}", b.errors());
}

/// `--tokenizer` charts each request's prompt in the provider's own tokens
/// beside DSH's estimate and the reported prompt: the pressure section's
/// data table gets a `deepseek-v4 count` column holding what `dsh cache
/// --tokenizer deepseek-v4` sizes each request at (a placeholder log's
/// hidden prefix included, so the first is what DeepSeek reported); the
/// page without the flag has no such column.
#[test]
fn report_tokenizer_charts_the_providers_count_of_each_request() {
    let env = TestEnv::new();
    let log = env.home().join("placeholder.jsonl");
    crate::support::placeholder_log(&log, 6000);
    let sized: Vec<u64> = json_of(
        &env,
        &["cache", "--json", "--tokenizer", "deepseek-v4"],
        &log,
    )["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["promptTokens"].as_u64().unwrap())
        .collect();
    assert_eq!(sized.first(), Some(&6000));
    let page = env.home().join("page.html");
    let run = |tokenizer: bool| {
        let mut cmd = env.dsh();
        cmd.args(["report", "--force", "-o"]).arg(&page);
        if tokenizer {
            cmd.args(["--tokenizer", "deepseek-v4"]);
        }
        crate::support::stdout_ok(cmd.arg(&log).output().unwrap());
        std::fs::read_to_string(&page).unwrap()
    };
    let html = run(true);
    let pressure = section(&html, "pressure");
    assert!(pressure.contains("deepseek-v4 count"), "{pressure}");
    // A row's cells, header cells (`<th>`) and data cells (`<td>`) alike.
    let cells = |row: &str| -> Vec<String> {
        row.split("<t")
            .skip(1)
            .filter(|c| c.starts_with("d") || c.starts_with("h>") || c.starts_with("h "))
            .map(|c| {
                let c = &c[c.find('>').unwrap() + 1..];
                c[..c.find("</t").unwrap()].to_string()
            })
            .collect()
    };
    let thead = &pressure[pressure.find("<thead>").unwrap()..];
    let head = cells(&thead[..thead.find("</thead>").unwrap()]);
    let col = head
        .iter()
        .position(|h| h.contains("deepseek-v4 count"))
        .expect("a deepseek-v4 count column");
    let body = &pressure[pressure.find("<tbody>").unwrap()..];
    let rows: Vec<Vec<String>> = body.split("<tr>").skip(1).map(cells).collect();
    assert_eq!(rows.len(), sized.len());
    for (row, want) in rows.iter().zip(&sized) {
        let got: u64 = row[col].replace(',', "").parse().unwrap();
        assert_eq!(got, *want, "{row:?}");
    }
    assert!(!section(&run(false), "pressure").contains("deepseek-v4 count"));
}
