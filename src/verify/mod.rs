//! `dsh verify`: audit a session log against every rule of compaction spec §7
//! (plus the reference's command-pairing companion), reporting **all**
//! violations, each with a stable [`CheckId`], a [`Severity`], the file, seq,
//! line and one sentence.
//!
//! The checks run as an [`Observer`] over the loader's single streaming pass,
//! so memory follows the surface and the open brackets, not the log. After
//! the pass, [`Verifier::finish`] feeds the `session/end-seed` marker the
//! reference's seeded session appends in memory (it makes an unmatched
//! `compaction/start` stale, which changes compaction-invariant outcomes) and
//! runs the end-of-log checks.
//!
//! A log the loader refuses is *refused*: its single finding is the refusal,
//! mapped to the load-boundary check it broke (§7.1, §7.2; the loader stops at
//! the first).
//!
//! Where the reference companions (`dsh-session`, `dsh-compaction`,
//! `dsh-commands`) stop at their first violation, the verifier records the
//! violation and carries on with the state the companion's transition would
//! have produced, so later violations are found too; the first error per
//! package is exactly the reference's ([`Report::reference_violations`]).
//! The companions' own wording is kept for those checks.
//!
//! The verdict rule is documented on `check`: error-severity findings are
//! violations, warnings are not (unless denied).
//!
//! The token meter ([`crate::meter::Meter`], the reference's `measure()`)
//! and its claim-fold projections ride along as one more observer of the
//! same pass (§7.5, V-MTR-*). The content half of V-PRV-10 re-runs the
//! pruner ([`crate::prune`]) after the pass on the original of every pruned
//! tool result, re-reading just those two lines per pair.
//!
//! ```
//! use dsh::verify::{Verdict, verify};
//! let src = dsh::LogSource::File("samples/verify-clean.jsonl".into());
//! let report = verify(&src, &dsh::LoadOptions::default());
//! assert_eq!(report.verdict(false), Verdict::Clean);
//! ```

mod check;
mod commands;
mod compaction;
pub(crate) mod js;
mod load;
mod meter;
mod provenance;
mod session;

use std::collections::HashSet;

pub use check::{CheckId, REFERENCE_COMPANIONS, Severity};
use load::classify_refusal;

use crate::event::Event;
use crate::log::{
    ChunkRun, Folded, LoadError, LoadOptions, LoadedLog, LogSource, Observer, RunFacts,
};
use crate::prune::PruneConfig;

/// One violated rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// Which check.
    pub check: CheckId,
    /// Its severity (the check's).
    pub severity: Severity,
    /// The log, as given (`-` for standard input).
    pub file: String,
    /// The event's seq, when the finding belongs to one.
    pub seq: Option<u64>,
    /// The 1-based physical line of that event (the header is line 1); none
    /// for events not in the file (crash closers, the end-seed marker).
    pub line: Option<u64>,
    /// The event is not in the file: a crash-repair closer or the in-memory
    /// `session/end-seed` marker.
    pub synthetic: bool,
    /// One sentence; the reference's wording where it has one.
    pub message: String,
    order: u64,
}

/// A log's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// No finding that counts.
    Clean,
    /// At least one finding that counts.
    Violations,
    /// The loader refused the log (or it could not be read).
    Refused,
}

impl Verdict {}

/// One entry of the reference's `violations` list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReferenceViolation {
    /// The companion package.
    pub package: &'static str,
    /// `invariant violated by "<package>": <message>`.
    pub message: String,
}

/// Everything `dsh verify` learnt about one log.
#[derive(Debug, Clone)]
pub struct Report {
    /// The log, as given.
    pub file: String,
    /// The session id of its header (none when the log was refused).
    pub session: Option<String>,
    /// Every finding, in log order (seq, then the order the checks ran).
    pub findings: Vec<Finding>,
    /// Why the loader refused the log, when it did.
    pub refusal: Option<LoadError>,
    /// Events checked: stored events plus crash closers (0 when refused).
    pub events: u64,
    /// How many of those were synthetic closers.
    pub closers: u64,
    /// Whether the in-memory `session/end-seed` marker was checked too.
    pub end_seed_appended: bool,
    /// The loader's notes on an accepted log (torn tail, closers, upgrades,
    /// tolerances).
    pub notes: Vec<String>,
}

