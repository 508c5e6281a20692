//! One file per command.

pub mod completions;
pub mod events;
pub mod header;
pub mod locks;
pub mod messages;
pub mod prune;
pub mod surface;
