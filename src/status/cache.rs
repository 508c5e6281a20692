//! The status line's memory between runs: per log file (device and inode),
//! the figures of its last whole read, its length and modification time
//! then, and the `Mark` where that read ended.
//!
//! A log of the same length and time is answered from here; one that grew
//! by chunks only (the model streaming) is answered from here after reading
//! just the appended bytes (`crate::log::tail::follow`); anything else is
//! read whole again and remembered. The file is one small JSON document in
//! the directory the caller names (the command line uses the XDG cache
//! directory); it is replaced whole (written beside, then renamed), never
//! edited in place, and a cache that cannot be read is started afresh.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::civil::Zone;
use crate::log::LogSource;
use crate::log::tail::{self, Growth, Mark};
use crate::price::PriceTable;
use crate::sessions::{Refused, ScanOptions};

use super::Snapshot;
use super::follow::{Seen, look};

/// The cache file's name inside its directory.
const FILE: &str = "statusline.json";

/// Entries kept at most of the sessions shown (the least recently used go
/// first).
const MAX_ENTRIES: usize = 256;

/// What is remembered of one log.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Entry {
    /// The log file.
    pub path: String,
    /// Its length and modification time (ns) when last checked.
    pub size: u64,
    /// See `size`.
    pub mtime_ns: i64,
    /// Where the last whole read ended, when appends can be followed.
    pub mark: Option<Mark>,
    /// The zone `days` are in.
    pub zone: String,
    /// Session id.
    pub session: String,
    /// The header's `cwd`.
    pub project: Option<String>,
    /// The routed `provider/model`.
    pub route: Option<(String, String)>,
    /// Whether the meter ran (else the next four are unknown).
    pub metered: bool,
    /// The meter's token figure.
    pub tokens: Option<f64>,
    /// The routed window.
    pub window: Option<f64>,
    /// The compaction threshold.
    pub threshold: Option<f64>,
    /// Why the meter could not replay the log.
    pub meter_error: Option<String>,
    /// The session's cost (USD), `None` when no request has a price.
    pub cost: Option<f64>,
    /// Requests without a price.
    pub unpriced: u64,
    /// Cost per day in `zone`: `(YYYY-MM-DD, USD, requests without a price)`.
    pub days: Vec<(String, f64, u64)>,
    /// When it was last used (epoch seconds).
    pub used: i64,
}

impl Entry {
    fn of(snap: &Snapshot, stat: &Seen, zone: &Zone, prices: &PriceTable, metered: bool) -> Entry {
        let cost = snap.cost(prices);
        Entry {
            path: snap.file.clone(),
            size: stat.size,
            mtime_ns: stat.mtime_ns,
            mark: snap.mark,
            zone: zone.to_string(),
            session: snap.session.clone(),
            project: snap.project.clone(),
            route: snap.route.clone(),
            metered,
            tokens: snap.tokens,
            window: snap.window,
            threshold: snap.threshold,
            meter_error: snap.meter_error.clone(),
            cost: cost.cost(),
            unpriced: cost.without_cost(),
            days: snap
                .days(prices, zone)
                .into_iter()
                .map(|(d, s)| (d, s.cost, s.without_cost()))
                .collect(),
            used: 0,
        }
    }

    /// The token figure as a percentage of the window.
    pub fn pressure(&self) -> Option<f64> {
        crate::sessions::pressure(self.tokens, self.window)
    }

    /// Tokens left before the threshold (negative when over it).
    pub fn to_compaction(&self) -> Option<f64> {
        Some(self.threshold? - self.tokens?)
    }

    /// The cost of day `key` (`YYYY-MM-DD`) and its requests without a price.
    fn day(&self, key: &str) -> (f64, u64) {
        self.days
            .iter()
            .find(|(d, _, _)| d == key)
            .map_or((0.0, 0), |(_, c, u)| (*c, *u))
    }
}

/// How an entry was had.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Fresh {
    /// From the cache: the log had not changed.
    Cached,
    /// From the cache after reading what was appended (chunks only).
    Followed,
    /// The log was read whole.
    Read,
}

