//! The detectors: one fold over a log's stored events that keeps the
//! evidence of every finding kind, then prices it against the session's
//! requests ([`Fold::finish`]).
//!
//! Everything is read from event kinds and the attempt fold of
//! [`crate::attempt`], so it holds for every log generation the reader
//! accepts: failed attempts from `finish` chunks or `assistant/attempt`
//! records, shadowed results from the `shadowedSeqs` of
//! `compaction/summary` and `compaction/prune`, the replace generation from
//! the events' own `surfaceOp`.

use std::collections::HashMap;

use crate::attempt::{Attempts, CompactionMode, Modes, Outcome};
use crate::event::{Event, Kind, SurfaceOp};
use crate::json::{OwnedValue, Value};
use crate::price::Tokens;
use crate::sessions::Extra;

/// One compaction bracket as the log shows it.
#[derive(Debug, Clone, Default)]
struct Bracket {
    start: u64,
    turn: Option<f64>,
    mode: Option<CompactionMode>,
    summary: Option<u64>,
    empty: bool,
    end: Option<u64>,
    error: Option<String>,
    /// Agent requests answered before it.
    requests: u64,
    /// `replaceGeneration` before it and after its checkpoint.
    generation: (u64, u64),
}

/// A compaction followed by the next agent request that reported usage.
#[derive(Debug, Clone, Copy)]
struct After {
    bracket: usize,
    message: u64,
    prompt: f64,
}

/// An earlier read of a target whose result a shadowing event removed.
#[derive(Debug, Clone, Copy)]
struct Lost {
    result: u64,
    shadow: u64,
}

#[derive(Debug, Clone, Default)]
struct Target {
    result: Option<u64>,
    lost: Option<Lost>,
}

#[derive(Debug, Clone)]
struct Reread {
    lost: Lost,
    call: u64,
    result: u64,
    tokens: u64,
    time: Option<i64>,
}

#[derive(Debug, Clone)]
struct Overflow {
    failed: u64,
    turn: Option<f64>,
    brackets: Vec<u64>,
    /// The answer that followed (recovered), or the event that ended the
    /// turn first (not).
    outcome: Option<(bool, u64)>,
    usage: Option<Tokens>,
    provider: Option<(String, String)>,
    time: Option<i64>,
}

#[derive(Debug, Clone)]
struct Abandoned {
    start: u64,
    /// What ended it (none: still open at the end of the log).
    end: Option<u64>,
    why: &'static str,
}

/// The evidence of one log.
#[derive(Default)]
pub(super) struct Fold<'x> {
    inner: Option<&'x mut dyn Extra>,
    attempts: Attempts,
    modes: Modes,
    answered: u64,
    generation: u64,
    brackets: Vec<Bracket>,
    open: Option<usize>,
    waiting: Option<usize>,
    after: Vec<After>,
    calls: HashMap<String, (u64, Option<String>)>,
    node_target: HashMap<u64, String>,
    targets: HashMap<String, Target>,
    pending: HashMap<String, (Lost, u64)>,
    rereads: Vec<Reread>,
    overflows: Vec<Overflow>,
    header: Option<OwnedValue>,
    breaks: Vec<u64>,
    break_input: Vec<(u64, Tokens, String, String, Option<i64>)>,
    pending_break: Option<u64>,
    turn: Option<u64>,
    abandoned: Vec<Abandoned>,
    last_seq: u64,
    provider: Option<(String, String)>,
}

fn text(v: Option<&Value<'_>>) -> Option<String> {
    v.and_then(|x| x.as_str()).map(|s| s.into_owned())
}

/// Tools that change what they name rather than read it.
const WRITERS: [&str; 10] = [
    "write", "edit", "create", "delete", "remove", "patch", "apply", "move", "rename", "todo",
];

/// The target a call reads: the tool's name and its whole arguments (keys
/// sorted), when they name a path, a command line or a URL (`None` for
/// tools that write, or arguments naming none). Two calls read the same
/// target when both agree: a read of another window of a file, or a search
/// with another pattern, is another read.
fn target_of(name: &str, arguments: &Value<'_>) -> Option<String> {
    let lower = name.to_ascii_lowercase();
    if WRITERS.iter().any(|w| lower.contains(w)) {
        return None;
    }
    let parsed;
    let args = match arguments {
        Value::Str(_) => {
            let t = arguments.as_str()?;
            parsed = Value::parse(&t).ok()?.into_owned();
            &parsed
        }
        other => other,
    };
    let names_one = [
        "file_path",
        "filePath",
        "path",
        "file",
        "command",
        "cmd",
        "url",
        "uri",
    ]
    .iter()
    .any(|k| text(args.get(k)).is_some_and(|v| !v.trim().is_empty()));
    names_one.then(|| {
        let mut s = args.to_canonical_pretty();
        s.retain(|c| c != '\n');
        format!("{name} {s}")
    })
}

fn summary_empty(d: &Value<'_>) -> bool {
    match d.get("summary").and_then(|s| s.as_arr()) {
        None => true,
        Some(blocks) => blocks.iter().all(|b| {
            b.get("type").is_some_and(|t| t.is_str("text"))
                && text(b.get("text")).is_none_or(|t| t.trim().is_empty())
        }),
    }
}

