//! Session health: what compaction and the harness cost a session, found
//! in its log alone.
//!
//! [`scan`] reads one log once (the [`sessions`] pass,
//! with the detectors riding along) and returns a
//! [`SessionHealth`]: findings, each with a [`FindingKind`], a
//! [`Severity`], the seqs of the events that show it and what it cost in
//! tokens and money (priced with the [`price`](crate::price) table, through
//! [`usage`](crate::usage)'s sums). [`summarise`] rolls many sessions up:
//! which kind costs most, which projects.
//!
//! The kinds (thresholds in [`Thresholds`], documented defaults):
//!
//! * `compaction-loop`: N landed compactions within M agent requests, or a
//!   compaction after which the next request's reported prompt is still at
//!   or over the route's threshold (error); with the `replaceGeneration`
//!   trail;
//! * `lost-context-reread`: a read or command call whose target (file
//!   path, command line, URL) an earlier call read, after a compaction or
//!   prune shadowed that earlier result: the context paid for twice;
//! * `summary-failure`: a compaction bracket that ended with an error, or
//!   a summary that came back empty; retries in one turn are one finding
//!   (error from two failures on);
//! * `overflow`: a request that failed with `CONTEXT_WINDOW_EXCEEDED`, and
//!   whether the recovery worked (not: error);
//! * `cache-churn`: request headers whose system prompt, tool set or
//!   route changed (each breaks the provider's prompt-cache prefix) more
//!   than K times;
//! * `stale-lock`: a `compaction/start` that never ended before the
//!   session was resumed (stale, warn) or that still holds the lock (busy,
//!   error), as `dsh locks` classifies them;
//! * `abandoned-turn`: a turn that never ended: a new turn or lifecycle
//!   began first, crash repair closed it (`interrupted`), or it is still
//!   open and the log has been idle longer than the idle threshold.
//!
//! ```
//! let src = dsh::LogSource::File("samples/compacted.jsonl".into());
//! let h = dsh::health::scan(&src, &dsh::health::HealthOptions::default()).unwrap();
//! for f in &h.findings {
//!     println!("{} {} {:?}: {}", f.severity.as_str(), f.kind.as_str(), f.seqs, f.message);
//! }
//! ```

mod detect;

use crate::lock::LockReport;
use crate::log::LogSource;
use crate::price::PriceTable;
use crate::sessions::{self, Extra, Refused, ScanOptions, Session};

/// What a finding is about.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum FindingKind {
    /// Compactions again and again, or one that did not get below the
    /// threshold.
    CompactionLoop,
    /// A read or command repeated after its earlier result was shadowed.
    LostContextReread,
    /// A failed or empty summary.
    SummaryFailure,
    /// A context-window overflow.
    Overflow,
    /// Header changes breaking the prompt-cache prefix.
    CacheChurn,
    /// A compaction lock left behind or held.
    StaleLock,
    /// A turn that never ended.
    AbandonedTurn,
}

impl FindingKind {
    /// Every kind, in report order.
    const ALL: [FindingKind; 7] = [
        FindingKind::CompactionLoop,
        FindingKind::LostContextReread,
        FindingKind::SummaryFailure,
        FindingKind::Overflow,
        FindingKind::CacheChurn,
        FindingKind::StaleLock,
        FindingKind::AbandonedTurn,
    ];

    /// The stable name (`compaction-loop`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            FindingKind::CompactionLoop => "compaction-loop",
            FindingKind::LostContextReread => "lost-context-reread",
            FindingKind::SummaryFailure => "summary-failure",
            FindingKind::Overflow => "overflow",
            FindingKind::CacheChurn => "cache-churn",
            FindingKind::StaleLock => "stale-lock",
            FindingKind::AbandonedTurn => "abandoned-turn",
        }
    }
}

/// How much a finding matters.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth a look.
    Warn,
    /// Something went wrong.
    Error,
}

impl Severity {
    /// `warn` / `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Warn => "warn",
            Severity::Error => "error",
        }
    }
}