#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Doc {
    version: u32,
    entries: BTreeMap<String, Entry>,
    /// Logs the reader refused, by key: their path, size and time then
    /// (left out of today's cost until they change).
    #[serde(default)]
    refused: BTreeMap<String, (String, u64, i64)>,
}

/// One of the cache's two files, in memory.
#[derive(Debug, Default)]
struct Part {
    file: Option<PathBuf>,
    doc: Doc,
    /// Whether anything changed since it was read.
    dirty: bool,
}

impl Part {
    fn open(file: PathBuf) -> Part {
        let doc = std::fs::read(&file)
            .ok()
            .and_then(|b| serde_json::from_slice::<Doc>(&b).ok())
            .filter(|d| d.version == 1)
            .unwrap_or_default();
        Part {
            file: Some(file),
            doc,
            dirty: false,
        }
    }

    /// Write it back when it changed (beside, then renamed over it),
    /// keeping at most `max` entries (the least recently used go) and none
    /// of logs that are gone.
    fn save(&mut self, max: usize) -> std::io::Result<()> {
        let Some(file) = &self.file else {
            return Ok(());
        };
        if !self.dirty {
            return Ok(());
        }
        let doc = &mut self.doc;
        doc.entries.retain(|_, e| Path::new(&e.path).exists());
        doc.refused.retain(|_, (p, _, _)| Path::new(p).exists());
        if doc.entries.len() > max {
            let mut used: Vec<i64> = doc.entries.values().map(|e| e.used).collect();
            used.sort_unstable_by(|a, b| b.cmp(a));
            let cut = used[max - 1];
            doc.entries.retain(|_, e| e.used >= cut);
        }
        doc.version = 1;
        let dir = file.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        serde_json::to_writer(&mut tmp, &*doc)?;
        tmp.persist(file).map_err(|e| e.error)?;
        self.dirty = false;
        Ok(())
    }
}

/// The cache: the sessions shown (with the meter's figures, a few) in
/// `FILE`, and the other sessions of the home (their costs per day, many,
/// rarely changed) in `DAYS_FILE`, so that following the session shown
/// rewrites only the small file.
#[derive(Debug)]
pub struct Cache {
    shown: Part,
    others: Part,
    now_s: i64,
}

/// The file of the other sessions' costs per day.
const DAYS_FILE: &str = "statusline-days.json";

/// Entries kept at most of the other sessions.
const MAX_OTHERS: usize = 65_536;

/// How to read a log the cache does not know.
pub struct Reading<'a> {
    /// Scan options (the loader's, the config).
    pub opts: &'a ScanOptions,
    /// Prices.
    pub prices: &'a PriceTable,
    /// The zone days are counted in.
    pub zone: &'a Zone,
}

impl Cache {
    /// The cache kept in `dir` (`FILE` and `DAYS_FILE`); empty when
    /// there is none or it cannot be read. `now_s`: the clock, for ageing
    /// entries out.
    pub fn open(dir: &Path, now_s: i64) -> Cache {
        Cache {
            shown: Part::open(dir.join(FILE)),
            others: Part::open(dir.join(DAYS_FILE)),
            now_s,
        }
    }

    /// A cache that remembers nothing between runs.
    pub fn none(now_s: i64) -> Cache {
        Cache {
            shown: Part::default(),
            others: Part::default(),
            now_s,
        }
    }

