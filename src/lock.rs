//! The compaction lock: which `compaction/start` markers hold it (spec:
//! session-log §10.4, compaction §8).
//!
//! The reference's lock is the durable `compaction/start` marker. The state of
//! a log is decided positionally: the latest `compaction/start` or
//! `compaction/end` wins; a latest start is a live lock (BUSY) unless a
//! `session/end-seed` came after it, which makes it crash evidence from an
//! earlier process lifetime (STALE) that blocks nothing.
//!
//! [`LockScan`] follows a log forward (one event at a time, O(brackets)
//! memory) and classifies every `compaction/start`:
//!
//! * **matched**: closed by a `compaction/end` (successfully, or with `error`);
//! * **stale**: superseded by a `session/end-seed` before any end;
//! * **busy**: still open at the end of the log, a live lock;
//! * **orphaned**: never closed, but a later `compaction/start` superseded it
//!   without an end-seed in between (an anomaly the reference never writes).
//!
//! It also collects the anomalies the compaction invariant would report
//! (nested starts, ends without a start, id or owner mismatches, a turn
//! boundary crossing a bracket that is not stale).
//!
//! Feed it the events stored in the file only: the in-memory crash-repair
//! closers and the `session/end-seed` a resuming session would add are not in
//! the file, and counting that marker would make every lock stale.
//!
//! ```
//! use dsh::lock::{LockScan, LockState};
//! let mut scan = LockScan::new();
//! let src = dsh::LogSource::File("samples/locks-busy.jsonl".into());
//! dsh::log::load(&src, &dsh::LoadOptions::default(), &mut |ev: &dsh::Event<'_>, f: &dsh::log::Folded<'_>| {
//!     if !f.synthetic {
//!         scan.observe(ev);
//!     }
//! })?;
//! assert_eq!(scan.report().state, LockState::Busy);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::event::{Event, Kind};
use crate::json::{OwnedValue, Value};

/// How one `compaction/start` ended up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LockStatus {
    /// Closed by a `compaction/end` (see [`Bracket::error`] for failures).
    Matched,
    /// Unmatched, but a later `session/end-seed` superseded it: crash evidence.
    Stale,
    /// Unmatched and after the newest `session/end-seed`: a live lock.
    Busy,
    /// Unmatched and superseded by a later `compaction/start` (anomaly).
    Orphaned,
}

impl LockStatus {
    /// The name used in tables and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            LockStatus::Matched => "matched",
            LockStatus::Stale => "stale",
            LockStatus::Busy => "busy",
            LockStatus::Orphaned => "orphaned",
        }
    }
}

/// The lock state of a whole log (session-log §10.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LockState {
    /// No bracket marker, or the latest one is a `compaction/end`.
    Free,
    /// The latest marker is a start, and a newer `session/end-seed` exists.
    Stale,
    /// The latest marker is a start with no newer `session/end-seed`.
    Busy,
}

impl LockState {
    /// The name used in tables and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            LockState::Free => "free",
            LockState::Stale => "stale",
            LockState::Busy => "busy",
        }
    }
}

/// One `compaction/start` and what became of it.
#[derive(Debug, Clone)]
pub struct Bracket {
    /// Seq of the `compaction/start`.
    pub seq: u64,
    /// Its `compactionId` (JSON value as logged; normally a string).
    pub compaction_id: OwnedValue,
    /// Its `sourceCommandId`, when present.
    pub source_command_id: Option<OwnedValue>,
    /// Its owner: `data.turn` (a number, or `null` for a manual compaction).
    pub turn: OwnedValue,
    /// Its `time` (epoch milliseconds).
    pub time: f64,
    /// The turn that was open when it started.
    pub open_turn: Option<f64>,
    /// The classification.
    pub status: LockStatus,
    /// For matched brackets: the `compaction/end` seq.
    pub end_seq: Option<u64>,
    /// For failed brackets: the end's `error` text.
    pub error: Option<OwnedValue>,
    /// For stale brackets: the `session/end-seed` that superseded it.
    pub end_seed_seq: Option<u64>,
    /// For orphaned brackets: the `compaction/start` that superseded it.
    pub superseded_by: Option<u64>,
    /// Seq of its `compaction/summary`, if one landed.
    pub summary_seq: Option<u64>,
    /// Seq of its checkpoint `user/message` replacement, if one landed.
    pub checkpoint_seq: Option<u64>,
}

