//! `--csv`: RFC 4180 rows (a header row first, `\n` line ends, a field
//! quoted when it holds a comma, a quote or a line break), plain numbers
//! without thousands separators, empty fields for unknown values.

/// One CSV record, newline included; with `guard`, a cell a spreadsheet
/// would evaluate (`=`, `+`, `-`, `@`, tab, CR first, not a number) gets a
/// leading `'` ([`dsh::export::csv_record_with`]).
pub fn record<S: AsRef<str>>(fields: &[S], guard: bool) -> String {
    dsh::export::csv_record_with(fields, guard)
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
            super::record(&["a", "b,c", "say \"hi\""], true),
            "a,\"b,c\",\"say \"\"hi\"\"\"\n"
        );
        assert_eq!(super::num(Some(0.5)), "0.5");
        assert_eq!(super::num(Some(3.0)), "3");
        assert_eq!(super::num(None), "");
    }
}
