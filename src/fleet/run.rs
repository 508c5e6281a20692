//! One run of the fleet export: classify, read what changed, stage every
//! file, commit, apply.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use super::{
    Change, EVENT_TABLES, FleetError, LogEntry, Manifest, Report, State, classify, date_of, io,
    read_manifest, read_state, recover, session_key, stat, write_manifest, write_state,
};
use crate::export::{ExportOptions, Format, LogRows, Place, Row, TABLES};
use crate::log::LogSource;

/// One log to export, and where it was found.
#[derive(Debug, Clone)]
pub struct Input {
    /// The log.
    pub source: LogSource,
    /// Its home and path there.
    pub place: Place,
}

/// Files a run stages: (table index, final relative path) → rows.
type Staged = BTreeMap<(usize, String), Vec<Row>>;

/// Export `inputs` into `out`, reading only what changed since the last
/// run (see the module doc). `dry_run`: classify and read, write nothing.
/// `on_log` is called once per log read.
pub fn export(
    out: &Path,
    inputs: &[Input],
    opts: &ExportOptions,
    jobs: usize,
    dry_run: bool,
    on_log: &mut dyn FnMut(),
) -> Result<Report, FleetError> {
    let mut report = Report::default();
    if !dry_run {
        std::fs::create_dir_all(out.join("_dsh")).map_err(io(out))?;
        report.recovered = recover(out)?;
    }
    let m = read_manifest(out)?.unwrap_or(Manifest {
        version: 1,
        ..Manifest::default()
    });
    let run = m.run + 1;
    report.run = run;
    let Changes {
        now,
        change,
        to_read,
    } = what_changed(&m, inputs, &mut report);
    let given: BTreeSet<String> = inputs.iter().map(|i| i.place.key()).collect();
    report.missing = m
        .logs
        .keys()
        .filter(|k| !given.contains(*k))
        .cloned()
        .collect();
    if to_read.is_empty() {
        // Nothing changed: no run.
        report.run = m.run;
        return Ok(report);
    }
    let (read, refused_now) = read_changed(&to_read, opts, jobs, on_log, &mut report)?;
    report.read = read.len() as u64;
    let mut state = if dry_run && m.state.is_none() {
        State::new()
    } else {
        read_state(out, &m)?
    };
    let mut stage = Stage {
        run,
        now,
        change,
        moved: HashMap::new(),
        staged: BTreeMap::new(),
        delete: Vec::new(),
    };
    // A rewritten log's old event rows leave every file that held them.
    let rewritten: BTreeSet<String> = read
        .iter()
        .map(|(p, _)| p.key())
        .filter(|k| stage.change.get(k) == Some(&Change::Rewritten))
        .collect();
    stage.moved = rewrite_files(out, &m, &rewritten, &mut stage.staged, &mut stage.delete)?;
    // New event rows, and every read log's state rows.
    for (place, rows) in &read {
        stage.log_rows(&m, place, rows, &mut state, &mut report);
    }
    stage.state_tables(&m, &state, &mut report);
    stage.empty_tables(&m);
    for (t, _) in stage.staged.keys() {
        report.files[*t] += 1;
    }
    if dry_run {
        return Ok(report);
    }
    commit(out, m, stage, &state, &read, &refused_now)?;
    Ok(report)
}

/// Each input's change since the last run.
struct Changes {
    /// The new manifest entry of every log that is there now.
    now: HashMap<String, LogEntry>,
    change: HashMap<String, Change>,
    /// The logs to read (changed or new).
    to_read: Vec<(LogSource, Place)>,
}

/// Classify every input against the manifest (what changed).
fn what_changed(m: &Manifest, inputs: &[Input], report: &mut Report) -> Changes {
    let mut now: HashMap<String, LogEntry> = HashMap::new();
    let mut change: HashMap<String, Change> = HashMap::new();
    let mut to_read = Vec::new();
    for i in inputs {
        let key = i.place.key();
        let path = i.source.path().map(Path::to_path_buf).unwrap_or_default();
        let (c, why) = match (m.logs.get(&key), stat(&i.place, &path)) {
            (_, Err(_)) | (None, _) => (Change::New, None),
            (Some(old), Ok(n)) => {
                let c = classify(old, &n, &path);
                now.insert(key.clone(), n);
                c
            }
        };
        if let (Change::New, Ok(n)) = (c, stat(&i.place, &path)) {
            now.insert(key.clone(), n);
        }
        if let Some(why) = why {
            report.rewritten.push((i.place.clone(), why));
        }
        if c == Change::Unchanged
            && let Some(why) = m.logs.get(&key).and_then(|o| o.refused.clone())
        {
            report.still_refused.push((i.place.clone(), why));
        }
        report.logs.push((i.place.clone(), c));
        change.insert(key, c);
        if c != Change::Unchanged {
            to_read.push((i.source.clone(), i.place.clone()));
        }
    }
    Changes {
        now,
        change,
        to_read,
    }
}

