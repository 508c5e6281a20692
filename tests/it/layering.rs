//! The library's module order (docs/architecture.md, "Module order"): a module may use only
//! modules of lower layers. The check reads `src/` itself, so a new import
//! that points upwards, or a circle, fails here before it lands.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Top-level library modules, bottom layer first. Keep in step with the
/// drawing in docs/architecture.md ("Module order").
const LAYERS: &[&[&str]] = &[
    &["test_rng"],
    &["json", "cancel", "civil", "par", "generation"],
    &["event", "heuristic", "policy", "provider", "price"],
    &[
        "request_header",
        "lock",
        "surface",
        "config",
        "usage",
        "attempt",
    ],
    &["log"],
    &["derive", "meter", "range", "pack", "fill"],
    &["prune", "append", "sessions", "cache"],
    &[
        "verify",
        "lifecycle",
        "health",
        "view",
        "hidden_prefix",
        "status",
        "tree",
    ],
    &["compact", "survival", "export", "prune_write", "measure"],
    &["simulate", "report", "fleet"],
    &["doc"],
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
            found.extend(group_items(group));
        } else {
            found.push(first_segment(rest));
        }
    }
    found.retain(|m| !m.is_empty());
    found
}

/// The first path segment of each top-level item of a use group (the text
/// after its `{`).
fn group_items(group: &str) -> Vec<String> {
    let mut found = Vec::new();
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
/// imports another (what several share lives in `src/cli/`); a command's
/// own parts (`compact/args.rs`, its flags) are declared with `mod`.
#[test]
fn command_files_do_not_import_each_other() {
    let dir = crate::support::root().join("src/cli/commands");
    let mut bad = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    while let Some(p) = files.pop() {
        if p.is_dir() {
            files.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        let name = p.strip_prefix(&dir).unwrap().to_string_lossy().into_owned();
        if name == "mod.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap();
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

/// A file's module path: `log/reader.rs` is `log::reader`, `log/mod.rs` is
/// `log`, `lib.rs` and `main.rs` the crate root.
fn module_path(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The file that defines the longest leading part of a module path.
fn file_of(files: &BTreeMap<String, String>, path: &[String]) -> Option<String> {
    (1..=path.len()).rev().find_map(|k| {
        let stem = path[..k].join("/");
        [format!("{stem}.rs"), format!("{stem}/mod.rs")]
            .into_iter()
            .find(|f| files.contains_key(f))
    })
}

/// The other files of `src/` that a file names through `crate::`,
/// `super::` or `self::` paths (use groups included), in its code before a
/// trailing `#[cfg(test)] mod tests { … }`; line comments left out.
fn file_deps(files: &BTreeMap<String, String>, rel: &str) -> BTreeSet<String> {
    let source = &files[rel];
    let source = source
        .find("#[cfg(test)]\nmod tests {")
        .map_or(source.as_str(), |i| &source[..i]);
    let code: String = source
        .lines()
        .map(|l| l.find("//").map_or(l, |i| &l[..i]))
        .collect::<Vec<_>>()
        .join("\n");
    let own = module_path(rel);
    let mut deps = BTreeSet::new();
    let bytes = code.as_bytes();
    for head in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(i) = code[from..].find(head).map(|i| i + from) {
            from = i + head.len();
            if i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_') {
                continue;
            }
            // Where the path starts, and its segments up to a group or the end.
            let mut base = match head {
                "crate::" => Vec::new(),
                "super::" => own[..own.len().saturating_sub(1)].to_vec(),
                _ => own.clone(),
            };
            let mut rest = &code[from..];
            while let Some(r) = rest.strip_prefix("super::") {
                base.pop();
                rest = r;
            }
            let mut items: Vec<String> = Vec::new();
            let path: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let after = &rest[path.len()..];
            let mut segs: Vec<String> = path
                .split("::")
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect();
            if (path.is_empty() || path.ends_with("::"))
                && let Some(group) = after.strip_prefix('{')
            {
                items = group_items(group);
            }
            base.append(&mut segs);
            let targets: Vec<Vec<String>> = if items.is_empty() {
                vec![base]
            } else {
                items
                    .into_iter()
                    .filter(|s| !s.is_empty() && s != "self")
                    .map(|s| base.iter().cloned().chain([s]).collect())
                    .collect()
            };
            for t in targets {
                if let Some(f) = file_of(files, &t).filter(|f| f != rel) {
                    deps.insert(f);
                }
            }
        }
    }
    deps
}

/// Every circle of imports between files: the strongly connected groups of
/// more than one file, each sorted.
fn file_circles(files: &BTreeMap<String, String>) -> Vec<Vec<String>> {
    let deps: BTreeMap<&str, BTreeSet<String>> = files
        .keys()
        .map(|f| (f.as_str(), file_deps(files, f)))
        .collect();
    let reaches = |from: &str, to: &str| {
        let mut seen = BTreeSet::new();
        let mut work = vec![from.to_string()];
        while let Some(f) = work.pop() {
            if f == to {
                return true;
            }
            if seen.insert(f.clone()) {
                work.extend(deps.get(f.as_str()).into_iter().flatten().cloned());
            }
        }
        false
    };
    let mut circles: Vec<Vec<String>> = Vec::new();
    for f in files.keys() {
        if circles.iter().any(|c| c.contains(f)) {
            continue;
        }
        let group: Vec<String> = files
            .keys()
            .filter(|g| *g == f || (reaches(f, g) && reaches(g, f)))
            .cloned()
            .collect();
        if group.len() > 1 {
            circles.push(group);
        }
    }
    circles
}

/// No two files import each other, directly or round a longer circle.
#[test]
fn no_import_circles_between_files() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = BTreeMap::new();
    read_tree(&src, &src, &mut files);
    let circles = file_circles(&files);
    assert!(
        circles.is_empty(),
        "import circles between files: {circles:?}"
    );
}

#[test]
fn the_circle_check_finds_circles() {
    let files = |pairs: &[(&str, &str)]| {
        pairs
            .iter()
            .map(|(f, s)| (f.to_string(), s.to_string()))
            .collect::<BTreeMap<_, _>>()
    };
    // The old one: the reader took the log source, the source the reader's
    // magic bytes.
    let two = files(&[
        (
            "log/mod.rs",
            "mod reader; mod source; pub use source::LogSource;",
        ),
        ("log/reader.rs", "use super::source::LogSource;"),
        ("log/source.rs", "fn f() { x != super::reader::ZSTD_MAGIC }"),
    ]);
    assert_eq!(
        file_circles(&two),
        [["log/reader.rs", "log/source.rs"]],
        "{:?}",
        file_deps(&two, "log/source.rs")
    );
    // Round three files, through a use group and `crate::`; a test module
    // and comments do not count.
    let three = files(&[
        ("a.rs", "use crate::{b::X, json::Value};"),
        ("b.rs", "use super::c::Y; // super::a::Z"),
        (
            "c.rs",
            "fn f() { crate::a::g() }\n#[cfg(test)]\nmod tests {\n    use super::*;\n}",
        ),
        (
            "d.rs",
            "use crate::a::A;\n#[cfg(test)]\nmod tests {\n    use crate::d::D;\n}",
        ),
        ("json.rs", ""),
    ]);
    assert_eq!(file_circles(&three), [["a.rs", "b.rs", "c.rs"]]);
    let one_way = files(&[
        ("a.rs", "use crate::b::X;"),
        ("b.rs", "use crate::c::X;"),
        ("c.rs", ""),
    ]);
    assert!(file_circles(&one_way).is_empty());
}
