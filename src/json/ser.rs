//! The one writer of `--json` documents: a `serde` serializer that prints
//! what JavaScript's `JSON.stringify` prints.
//!
//! * Numbers: every number is a double, spelled as `String(n)` spells it
//!   (`1e+21`, `0.1`, `-0` as `0`); integers up to 2^53 are written
//!   digit for digit, larger ones as the double they round to (what
//!   JavaScript holds); `NaN` and the infinities are `null`.
//! * Strings: `"` `\` and the control characters escaped (`\b \f \n \r
//!   \t`, the rest `\u00xx`), everything else as it is.
//! * Objects keep the order their fields are declared in; `None` is
//!   `null` unless the field says to skip it.
//! * A value of the log ([`crate::json::Value`]) is written exactly as the
//!   loader read it, lone surrogates (`\ud800`) included, through one hook
//!   ([`RAW`]): a string the serializer writes verbatim.
//!
//! Output is buffered and handed to the destination in pieces of about
//! [`CHUNK`] bytes, so a large document is never held whole.

use std::fmt::Display;
use std::io::Write;

use serde::ser::{self, Serialize};

use super::{JStr, MAX_SAFE, Value, js_number};

/// The name of the newtype struct whose content (a `&str`) is JSON text to
/// be written verbatim. Only this serializer knows it; any other writes the
/// text as a string.
pub(crate) const RAW: &str = "$dsh::json::raw";

/// How much is buffered before it is handed on.
const CHUNK: usize = 1 << 16;

/// Why a document could not be written: the destination failed, or a
/// value could not be written as JSON (a map key that is not a string).
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The destination refused the bytes.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The value has no JSON form.
    #[error("not a JSON document: {0}")]
    Shape(String),
}

impl ser::Error for WriteError {
    fn custom<T: Display>(msg: T) -> Self {
        WriteError::Shape(msg.to_string())
    }
}

impl From<WriteError> for std::io::Error {
    fn from(e: WriteError) -> Self {
        match e {
            WriteError::Io(e) => e,
            WriteError::Shape(s) => std::io::Error::other(s),
        }
    }
}

/// Write `value` to `w` as one compact JSON text (no newline).
pub fn to_writer<T: Serialize + ?Sized, W: Write>(w: W, value: &T) -> Result<(), WriteError> {
    let mut s = Serializer {
        buf: String::with_capacity(1024),
        out: Some(w),
        raw: false,
    };
    value.serialize(&mut s)?;
    s.flush()
}

/// `value` as one compact JSON text.
pub fn to_string<T: Serialize + ?Sized>(value: &T) -> String {
    let mut s: Serializer<std::io::Sink> = Serializer {
        buf: String::new(),
        out: None,
        raw: false,
    };
    // Into a string nothing fails but a key that is not a string, which
    // no document of dsh has (their maps are keyed by strings).
    value
        .serialize(&mut s)
        .expect("a document's map keys are strings");
    s.buf
}

/// The serializer: text goes into `buf`, which is handed to `out` once it
/// is [`CHUNK`] long (never, when `out` is `None`: [`to_string`]).
struct Serializer<W: Write> {
    buf: String,
    out: Option<W>,
    /// The next string is JSON text to copy (inside a [`RAW`] newtype).
    raw: bool,
}

