//! Model attempts and the point each was sent: one definition shared by
//! `dsh cache` (what the provider could reuse) and `dsh simulate` (how big
//! each request was).
//!
//! **The sent point.** A model request is the surface (with the folded
//! request header) as it stood when its attempt began: after the turn's
//! user message, the `request/header` and `request/context` records and any
//! splices written for the step, and before the first record the attempt
//! itself wrote. An attempt begins at
//!
//! * its first `assistant/chunk` (generation 0: chunks stream into the log;
//!   a packed row of delta chunks is the same),
//! * an `assistant/attempt` record (generations 2+: a failed attempt with
//!   its stream embedded), or
//! * an `assistant/message` that no chunk of its own preceded (generations
//!   2+: the stream is embedded in the message).
//!
//! So a request is sized on the log as it stood just before that record:
//! `dsh measure --at SEQ-1`. An overflow-recovery compaction (compaction
//! §2.6) sits between a failed attempt and its retry, so the retry's sent
//! point is after it, as the retry re-derives the request from the log.
//!
//! **How an attempt ends.** With its `assistant/message` (answered); with a
//! `finish` chunk of kind `error` or `aborted`, or an `assistant/attempt`
//! (failed, with the failure code); or, still open when a `step/start`,
//! `turn/start`, `turn/end` or `session/end-seed` comes, `unfinished` (the
//! process stopped or abandoned the stream).
//!
//! **Whether the provider received a failed attempt.** It did when the log
//! shows it: at least one chunk besides `finish` (a block, a delta, a usage
//! report), or a code that only a provider that processed the request
//! returns ([`PROCESSED_CODES`]). Codes such as `AUTH`, `RATE_LIMIT`,
//! `CONTEXT_WINDOW_EXCEEDED` or `TRANSPORT` may come before the model read
//! anything; whether such an attempt counts is the caller's rule (the cache
//! leaves it out, simulate sizes it and counts an overflow).

use crate::event::{Event, Kind, StreamRecord};
use crate::json::Value;

/// Failure codes returned only by a provider that read the request.
const PROCESSED_CODES: [&str; 4] = [
    "EMPTY_RESPONSE",
    "MALFORMED_RESPONSE",
    "STREAM_CLOSED",
    "LLM_STREAM_IDLE_TIMEOUT",
];

/// The failure code of a context-window overflow (compaction §6.5).
const OVERFLOW_CODE: &str = "CONTEXT_WINDOW_EXCEEDED";

/// What the provider reported for a request (`assistant/message.usage`).
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Reported {
    /// Uncached input tokens.
    #[schemars(with = "u64")]
    pub input_tokens: f64,
    /// Tokens read from the cache.
    #[schemars(with = "u64")]
    pub cache_read_tokens: f64,
    /// Tokens written to the cache.
    #[schemars(with = "u64")]
    pub cache_write_tokens: f64,
    /// Output tokens.
    #[schemars(with = "u64")]
    pub output_tokens: f64,
}

impl Reported {
    /// Billed prompt: input + cache read + cache write.
    pub fn prompt(&self) -> f64 {
        self.input_tokens + self.cache_read_tokens + self.cache_write_tokens
    }

    /// Read a usage object (missing fields are 0).
    pub(crate) fn of(u: &Value<'_>) -> Reported {
        let n = |k: &str| u.get(k).and_then(|v| v.as_f64()).unwrap_or(0.0);
        Reported {
            input_tokens: n("inputTokens"),
            cache_read_tokens: n("cacheReadTokens"),
            cache_write_tokens: n("cacheWriteTokens"),
            output_tokens: n("outputTokens"),
        }
    }

    /// The `usage` of an event's data, unless absent or `null`.
    pub(crate) fn in_data(d: &Value<'_>) -> Option<Reported> {
        d.get("usage")
            .filter(|u| !matches!(u, Value::Null))
            .map(Reported::of)
    }
}

/// Where an attempt got to: its last record's seq, time, turn and step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct At {
    /// Seq of the attempt's last record.
    pub seq: u64,
    /// Its `time`.
    pub time: f64,
    /// Its turn.
    pub turn: Option<f64>,
    /// Its step.
    pub step: Option<f64>,
}

