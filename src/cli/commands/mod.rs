//! One file per command.

pub mod cache;
pub mod compact;
pub mod completions;
pub mod events;
pub mod export;
pub mod header;
pub mod health;
pub mod load;
pub mod locks;
pub mod measure;
pub mod messages;
pub mod pack;
pub mod prune;
pub mod repair;
pub mod report;
pub mod sessions;
pub mod simulate;
pub mod statusline;
pub mod surface;
pub mod usage;
pub mod verify;
pub mod view;
pub mod watch;