impl<W: Write> Serializer<W> {
    fn maybe_flush(&mut self) -> Result<(), WriteError> {
        if self.buf.len() >= CHUNK
            && let Some(w) = &mut self.out
        {
            w.write_all(self.buf.as_bytes())?;
            self.buf.clear();
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), WriteError> {
        if let Some(w) = &mut self.out {
            w.write_all(self.buf.as_bytes())?;
            self.buf.clear();
            w.flush()?;
        }
        Ok(())
    }

    fn int(&mut self, n: u64, negative: bool) {
        if n as f64 > MAX_SAFE {
            let f = n as f64;
            js_number(if negative { -f } else { f }, &mut self.buf);
            return;
        }
        if negative && n != 0 {
            self.buf.push('-');
        }
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        let mut n = n;
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        // SAFETY-free: ASCII digits.
        self.buf
            .push_str(std::str::from_utf8(&digits[i..]).unwrap_or_default());
    }
}

/// Append `s` as a JSON string, escaped as `JSON.stringify` escapes it.
fn push_str_json(out: &mut String, s: &str) {
    out.push('"');
    let bytes = s.as_bytes();
    let mut run = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            0x0C => "\\f",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..0x20 => "",
            _ => continue,
        };
        out.push_str(&s[run..i]);
        if esc.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("\\u00");
            out.push(HEX[(b >> 4) as usize] as char);
            out.push(HEX[(b & 15) as usize] as char);
        } else {
            out.push_str(esc);
        }
        run = i + 1;
    }
    out.push_str(&s[run..]);
    out.push('"');
}

/// A narrower number is written as the 64-bit one it widens to.
macro_rules! widen {
    ($($($f:ident($t:ty)),* => $to:ident);*) => {$($(
        fn $f(self, v: $t) -> Result<(), WriteError> {
            self.$to(v.into())
        }
    )*)*};
}

impl<'s, W: Write> ser::Serializer for &'s mut Serializer<W> {
    type Ok = ();
    type Error = WriteError;
    type SerializeSeq = Compound<'s, W>;
    type SerializeTuple = Compound<'s, W>;
    type SerializeTupleStruct = Compound<'s, W>;
    type SerializeTupleVariant = Compound<'s, W>;
    type SerializeMap = Compound<'s, W>;
    type SerializeStruct = Compound<'s, W>;
    type SerializeStructVariant = Compound<'s, W>;

    fn serialize_bool(self, v: bool) -> Result<(), WriteError> {
        self.buf.push_str(if v { "true" } else { "false" });
        Ok(())
    }
    widen!(
        serialize_i8(i8), serialize_i16(i16), serialize_i32(i32) => serialize_i64;
        serialize_u8(u8), serialize_u16(u16), serialize_u32(u32) => serialize_u64;
        serialize_f32(f32) => serialize_f64
    );
    fn serialize_i64(self, v: i64) -> Result<(), WriteError> {
        self.int(v.unsigned_abs(), v < 0);
        Ok(())
    }
    fn serialize_u64(self, v: u64) -> Result<(), WriteError> {
        self.int(v, false);
        Ok(())
    }
    fn serialize_f64(self, v: f64) -> Result<(), WriteError> {
        js_number(v, &mut self.buf);
        Ok(())
    }
    fn serialize_char(self, v: char) -> Result<(), WriteError> {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Result<(), WriteError> {
        if std::mem::take(&mut self.raw) {
            self.buf.push_str(v);
        } else {
            push_str_json(&mut self.buf, v);
        }
        self.maybe_flush()
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), WriteError> {
        use ser::SerializeSeq;
        let mut seq = self.serialize_seq(Some(v.len()))?;
        for b in v {
            seq.serialize_element(b)?;
        }
        seq.end()
    }
    fn serialize_none(self) -> Result<(), WriteError> {
        self.serialize_unit()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), WriteError> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), WriteError> {
        self.buf.push_str("null");
        Ok(())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), WriteError> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), WriteError> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<(), WriteError> {
        self.raw = name == RAW;
        let r = value.serialize(&mut *self);
        self.raw = false;
        r
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), WriteError> {
        self.buf.push('{');
        push_str_json(&mut self.buf, variant);
        self.buf.push(':');
        value.serialize(&mut *self)?;
        self.buf.push('}');
        Ok(())
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Compound<'s, W>, WriteError> {
        Ok(Compound::open(self, None, '['))
    }
    fn serialize_tuple(self, len: usize) -> Result<Compound<'s, W>, WriteError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<Compound<'s, W>, WriteError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'s, W>, WriteError> {
        Ok(Compound::open(self, Some(variant), '['))
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Compound<'s, W>, WriteError> {
        Ok(Compound::open(self, None, '{'))
    }
    fn serialize_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<Compound<'s, W>, WriteError> {
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'s, W>, WriteError> {
        Ok(Compound::open(self, Some(variant), '{'))
    }
}

