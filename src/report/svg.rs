//! Hand-written inline SVG charts: no scripts, no fonts from elsewhere,
//! colours from the page's CSS classes (so dark mode and print apply), a
//! `<title>` and `<desc>` for screen readers.
//!
//! A chart is drawn in CSS pixels, not in a stretched view box: the SVG is
//! as wide as its box and a fixed number of pixels high, its text sits at
//! percentages of the width and at pixel heights, so it is never squeezed
//! or shrunk on a narrow screen. Only the lines are stretched (an inner
//! SVG with `preserveAspectRatio="none"` whose strokes do not scale).
//! Ticks are round (1, 2 or 5 times a power of ten; whole minutes, hours
//! and days on a time axis) and labelled.

use std::fmt::Write;

use super::markup::escape;
use crate::civil::Zone;

/// Plot height (CSS pixels).
const PLOT_H: f64 = 220.0;
/// Room under the plot for the x tick labels.
const BELOW: f64 = 22.0;
/// The inner plot's view-box width.
const VB_W: f64 = 1000.0;

/// What the y values are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    /// Tokens.
    Tokens,
    /// US dollars.
    Usd,
}

impl Unit {
    fn title(self) -> &'static str {
        match self {
            Unit::Tokens => "tokens",
            Unit::Usd => "USD",
        }
    }
}

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// A solid line from point to point.
    Solid,
    /// A dashed line from point to point.
    Dashed,
    /// A dashed step line: the value holds until the next point, then
    /// changes straight up or down (a limit such as the window).
    Step,
}

/// One line of a chart: points (x, value); a `None` value is a gap.
#[derive(Debug, Clone)]
pub(crate) struct Series {
    /// Its name (legend, tooltip).
    pub name: String,
    /// Its CSS class (`s1`…`s5`).
    pub class: &'static str,
    /// How it is drawn.
    pub style: Style,
    /// Its points, x ascending.
    pub points: Vec<(f64, Option<f64>)>,
}

impl Series {
    /// A series named `name`, of CSS class `class`, drawn as `style`.
    pub(crate) fn new(
        name: impl Into<String>,
        class: &'static str,
        style: Style,
        points: Vec<(f64, Option<f64>)>,
    ) -> Series {
        Series {
            name: name.into(),
            class,
            style,
            points,
        }
    }
}

/// The shape of a marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// A triangle pointing down, at the top of the plot.
    Triangle,
    /// A diamond, at the bottom of the plot.
    Diamond,
    /// A dot on the value.
    Circle,
}

impl Shape {
    /// The path of the shape around (0, 0), in pixels.
    fn path(self) -> &'static str {
        match self {
            Shape::Triangle => "M-6,-1L6,-1L0,9Z",
            Shape::Diamond => "M0,-6L6,0L0,6L-6,0Z",
            Shape::Circle => "M-4.5,0A4.5,4.5 0 1,0 4.5,0A4.5,4.5 0 1,0 -4.5,0Z",
        }
    }
}

/// A marker: a shape, and a vertical rule for events that change the
/// prompt.
#[derive(Debug, Clone)]
pub(crate) struct Marker {
    /// Its kind, a CSS class suffix (`compaction`, `prune`, `overflow`).
    pub kind: &'static str,
    /// Its shape.
    pub shape: Shape,
    /// The x position.
    pub x: f64,
    /// The value it sits on (`None`: at the top or bottom, by shape).
    pub y: Option<f64>,
    /// Draw a vertical rule through the plot.
    pub rule: bool,
    /// The event's seq.
    pub seq: u64,
    /// Its tooltip.
    pub label: String,
}

/// The x axis: its range, labelled ticks and name.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct XAxis {
    /// What x is (`time (UTC)`, `turn`, `request`).
    pub title: String,
    /// The smallest x.
    pub min: f64,
    /// The largest x.
    pub max: f64,
    /// Ticks: position and label.
    pub ticks: Vec<(f64, String)>,
}

impl XAxis {
    /// Where `x` falls, as a fraction of the width (a single point: the
    /// middle).
    fn frac(&self, x: f64) -> f64 {
        if self.max > self.min {
            ((x - self.min) / (self.max - self.min)).clamp(0.0, 1.0)
        } else {
            0.5
        }
    }
}

