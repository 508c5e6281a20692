//! dsh: offline tooling for DeepSeek Harness (DSH) session logs.
//!
//! A DSH agent records everything as an append-only JSONL event log; what the
//! model sees is the log's *surface*, an ordered projection that compaction
//! rewrites by replacing spans with checkpoints. This library reads such logs
//! exactly as the reference implementation (`@deepseek-ai/dsh-*` 0.1.0-rc.8)
//! does and works on them without the harness:
//!
//! load ([`log`]) → fold ([`surface`], [`request_header`]) → derive
//! ([`derive`]) | measure ([`meter`]) | prune | compact → append.
//!
//! The library never touches a terminal or the environment; the `dsh` binary
//! is a thin layer over it.

#![warn(missing_docs)]

pub mod append;
pub mod compact;
pub mod config;
pub mod derive;
pub mod event;
pub mod g3;
pub mod json;
pub mod lock;
pub mod log;
pub mod meter;
pub mod policy;
pub mod provider;
pub mod prune;
pub mod range;
pub mod request_header;
pub mod surface;
pub mod verify;

pub use event::{Event, Kind, OwnedEvent};
pub use json::{OwnedValue, Value};
pub use log::{LoadError, LoadErrorKind, LoadOptions, LoadedLog, LogSource};