impl Report {
    /// A refused log.
    pub fn refused(file: impl Into<String>, e: LoadError) -> Report {
        let file = file.into();
        let check = classify_refusal(&e);
        let finding = |check: CheckId, message: String, order: u64| Finding {
            check,
            severity: check.severity(),
            file: file.clone(),
            seq: e.at.seq,
            line: e.at.line,
            synthetic: false,
            message,
            order,
        };
        let mut findings = vec![finding(check, e.message.clone(), 0)];
        if let Some(m) = load::replace_range_refusal(&e) {
            findings.push(finding(CheckId::Mtr3, m, 1));
        }
        Report {
            file,
            session: None,
            findings,
            refusal: Some(e),
            events: 0,
            closers: 0,
            end_seed_appended: false,
            notes: Vec::new(),
        }
    }

    /// The verdict. Errors always count; warnings count with `deny_warnings`.
    pub fn verdict(&self, deny_warnings: bool) -> Verdict {
        if self.refusal.is_some() {
            return Verdict::Refused;
        }
        let counts = |f: &Finding| deny_warnings || f.severity == Severity::Error;
        if self.findings.iter().any(counts) {
            Verdict::Violations
        } else {
            Verdict::Clean
        }
    }

    /// How many findings have this severity.
    pub fn count(&self, severity: Severity) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity == severity)
            .count()
    }

    /// What the reference's verification reports for this (loaded) log: the
    /// first violation of each invariant companion, in companion order.
    pub fn reference_violations(&self) -> Vec<ReferenceViolation> {
        let mut out = Vec::new();
        for pkg in REFERENCE_COMPANIONS {
            if let Some(f) = self
                .findings
                .iter()
                .find(|f| f.check.package() == Some(pkg))
            {
                out.push(ReferenceViolation {
                    package: pkg,
                    message: format!("invariant violated by \"{pkg}\": {}", f.message),
                });
            }
        }
        out
    }
}

/// What is wrong with the end of a log a crash (or a writer mid-write)
/// damaged, with the remedy: a cut last Zstandard frame, a torn last line,
/// a region the loader drops.
pub fn damaged_end(log: &LoadedLog) -> Option<String> {
    if let Some(c) = &log.cut_frame {
        return Some(format!(
            "the last Zstandard frame is cut short ({} byte(s) at file byte {}): a writer crashed or is still writing; its last whole frame ends at file byte {}: `dsh repair` cuts it back",
            c.file_len - c.whole_end,
            c.whole_end,
            c.whole_end
        ));
    }
    if let Some(d) = &log.dropped {
        return Some(format!(
            "a damaged region the loader drops ({} line(s) from line {}: {}): a writer crashed or is still writing; `dsh repair` cuts the log back to byte {}",
            d.lines, d.line, d.reason, log.committed_len
        ));
    }
    log.torn.map(|t| {
        format!(
            "a torn last line ({} byte(s) without a newline at byte {}): a writer crashed or is still writing; `dsh repair` cuts it off",
            t.len, t.offset
        )
    })
}

/// Where the current event sits.
#[derive(Debug, Clone, Copy)]
pub(crate) struct At {
    pub seq: u64,
    pub line: Option<u64>,
    pub synthetic: bool,
}

impl At {
    fn of(ev: &Event<'_>, synthetic: bool) -> At {
        At {
            seq: ev.seq,
            line: (ev.line > 0).then_some(ev.line),
            synthetic,
        }
    }
}

/// Collects findings in emission order.
pub(crate) struct Sink {
    file: String,
    findings: Vec<Finding>,
    next: u64,
}

impl Sink {
    /// A finding for `at`, not yet recorded (for deferred findings).
    fn make(&mut self, check: CheckId, at: At, message: impl Into<String>) -> Finding {
        self.next += 1;
        Finding {
            check,
            severity: check.severity(),
            file: self.file.clone(),
            seq: Some(at.seq),
            line: at.line,
            synthetic: at.synthetic,
            message: message.into(),
            order: self.next,
        }
    }

    /// Record a finding for `at`.
    fn emit(&mut self, check: CheckId, at: At, message: impl Into<String>) {
        let f = self.make(check, at, message);
        self.push(f);
    }

