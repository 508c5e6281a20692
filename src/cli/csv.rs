//! `--csv`: RFC 4180 rows (a header row first, `\n` line ends, a field
//! quoted when it holds a comma, a quote or a line break), plain numbers
//! without thousands separators, empty fields for unknown values.

/// One CSV record, newline included.
pub fn record<S: AsRef<str>>(fields: &[S]) -> String {
    let mut out = String::new();
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let f = f.as_ref();
        if f.contains([',', '"', '\n', '\r']) {
            out.push('"');
            out.push_str(&f.replace('"', "\"\""));
            out.push('"');
        } else {
            out.push_str(f);
        }
    }
    out.push('\n');
    out
}

/// A number as a CSV field (JavaScript spelling; empty when absent).
pub fn num(x: Option<f64>) -> String {
    x.map(|v| dsh::json::Value::Num(v).to_json())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn fields_are_quoted_only_when_needed() {
        assert_eq!(
            super::record(&["a", "b,c", "say \"hi\""]),
            "a,\"b,c\",\"say \"\"hi\"\"\"\n"
        );
        assert_eq!(super::num(Some(0.5)), "0.5");
        assert_eq!(super::num(Some(3.0)), "3");
        assert_eq!(super::num(None), "");
    }
}
