//! The live view a compaction works on: the log held by the append-only
//! writer ([`crate::append::Appender`]) with the token meter
//! ([`crate::meter::Meter`]) folded alongside, both kept current as the
//! compaction appends.
//!
//! The lifecycle follows the log's tail ([`crate::lifecycle::decide`]):
//!
//! * final turn **open** → [`Lifecycle::Continue`]: automatic compaction
//!   writes where the interrupted agent would have, inside that turn; no
//!   crash-repair closers, no `session/end-seed`. The view (surface, meter)
//!   is the stored log without closers.
//! * final turn **closed** → [`Lifecycle::Resume`]: manual compaction is
//!   maintenance of a resumed session; the first batch starts with the
//!   `session/end-seed` marker when the log does not already end with one.

use std::path::PathBuf;

use crate::append::{AppendError, AppendOptions, AppendTarget, Appender, Blocker, Lifecycle};
use crate::event::{Event, Kind, OwnedEvent};
use crate::json::Value;
use crate::lock::LockReport;
use crate::log::{ChunkRun, Folded, LogSource, Observer};
use crate::meter::{Measurement, Meter, MeterError};
use crate::request_header::HeaderFold;
use crate::surface::{NodeBody, Surface, into_projected};

/// Why a session could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The writer refused the log (unreadable, invalid, busy, ...).
    #[error(transparent)]
    Append(#[from] AppendError),
    /// The token meter cannot replay the log (compaction §1.7).
    #[error("{0} (seq {seq})", seq = .0.seq())]
    Meter(MeterError),
}

/// Why a surface node could not be read back from the log (not a node, the
/// log changed under the reader, its line unreadable).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct ReadBackError(pub String);

/// Surface nodes' lines read back from the log ([`Session::node_lines`]).
pub(crate) struct NodeLines {
    lines: Vec<NodeLine>,
    /// The stretch of a plain log file the lines lie in.
    map: Option<crate::log::MappedSpans>,
}

enum NodeLine {
    /// A line of a plain log, in the map.
    Mapped { seq: u64, offset: u64, len: u32 },
    /// A line of an artifact, decompressed.
    Read { seq: u64, bytes: Vec<u8> },
    /// A node the surface holds in memory.
    Owned(std::sync::Arc<OwnedEvent>),
}

impl NodeLines {
    /// The nodes' derived messages, in order (nodes that derive no message
    /// are skipped), parsed on every core. They borrow the lines' text: a
    /// compaction's range is most of a log, and copying it all again was
    /// a tenth of the command's work.
    pub(crate) fn messages(&self) -> Result<Vec<Value<'_>>, ReadBackError> {
        let changed = |seq: u64| {
            ReadBackError(format!(
                "the log changed while it was being read (seq {seq})"
            ))
        };
        // Items are references, so that what the closure gives back
        // borrows `self`, not the item.
        let lines: Vec<&NodeLine> = self.lines.iter().collect();
        let parsed = crate::par::map_in_order(&lines, |&line, _: &mut ()| {
            let (seq, bytes) = match line {
                NodeLine::Owned(ev) => {
                    return Ok(crate::surface::project(ev).map(|m| m.to_owned_value()));
                }
                NodeLine::Read { seq, bytes } => (*seq, &bytes[..]),
                NodeLine::Mapped { seq, offset, len } => {
                    let map = self.map.as_ref().ok_or_else(|| changed(*seq))?;
                    (
                        *seq,
                        map.get(*offset, *len as usize)
                            .ok_or_else(|| changed(*seq))?,
                    )
                }
            };
            match crate::log::parse_node_line(bytes, seq) {
                Ok(ev) => Ok(into_projected(ev)),
                Err(e) => Err(ReadBackError(e.to_string())),
            }
        });
        let mut out = Vec::with_capacity(parsed.len());
        for m in parsed {
            out.extend(m?);
        }
        Ok(out)
    }
}

/// The open turn, from the file's events and the appends.
#[derive(Debug, Default, Clone, Copy)]
struct Tracker {
    open_turn: Option<f64>,
}

impl Tracker {
    fn observe(&mut self, ev: &Event<'_>) {
        match ev.kind {
            Kind::TurnStart => self.open_turn = ev.turn(),
            Kind::TurnEnd => self.open_turn = None,
            _ => {}
        }
    }
}

/// Feeds the stored events (never the synthetic closers) to the meter and
/// the tracker.
struct Watch<'a> {
    meter: &'a mut Meter,
    tracker: &'a mut Tracker,
}