impl Bracket {
    /// The owner as text: `turn N` or `standalone`.
    pub fn owner(&self) -> String {
        owner_name(&self.turn)
    }
}

/// A bracket rule the log breaks (compaction invariant, §7.4 V-CMP-2…7).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Anomaly {
    /// The event where it shows.
    pub seq: u64,
    /// What is wrong.
    pub message: String,
}

/// The result of a scan.
#[derive(Debug, Clone)]
pub struct LockReport {
    /// Every `compaction/start`, in log order.
    pub brackets: Vec<Bracket>,
    /// The whole log's lock state (§10.4).
    pub state: LockState,
    /// Seq of the latest `compaction/start` or `compaction/end`.
    pub last_bracket_seq: Option<u64>,
    /// Seq of the latest `session/end-seed`.
    pub last_end_seed_seq: Option<u64>,
    /// Seq of the last event seen.
    pub last_seq: Option<u64>,
    /// Rule breaks.
    pub anomalies: Vec<Anomaly>,
}

impl LockReport {
    /// The bracket holding a live lock, if any.
    pub fn busy(&self) -> Option<&Bracket> {
        self.brackets.iter().find(|b| b.status == LockStatus::Busy)
    }
}

fn owner_name(turn: &Value<'_>) -> String {
    match turn {
        Value::Null => "standalone compaction".to_string(),
        v => format!("turn {}", v.to_json()),
    }
}

/// Follows a log and classifies its compaction brackets.
#[derive(Debug, Default, Clone)]
pub struct LockScan {
    brackets: Vec<Bracket>,
    /// Index of the bracket still open (not ended, not superseded).
    open: Option<usize>,
    /// Turn boundaries that crossed the open bracket (forgiven if it turns stale).
    crossings: Vec<Anomaly>,
    open_turn: Option<OwnedValue>,
    last_marker: Option<(u64, bool)>,
    last_end_seed: Option<u64>,
    last_seq: Option<u64>,
    anomalies: Vec<Anomaly>,
}

impl LockScan {
    /// A scan at the start of a log.
    pub fn new() -> LockScan {
        LockScan::default()
    }

    /// Stored chunks the loader counted without building them: chunks
    /// change no bracket, only the last seq seen.
    pub(crate) fn counted(&mut self, last_seq: u64) {
        self.last_seq = Some(last_seq);
    }

