//! The documentation holds together: every command `dsh --help` lists has
//! its page `docs/<command>.md` and exactly one line in the README, and every
//! relative link of README.md and docs/*.md leads to a file of the
//! repository and, where it names one, to a heading of that file.

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};

use crate::support::{dsh, root};

/// The subcommands of `dsh --help`'s "Commands:" section (`help` left out).
fn commands_of_help(help: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in help.lines() {
        if line.trim_end() == "Commands:" {
            inside = true;
            continue;
        }
        if !inside {
            continue;
        }
        if line.trim().is_empty() || !line.starts_with(' ') {
            break;
        }
        // A command's line is indented two spaces; a wrapped description
        // further.
        if line.starts_with("  ") && !line.starts_with("   ") {
            let name = line.split_whitespace().next().unwrap_or_default();
            if name != "help" {
                out.push(name.to_string());
            }
        }
    }
    out
}

/// The lines outside fenced code blocks, with their numbers (from 1).
fn prose_lines(md: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut fence: Option<String> = None;
    for (i, line) in md.lines().enumerate() {
        let t = line.trim_start();
        let ticks: String = t.chars().take_while(|&c| c == '`' || c == '~').collect();
        if ticks.len() >= 3 && line.len() - t.len() <= 3 {
            match &fence {
                None => fence = Some(ticks),
                Some(f) if ticks.starts_with(f.as_str()) && t.trim() == ticks => fence = None,
                Some(_) => {}
            }
            continue;
        }
        if fence.is_none() {
            out.push((i + 1, line));
        }
    }
    out
}

/// `line` without its inline code spans (a run of N backticks up to the
/// next run of exactly N); an unmatched run stays as it is.
fn strip_code_spans(line: &str) -> String {
    let b = line.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    let mut copied = 0;
    while i < b.len() {
        if b[i] != b'`' {
            i += 1;
            continue;
        }
        let n = b[i..].iter().take_while(|&&c| c == b'`').count();
        let mut j = i + n;
        let mut close = None;
        while j < b.len() {
            if b[j] == b'`' {
                let m = b[j..].iter().take_while(|&&c| c == b'`').count();
                if m == n {
                    close = Some(j + m);
                    break;
                }
                j += m;
            } else {
                j += 1;
            }
        }
        match close {
            Some(end) => {
                out.push_str(&line[copied..i]);
                copied = end;
                i = end;
            }
            None => i += n,
        }
    }
    out.push_str(&line[copied..]);
    out
}

/// The targets of the inline links `[text](target)` of a Markdown text,
/// with their line numbers.
fn links(md: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in prose_lines(md) {
        let line = strip_code_spans(line);
        let mut rest = line.as_str();
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(end) = after.find(')') else { break };
            let target = after[..end].split_whitespace().next().unwrap_or_default();
            out.push((n, target.trim_matches(['<', '>']).to_string()));
            rest = &after[end..];
        }
    }
    out
}

/// The anchors GitHub gives the headings of a Markdown text: lower case,
/// punctuation dropped (letters, digits, `-` and `_` kept), spaces to
/// hyphens, and `-1`, `-2`, … after a repeated one.
fn anchors(md: &str) -> HashSet<String> {
    let mut out = HashSet::new();
    for (_, line) in prose_lines(md) {
        let t = line.trim_start();
        let level = t.chars().take_while(|&c| c == '#').count();
        if level == 0 || level > 6 || !t[level..].starts_with(' ') {
            continue;
        }
        let text = link_texts(t[level..].trim()).replace('`', "");
        let slug: String = text
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .collect();
        let mut unique = slug.clone();
        let mut k = 1;
        while !out.insert(unique.clone()) {
            unique = format!("{slug}-{k}");
            k += 1;
        }
    }
    out
}

/// A heading's text with each link `[text](target)` reduced to its text.
fn link_texts(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("](") {
        let Some(end) = rest[i..].find(')') else {
            break;
        };
        out.push_str(&rest[..i].replace('[', ""));
        rest = &rest[i + end + 1..];
    }
    out.push_str(&rest.replace('[', ""));
    out
}

/// `path` with `.` and `..` resolved without touching the file system;
/// `None` when it climbs above its start.
fn normalise(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(p) => out.push(p),
            _ => return None,
        }
    }
    Some(out)
}

/// Every broken relative link of the Markdown files `files` (paths relative
/// to `root`): a target outside `root`, a file that does not exist, or an
/// `#anchor` that is no heading of the Markdown file it names.
fn broken_links(root: &Path, files: &[PathBuf]) -> Vec<String> {
    let mut bad = Vec::new();
    for file in files {
        let md = std::fs::read_to_string(root.join(file)).unwrap();
        for (line, target) in links(&md) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let where_ = format!("{}:{line}: ({target})", file.display());
            let resolved = if path.is_empty() {
                Some(file.clone())
            } else {
                normalise(&file.parent().unwrap_or(Path::new("")).join(path))
            };
            let Some(resolved) = resolved else {
                bad.push(format!("{where_} leaves the repository"));
                continue;
            };
            let full = root.join(&resolved);
            if !full.exists() {
                bad.push(format!("{where_}: no such file"));
                continue;
            }
            let Some(anchor) = anchor else { continue };
            if resolved.extension().is_none_or(|e| e != "md") {
                bad.push(format!(
                    "{where_}: an anchor into a file that is not Markdown"
                ));
                continue;
            }
            let text = std::fs::read_to_string(&full).unwrap();
            if !anchors(&text).contains(anchor) {
                bad.push(format!(
                    "{where_}: no heading #{anchor} in {}",
                    resolved.display()
                ));
            }
        }
    }
    bad
}