impl Observer for Watch<'_> {
    fn event(&mut self, ev: &Event<'_>, folded: &Folded<'_>) {
        if folded.synthetic {
            return;
        }
        self.tracker.observe(ev);
        self.meter.event(ev, folded);
    }

    /// Chunks open and close no turn: the meter takes them.
    fn chunks(&mut self, run: &ChunkRun<'_>, folded: &Folded<'_>) {
        self.meter.chunks(run, folded);
    }
}

/// The session being compacted.
pub struct Session {
    app: Appender,
    meter: Meter,
    tracker: Tracker,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id())
            .field("lifecycle", &self.lifecycle())
            .field("nodes", &self.surface().nodes.len())
            .field("next_seq", &self.next_seq())
            .finish()
    }
}

impl Session {
    /// Lock (unless `target` is a dry run), load, validate and meter the log,
    /// and choose the lifecycle from its tail. `opts.lifecycle` is ignored:
    /// the tail decides.
    pub fn open(
        source: &LogSource,
        target: AppendTarget,
        opts: &AppendOptions,
    ) -> Result<Session, OpenError> {
        match Session::open_with(source, target.clone(), opts, Meter::new(None)) {
            // Repeated step labels: measure again keeping every chunk.
            Err(OpenError::Meter(MeterError::NeedsAllChunks { .. })) => Session::open_with(
                source,
                target,
                opts,
                Meter::new(None).retaining_all_chunks(),
            ),
            r => r,
        }
    }

    fn open_with(
        source: &LogSource,
        target: AppendTarget,
        opts: &AppendOptions,
        mut meter: Meter,
    ) -> Result<Session, OpenError> {
        let mut tracker = Tracker::default();
        let mut app = Appender::open(
            source,
            target,
            opts,
            &mut Watch {
                meter: &mut meter,
                tracker: &mut tracker,
            },
        )?;
        if let Some(e) = meter.error() {
            return Err(OpenError::Meter(e.clone()));
        }
        crate::lifecycle::apply(&mut app, crate::lifecycle::Writer::Compact, false)?;
        Ok(Session {
            app,
            meter,
            tracker,
        })
    }

    /// Session id (header `id`).
    pub(crate) fn id(&self) -> &str {
        &self.app.log().header.id
    }

    /// The writer.
    pub fn appender(&self) -> &Appender {
        &self.app
    }

    /// Resume (manual) or Continue (automatic).
    pub fn lifecycle(&self) -> Lifecycle {
        self.app.lifecycle()
    }

    /// Whether this is a dry run (validates and folds, writes nothing).
    pub fn is_dry_run(&self) -> bool {
        *self.app.target() == AppendTarget::DryRun
    }

    /// What a real write would refuse (dry runs report; real runs refused
    /// these at open, except the compaction lock).
    pub fn blockers(&self) -> &[Blocker] {
        self.app.blockers()
    }

    /// The current surface (the file's, without closers under Continue,
    /// plus the appends so far).
    pub(crate) fn surface(&self) -> &Surface {
        self.app.surface()
    }

    /// The seq the next planned event gets: after the appends so far and
    /// the lifecycle prefix still to be written.
    pub(crate) fn next_seq(&self) -> u64 {
        self.app.next_seq() + self.app.lifecycle_prefix(0.0).len() as u64
    }

    /// The request-header fold of the loaded log (compaction writes none).
    pub(crate) fn headers(&self) -> &HeaderFold {
        &self.app.log().headers
    }

    /// The open turn number (Continue), or `None`.
    pub(crate) fn open_turn(&self) -> Option<f64> {
        self.tracker.open_turn
    }

    /// The compaction-lock scan, own appends included.
    pub(crate) fn lock(&self) -> LockReport {
        self.app.compaction_lock()
    }

    /// `measure()` now (compaction §1.6), without re-reading the log.
    pub(crate) fn measure(&self) -> Result<Measurement, MeterError> {
        self.meter.snapshot(self.app.surface())
    }

    /// `measure().totalTokens` now.
    pub(crate) fn total_tokens(&self) -> Result<f64, MeterError> {
        self.measure().map(|m| m.total_tokens)
    }

    /// The full event of a current surface node.
    #[cfg(test)]
    fn node_event(
        &self,
        seq: u64,
        file: &mut Option<crate::log::Reread>,
    ) -> Result<OwnedEvent, ReadBackError> {
        let node = self
            .surface()
            .nodes
            .iter()
            .find(|n| n.seq == seq)
            .ok_or_else(|| ReadBackError(format!("seq {seq} is not a surface node")))?;
        self.event_of(node, file)
    }

    /// The full event of `node`, a current surface node (no search).
    #[cfg(test)]
    fn event_of(
        &self,
        node: &crate::surface::Node,
        file: &mut Option<crate::log::Reread>,
    ) -> Result<OwnedEvent, ReadBackError> {
        self.app
            .log()
            .read_body(&node.body, node.seq, file)
            .map_err(|e| ReadBackError(e.to_string()))
    }

