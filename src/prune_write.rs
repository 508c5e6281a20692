//! `dsh prune`'s write: the pruner's plan ([`crate::prune`]) on the log a
//! writer holds, the lifecycle it joins ([`crate::lifecycle`]), what stands
//! in the way of a real write, and the write itself (or, dry, the writer's
//! check of the batch).
//!
//! ```no_run
//! use dsh::append::{AppendOptions, AppendTarget, Appender};
//! use dsh::prune::PruneConfig;
//! use dsh::prune_write::{Outcome, Request, prepare};
//! let src = dsh::LogSource::File("session.jsonl".into());
//! let mut noop = |_: &dsh::Event<'_>, _: &dsh::log::Folded<'_>| {};
//! let mut app = Appender::open(&src, AppendTarget::DryRun, &AppendOptions::default(), &mut noop)?;
//! let req = Request { resume: false, allow_closed_turn: false, time: 0.0, encodings: vec![] };
//! let mut run = prepare(&mut app, &PruneConfig::default(), &req)?;
//! match run.write(&mut app, true)? {
//!     Outcome::Checked { bytes } => println!("would append {bytes} bytes"),
//!     other => println!("{other:?}"),
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::sync::Arc;

use crate::append::{AppendError, Appender, Blocker, Lifecycle};
use crate::event::OwnedEvent;
use crate::lifecycle::{self, Writer};
use crate::log::LoadedLog;
use crate::meter::tokenizer::{self, Counter, Encoding};
use crate::prune::{PruneConfig, PruneError, PrunePlan};
use crate::surface::project;

/// What a prune run is asked to do.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// Start a new lifecycle even on an open turn (`--resume`).
    pub resume: bool,
    /// Write even though no turn is open (`--allow-closed-turn`).
    pub allow_closed_turn: bool,
    /// The time the new events are stamped with (epoch milliseconds).
    pub time: f64,
    /// BPE encodings to count the savings with, each once.
    pub encodings: Vec<Encoding>,
}