    /// Observe the next stored event.
    pub fn observe(&mut self, ev: &Event<'_>) {
        self.last_seq = Some(ev.seq);
        let d = ev.data();
        match ev.kind {
            Kind::TurnStart | Kind::TurnEnd => {
                if let Some(i) = self.open {
                    let owner = match &self.brackets[i].turn {
                        Value::Null => "standalone compaction".to_string(),
                        t => format!("compaction for turn {}", t.to_json()),
                    };
                    self.crossings.push(Anomaly {
                        seq: ev.seq,
                        message: format!("{} cannot cross an open {owner}", ev.type_name()),
                    });
                }
                self.open_turn = if ev.kind == Kind::TurnStart {
                    Some(d.get("turn").map_or(Value::Null, |t| t.to_owned_value()))
                } else {
                    None
                };
            }
            Kind::SessionEndSeed => {
                self.last_end_seed = Some(ev.seq);
                if let Some(i) = self.open.take() {
                    self.brackets[i].status = LockStatus::Stale;
                    self.brackets[i].end_seed_seq = Some(ev.seq);
                }
                // Repair closers may cross a bracket that turns out stale.
                self.crossings.clear();
            }
            Kind::CompactionStart => self.start(ev),
            Kind::CompactionSummary => {
                let Some(i) = self.open else {
                    self.anomaly(
                        ev.seq,
                        "compaction/summary has no matching compaction/start",
                    );
                    return;
                };
                self.id_check(i, ev, "compaction/summary");
                let owner = self.brackets[i].turn.clone();
                self.owner_check(ev.seq, &owner, "compaction/summary");
                if self.brackets[i].summary_seq.is_some() {
                    self.anomaly(ev.seq, "compaction/summary repeated within one compaction");
                } else {
                    self.brackets[i].summary_seq = Some(ev.seq);
                }
            }
            Kind::CompactionEnd => {
                self.last_marker = Some((ev.seq, false));
                let Some(i) = self.open.take() else {
                    self.anomaly(ev.seq, "compaction/end has no matching compaction/start");
                    return;
                };
                self.id_check(i, ev, "compaction/end");
                let owner = self.brackets[i].turn.clone();
                let turn = d.get("turn").map_or(Value::Null, |t| t.to_owned_value());
                if !turn.deep_eq(&owner) {
                    self.anomaly(
                        ev.seq,
                        &format!(
                            "compaction/end owner {} does not match compaction/start owner {}",
                            shown(&turn),
                            shown(&owner)
                        ),
                    );
                }
                self.owner_check(ev.seq, &owner, "compaction/end");
                let b = &mut self.brackets[i];
                b.status = LockStatus::Matched;
                b.end_seq = Some(ev.seq);
                b.error = d.get("error").map(|e| e.to_owned_value());
                if b.error.is_none() && b.summary_seq.is_none() {
                    self.anomaly(
                        ev.seq,
                        "successful compaction/end requires one compaction/summary",
                    );
                }
                let crossings = std::mem::take(&mut self.crossings);
                self.anomalies.extend(crossings);
            }
            Kind::UserMessage => {
                let src = d.get("source");
                let is_checkpoint = src
                    .and_then(|s| s.get("kind"))
                    .is_some_and(|k| k.is_str("plugin"))
                    && src
                        .and_then(|s| s.get("plugin"))
                        .is_some_and(|p| p.is_str("compact"));
                if is_checkpoint
                    && matches!(ev.surface_op(), Some(crate::event::SurfaceOp::Replace(_)))
                {
                    let id = src
                        .and_then(|s| s.get("compactionId"))
                        .map_or(Value::Null, |v| v.to_owned_value());
                    match self.open {
                        None => self.anomaly(
                            ev.seq,
                            "compaction checkpoint has no matching compaction/start",
                        ),
                        Some(i) if !id.deep_eq(&self.brackets[i].compaction_id) => {
                            let msg = format!(
                                "compaction checkpoint id {} does not match compaction/start id {}",
                                shown(&id),
                                shown(&self.brackets[i].compaction_id)
                            );
                            self.anomaly(ev.seq, &msg);
                        }
                        Some(i) => self.brackets[i].checkpoint_seq = Some(ev.seq),
                    }
                }
            }
            _ => {}
        }
    }

    fn start(&mut self, ev: &Event<'_>) {
        let d = ev.data();
        self.last_marker = Some((ev.seq, true));
        let turn = d
            .get("turn")
            .map(|t| t.to_owned_value())
            .unwrap_or(Value::Null);
        if let Some(i) = self.open.take() {
            let msg = format!(
                "compaction/start while {} is still compacting",
                owner_name(&self.brackets[i].turn)
            );
            self.brackets[i].status = LockStatus::Orphaned;
            self.brackets[i].superseded_by = Some(ev.seq);
            self.anomaly(ev.seq, &msg);
            let crossings = std::mem::take(&mut self.crossings);
            self.anomalies.extend(crossings);
        }
        self.owner_check(ev.seq, &turn, "compaction/start");
        self.brackets.push(Bracket {
            seq: ev.seq,
            compaction_id: d
                .get("compactionId")
                .map(|v| v.to_owned_value())
                .unwrap_or(Value::Null),
            source_command_id: d.get("sourceCommandId").map(|v| v.to_owned_value()),
            turn,
            time: ev.time(),
            open_turn: self.open_turn.as_ref().and_then(|t| t.as_f64()),
            status: LockStatus::Busy,
            end_seq: None,
            error: None,
            end_seed_seq: None,
            superseded_by: None,
            summary_seq: None,
            checkpoint_seq: None,
        });
        self.open = Some(self.brackets.len() - 1);
    }

    /// Same compactionId and sourceCommandId as the open start.
    fn id_check(&mut self, i: usize, ev: &Event<'_>, what: &str) {
        let d = ev.data();
        let id = d
            .get("compactionId")
            .map_or(Value::Null, |v| v.to_owned_value());
        if !id.deep_eq(&self.brackets[i].compaction_id) {
            let msg = format!(
                "{what} id {} does not match compaction/start id {}",
                shown(&id),
                shown(&self.brackets[i].compaction_id)
            );
            self.anomaly(ev.seq, &msg);
        }
        let cmd = d.get("sourceCommandId");
        let want = self.brackets[i].source_command_id.as_ref();
        let same = match (cmd, want) {
            (None, None) => true,
            (Some(a), Some(b)) => a.deep_eq(b),
            _ => false,
        };
        if !same {
            let show = |v: Option<&Value<'_>>| v.map_or("undefined".to_string(), shown);
            let msg = format!(
                "{what} sourceCommandId {} does not match compaction/start sourceCommandId {}",
                show(cmd),
                show(want)
            );
            self.anomaly(ev.seq, &msg);
        }
    }

