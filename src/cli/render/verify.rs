//! `dsh verify`'s readable report and its GitHub workflow commands.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use dsh::doc::verify as doc;
use dsh::verify::{CheckId, Finding, Report, Severity, Verdict};

use crate::cli::render::{Tone, paint};

fn plural(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

fn location(f: &Finding) -> String {
    let mut s = String::new();
    if let Some(seq) = f.seq {
        let _ = write!(s, "seq {seq}");
    }
    match f.line {
        Some(l) if s.is_empty() => {
            let _ = write!(s, "line {l}");
        }
        Some(l) => {
            let _ = write!(s, " (line {l})");
        }
        None if f.synthetic => s.push_str(" (in memory, not in the file)"),
        None => {}
    }
    s
}

/// A count in its tone when it is not zero.
fn toned(s: String, tone: Tone) -> String {
    if s.starts_with("0 ") {
        s
    } else {
        paint(&s, tone)
    }
}

/// A severity in its color.
fn severity(s: Severity) -> String {
    let tone = if s == Severity::Error {
        Tone::Bad
    } else {
        Tone::Warn
    };
    paint(&s.to_string(), tone)
}

/// The readable report: per file, findings grouped by check.
pub fn human(reports: &[Report], deny_warnings: bool, home: Option<&std::path::Path>) -> String {
    let mut out = String::new();
    for r in reports {
        let verdict = r.verdict(deny_warnings);
        let label = crate::cli::render::log_label(&r.file, home);
        match verdict {
            Verdict::Refused => {
                let _ = writeln!(out, "{label}: {}", paint("refused", Tone::Bad));
            }
            _ if r.findings.is_empty() => {
                let _ = writeln!(
                    out,
                    "{label}: {} ({} events)",
                    paint("clean", Tone::Good),
                    r.events
                );
                continue;
            }
            _ => {
                let _ = writeln!(
                    out,
                    "{label}: {}, {} ({} events){}",
                    toned(plural(r.count(Severity::Error) as u64, "error"), Tone::Bad),
                    toned(
                        plural(r.count(Severity::Warning) as u64, "warning"),
                        Tone::Warn
                    ),
                    r.events,
                    match verdict {
                        // A damaged end is not clean: writers refuse the log.
                        Verdict::Clean if r.findings.iter().any(|f| f.check == CheckId::Tail1) => {
                            ": no errors, but its end is damaged (see V-TAIL-1)"
                        }
                        Verdict::Clean => ": clean",
                        _ => "",
                    }
                );
            }
        }
        let mut groups: BTreeMap<CheckId, Vec<&Finding>> = BTreeMap::new();
        for f in &r.findings {
            groups.entry(f.check).or_default().push(f);
        }
        for (check, fs) in groups {
            let section = match check.section() {
                "" => String::new(),
                s => format!(", {s}"),
            };
            let _ = writeln!(
                out,
                "  {check} ({}{section}): {}",
                severity(check.severity()),
                check.title()
            );
            for f in fs {
                let loc = location(f);
                if loc.is_empty() {
                    let _ = writeln!(out, "    {}", f.message);
                } else {
                    let _ = writeln!(out, "    {loc}: {}", f.message);
                }
            }
        }
    }
    if reports.len() > 1 {
        let _ = writeln!(out, "\n{}", summary(reports, deny_warnings));
    }
    out
}

fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// GitHub Actions workflow commands, one per finding, then a summary line.
pub fn github(reports: &[Report], deny_warnings: bool) -> String {
    let mut out = String::new();
    for r in reports {
        for f in &r.findings {
            let level = match f.severity {
                Severity::Error => "error",
                Severity::Warning if deny_warnings => "error",
                Severity::Warning => "warning",
            };
            let mut props = Vec::new();
            if f.file != "-" {
                props.push(format!("file={}", escape_property(&f.file)));
            }
            if let Some(l) = f.line {
                props.push(format!("line={l}"));
            }
            props.push(format!("title={}", escape_property(f.check.as_str())));
            let loc = match f.seq {
                Some(s) => format!("seq {s}: "),
                None => String::new(),
            };
            let _ = writeln!(
                out,
                "::{level} {}::{}",
                props.join(","),
                escape_data(&format!("{} {loc}{}", f.check, f.message))
            );
        }
    }
    let _ = writeln!(out, "dsh verify: {}", summary(reports, deny_warnings));
    out
}

/// `3 logs: 1 clean, 1 with violations, 1 refused (2 errors, 0 warnings)`.
fn summary(reports: &[Report], deny_warnings: bool) -> String {
    let t = doc::Summary::of(reports, deny_warnings);
    format!(
        "{}: {} clean, {} with violations, {} refused ({}, {})",
        plural(reports.len() as u64, "log"),
        t.clean,
        t.violations,
        t.refused,
        plural(t.errors, "error"),
        plural(t.warnings, "warning")
    )
}