/// What a finding cost.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, schemars::JsonSchema)]
pub struct Cost {
    /// Tokens: provider-reported where requests are counted (the
    /// summariser's, an abandoned turn's, an overflow's failed attempt),
    /// DSH's heuristic for content paid again (a re-read result), uncached
    /// input for a broken cache prefix.
    #[schemars(range(min = 0))]
    pub tokens: f64,
    /// USD of the priced part.
    #[serde(rename = "costUsd")]
    pub usd: f64,
    /// Parts with no price (no entry for their model at their date, or a
    /// time the log does not record).
    pub unpriced: u64,
}

impl Cost {
    /// Add another.
    fn add(&mut self, o: &Cost) {
        self.tokens += o.tokens;
        self.usd += o.usd;
        self.unpriced += o.unpriced;
    }
}

/// One finding.
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct Finding {
    /// What.
    pub kind: FindingKind,
    /// How bad.
    pub severity: Severity,
    /// The events that show it, in log order.
    #[schemars(length(min = 1))]
    pub seqs: Vec<u64>,
    /// One sentence.
    pub message: String,
    /// What it cost.
    pub cost: Cost,
}

/// The thresholds (flags of `dsh health`, these defaults documented in
/// docs/health.md).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Thresholds {
    /// `compaction-loop`: this many landed compactions …
    pub loop_compactions: u64,
    /// … within this many agent requests.
    pub loop_requests: u64,
    /// `lost-context-reread`: only re-read results of at least this many
    /// tokens (DSH's heuristic).
    pub reread_min_tokens: u64,
    /// `cache-churn`: more prefix breaks than this.
    pub churn_breaks: u64,
    /// `abandoned-turn`: a turn still open at the end of the log counts
    /// when the log has been idle this long (ms) at [`HealthOptions::now`].
    #[schemars(with = "u64")]
    pub idle_ms: i64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            loop_compactions: 3,
            loop_requests: 10,
            reread_min_tokens: 100,
            churn_breaks: 2,
            idle_ms: 3_600_000,
        }
    }
}

/// How [`scan`] reads and prices.
#[derive(Debug, Clone)]
pub struct HealthOptions {
    /// The sessions pass (loader options, config: windows and policies).
    pub scan: ScanOptions,
    /// Prices.
    pub prices: PriceTable,
    /// Thresholds.
    pub thresholds: Thresholds,
    /// The time to judge idleness against (epoch ms); `None`: a turn open
    /// at the end is never called abandoned.
    pub now: Option<i64>,
}

impl Default for HealthOptions {
    fn default() -> Self {
        HealthOptions {
            scan: ScanOptions::default(),
            prices: PriceTable::builtin(),
            thresholds: Thresholds::default(),
            now: None,
        }
    }
}

/// One session's findings.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionHealth {
    /// The log file.
    pub file: String,
    /// Session id.
    pub session: String,
    /// The header's `cwd`.
    pub project: Option<String>,
    /// Findings, in log order of their first seq.
    pub findings: Vec<Finding>,
}

impl SessionHealth {
    /// The worst severity, if any finding.
    pub fn worst(&self) -> Option<Severity> {
        self.findings.iter().map(|f| f.severity).max()
    }

    /// The findings' total cost.
    pub(crate) fn cost(&self) -> Cost {
        let mut c = Cost::default();
        for f in &self.findings {
            c.add(&f.cost);
        }
        c
    }
}

/// Read one log and find what hurts it.
pub fn scan(src: &LogSource, opts: &HealthOptions) -> Result<SessionHealth, Refused> {
    scan_with(src, opts, None).map(|(h, _, _)| h)
}