    /// The owner rule (V-CMP-3): a numbered owner must be the open turn, a
    /// `null` owner needs no open turn.
    fn owner_check(&mut self, seq: u64, owner: &Value<'_>, what: &str) {
        let open = self.open_turn.clone();
        match (owner, open) {
            (Value::Null, Some(t)) => self.anomaly(
                seq,
                &format!("{what} is standalone but turn {} is open", shown(&t)),
            ),
            (Value::Null, None) => {}
            (o, None) => self.anomaly(
                seq,
                &format!(
                    "{what} for turn {} appended outside any open turn",
                    shown(o)
                ),
            ),
            (o, Some(t)) if !o.deep_eq(&t) => self.anomaly(
                seq,
                &format!(
                    "{what} names turn {} but open turn is {}",
                    shown(o),
                    shown(&t)
                ),
            ),
            _ => {}
        }
    }

    fn anomaly(&mut self, seq: u64, message: &str) {
        self.anomalies.push(Anomaly {
            seq,
            message: message.to_string(),
        });
    }

    /// The lock state so far (§10.4).
    pub(crate) fn state(&self) -> LockState {
        match self.last_marker {
            None | Some((_, false)) => LockState::Free,
            Some((s, true)) if self.last_end_seed.is_some_and(|e| e > s) => LockState::Stale,
            Some(_) => LockState::Busy,
        }
    }

    /// The report so far (the scan can go on).
    pub fn report(&self) -> LockReport {
        let mut anomalies = self.anomalies.clone();
        // Boundaries crossing a bracket that is still open (busy) stay anomalies.
        anomalies.extend(self.crossings.iter().cloned());
        anomalies.sort_by_key(|a| a.seq);
        LockReport {
            brackets: self.brackets.clone(),
            state: self.state(),
            last_bracket_seq: self.last_marker.map(|(s, _)| s),
            last_end_seed_seq: self.last_end_seed,
            last_seq: self.last_seq,
            anomalies,
        }
    }
}

