//! `dsh report HOME -o DIR`: the home dashboard and a session page in
//! headless Chromium at a phone's width (390 px) and a desktop's (1280 px),
//! light and dark: no horizontal page scroll, rendered chart text at least
//! 10 px, no script error; the sessions table sorts by cost, filters by
//! project, reads as a table sorted by the latest activity without its
//! script, and has one row per session of the home with the figures of
//! `dsh sessions --json`. Screenshots of each width and scheme are kept in
//! `target/report-artifacts/` (CI keeps them as artifacts).

use std::path::{Path, PathBuf};

use serde_json::{Value as J, json};

use crate::cdp::Browser;
use crate::report::{artifacts, chromium};
use crate::support::{TestEnv, sample};

/// A home built from the samples: `samples/home` (five sessions, one with
/// a compaction, one with a busy lock), a packed log, a pruned one, and a
/// log the reader refuses; and a config that gives deepseek-v4-pro a small
/// window, so that one session is over it.
fn home() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    copy_tree(&sample("home"), &home);
    let put = |project: &str, id: &str, name: &str, from: &Path| {
        let d = home.join("sessions").join(project).join(id);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::copy(from, d.join(name)).unwrap();
    };
    put(
        "--home-dev-packed--",
        "sample-coding-session",
        "session.jsonl.zstd",
        &sample("coding-session.jsonl.zstd"),
    );
    put(
        "--home-dev-project--",
        "sample-prune-closed",
        "session.jsonl",
        &sample("prune-closed.jsonl"),
    );
    put(
        "--home-dev-broken--",
        "broken",
        "session.jsonl",
        &sample("refused.jsonl"),
    );
    let config = dir.path().join("dsh.toml");
    std::fs::write(
        &config,
        "[[routes]]\nprovider = \"deepseek-official\"\nmodels = [ { id = \"deepseek-v4-pro\", contextWindow = 300 } ]\n",
    )
    .unwrap();
    (dir, home, config)
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// Every SVG text the page renders: the smallest font size on screen
/// (its computed size times the scale it is drawn at) and the smallest
/// height of its box (`getBoundingClientRect`), and how many were measured.
const TEXT_JS: &str = r#"(() => {
  const texts = [...document.querySelectorAll('svg text')].filter(t => t.checkVisibility() && t.textContent.trim());
  let font = Infinity, box = Infinity, which = '';
  for (const t of texts) {
    const f = parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a;
    const h = t.getBoundingClientRect().height;
    if (f < font) { font = f; which = t.textContent; }
    box = Math.min(box, h);
  }
  const d = document.documentElement;
  return {n: texts.length, font, box, which, scrollWidth: d.scrollWidth, clientWidth: d.clientWidth};
})()"#;

/// The rows of the sessions table as shown: their data attributes.
const ROWS_JS: &str = r#"[...document.querySelectorAll('#sessions-table tbody tr')].filter(r => !r.hidden).map(r => ({...r.dataset}))"#;

/// Open `page` at `width` in `scheme`; check it fits and its chart text is
/// legible; keep a screenshot `name-width-scheme.png`.
pub fn look(browser: &Path, page: &Path, name: &str, width: u32, scheme: &str) -> Browser {
    let mut b = Browser::launch(browser, &[]);
    b.viewport(width, if width < 600 { 844 } else { 900 }, width < 600);
    b.media("", &[("prefers-color-scheme", scheme)]);
    b.open(page);
    let what = format!("{name} at {width} px, {scheme}");
    let r = b.eval(TEXT_JS);
    assert!(
        r["clientWidth"].as_u64().unwrap() == u64::from(width),
        "{what}: laid out {width} px wide: {r}"
    );
    assert!(
        r["scrollWidth"].as_u64() <= r["clientWidth"].as_u64(),
        "{what}: the page scrolls sideways: {r}"
    );
    assert!(r["n"].as_u64().unwrap() > 5, "{what}: chart texts: {r}");
    assert!(
        r["font"].as_f64().unwrap() >= 10.0 && r["box"].as_f64().unwrap() >= 10.0,
        "{what}: chart text under 10 px: {r}"
    );
    assert!(b.errors().is_empty(), "{what}: {:?}", b.errors());
    let png = b.screenshot();
    std::fs::write(
        artifacts().join(format!("{name}-{width}-{scheme}.png")),
        &png,
    )
    .unwrap();
    b
}

fn num(v: &J) -> Option<f64> {
    match v {
        J::String(s) if s.is_empty() => None,
        J::String(s) => Some(s.parse().unwrap()),
        J::Number(n) => n.as_f64(),
        _ => None,
    }
}

