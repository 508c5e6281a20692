//! The live view a compaction works on: the stored log (without crash-repair
//! closers: compaction acts as the still-running agent would), kept current
//! as events are appended.

use std::sync::Arc;

use crate::event::{Event, Kind, OwnedEvent};
use crate::json::OwnedValue;
use crate::log::{Folded, LoadError, LoadOptions, LoadedLog, LogSource};
use crate::request_header::HeaderFold;
use crate::surface::{NodeBody, Surface, check_local, node_facts, project};

/// The compaction lock state (session-log §10.4, compaction §8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockState {
    /// No bracket marker, or the last one is a `compaction/end`.
    Free,
    /// An unmatched `compaction/start` that a later `session/end-seed`
    /// superseded: crash evidence, not a lock.
    Stale {
        /// The orphaned start.
        start_seq: u64,
        /// The end-seed after it.
        end_seed_seq: u64,
    },
    /// An unmatched `compaction/start` with no end-seed after it.
    Busy {
        /// The start holding the lock.
        start_seq: u64,
    },
}

/// Folds `measure().totalTokens` alongside the log (the token meter).
pub trait PressureMeter {
    /// One event, after the surface fold.
    fn observe(&mut self, ev: &Event<'_>, folded: &Folded<'_>) -> Result<(), String>;
    /// `measure().totalTokens` now.
    fn total_tokens(&self) -> u64;
}

/// Durable appends. Implementations write whole lines in order and either
/// write a whole batch or nothing.
pub trait Sink {
    /// Append a batch.
    fn append(&mut self, events: &[OwnedEvent]) -> Result<(), SinkError>;
    /// Events appended by someone else since the last call (empty while this
    /// sink holds the writer lock).
    fn sync(&mut self) -> Result<Vec<OwnedEvent>, SinkError>;
}

/// A failed append.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct SinkError(pub String);

/// An in-memory sink (tests, `--dry-run` style previews).
#[derive(Debug, Default)]
pub struct MemorySink {
    /// Everything appended.
    pub events: Vec<OwnedEvent>,
    /// Fail the append that would write this event index (0-based over
    /// `events`), once.
    pub fail_at: Option<usize>,
}

impl Sink for MemorySink {
    fn append(&mut self, events: &[OwnedEvent]) -> Result<(), SinkError> {
        if let Some(at) = self.fail_at
            && at < self.events.len() + events.len()
        {
            self.fail_at = None;
            return Err(SinkError("injected write failure".into()));
        }
        self.events.extend(events.iter().cloned());
        Ok(())
    }

    fn sync(&mut self) -> Result<Vec<OwnedEvent>, SinkError> {
        Ok(Vec::new())
    }
}

#[derive(Debug, Default, Clone)]
struct Tracker {
    open_turn: Option<f64>,
    last_marker: Option<(Kind, u64)>,
    last_end_seed: Option<u64>,
}

impl Tracker {
    fn observe(&mut self, ev: &Event<'_>) {
        match ev.kind {
            Kind::TurnStart => self.open_turn = ev.turn(),
            Kind::TurnEnd => self.open_turn = None,
            Kind::CompactionStart | Kind::CompactionEnd => {
                self.last_marker = Some((ev.kind, ev.seq))
            }
            Kind::SessionEndSeed => self.last_end_seed = Some(ev.seq),
            _ => {}
        }
    }
}

/// The session being compacted.
pub struct Session {
    /// Session id (header `id`).
    pub id: String,
    /// The current surface (no closers).
    pub surface: Surface,
    /// Request header / context fold.
    pub headers: HeaderFold,
    /// Next seq to write.
    pub next_seq: u64,
    /// Time of the last stored event.
    pub last_time: f64,
    tracker: Tracker,
    log: Option<LoadedLog>,
    meter: Option<Box<dyn PressureMeter>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .field("nodes", &self.surface.nodes.len())
            .field("next_seq", &self.next_seq)
            .finish()
    }
}

impl Session {
    /// Load a stored log. Crash-repair closers are not part of the view:
    /// compaction writes where the interrupted agent would have.
    pub fn load(
        source: &LogSource,
        opts: &LoadOptions,
        mut meter: Option<Box<dyn PressureMeter>>,
    ) -> Result<Session, LoadError> {
        let mut tracker = Tracker::default();
        let mut meter_err: Option<LoadError> = None;
        let mut observer = |ev: &Event<'_>, folded: &Folded<'_>| {
            if folded.synthetic {
                return;
            }
            tracker.observe(ev);
            if let Some(m) = meter.as_mut()
                && meter_err.is_none()
                && let Err(e) = m.observe(ev, folded)
            {
                meter_err = Some(LoadError::invalid(e).seq(ev.seq));
            }
        };
        let mut log = crate::log::load(source, opts, &mut observer)?;
        if let Some(e) = meter_err {
            return Err(e.file(source.display()));
        }
        let stored = log.stored_events;
        let mut surface = std::mem::take(&mut log.surface);
        while surface.nodes.last().is_some_and(|n| n.seq >= stored) {
            let n = surface.nodes.pop().unwrap();
            surface.tokens -= n.tokens;
        }
        let last_time = log.last_time;
        Ok(Session {
            id: log.header.id.clone(),
            surface,
            headers: log.headers.clone(),
            next_seq: stored,
            last_time,
            tracker,
            log: Some(log),
            meter,
        })
    }