/// A line chart.
#[derive(Debug, Clone)]
pub(crate) struct Chart<'a> {
    /// Element id.
    pub id: &'a str,
    /// The `<title>`.
    pub title: &'a str,
    /// The `<desc>`: what the chart shows, in words.
    pub desc: String,
    /// The x axis.
    pub x: XAxis,
    /// What the values are.
    pub unit: Unit,
    /// The series.
    pub series: Vec<Series>,
    /// Markers.
    pub markers: Vec<Marker>,
}

/// A round step for an axis spanning `span` in about `target` steps: 1, 2
/// or 5 times a power of ten.
fn nice_step(span: f64, target: f64) -> f64 {
    if span.is_nan() || span <= 0.0 || !span.is_finite() {
        return 1.0;
    }
    let raw = span / target.max(1.0);
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let k = if norm <= 1.0 {
        1.0
    } else if norm <= 2.0 {
        2.0
    } else if norm <= 5.0 {
        5.0
    } else {
        10.0
    };
    k * mag
}

/// Round y ticks from 0 to at least `max`: (step, top).
fn y_ticks(max: f64) -> (f64, f64) {
    let max = if max > 0.0 && max.is_finite() {
        max
    } else {
        1.0
    };
    let step = nice_step(max, 4.0);
    let top = (max / step).ceil() * step;
    (step, top.max(step))
}

/// A tick label for `v` on an axis of round `step`.
fn tick_label(v: f64, step: f64, unit: Unit) -> String {
    let decimals = |scaled_step: f64| -> usize {
        if scaled_step >= 1.0 {
            0
        } else {
            (-scaled_step.log10().floor()) as usize
        }
    };
    match unit {
        Unit::Usd => format!("${:.*}", decimals(step), v),
        Unit::Tokens => {
            let (div, suffix) = if step >= 1e9 {
                (1e9, "G")
            } else if step >= 1e6 || v >= 1e6 && step >= 1e5 {
                (1e6, "M")
            } else if step >= 1e3 || v >= 1e3 && step >= 100.0 {
                (1e3, "k")
            } else {
                (1.0, "")
            };
            if v == 0.0 {
                return "0".into();
            }
            format!("{:.*}{suffix}", decimals(step / div), v / div)
        }
    }
}

const MINUTE: i64 = 60_000;
const HOUR: i64 = 60 * MINUTE;
const DAY: i64 = 24 * HOUR;

/// A time axis from `min` to `max` (epoch ms), ticks on whole seconds,
/// minutes, hours or days of `zone`, at most about six.
pub(crate) fn time_axis(min: i64, max: i64, zone: &Zone) -> XAxis {
    const STEPS: [i64; 22] = [
        1000,
        2000,
        5000,
        10_000,
        15_000,
        30_000,
        MINUTE,
        2 * MINUTE,
        5 * MINUTE,
        10 * MINUTE,
        15 * MINUTE,
        30 * MINUTE,
        HOUR,
        2 * HOUR,
        3 * HOUR,
        6 * HOUR,
        12 * HOUR,
        DAY,
        2 * DAY,
        7 * DAY,
        14 * DAY,
        30 * DAY,
    ];
    let span = (max - min).max(0);
    let step = STEPS
        .iter()
        .copied()
        .find(|s| span / s <= 6)
        .unwrap_or_else(|| (span / 6 / DAY + 1) * DAY);
    let title = format!("time ({zone})");
    let label_full = |t: i64| zone.date_time(t)[5..].to_string();
    if span == 0 {
        return XAxis {
            title,
            min: min as f64,
            max: max as f64,
            ticks: vec![(min as f64, label_full(min))],
        };
    }
    let off = zone.offset_at(min).ms();
    let first = (min + off).div_euclid(step) * step - off;
    let mut ticks = Vec::new();
    let mut last_date = None;
    let mut t = if first < min { first + step } else { first };
    while t <= max {
        let date = zone.date(t);
        let dt = zone.date_time(t);
        let label = if step >= DAY {
            if span > 300 * DAY {
                date.to_string()
            } else {
                date.to_string()[5..].to_string()
            }
        } else {
            let clock = if step < MINUTE {
                let secs = (t + zone.offset_at(t).ms()).rem_euclid(MINUTE) / 1000;
                format!("{}:{secs:02}", &dt[11..])
            } else {
                dt[11..].to_string()
            };
            if last_date != Some(date) && (max - min >= DAY || zone.date(min) != zone.date(max)) {
                format!("{} {clock}", &dt[5..10])
            } else {
                clock
            }
        };
        last_date = Some(date);
        ticks.push((t as f64, label));
        t += step;
    }
    if ticks.is_empty() {
        ticks.push((min as f64, label_full(min)));
    }
    XAxis {
        title,
        min: min as f64,
        max: max as f64,
        ticks,
    }
}