    /// The lines of the given surface nodes (in the order given), kept so
    /// that their messages ([`NodeLines::messages`]) borrow from them
    /// instead of being copied: a plain file's stretch mapped once (no read
    /// per line), an artifact's lines decompressed on every core.
    pub(crate) fn node_lines(&self, seqs: &[u64]) -> Result<NodeLines, ReadBackError> {
        // Found by seq once, not by a search per node.
        let nodes = &self.surface().nodes;
        let mut at: std::collections::HashMap<u64, usize> =
            std::collections::HashMap::with_capacity(nodes.len());
        for (i, n) in nodes.iter().enumerate() {
            at.entry(n.seq).or_insert(i);
        }
        let picked: Vec<&crate::surface::Node> = seqs
            .iter()
            .map(|seq| {
                at.get(seq)
                    .map(|&i| &nodes[i])
                    .ok_or_else(|| ReadBackError(format!("seq {seq} is not a surface node")))
            })
            .collect::<Result<_, _>>()?;
        let log = self.app.log();
        // A plain file is mapped once across the lines' stretch; an
        // artifact's lines are decompressed on every core.
        let spans = picked.iter().filter_map(|n| match n.body {
            NodeBody::Span { offset, len } => Some((offset, offset + u64::from(len))),
            NodeBody::Owned(_) => None,
        });
        let stretch = spans.fold(None, |acc: Option<(u64, u64)>, (a, b)| {
            Some(acc.map_or((a, b), |(s, e)| (s.min(a), e.max(b))))
        });
        let map = match stretch {
            Some((start, end)) => log
                .map_plain(start, end)
                .map_err(|e| ReadBackError(e.to_string()))?,
            None => None,
        };
        let lines = if map.is_some() {
            picked
                .iter()
                .map(|n| match &n.body {
                    NodeBody::Span { offset, len } => NodeLine::Mapped {
                        seq: n.seq,
                        offset: *offset,
                        len: *len,
                    },
                    NodeBody::Owned(ev) => NodeLine::Owned(ev.clone()),
                })
                .collect()
        } else {
            let read = crate::par::map_in_order(&picked, |node, file| {
                let mut bytes = Vec::new();
                match &node.body {
                    NodeBody::Owned(ev) => Ok(NodeLine::Owned(ev.clone())),
                    body => match log.read_span(body, file, &mut bytes) {
                        Ok(true) => Ok(NodeLine::Read {
                            seq: node.seq,
                            bytes,
                        }),
                        Ok(false) => Err("node span without a file".to_string()),
                        Err(e) => Err(e.to_string()),
                    },
                }
            });
            read.into_iter()
                .collect::<Result<_, _>>()
                .map_err(ReadBackError)?
        };
        Ok(NodeLines { lines, map })
    }

    /// Take R16 fingerprints of events read here (a prune plan's
    /// originals), so that writing their replacements reads nothing again.
    pub(crate) fn remember_originals(&mut self, known: &crate::surface::KnownOriginals) {
        self.app.remember_originals(known);
    }

    /// Append one batch (seqs planned from [`Session::next_seq`]), preceded
    /// by the lifecycle prefix if it is still due, and fold it into the view.
    /// Returns everything appended, prefix included.
    pub(crate) fn write(
        &mut self,
        events: Vec<OwnedEvent>,
        time: f64,
    ) -> Result<Vec<OwnedEvent>, AppendError> {
        let mut batch = self.app.lifecycle_prefix(time);
        batch.extend(events);
        self.app.append_observed(
            &batch,
            &mut Watch {
                meter: &mut self.meter,
                tracker: &mut self.tracker,
            },
        )?;
        Ok(batch)
    }

