//! Hand-written inline SVG line charts: no scripts, no fonts from
//! elsewhere, colours from the page's CSS classes (so dark mode and print
//! apply), a `<title>` and `<desc>` for screen readers.

use std::fmt::Write;

use super::html::escape;

/// One line of a chart: a value per x position (`None`: a gap).
#[derive(Debug, Clone)]
pub struct Series {
    /// Its name (legend, tooltip).
    pub name: String,
    /// Its CSS class (`s1`…`s5`).
    pub class: &'static str,
    /// One value per x position.
    pub values: Vec<Option<f64>>,
    /// Dashed (a limit such as the threshold).
    pub dashed: bool,
}

/// A vertical marker at an x position.
#[derive(Debug, Clone)]
pub struct VMarker {
    /// `compaction` / `prune`.
    pub kind: &'static str,
    /// The x position (may be fractional).
    pub x: f64,
    /// The event's seq.
    pub seq: u64,
    /// Its tooltip.
    pub label: String,
}

/// A chart.
#[derive(Debug, Clone)]
pub struct Chart<'a> {
    /// Element id.
    pub id: &'a str,
    /// The `<title>`.
    pub title: &'a str,
    /// The `<desc>`: what the chart shows, in words.
    pub desc: String,
    /// The series.
    pub series: Vec<Series>,
    /// Markers.
    pub markers: Vec<VMarker>,
    /// How y values read (`tokens`, `USD`).
    pub unit: &'a str,
}

const W: f64 = 1000.0;
const H: f64 = 300.0;
const LEFT: f64 = 72.0;
const RIGHT: f64 = 990.0;
const TOP: f64 = 16.0;
const BOTTOM: f64 = 270.0;

/// A short number for an axis: 950, 1.2k, 3.4M.
pub fn short(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{:.1}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else if a >= 10.0 || a == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

impl Chart<'_> {
    /// The `<svg>` element.
    pub fn render(&self) -> String {
        let n = self
            .series
            .iter()
            .map(|s| s.values.len())
            .max()
            .unwrap_or(0);
        let ymax = self
            .series
            .iter()
            .flat_map(|s| s.values.iter().flatten())
            .copied()
            .filter(|v| v.is_finite())
            .fold(0.0f64, f64::max);
        let ymax = if ymax <= 0.0 { 1.0 } else { ymax * 1.05 };
        let xs = |i: f64| -> f64 {
            if n <= 1 {
                (LEFT + RIGHT) / 2.0
            } else {
                LEFT + (RIGHT - LEFT) * i / (n - 1) as f64
            }
        };
        let ys = |v: f64| -> f64 { BOTTOM - (BOTTOM - TOP) * (v / ymax) };
        let mut s = String::with_capacity(64 * n * self.series.len() + 2048);
        let _ = write!(
            s,
            "<svg id=\"{id}\" class=\"chart\" viewBox=\"0 0 {W} {H}\" role=\"img\" aria-labelledby=\"{id}-t {id}-d\" preserveAspectRatio=\"none\"><title id=\"{id}-t\">{t}</title><desc id=\"{id}-d\">{d}</desc>",
            id = self.id,
            t = escape(self.title),
            d = escape(&self.desc),
        );
        // Grid and y labels.
        for k in 0..=4 {
            let v = ymax / 1.05 * k as f64 / 4.0;
            let y = ys(v);
            let _ = write!(
                s,
                "<line class=\"grid\" x1=\"{LEFT}\" x2=\"{RIGHT}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/><text class=\"axis\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                LEFT - 6.0,
                y + 4.0,
                escape(&if self.unit == "USD" && ymax < 100.0 {
                    format!("{v:.4}")
                } else {
                    short(v)
                })
            );
        }
        let _ = write!(
            s,
            "<text class=\"axis\" x=\"{LEFT}\" y=\"{:.1}\">request 1</text><text class=\"axis\" x=\"{RIGHT}\" y=\"{:.1}\" text-anchor=\"end\">request {n}</text><text class=\"axis\" x=\"4\" y=\"12\">{}</text>",
            BOTTOM + 18.0,
            BOTTOM + 18.0,
            escape(self.unit)
        );
        for m in &self.markers {
            let x = xs(m.x);
            let _ = write!(
                s,
                "<g class=\"marker marker-{k}\" data-seq=\"{seq}\"><title>{l}</title><line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{TOP}\" y2=\"{BOTTOM}\"/></g>",
                k = m.kind,
                seq = m.seq,
                l = escape(&m.label)
            );
        }
        for ser in &self.series {
            let mut run = String::new();
            let flush = |run: &mut String, s: &mut String| {
                if !run.is_empty() {
                    let _ = write!(
                        s,
                        "<polyline class=\"line {c}{d}\" points=\"{run}\"><title>{name}</title></polyline>",
                        c = ser.class,
                        d = if ser.dashed { " dashed" } else { "" },
                        name = escape(&ser.name)
                    );
                    run.clear();
                }
            };
            for (i, v) in ser.values.iter().enumerate() {
                match v {
                    Some(v) if v.is_finite() => {
                        if !run.is_empty() {
                            run.push(' ');
                        }
                        let _ = write!(run, "{:.1},{:.1}", xs(i as f64), ys(*v));
                    }
                    _ => flush(&mut run, &mut s),
                }
            }
            // A lone point would not show as a line: double it.
            if !run.is_empty() && !run.contains(' ') {
                let r = run.clone();
                run.push(' ');
                run.push_str(&r);
            }
            flush(&mut run, &mut s);
        }
        s.push_str("</svg>");
        s
    }
}

/// Bucket `n` positions into at most `max` of them: the size of a bucket.
pub fn bucket(n: usize, max: usize) -> usize {
    if n <= max || max == 0 {
        1
    } else {
        n.div_ceil(max)
    }
}

/// Downsample per position values by keeping each bucket's largest.
pub fn downsample(values: &[Option<f64>], b: usize) -> Vec<Option<f64>> {
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
    fn chart_escapes_and_marks() {
        let c = Chart {
            id: "c",
            title: "<x>",
            desc: "a \"b\"".into(),
            series: vec![Series {
                name: "s</title>".into(),
                class: "s1",
                values: vec![Some(1.0), None, Some(3.0)],
                dashed: false,
            }],
            markers: vec![VMarker {
                kind: "prune",
                x: 1.0,
                seq: 7,
                label: "prune <7>".into(),
            }],
            unit: "tokens",
        };
        let s = c.render();
        assert!(s.contains("&lt;x&gt;") && !s.contains("<x>"));
        assert!(s.contains("marker-prune\" data-seq=\"7\""));
        assert_eq!(s.matches("<polyline").count(), 2);
        assert!(!s.contains("s</title>"));
    }
}