/// An axis over `n` requests (x = 0 … n−1), labelled by turn when
/// `turns` gives one per request, else by request number; at most about
/// six ticks, on round numbers.
pub(crate) fn request_axis(n: usize, turns: &[Option<u64>]) -> XAxis {
    let max = n.saturating_sub(1) as f64;
    let mut ticks = Vec::new();
    let known: Vec<u64> = turns.iter().flatten().copied().collect();
    if n > 0 && known.len() == n {
        let (lo, hi) = (known[0], known.iter().copied().max().unwrap_or(known[0]));
        let step = (nice_step((hi - lo) as f64, 5.0) as u64).max(1);
        let mut prev = None;
        for (i, &t) in known.iter().enumerate() {
            if prev != Some(t) && (i == 0 || t % step == 0) {
                ticks.push((i as f64, t.to_string()));
            }
            prev = Some(t);
        }
        // Keep the first turn's tick clear of the next round one.
        if ticks.len() > 1 && ticks[1].0 - ticks[0].0 < max / 12.0 {
            ticks.remove(0);
        }
        return XAxis {
            title: "turn".into(),
            min: 0.0,
            max,
            ticks,
        };
    }
    let step = (nice_step(n as f64, 5.0) as usize).max(1);
    ticks.push((0.0, "1".to_string()));
    let mut k = step;
    while k <= n {
        ticks.push(((k - 1) as f64, k.to_string()));
        k += step;
    }
    if ticks.len() > 1 && ticks[1].0 - ticks[0].0 < max / 12.0 {
        ticks.remove(1);
    }
    XAxis {
        title: "request".into(),
        min: 0.0,
        max,
        ticks,
    }
}

/// `<text>` for a tick at fraction `f` of the width: anchored so that it
/// stays inside near either edge.
fn x_label(s: &mut String, f: f64, y: f64, label: &str, odd: bool) {
    let anchor = if f < 0.06 {
        "start"
    } else if f > 0.94 {
        "end"
    } else {
        "middle"
    };
    let _ = write!(
        s,
        "<text class=\"axis{}\" x=\"{:.2}%\" y=\"{y:.0}\" text-anchor=\"{anchor}\">{}</text>",
        if odd { " tick-odd" } else { "" },
        f * 100.0,
        escape(label)
    );
}

/// The frame shared by line and bar charts: `<svg>` with its title and
/// description, the y grid and labels, the x ticks and the axis names.
fn frame(s: &mut String, id: &str, title: &str, desc: &str, unit: Unit, top: f64, step: f64) {
    let _ = write!(
        s,
        "<svg id=\"{id}\" class=\"chart\" height=\"{h}\" role=\"img\" aria-labelledby=\"{id}-t {id}-d\"><title id=\"{id}-t\">{t}</title><desc id=\"{id}-d\">{d}</desc>",
        h = PLOT_H + BELOW,
        t = escape(title),
        d = escape(desc),
    );
    let n = (top / step).round() as usize;
    for k in 0..=n {
        let v = step * k as f64;
        let y = PLOT_H - PLOT_H * v / top;
        let _ = write!(
            s,
            "<line class=\"grid\" x1=\"0\" x2=\"100%\" y1=\"{y:.1}\" y2=\"{y:.1}\"/><text class=\"axis\" x=\"-6\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            y + 4.0,
            escape(&tick_label(v, step, unit))
        );
    }
    let _ = write!(
        s,
        "<text class=\"axis-title\" x=\"-50\" y=\"-12\">{}</text>",
        unit.title()
    );
}

fn x_ticks(s: &mut String, x: &XAxis) {
    for (i, (v, label)) in x.ticks.iter().enumerate() {
        let f = x.frac(*v);
        let _ = write!(
            s,
            "<line class=\"grid\" x1=\"{p:.2}%\" x2=\"{p:.2}%\" y1=\"{PLOT_H}\" y2=\"{:.0}\"/>",
            PLOT_H + 4.0,
            p = f * 100.0
        );
        x_label(s, f, PLOT_H + 17.0, label, i % 2 == 1);
    }
    let _ = write!(
        s,
        "<text class=\"axis-title\" x=\"-50\" y=\"{:.0}\">{}</text>",
        PLOT_H + 17.0,
        escape(match x.title.as_str() {
            t if t.starts_with("time") => "time",
            t => t,
        })
    );
}

