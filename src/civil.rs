//! Calendar arithmetic on epoch milliseconds, without a time-zone database:
//! civil dates (proleptic Gregorian), fixed UTC offsets, and the few
//! spellings of a time a person types (`2026-07-01`, `2026-07-01T09:30Z`,
//! `7d`, `2w`).
//!
//! A log's `time` is informational and recorded logs hold normalised values
//! (zeros, jumps backwards, session-log §4.1). [`recorded`] is the one rule
//! for which values count as a date at all; everything else is *unknown*
//! and is never repaired from a neighbour.
//!
//! ```
//! use dsh::civil::{Offset, date, recorded};
//! let t = recorded(1_783_600_631_009.0).unwrap();
//! assert_eq!(date(t, Offset::UTC).to_string(), "2026-07-09");
//! assert_eq!(date(t, Offset::parse("+08:00").unwrap()).to_string(), "2026-07-09");
//! assert!(recorded(0.0).is_none());
//! ```

use std::fmt;

/// Milliseconds in a day.
pub const DAY_MS: i64 = 86_400_000;

/// 2000-01-01T00:00:00Z: times before it are normalised placeholders.
pub const EARLIEST_MS: i64 = 946_684_800_000;
/// 2100-01-01T00:00:00Z: times from it on are not plausible recordings.
pub const LATEST_MS: i64 = 4_102_444_800_000;

/// The time an event records, when it is a plausible date (whole
/// milliseconds from 2000-01-01 up to 2100, UTC): `0`, negative and absurd
/// values are normalised placeholders and give `None`.
pub fn recorded(ms: f64) -> Option<i64> {
    if !ms.is_finite() || ms.fract() != 0.0 {
        return None;
    }
    let t = ms as i64;
    (EARLIEST_MS..LATEST_MS).contains(&t).then_some(t)
}

/// Days since 1970-01-01 of a civil date (H. Hinnant's algorithm).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a day number (inverse of [`days_from_civil`]).
pub fn civil_from_days(z: i64) -> Date {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    Date {
        year: y,
        month: m,
        day: d,
    }
}

/// A civil date.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Date {
    /// Year.
    pub year: i64,
    /// Month, 1–12.
    pub month: u32,
    /// Day of the month, 1–31.
    pub day: u32,
}

impl Date {
    /// Days since 1970-01-01.
    pub fn days(self) -> i64 {
        days_from_civil(self.year, self.month, self.day)
    }

    /// Day of the week, 0 = Monday … 6 = Sunday.
    pub fn weekday(self) -> u32 {
        // 1970-01-01 was a Thursday.
        (self.days() + 3).rem_euclid(7) as u32
    }

    /// The Monday of this date's week.
    pub fn week_start(self) -> Date {
        civil_from_days(self.days() - i64::from(self.weekday()))
    }

    /// `YYYY-MM`.
    pub fn month_label(self) -> String {
        format!("{:04}-{:02}", self.year, self.month)
    }
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }
}

/// A fixed offset from UTC, in minutes (`--tz`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Offset(pub i32);

impl Offset {
    /// UTC.
    pub const UTC: Offset = Offset(0);

    /// `UTC`, `Z`, `+08:00`, `-05:30`, `+0800`, `+8`, `UTC+8`.
    pub fn parse(s: &str) -> Result<Offset, String> {
        let t = s.trim();
        let bad = || {
            format!(
                "{s:?}: expected UTC or a fixed offset such as +08:00 or -05:30 (named zones are not supported)"
            )
        };
        let rest = t
            .strip_prefix("UTC")
            .or_else(|| t.strip_prefix("utc"))
            .or_else(|| t.strip_prefix("GMT"))
            .unwrap_or(t);
        if rest.is_empty() || rest == "Z" || rest == "z" {
            return Ok(Offset::UTC);
        }
        let (sign, digits) = match rest.as_bytes()[0] {
            b'+' => (1, &rest[1..]),
            b'-' => (-1, &rest[1..]),
            _ => return Err(bad()),
        };
        let (h, m) = match digits.split_once(':') {
            Some((h, m)) => (h, m),
            None if digits.len() == 4 => digits.split_at(2),
            None => (digits, "0"),
        };
        let all_digits =
            |x: &str| !x.is_empty() && x.len() <= 2 && x.bytes().all(|b| b.is_ascii_digit());
        if !all_digits(h) || !all_digits(m) {
            return Err(bad());
        }
        let (h, m): (i32, i32) = (h.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
        if h > 14 || m > 59 {
            return Err(bad());
        }
        Ok(Offset(sign * (h * 60 + m)))
    }

    /// The offset in milliseconds.
    pub fn ms(self) -> i64 {
        i64::from(self.0) * 60_000
    }
}

impl fmt::Display for Offset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == 0 {
            return f.write_str("UTC");
        }
        let sign = if self.0 < 0 { '-' } else { '+' };
        let a = self.0.abs();
        write!(f, "{sign}{:02}:{:02}", a / 60, a % 60)
    }
}

/// The civil date of an instant at an offset.
pub fn date(ms: i64, off: Offset) -> Date {
    civil_from_days((ms + off.ms()).div_euclid(DAY_MS))
}

/// `YYYY-MM-DD HH:MM` of an instant at an offset.
pub fn date_time(ms: i64, off: Offset) -> String {
    let local = ms + off.ms();
    let of_day = local.rem_euclid(DAY_MS) / 60_000;
    format!("{} {:02}:{:02}", date(ms, off), of_day / 60, of_day % 60)
}

