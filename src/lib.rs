//! dsh: offline tooling for DeepSeek Harness (DSH) session logs.
//!
//! A DSH agent records everything as an append-only JSONL event log; what the
//! model sees is the log's *surface*, an ordered projection that compaction
//! rewrites by replacing spans with checkpoints. This library reads such logs
//! exactly as the reference implementation (`@deepseek-ai/dsh-*` 0.1.0-rc.8)
//! does and works on them without the harness:
//!
//! * **load** ([`log`]): bytes (plain or Zstandard) → validated events, each
//!   streamed once to an [`log::Observer`] as it is folded into the
//!   [`surface`] and the [`request_header`] fold, in every format
//!   `generation` DSH writes (v0–v3);
//! * **derive** ([`derive`](mod@derive)): the model-visible messages;
//! * **measure** ([`meter`], [`policy`], [`config`]): DSH's token figure and
//!   the routed pressure policy;
//! * **audit** ([`verify`], [`lock`]): every invariant, the compaction lock;
//! * **rewrite** ([`prune`], [`range`], [`compact`] with a [`provider`]): plans
//!   of events to append, written only by the [`append`] writer;
//! * **print** ([`doc`]): every `--json` document a typed value, written as
//!   `JSON.stringify` writes it, its JSON Schema generated from the type.
//!
//! ```
//! use dsh::{LoadOptions, LogSource};
//!
//! let src = LogSource::File("samples/compacted.jsonl".into());
//! let log = dsh::log::load(&src, &LoadOptions::default(), &mut |_: &dsh::Event<'_>, _: &dsh::log::Folded<'_>| {})?;
//! println!("{} nodes, {} heuristic tokens", log.surface.nodes.len(), log.surface.tokens);
//!
//! // What the model sees, message by message.
//! dsh::derive::for_each_message(&log, &mut |_, message| {
//!     println!("{}", message.get("role").and_then(|r| r.as_str()).unwrap_or_default());
//!     Ok::<(), dsh::LoadError>(())
//! })?;
//!
//! // The audit CI runs.
//! let report = dsh::verify::verify(&src, &LoadOptions::default());
//! assert_eq!(report.verdict(false), dsh::verify::Verdict::Clean);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The library never touches a terminal or the environment; the `dsh` binary
//! is a thin layer over it.

pub mod append;
mod attempt;
pub mod cache;
pub mod cancel;
pub mod civil;
pub mod compact;
pub mod config;
pub mod derive;
pub mod doc;
pub mod event;
pub mod export;
pub mod fill;
pub mod fleet;
mod generation;
pub mod health;
pub mod heuristic;
pub mod hidden_prefix;
pub mod json;
pub mod lifecycle;
pub mod lock;
pub mod log;
pub mod measure;
pub mod meter;
pub mod pack;
mod par;
pub mod policy;
pub mod price;
pub mod provider;
pub mod prune;
pub mod prune_write;
pub mod range;
pub mod report;
pub mod request_header;
pub mod sessions;
pub mod simulate;
pub mod status;
pub mod surface;
pub mod survival;
#[cfg(test)]
mod test_rng;
pub mod tree;
pub mod usage;
pub mod verify;
pub mod view;

pub use event::{Event, Kind, OwnedEvent};
pub use generation::Generation;
pub use json::{OwnedValue, Value};
pub use log::{LoadError, LoadErrorKind, LoadOptions, LoadedLog, LogSource};