impl Chart<'_> {
    /// The largest value drawn.
    fn max(&self) -> f64 {
        self.series
            .iter()
            .flat_map(|s| s.points.iter().filter_map(|p| p.1))
            .filter(|v| v.is_finite())
            .fold(0.0f64, f64::max)
    }

    /// The `<svg>` element.
    pub(crate) fn render(&self) -> String {
        let (step, top) = y_ticks(self.max());
        let xs = |x: f64| self.x.frac(x) * VB_W;
        let ys = |v: f64| PLOT_H - PLOT_H * (v / top).clamp(0.0, 1.0);
        let n: usize = self.series.iter().map(|s| s.points.len()).sum();
        let mut s = String::with_capacity(24 * n + 4096);
        frame(
            &mut s, self.id, self.title, &self.desc, self.unit, top, step,
        );
        x_ticks(&mut s, &self.x);
        for m in self.markers.iter().filter(|m| m.rule) {
            let _ = write!(
                s,
                "<g class=\"marker marker-{k}\" data-seq=\"{seq}\"><title>{l}</title><line x1=\"{p:.2}%\" x2=\"{p:.2}%\" y1=\"0\" y2=\"{PLOT_H}\"/></g>",
                k = m.kind,
                seq = m.seq,
                l = escape(&m.label),
                p = self.x.frac(m.x) * 100.0
            );
        }
        let _ = write!(
            s,
            "<svg class=\"plot\" x=\"0\" y=\"0\" width=\"100%\" height=\"{PLOT_H}\" viewBox=\"0 0 {VB_W} {PLOT_H}\" preserveAspectRatio=\"none\" overflow=\"visible\">"
        );
        for ser in &self.series {
            let mut run = String::new();
            let mut prev: Option<f64> = None;
            let flush = |run: &mut String, s: &mut String| {
                if !run.is_empty() {
                    // A lone point would not show as a line: draw it twice.
                    if !run.contains(' ') {
                        let r = run.clone();
                        let _ = write!(run, " {r}");
                    }
                    let _ = write!(
                        s,
                        "<polyline class=\"line {c}{d}\" points=\"{run}\"><title>{name}</title></polyline>",
                        c = ser.class,
                        d = if ser.style == Style::Solid {
                            ""
                        } else {
                            " dashed"
                        },
                        name = escape(&ser.name)
                    );
                    run.clear();
                }
            };
            for &(x, v) in &ser.points {
                match v {
                    Some(v) if v.is_finite() => {
                        if !run.is_empty() {
                            run.push(' ');
                        }
                        if ser.style == Style::Step
                            && let Some(p) = prev
                            && p != v
                        {
                            let _ = write!(run, "{:.1},{:.1} ", xs(x), ys(p));
                        }
                        let _ = write!(run, "{:.1},{:.1}", xs(x), ys(v));
                        prev = Some(v);
                    }
                    _ => {
                        flush(&mut run, &mut s);
                        prev = None;
                    }
                }
            }
            flush(&mut run, &mut s);
        }
        s.push_str("</svg>");
        for m in &self.markers {
            let y = match (m.y, m.shape) {
                (Some(v), _) => ys(v),
                (None, Shape::Diamond) => PLOT_H,
                (None, _) => 0.0,
            };
            let tip = if m.rule {
                String::new()
            } else {
                format!("<title>{}</title>", escape(&m.label))
            };
            let _ = write!(
                s,
                "<svg class=\"shape marker-{k}\" data-seq=\"{seq}\" x=\"{p:.2}%\" y=\"{y:.1}\" overflow=\"visible\">{tip}<path d=\"{d}\"/></svg>",
                k = m.kind,
                seq = m.seq,
                p = self.x.frac(m.x) * 100.0,
                d = m.shape.path()
            );
        }
        s.push_str("</svg>");
        format!("<div class=\"chart-box\">{s}</div>")
    }
}

/// One stack of a bar chart: a value per category.
#[derive(Debug, Clone)]
pub(crate) struct Stack {
    /// Its name (legend, tooltip).
    pub name: String,
    /// Its CSS class (`b1`…`b8`).
    pub class: &'static str,
    /// A value per category.
    pub values: Vec<f64>,
}

/// A stacked bar chart: one bar per category (a day), one colour per stack
/// (a model).
#[derive(Debug, Clone)]
pub(crate) struct Bars<'a> {
    /// Element id.
    pub id: &'a str,
    /// The `<title>`.
    pub title: &'a str,
    /// The `<desc>`.
    pub desc: String,
    /// The categories' labels.
    pub categories: Vec<String>,
    /// What the axis under the bars is (`day`).
    pub x_title: &'a str,
    /// What the values are.
    pub unit: Unit,
    /// The stacks, bottom first.
    pub stacks: Vec<Stack>,
}