    /// Publish a copy (`--out`) and release the lock; the file written.
    pub fn finish(self) -> Result<Option<PathBuf>, AppendError> {
        self.app.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prune::{PruneConfig, plan_nodes};

    const LOG: &[&str] = &[
        r#"{"type":"session","version":0,"id":"s","createdAt":0,"cwd":"/tmp","delegationDepth":0}"#,
        r#"{"type":"turn/start","seq":0,"time":10,"data":{"turn":1}}"#,
        r#"{"type":"request/header","seq":1,"time":11,"data":{"header":{"config":{"provider":"p","model":"m"},"system":"You are terse."},"reason":"initial"}}"#,
        r#"{"type":"step/start","seq":2,"time":12,"data":{"turn":1,"step":1}}"#,
        r#"{"type":"user/message","seq":3,"time":13,"data":{"role":"user","content":[{"type":"text","text":"go"}],"source":{"kind":"user"},"id":"u1"},"surfaceOp":"append"}"#,
        r#"{"type":"assistant/message","seq":4,"time":14,"data":{"turn":1,"step":1,"message":{"role":"assistant","content":[{"type":"tool-call","id":"a","name":"read","arguments":"{}"}],"source":{"kind":"model","provider":"p","model":"m"},"id":"a1"},"usage":{"inputTokens":300,"outputTokens":10}},"surfaceOp":"append"}"#,
        r#"{"type":"tool/call","seq":5,"time":15,"data":{"turn":1,"step":1,"callId":"a","name":"read","arguments":"{}"}}"#,
    ];

    fn log_text() -> String {
        let result = format!(
            r#"{{"type":"tool/result","seq":6,"time":16,"data":{{"turn":1,"step":1,"message":{{"role":"user","content":[{{"type":"tool-result","toolCallId":"a","content":[{{"type":"text","text":"{}"}}]}}],"source":{{"kind":"tool","callId":"a"}},"id":"r1"}}}},"surfaceOp":"append"}}"#,
            "y".repeat(200)
        );
        let mut lines: Vec<String> = LOG.iter().map(|s| s.to_string()).collect();
        lines.push(result);
        lines.push(r#"{"type":"step/end","seq":7,"time":17,"data":{"turn":1,"step":1}}"#.into());
        lines.join("\n") + "\n"
    }

    fn fresh(path: &std::path::Path) -> Measurement {
        let src = LogSource::File(path.to_path_buf());
        crate::meter::measure(&src, &Default::default(), None)
            .unwrap()
            .1
    }

    #[test]
    fn the_meter_follows_the_appends_without_rereading() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, log_text()).unwrap();
        let src = LogSource::File(path.clone());
        let mut s = Session::open(&src, AppendTarget::InPlace, &AppendOptions::default()).unwrap();
        assert_eq!(s.lifecycle(), Lifecycle::Continue);
        assert_eq!(s.open_turn(), Some(1.0));
        assert_eq!(s.next_seq(), 8);
        let m0 = s.measure().unwrap();
        assert_eq!(m0.total_tokens, fresh(&path).total_tokens);
        assert_eq!(m0.baseline.kind, crate::meter::BaselineKind::Usage);
        // Prune the 200-character result (budgets 100 = 30 + 39 + 31).
        let cfg = PruneConfig {
            threshold_chars: 100,
            head_chars: 30,
            tail_chars: 31,
        };
        let mut file = None;
        let candidates: Vec<_> = s
            .surface()
            .nodes
            .iter()
            .filter(|n| n.kind == Kind::ToolResult)
            .map(|n| Ok((s.node_event(n.seq, &mut file).unwrap(), n.tokens)))
            .collect();
        let plan = plan_nodes(&cfg, candidates, s.next_seq(), 20.0, s.surface().tokens).unwrap();
        assert_eq!(plan.events.len(), 2);
        let written = s.write(plan.events, 20.0).unwrap();
        assert_eq!(written.iter().map(|e| e.seq).collect::<Vec<_>>(), [8, 9]);
        let m1 = s.measure().unwrap();
        let f1 = fresh(&path);
        assert!(m1.total_tokens < m0.total_tokens);
        assert_eq!(m1.total_tokens, f1.total_tokens);
        assert_eq!(m1.surface_tokens, f1.surface_tokens);
        assert_eq!(m1.nodes, f1.nodes);
        assert_eq!(m1.surface_delta_tokens, f1.surface_delta_tokens);
        s.finish().unwrap();
    }

    #[test]
    fn a_closed_log_resumes_with_the_end_seed_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let text = log_text()
            + r#"{"type":"turn/end","seq":8,"time":18,"data":{"turn":1,"reason":{"kind":"completed"}}}"#;
        std::fs::write(&path, text + "\n").unwrap();
        let src = LogSource::File(path.clone());
        let mut s = Session::open(&src, AppendTarget::DryRun, &AppendOptions::default()).unwrap();
        assert_eq!(s.lifecycle(), Lifecycle::Resume);
        assert!(s.is_dry_run());
        assert_eq!(s.open_turn(), None);
        // seq 9 is the end-seed still to be written.
        assert_eq!(s.next_seq(), 10);
        let before = std::fs::read(&path).unwrap();
        let written = s.write(Vec::new(), 30.0).unwrap();
        assert_eq!(written.len(), 1);
        assert_eq!(written[0].kind, Kind::SessionEndSeed);
        assert_eq!(written[0].seq, 9);
        assert_eq!(s.next_seq(), 10);
        assert_eq!(
            std::fs::read(&path).unwrap(),
            before,
            "a dry run writes nothing"
        );
    }
}