    /// The figures of the log at `path`: from the cache when it has not
    /// changed (or grew by chunks only), else read whole (with the meter
    /// when `metered`) and remembered.
    pub fn entry(
        &mut self,
        path: &Path,
        metered: bool,
        how: &Reading<'_>,
    ) -> Result<(Entry, Fresh), Refused> {
        let st = look(path).map_err(|e| Refused::io(path, e))?;
        let key = st.key();
        let zone = how.zone.to_string();
        let shown = path.display().to_string();
        for part in [&mut self.shown, &mut self.others] {
            let Some(e) = part.doc.entries.get_mut(&key) else {
                continue;
            };
            if e.zone != zone || (metered && !e.metered) || e.path != shown {
                continue;
            }
            // Ages are kept to the day: a run that changes nothing else
            // leaves the files alone.
            if self.now_s - e.used > 86_400 {
                e.used = self.now_s;
                part.dirty = true;
            }
            if e.size == st.size && e.mtime_ns == st.mtime_ns {
                return Ok((e.clone(), Fresh::Cached));
            }
            let Some(mark) = e.mark.filter(|_| st.size >= e.size) else {
                break;
            };
            match tail::follow(path, &mark) {
                Ok(Growth::Same) => {
                    e.mtime_ns = st.mtime_ns;
                    part.dirty = true;
                    return Ok((e.clone(), Fresh::Cached));
                }
                Ok(Growth::Chunks(a)) => {
                    e.mark = Some(a.mark);
                    (e.size, e.mtime_ns) = (st.size, st.mtime_ns);
                    part.dirty = true;
                    return Ok((e.clone(), Fresh::Followed));
                }
                Ok(Growth::Other) | Err(_) => break,
            }
        }
        let opts = ScanOptions {
            no_meter: !metered,
            ..how.opts.clone()
        };
        let snap = Snapshot::read(&LogSource::File(path.to_path_buf()), &opts)?;
        let mut e = Entry::of(&snap, &st, how.zone, how.prices, metered);
        e.used = self.now_s;
        let part = if metered {
            self.others.doc.entries.remove(&key);
            &mut self.shown
        } else {
            &mut self.others
        };
        part.doc.entries.insert(key, e.clone());
        part.dirty = true;
        Ok((e, Fresh::Read))
    }

    /// The cost of day `key` (starting at `start_ms`) over every log in
    /// `logs` that was written to since it started (a log last modified
    /// before cannot hold a request of the day), plus `also` (the log
    /// shown, wherever it is). Logs that cannot be read are left out, and
    /// remembered as such until they change.
    pub fn day_cost(
        &mut self,
        logs: &[PathBuf],
        also: Option<&Path>,
        (key, start_ms): (&str, i64),
        how: &Reading<'_>,
    ) -> (f64, u64) {
        let mut seen = std::collections::HashSet::new();
        let (mut cost, mut unpriced) = (0.0, 0);
        let candidates = also
            .into_iter()
            .map(Path::to_path_buf)
            .chain(logs.iter().cloned());
        for p in candidates {
            let Ok(st) = look(&p) else { continue };
            let id = st.key();
            if !seen.insert(id.clone()) || st.mtime_ns / 1_000_000 < start_ms {
                continue;
            }
            let path = p.display().to_string();
            let seen_refused = (path.clone(), st.size, st.mtime_ns);
            if self.others.doc.refused.get(&id) == Some(&seen_refused) {
                continue;
            }
            match self.entry(&p, false, how) {
                Ok((e, _)) => {
                    let (c, u) = e.day(key);
                    cost += c;
                    unpriced += u;
                }
                Err(_) => {
                    self.others.doc.refused.insert(id, seen_refused);
                    self.others.dirty = true;
                }
            }
        }
        (cost, unpriced)
    }

