//! A cancellation request shared between a signal handler (or any other
//! thread) and a running operation, which checks it at safe points.

use std::sync::atomic::{AtomicI32, Ordering};

/// The text recorded in `compaction/end.error` when a compaction is
/// cancelled (compaction §5.6: the abort reason, rendered by `errorChain`).
pub(crate) const INTERRUPTED: &str = "interrupted";

/// A one-shot cancellation request carrying a nonzero code (for a signal,
/// its number). The first request wins.
#[derive(Debug, Default)]
pub struct Cancel(AtomicI32);

impl Cancel {
    /// Not cancelled.
    pub const fn new() -> Cancel {
        Cancel(AtomicI32::new(0))
    }

    /// Request cancellation with `code` (nonzero; a later request keeps the first code).
    pub fn cancel(&self, code: i32) {
        let code = if code == 0 { -1 } else { code };
        let _ = self
            .0
            .compare_exchange(0, code, Ordering::SeqCst, Ordering::SeqCst);
    }

    /// The code of the request, if cancellation was requested.
    pub fn code(&self) -> Option<i32> {
        match self.0.load(Ordering::SeqCst) {
            0 => None,
            c => Some(c),
        }
    }

    /// Whether cancellation was requested.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.code().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_request_wins() {
        let c = Cancel::new();
        assert_eq!(c.code(), None);
        c.cancel(2);
        c.cancel(15);
        assert_eq!(c.code(), Some(2));
        assert!(c.is_cancelled());
    }
}
