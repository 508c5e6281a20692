//! The one shape in which the loader hands log-only chunks to observers: a
//! [`ChunkRun`], consecutive `assistant/chunk` events (a packed row's, or a
//! plain chunk line as a run of one), with what readers use of them and a
//! way to the full events for the readers that need those.

use std::cell::OnceCell;

use crate::event::{Event, Kind};
use crate::json::Value;

use super::Folded;
pub(crate) use super::fastlane::{ChunkFact, ChunkFacts};
pub(crate) use super::packed::RowFacts;

/// Consecutive log-only `assistant/chunk` events, stored events
/// `seq0 ..= seq0 + count - 1`, that change nothing but counts and the
/// clock (session-log §3.5). Every chunk event of a G0 or G1 log reaches an
/// [`super::Observer`] as part of exactly one run, whether the log holds it
/// as a packed row, a plain line or a Zstandard frame's line.
pub struct ChunkRun<'c> {
    /// Seq of the first chunk.
    pub seq0: u64,
    /// Number of chunks (at least 1).
    pub count: u64,
    /// Time of the first chunk.
    pub first_time: f64,
    /// Time of the last chunk.
    pub last_time: f64,
    /// No chunk's time is before the one before it: a reader that checks
    /// times event by event needs only the first.
    pub in_order: bool,
    /// What the loader learnt of the chunks without building them.
    pub facts: RunFacts<'c>,
    source: Source<'c>,
    /// The events, built on first use.
    built: OnceCell<Option<Box<Built<'c>>>>,
}

/// What a [`ChunkRun`] tells of its chunks besides seqs and times.
#[derive(Debug, Clone, Copy)]
pub enum RunFacts<'c> {
    /// Nothing: the chunks were only counted
    /// ([`super::LoadOptions::skip_chunk_events`]); the run has no events.
    Counted,
    /// A packed row's delta chunks, by their labels and lengths.
    Row(&'c RowFacts),
    /// One chunk line's chunk, in a spelling [`ChunkFact`] describes.
    Line(&'c ChunkFacts),
    /// No facts: the one chunk is at hand as an event
    /// (`ChunkRun::each_event`).
    Event,
}

/// The labels of a run of delta chunks ([`ChunkRun::deltas`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Deltas {
    /// `data.turn`.
    pub turn: f64,
    /// `data.step`.
    pub step: f64,
}

/// A run's events, and a chunk line's text when canonical.
type Built<'c> = (Vec<Event<'c>>, Option<&'c str>);

/// Where a run's events come from.
enum Source<'c> {
    /// Counted only.
    None,
    /// A packed row's or a chunk line's text, at a line number, with where
    /// the line starts in the plaintext.
    Text {
        text: &'c str,
        line: u64,
        offset: u64,
        row: bool,
    },
    /// A parsed packed row.
    Row { value: &'c Value<'c>, line: u64 },
    /// An event already built.
    Event(&'c Event<'c>),
}

