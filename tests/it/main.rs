//! The one integration-test binary: one module per command or concern.

mod support;

mod append;
mod bad_input;
mod cache;
mod cdp;
mod compact;
mod completions;
mod conformance;
mod docs;
mod export;
mod foundation;
mod g3;
mod generations;
mod hostile;
mod layering;
mod locks;
mod measure;
mod pack;
mod provider;
mod prune;
mod replaced;
mod report;
mod schemas;
mod sessions;
mod short_keys;
mod simulate;
mod smaller;
mod terminal;
mod tokenizer;
mod torn_frame;
mod totals;
mod trials;
mod usage;
mod verify;
mod view;
