//! The token meter: DSH's own pressure figure (compaction §1).

pub mod estimate;
