//! A small deterministic generator for tests that try many cases (Knuth's
//! MMIX linear congruential generator): the same seed replays the same
//! cases, on every machine.

/// The generator's state.
pub(crate) struct Lcg(pub u64);

impl Lcg {
    /// Step, and give the new state.
    pub(crate) fn step(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0
    }

    /// Step, and give the state's high 31 bits.
    pub(crate) fn high(&mut self) -> u64 {
        self.step() >> 33
    }

    /// Step, and give a number below `n` (from the high bits).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.high() % n
    }

    /// [`Self::below`] for an index into `n` items.
    pub(crate) fn index(&mut self, n: usize) -> usize {
        self.high() as usize % n
    }

    /// `base` with one to three random byte edits (a deletion, a
    /// replacement or an insertion of a byte JSON is made of, or of one it
    /// must not hold): near misses of a valid line.
    pub(crate) fn mutate_json(&mut self, base: &[u8]) -> Vec<u8> {
        const BYTES: &[u8] = b"{}[],:\"\\0123456789-.eE tnrufalsx\x01\xc3\xa9";
        let mut l = base.to_vec();
        for _ in 0..1 + self.index(3) {
            let at = self.index(l.len() + 1);
            match self.index(3) {
                0 if at < l.len() => {
                    l.remove(at);
                }
                1 if at < l.len() => l[at] = BYTES[self.index(BYTES.len())],
                _ => l.insert(at, BYTES[self.index(BYTES.len())]),
            }
        }
        l
    }
}