impl<'x> Fold<'x> {
    pub(super) fn new(inner: Option<&'x mut dyn Extra>) -> Fold<'x> {
        Fold {
            inner,
            ..Fold::default()
        }
    }

    fn attempt(&mut self, ev: &Event<'_>) {
        let seen = self.attempts.event(ev);
        let mode = self.modes.event(ev, &seen);
        for outcome in [&seen.closed, &seen.ended].into_iter().flatten() {
            if let Outcome::Failed(f) = outcome
                && f.overflow()
            {
                self.overflows.push(Overflow {
                    failed: f.last.map_or(ev.seq, |a| a.seq),
                    turn: f.last.and_then(|a| a.turn).or(ev.turn()),
                    brackets: Vec::new(),
                    outcome: None,
                    usage: f.usage.map(|u| Tokens {
                        input: u.input_tokens,
                        cache_read: u.cache_read_tokens,
                        cache_write: u.cache_write_tokens,
                        output: u.output_tokens,
                        reasoning: 0.0,
                    }),
                    provider: self.provider.clone(),
                    time: crate::civil::recorded(f.last.map_or(ev.time(), |a| a.time)),
                });
            }
        }
        if let Some(mode) = mode {
            self.open = Some(self.brackets.len());
            self.brackets.push(Bracket {
                start: ev.seq,
                turn: ev.turn(),
                mode: Some(mode),
                requests: self.answered,
                generation: (self.generation, self.generation),
                ..Bracket::default()
            });
            if mode == CompactionMode::Overflow
                && let Some(o) = self.overflows.last_mut().filter(|o| o.outcome.is_none())
            {
                o.brackets.push(ev.seq);
            }
        }
    }

    fn compaction(&mut self, ev: &Event<'_>) {
        let d = ev.data();
        match ev.kind {
            Kind::CompactionSummary => {
                if let Some(b) = self.open.and_then(|i| self.brackets.get_mut(i)) {
                    b.summary = Some(ev.seq);
                    b.empty = summary_empty(d);
                }
                self.shadow(ev);
            }
            Kind::CompactionPrune => self.shadow(ev),
            Kind::CompactionEnd => {
                if let Some(i) = self.open.take()
                    && let Some(b) = self.brackets.get_mut(i)
                {
                    b.end = Some(ev.seq);
                    b.error = d.get("error").map(|e| crate::json::js_string(Some(e)));
                    b.generation.1 = self.generation;
                    if let Some(o) = self.overflows.last_mut().filter(|o| o.outcome.is_none())
                        && o.brackets.last() == Some(&b.start)
                    {
                        o.brackets.push(ev.seq);
                    }
                    if b.summary.is_some() && b.error.is_none() {
                        self.waiting = Some(i);
                    }
                }
            }
            _ => {}
        }
    }

    /// A summary or prune shadowed these nodes: the targets whose latest
    /// result was among them are lost.
    fn shadow(&mut self, ev: &Event<'_>) {
        let seqs = ev.data().get("shadowedSeqs").and_then(|a| a.as_arr());
        for seq in seqs.into_iter().flatten().filter_map(|s| s.as_count()) {
            if let Some(target) = self.node_target.get(&seq)
                && let Some(t) = self.targets.get_mut(target)
                && t.lost.is_none()
                && let Some(result) = t.result.filter(|r| *r == seq)
            {
                t.lost = Some(Lost {
                    result,
                    shadow: ev.seq,
                });
            }
        }
    }

    fn tool(&mut self, ev: &Event<'_>) {
        let d = ev.data();
        match ev.kind {
            Kind::ToolCall => {
                let Some(id) = text(d.get("callId")) else {
                    return;
                };
                let name = text(d.get("name")).unwrap_or_default();
                let target = d.get("arguments").and_then(|a| target_of(&name, a));
                // The first call after the loss counts (a second call in
                // parallel reads what the first brings back).
                if let Some(t) = &target
                    && let Some(lost) = self.targets.get_mut(t).and_then(|t| t.lost.take())
                {
                    self.pending.insert(id.clone(), (lost, ev.seq));
                }
                self.calls.insert(id, (ev.seq, target));
            }
            Kind::ToolResult => {
                let msg = d.get("message");
                let Some(id) = text(
                    msg.and_then(|m| m.get("source"))
                        .and_then(|s| s.get("callId")),
                ) else {
                    return;
                };
                let Some(target) = self.calls.get(&id).and_then(|c| c.1.clone()) else {
                    return;
                };
                self.node_target.insert(ev.seq, target.clone());
                if matches!(ev.surface_op(), Some(SurfaceOp::Replace(_))) {
                    // A pruner's replacement: the same result, shortened.
                    let t = self.targets.entry(target).or_default();
                    if t.lost.is_none() {
                        t.result = Some(ev.seq);
                    }
                    return;
                }
                if let Some((lost, call)) = self.pending.remove(&id) {
                    let tokens =
                        crate::surface::project(ev).map_or(0, crate::heuristic::price_message);
                    self.rereads.push(Reread {
                        lost,
                        call,
                        result: ev.seq,
                        tokens,
                        time: crate::civil::recorded(ev.time()),
                    });
                }
                self.targets.insert(
                    target,
                    Target {
                        result: Some(ev.seq),
                        lost: None,
                    },
                );
            }
            _ => {}
        }
    }

    /// A request header: a changed system prompt, tool set or route breaks
    /// the provider's cached prefix.
    fn header(&mut self, ev: &Event<'_>) {
        let Some(h) = ev.data().get("header") else {
            return;
        };
        let h = crate::request_header::canonical(h);
        let key = |v: &OwnedValue| {
            let c = v.get("config");
            Value::obj()
                .with("system", v.get("system").cloned().unwrap_or(Value::Null))
                .with("tools", v.get("tools").cloned().unwrap_or(Value::Null))
                .with(
                    "provider",
                    c.and_then(|c| c.get("provider"))
                        .cloned()
                        .unwrap_or(Value::Null),
                )
                .with(
                    "model",
                    c.and_then(|c| c.get("model"))
                        .cloned()
                        .unwrap_or(Value::Null),
                )
        };
        if let Some(prev) = &self.header
            && !key(prev).deep_eq(&key(&h))
        {
            self.breaks.push(ev.seq);
            self.pending_break = Some(ev.seq);
        }
        self.header = Some(h);
    }

    fn message(&mut self, ev: &Event<'_>) {
        self.answered += 1;
        let d = ev.data();
        let src = d.get("message").and_then(|m| m.get("source"));
        if let (Some(p), Some(m)) = (
            text(src.and_then(|s| s.get("provider"))),
            text(src.and_then(|s| s.get("model"))),
        ) {
            self.provider = Some((p, m));
        }
        if let Some(o) = self.overflows.last_mut().filter(|o| o.outcome.is_none())
            && o.turn == ev.turn()
        {
            o.outcome = Some((true, ev.seq));
        }
        let Some(u) = d.get("usage").filter(|u| u.is_obj()) else {
            return;
        };
        let t = crate::usage::tokens_of(u);
        if let Some(i) = self.waiting.take() {
            self.after.push(After {
                bracket: i,
                message: ev.seq,
                prompt: t.input + t.cache_read + t.cache_write,
            });
        }
        if let Some(b) = self.pending_break.take() {
            let (p, m) = self.provider.clone().unwrap_or_default();
            self.break_input
                .push((b, t, p, m, crate::civil::recorded(ev.time())));
        }
    }

    fn turns(&mut self, ev: &Event<'_>) {
        match ev.kind {
            Kind::TurnStart | Kind::SessionEndSeed => {
                if let Some(start) = self.turn.take() {
                    let why = if ev.kind == Kind::TurnStart {
                        "a new turn began before it ended"
                    } else {
                        "the session was resumed before it ended"
                    };
                    self.abandoned.push(Abandoned {
                        start,
                        end: Some(ev.seq),
                        why,
                    });
                }
                if ev.kind == Kind::TurnStart {
                    self.turn = Some(ev.seq);
                }
                self.end_overflow(ev.seq);
            }
            Kind::TurnEnd => {
                let reason = ev.data().get("reason").and_then(|r| r.get("kind"));
                if let Some(start) = self.turn.take()
                    && reason.is_some_and(|k| k.is_str("interrupted"))
                {
                    self.abandoned.push(Abandoned {
                        start,
                        end: Some(ev.seq),
                        why: "crash repair closed it (interrupted)",
                    });
                }
                self.end_overflow(ev.seq);
            }
            _ => {}
        }
    }

    /// The turn of an unrecovered overflow ended here.
    fn end_overflow(&mut self, seq: u64) {
        if let Some(o) = self.overflows.last_mut().filter(|o| o.outcome.is_none()) {
            o.outcome = Some((false, seq));
        }
    }
}

impl Extra for Fold<'_> {
    fn event(&mut self, ev: &Event<'_>) {
        if let Some(x) = &mut self.inner {
            x.event(ev);
        }
        self.last_seq = ev.seq;
        self.attempt(ev);
        if matches!(ev.surface_op(), Some(SurfaceOp::Replace(_))) {
            self.generation += 1;
            if let Some(b) = self.open.and_then(|i| self.brackets.get_mut(i)) {
                b.generation.1 = self.generation;
            }
        }
        match ev.kind {
            Kind::CompactionSummary | Kind::CompactionPrune | Kind::CompactionEnd => {
                self.compaction(ev)
            }
            Kind::ToolCall | Kind::ToolResult => self.tool(ev),
            Kind::RequestHeader => self.header(ev),
            Kind::AssistantMessage => self.message(ev),
            Kind::TurnStart | Kind::TurnEnd | Kind::SessionEndSeed => self.turns(ev),
            _ => {}
        }
    }

    fn restart(&mut self) {
        let mut inner = self.inner.take();
        if let Some(x) = &mut inner {
            x.restart();
        }
        *self = Fold::new(inner);
    }
}

mod findings;