    /// Write what changed back: each file beside itself, then renamed over
    /// it, so that it is whole or absent; entries of logs that are gone, and
    /// the least recently used past the limits, are left out.
    pub fn save(&mut self) -> std::io::Result<()> {
        self.shown.save(MAX_ENTRIES)?;
        self.others.save(MAX_OTHERS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn reading<'a>(opts: &'a ScanOptions, prices: &'a PriceTable) -> Reading<'a> {
        Reading {
            opts,
            prices,
            zone: &Zone::UTC,
        }
    }

    #[test]
    fn a_log_is_read_once_then_followed_or_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("s.jsonl");
        let text = std::fs::read_to_string("samples/compacted.jsonl").unwrap();
        let lines: Vec<&str> = text.lines().collect();
        // Up to (not including) the first step's chunks.
        let is_chunk =
            |l: &str| l.contains(r#""type":"assistant/chunk""#) || l.contains(r#"-chunks","seq0""#);
        let cut = lines.iter().position(|l| is_chunk(l)).unwrap();
        std::fs::write(&log, lines[..cut].join("\n") + "\n").unwrap();
        let (opts, prices) = (ScanOptions::default(), PriceTable::builtin());
        let how = reading(&opts, &prices);
        let mut c = Cache::open(dir.path(), 1);
        let (first, fresh) = c.entry(&log, true, &how).unwrap();
        assert_eq!(fresh, Fresh::Read);
        assert!(first.tokens.is_some() && first.mark.is_some());
        assert_eq!(c.entry(&log, true, &how).unwrap().1, Fresh::Cached);
        c.save().unwrap();
        // Another run: the chunks the model streams are followed.
        let mut c = Cache::open(dir.path(), 2);
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        let chunks = lines[cut..].iter().take_while(|l| is_chunk(l)).count();
        assert!(chunks > 0);
        for l in &lines[cut..cut + chunks] {
            writeln!(f, "{l}").unwrap();
        }
        let (followed, fresh) = c.entry(&log, true, &how).unwrap();
        assert_eq!(fresh, Fresh::Followed);
        assert_eq!((followed.tokens, followed.cost), (first.tokens, first.cost));
        // The figures are what a whole read gives.
        let whole = Snapshot::read(&LogSource::File(log.clone()), &opts).unwrap();
        assert_eq!(followed.tokens, whole.tokens);
        assert_eq!(followed.mark, whole.mark);
        // The message lands: read again.
        for l in &lines[cut + chunks..] {
            writeln!(f, "{l}").unwrap();
        }
        let (after, fresh) = c.entry(&log, true, &how).unwrap();
        assert_eq!(fresh, Fresh::Read);
        let whole = Snapshot::read(&LogSource::File(log.clone()), &opts).unwrap();
        assert_eq!(after.tokens, whole.tokens);
        assert_ne!(after.tokens, first.tokens);
        // A usage-only entry does not answer for the meter.
        let mut c = Cache::none(3);
        assert!(!c.entry(&log, false, &how).unwrap().0.metered);
        assert_eq!(c.entry(&log, true, &how).unwrap().1, Fresh::Read);
    }

    #[test]
    fn today_counts_the_logs_written_today_and_remembers_refusals() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.jsonl");
        std::fs::copy(
            "samples/home/sessions/--home-dev-dsh-demo--/8b12e4d0-5a3f-4e6b-8d21-6c9f0a4b2e02/session.jsonl",
            &good,
        )
        .unwrap();
        let bad = dir.path().join("bad.jsonl");
        std::fs::copy("samples/refused.jsonl", &bad).unwrap();
        let (opts, prices) = (ScanOptions::default(), PriceTable::builtin());
        let how = reading(&opts, &prices);
        let day = "2026-07-07";
        let mut c = Cache::open(dir.path(), 1);
        let logs = [good.clone(), bad.clone()];
        let (cost, _) = c.day_cost(&logs, None, (day, 0), &how);
        let (e, _) = c.entry(&good, false, &how).unwrap();
        assert_eq!(cost, e.day(day).0);
        assert!(cost > 0.0);
        assert_eq!(c.others.doc.refused.len(), 1, "the refusal is remembered");
        c.save().unwrap();
        let mut again = Cache::open(dir.path(), 2);
        assert_eq!(again.day_cost(&logs, None, (day, 0), &how).0, cost);
        assert!(
            !again.shown.dirty && !again.others.dirty,
            "nothing changed: nothing to write"
        );
        // A log last written before the day began is not read.
        let (none, _) = again.day_cost(&logs, None, (day, i64::MAX), &how);
        assert_eq!(none, 0.0);
    }

    #[test]
    fn a_cache_that_cannot_be_read_starts_afresh() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE), "not json").unwrap();
        let c = Cache::open(dir.path(), 1);
        assert!(c.shown.doc.entries.is_empty());
    }
}
