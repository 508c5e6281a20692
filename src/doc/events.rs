//! `dsh events --json`: one line per event (JSON Lines).

use schemars::JsonSchema;
use serde::Serialize;

use super::{Document, SchemaVersion, shape};
use crate::json::Value;
use crate::json::ser::RAW;
use crate::view::Origin;

/// One line of `dsh events --json`, which prints JSON Lines: one event of
/// the log per line, with where it stands on the surface.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventRow<'a> {
    /// The event's seq.
    pub seq: u64,
    /// Its line in the log (null for a synthetic closer).
    pub line: Option<u64>,
    /// Its type.
    #[serde(rename = "type")]
    pub kind: &'a str,
    /// The turn it falls in.
    pub turn: Option<u64>,
    /// append / replace: a surface operation; log: an event the surface
    /// does not show.
    pub origin: Origin,
    /// Whether the surface still shows it.
    pub on_surface: bool,
    /// A closer computed in memory for an open final turn.
    pub synthetic: bool,
    /// The event as the log holds it.
    #[schemars(with = "shape::Event")]
    pub event: Stored<'a>,
    /// The log as given on the command line (`-` for standard input).
    pub file: &'a str,
    /// Version of this document's shape; bumped on a breaking change.
    #[serde(rename = "schema_version")]
    pub schema_version: SchemaVersion,
}

impl Document for EventRow<'_> {
    const NAME: &'static str = "events";
    const TITLE: &'static str = "dsh events --json (one line)";
}

/// A log event inside a row.
#[derive(Debug, Clone, Copy)]
pub enum Stored<'a> {
    /// Its line as the log holds it, when that line is what serialising
    /// the event writes (nearly always): copied as it stands.
    Line(&'a str),
    /// The event, serialised.
    Value(&'a Value<'a>),
    /// Not written here: the row is cut before it ([`EventRow::head`]) and
    /// the event added when the row is written.
    Later,
}

impl Serialize for Stored<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Stored::Line(text) => s.serialize_newtype_struct(RAW, *text),
            Stored::Value(v) => v.serialize(s),
            Stored::Later => s.serialize_newtype_struct(RAW, ""),
        }
    }
}

/// `"onSurface":`, the key whose value a held row sets once the surface
/// is known.
const ON_SURFACE: &str = "\"onSurface\":";
/// `"event":`, where a row held without its event is cut.
const EVENT: &str = "\"event\":";

impl EventRow<'_> {
    /// The row as one line (its newline included), and where its
    /// `onSurface` value (`true` or `false`) starts, for a row written
    /// before the surface is known.
    pub fn line(&self) -> (String, usize) {
        let mut text = super::to_string(self);
        text.push('\n');
        let at = on_surface_at(&text);
        (text, at)
    }

    /// The row up to its event (`{…,"event":`), and where its `onSurface`
    /// value starts: the event and [`EventRow::tail`] follow when it is
    /// written.
    pub fn head(&self) -> (String, usize) {
        let later = EventRow {
            event: Stored::Later,
            ..*self
        };
        let text = super::to_string(&later);
        let cut = text.find(EVENT).map_or(text.len(), |i| i + EVENT.len());
        let at = on_surface_at(&text);
        (text[..cut].to_string(), at)
    }

    /// What follows the event in every row of `file` (its newline
    /// included).
    pub fn tail(file: &str) -> String {
        let row = EventRow {
            seq: 0,
            line: None,
            kind: "",
            turn: None,
            origin: Origin::Log,
            on_surface: false,
            synthetic: false,
            event: Stored::Later,
            file,
            schema_version: SchemaVersion,
        };
        let text = super::to_string(&row);
        let cut = text.find(EVENT).map_or(text.len(), |i| i + EVENT.len());
        format!("{}\n", &text[cut..])
    }
}

/// Where the `onSurface` value starts: after the key, which no string of
/// the row can hold unescaped (its quotes would be `\"`).
fn on_surface_at(text: &str) -> usize {
    text.find(ON_SURFACE).map_or(0, |i| i + ON_SURFACE.len())
}