/// Why a prune run could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// The writer refused the lifecycle.
    #[error(transparent)]
    Append(#[from] AppendError),
    /// The pruner stopped.
    #[error(transparent)]
    Prune(#[from] PruneError),
    /// The log could not be read again for a BPE count.
    #[error(transparent)]
    Count(#[from] crate::log::LoadError),
}

/// A prepared run: the plan, its batch, and what stands in the way.
pub struct PruneRun {
    /// The lifecycle the write joins.
    pub lifecycle: Lifecycle,
    /// The plan dsh writes; its events moved into [`Self::batch`].
    pub plan: PrunePlan,
    /// The reference's answer, pruneSession on the session as it resumes,
    /// when it differs from `plan` (an open turn continued: the same pairs
    /// at other seqs); `None` when `plan` is it.
    pub reference: Option<PrunePlan>,
    /// The closers and end-seed written first (empty when nothing is pruned).
    pub prefix: Vec<OwnedEvent>,
    /// `prefix` then the plan's events: what is appended (shared, so that
    /// the writer's surface keeps them without a copy).
    pub batch: Vec<Arc<OwnedEvent>>,
    /// Why a real write does not or would not happen, if it would not.
    pub refused: Option<String>,
    /// A live compaction lock holds the log.
    pub busy: bool,
    /// BPE savings, one per requested encoding.
    pub bpe: Vec<BpeSavings>,
}

/// What [`PruneRun::write`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing to prune: nothing written, not even a new lifecycle.
    Nothing,
    /// A dry run: the writer checked the batch (`bytes` it would append;
    /// 0 when a compaction lock leaves nothing to check).
    Checked {
        /// Bytes the batch takes.
        bytes: u64,
    },
    /// Written.
    Written {
        /// Bytes appended.
        bytes: u64,
    },
    /// A real write refused (a closed turn, a torn tail, damage): nothing
    /// written.
    Refused(String),
    /// A live compaction lock holds the log: nothing written.
    Busy(String),
}

/// The refusal for a write outside an open turn.
fn closed_turn_refusal(app: &Appender) -> String {
    let why = if app.file_turn_open() {
        "--resume appends crash-repair closers that close the open turn first"
    } else {
        "this log's last turn is closed"
    };
    format!(
        "the reference prunes only inside an open turn, but {why} (its session invariant would reject the replacements; `dsh verify` reports V-SESS-5); pass --allow-closed-turn to write anyway"
    )
}

/// Choose the lifecycle, plan the pass on the log `app` holds, count the
/// BPE savings and decide what stands in the way of a real write.
pub fn prepare(
    app: &mut Appender,
    cfg: &PruneConfig,
    req: &Request,
) -> Result<PruneRun, PrepareError> {
    let lifecycle = lifecycle::apply(app, Writer::Prune, req.resume)?;
    let time = req.time;
    let base_seq = app.next_seq() + app.lifecycle_prefix(time).len() as u64;
    let mut plan = crate::prune::plan_on(app.log(), app.surface(), base_seq, cfg, time)?;
    // The plan read every result it rewrites: the write check need not.
    app.remember_originals(&plan.originals);
    let reference = match lifecycle {
        Lifecycle::Continue => Some(crate::prune::plan(app.log(), cfg, time)?),
        Lifecycle::Resume => None,
    };
    let bpe = req
        .encodings
        .iter()
        .map(|&enc| bpe_savings(app.log(), &plan, enc))
        .collect::<Result<_, _>>()?;
    let prefix = if plan.pruned.is_empty() {
        Vec::new()
    } else {
        app.lifecycle_prefix(time)
    };
    // The plan's events move into the batch (`bpe_savings`, the one reader
    // of them in the plan, ran above).
    let batch: Vec<Arc<OwnedEvent>> = prefix
        .iter()
        .cloned()
        .chain(std::mem::take(&mut plan.events))
        .map(Arc::new)
        .collect();
    let refused = if plan.pruned.is_empty() {
        None
    } else if let Some(b) = app.blockers().first() {
        Some(b.to_string())
    } else if !app.turn_open() && !req.allow_closed_turn {
        Some(closed_turn_refusal(app))
    } else {
        None
    };
    let busy = app
        .blockers()
        .iter()
        .any(|b| matches!(b, Blocker::CompactionLock { .. }));
    Ok(PruneRun {
        lifecycle,
        plan,
        reference,
        prefix,
        batch,
        refused,
        busy,
        bpe,
    })
}

impl PruneRun {
    /// The plan's events, in the batch.
    pub fn appended(&self) -> &[Arc<OwnedEvent>] {
        &self.batch[self.prefix.len()..]
    }

    /// Write the batch, or (`dry_run`) have the writer check it; a refused
    /// or busy write writes nothing.
    pub fn write(&mut self, app: &mut Appender, dry_run: bool) -> Result<Outcome, AppendError> {
        if self.plan.pruned.is_empty() {
            return Ok(Outcome::Nothing);
        }
        if dry_run {
            // Validate the batch as the writer would (a dry run writes nothing).
            let bytes = if self.busy {
                0
            } else {
                app.append_shared(&self.batch)?.bytes
            };
            return Ok(Outcome::Checked { bytes });
        }
        match &self.refused {
            Some(why) if self.busy => Ok(Outcome::Busy(why.clone())),
            Some(why) => Ok(Outcome::Refused(why.clone())),
            None => Ok(Outcome::Written {
                bytes: app.append_shared(&self.batch)?.bytes,
            }),
        }
    }
}

/// BPE token counts of the pruned results, before and after, with one
/// encoding (the text the heuristic prices, as `dsh measure --tokenizer`
/// counts it).
#[derive(Debug, Clone)]
pub struct BpeSavings {
    /// The encoding.
    pub encoding: Encoding,
    /// Whole current surface before pruning.
    pub surface_before: u64,
    /// Per pruned result: (original seq, before, after).
    pub pruned: Vec<(u64, u64, u64)>,
}

impl BpeSavings {
    /// Tokens saved over the pruned results.
    pub fn saved(&self) -> u64 {
        self.pruned
            .iter()
            .map(|&(_, b, a)| b.saturating_sub(a))
            .sum()
    }

    /// The whole surface after pruning.
    pub fn surface_after(&self) -> u64 {
        let after: u64 = self.pruned.iter().map(|p| p.2).sum();
        let before: u64 = self.pruned.iter().map(|p| p.1).sum();
        self.surface_before + after - before
    }
}

/// Count the savings of `plan` (its events still in it) with `enc`.
fn bpe_savings(
    log: &LoadedLog,
    plan: &PrunePlan,
    enc: Encoding,
) -> Result<BpeSavings, crate::log::LoadError> {
    // The surface as it stands (the pruned originals are nodes of it).
    let counts = tokenizer::count(log, None, enc)?;
    let mut counter = Counter::new(enc);
    let mut pruned = Vec::with_capacity(plan.pruned.len());
    for p in &plan.pruned {
        let before = counts
            .nodes
            .iter()
            .find(|n| n.seq == p.original_seq)
            .map_or(0, |n| n.tokens);
        let after = plan
            .events
            .iter()
            .find(|e| e.seq == p.replacement_seq)
            .and_then(|e| project(e))
            .map_or(0, |m| counter.count_blocks(m.get("content")));
        pruned.push((p.original_seq, before, after));
    }
    Ok(BpeSavings {
        encoding: enc,
        surface_before: counts.message_tokens,
        pruned,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::append::{AppendOptions, AppendTarget};

    /// A copy of a sample log, held by a writer.
    fn held(dir: &std::path::Path, sample: &str, target: AppendTarget) -> Appender {
        let path = dir.join(sample);
        let from = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("samples")
            .join(sample);
        std::fs::copy(from, &path).unwrap();
        let src = crate::LogSource::File(path);
        let mut noop = |_: &crate::Event<'_>, _: &crate::log::Folded<'_>| {};
        Appender::open(&src, target, &AppendOptions::default(), &mut noop).unwrap()
    }

    fn outcome(sample: &str, target: AppendTarget, req: &Request) -> (Outcome, PruneRun, Vec<u8>) {
        let dir = tempfile::tempdir().unwrap();
        let dry = matches!(target, AppendTarget::DryRun);
        let mut app = held(dir.path(), sample, target);
        let mut run = prepare(&mut app, &PruneConfig::default(), req).unwrap();
        let o = run.write(&mut app, dry).unwrap();
        if matches!(o, Outcome::Written { .. }) {
            app.finish().unwrap();
        }
        (o, run, std::fs::read(dir.path().join(sample)).unwrap())
    }

    #[test]
    fn a_closed_turn_is_refused_unless_allowed_and_a_dry_run_is_checked() {
        let sample = "prune-closed.jsonl";
        let original = std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("samples")
                .join(sample),
        )
        .unwrap();
        let req = Request::default();
        let (o, run, after) = outcome(sample, AppendTarget::InPlace, &req);
        let Outcome::Refused(why) = o else {
            panic!("{o:?}")
        };
        assert!(why.contains("--allow-closed-turn"), "{why}");
        assert_eq!(run.refused.as_deref(), Some(why.as_str()));
        assert!(!run.busy);
        assert_eq!(after, original, "a refused write writes nothing");
        // A dry run reports the refusal but still has the writer check the batch.
        let (o, run, after) = outcome(sample, AppendTarget::DryRun, &req);
        assert!(
            matches!(o, Outcome::Checked { bytes } if bytes > 0),
            "{o:?}"
        );
        assert!(run.refused.is_some());
        assert_eq!(after, original);
        // Allowed: written, in a new lifecycle (the end-seed first).
        let allowed = Request {
            allow_closed_turn: true,
            ..Request::default()
        };
        let (o, run, after) = outcome(sample, AppendTarget::InPlace, &allowed);
        let Outcome::Written { bytes } = o else {
            panic!("{o:?}")
        };
        assert_eq!(run.lifecycle, Lifecycle::Resume);
        assert_eq!(run.refused, None);
        assert_eq!(after.len() as u64, original.len() as u64 + bytes);
        assert_eq!(run.batch.len(), run.prefix.len() + run.appended().len());
    }

    #[test]
    fn an_open_turn_is_continued_and_nothing_to_prune_writes_nothing() {
        let (o, run, _) = outcome(
            "prune-open-turn.jsonl",
            AppendTarget::DryRun,
            &Request::default(),
        );
        assert!(matches!(o, Outcome::Checked { .. }), "{o:?}");
        assert_eq!(run.lifecycle, Lifecycle::Continue);
        assert!(run.prefix.is_empty() && run.reference.is_some());
        let (o, run, _) = outcome(
            "verify-clean.jsonl",
            AppendTarget::InPlace,
            &Request::default(),
        );
        assert_eq!(o, Outcome::Nothing);
        assert!(run.batch.is_empty() && run.refused.is_none());
    }
}