impl At {
    fn of(ev: &Event<'_>) -> At {
        At {
            seq: ev.seq,
            time: ev.time(),
            turn: ev.turn(),
            step: ev.step(),
        }
    }
}

/// A failed attempt.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Failed {
    /// `LlmFailure.code`, `aborted`, or `unfinished`.
    pub code: String,
    /// The log shows the provider received it (module doc).
    pub reached: bool,
    /// A usage chunk it streamed.
    pub usage: Option<Reported>,
    /// Its last record, when it wrote one.
    pub last: Option<At>,
}

impl Failed {
    /// Failed with a context-window overflow.
    pub(crate) fn overflow(&self) -> bool {
        self.code == OVERFLOW_CODE
    }
}

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Outcome {
    /// Its `assistant/message` (the event being seen).
    Answered,
    /// It failed.
    Failed(Failed),
    /// It finished normally but no `assistant/message` followed before the
    /// next step, turn or lifecycle: nothing to record.
    Lost,
}

/// What one event means for attempts, in the order it happens: an open
/// attempt `closed` before it, an attempt that `begins` at it (sent on the
/// log as it stood before it), and an attempt it `ended`.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Seen {
    /// The attempt that was open before this event and ended without it.
    pub closed: Option<Outcome>,
    /// An attempt begins at this event: its request is the log before it.
    pub begins: bool,
    /// The attempt this event ended.
    pub ended: Option<Outcome>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum State {
    #[default]
    Idle,
    /// Streaming.
    Open,
    /// A normal `finish` came; its `assistant/message` is next.
    Finished,
}

/// The attempt state of one log, fed every event in order ([`Self::event`])
/// and every packed row of delta chunks taken whole ([`Self::chunk_row`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct Attempts {
    state: State,
    /// Chunks of the open attempt besides `finish`.
    chunks: u64,
    usage: Option<Reported>,
    last: Option<At>,
}

impl Attempts {
    fn begin(&mut self) {
        self.state = State::Open;
        self.chunks = 0;
        self.usage = None;
        self.last = None;
    }

    fn fail(&mut self, code: String) -> Outcome {
        self.state = State::Idle;
        let reached =
            self.chunks > 0 || self.usage.is_some() || PROCESSED_CODES.contains(&code.as_str());
        Outcome::Failed(Failed {
            code,
            reached,
            usage: self.usage.take(),
            last: self.last.take(),
        })
    }

    /// An attempt still open (or finished without its message) ends here.
    fn close(&mut self) -> Option<Outcome> {
        match self.state {
            State::Idle => None,
            State::Open => Some(self.fail("unfinished".into())),
            State::Finished => {
                self.state = State::Idle;
                Some(Outcome::Lost)
            }
        }
    }

    /// One event.
    pub(crate) fn event(&mut self, ev: &Event<'_>) -> Seen {
        let mut seen = Seen::default();
        match ev.kind {
            Kind::StepStart | Kind::TurnStart | Kind::TurnEnd | Kind::SessionEndSeed => {
                seen.closed = self.close();
            }
            Kind::AssistantChunk => {
                self.chunk(ev.data().get("chunk"), 1, At::of(ev), &mut seen);
            }
            Kind::AssistantMessage => {
                if self.state == State::Idle {
                    seen.begins = true;
                }
                self.state = State::Idle;
                self.last = None;
                seen.ended = Some(Outcome::Answered);
            }
            // A G2+ attempt embeds the chunks a G0 log writes as events:
            // they are folded as those would be, one by one (an attempt
            // whose stream has no `finish` stays open, as its chunks would).
            Kind::Other | Kind::Unknown if ev.type_name() == "assistant/attempt" => {
                for r in ev.stream() {
                    match r {
                        StreamRecord::Chunk(c) => self.chunk(Some(c), 1, At::of(ev), &mut seen),
                        StreamRecord::Run { members } => {
                            self.chunk(None, members as u64, At::of(ev), &mut seen)
                        }
                    }
                }
            }
            _ => {}
        }
        seen
    }