/// RFC 3339 in UTC with milliseconds: `2026-07-09T12:37:11.009Z`.
pub fn rfc3339(ms: i64) -> String {
    let of_day = ms.rem_euclid(DAY_MS);
    format!(
        "{}T{:02}:{:02}:{:02}.{:03}Z",
        date(ms, Offset::UTC),
        of_day / 3_600_000,
        of_day / 60_000 % 60,
        of_day / 1000 % 60,
        of_day % 1000
    )
}

/// An instant a person typed: `YYYY-MM-DD` (the start of that day at
/// `off`), or `YYYY-MM-DDTHH:MM[:SS]` with an optional `Z` / `±HH:MM`
/// (else at `off`).
pub fn parse_instant(s: &str, off: Offset) -> Result<i64, String> {
    let t = s.trim();
    let bad = || {
        format!(
            "{s:?}: expected a date (2026-07-01), a date and time (2026-07-01T09:30Z) or a span (7d, 2w, 12h)"
        )
    };
    let (d, rest) = t.split_at(t.len().min(10));
    let parts: Vec<&str> = d.split('-').collect();
    let [y, m, dd] = parts.as_slice() else {
        return Err(bad());
    };
    let num = |x: &str, len: usize| -> Result<u32, String> {
        if x.len() != len || !x.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        x.parse().map_err(|_| bad())
    };
    let (y, m, dd) = (num(y, 4)?, num(m, 2)?, num(dd, 2)?);
    if !(1..=12).contains(&m) || dd == 0 || dd > days_in_month(i64::from(y), m) {
        return Err(bad());
    }
    let day_ms = days_from_civil(i64::from(y), m, dd) * DAY_MS;
    if rest.is_empty() {
        return Ok(day_ms - off.ms());
    }
    let time = rest
        .strip_prefix('T')
        .or_else(|| rest.strip_prefix(' '))
        .ok_or_else(bad)?;
    let zone_at = time.find(['Z', 'z', '+', '-']).unwrap_or(time.len());
    let (clock, zone) = time.split_at(zone_at);
    let zone = if zone.is_empty() {
        off
    } else {
        Offset::parse(zone).map_err(|_| bad())?
    };
    let hms: Vec<&str> = clock.split(':').collect();
    let (h, mi, sec) = match hms.as_slice() {
        [h, mi] => (num(h, 2)?, num(mi, 2)?, 0),
        [h, mi, sec] => (num(h, 2)?, num(mi, 2)?, num(sec, 2)?),
        _ => return Err(bad()),
    };
    if h > 23 || mi > 59 || sec > 59 {
        return Err(bad());
    }
    Ok(day_ms + i64::from(h * 3600 + mi * 60 + sec) * 1000 - zone.ms())
}

/// A span back from now: `7d`, `2w`, `12h`. `None` when `s` is not one.
pub fn parse_span(s: &str) -> Option<i64> {
    let t = s.trim();
    let unit = t.chars().last()?;
    let n: i64 = t[..t.len() - unit.len_utf8()].parse().ok()?;
    let per = match unit {
        'h' => 3_600_000,
        'd' => DAY_MS,
        'w' => 7 * DAY_MS,
        _ => return None,
    };
    (n >= 0).then(|| n.checked_mul(per)).flatten()
}

/// `--since` / `--until`: a span back from `now_ms`, or an instant.
pub fn parse_bound(s: &str, now_ms: i64, off: Offset) -> Result<i64, String> {
    match parse_span(s) {
        Some(span) => Ok(now_ms - span),
        None => parse_instant(s, off),
    }
}

/// Days in a month of a year.
pub fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        _ => 28,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_round_trips_and_weekdays() {
        for z in [-800_000, -1, 0, 1, 20_000, 20_635, 2_000_000] {
            let d = civil_from_days(z);
            assert_eq!(d.days(), z);
        }
        let d = Date {
            year: 2026,
            month: 12,
            day: 3,
        };
        assert_eq!(d.weekday(), 3, "a Thursday");
        assert_eq!(d.week_start().to_string(), "2026-11-30");
        assert_eq!(civil_from_days(0).to_string(), "1970-01-01");
    }

    #[test]
    fn offsets_and_instants_parse() {
        assert_eq!(Offset::parse("UTC"), Ok(Offset(0)));
        assert_eq!(Offset::parse("+08:00"), Ok(Offset(480)));
        assert_eq!(Offset::parse("-0530"), Ok(Offset(-330)));
        assert_eq!(Offset::parse("UTC+8"), Ok(Offset(480)));
        assert!(Offset::parse("Europe/Paris").is_err());
        assert!(Offset::parse("+15:00").is_err());
        assert_eq!(Offset(-330).to_string(), "-05:30");
        let t = parse_instant("2026-04-26T12:15Z", Offset::UTC).unwrap();
        assert_eq!(rfc3339(t), "2026-04-26T12:15:00.000Z");
        let local = parse_instant("2026-04-26", Offset(480)).unwrap();
        assert_eq!(rfc3339(local), "2026-04-25T16:00:00.000Z");
        assert!(parse_instant("2026-02-30", Offset::UTC).is_err());
        assert!(parse_instant("yesterday", Offset::UTC).is_err());
        assert_eq!(parse_bound("2d", 10 * DAY_MS, Offset::UTC), Ok(8 * DAY_MS));
        assert_eq!(parse_span("2w"), Some(14 * DAY_MS));
        assert_eq!(parse_span("7"), None);
    }

    #[test]
    fn only_plausible_times_are_recorded() {
        assert_eq!(recorded(0.0), None);
        assert_eq!(recorded(-5.0), None);
        assert_eq!(recorded(1.5e12 + 0.5), None);
        assert_eq!(recorded(1_783_600_631_009.0), Some(1_783_600_631_009));
        assert_eq!(
            date_time(1_783_600_631_009, Offset::UTC),
            "2026-07-09 12:37"
        );
    }
}
