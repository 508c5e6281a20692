//! One file per command.

pub mod completions;
pub mod events;
pub mod header;
pub mod load;
pub mod measure;
pub mod messages;
pub mod surface;