impl Bars<'_> {
    /// The `<svg>` element.
    pub(crate) fn render(&self) -> String {
        let n = self.categories.len().max(1);
        let totals: Vec<f64> = (0..n)
            .map(|i| {
                self.stacks
                    .iter()
                    .filter_map(|s| s.values.get(i))
                    .filter(|v| v.is_finite())
                    .sum()
            })
            .collect();
        let (step, top) = y_ticks(totals.iter().copied().fold(0.0, f64::max));
        let mut s = String::new();
        frame(
            &mut s, self.id, self.title, &self.desc, self.unit, top, step,
        );
        let band = 100.0 / n as f64;
        let every = n.div_ceil(7).max(1);
        for (i, c) in self.categories.iter().enumerate() {
            let mut base = 0.0;
            for st in &self.stacks {
                let v = st.values.get(i).copied().unwrap_or(0.0);
                if v.is_nan() || v <= 0.0 {
                    continue;
                }
                let h = PLOT_H * v / top;
                let y = PLOT_H - PLOT_H * (base + v) / top;
                let _ = write!(
                    s,
                    "<rect class=\"col {cls}\" x=\"{x:.3}%\" width=\"{w:.3}%\" y=\"{y:.1}\" height=\"{h:.1}\"><title>{t}</title></rect>",
                    cls = st.class,
                    x = band * i as f64 + band * 0.15,
                    w = band * 0.7,
                    t = escape(&format!(
                        "{c}, {}: {}",
                        st.name,
                        tick_label(v, step / 100.0, self.unit)
                    ))
                );
                base += v;
            }
            if i % every == 0 {
                x_label(
                    &mut s,
                    (i as f64 + 0.5) / n as f64,
                    PLOT_H + 17.0,
                    c,
                    (i / every) % 2 == 1,
                );
            }
        }
        let _ = write!(
            s,
            "<text class=\"axis-title\" x=\"-50\" y=\"{:.0}\">{}</text></svg>",
            PLOT_H + 17.0,
            escape(self.x_title)
        );
        format!("<div class=\"chart-box\">{s}</div>")
    }
}