    /// Record a finding about the whole log (no event).
    fn emit_log(&mut self, check: CheckId, message: impl Into<String>) {
        self.next += 1;
        let f = Finding {
            check,
            severity: check.severity(),
            file: self.file.clone(),
            seq: None,
            line: None,
            synthetic: false,
            message: message.into(),
            order: self.next,
        };
        self.findings.push(f);
    }

    /// Record a finding made earlier. An identical finding for the same
    /// event is recorded once.
    fn push(&mut self, f: Finding) {
        let dup = self
            .findings
            .iter()
            .rev()
            .take_while(|g| g.seq == f.seq)
            .any(|g| g.check == f.check && g.message == f.message);
        if !dup {
            self.findings.push(f);
        }
    }
}

/// How to verify.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VerifyOptions {
    /// The pruner budgets V-PRV-10 re-runs the pruner with (the reference's
    /// defaults unless configured).
    pub pruner: PruneConfig,
}

/// The streaming auditor: feed it to [`crate::log::load`], then call
/// [`Verifier::finish`] with the loaded log.
pub struct Verifier {
    sink: Sink,
    session: session::SessionTrace,
    compaction: compaction::CompactionTrace,
    commands: commands::CommandTrace,
    provenance: provenance::Provenance,
    meter: meter::MeterTrace,
    options: VerifyOptions,
}

impl Verifier {
    /// A verifier whose findings name `file`, with the default options.
    pub fn new(file: impl Into<String>) -> Verifier {
        Verifier::with_options(file, VerifyOptions::default())
    }

    /// A verifier whose findings name `file`.
    fn with_options(file: impl Into<String>, options: VerifyOptions) -> Verifier {
        Verifier {
            sink: Sink {
                file: file.into(),
                findings: Vec::new(),
                next: 0,
            },
            session: session::SessionTrace::default(),
            compaction: compaction::CompactionTrace::default(),
            commands: commands::CommandTrace::default(),
            provenance: provenance::Provenance::default(),
            meter: meter::MeterTrace::default(),
            options,
        }
    }

    fn check_event(&mut self, ev: &Event<'_>, folded: &Folded<'_>) {
        let at = At::of(ev, folded.synthetic);
        self.session.observe(ev, at, &mut self.sink);
        self.compaction.observe(ev, at, &mut self.sink);
        self.commands.observe(ev, at, &mut self.sink);
        self.provenance.observe(ev, folded, at, &mut self.sink);
        self.meter.observe(ev, folded, at, &mut self.sink);
    }

    /// Check the end-seed marker the reference appends in memory, run the
    /// end-of-log checks and return the report.
    pub fn finish(mut self, log: &LoadedLog) -> Report {
        log.with_end_seed(|marker, folded| self.check_event(marker, folded));
        if let Some(m) = damaged_end(log) {
            self.sink.emit_log(CheckId::Tail1, m);
        }
        self.compaction.finish(&mut self.sink);
        self.provenance.finish(&mut self.sink);
        self.provenance
            .check_prune_contents(log, &self.options.pruner, &mut self.sink);
        let mut notes = log.warnings.clone();
        notes.extend(self.meter.finish(log, &mut self.sink));
        let mut findings = self.sink.findings;
        findings.sort_by_key(|f| (f.seq.unwrap_or(u64::MAX), f.order));
        let mut seen = HashSet::new();
        findings.retain(|f| seen.insert((f.seq, f.check, f.message.clone())));
        Report {
            file: self.sink.file,
            session: Some(log.header.id.clone()),
            findings,
            refusal: None,
            events: log.event_count(),
            closers: log.closers.len() as u64,
            end_seed_appended: log.end_seed_appended(),
            notes,
        }
    }
}

impl Observer for Verifier {
    fn event(&mut self, ev: &Event<'_>, folded: &Folded<'_>) {
        self.check_event(ev, folded);
    }