#[test]
fn the_home_dashboard_fits_any_screen_and_holds_the_sessions() {
    let Some(browser) =
        chromium("dashboard::the_home_dashboard_fits_any_screen_and_holds_the_sessions")
    else {
        return;
    };
    let env = TestEnv::new();
    let (_dir, home, config) = home();
    let out = artifacts().join("dashboard");
    let run = env
        .dsh()
        .args(["report", "--force", "--tz", "+02:00", "--home"])
        .arg(&home)
        .arg("--config")
        .arg(&config)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(3), "one log refused");
    let sessions = env
        .dsh()
        .args(["sessions", "--json", "--home"])
        .arg(&home)
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    let sessions: J = serde_json::from_slice(&sessions.stdout).unwrap();
    let logs = sessions["logs"].as_array().unwrap();
    let (read, refused): (Vec<&J>, Vec<&J>) = logs.iter().partition(|l| l["error"].is_null());
    assert_eq!((read.len(), refused.len()), (7, 1), "{sessions}");
    let index = out.join("index.html");
    for width in [390, 1280] {
        for scheme in ["light", "dark"] {
            let mut b = look(&browser, &index, "dashboard", width, scheme);
            let rows = b.eval(ROWS_JS);
            assert_eq!(rows.as_array().unwrap().len(), read.len(), "{rows}");
            let refused_items = b.eval("document.querySelectorAll('#refused code').length");
            assert_eq!(refused_items, json!(refused.len()));
        }
    }
    let mut b = Browser::launch(&browser, &[]);
    b.open(&index);
    // One row per session, with the figures of `dsh sessions --json`.
    let rows = b.eval(ROWS_JS);
    let rows = rows.as_array().unwrap();
    for s in &read {
        let file = s["file"].as_str().unwrap();
        let row = rows
            .iter()
            .find(|r| r["file"] == json!(file))
            .unwrap_or_else(|| panic!("no row for {file}: {rows:?}"));
        let what = format!("{file}: {row} against {s}");
        assert_eq!(row["session"], s["session"], "{what}");
        assert_eq!(num(&row["requests"]), num(&s["requests"]), "{what}");
        assert_eq!(num(&row["compactions"]), num(&s["compactions"]), "{what}");
        assert_eq!(num(&row["prunes"]), num(&s["prunes"]), "{what}");
        assert_eq!(num(&row["cost"]), num(&s["costUsd"]), "{what}");
        assert_eq!(num(&row["pressure"]), num(&s["pressurePercent"]), "{what}");
        assert_eq!(num(&row["last"]), num(&s["lastActivityMs"]), "{what}");
        assert_eq!(
            row["project"],
            json!(s["project"].as_str().unwrap_or("")),
            "{what}"
        );
        assert_eq!(
            row["title"],
            json!(
                s["title"]
                    .as_str()
                    .unwrap_or(s["session"].as_str().unwrap())
            ),
            "{what}"
        );
    }
    // Without the script: a table, the latest activity first, no controls.
    let lasts = |rows: &J| -> Vec<Option<f64>> {
        rows.as_array()
            .unwrap()
            .iter()
            .map(|r| num(&r["last"]))
            .collect()
    };
    let order = lasts(&J::Array(rows.clone()));
    let mut sorted = order.clone();
    sorted.sort_by(|a, b| match (a, b) {
        (Some(x), Some(y)) => y.total_cmp(x),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        _ => std::cmp::Ordering::Equal,
    });
    assert_eq!(order, sorted, "the latest activity first");
    // An over-window session has its badge.
    let over = rows
        .iter()
        .filter(|r| num(&r["pressure"]).is_some_and(|p| p > 100.0))
        .count();
    assert!(over >= 1, "the small window puts a session over it");
    assert_eq!(
        b.eval("document.querySelectorAll('#sessions-table .badge.over').length"),
        json!(over)
    );
    // Sorting by cost: highest first, unknown last; the order changes.
    b.eval("document.querySelector('th[data-key=cost] button').click()");
    let by_cost = b.eval(ROWS_JS);
    let costs: Vec<Option<f64>> = by_cost
        .as_array()
        .unwrap()
        .iter()
        .map(|r| num(&r["cost"]))
        .collect();
    assert!(
        costs.windows(2).all(|w| match (w[0], w[1]) {
            (Some(a), Some(b)) => a >= b,
            (None, Some(_)) => false,
            _ => true,
        }),
        "sorted by cost: {costs:?}"
    );
    assert_ne!(lasts(&by_cost), order, "sorting by cost reordered the rows");
    assert_eq!(
        b.eval("document.querySelector('th[data-key=cost]').getAttribute('aria-sort')"),
        json!("descending")
    );
    b.eval("document.querySelector('th[data-key=cost] button').click()");
    let again = b.eval(ROWS_JS);
    assert_eq!(
        num(&again[0]["cost"]),
        costs.iter().rev().flatten().next().copied(),
        "a second click: lowest first"
    );
    // Filtering by project.
    let project = "/home/dev/api";
    let in_project = read
        .iter()
        .filter(|s| s["project"] == json!(project))
        .count();
    b.eval(&format!(
        "(() => {{ const s = document.getElementById('project-filter'); s.value = '{project}'; s.dispatchEvent(new Event('change')); }})()"
    ));
    let filtered = b.eval(ROWS_JS);
    assert_eq!(filtered.as_array().unwrap().len(), in_project);
    assert!(
        filtered
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["project"] == json!(project))
    );
    assert!(b.errors().is_empty(), "{:?}", b.errors());
    // The script off: the controls stay hidden, the rows in their order.
    let mut plain = Browser::launch(&browser, &[]);
    plain.scripts(false);
    plain.open(&index);
    assert_eq!(lasts(&plain.eval(ROWS_JS)), order);
    assert_eq!(
        plain.eval("document.getElementById('controls').hidden"),
        json!(true)
    );
    // The sections of the dashboard.
    for id in [
        "totals", "daily", "nearest", "costly", "flags", "sessions", "refused",
    ] {
        assert_eq!(
            b.eval(&format!("!!document.getElementById('{id}')")),
            json!(true),
            "section {id}"
        );
    }
    let flags = b.eval("document.getElementById('flags').textContent");
    assert!(
        flags.as_str().unwrap().contains("busy") && flags.as_str().unwrap().contains("over the"),
        "the busy lock and the session over its window are flagged: {flags}"
    );
    // The session page over its window, at both widths and schemes.
    let page = rows
        .iter()
        .find(|r| num(&r["pressure"]).is_some_and(|p| p > 100.0))
        .map(|r| r["session"].as_str().unwrap().to_string())
        .unwrap();
    let page = out.join(format!("{page}.html"));
    for width in [390, 1280] {
        for scheme in ["light", "dark"] {
            let mut b = look(&browser, &page, "session", width, scheme);
            assert_eq!(
                b.eval("!!document.getElementById('over-window')"),
                json!(true),
                "the page says it is over its window"
            );
            assert!(
                b.eval("document.querySelectorAll('#chart-pressure .marker-overflow').length")
                    .as_u64()
                    .unwrap()
                    > 0,
                "requests over the window are marked"
            );
        }
    }
}