/// An array or object being written.
struct Compound<'s, W: Write> {
    s: &'s mut Serializer<W>,
    first: bool,
    close: &'static str,
}

impl<'s, W: Write> Compound<'s, W> {
    /// Open an array (`[`) or an object (`{`), inside `{"variant":…}` for
    /// an enum's variant.
    fn open(s: &'s mut Serializer<W>, variant: Option<&str>, open: char) -> Self {
        if let Some(v) = variant {
            s.buf.push('{');
            push_str_json(&mut s.buf, v);
            s.buf.push(':');
        }
        s.buf.push(open);
        let close = match (open, variant) {
            ('[', None) => "]",
            ('[', Some(_)) => "]}",
            (_, None) => "}",
            (_, Some(_)) => "}}",
        };
        Compound {
            s,
            first: true,
            close,
        }
    }
    fn comma(&mut self) {
        if !std::mem::take(&mut self.first) {
            self.s.buf.push(',');
        }
    }
    fn end(self) -> Result<(), WriteError> {
        self.s.buf.push_str(self.close);
        self.s.maybe_flush()
    }
    fn key(&mut self, key: &str) {
        self.comma();
        push_str_json(&mut self.s.buf, key);
        self.s.buf.push(':');
    }
}

impl<W: Write> ser::SerializeSeq for Compound<'_, W> {
    type Ok = ();
    type Error = WriteError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), WriteError> {
        self.comma();
        value.serialize(&mut *self.s)?;
        self.s.maybe_flush()
    }
    fn end(self) -> Result<(), WriteError> {
        Compound::end(self)
    }
}

/// Tuples of every kind are arrays: their elements are a sequence's.
macro_rules! like_seq {
    ($($t:ident :: $f:ident),*) => {$(
        impl<W: Write> ser::$t for Compound<'_, W> {
            type Ok = ();
            type Error = WriteError;
            fn $f<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), WriteError> {
                ser::SerializeSeq::serialize_element(self, value)
            }
            fn end(self) -> Result<(), WriteError> {
                Compound::end(self)
            }
        }
    )*};
}
like_seq!(
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl<W: Write> ser::SerializeMap for Compound<'_, W> {
    type Ok = ();
    type Error = WriteError;
    /// A key is written as any value is (a log's key may be [`RAW`] text,
    /// already quoted), with nothing handed on meanwhile, and must have
    /// come out a string.
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), WriteError> {
        self.comma();
        let out = self.s.out.take();
        let start = self.s.buf.len();
        let written = key.serialize(&mut *self.s);
        self.s.out = out;
        written?;
        if !self.s.buf[start..].starts_with('"') {
            let what = self.s.buf.split_off(start);
            return Err(WriteError::Shape(format!(
                "a map key must be a string, not {what}"
            )));
        }
        self.s.buf.push(':');
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), WriteError> {
        value.serialize(&mut *self.s)?;
        self.s.maybe_flush()
    }
    fn end(self) -> Result<(), WriteError> {
        Compound::end(self)
    }
}

impl<W: Write> ser::SerializeStruct for Compound<'_, W> {
    type Ok = ();
    type Error = WriteError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), WriteError> {
        self.key(key);
        value.serialize(&mut *self.s)?;
        self.s.maybe_flush()
    }
    fn end(self) -> Result<(), WriteError> {
        Compound::end(self)
    }
}

impl<W: Write> ser::SerializeStructVariant for Compound<'_, W> {
    type Ok = ();
    type Error = WriteError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), WriteError> {
        ser::SerializeStruct::serialize_field(self, key, value)
    }
    fn end(self) -> Result<(), WriteError> {
        Compound::end(self)
    }
}