    /// Build from events in memory (already validated by the caller).
    pub fn from_events(
        id: &str,
        events: &[OwnedEvent],
        meter: Option<Box<dyn PressureMeter>>,
    ) -> Result<Session, String> {
        let mut s = Session {
            id: id.to_string(),
            surface: Surface::default(),
            headers: HeaderFold::default(),
            next_seq: 0,
            last_time: 0.0,
            tracker: Tracker::default(),
            log: None,
            meter,
        };
        for ev in events {
            s.fold(ev)?;
        }
        Ok(s)
    }

    /// The loaded log, when the session came from a file.
    pub fn loaded(&self) -> Option<&LoadedLog> {
        self.log.as_ref()
    }

    /// Fold one event written after the load (ours or a concurrent writer's).
    pub fn fold(&mut self, ev: &OwnedEvent) -> Result<(), String> {
        if ev.seq != self.next_seq {
            return Err(format!(
                "session event seq {} is not contiguous; expected {}",
                ev.seq, self.next_seq
            ));
        }
        let op = check_local(ev).map_err(|e| e.message)?;
        let applied = match op {
            None => None,
            Some(op) => Some(
                self.surface
                    .apply(
                        ev,
                        op,
                        node_facts(ev),
                        NodeBody::Owned(Arc::new(ev.clone())),
                    )
                    .map_err(|e| e.message)?,
            ),
        };
        self.headers.observe(ev);
        self.tracker.observe(ev);
        if let Some(m) = self.meter.as_mut() {
            let folded = Folded {
                applied: applied.as_ref(),
                surface: &self.surface,
                synthetic: false,
            };
            m.observe(ev, &folded)?;
        }
        self.next_seq = ev.seq + 1;
        self.last_time = ev.time();
        Ok(())
    }

    /// The open turn number, if a turn is open.
    pub fn open_turn(&self) -> Option<f64> {
        self.tracker.open_turn
    }

    /// The compaction lock state.
    pub fn lock(&self) -> LockState {
        match self.tracker.last_marker {
            Some((Kind::CompactionStart, start_seq)) => match self.tracker.last_end_seed {
                Some(end_seed_seq) if end_seed_seq > start_seq => LockState::Stale {
                    start_seq,
                    end_seed_seq,
                },
                _ => LockState::Busy { start_seq },
            },
            _ => LockState::Free,
        }
    }

    /// `measure().totalTokens`, when a meter is attached.
    pub fn total_tokens(&self) -> Option<u64> {
        self.meter.as_ref().map(|m| m.total_tokens())
    }

    /// The derived messages of the given surface nodes (in the order given;
    /// nodes that derive no message are skipped).
    pub fn messages(&self, seqs: &[u64]) -> Result<Vec<OwnedValue>, String> {
        let mut file = None;
        let mut out = Vec::with_capacity(seqs.len());
        for &seq in seqs {
            let node = self
                .surface
                .nodes
                .iter()
                .find(|n| n.seq == seq)
                .ok_or_else(|| format!("seq {seq} is not a surface node"))?;
            let ev = match (&node.body, &self.log) {
                (NodeBody::Owned(ev), _) => (**ev).clone(),
                (body, Some(log)) => log
                    .read_body(body, seq, &mut file)
                    .map_err(|e| e.to_string())?,
                (_, None) => return Err(format!("seq {seq}: node body unavailable")),
            };
            if let Some(m) = project(&ev) {
                out.push(m.to_owned_value());
            }
        }
        Ok(out)
    }

    /// The full event of a surface node.
    pub fn node_event(&self, seq: u64) -> Result<OwnedEvent, String> {
        let node = self
            .surface
            .nodes
            .iter()
            .find(|n| n.seq == seq)
            .ok_or_else(|| format!("seq {seq} is not a surface node"))?;
        match (&node.body, &self.log) {
            (NodeBody::Owned(ev), _) => Ok((**ev).clone()),
            (body, Some(log)) => log
                .read_body(body, seq, &mut None)
                .map_err(|e| e.to_string()),
            (_, None) => Err(format!("seq {seq}: node body unavailable")),
        }
    }
}
