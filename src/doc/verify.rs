//! `dsh verify --json`: the audit of one log, of many, and the list of
//! checks.

use schemars::JsonSchema;
use serde::Serialize;

use super::error::LogRefusal;
use super::{Document, SchemaVersion};
use crate::verify::{
    self, CheckId, Finding as Found, REFERENCE_COMPANIONS, Report, Severity, Verdict,
};

/// The audit of one log against every documented invariant; a refused log
/// is reported with verdict "refused".
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum One<'a> {
    /// A log read and checked.
    Audited(Versioned<Audited<'a>>),
    /// A log the loader refused.
    Refused(Versioned<Refused<'a>>),
}

impl Document for One<'_> {
    const NAME: &'static str = "verify";
    const TITLE: &'static str = "dsh verify --json (one log)";
}

/// A log's entry with the document's `schema_version` after its keys.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "{T}Document")]
pub struct Versioned<T> {
    /// The entry.
    #[serde(flatten)]
    pub entry: T,
    /// Version of this document's shape; bumped on a breaking change.
    #[serde(rename = "schema_version")]
    pub schema_version: SchemaVersion,
}

/// The audit of several logs or a directory of sessions (`dsh verify` with
/// no LOG: every session under $DSH_HOME).
#[derive(Debug, Serialize, JsonSchema)]
pub struct Many<'a> {
    /// One entry per log, in the order given.
    pub logs: Vec<Entry<'a>>,
    /// The counts over every log.
    pub summary: Summary,
    /// The worst verdict: refused, then violations, then clean.
    pub verdict: Verdict,
    /// Version of this document's shape; bumped on a breaking change.
    #[serde(rename = "schema_version")]
    pub schema_version: SchemaVersion,
}

impl Document for Many<'_> {
    const NAME: &'static str = "verify-many";
    const TITLE: &'static str = "dsh verify --json (many logs)";
}

/// One log of many.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Entry<'a> {
    /// A log read and checked.
    Audited(Audited<'a>),
    /// A log the loader refused.
    Refused(Refused<'a>),
}

/// A log read and checked.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Audited<'a> {
    /// The log as given on the command line (`-` for standard input).
    pub file: &'a str,
    /// The session id of the log's header.
    pub session: &'a str,
    /// Whether a finding counts.
    pub verdict: Outcome,
    /// The reference packages whose invariants were checked.
    pub checked: [&'static str; REFERENCE_COMPANIONS.len()],
    /// The reference's shape: its first violation per invariant package.
    pub violations: Vec<Violation>,
    /// Every finding, in log order.
    pub findings: Vec<Finding<'a>>,
    /// Findings per severity.
    pub counts: Counts,
    /// Events checked: stored events plus crash closers.
    pub events: u64,
    /// How many of those were synthetic closers.
    pub closers: u64,
    /// Whether the in-memory `session/end-seed` marker was checked too.
    pub end_seed_appended: bool,
    /// The loader's notes (torn tail, closers, upgrades, tolerances).
    pub load_warnings: &'a [String],
}

/// A log the loader refused: the refusal, its verdict and the findings
/// the refusal stands for.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Refused<'a> {
    /// Why the log was refused.
    #[serde(flatten)]
    pub refusal: LogRefusal,
    /// Always `refused`.
    pub verdict: RefusedVerdict,
    /// The findings the refusal stands for.
    pub findings: Vec<Finding<'a>>,
    /// Findings per severity.
    pub counts: Counts,
}

/// The verdict of an audited log.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// No finding that counts.
    Clean,
    /// At least one finding that counts.
    Violations,
}

/// The verdict of a refused log.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RefusedVerdict {
    /// The loader refused the log.
    Refused,
}

/// The reference's report of one invariant package.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Violation {
    /// The companion package.
    pub package: &'static str,
    /// `invariant violated by "<package>": <message>`.
    pub message: String,
}

/// One finding.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Finding<'a> {
    /// The check's id (`V-LOG-1`, …).
    pub check: &'static str,
    /// Its severity.
    pub severity: Severity,
    /// The spec section of the check.
    pub section: &'static str,
    /// The reference package whose invariant the check is, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub package: Option<&'static str>,
    /// The log as given on the command line (`-` for standard input).
    pub file: &'a str,
    /// The event's seq, when the finding belongs to one.
    pub seq: Option<u64>,
    /// The 1-based physical line of that event (the header is line 1).
    pub line: Option<u64>,
    /// The event is not in the file (a crash closer, the end-seed marker).
    pub synthetic: bool,
    /// One sentence.
    pub message: &'a str,
}

impl<'a> From<&'a Found> for Finding<'a> {
    fn from(f: &'a Found) -> Finding<'a> {
        Finding {
            check: f.check.as_str(),
            severity: f.severity,
            section: f.check.section(),
            package: f.check.package(),
            file: &f.file,
            seq: f.seq,
            line: f.line,
            synthetic: f.synthetic,
            message: &f.message,
        }
    }
}