    /// One `assistant/chunk` (`chunk` its `data.chunk`), or `deltas` delta
    /// chunks of a packed run (`chunk` `None`), at `at`.
    fn chunk(&mut self, chunk: Option<&Value<'_>>, deltas: u64, at: At, seen: &mut Seen) {
        if deltas == 0 {
            return;
        }
        if self.state != State::Open {
            let closed = self.close();
            seen.closed = seen.closed.take().or(closed);
            self.begin();
            seen.begins = true;
        }
        self.last = Some(at);
        let ty = chunk.and_then(|c| c.get("type"));
        if ty.is_some_and(|t| t.is_str("finish")) {
            let reason = chunk.and_then(|c| c.get("reason"));
            let kind = reason.and_then(|r| r.get("kind"));
            if kind.is_some_and(|k| k.is_str("error") || k.is_str("aborted")) {
                let code = failure_code(reason).unwrap_or_else(|| "aborted".into());
                seen.ended = Some(self.fail(code));
            } else {
                self.state = State::Finished;
            }
        } else {
            self.chunks += deltas;
            if ty.is_some_and(|t| t.is_str("usage"))
                && let Some(u) = chunk.and_then(|c| c.get("usage"))
            {
                self.usage = Some(Reported::of(u));
            }
        }
    }

    /// A packed row of `count` delta chunks (never `finish` or `usage`),
    /// the last at `last`: `true` when an attempt begins with it.
    pub(crate) fn chunk_row(&mut self, count: u64, last: At) -> (Option<Outcome>, bool) {
        if count == 0 {
            return (None, false);
        }
        let mut closed = None;
        let begins = self.state != State::Open;
        if begins {
            closed = self.close();
            self.begin();
        }
        self.chunks += count;
        self.last = Some(last);
        (closed, begins)
    }
}

fn failure_code(reason: Option<&Value<'_>>) -> Option<String> {
    reason
        .and_then(|r| r.get("failure"))
        .and_then(|f| f.get("code"))
        .and_then(|c| c.as_str())
        .map(|c| c.into_owned())
}

/// Which path wrote a compaction bracket (compaction §2.5–§2.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum CompactionMode {
    /// The pre-step pressure path: between steps, owned by the open turn.
    Pressure,
    /// The overflow path: inside a step, after an attempt that failed with
    /// `CONTEXT_WINDOW_EXCEEDED` and before its retry.
    Overflow,
    /// `/compact`: a standalone bracket (`turn: null`) between turns.
    Manual,
}

impl CompactionMode {
    /// `pressure`, `overflow`, `manual`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            CompactionMode::Pressure => "pressure",
            CompactionMode::Overflow => "overflow",
            CompactionMode::Manual => "manual",
        }
    }
}

/// The mode of each recorded bracket, told from where the log put it: fed
/// every event in order (with what [`Attempts::event`] saw of it), it names
/// the mode of each `compaction/start`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Modes {
    /// The last attempt of the current step failed with an overflow, and
    /// no attempt has begun since.
    overflowed: bool,
}

impl Modes {
    /// One event; `Some(mode)` at a `compaction/start`.
    pub(crate) fn event(&mut self, ev: &Event<'_>, seen: &Seen) -> Option<CompactionMode> {
        let failed_over =
            |o: &Option<Outcome>| matches!(o, Some(Outcome::Failed(f)) if f.overflow());
        if seen.begins || matches!(ev.kind, Kind::StepStart | Kind::TurnStart | Kind::TurnEnd) {
            self.overflowed = false;
        }
        if failed_over(&seen.ended) || failed_over(&seen.closed) && !seen.begins {
            self.overflowed = true;
        }
        if ev.kind != Kind::CompactionStart {
            return None;
        }
        let owner = ev.data().get("turn");
        Some(if owner.is_none_or(|t| matches!(t, Value::Null)) {
            CompactionMode::Manual
        } else if self.overflowed {
            CompactionMode::Overflow
        } else {
            CompactionMode::Pressure
        })
    }
}
