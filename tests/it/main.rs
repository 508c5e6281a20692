//! The one integration-test binary: one module per command or concern.

mod append;
mod locks;
mod prune;