impl<'c> ChunkRun<'c> {
    #[inline]
    fn new(seq0: u64, count: u64, times: (f64, f64), in_order: bool) -> ChunkRun<'c> {
        ChunkRun {
            seq0,
            count,
            first_time: times.0,
            last_time: times.1,
            in_order,
            facts: RunFacts::Counted,
            source: Source::None,
            built: OnceCell::new(),
        }
    }

    /// Chunks counted, not shown ([`RunFacts::Counted`]).
    #[inline]
    pub(crate) fn counted(seq0: u64, count: u64, times: (f64, f64), in_order: bool) -> Self {
        Self::new(seq0, count, times, in_order)
    }

    /// A valid packed row's chunks, counted, not shown.
    #[inline]
    pub(crate) fn counted_row(span: &super::packed::RowSpan) -> Self {
        Self::of_span(span)
    }

    /// A valid packed row read from its text by the fast lane.
    #[inline]
    pub(crate) fn row_text(
        span: &super::packed::RowSpan,
        facts: &'c RowFacts,
        text: &'c str,
        line: u64,
        offset: u64,
    ) -> Self {
        ChunkRun {
            facts: RunFacts::Row(facts),
            source: Source::Text {
                text,
                line,
                offset,
                row: true,
            },
            ..Self::of_span(span)
        }
    }

    /// A valid packed row parsed the normal way.
    #[inline]
    pub(crate) fn row_value(
        span: &super::packed::RowSpan,
        facts: &'c RowFacts,
        value: &'c Value<'c>,
        line: u64,
    ) -> Self {
        ChunkRun {
            facts: RunFacts::Row(facts),
            source: Source::Row { value, line },
            ..Self::of_span(span)
        }
    }

    /// A valid chunk line read from its text by the fast lane.
    #[inline]
    pub(crate) fn line_text(
        seq: u64,
        time: f64,
        facts: &'c ChunkFacts,
        text: &'c str,
        line: u64,
        offset: u64,
    ) -> Self {
        ChunkRun {
            facts: RunFacts::Line(facts),
            source: Source::Text {
                text,
                line,
                offset,
                row: false,
            },
            ..Self::new(seq, 1, (time, time), true)
        }
    }

    /// One chunk event the loader built and checked the normal way.
    pub(crate) fn event(ev: &'c Event<'c>) -> Self {
        let t = ev.time();
        ChunkRun {
            facts: RunFacts::Event,
            source: Source::Event(ev),
            ..Self::new(ev.seq, 1, (t, t), true)
        }
    }

    #[inline]
    fn of_span(span: &super::packed::RowSpan) -> Self {
        Self::new(
            span.seq0,
            span.count,
            (span.first_time as f64, span.last_time as f64),
            span.in_order,
        )
    }

    /// The seq of the last chunk.
    pub(crate) fn last_seq(&self) -> u64 {
        self.seq0 + self.count.saturating_sub(1)
    }

    /// Whether every chunk's time, taken in turn after `prev`, is at least
    /// `min` and at least the time before it: the clock check that readers
    /// wanting real times make event by event, for the whole run at once.
    pub(crate) fn times_rise_from(&self, prev: f64, min: f64) -> bool {
        self.in_order && self.first_time >= min && self.first_time >= prev
    }

    /// The labels of the run when every chunk in it is a delta (a packed
    /// row's, or a chunk line's text, reasoning or tool-call delta): such
    /// chunks open or go on with an attempt and carry no finish or usage.
    pub(crate) fn deltas(&self) -> Option<Deltas> {
        match self.facts {
            RunFacts::Row(f) => Some(Deltas {
                turn: f.turn,
                step: f.step,
            }),
            RunFacts::Line(f)
                if matches!(
                    f.chunk,
                    ChunkFact::TextDelta { .. } | ChunkFact::ToolCallDelta { .. }
                ) =>
            {
                Some(Deltas {
                    turn: f.turn,
                    step: f.step,
                })
            }
            _ => None,
        }
    }

    /// Show each chunk of the run to `f` as the event it stands for, in
    /// order, with `folded` (the fold after the run), a chunk line's own
    /// text as its canonical line when it is one. Nothing for a counted
    /// run. The events are built once, whoever asks first.
    pub(crate) fn each_event(
        &self,
        folded: &Folded<'_>,
        mut f: impl FnMut(&Event<'_>, &Folded<'_>),
    ) {
        let (line, offset) = match self.source {
            Source::None => return,
            Source::Event(ev) => return f(ev, folded),
            Source::Text { line, offset, .. } => (line, Some(offset)),
            Source::Row { line, .. } => (line, None),
        };
        let built = self.built.get_or_init(|| {
            let (values, canonical) = match self.source {
                Source::Text { text, row, .. } => {
                    let (v, c, _) = Value::parse_event_line(text).ok()?;
                    if row {
                        (super::packed::expand(&v).ok()?, None)
                    } else {
                        (vec![v], c.then_some(text))
                    }
                }
                Source::Row { value, .. } => (super::packed::expand(value).ok()?, None),
                Source::None | Source::Event(_) => return None,
            };
            let events = values
                .into_iter()
                .enumerate()
                .map(|(i, value)| Event {
                    kind: Kind::AssistantChunk,
                    seq: self.seq0 + i as u64,
                    line,
                    value,
                })
                .collect();
            Some(Box::new((events, canonical)))
        });
        let Some(built) = built else {
            return;
        };
        let (events, canonical) = &**built;
        let one = Folded {
            applied: None,
            surface: folded.surface,
            synthetic: false,
            canonical_line: *canonical,
            canonical_offset: canonical.and(offset),
        };
        for ev in events {
            f(ev, &one);
        }
    }
}