/// The README and every page of `docs/`, relative to `root`.
fn markdown_files(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![PathBuf::from("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .map(|p| PathBuf::from("docs").join(p.file_name().unwrap()))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// What is wrong with the pages of `commands`: a missing `docs/<command>.md`,
/// a page that does not open with `# dsh <command>`, or a README without
/// exactly one table row or list item linking to it (prose may link too).
fn command_doc_problems(root: &Path, commands: &[String]) -> Vec<String> {
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let mut bad = Vec::new();
    for c in commands {
        let page = root.join("docs").join(format!("{c}.md"));
        match std::fs::read_to_string(&page) {
            Err(_) => bad.push(format!("docs/{c}.md is missing")),
            Ok(text) if text.lines().next() != Some(&format!("# dsh {c}")) => {
                bad.push(format!("docs/{c}.md does not open with `# dsh {c}`"))
            }
            Ok(_) => {}
        }
        let link = format!("](docs/{c}.md)");
        let lines = readme
            .lines()
            .filter(|l| l.starts_with(['|', '-', '*']) && l.contains(&link))
            .count();
        if lines != 1 {
            bad.push(format!(
                "README.md has {lines} lines linking docs/{c}.md (one line per command)"
            ));
        }
    }
    bad
}

fn help_commands() -> Vec<String> {
    let out = dsh().arg("--help").output().unwrap();
    assert!(out.status.success());
    let commands = commands_of_help(&String::from_utf8(out.stdout).unwrap());
    assert!(
        commands.len() >= 15 && commands.iter().any(|c| c == "measure"),
        "read the commands of `dsh --help`: {commands:?}"
    );
    commands
}

#[test]
fn every_command_has_its_page_and_one_readme_line() {
    let bad = command_doc_problems(&root(), &help_commands());
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn every_relative_link_resolves() {
    let root = root();
    let files = markdown_files(&root);
    assert!(files.len() > 20, "read docs/: {files:?}");
    let bad = broken_links(&root, &files);
    assert!(bad.is_empty(), "broken links:\n{}", bad.join("\n"));
}

#[test]
fn readme_stays_short() {
    let lines = std::fs::read_to_string(root().join("README.md"))
        .unwrap()
        .lines()
        .count();
    assert!(
        lines <= 300,
        "README.md has {lines} lines; detail goes to docs/"
    );
}

/// The checks above fail when they should: on a scratch repository with a
/// missing page, a command listed twice, a dead file link and a dead anchor.
#[test]
fn the_checks_catch_what_they_guard() {
    let help = "Usage: dsh [OPTIONS] <COMMAND>\n\nCommands:\n  surface  Show\n  \
                measure  Measure context pressure, a description that wraps\n           \
                onto a second line\n  prune    Prune\n  help     Print this message\n\n\
                Options:\n  -h, --help\n";
    assert_eq!(commands_of_help(help), ["surface", "measure", "prune"]);

    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    std::fs::create_dir(r.join("docs")).unwrap();
    std::fs::write(
        r.join("README.md"),
        "# t\n\n| [`dsh surface`](docs/surface.md) | x |\n\
         | [`dsh measure`](docs/measure.md) | x |\n- [again](docs/measure.md)\n\
         ```\n[not a link](docs/nowhere.md)\n```\n\
         `[code](docs/nowhere.md)` [ok](docs/surface.md#the-shape-of-json)\n",
    )
    .unwrap();
    std::fs::write(
        r.join("docs/surface.md"),
        "# dsh surface\n\n## The shape of `--json`\n\n[up](../README.md) [gone](gone.md)\n\
         [flags](measure.md#flags) [self](#the-shape-of---json) [out](../../x.md)\n",
    )
    .unwrap();
    std::fs::write(
        r.join("docs/measure.md"),
        "# measure\n\n## Flags\n## Flags\n",
    )
    .unwrap();

    let problems = command_doc_problems(r, &["surface".into(), "measure".into(), "prune".into()]);
    assert_eq!(
        problems,
        [
            "docs/measure.md does not open with `# dsh measure`",
            "README.md has 2 lines linking docs/measure.md (one line per command)",
            "docs/prune.md is missing",
            "README.md has 0 lines linking docs/prune.md (one line per command)",
        ]
    );

    let bad = broken_links(r, &markdown_files(r));
    assert_eq!(
        bad,
        [
            "README.md:9: (docs/surface.md#the-shape-of-json): no heading #the-shape-of-json in docs/surface.md",
            "docs/surface.md:5: (gone.md): no such file",
            "docs/surface.md:6: (../../x.md) leaves the repository",
        ],
        "{bad:#?}"
    );
    // `measure.md#flags` resolves (and so would `#flags-1`); the code spans
    // and the fenced block hold no links.
    assert!(anchors("## Flags\n## Flags\n").contains("flags-1"));
}