/// A string of the log, written as the loader read it: escapes that
/// `JSON.stringify` would write differently are rewritten, lone
/// surrogates kept (through `RAW`).
impl Serialize for JStr<'_> {
    fn serialize<S: ser::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if !self.escaped {
            // SAFETY-free: `raw` is UTF-8 (the invariant on `JStr`).
            return s.serialize_str(std::str::from_utf8(&self.raw).unwrap_or_default());
        }
        let mut text = String::with_capacity(self.raw.len() + 2);
        self.write_json(&mut text);
        s.serialize_newtype_struct(RAW, text.as_str())
    }
}

/// A value of the log, written as `JSON.stringify` writes it (the same
/// bytes as `Value::write_json`).
impl Serialize for Value<'_> {
    fn serialize<S: ser::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use ser::SerializeMap;
        match self {
            Value::Null => s.serialize_unit(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Num(n) => s.serialize_f64(*n),
            Value::Str(t) => t.serialize(s),
            Value::Arr(a) => s.collect_seq(a),
            Value::Obj(o) => {
                let mut m = s.serialize_map(Some(o.len()))?;
                for (k, v) in o {
                    m.serialize_entry(k, v)?;
                }
                m.end()
            }
        }
    }
}

/// Any JSON value: what the log holds there is the spec's business (a
/// document's field names the shape it has, where dsh relies on one).
impl schemars::JsonSchema for Value<'_> {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "LogValue".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::Schema::from(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_spelled_as_javascript_spells_them() {
        assert_eq!(to_string(&1e21f64), "1e+21");
        assert_eq!(to_string(&-0.0f64), "0");
        assert_eq!(to_string(&0.1f64), "0.1");
        assert_eq!(to_string(&5.0f64), "5");
        assert_eq!(to_string(&f64::NAN), "null");
        assert_eq!(to_string(&u64::MAX), "18446744073709552000");
        assert_eq!(to_string(&(1u64 << 53)), "9007199254740992");
        assert_eq!(to_string(&((1u64 << 53) + 1)), "9007199254740992");
        assert_eq!(to_string(&-7i64), "-7");
        assert_eq!(to_string(&i64::MIN), "-9223372036854776000");
        assert_eq!(to_string(&Some(3u8)), "3");
        assert_eq!(to_string(&None::<u8>), "null");
    }

    #[test]
    fn strings_are_escaped_as_javascript_escapes_them() {
        assert_eq!(
            to_string("a\"b\\c\u{8}\u{c}\n\r\t\u{1}\u{1f}\u{7f}é\u{2028}😀"),
            "\"a\\\"b\\\\c\\b\\f\\n\\r\\t\\u0001\\u001f\u{7f}é\u{2028}😀\""
        );
    }

    #[test]
    fn log_values_keep_their_bytes() {
        for text in [
            r#"{"a":[1,2.5,-0,1e21,true,null],"b":"x\u00e9\/\ud800\n","\ud83d\ude00":{}}"#,
            r#"[]"#,
            r#""\u0000\u001F\"""#,
        ] {
            let v = Value::parse(text).unwrap();
            assert_eq!(to_string(&v), v.to_json(), "{text}");
        }
    }

    #[test]
    fn variants_are_written_as_serde_json_writes_them() {
        #[derive(serde::Serialize)]
        enum E {
            A(u8, u8),
            B { x: u8 },
            C(u8),
            D,
        }
        let all = [E::A(1, 2), E::B { x: 3 }, E::C(4), E::D];
        assert_eq!(
            to_string(&all),
            r#"[{"A":[1,2]},{"B":{"x":3}},{"C":4},"D"]"#
        );
    }

    #[test]
    fn map_keys_must_be_strings() {
        let mut out = Vec::new();
        let err = to_writer(&mut out, &std::collections::BTreeMap::from([(3, 4)])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "not a JSON document: a map key must be a string, not 3"
        );
        let keyed = std::collections::BTreeMap::from([('k', 4)]);
        assert_eq!(to_string(&keyed), r#"{"k":4}"#);
    }

    #[test]
    fn large_documents_are_written_in_pieces() {
        let big: Vec<String> = (0..20_000).map(|i| format!("row {i}")).collect();
        let mut out = Vec::new();
        to_writer(&mut out, &big).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), to_string(&big));
    }
}
