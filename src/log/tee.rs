//! Several observers fed from one reading of a log.

use super::{ChunkRun, Folded, Observer};
use crate::event::Event;

/// Feeds every observer it holds from one pass of the loader, each seeing
/// exactly what it would see if it were fed alone: every event and every
/// `ChunkRun` in order (a run's events, when some want them, are built
/// once for all).
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
}

impl<'o> Tee<'o> {
    /// Feed `observers`, in this order, from one pass.
    pub fn new(observers: Vec<&'o mut dyn Observer>) -> Tee<'o> {
        Tee { observers }
    }
}

impl Observer for Tee<'_> {
    fn event(&mut self, ev: &Event<'_>, folded: &Folded<'_>) {
        for o in self.observers.iter_mut() {
            o.event(ev, folded);
        }
    }

    fn chunks(&mut self, run: &ChunkRun<'_>, folded: &Folded<'_>) {
        for o in self.observers.iter_mut() {
            o.chunks(run, folded);
        }
    }
}
