//! Several observers fed from one reading of a log.

use super::{ChunkOffer, Folded, Observer, TakesChunks, packed};
use crate::event::{Event, Kind};

/// Feeds every observer it holds from one pass of the loader, each seeing
/// exactly what it would see if it were fed alone: every event in order,
/// and a packed row or a chunk line either whole ([`Observer::chunks`]
/// returned `true`) or as its chunk events.
///
/// An offer goes whole through the loader only when every observer takes it.
/// When one declines, the loader builds the row's chunks as events, and an
/// observer that took the row whole is not shown them again.
///
/// ```
/// let src = dsh::LogSource::File("samples/compacted.jsonl".into());
/// let (mut events, mut chunks) = (0u64, 0u64);
/// let mut count_all = |_: &dsh::event::Event<'_>, _: &dsh::log::Folded<'_>| events += 1;
/// let mut count_chunks = |ev: &dsh::event::Event<'_>, _: &dsh::log::Folded<'_>| {
///     chunks += (ev.kind == dsh::event::Kind::AssistantChunk) as u64
/// };
/// let mut tee = dsh::log::Tee::new(vec![&mut count_all, &mut count_chunks]);
/// let log = dsh::log::load(&src, &dsh::LoadOptions::default(), &mut tee)?;
/// drop(tee);
/// assert_eq!(events, log.event_count());
/// assert!(chunks > 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Tee<'o> {
    observers: Vec<&'o mut dyn Observer>,
    /// Per observer: the seqs of the last row it took whole, when the row
    /// comes as chunk events for another one.
    took: Vec<Option<(u64, u64)>>,
}

impl<'o> Tee<'o> {
    /// Feed `observers`, in this order, from one pass.
    pub fn new(observers: Vec<&'o mut dyn Observer>) -> Tee<'o> {
        let took = vec![None; observers.len()];
        Tee { observers, took }
    }
}

impl Tee<'_> {
    /// Offer chunks `seqs` (first, last) to every observer; taken when all
    /// took them. Otherwise the chunks come as events, and those who took
    /// them skip them.
    fn offer(&mut self, seqs: (u64, u64), mut take: impl FnMut(&mut dyn Observer) -> bool) -> bool {
        let mut all = true;
        let mut taken = Vec::with_capacity(self.observers.len());
        for o in self.observers.iter_mut() {
            let took = take(&mut **o);
            all &= took;
            taken.push(took);
        }
        if !all {
            for (t, took) in self.took.iter_mut().zip(taken) {
                *t = took.then_some(seqs);
            }
        }
        all
    }
}

impl Observer for Tee<'_> {
    fn event(&mut self, ev: &Event<'_>, folded: &Folded<'_>) {
        for (o, took) in self.observers.iter_mut().zip(&mut self.took) {
            if let Some((first, last)) = *took {
                if ev.kind == Kind::AssistantChunk && (first..=last).contains(&ev.seq) {
                    continue;
                }
                *took = None;
            }
            o.event(ev, folded);
        }
    }

    fn chunks(&mut self, offer: ChunkOffer<'_>, folded: &Folded<'_>) -> bool {
        self.offer(offer.seqs(), |o| o.chunks(offer, folded))
    }

    fn takes_chunks(&self) -> TakesChunks {
        self.observers
            .iter()
            .fold(TakesChunks::NONE, |all, o| all.or(o.takes_chunks()))
    }

    fn chunks_counted(&mut self, span: &packed::RowSpan) {
        for o in self.observers.iter_mut() {
            o.chunks_counted(span);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{LoadOptions, LogSource, load};

    /// Records what it is shown; takes packed rows whole or not.
    struct Seen {
        takes: bool,
        events: Vec<(u64, bool)>,
        rows: Vec<(u64, u64)>,
        counted: Vec<(u64, u64)>,
    }

    impl Seen {
        fn new(takes: bool) -> Seen {
            Seen {
                takes,
                events: Vec::new(),
                rows: Vec::new(),
                counted: Vec::new(),
            }
        }
    }

    impl Observer for Seen {
        fn event(&mut self, ev: &Event<'_>, folded: &Folded<'_>) {
            self.events.push((ev.seq, folded.synthetic));
        }
        fn chunks(&mut self, offer: ChunkOffer<'_>, _: &Folded<'_>) -> bool {
            let ChunkOffer::Row(span, _) = offer else {
                return false;
            };
            if self.takes {
                self.rows.push((span.seq0, span.count));
            }
            self.takes
        }
        fn takes_chunks(&self) -> TakesChunks {
            if self.takes {
                TakesChunks::ROWS
            } else {
                TakesChunks::NONE
            }
        }
        fn chunks_counted(&mut self, span: &packed::RowSpan) {
            self.counted.push((span.seq0, span.count));
        }
    }

    fn alone(src: &LogSource, takes: bool) -> Seen {
        let mut s = Seen::new(takes);
        load(src, &LoadOptions::default(), &mut s).unwrap();
        s
    }

    #[test]
    fn each_sees_what_it_sees_alone() {
        for f in ["samples/coding-session.jsonl", "samples/compacted.jsonl"] {
            let src = LogSource::File(f.into());
            for (a_takes, b_takes) in [(true, false), (false, true), (true, true), (false, false)] {
                let (mut a, mut b) = (Seen::new(a_takes), Seen::new(b_takes));
                let log = load(
                    &src,
                    &LoadOptions::default(),
                    &mut Tee::new(vec![&mut a, &mut b]),
                )
                .unwrap();
                for (seen, takes) in [(&a, a_takes), (&b, b_takes)] {
                    let want = alone(&src, takes);
                    assert_eq!(seen.events, want.events, "{f}: takes {takes}");
                    assert_eq!(seen.rows, want.rows, "{f}: takes {takes}");
                    if takes {
                        // Rows were offered, and taken ones are not shown again.
                        assert!(!seen.rows.is_empty(), "{f}");
                        assert!(seen.events.len() < log.event_count() as usize);
                    } else {
                        assert_eq!(seen.events.len() as u64, log.event_count(), "{f}");
                    }
                }
                // Rows counted by the loader are counted for all, which
                // only happens when all took them.
                assert_eq!(a.counted, b.counted);
                assert_eq!(a.counted.is_empty(), !(a_takes && b_takes));
            }
        }
    }
}