/// [`scan`], also returning the session's summary row and lock report,
/// and showing every stored event to `extra` in the same pass.
pub fn scan_with(
    src: &LogSource,
    opts: &HealthOptions,
    extra: Option<&mut dyn Extra>,
) -> Result<(SessionHealth, Session, LockReport), Refused> {
    let mut fold = detect::Fold::new(extra);
    let (session, locks) = sessions::scan_with(src, &opts.scan, Some(&mut fold))?;
    let findings = fold.finish(&session, &locks, opts);
    let health = SessionHealth {
        file: session.file.clone(),
        session: session.id.clone(),
        project: session.project.clone(),
        findings,
    };
    Ok((health, session, locks))
}

/// One kind's share of a summary.
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct KindSummary {
    /// The kind.
    pub kind: FindingKind,
    /// Findings of it.
    #[schemars(range(min = 1))]
    pub findings: u64,
    /// Of them, errors.
    pub errors: u64,
    /// Sessions with at least one.
    #[schemars(range(min = 1))]
    pub sessions: u64,
    /// What they cost.
    pub cost: Cost,
}

/// One project's share of a summary.
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectSummary {
    /// The project (`None`: sessions without a `cwd`).
    pub project: Option<String>,
    /// Sessions read.
    #[schemars(range(min = 1))]
    pub sessions: u64,
    /// Sessions with a finding.
    #[schemars(range(min = 1))]
    pub with_findings: u64,
    /// Findings.
    #[schemars(range(min = 1))]
    pub findings: u64,
    /// What they cost.
    pub cost: Cost,
}

/// Many sessions rolled up.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Sessions read.
    pub sessions: u64,
    /// Sessions with at least one finding.
    pub with_findings: u64,
    /// Findings.
    pub findings: u64,
    /// Of them, errors.
    pub errors: u64,
    /// What they cost.
    pub cost: Cost,
    /// Per kind, costliest first (kinds with no finding left out).
    pub kinds: Vec<KindSummary>,
    /// Per project with findings, costliest first (then most findings).
    pub projects: Vec<ProjectSummary>,
}

/// Roll sessions up.
pub fn summarise(sessions: &[SessionHealth]) -> Summary {
    let mut s = Summary::default();
    let mut kinds: Vec<KindSummary> = FindingKind::ALL
        .iter()
        .map(|&kind| KindSummary {
            kind,
            findings: 0,
            errors: 0,
            sessions: 0,
            cost: Cost::default(),
        })
        .collect();
    let mut projects: std::collections::BTreeMap<Option<String>, ProjectSummary> =
        Default::default();
    for h in sessions {
        s.sessions += 1;
        let p = projects
            .entry(h.project.clone())
            .or_insert_with(|| ProjectSummary {
                project: h.project.clone(),
                sessions: 0,
                with_findings: 0,
                findings: 0,
                cost: Cost::default(),
            });
        p.sessions += 1;
        if h.findings.is_empty() {
            continue;
        }
        s.with_findings += 1;
        p.with_findings += 1;
        for k in &mut kinds {
            let mine: Vec<&Finding> = h.findings.iter().filter(|f| f.kind == k.kind).collect();
            if !mine.is_empty() {
                k.sessions += 1;
            }
            for f in mine {
                k.findings += 1;
                k.errors += u64::from(f.severity == Severity::Error);
                k.cost.add(&f.cost);
            }
        }
        for f in &h.findings {
            s.findings += 1;
            s.errors += u64::from(f.severity == Severity::Error);
            s.cost.add(&f.cost);
            p.findings += 1;
            p.cost.add(&f.cost);
        }
    }
    let costliest =
        |a: &Cost, b: &Cost| b.usd.total_cmp(&a.usd).then(b.tokens.total_cmp(&a.tokens));
    kinds.retain(|k| k.findings > 0);
    kinds.sort_by(|a, b| costliest(&a.cost, &b.cost).then(b.findings.cmp(&a.findings)));
    s.kinds = kinds;
    let mut projects: Vec<ProjectSummary> =
        projects.into_values().filter(|p| p.findings > 0).collect();
    projects.sort_by(|a, b| costliest(&a.cost, &b.cost).then(b.findings.cmp(&a.findings)));
    s.projects = projects;
    s
}
