//! Labelled homes: every log of every home a command was given, with its
//! place (the home's label and the log's path in it).

use std::path::{Path, PathBuf};

use anyhow::Result;
use dsh::LogSource;
use dsh::export::Place;
use dsh::sessions::Refused;

use super::ctx::Ctx;
use super::exit::UsageError;

/// The logs found (with their places) and the arguments that named none.
pub type Homes = (Vec<(LogSource, Place)>, Vec<Refused>);

/// Every log of every home, with its place: each path argument is a home
/// labelled by its directory's name, each --home-label NAME=PATH one
/// labelled NAME; no argument: $DSH_HOME.
pub fn homes(ctx: &Ctx, paths: &[String], labels: &[String]) -> Result<Homes> {
    let mut named: Vec<(String, String)> = Vec::new();
    for h in labels {
        let Some((name, path)) = h
            .split_once('=')
            .filter(|(n, p)| !n.is_empty() && !p.is_empty())
        else {
            return Err(UsageError(format!("--home-label {h}: expected NAME=PATH")).into());
        };
        named.push((name.to_string(), path.to_string()));
    }
    let mut paths = paths.to_vec();
    if paths.is_empty() && named.is_empty() {
        paths.push(
            ctx.home_sessions()?
                .parent()
                .unwrap_or(Path::new("."))
                .display()
                .to_string(),
        );
    }
    for p in paths {
        let abs = std::path::absolute(&p).unwrap_or_else(|_| PathBuf::from(&p));
        let label = abs
            .file_name()
            .map_or_else(|| p.clone(), |n| n.to_string_lossy().into_owned());
        named.push((label, p));
    }
    let mut seen = std::collections::BTreeSet::new();
    for (name, _) in &named {
        if !seen.insert(name.clone()) {
            return Err(UsageError(format!(
                "two homes are labelled {name}: name them apart with --home-label NAME=PATH"
            ))
            .into());
        }
    }
    let (mut sources, mut refused) = (Vec::new(), Vec::new());
    let found = ctx.resolve_each(&named.iter().map(|(_, p)| p.clone()).collect::<Vec<_>>())?;
    for ((label, path), found) in named.iter().zip(found) {
        let p = Path::new(path);
        let root = if p.is_dir() {
            p
        } else {
            p.parent().unwrap_or(Path::new(""))
        };
        match found {
            Ok(logs) => {
                for src in logs {
                    let file = src.path().map(Path::to_path_buf).unwrap_or_default();
                    let rel = file.strip_prefix(root).unwrap_or(&file);
                    let log = rel
                        .components()
                        .map(|c| c.as_os_str().to_string_lossy().into_owned())
                        .collect::<Vec<_>>()
                        .join("/");
                    let place = Place {
                        home: label.clone(),
                        log,
                    };
                    sources.push((src, place));
                }
            }
            Err(e) => refused.push(Refused {
                file: path.clone(),
                size: None,
                error: Box::new(e),
            }),
        }
    }
    Ok((sources, refused))
}