/// A legend entry's swatch: a short line (solid, dashed) or a shape.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Swatch {
    /// A line of series class `s1`…`s5`.
    Line(&'static str, Style),
    /// A marker shape of kind `compaction`, `prune`, `overflow`.
    Shape(&'static str, Shape),
    /// A bar colour `b1`…`b8`.
    Bar(&'static str),
}

/// The legend of a chart: one item per swatch, with its name.
pub(crate) fn legend(items: &[(Swatch, &str)]) -> String {
    let mut s = String::from("<ul class=\"legend\">");
    for (sw, name) in items {
        let icon = match sw {
            Swatch::Line(class, style) => format!(
                "<line class=\"line {class}{}\" x1=\"1\" x2=\"21\" y1=\"7\" y2=\"7\"/>",
                if *style == Style::Solid {
                    ""
                } else {
                    " dashed"
                }
            ),
            Swatch::Shape(kind, shape) => format!(
                "<g class=\"shape marker-{kind}\"><svg x=\"11\" y=\"{}\" overflow=\"visible\"><path d=\"{}\"/></svg></g>",
                if *shape == Shape::Triangle { 3 } else { 7 },
                shape.path()
            ),
            Swatch::Bar(class) => {
                format!("<rect class=\"{class}\" x=\"4\" y=\"1\" width=\"14\" height=\"12\"/>")
            }
        };
        let _ = write!(
            s,
            "<li><svg aria-hidden=\"true\" viewBox=\"0 0 22 14\">{icon}</svg><span>{}</span></li>",
            escape(name)
        );
    }
    s.push_str("</ul>");
    s
}

/// Bucket `n` positions into at most `max` of them: the size of a bucket.
pub(crate) fn bucket(n: usize, max: usize) -> usize {
    if n <= max || max == 0 {
        1
    } else {
        n.div_ceil(max)
    }
}

/// Downsample per position values by keeping each bucket's largest.
pub(crate) fn downsample(values: &[Option<f64>], b: usize) -> Vec<Option<f64>> {
    if b <= 1 {
        return values.to_vec();
    }
    values
        .chunks(b)
        .map(|c| c.iter().flatten().copied().reduce(f64::max))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::civil::Offset;

    #[test]
    fn downsampling_keeps_peaks() {
        let v: Vec<Option<f64>> = (0..10).map(|i| Some(i as f64)).collect();
        assert_eq!(bucket(10, 4), 3);
        assert_eq!(
            downsample(&v, 3),
            vec![Some(2.0), Some(5.0), Some(8.0), Some(9.0)]
        );
        assert_eq!(bucket(3, 4), 1);
    }

    #[test]
    fn ticks_are_round() {
        assert_eq!(y_ticks(66_000.0), (20_000.0, 80_000.0));
        assert_eq!(y_ticks(0.0133), (0.005, 0.015));
        assert_eq!(y_ticks(0.0), (0.5, 1.0));
        assert_eq!(tick_label(20_000.0, 20_000.0, Unit::Tokens), "20k");
        assert_eq!(tick_label(1_500_000.0, 500_000.0, Unit::Tokens), "1.5M");
        assert_eq!(tick_label(2_500.0, 500.0, Unit::Tokens), "2.5k");
        assert_eq!(tick_label(40.0, 10.0, Unit::Tokens), "40");
        assert_eq!(tick_label(0.01, 0.005, Unit::Usd), "$0.010");
        assert_eq!(tick_label(4.0, 2.0, Unit::Usd), "$4");
    }

    #[test]
    fn time_ticks_fall_on_whole_units_of_the_zone() {
        let z = Zone::Fixed(Offset::UTC);
        // 2026-01-01 10:03 to 10:58: every 10 minutes.
        let t0 = 1_767_261_780_000;
        let a = time_axis(t0, t0 + 55 * MINUTE, &z);
        let labels: Vec<&str> = a.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["10:10", "10:20", "10:30", "10:40", "10:50"]);
        assert_eq!(a.title, "time (UTC)");
        // Five days: daily ticks, as month-day; three days: every 12 hours.
        let b = time_axis(t0, t0 + 5 * DAY, &z);
        assert_eq!(b.ticks[0].1, "01-02");
        let b = time_axis(t0, t0 + 3 * DAY, &z);
        assert_eq!(b.ticks[0].1, "01-01 12:00");
        assert_eq!(b.ticks[1].1, "01-02 00:00");
        // At +08:00 the hours are local.
        let c = time_axis(t0, t0 + 55 * MINUTE, &Zone::Fixed(Offset(480)));
        assert_eq!(c.ticks[0].1, "18:10");
        // One instant: one tick.
        assert_eq!(time_axis(t0, t0, &z).ticks.len(), 1);
    }

    #[test]
    fn request_axes_label_turns_or_numbers() {
        let turns: Vec<Option<u64>> = (0..64).map(|i| Some(1 + i / 4)).collect();
        let a = request_axis(64, &turns);
        assert_eq!(a.title, "turn");
        let labels: Vec<&str> = a.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["1", "5", "10", "15"]);
        let b = request_axis(64, &[]);
        assert_eq!(b.title, "request");
        assert_eq!(b.ticks.last().unwrap().1, "60");
    }

    #[test]
    fn chart_escapes_marks_and_steps() {
        let c = Chart {
            id: "c",
            title: "<x>",
            desc: "a \"b\"".into(),
            x: request_axis(3, &[]),
            unit: Unit::Tokens,
            series: vec![
                Series {
                    name: "s</title>".into(),
                    class: "s1",
                    style: Style::Solid,
                    points: vec![(0.0, Some(1.0)), (1.0, None), (2.0, Some(3.0))],
                },
                Series {
                    name: "w".into(),
                    class: "s5",
                    style: Style::Step,
                    points: vec![(0.0, Some(2.0)), (1.0, Some(2.0)), (2.0, Some(4.0))],
                },
            ],
            markers: vec![Marker {
                kind: "prune",
                shape: Shape::Diamond,
                x: 1.0,
                y: None,
                rule: true,
                seq: 7,
                label: "prune <7>".into(),
            }],
        };
        let s = c.render();
        assert!(s.contains("&lt;x&gt;") && !s.contains("<x>"));
        assert!(s.contains("marker marker-prune\" data-seq=\"7\""));
        assert_eq!(s.matches("<polyline").count(), 3);
        assert!(!s.contains("s</title>"));
        assert!(!s.contains("preserveAspectRatio=\"none\" role"));
        // The step line goes across, then up: 500,110.0 then 1000,110.0 then 1000,0.0.
        assert!(s.contains("1000.0,110.0 1000.0,0.0"), "{s}");
    }
}
