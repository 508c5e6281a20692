//! The time zone dates are shown and typed in: the local one unless a
//! command is told otherwise (`--tz`, `--utc`).
//!
//! Local means `$TZ` when it is set and not empty (a zone name such as
//! `Europe/Paris`, optionally after a `:`, read from `$TZDIR` or
//! `/usr/share/zoneinfo`; a fixed offset such as `UTC` or `+08:00`; or a
//! POSIX rule such as `CET-1CEST,M3.5.0,M10.5.0/3`), else the system's
//! `/etc/localtime`, else UTC, as the C library decides.

use std::path::PathBuf;
use std::sync::OnceLock;

use dsh::civil::{Offset, Zone};

use super::exit::UsageError;

/// The zone database: `$TZDIR`, else `/usr/share/zoneinfo`.
fn zoneinfo() -> PathBuf {
    std::env::var_os("TZDIR")
        .filter(|d| !d.is_empty())
        .map_or_else(|| PathBuf::from("/usr/share/zoneinfo"), Into::into)
}

/// A zone by name from the zone database (a name only: no absolute path,
/// no `..`).
fn named(name: &str) -> Option<Zone> {
    let safe = !name.is_empty()
        && !name.starts_with('/')
        && name
            .split('/')
            .all(|p| !p.is_empty() && p != "." && p != "..")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/_+-".contains(c));
    let bytes = safe.then(|| std::fs::read(zoneinfo().join(name)).ok())??;
    Zone::from_tzif(name, &bytes).ok()
}

/// `--tz`: UTC or a fixed offset, or a zone name from the zone database.
pub fn parse(arg: &str) -> anyhow::Result<Zone> {
    if let Ok(o) = Offset::parse(arg) {
        return Ok(Zone::Fixed(o));
    }
    named(arg).ok_or_else(|| {
        UsageError(format!(
            "--tz {arg:?}: expected UTC, a fixed offset such as +08:00, or a zone name found in {}",
            zoneinfo().display()
        ))
        .into()
    })
}

/// What `$TZ` names, when it names something.
fn from_tz(tz: &str) -> Option<Zone> {
    let tz = tz.strip_prefix(':').unwrap_or(tz);
    if let Ok(o) = Offset::parse(tz) {
        return Some(Zone::Fixed(o));
    }
    if tz.starts_with('/') {
        let bytes = std::fs::read(tz).ok()?;
        return Zone::from_tzif(tz, &bytes).ok();
    }
    named(tz).or_else(|| Zone::from_posix(tz))
}

/// The system's zone (`/etc/localtime`), named after its link into the
/// zone database when it is one.
fn system() -> Option<Zone> {
    let path = "/etc/localtime";
    let bytes = std::fs::read(path).ok()?;
    let name = std::fs::read_link(path)
        .ok()
        .and_then(|l| {
            let s = l.to_string_lossy().into_owned();
            s.split_once("zoneinfo/").map(|(_, n)| n.to_string())
        })
        .unwrap_or_else(|| "localtime".to_string());
    Zone::from_tzif(&name, &bytes).ok()
}

/// `$TZ` when set and not empty: `Ok(zone)`, or `Err(value)` when it names
/// nothing dsh can read; `None` when unset.
fn env_tz() -> Option<Result<Zone, String>> {
    let tz = std::env::var("TZ").ok().filter(|t| !t.is_empty())?;
    Some(from_tz(&tz).ok_or(tz))
}

/// The local zone (see the module doc), read once; a `$TZ` that names no
/// zone means UTC, as the C library takes it.
pub fn local() -> Zone {
    static LOCAL: OnceLock<Zone> = OnceLock::new();
    LOCAL
        .get_or_init(|| match env_tz() {
            Some(Ok(z)) => z,
            Some(Err(_)) => Zone::UTC,
            None => system().unwrap_or(Zone::UTC),
        })
        .clone()
}

/// `--tz` when given, else the local zone; a `$TZ` that names no zone is
/// said on stderr (unless `quiet`) before UTC is used.
pub fn resolve(arg: Option<&str>, quiet: bool) -> anyhow::Result<Zone> {
    if let Some(a) = arg {
        return parse(a);
    }
    if let Some(Err(tz)) = env_tz()
        && !quiet
    {
        eprintln!(
            "{} $TZ {tz:?} names no zone dsh can read (a fixed offset such as +08:00, a name in the zone database, or a POSIX rule): times in UTC; --tz sets one",
            super::render::warning_tag()
        );
    }
    Ok(local())
}

/// The zone of `--tz` / `--utc`, the local one when neither is given.
pub fn of_flags(tz: Option<&str>, utc: bool) -> anyhow::Result<Zone> {
    match (tz, utc) {
        (_, true) => Ok(Zone::UTC),
        (Some(t), false) => parse(t),
        (None, false) => Ok(local()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tz_takes_offsets_names_and_posix_rules() {
        assert_eq!(from_tz("UTC"), Some(Zone::UTC));
        assert_eq!(from_tz(":+08:00"), Some(Zone::Fixed(Offset(480))));
        let rule = from_tz("CET-1CEST,M3.5.0,M10.5.0/3").unwrap();
        assert_eq!(rule.offset_at(1_783_600_631_009), Offset(120));
        assert_eq!(from_tz("No/Such_Zone"), None);
        assert_eq!(of_flags(Some("+01:00"), true).unwrap(), Zone::UTC);
        assert!(of_flags(Some("Nowhere/At_All"), false).is_err());
    }
}