/// Findings per severity.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Counts {
    /// Errors.
    pub error: u64,
    /// Warnings.
    pub warning: u64,
}

/// Counts over many logs.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct Summary {
    /// Logs audited.
    pub logs: u64,
    /// Logs without a finding that counts.
    pub clean: u64,
    /// Logs with one.
    pub violations: u64,
    /// Logs refused.
    pub refused: u64,
    /// Errors found.
    pub errors: u64,
    /// Warnings found.
    pub warnings: u64,
}

impl Summary {
    /// The counts over `reports`.
    pub fn of(reports: &[Report], deny_warnings: bool) -> Summary {
        let mut t = Summary {
            logs: reports.len() as u64,
            ..Summary::default()
        };
        for r in reports {
            match r.verdict(deny_warnings) {
                verify::Verdict::Clean => t.clean += 1,
                verify::Verdict::Violations => t.violations += 1,
                verify::Verdict::Refused => t.refused += 1,
            }
            t.errors += r.count(verify::Severity::Error) as u64;
            t.warnings += r.count(verify::Severity::Warning) as u64;
        }
        t
    }

    /// The worst verdict: refused, then violations, then clean.
    fn verdict(&self) -> Verdict {
        if self.refused > 0 {
            Verdict::Refused
        } else if self.violations > 0 {
            Verdict::Violations
        } else {
            Verdict::Clean
        }
    }
}

impl<'a> Entry<'a> {
    /// The entry of one log's report.
    fn of(r: &'a Report, deny_warnings: bool) -> Entry<'a> {
        let findings = r.findings.iter().map(Finding::from).collect();
        let counts = Counts {
            error: r.count(verify::Severity::Error) as u64,
            warning: r.count(verify::Severity::Warning) as u64,
        };
        if let Some(e) = &r.refusal {
            return Entry::Refused(Refused {
                refusal: LogRefusal::of(e, &r.file, false),
                verdict: RefusedVerdict::Refused,
                findings,
                counts,
            });
        }
        Entry::Audited(Audited {
            file: &r.file,
            session: r.session.as_deref().unwrap_or_default(),
            verdict: match r.verdict(deny_warnings) {
                verify::Verdict::Clean => Outcome::Clean,
                _ => Outcome::Violations,
            },
            checked: REFERENCE_COMPANIONS,
            violations: r
                .reference_violations()
                .into_iter()
                .map(|v| Violation {
                    package: v.package,
                    message: v.message,
                })
                .collect(),
            findings,
            counts,
            events: r.events,
            closers: r.closers,
            end_seed_appended: r.end_seed_appended,
            load_warnings: &r.notes,
        })
    }
}

impl<'a> One<'a> {
    /// The document of one log's report.
    pub fn of(r: &'a Report, deny_warnings: bool) -> One<'a> {
        match Entry::of(r, deny_warnings) {
            Entry::Audited(entry) => One::Audited(Versioned {
                entry,
                schema_version: SchemaVersion,
            }),
            Entry::Refused(entry) => One::Refused(Versioned {
                entry,
                schema_version: SchemaVersion,
            }),
        }
    }
}

impl<'a> Many<'a> {
    /// The document of many logs' reports.
    pub fn of(reports: &'a [Report], deny_warnings: bool) -> Many<'a> {
        let summary = Summary::of(reports, deny_warnings);
        Many {
            logs: reports
                .iter()
                .map(|r| Entry::of(r, deny_warnings))
                .collect(),
            verdict: summary.verdict(),
            summary,
            schema_version: SchemaVersion,
        }
    }
}

/// Every check `dsh verify` runs.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Checks {
    /// The checks, in the order they run.
    pub checks: Vec<Check>,
    /// Version of this document's shape; bumped on a breaking change.
    #[serde(rename = "schema_version")]
    pub schema_version: SchemaVersion,
}

impl Document for Checks {
    const NAME: &'static str = "verify-checks";
    const TITLE: &'static str = "dsh verify --list-checks --json";
}

/// One check.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Check {
    /// Its id (`V-LOG-1`, …).
    pub check: &'static str,
    /// Its severity.
    pub severity: Severity,
    /// The spec section it enforces.
    pub section: &'static str,
    /// The reference package whose invariant it is, or null.
    pub package: Option<&'static str>,
    /// What it requires.
    pub title: &'static str,
}

impl Checks {
    /// Every check.
    pub fn all() -> Checks {
        Checks {
            checks: CheckId::ALL
                .iter()
                .map(|c| Check {
                    check: c.as_str(),
                    severity: c.severity(),
                    section: c.section(),
                    package: c.package(),
                    title: c.title(),
                })
                .collect(),
            schema_version: SchemaVersion,
        }
    }
}