    /// A valid packed row's delta chunks, taken whole when no check would
    /// report one of them (the usual case): the traces then move as the
    /// chunks, one by one, would have moved them. Otherwise they come one
    /// by one and the findings name each chunk. A valid chunk line is taken
    /// from its facts on the same terms.
    fn chunks(&mut self, run: &ChunkRun<'_>, folded: &Folded<'_>) {
        // The compaction and command traces ignore chunks; a chunk is not
        // on the surface, so provenance only sees whether a prune is waiting.
        let labels = match run.facts {
            RunFacts::Row(f) => Some((f.turn, f.step)),
            RunFacts::Line(f) => Some((f.turn, f.step)),
            RunFacts::Counted | RunFacts::Event => None,
        };
        let takes = labels.is_some_and(|(turn, step)| {
            self.session.takes_chunks(run.seq0, turn, step) && self.provenance.takes_chunks()
        });
        if !takes {
            return run.each_event(folded, |ev, f| self.check_event(ev, f));
        }
        self.session.chunks_taken(run.last_seq());
        self.meter.chunks_taken(run, folded);
    }
}

/// Load and audit one log. Never fails: a refusal is a [`Verdict::Refused`]
/// report.
pub fn verify(source: &LogSource, opts: &LoadOptions) -> Report {
    verify_with(source, opts, &VerifyOptions::default())
}

/// [`verify`] with options.
pub fn verify_with(source: &LogSource, opts: &LoadOptions, options: &VerifyOptions) -> Report {
    let mut v = Verifier::with_options(source.display(), *options);
    match crate::log::load(source, opts, &mut v) {
        Ok(log) => v.finish(&log),
        Err(e) => Report::refused(source.display(), e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{LoadOptions, LogSource, load};
    use crate::meter::Meter;

    /// `O`, given chunk lines as facts (`take`) or as their events; counts
    /// the lines given as facts.
    struct Lines<O> {
        inner: O,
        take: bool,
        taken: u64,
    }

    impl<O: Observer> Observer for Lines<O> {
        fn event(&mut self, ev: &Event<'_>, folded: &Folded<'_>) {
            self.inner.event(ev, folded);
        }
        fn chunks(&mut self, run: &ChunkRun<'_>, folded: &Folded<'_>) {
            let line = matches!(run.facts, RunFacts::Line(_));
            if line && !self.take {
                return run.each_event(folded, |ev, f| self.inner.event(ev, f));
            }
            self.taken += line as u64;
            self.inner.chunks(run, folded);
        }
    }

    fn samples() -> Vec<LogSource> {
        let mut logs: Vec<_> = std::fs::read_dir("samples")
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.to_string_lossy().ends_with(".jsonl")
                    || p.extension().is_some_and(|x| x == "zstd")
            })
            .map(LogSource::File)
            .collect();
        logs.sort_by_key(|s| s.display());
        logs
    }

    /// Load `src` with `make()`'s observer taking chunk lines or not; gives
    /// what `finish` makes of each (or the refusal) and the lines taken.
    fn both<O: Observer, T: std::fmt::Debug>(
        src: &LogSource,
        make: impl Fn() -> O,
        finish: impl Fn(O, &crate::log::LoadedLog) -> T,
    ) -> (String, String, u64) {
        let run = |take: bool| {
            let mut o = Lines {
                inner: make(),
                take,
                taken: 0,
            };
            let out = match load(src, &LoadOptions::default(), &mut o) {
                Ok(log) => format!("{:?}", finish(o.inner, &log)),
                Err(e) => format!("refused: {e}"),
            };
            (out, o.taken)
        };
        let ((fast, taken), (slow, none)) = (run(true), run(false));
        assert_eq!(none, 0);
        (fast, slow, taken)
    }

    #[test]
    fn chunk_lines_taken_as_facts_verify_and_measure_as_their_events_do() {
        let mut taken = (0, 0);
        for src in samples() {
            let (fast, slow, n) = both(&src, || Verifier::new("log"), |v, log| v.finish(log));
            assert_eq!(fast, slow, "verify {}", src.display());
            taken.0 += n;
            let (fast, slow, n) = both(
                &src,
                || Meter::new(None),
                |m, log| m.finish(log).map_err(|e| e.to_string()),
            );
            assert_eq!(fast, slow, "measure {}", src.display());
            taken.1 += n;
        }
        // The samples' chunk lines, nearly all of them taken.
        assert!(taken.0 > 150 && taken.1 > 150, "{taken:?}");
    }
}
