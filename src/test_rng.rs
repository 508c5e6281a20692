//! A small deterministic generator for tests that try many cases (Knuth's
//! MMIX linear congruential generator): the same seed replays the same
//! cases, on every machine.

/// The generator's state.
pub(crate) struct Lcg(pub u64);

impl Lcg {
    /// Step, and give the new state.
    pub fn step(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0
    }

    /// Step, and give the state's high 31 bits.
    pub fn high(&mut self) -> u64 {
        self.step() >> 33
    }

    /// Step, and give a number below `n` (from the high bits).
    pub fn below(&mut self, n: u64) -> u64 {
        self.high() % n
    }

    /// [`Self::below`] for an index into `n` items.
    pub fn index(&mut self, n: usize) -> usize {
        self.high() as usize % n
    }
}
