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

/// A time, offset or zone that could not be read; the message says what was
/// expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TimeError(pub String);

/// Milliseconds in a day.
pub(crate) const DAY_MS: i64 = 86_400_000;

/// 2000-01-01T00:00:00Z: times before it are normalised placeholders.
pub(crate) const EARLIEST_MS: i64 = 946_684_800_000;
/// 2100-01-01T00:00:00Z: times from it on are not plausible recordings.
const LATEST_MS: i64 = 4_102_444_800_000;

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
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a day number (inverse of [`days_from_civil`]).
fn civil_from_days(z: i64) -> Date {
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
    fn days(self) -> i64 {
        days_from_civil(self.year, self.month, self.day)
    }

    /// Day of the week, 0 = Monday … 6 = Sunday.
    pub(crate) fn weekday(self) -> u32 {
        // 1970-01-01 was a Thursday.
        (self.days() + 3).rem_euclid(7) as u32
    }

    /// The Monday of this date's week.
    pub(crate) fn week_start(self) -> Date {
        civil_from_days(self.days() - i64::from(self.weekday()))
    }

    /// `YYYY-MM`.
    pub(crate) fn month_label(self) -> String {
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
    pub fn parse(s: &str) -> Result<Offset, TimeError> {
        let t = s.trim();
        let bad = || {
            TimeError(format!(
                "{s:?}: expected UTC or a fixed offset such as +08:00 or -05:30"
            ))
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
    pub(crate) fn ms(self) -> i64 {
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
pub fn parse_instant(s: &str, off: Offset) -> Result<i64, TimeError> {
    let t = s.trim();
    let bad = || {
        TimeError(format!(
            "{s:?}: expected a date (2026-07-01 or 20260701), a date and time (2026-07-01T09:30Z) or a span (7d, 2w, 12h)"
        ))
    };
    // `YYYYMMDD` (as ccusage takes it) is the same date.
    let dashed;
    let b = t.as_bytes();
    let t = if b.len() >= 8
        && b[..8].iter().all(u8::is_ascii_digit)
        && b.get(8).is_none_or(|c| !c.is_ascii_digit())
    {
        dashed = format!("{}-{}-{}{}", &t[..4], &t[4..6], &t[6..8], &t[8..]);
        dashed.as_str()
    } else {
        t
    };
    let (d, rest) = t.split_at(t.len().min(10));
    let parts: Vec<&str> = d.split('-').collect();
    let [y, m, dd] = parts.as_slice() else {
        return Err(bad());
    };
    let num = |x: &str, len: usize| -> Result<u32, TimeError> {
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
fn parse_span(s: &str) -> Option<i64> {
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

/// Days in a month of a year.
fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        _ => 28,
    }
}

/// A time zone for showing and typing dates: a fixed offset, or a named
/// zone read from its TZif file (RFC 8536: transitions, then the POSIX TZ
/// rule of its footer for later times).
#[derive(Debug, Clone, PartialEq)]
pub enum Zone {
    /// A fixed offset (`UTC`, `+08:00`).
    Fixed(Offset),
    /// A named zone (`Europe/Paris`).
    Named(Box<NamedZone>),
}

/// The rules of a named zone.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedZone {
    /// Its name.
    pub name: String,
    /// Transition instants (epoch seconds) and the UTC offset (seconds) from each on.
    transitions: Vec<(i64, i32)>,
    /// The offset before the first transition.
    initial: i32,
    /// The footer rule, for instants after the last transition.
    rule: Option<PosixRule>,
}

/// A POSIX TZ rule (`CET-1CEST,M3.5.0,M10.5.0/3`): offsets in seconds east
/// of UTC; daylight time between two dated local times.
#[derive(Debug, Clone, PartialEq)]
struct PosixRule {
    std: i32,
    dst: Option<(i32, RuleDate, i32, RuleDate, i32)>,
}

/// `Mm.w.d`, `Jn` or `n` (POSIX TZ).
#[derive(Debug, Clone, Copy, PartialEq)]
enum RuleDate {
    Month { m: u32, w: u32, d: u32 },
    Julian(u32),
    Zero(u32),
}

impl Zone {
    /// UTC.
    pub const UTC: Zone = Zone::Fixed(Offset::UTC);

    /// A named zone from the bytes of its TZif file.
    pub fn from_tzif(name: &str, bytes: &[u8]) -> Result<Zone, TimeError> {
        let bad = || TimeError(format!("{name}: not a TZif time-zone file"));
        let be32 = |b: &[u8], at: usize| -> Result<i64, TimeError> {
            b.get(at..at + 4)
                .map(|x| i64::from(i32::from_be_bytes([x[0], x[1], x[2], x[3]])))
                .ok_or_else(bad)
        };
        if bytes.len() < 44 || &bytes[..4] != b"TZif" {
            return Err(bad());
        }
        let counts = |b: &[u8]| -> Result<[usize; 6], TimeError> {
            let mut c = [0usize; 6];
            for (i, x) in c.iter_mut().enumerate() {
                *x = usize::try_from(be32(b, 20 + 4 * i)?).map_err(|_| bad())?;
            }
            Ok(c)
        };
        let [isut, isstd, leap, time, typ, chars] = counts(bytes)?;
        let v1 = time * 5 + typ * 6 + chars + leap * 8 + isstd + isut;
        let (data, tsize, c, footer_at) = if bytes[4] >= b'2' {
            let second = bytes.get(44 + v1..).ok_or_else(bad)?;
            if second.len() < 44 || &second[..4] != b"TZif" {
                return Err(bad());
            }
            let c = counts(second)?;
            let [isut, isstd, leap, time, typ, chars] = c;
            let len = time * 9 + typ * 6 + chars + leap * 12 + isstd + isut;
            (&second[44..], 8, c, Some(44 + len))
        } else {
            (&bytes[44..], 4, [isut, isstd, leap, time, typ, chars], None)
        };
        let [_, _, _, time, typ, _] = c;
        let need = time * (tsize + 1) + typ * 6;
        if data.len() < need || typ == 0 {
            return Err(bad());
        }
        let at = |i: usize| -> i64 {
            let b = &data[i * tsize..(i + 1) * tsize];
            if tsize == 8 {
                i64::from_be_bytes(b.try_into().unwrap())
            } else {
                i64::from(i32::from_be_bytes(b.try_into().unwrap()))
            }
        };
        let types = &data[time * (tsize + 1)..];
        let utoff = |k: usize| -> Result<i32, TimeError> {
            let b = types.get(k * 6..k * 6 + 4).ok_or_else(bad)?;
            Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        };
        let mut transitions = Vec::with_capacity(time);
        for i in 0..time {
            let k = usize::from(data[time * tsize + i]);
            if k >= typ {
                return Err(bad());
            }
            transitions.push((at(i), utoff(k)?));
        }
        let rule = footer_at
            .and_then(|f| data.get(f - 44..))
            .and_then(|f| std::str::from_utf8(f).ok())
            .map(|f| f.trim_matches('\n'))
            .filter(|f| !f.is_empty())
            .and_then(PosixRule::parse);
        Ok(Zone::Named(Box::new(NamedZone {
            name: name.to_string(),
            transitions,
            initial: utoff(0)?,
            rule,
        })))
    }

    /// A zone from a POSIX TZ rule, as `$TZ` may hold one
    /// (`CET-1CEST,M3.5.0,M10.5.0/3`, `EST5EDT`, `UTC0`); `None` when it is
    /// not one.
    pub fn from_posix(rule: &str) -> Option<Zone> {
        let r = PosixRule::parse(rule)?;
        Some(Zone::Named(Box::new(NamedZone {
            name: rule.to_string(),
            transitions: Vec::new(),
            initial: r.std,
            rule: Some(r),
        })))
    }

    /// The offset from UTC at an instant.
    pub fn offset_at(&self, ms: i64) -> Offset {
        match self {
            Zone::Fixed(o) => *o,
            Zone::Named(z) => {
                let t = ms.div_euclid(1000);
                let secs = match z.transitions.partition_point(|(at, _)| *at <= t) {
                    n if n == z.transitions.len() && z.rule.is_some() => {
                        z.rule.as_ref().unwrap().offset_at(t)
                    }
                    0 => z.initial,
                    n => z.transitions[n - 1].1,
                };
                Offset(secs.div_euclid(60))
            }
        }
    }

    /// The civil date of an instant in this zone.
    pub(crate) fn date(&self, ms: i64) -> Date {
        date(ms, self.offset_at(ms))
    }

    /// `YYYY-MM-DD HH:MM` of an instant in this zone.
    pub fn date_time(&self, ms: i64) -> String {
        date_time(ms, self.offset_at(ms))
    }

    /// [`parse_instant`] with local times in this zone.
    pub(crate) fn parse_instant(&self, s: &str) -> Result<i64, TimeError> {
        // Interpret at the offset in force then: guess with the offset at the
        // UTC reading, then correct once (exact except inside a DST change).
        let guess = parse_instant(s, Offset::UTC)?;
        let first = parse_instant(s, self.offset_at(guess))?;
        parse_instant(s, self.offset_at(first))
    }

    /// `--since` / `--until` in this zone.
    pub fn parse_bound(&self, s: &str, now_ms: i64) -> Result<i64, TimeError> {
        match parse_span(s) {
            Some(span) => Ok(now_ms - span),
            None => self.parse_instant(s),
        }
    }
}

impl fmt::Display for Zone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Zone::Fixed(o) => o.fmt(f),
            Zone::Named(z) => f.write_str(&z.name),
        }
    }
}

impl PosixRule {
    fn parse(s: &str) -> Option<PosixRule> {
        let mut p = s;
        let name = |p: &mut &str| -> Option<()> {
            if let Some(rest) = p.strip_prefix('<') {
                let end = rest.find('>')?;
                *p = &rest[end + 1..];
            } else {
                let n = p
                    .find(|c: char| !c.is_ascii_alphabetic())
                    .unwrap_or(p.len());
                if n < 3 {
                    return None;
                }
                *p = &p[n..];
            }
            Some(())
        };
        // [+-]hh[:mm[:ss]] in seconds.
        let clock = |p: &mut &str| -> Option<i32> {
            let (sign, rest) = match p.as_bytes().first()? {
                b'-' => (-1, &p[1..]),
                b'+' => (1, &p[1..]),
                _ => (1, *p),
            };
            let n = rest
                .find(|c: char| !(c.is_ascii_digit() || c == ':'))
                .unwrap_or(rest.len());
            let mut secs = 0i32;
            for (i, part) in rest[..n].split(':').enumerate() {
                let v: i32 = part.parse().ok()?;
                secs += v * [3600, 60, 1].get(i)?;
            }
            *p = &rest[n..];
            Some(sign * secs)
        };
        let date = |p: &mut &str| -> Option<(RuleDate, i32)> {
            let d = if let Some(rest) = p.strip_prefix('M') {
                let n = rest.find([',', '/']).unwrap_or(rest.len());
                let f: Vec<u32> = rest[..n]
                    .split('.')
                    .map(|x| x.parse().ok())
                    .collect::<Option<_>>()?;
                let [m, w, d] = f.as_slice() else { return None };
                *p = &rest[n..];
                RuleDate::Month {
                    m: *m,
                    w: *w,
                    d: *d,
                }
            } else {
                let (julian, rest) = match p.strip_prefix('J') {
                    Some(r) => (true, r),
                    None => (false, *p),
                };
                let n = rest.find([',', '/']).unwrap_or(rest.len());
                let v: u32 = rest[..n].parse().ok()?;
                *p = &rest[n..];
                if julian {
                    RuleDate::Julian(v)
                } else {
                    RuleDate::Zero(v)
                }
            };
            let t = match p.strip_prefix('/') {
                Some(rest) => {
                    *p = rest;
                    clock(p)?
                }
                None => 7200,
            };
            Some((d, t))
        };
        name(&mut p)?;
        let std = -clock(&mut p)?;
        if p.is_empty() {
            return Some(PosixRule { std, dst: None });
        }
        name(&mut p)?;
        let dst = if p.starts_with(',') {
            std + 3600
        } else {
            -clock(&mut p)?
        };
        let rest = p.strip_prefix(',')?;
        p = rest;
        let (start, st) = date(&mut p)?;
        p = p.strip_prefix(',')?;
        let (end, et) = date(&mut p)?;
        p.is_empty().then_some(PosixRule {
            std,
            dst: Some((dst, start, st, end, et)),
        })
    }

    /// The offset (seconds) at epoch second `t`.
    fn offset_at(&self, t: i64) -> i32 {
        let Some((dst, start, st, end, et)) = self.dst else {
            return self.std;
        };
        let year = date((t + i64::from(self.std)) * 1000, Offset::UTC).year;
        // Transition instants in UTC: the start is read in standard time,
        // the end in daylight time.
        let on = rule_day(year, start) * 86_400 + i64::from(st) - i64::from(self.std);
        let off = rule_day(year, end) * 86_400 + i64::from(et) - i64::from(dst);
        let in_dst = if on < off {
            on <= t && t < off
        } else {
            !(off <= t && t < on)
        };
        if in_dst { dst } else { self.std }
    }
}

/// The day number of a rule date in a year.
fn rule_day(year: i64, d: RuleDate) -> i64 {
    let leap = days_in_month(year, 2) == 29;
    match d {
        RuleDate::Month { m, w, d } => {
            let first = days_from_civil(year, m.clamp(1, 12), 1);
            // 1970-01-01 was a Thursday (POSIX day 4, Sunday = 0).
            let wd = (first + 4).rem_euclid(7) as u32;
            let mut day = 1 + (d + 7 - wd) % 7 + (w.clamp(1, 5) - 1) * 7;
            while day > days_in_month(year, m.clamp(1, 12)) {
                day -= 7;
            }
            first + i64::from(day) - 1
        }
        RuleDate::Julian(n) => {
            // 1..=365, February 29 never counted.
            let n = i64::from(n.clamp(1, 365));
            days_from_civil(year, 1, 1) + n - 1 + i64::from(leap && n >= 60)
        }
        RuleDate::Zero(n) => days_from_civil(year, 1, 1) + i64::from(n.min(365)),
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
        assert_eq!(parse_instant("20260426", Offset(480)), Ok(local));
        assert_eq!(parse_instant("20260426T12:15Z", Offset::UTC), Ok(t));
        assert!(parse_instant("202604261", Offset::UTC).is_err());
        assert!(parse_instant("20260230", Offset::UTC).is_err());
        assert_eq!(parse_span("2w"), Some(14 * DAY_MS));
        assert_eq!(parse_span("7"), None);
    }

    #[test]
    fn posix_rules_give_daylight_time() {
        let paris = PosixRule::parse("CET-1CEST,M3.5.0,M10.5.0/3").unwrap();
        let at = |s: &str| parse_instant(s, Offset::UTC).unwrap() / 1000;
        assert_eq!(paris.offset_at(at("2026-07-01T12:00Z")), 7200);
        assert_eq!(paris.offset_at(at("2026-12-01T12:00Z")), 3600);
        // 2026-03-29 01:00 UTC: clocks go forward.
        assert_eq!(paris.offset_at(at("2026-03-29T00:59Z")), 3600);
        assert_eq!(paris.offset_at(at("2026-03-29T01:00Z")), 7200);
        // 2026-10-25 01:00 UTC: back.
        assert_eq!(paris.offset_at(at("2026-10-25T00:59Z")), 7200);
        assert_eq!(paris.offset_at(at("2026-10-25T01:00Z")), 3600);
        let sydney = PosixRule::parse("AEST-10AEDT,M10.1.0,M4.1.0/3").unwrap();
        assert_eq!(sydney.offset_at(at("2026-01-15T00:00Z")), 11 * 3600);
        assert_eq!(sydney.offset_at(at("2026-07-15T00:00Z")), 10 * 3600);
        let shanghai = PosixRule::parse("CST-8").unwrap();
        assert_eq!(shanghai.offset_at(at("2026-07-15T00:00Z")), 8 * 3600);
        assert_eq!(PosixRule::parse("<+0530>-5:30").unwrap().std, 19_800);
        assert!(Zone::from_tzif("x", b"not a zone").is_err());
        let tz = Zone::from_posix("CET-1CEST,M3.5.0,M10.5.0/3").unwrap();
        assert_eq!(tz.offset_at(at("2026-07-01T12:00Z") * 1000), Offset(120));
        assert_eq!(
            tz.date_time(at("2026-12-31T23:30Z") * 1000),
            "2027-01-01 00:30"
        );
        assert!(Zone::from_posix("Europe/Paris").is_none());
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
