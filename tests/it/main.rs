//! The one integration-test binary: one module per command or concern.

mod support;

mod bad_input;
mod completions;
mod conformance;
mod foundation;
mod g3;
mod measure;
