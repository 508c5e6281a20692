//! Rendering helpers: the output door, tables and progress.

pub mod out;

pub(crate) use out::{Out, outln, outp};

use comfy_table::{ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};

/// A table in dsh's house style.
pub fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(header.iter().copied());
    if let Some((w, _)) = terminal_width() {
        t.set_width(w);
    } else {
        t.set_width(120);
    }
    t
}

fn terminal_width() -> Option<(u16, u16)> {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .map(|w| (w, 0))
}

/// A progress bar on stderr when it is a terminal and the work is long.
pub fn progress(enabled: bool, len: u64, what: &str) -> Option<indicatif::ProgressBar> {
    if !enabled || len < 2 {
        return None;
    }
    let pb = indicatif::ProgressBar::new(len);
    pb.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {msg} [{bar:30}] {pos}/{len} ({eta})")
            .unwrap()
            .progress_chars("=> "),
    );
    pb.set_message(what.to_string());
    Some(pb)
}
