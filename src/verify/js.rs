//! Just enough JavaScript value semantics to reproduce the reference
//! invariant companions: strict equality (`===`), `Set` membership and
//! template-string rendering of a field that may be missing or of any type.

use crate::json::{Value, js_number_string, js_string};

/// A JavaScript value as the companions see a JSON field.
#[derive(Debug, Clone)]
pub(crate) enum Js {
    /// The field is absent.
    Undefined,
    /// `null`
    Null,
    /// A boolean.
    Bool(bool),
    /// A number.
    Num(f64),
    /// A string (lossy for lone surrogates, which only affects messages).
    Str(String),
    /// An object or array: never strictly equal to another event's value.
    /// Holds its template-string rendering.
    Object(String),
}

impl Js {
    /// The value of an optional JSON field.
    pub(crate) fn of(v: Option<&Value<'_>>) -> Js {
        match v {
            None => Js::Undefined,
            Some(Value::Null) => Js::Null,
            Some(Value::Bool(b)) => Js::Bool(*b),
            Some(Value::Num(n)) => Js::Num(*n),
            Some(Value::Str(s)) => Js::Str(s.to_lossy().into_owned()),
            Some(other) => Js::Object(js_string(Some(other))),
        }
    }

    /// A number.
    pub(crate) fn num(n: f64) -> Js {
        Js::Num(n)
    }

    /// `===`
    pub(crate) fn strict_eq(&self, other: &Js) -> bool {
        match (self, other) {
            (Js::Undefined, Js::Undefined) | (Js::Null, Js::Null) => true,
            (Js::Bool(a), Js::Bool(b)) => a == b,
            (Js::Num(a), Js::Num(b)) => a == b,
            (Js::Str(a), Js::Str(b)) => a == b,
            _ => false,
        }
    }

    /// `typeof v === "string" && v.length > 0`
    pub(crate) fn is_nonempty_str(&self) -> bool {
        matches!(self, Js::Str(s) if !s.is_empty())
    }

    /// `v === null`
    pub(crate) fn is_null(&self) -> bool {
        matches!(self, Js::Null)
    }

    /// `v === undefined`
    pub(crate) fn is_undefined(&self) -> bool {
        matches!(self, Js::Undefined)
    }

    /// `${v}` / `String(v)`.
    pub(crate) fn template(&self) -> String {
        match self {
            Js::Undefined => "undefined".into(),
            Js::Null => "null".into(),
            Js::Bool(b) => b.to_string(),
            Js::Num(n) => {
                let mut s = String::new();
                js_number_string(*n, &mut s);
                s
            }
            Js::Str(s) => s.clone(),
            Js::Object(t) => t.clone(),
        }
    }

    /// A key under which `Set` membership (SameValueZero) of primitives
    /// matches; objects get no key (a fresh object is never a member).
    pub(crate) fn set_key(&self) -> Option<String> {
        Some(match self {
            Js::Undefined => "u".into(),
            Js::Null => "z".into(),
            Js::Bool(b) => format!("b{b}"),
            Js::Num(n) => format!("n{}", if *n == 0.0 { 0.0 } else { *n }),
            Js::Str(s) => format!("s{s}"),
            Js::Object(_) => return None,
        })
    }
}

/// `JSON.stringify(v)` as a template string would show it (`undefined` for
/// an absent field).
pub(crate) fn stringify(v: Option<&Value<'_>>) -> String {
    match v {
        None => "undefined".into(),
        Some(v) => v.to_json(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn js(text: &str) -> Js {
        let v = Value::parse(text).unwrap();
        Js::of(Some(&v))
    }

    #[test]
    fn strict_equality_like_javascript() {
        assert!(js("1").strict_eq(&Js::num(1.0)));
        assert!(js("1.0").strict_eq(&Js::num(1.0)));
        assert!(!js("\"1\"").strict_eq(&Js::num(1.0)));
        assert!(!js("{}").strict_eq(&js("{}")));
        assert!(Js::Undefined.strict_eq(&Js::of(None)));
        assert!(!Js::Undefined.strict_eq(&Js::Null));
    }

    #[test]
    fn templates_like_javascript() {
        assert_eq!(js("2").template(), "2");
        assert_eq!(js("1e21").template(), "1e+21");
        assert_eq!(js("null").template(), "null");
        assert_eq!(Js::Undefined.template(), "undefined");
        assert_eq!(js("[1,null,[2,3]]").template(), "1,,2,3");
        assert_eq!(js("{\"a\":1}").template(), "[object Object]");
        // Every template is `String(v)`, the crate's one implementation.
        for t in ["2", "-0", "1e400", "[1e400,null]", "\"x\"", "true", "{}"] {
            let v = Value::parse(t).unwrap();
            assert_eq!(js(t).template(), js_string(Some(&v)), "{t}");
        }
        assert_eq!(js("1e400").template(), "Infinity");
        assert_eq!(stringify(None), "undefined");
        assert_eq!(
            stringify(Some(&Value::parse("\"cmd\"").unwrap())),
            "\"cmd\""
        );
    }

    #[test]
    fn set_keys_follow_same_value_zero() {
        assert_eq!(js("0").set_key(), js("-0").set_key());
        assert_ne!(js("1").set_key(), js("\"1\"").set_key());
        assert_eq!(js("[]").set_key(), None);
    }
}
