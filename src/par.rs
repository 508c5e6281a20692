//! Work over a slice on every core, the answers kept in the slice's order.
//!
//! Commands that go back to the log after loading it (the pruner reading
//! each tool result again, …) do independent work per item; the loader's
//! second thread is idle by then, so the items are shared out to as many
//! threads as there are cores.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Items a thread takes at the least: fewer than this run on the calling
/// thread alone, as starting a thread costs more than they do.
const FEW: usize = 16;

/// `items.iter().map(f)` on every core, in order, each thread taking one
/// contiguous share. Each thread has its own `S` (a file handle, a reader
/// of the log), created with `S::default()` and passed to every call on
/// that thread; items are in log order, so a thread's reader walks only
/// its own part of the log (an artifact's reader decompresses everything
/// it walks past: interleaved shares would have every thread decompress
/// all of it). Few items run on the calling thread alone.
pub(crate) fn map_in_order<T, S, R, F>(items: &[T], f: F) -> Vec<R>
where
    T: Sync,
    S: Default,
    R: Send,
    F: Fn(&T, &mut S) -> R + Sync,
{
    // At least FEW items a share: a few items stay on this thread.
    map_in_chunks(items, items.len().div_ceil(threads()).max(FEW), f)
}

/// The threads to share work out to: the cores, at most eight.
fn threads() -> usize {
    cores().min(8)
}

/// The cores this process may use, looked up once (on Linux the lookup
/// reads the cgroup's quota from files, and loads ask for every log).
pub(crate) fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// [`map_in_order`] for few, large items (a compaction's span each): a
/// thread takes `chunk` items at a time, so that one is not left with all
/// the work.
pub(crate) fn map_in_chunks<T, S, R, F>(items: &[T], chunk: usize, f: F) -> Vec<R>
where
    T: Sync,
    S: Default,
    R: Send,
    F: Fn(&T, &mut S) -> R + Sync,
{
    let chunk = chunk.max(1);
    let threads = threads().min(items.len().div_ceil(chunk));
    if threads <= 1 {
        let mut state = S::default();
        return items.iter().map(|t| f(t, &mut state)).collect();
    }
    let next = AtomicUsize::new(0);
    let work = || {
        let mut state = S::default();
        let mut done = Vec::new();
        loop {
            let start = next.fetch_add(chunk, Ordering::Relaxed);
            if start >= items.len() {
                break done;
            }
            let end = (start + chunk).min(items.len());
            let out = items[start..end].iter().map(|t| f(t, &mut state)).collect();
            done.push((start, out));
        }
    };
    let mut chunks: Vec<(usize, Vec<R>)> = std::thread::scope(|scope| {
        // This thread works too; a thread that cannot start (a process
        // short of memory or threads) leaves its share to the others.
        let workers: Vec<_> = (1..threads)
            .map_while(|_| std::thread::Builder::new().spawn_scoped(scope, work).ok())
            .collect();
        let mut all = work();
        for w in workers {
            all.extend(w.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
        }
        all
    });
    chunks.sort_unstable_by_key(|&(start, _)| start);
    chunks.into_iter().flat_map(|(_, out)| out).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_order_and_gives_each_thread_its_state() {
        let items: Vec<u32> = (0..1000).collect();
        let out = map_in_order(&items, |&x, calls: &mut u32| {
            *calls += 1;
            (x * 2, *calls)
        });
        assert_eq!(out.len(), 1000);
        assert!(out.iter().enumerate().all(|(i, &(v, _))| v == 2 * i as u32));
        // Every call saw its thread's state grow.
        assert!(out.iter().all(|&(_, calls)| calls >= 1));
        let few = map_in_order(&[1, 2, 3], |&x, _: &mut ()| x + 1);
        assert_eq!(few, vec![2, 3, 4]);
        // One at a time: a few large items still spread over the threads.
        let one = map_in_chunks(&items[..20], 1, |&x, _: &mut ()| x * 3);
        assert_eq!(one, (0..20).map(|x| x * 3).collect::<Vec<u32>>());
    }
}
