//! The time zone a command shows times and days in when `--tz` is not
//! given: the local one.

use anyhow::Result;
use dsh::civil::{Offset, Zone};

use super::render;

/// `--tz` when given; else `$TZ` when it names a zone (a warning and UTC
/// when it names none); else the system's zone (`/etc/localtime`); else UTC.
pub fn resolve(arg: Option<&str>, quiet: bool) -> Result<Zone> {
    if let Some(a) = arg {
        return super::commands::sessions::zone(a);
    }
    if let Some(tz) = std::env::var("TZ").ok().filter(|t| !t.is_empty()) {
        match super::commands::sessions::zone(tz.trim_start_matches(':')) {
            Ok(z) => return Ok(z),
            Err(_) if !quiet => eprintln!(
                "{} $TZ {tz:?} names no zone dsh can read (a fixed offset such as +08:00, or a name in the zone database): times in UTC; --tz sets one",
                render::warning_tag()
            ),
            Err(_) => {}
        }
        return Ok(Zone::Fixed(Offset::UTC));
    }
    let local = std::path::Path::new("/etc/localtime");
    let name = std::fs::read_link(local).ok().and_then(|t| {
        let t = t.to_string_lossy().into_owned();
        t.find("zoneinfo/")
            .map(|i| t[i + "zoneinfo/".len()..].to_string())
    });
    Ok(std::fs::read(local)
        .ok()
        .and_then(|b| Zone::from_tzif(name.as_deref().unwrap_or("local"), &b).ok())
        .unwrap_or(Zone::Fixed(Offset::UTC)))
}
