//! The `--json` documents: each one a typed value, written one way, its
//! JSON Schema generated from the same type.
//!
//! A document is a plain Rust type that derives `serde::Serialize` (its
//! fields in the order of the document's keys, `camelCase` names,
//! `skip_serializing_if` for keys that are sometimes absent) and
//! `schemars::JsonSchema`, and implements `Document` (the schema's name
//! and title). [`write()`] prints it with `crate::json::ser`, the writer
//! that spells numbers and escapes strings as JavaScript's `JSON.stringify`
//! does; [`schemas`] generates `schemas/NAME.schema.json` for every
//! document, and a test fails when a committed schema differs from the one
//! generated, so a schema cannot drift from its document.
//!
//! Values of the log inside a document (an event, a message, the folded
//! request header) are [`crate::json::Value`]s, written exactly as the
//! loader read them; a field holding one names the shape the spec gives it
//! with `#[schemars(with = "…")]` (the types of [`shape`]), or is any JSON
//! value.
//!
//! One module per command whose documents are here; the commands not
//! converted yet still build their documents with [`crate::json::Value`]
//! and keep a hand-written schema (how to convert one: `docs/json.md`).

use std::borrow::Cow;
use std::io::Write;

use schemars::{JsonSchema, Schema, SchemaGenerator, generate::SchemaSettings, json_schema};
use serde::Serialize;

pub use crate::json::ser::{WriteError, to_string, to_writer};

pub mod cache;
pub mod compact;
pub mod error;
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
pub mod shape;
pub mod simulate;
pub mod status;
pub mod surface;
pub mod usage;
pub mod verify;
pub mod view;

/// The version of every document's shape (`"schema_version": 1`), bumped
/// on a breaking change.
const SCHEMA_VERSION: u64 = 1;

/// The `schema_version` key: always `SCHEMA_VERSION`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SchemaVersion;

impl Serialize for SchemaVersion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(SCHEMA_VERSION)
    }
}

impl JsonSchema for SchemaVersion {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "SchemaVersion".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "const": SCHEMA_VERSION })
    }
}

/// A document a command prints.
trait Document: Serialize + JsonSchema {
    /// Its schema's name: `schemas/NAME.schema.json`, `$id`
    /// `urn:dsh:schema:NAME`.
    const NAME: &'static str;
    /// What prints it (the schema's title), e.g. `dsh load --json`.
    const TITLE: &'static str;
}

/// Print `doc` on `w` as one line (the document and a newline).
pub fn write<D: Serialize + ?Sized>(mut w: impl Write, doc: &D) -> Result<(), WriteError> {
    to_writer(&mut w, doc)?;
    w.write_all(b"\n")?;
    w.flush()?;
    Ok(())
}

/// The JSON Schema (draft 2020-12) of document `D`, as the text committed
/// in `schemas/` (keys sorted, two-space indentation, a final newline).
fn schema<D: Document>() -> String {
    let settings = SchemaSettings::draft2020_12()
        .for_serialize()
        .with_transform(Strict);
    let mut s = settings.into_generator().into_root_schema_for::<D>();
    let o = s.ensure_object();
    o.insert(
        "$schema".into(),
        "https://json-schema.org/draft/2020-12/schema".into(),
    );
    o.insert("$id".into(), format!("urn:dsh:schema:{}", D::NAME).into());
    o.insert("title".into(), D::TITLE.into());
    // Keys sorted (a `serde_json` map's order), two-space indentation.
    let mut text = serde_json::to_string_pretty(&s).unwrap_or_default();
    text.push('\n');
    text
}

/// Every document's schema: (name, text), as committed in `schemas/`.
pub fn schemas() -> Vec<(&'static str, String)> {
    fn one<D: Document>() -> (&'static str, String) {
        (D::NAME, schema::<D>())
    }
    vec![
        one::<cache::Cache<'static>>(),
        one::<compact::Compact<'static>>(),
        one::<error::Refusal>(),
        one::<events::EventRow<'static>>(),
        one::<export::Export<'static>>(),
        one::<header::Header<'static>>(),
        one::<health::Health<'static>>(),
        one::<load::Load<'static>>(),
        one::<locks::Locks>(),
        one::<locks::Release>(),
        one::<measure::Many<'static>>(),
        one::<measure::One<'static>>(),
        one::<messages::Messages<'static>>(),
        one::<pack::Pack>(),
        one::<pack::Unpack>(),
        one::<prune::Prune<'static>>(),
        one::<repair::Repair>(),
        one::<report::Report<'static>>(),
        one::<sessions::Sessions<'static>>(),
        one::<sessions::Tree<'static>>(),
        one::<simulate::Simulate<'static>>(),
        one::<status::Statusline<'static>>(),
        one::<status::Watch<'static>>(),
        one::<surface::Surface<'static>>(),
        one::<usage::Prices<'static>>(),
        one::<usage::Usage<'static>>(),
        one::<verify::Checks>(),
        one::<verify::Many<'static>>(),
        one::<verify::One<'static>>(),
        one::<view::View<'static>>(),
    ]
}

/// Every object that lists its properties admits no other key (the
/// documents are strict: a key added to a document changes its schema).
#[derive(Debug, Clone, Copy)]
struct Strict;

impl schemars::transform::Transform for Strict {
    fn transform(&mut self, schema: &mut Schema) {
        if let Some(o) = schema.as_object_mut() {
            if o.contains_key("properties") && !o.contains_key("additionalProperties") {
                o.insert("additionalProperties".into(), false.into());
            }
            // A doc comment's lines are one paragraph; its rustdoc links
            // (`[`Type::item`]`) are plain code, and Rust's `None` is JSON's.
            if let Some(serde_json::Value::String(d)) = o.get_mut("description") {
                *d = d
                    .split("\n\n")
                    .map(|p| p.split('\n').collect::<Vec<_>>().join(" "))
                    .collect::<Vec<_>>()
                    .join("\n\n")
                    .replace("[`", "`")
                    .replace("`]", "`")
                    .replace("`None`", "`null`");
            }
        }
        schemars::transform::transform_subschemas(self, schema);
    }
}