/// Rows of each log read, and (key, why) of each refused.
type Read = (Vec<(Place, LogRows)>, Vec<(String, String)>);

/// Read the changed logs (`jobs` at a time); a refused one goes in the report.
fn read_changed(
    to_read: &[(LogSource, Place)],
    opts: &ExportOptions,
    jobs: usize,
    on_log: &mut dyn FnMut(),
    report: &mut Report,
) -> Result<Read, FleetError> {
    let mut read: Vec<(Place, LogRows)> = Vec::new();
    let mut refused_now: Vec<(String, String)> = Vec::new();
    crate::export::export_many(to_read, opts, jobs, &mut |i, r| {
        on_log();
        match r {
            Ok(rows) => read.push((to_read[i].1.clone(), rows)),
            Err(e) => {
                refused_now.push((to_read[i].1.key(), e.error.message().to_string()));
                report.refused.push(e);
            }
        }
        Ok::<(), FleetError>(())
    })?;
    Ok((read, refused_now))
}

/// What a run builds before it commits.
struct Stage {
    run: u64,
    /// The new manifest entry of every log there now.
    now: HashMap<String, LogEntry>,
    change: HashMap<String, Change>,
    /// Rewritten files: old name → new name.
    moved: HashMap<String, String>,
    staged: Staged,
    /// Files deleted at the commit.
    delete: Vec<String>,
}

impl Stage {
    /// Stage a read log's new event rows and keep its state rows.
    fn log_rows(
        &mut self,
        m: &Manifest,
        place: &Place,
        rows: &LogRows,
        state: &mut State,
        report: &mut Report,
    ) {
        let key = place.key();
        let old = m
            .logs
            .get(&key)
            .filter(|_| self.change[&key] == Change::Grown);
        let entry = self.now.entry(key.clone()).or_default();
        entry.files = m
            .logs
            .get(&key)
            .map(|o| o.files.clone())
            .unwrap_or_default();
        if self.change[&key] == Change::Rewritten {
            entry.files.clear();
        }
        for f in &mut entry.files {
            if let Some(n) = self.moved.get(f) {
                f.clone_from(n);
            }
        }
        entry.files.retain(|f| !self.delete.contains(f));
        let start = state_start(rows);
        for (t, table) in rows.tables.iter().enumerate() {
            let spec = &TABLES[t];
            if !EVENT_TABLES.contains(&t) {
                state
                    .entry(key.clone())
                    .or_default()
                    .insert(t, table.clone());
                continue;
            }
            let after = old.and_then(|o| o.last_seq.get(spec.name).copied());
            let mut last = after;
            for r in table {
                let seq = super::cell_seq(spec, r);
                if after.is_some_and(|a| seq.is_some_and(|s| s <= a)) {
                    continue;
                }
                last = last.max(seq);
                let file = partition(spec.name, &date_of(spec, r, start), self.run);
                if !entry.files.contains(&file) {
                    entry.files.push(file.clone());
                }
                self.staged.entry((t, file)).or_default().push(r.clone());
                report.rows[t] += 1;
            }
            if let Some(l) = last {
                entry.last_seq.insert(spec.name.to_string(), l);
            }
        }
        entry.home.clone_from(&place.home);
        entry.log.clone_from(&place.log);
    }

    /// State tables: rewritten whole from the state rows.
    fn state_tables(&mut self, m: &Manifest, state: &State, report: &mut Report) {
        for (t, spec) in TABLES.iter().enumerate() {
            if EVENT_TABLES.contains(&t) {
                continue;
            }
            self.delete
                .extend(m.files.get(spec.name).cloned().unwrap_or_default());
            for tables in state.values() {
                let start = tables
                    .get(&0)
                    .and_then(|s| s.first())
                    .and_then(|r| super::cell_time(&TABLES[0], r, "started"));
                for r in tables.get(&t).into_iter().flatten() {
                    let file = partition(spec.name, &date_of(spec, r, start), self.run);
                    self.staged.entry((t, file)).or_default().push(r.clone());
                    report.rows[t] += 1;
                }
            }
        }
    }

    /// A table with no rows at all still gets one (empty) file, so that a
    /// query of it finds a file and an empty table.
    fn empty_tables(&mut self, m: &Manifest) {
        for (t, spec) in TABLES.iter().enumerate() {
            let kept = m
                .files
                .get(spec.name)
                .is_some_and(|fs| fs.iter().any(|f| !self.delete.contains(f)));
            if !kept && !self.staged.keys().any(|(st, _)| *st == t) {
                self.staged
                    .insert((t, partition(spec.name, "unknown", self.run)), Vec::new());
            }
        }
    }
}

