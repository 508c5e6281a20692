//! Help that reads well at any width, and typo hints by meaning.

use clap::error::{ContextKind, ContextValue, ErrorKind};

/// The widest help clap lays out (`max_term_width` of the command line).
pub const MAX_WIDTH: usize = 100;

/// The width clap lays help out at, found as clap finds it: the terminal
/// on standard output, error or input, else `$COLUMNS`, else
/// [`MAX_WIDTH`]; at most [`MAX_WIDTH`].
pub fn help_width() -> usize {
    let tty = [1, 2, 0].into_iter().find_map(|fd| {
        // SAFETY: TIOCGWINSZ fills a winsize; a descriptor that is not a
        // terminal fails and leaves it unread.
        let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
        let ok = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut ws) } == 0;
        (ok && ws.ws_col > 0).then_some(usize::from(ws.ws_col))
    });
    tty.or_else(|| std::env::var("COLUMNS").ok()?.trim().parse().ok())
        .unwrap_or(MAX_WIDTH)
        .min(MAX_WIDTH)
}

/// An examples text laid out for `width` columns, so that no line wraps
/// into something that reads as a command: an example whose trailing
/// `# comment` does not fit beside it gets the comment on a line of its
/// own above it; a comment too long for a line goes on over `#` lines; a
/// command too long for a line is continued with ` \` (as a shell reads
/// it). Lines that fit are kept.
pub fn fit_examples(text: &str, width: usize) -> String {
    let fits = |l: &str| super::render::display_width(l) < width;
    let mut out = Vec::new();
    for line in text.lines() {
        let indent = &line[..line.len() - line.trim_start().len()];
        let body = line.trim_start();
        if fits(line) {
            out.push(line.to_string());
        } else if let Some(comment) = body.strip_prefix('#') {
            out.extend(wrap_words(
                comment.trim(),
                &format!("{indent}# "),
                width,
                "",
            ));
        } else if let Some(at) = body.find("  # ") {
            let comment = body[at..].trim_start().trim_start_matches('#').trim();
            out.extend(wrap_words(comment, &format!("{indent}# "), width, ""));
            out.extend(wrap_words(body[..at].trim_end(), indent, width, " \\"));
        } else {
            out.extend(wrap_words(body, indent, width, " \\"));
        }
    }
    out.join("\n")
}

/// `text` in lines narrower than `width`, each starting with `lead` (the
/// ones after the first indented four more columns when `cont` marks a
/// continued command, which every line but the last ends with).
fn wrap_words(text: &str, lead: &str, width: usize, cont: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = lead.to_string();
    let next_lead = if cont.is_empty() {
        lead.to_string()
    } else {
        format!("{lead}    ")
    };
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let start = cur.trim_end() == lead.trim_end() || cur == next_lead;
        let candidate = if start {
            format!("{cur}{word}")
        } else {
            format!("{cur} {word}")
        };
        if !start && super::render::display_width(&candidate) + cont.len() >= width {
            lines.push(format!("{cur}{cont}"));
            cur = format!("{next_lead}{word}");
        } else {
            cur = candidate;
        }
    }
    lines.push(cur);
    lines
}

/// Every subcommand's examples fitted to the help width.
pub fn fit_all_examples(cmd: clap::Command) -> clap::Command {
    let width = help_width();
    let names: Vec<String> = cmd
        .get_subcommands()
        .filter(|s| s.get_after_help().is_some())
        .map(|s| s.get_name().to_string())
        .collect();
    names.iter().fold(cmd, |cmd, name| {
        cmd.mut_subcommand(name, |sub| {
            let text = sub
                .get_after_help()
                .map(|h| h.to_string())
                .unwrap_or_default();
            sub.after_help(fit_examples(&text, width))
        })
    })
}

/// How close a flag's name is to what was typed, by meaning first: the
/// typed words all in the flag's (`--threshold` → `--threshold-ratio`,
/// `--window` → `--context-window`), then by spelling. `None`: not close.
fn closeness(typed: &str, name: &str) -> Option<usize> {
    let words: Vec<&str> = name.split('-').collect();
    if typed.split('-').all(|w| words.contains(&w)) {
        return Some(0);
    }
    if name.starts_with(typed) || typed.starts_with(name) {
        return Some(1);
    }
    let d = dsh::log::lookup::edit_distance(typed, name);
    (d <= (typed.chars().count() / 3).clamp(1, 3)).then_some(d + 1)
}

/// Whether `arg` would take `value` (its parser accepts it); a flag that
/// takes no value takes none.
fn takes(arg: &clap::Arg, value: Option<&str>) -> bool {
    let Some(v) = value else { return true };
    if !arg.get_action().takes_values() {
        return false;
    }
    // A flag of its own with the same parser reads the value as dsh would.
    let alone = clap::Arg::new("value")
        .long("value")
        .action(clap::ArgAction::Set)
        .value_parser(arg.get_value_parser().clone());
    clap::Command::new("x")
        .arg(alone)
        .try_get_matches_from(["x", "--value", v])
        .is_ok()
}