/// A value as an anomaly message shows it: a string as itself, any other
/// value as its JSON text. Not JavaScript's `String(v)`
/// ([`crate::json::js_string`], which `dsh verify` uses for the same
/// findings): the two agree on strings, numbers, booleans and `null` (every
/// id and owner a well-formed log holds), but an id or owner of the wrong
/// type stays recognisable here (`[2,null]`, `{"a":1}`, where `String`
/// gives `2,` and `[object Object]`).
fn shown(v: &Value<'_>) -> String {
    match v {
        Value::Str(s) => s.to_lossy().into_owned(),
        v => v.to_json(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Event;

    fn ev(seq: u64, line: &str) -> Event<'static> {
        let v = Value::parse(line).unwrap().into_owned();
        let kind = Kind::of(&v.get("type").unwrap().as_str().unwrap());
        Event {
            kind,
            seq,
            line: 0,
            value: v,
        }
    }

    /// `shown` is `String(v)` on the values a well-formed log holds, and
    /// JSON text on the others.
    #[test]
    fn values_in_messages() {
        let both = |t: &str| {
            let v = Value::parse(t).unwrap();
            (shown(&v), crate::json::js_string(Some(&v)))
        };
        for same in [r#""cmp-1""#, "2", "0.5", "null", "true"] {
            let (a, b) = both(same);
            assert_eq!(a, b, "{same}");
        }
        assert_eq!(both("[2,null]"), ("[2,null]".into(), "2,".into()));
        assert_eq!(
            both(r#"{"a":1}"#),
            (r#"{"a":1}"#.into(), "[object Object]".into())
        );
        let report = scan(&[
            r#"{"type":"compaction/start","seq":1,"time":1,"data":{"compactionId":{"a":1},"turn":null}}"#,
            r#"{"type":"compaction/end","seq":2,"time":2,"data":{"compactionId":"x","turn":null}}"#,
        ]);
        assert_eq!(
            report.anomalies[0].message,
            r#"compaction/end id x does not match compaction/start id {"a":1}"#
        );
    }

    fn scan(lines: &[&str]) -> LockReport {
        let mut s = LockScan::new();
        for (i, l) in lines.iter().enumerate() {
            s.observe(&ev(i as u64, l));
        }
        s.report()
    }

    const TS1: &str = r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#;
    const CS1: &str =
        r#"{"type":"compaction/start","seq":1,"time":2,"data":{"compactionId":"c1","turn":1}}"#;
    const TE1: &str =
        r#"{"type":"turn/end","seq":2,"time":3,"data":{"turn":1,"reason":{"kind":"interrupted"}}}"#;
    const ES: &str = r#"{"type":"session/end-seed","seq":3,"time":4,"data":{}}"#;

    #[test]
    fn free_when_no_markers() {
        let r = scan(&[TS1]);
        assert_eq!(r.state, LockState::Free);
        assert!(r.brackets.is_empty());
    }

    #[test]
    fn busy_then_stale_after_end_seed() {
        let r = scan(&[TS1, CS1]);
        assert_eq!(r.state, LockState::Busy);
        assert_eq!(r.brackets[0].status, LockStatus::Busy);
        assert_eq!(r.brackets[0].open_turn, Some(1.0));
        let r = scan(&[TS1, CS1, TE1, ES]);
        assert_eq!(r.state, LockState::Stale);
        assert_eq!(r.brackets[0].status, LockStatus::Stale);
        assert_eq!(r.brackets[0].end_seed_seq, Some(3));
        // The repair turn/end crossing a bracket that became stale is forgiven.
        assert!(r.anomalies.is_empty(), "{:?}", r.anomalies);
    }

    #[test]
    fn matched_success_and_failure() {
        let sum = r#"{"type":"compaction/summary","seq":2,"time":3,"data":{"compactionId":"c1","turn":1,"summary":[]}}"#;
        let end =
            r#"{"type":"compaction/end","seq":3,"time":4,"data":{"compactionId":"c1","turn":1}}"#;
        let r = scan(&[TS1, CS1, sum, end]);
        assert_eq!(r.state, LockState::Free);
        assert_eq!(r.brackets[0].status, LockStatus::Matched);
        assert_eq!(r.brackets[0].summary_seq, Some(2));
        assert_eq!(r.brackets[0].end_seq, Some(3));
        assert!(r.anomalies.is_empty());
        let end_err = r#"{"type":"compaction/end","seq":2,"time":4,"data":{"compactionId":"c1","turn":1,"error":"boom"}}"#;
        let r = scan(&[TS1, CS1, end_err]);
        assert!(r.anomalies.is_empty());
        let end_ok_no_summary =
            r#"{"type":"compaction/end","seq":2,"time":4,"data":{"compactionId":"c1","turn":1}}"#;
        let r = scan(&[TS1, CS1, end_ok_no_summary]);
        assert_eq!(r.anomalies.len(), 1);
        assert!(
            r.anomalies[0]
                .message
                .contains("requires one compaction/summary")
        );
    }

    #[test]
    fn anomalies_nested_and_crossing() {
        let cs2 =
            r#"{"type":"compaction/start","seq":2,"time":3,"data":{"compactionId":"c2","turn":1}}"#;
        let r = scan(&[TS1, CS1, cs2]);
        assert_eq!(r.brackets[0].status, LockStatus::Orphaned);
        assert_eq!(r.brackets[0].superseded_by, Some(2));
        assert_eq!(r.brackets[1].status, LockStatus::Busy);
        assert_eq!(r.anomalies[0].seq, 2);
        // A turn/end crossing a bracket that is still busy stays an anomaly.
        let r = scan(&[TS1, CS1, TE1]);
        assert_eq!(r.state, LockState::Busy);
        assert_eq!(r.anomalies.len(), 1);
        assert!(
            r.anomalies[0]
                .message
                .contains("turn/end cannot cross an open compaction for turn 1")
        );
        // Owner rule.
        let manual_in_turn = r#"{"type":"compaction/start","seq":1,"time":2,"data":{"compactionId":"m","turn":null}}"#;
        let r = scan(&[TS1, manual_in_turn]);
        assert!(
            r.anomalies[0]
                .message
                .contains("compaction/start is standalone but turn 1 is open")
        );
        let end_alone =
            r#"{"type":"compaction/end","seq":0,"time":2,"data":{"compactionId":"m","turn":null}}"#;
        let r = scan(&[end_alone]);
        assert_eq!(r.state, LockState::Free);
        assert!(
            r.anomalies[0]
                .message
                .contains("no matching compaction/start")
        );
    }
}