/// Stage, then commit: write the staged files and the state, then the
/// manifest naming them, then apply it.
fn commit(
    out: &Path,
    mut m: Manifest,
    stage: Stage,
    state: &State,
    read: &[(Place, LogRows)],
    refused_now: &[(String, String)],
) -> Result<(), FleetError> {
    let Stage {
        run,
        now,
        change,
        moved,
        staged,
        mut delete,
    } = stage;
    let staging_rel = format!("_dsh/staging-{run:05}");
    let staging = out.join(&staging_rel);
    let mut pending = Vec::new();
    for ((t, file), rows) in &staged {
        let path = staging.join(file);
        write_file(&path, *t, rows)?;
        pending.push((format!("{staging_rel}/{file}"), file.clone()));
    }
    let state_rel = format!("_dsh/state-{run:05}.jsonl");
    write_state(&staging.join("state.jsonl"), state)?;
    pending.push((format!("{staging_rel}/state.jsonl"), state_rel.clone()));
    if let Some(old) = m.state.take() {
        delete.push(old);
    }
    for (key, mut entry) in now.into_iter() {
        if change.get(&key).is_some_and(|c| *c != Change::Unchanged)
            && read.iter().any(|(p, _)| p.key() == key)
        {
            m.logs.insert(key, entry);
        } else if let Some((_, why)) = refused_now.iter().find(|(k, _)| *k == key) {
            // Refused: remembered (rows it had stay), read again once it
            // changes.
            let old = m.logs.remove(&key).unwrap_or_default();
            entry.files = old.files;
            entry.last_seq = old.last_seq;
            entry.refused = Some(why.clone());
            m.logs.insert(key, entry);
        } else if let Some(old) = m.logs.get_mut(&key) {
            // Unchanged (or refused this time): only a moved file's name.
            for f in &mut old.files {
                if let Some(n) = moved.get(f) {
                    f.clone_from(n);
                }
            }
            old.files.retain(|f| !delete.contains(f));
        }
    }
    for (t, spec) in TABLES.iter().enumerate() {
        let files = m.files.entry(spec.name.to_string()).or_default();
        files.retain(|f| !delete.contains(f));
        files.extend(
            staged
                .keys()
                .filter(|(st, _)| *st == t)
                .map(|(_, f)| f.clone()),
        );
        files.sort();
        files.dedup();
    }
    m.run = run;
    m.state = Some(state_rel);
    m.pending = pending;
    m.delete = delete;
    write_manifest(out, &m)?;
    recover(out)?;
    Ok(())
}

/// The session's start (for a finding's partition).
fn state_start(rows: &LogRows) -> Option<i64> {
    rows.tables[0]
        .first()
        .and_then(|r| super::cell_time(&TABLES[0], r, "started"))
}

/// The file of this run and partition for table `t` (one per partition).
fn partition(table: &str, date: &str, run: u64) -> String {
    format!("{table}/date={date}/part-{run:05}-0000.parquet")
}

/// Rewrite every event file holding rows of the `rewritten` logs without
/// them (staged under a new name; the old one deleted at the commit).
/// Returns old name → new name (absent: nothing left in it).
fn rewrite_files(
    out: &Path,
    m: &Manifest,
    rewritten: &BTreeSet<String>,
    staged: &mut Staged,
    delete: &mut Vec<String>,
) -> Result<HashMap<String, String>, FleetError> {
    let mut moved = HashMap::new();
    let files: BTreeSet<&String> = rewritten
        .iter()
        .filter_map(|k| m.logs.get(k))
        .flat_map(|e| &e.files)
        .collect();
    for f in files {
        let Some(t) = TABLES
            .iter()
            .position(|s| f.starts_with(&format!("{}/", s.name)))
        else {
            continue;
        };
        let spec = &TABLES[t];
        let rows = crate::export::read_parquet(&out.join(f), spec)?;
        let kept: Vec<Row> = rows
            .into_iter()
            .filter(|r| session_key(spec, r).is_none_or(|k| !rewritten.contains(&k)))
            .collect();
        delete.push(f.clone());
        if kept.is_empty() {
            continue;
        }
        let new = f.replace(".parquet", "-r.parquet");
        staged.entry((t, new.clone())).or_default().extend(kept);
        moved.insert(f.clone(), new);
    }
    Ok(moved)
}

fn write_file(path: &Path, t: usize, rows: &[Row]) -> Result<(), FleetError> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).map_err(io(d))?;
    }
    let f = std::fs::File::create(path).map_err(io(path))?;
    let mut w = Format::Parquet.writer(&TABLES[t], f.try_clone().map_err(io(path))?)?;
    w.write_rows(rows)?;
    w.finish()?;
    f.sync_all().map_err(io(path))?;
    Ok(())
}