/// What each compaction cost and saved on its page equals `dsh cache
/// --json`'s figures for it.
#[test]
fn compaction_cost_and_break_even_are_the_cache_figures() {
    let env = TestEnv::new();
    let dir = tempfile::tempdir().unwrap();
    let log = sample("compacted.jsonl");
    let page = dir.path().join("p.html");
    crate::support::stdout_ok(
        env.dsh()
            .args(["report", "--no-view", "-o"])
            .arg(&page)
            .arg(&log)
            .output()
            .unwrap(),
    );
    let html = std::fs::read_to_string(&page).unwrap();
    let cache: J = serde_json::from_slice(
        &env.dsh()
            .args(["cache", "--json"])
            .arg(&log)
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let compactions: Vec<&J> = cache["replacements"]
        .as_array()
        .expect("replacements")
        .iter()
        .filter(|r| r["kind"] == json!("compaction"))
        .collect();
    assert!(!compactions.is_empty());
    for c in compactions {
        let seq = c["summary"]["seq"].as_u64().unwrap();
        let at = html
            .find(&format!("class=\"row-compaction\" data-seq=\"{seq}\""))
            .unwrap_or_else(|| panic!("row of the compaction at {seq}"));
        let tag = &html[at..at + html[at..].find('>').unwrap()];
        let attr = |name: &str| -> Option<f64> {
            let k = tag.find(&format!("{name}=\""))? + name.len() + 2;
            let v = &tag[k..k + tag[k..].find('"')?];
            (!v.is_empty()).then(|| v.parse().unwrap())
        };
        match c["cost"].as_object() {
            Some(cost) => {
                let want = cost["recompute"].as_f64().unwrap() + cost["summary"].as_f64().unwrap();
                assert!(
                    (attr("data-cost").unwrap() - want).abs() < 1e-12,
                    "{tag} {c}"
                );
                assert!(
                    (attr("data-saved").unwrap() - cost["saved"].as_f64().unwrap()).abs() < 1e-12
                );
            }
            None => assert_eq!(attr("data-cost"), None),
        }
    }
    assert!(html.contains("class=\"break-even\""));
}

/// The dashboard's flags include `dsh health`'s findings, each as `dsh
/// health` words it.
#[test]
fn the_dashboard_flags_what_dsh_health_finds() {
    let env = TestEnv::new();
    let (dir, home, _config) = home();
    let out = dir.path().join("site");
    // (The home holds one refused log: the report says so, exit 3.)
    let run = env
        .dsh()
        .args(["report", "-o"])
        .arg(&out)
        .arg(&home)
        .output()
        .unwrap();
    assert_eq!(
        run.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let index = std::fs::read_to_string(out.join("index.html")).unwrap();
    let health: J = serde_json::from_slice(
        &env.dsh()
            .args(["health", "--json"])
            .arg(&home)
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    // Most severe first: each session's error-level findings are shown.
    let mut errors = 0;
    for s in health["sessions"].as_array().expect("sessions") {
        for f in s["findings"].as_array().expect("findings") {
            if f["severity"] == "error" {
                errors += 1;
                let shown = format!(
                    "health (seq {}): {}: ",
                    f["seqs"][0],
                    f["kind"].as_str().unwrap()
                );
                assert!(index.contains(&shown), "{shown} not flagged");
            }
        }
    }
    assert!(errors > 0, "{health}");
}