/// The packed-versus-one-by-one equivalence, once for every reader: an
/// observer sees the same chunks, with the same seqs, times and facts, and
/// the same events, whether the log holds its chunks as packed rows or as
/// plain lines, in plain JSONL or a Zstandard artifact, and whatever the
/// generation.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{LoadOptions, LogSource, Observer, load};

    /// A delta chunk's turn, step, kind and length.
    type Delta = (f64, f64, &'static str, usize);

    /// What one observer saw: every event as its line, and every chunk as
    /// `(seq, time, facts)` (the facts of a row member or a chunk line:
    /// turn, step, the delta's kind and length; `None` without facts).
    #[derive(Debug, Default, PartialEq)]
    struct Seen {
        events: Vec<(u64, String)>,
        chunks: Vec<(u64, f64, Option<Delta>)>,
        counted: u64,
    }

    /// Takes runs as they are, checking each one's facts against its
    /// events.
    struct Runs(Seen);

    impl Observer for Runs {
        fn event(&mut self, ev: &Event<'_>, _: &Folded<'_>) {
            assert_ne!(ev.kind, Kind::AssistantChunk, "chunks come as runs");
            self.0.events.push((ev.seq, ev.value.to_json()));
        }
        fn chunks(&mut self, run: &ChunkRun<'_>, folded: &Folded<'_>) {
            let mut facts = Vec::new();
            match run.facts {
                RunFacts::Counted => self.0.counted += run.count,
                RunFacts::Row(f) => {
                    let kind = if f.tool {
                        "tool"
                    } else if f.reasoning {
                        "reasoning"
                    } else {
                        "text"
                    };
                    assert_eq!(f.lens.len() as u64, run.count);
                    for &len in &f.lens {
                        facts.push(Some((f.turn, f.step, kind, len as usize)));
                    }
                }
                RunFacts::Line(f) => facts.push(Some(match f.chunk {
                    ChunkFact::TextDelta { reasoning, len, .. } => (
                        f.turn,
                        f.step,
                        if reasoning { "reasoning" } else { "text" },
                        len,
                    ),
                    ChunkFact::ToolCallDelta { args_len, .. } => (f.turn, f.step, "tool", args_len),
                    _ => (f.turn, f.step, "other", 0),
                })),
                RunFacts::Event => facts.push(None),
            }
            let mut events = Vec::new();
            run.each_event(folded, |ev, _| {
                assert_eq!(ev.kind, Kind::AssistantChunk);
                events.push((ev.seq, ev.time(), ev.value.to_json(), delta_of(ev)));
            });
            if matches!(run.facts, RunFacts::Counted) {
                assert!(events.is_empty());
                return;
            }
            assert_eq!(events.len() as u64, run.count);
            assert_eq!(events[0].1, run.first_time);
            assert_eq!(events.last().unwrap().1, run.last_time);
            assert_eq!(run.last_seq(), events.last().unwrap().0);
            let in_order = events.windows(2).all(|w| w[1].1 >= w[0].1);
            assert!(!run.in_order || in_order);
            for (i, (seq, time, json, delta)) in events.into_iter().enumerate() {
                assert_eq!(seq, run.seq0 + i as u64);
                // A run's facts are what its events say.
                let fact = facts.get(i).copied().flatten();
                if let Some(f) = fact.filter(|f| f.2 != "other") {
                    assert_eq!(Some(f), delta, "{json}");
                }
                self.0.chunks.push((seq, time, delta.or(fact)));
                self.0.events.push((seq, json));
            }
        }
    }

    /// A delta chunk event's facts, read from the event.
    fn delta_of(ev: &Event<'_>) -> Option<Delta> {
        let d = ev.data();
        let c = d.get("chunk")?;
        let (kind, key) = match &*c.get("type")?.as_str()? {
            "text-delta" => ("text", "text"),
            "reasoning-delta" => ("reasoning", "text"),
            "tool-call-delta" => ("tool", "argumentsDelta"),
            _ => return None,
        };
        let len = c.get(key)?.as_jstr()?.len16();
        Some((
            d.get("turn")?.as_f64()?,
            d.get("step")?.as_f64()?,
            kind,
            len,
        ))
    }

    /// Every event, chunks included, through the default `chunks`.
    fn events_of(src: &LogSource, opts: &LoadOptions) -> Vec<(u64, String)> {
        let mut all = Vec::new();
        let mut see = |ev: &Event<'_>, _: &Folded<'_>| all.push((ev.seq, ev.value.to_json()));
        load(src, opts, &mut see).unwrap();
        all
    }

    fn runs_of(src: &LogSource, opts: &LoadOptions) -> Seen {
        let mut r = Runs(Seen::default());
        load(src, opts, &mut r).unwrap();
        r.0
    }

    /// The log with every packed row written as its chunk lines.
    fn unpacked(path: &str) -> String {
        let mut out = String::new();
        for line in std::fs::read_to_string(path).unwrap().split_inclusive('\n') {
            match Value::parse(line.trim_end()) {
                Ok(v) if super::super::packed::is_row(&v) => {
                    for ev in super::super::packed::expand(&v).unwrap() {
                        out.push_str(&ev.to_json());
                        out.push('\n');
                    }
                }
                // Other lines, a torn one included, as they are.
                _ => out.push_str(line),
            }
        }
        out
    }

    /// The log as a multi-frame artifact: the header alone in the first
    /// frame, then three lines a frame, each frame checksummed.
    fn zstd_of(src: &LogSource, dir: &std::path::Path, name: &str) -> LogSource {
        let LogSource::File(from) = src else {
            unreachable!()
        };
        let text = std::fs::read_to_string(from).unwrap();
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let mut c = zstd::bulk::Compressor::new(3).unwrap();
        c.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true))
            .unwrap();
        let mut out = c.compress(lines[0].as_bytes()).unwrap();
        for frame in lines[1..].chunks(3) {
            out.extend(c.compress(frame.concat().as_bytes()).unwrap());
        }
        let path = dir.join(name);
        std::fs::write(&path, out).unwrap();
        LogSource::File(path)
    }

    #[test]
    fn every_form_of_a_log_shows_the_same_chunks_and_events() {
        let dir = tempfile::tempdir().unwrap();
        let skip = LoadOptions {
            skip_chunk_events: true,
            ..LoadOptions::default()
        };
        let mut rows_seen = 0;
        for f in [
            "samples/coding-session.jsonl",
            "samples/compacted.jsonl",
            "samples/anthropic-cache.jsonl",
            "samples/overflow-recovery.jsonl",
            "samples/meter-assembler.jsonl",
            "samples/generations/compacted/session.v1.jsonl",
        ] {
            let packed = LogSource::File(f.into());
            let plain_path = dir.path().join("plain.jsonl");
            std::fs::write(&plain_path, unpacked(f)).unwrap();
            let plain = LogSource::File(plain_path);
            let forms = [
                zstd_of(&packed, dir.path(), "packed.zstd"),
                zstd_of(&plain, dir.path(), "plain.zstd"),
                plain,
                packed,
            ];
            let want = events_of(&forms[0], &LoadOptions::default());
            let want_runs = runs_of(&forms[0], &LoadOptions::default());
            assert_eq!(want_runs.events, want, "{f}");
            assert!(!want_runs.chunks.is_empty(), "{f}");
            let want_counted = runs_of(&forms[0], &skip);
            for src in &forms {
                assert_eq!(events_of(src, &LoadOptions::default()), want, "{f}");
                let seen = runs_of(src, &LoadOptions::default());
                assert_eq!(seen, want_runs, "{f}: {}", src.display());
                // Counted, the chunks are shown by their seqs and times only.
                let counted = runs_of(src, &skip);
                assert_eq!(counted.events, want_counted.events, "{f}");
                assert_eq!(counted.counted, want_counted.counted, "{f}");
            }
            // Fed together through a tee, each sees what it sees alone.
            let (mut runs, mut all) = (Runs(Seen::default()), Vec::new());
            let mut see = |ev: &Event<'_>, _: &Folded<'_>| all.push((ev.seq, ev.value.to_json()));
            let mut tee = crate::log::Tee::new(vec![&mut see, &mut runs]);
            load(&forms[3], &LoadOptions::default(), &mut tee).unwrap();
            drop(tee);
            assert_eq!((all, runs.0), (want, want_runs), "{f}: tee");
            rows_seen += std::fs::read_to_string(f)
                .unwrap()
                .matches("-chunks\"")
                .count();
        }
        assert!(rows_seen > 0);
        // Later generations embed their chunks in the events that own them:
        // nothing comes as a run, in either container.
        for g in ["v2", "v3"] {
            let f = format!("samples/generations/compacted/session.{g}.jsonl");
            let src = LogSource::File(f.clone().into());
            let want = runs_of(&src, &LoadOptions::default());
            assert!(want.chunks.is_empty() && !want.events.is_empty(), "{f}");
            assert_eq!(want.events, events_of(&src, &LoadOptions::default()));
            let z = zstd_of(&src, dir.path(), "later.zstd");
            assert_eq!(runs_of(&z, &LoadOptions::default()), want, "{f}");
        }
    }
}
