//! Color: decided once per run from `--color`, `NO_COLOR`, `CLICOLOR_FORCE`
//! and whether standard output is a terminal (anstream's rules, the ones
//! clap's own help follows), and used only for what needs the eye:
//! pressure over the threshold, busy locks, errors and warnings.

use std::sync::atomic::{AtomicBool, Ordering};

use anstyle::{AnsiColor, Style};

/// `--color`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum When {
    /// Color on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it).
    #[default]
    Auto,
    /// Always color, even into a pipe or file.
    Always,
    /// Never color.
    Never,
}

static STDOUT: AtomicBool = AtomicBool::new(false);
static STDERR: AtomicBool = AtomicBool::new(false);

/// Decide for this run.
pub fn init(when: When) {
    let decide = |auto: anstream::ColorChoice| match when {
        When::Always => true,
        When::Never => false,
        When::Auto => auto != anstream::ColorChoice::Never,
    };
    STDOUT.store(
        decide(anstream::AutoStream::choice(&std::io::stdout())),
        Ordering::Relaxed,
    );
    STDERR.store(
        decide(anstream::AutoStream::choice(&std::io::stderr())),
        Ordering::Relaxed,
    );
}

/// Whether standard output gets color.
pub fn on() -> bool {
    STDOUT.load(Ordering::Relaxed)
}

/// Whether standard error gets color.
pub fn stderr_on() -> bool {
    STDERR.load(Ordering::Relaxed)
}

/// What a highlighted piece of text means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    /// Something is wrong or over a limit.
    Bad,
    /// Worth a look.
    Warn,
    /// Fine.
    Good,
}

impl Tone {
    fn style(self) -> Style {
        match self {
            Tone::Bad => Style::new().fg_color(Some(AnsiColor::Red.into())).bold(),
            Tone::Warn => Style::new().fg_color(Some(AnsiColor::Yellow.into())),
            Tone::Good => Style::new().fg_color(Some(AnsiColor::Green.into())),
        }
    }

    /// comfy-table's color for a table cell of this tone.
    pub fn cell_color(self) -> Option<comfy_table::Color> {
        Some(match self {
            Tone::Bad => comfy_table::Color::Red,
            Tone::Warn => comfy_table::Color::Yellow,
            Tone::Good => comfy_table::Color::Green,
        })
    }
}

fn wrap(on: bool, s: &str, tone: Tone) -> String {
    if !on || s.is_empty() {
        return s.to_string();
    }
    let st = tone.style();
    format!("{st}{s}{st:#}")
}

/// `s` in the color of `tone` when standard output gets color.
pub fn paint(s: &str, tone: Tone) -> String {
    wrap(on(), s, tone)
}

/// `s` in the color of `tone` when standard error gets color.
pub fn paint_err(s: &str, tone: Tone) -> String {
    wrap(STDERR.load(Ordering::Relaxed), s, tone)
}