/// The flags of `cmd` close to `typed` (without its dashes), best first:
/// those that would take the value typed after it before those that would
/// not, then by [`closeness`], then in the order of `--help`.
pub fn near_flags<'c>(
    cmd: &'c clap::Command,
    typed: &str,
    value: Option<&str>,
) -> Vec<&'c clap::Arg> {
    let mut found: Vec<(bool, usize, usize, &clap::Arg)> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set())
        .enumerate()
        .filter_map(|(i, a)| {
            let long = a.get_long()?;
            let c = closeness(typed, long)?;
            Some((!takes(a, value), c, i, a))
        })
        .collect();
    found.sort_by_key(|&(fits, c, i, _)| (fits, c, i));
    found.into_iter().map(|(_, _, _, a)| a).collect()
}

/// The first line of a flag's help.
fn gist(arg: &clap::Arg) -> String {
    let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
    let first = help.lines().next().unwrap_or_default();
    let end = first.find(". ").map_or(first.len(), |i| i);
    first[..end].trim_end_matches('.').to_string()
}

/// A flag as `--name <VALUE>`.
fn spelled(arg: &clap::Arg) -> String {
    let long = arg.get_long().unwrap_or_default();
    match arg.get_value_names() {
        Some(v) if arg.get_action().takes_values() => format!("--{long} <{}>", v[0]),
        _ => format!("--{long}"),
    }
}

/// An "unexpected argument" error for a flag the subcommand does not
/// have, with dsh's own hint in place of clap's: the flags close to it by
/// meaning, each with what it does, the one that would take the value
/// typed after it first. `None`: not such an error, or nothing close.
pub fn unknown_flag(
    cmd: &clap::Command,
    argv: &[String],
    err: &clap::Error,
) -> Option<clap::Error> {
    if err.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(invalid)) = err.get(ContextKind::InvalidArg) else {
        return None;
    };
    let flag = invalid.split_once('=').map_or(invalid.as_str(), |(f, _)| f);
    let typed = flag.strip_prefix("--")?;
    let at = argv
        .iter()
        .position(|a| a == flag || a.strip_prefix(flag).is_some_and(|r| r.starts_with('=')))?;
    let value = match argv[at].split_once('=') {
        Some((_, v)) => Some(v),
        None => argv
            .get(at + 1)
            .map(String::as_str)
            .filter(|v| !v.starts_with("--")),
    };
    // The subcommand is the first word before the flag that names one.
    let mut built = cmd.clone();
    built.build();
    let sub = argv[..at]
        .iter()
        .find_map(|w| built.find_subcommand(w))
        .unwrap_or(&built);
    let near = near_flags(sub, typed, value);
    let best = near.first()?;
    let mut tips = vec![clap::builder::StyledStr::from(format!(
        "did you mean {}? {}",
        spelled(best),
        gist(best)
    ))];
    for other in near.iter().skip(1).take(2) {
        tips.push(format!("or {}: {}", spelled(other), gist(other)).into());
    }
    let mut e = clap::Error::new(ErrorKind::UnknownArgument).with_cmd(sub);
    e.insert(
        ContextKind::InvalidArg,
        ContextValue::String(invalid.clone()),
    );
    e.insert(ContextKind::Suggested, ContextValue::StyledStrs(tips));
    let mut usage_cmd = sub.clone();
    e.insert(
        ContextKind::Usage,
        ContextValue::StyledStr(usage_cmd.render_usage()),
    );
    Some(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_that_do_not_fit_go_above_their_example() {
        let text = "  dsh simulate s.jsonl                 # recorded vs the default policy\n  dsh x\n      # a note of its own";
        assert_eq!(fit_examples(text, 100), text);
        let fitted = fit_examples(text, 60);
        assert_eq!(
            fitted,
            "  # recorded vs the default policy\n  dsh simulate s.jsonl\n  dsh x\n      # a note of its own"
        );
        let long = "  dsh cache --anthropic-breakpoints system:1h,first-user:1h,prev-user,last s.jsonl\n      # also the opening context, and the previous turn past the lookback";
        let fitted = fit_examples(long, 60);
        assert_eq!(
            fitted,
            "  dsh cache --anthropic-breakpoints \\\n      system:1h,first-user:1h,prev-user,last s.jsonl\n      # also the opening context, and the previous turn\n      # past the lookback"
        );
        assert!(fitted.lines().all(|l| l.chars().count() < 60), "{fitted}");
    }

    #[test]
    fn flags_are_suggested_by_meaning_and_by_the_value_typed() {
        let cmd = crate::cli::command();
        let mut built = cmd.clone();
        built.build();
        let sim = built.find_subcommand("simulate").unwrap();
        let names = |typed: &str, v: Option<&str>| -> Vec<String> {
            near_flags(sim, typed, v)
                .iter()
                .map(|a| a.get_long().unwrap().to_string())
                .collect()
        };
        assert_eq!(names("threshold", Some("0.6"))[0], "threshold-ratio");
        assert_eq!(names("threshold", None).len(), 2);
        assert_eq!(names("window", Some("64000"))[0], "context-window");
        assert_eq!(names("retain", Some("0.1"))[0], "retain-ratio");
        assert_eq!(names("contex-window", Some("64000"))[0], "context-window");
        assert!(names("zzzzzz", None).is_empty());
    }
}
