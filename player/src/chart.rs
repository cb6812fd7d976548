//! Small SVG line charts for self-contained HTML reports (no scripts, no
//! network: a file that opens anywhere). Each has a `viewBox`, so a page
//! can scale it to its column's width.

use std::fmt::Write as _;

const COLOURS: [&str; 8] = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"];

/// One line: its name and its points.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// Escapes text for HTML and SVG.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A round step for about `n` ticks over `span`.
pub fn step(span: f64, n: f64) -> f64 {
    let raw = (span / n).max(1e-12);
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|&s| s >= raw).unwrap_or(10.0 * mag)
}

/// A short label: 1.5M, 150k, 12, 0.25.
pub fn label(v: f64) -> String {
    if v.abs() >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v.abs() >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// A line chart; `limit` draws a dashed horizontal line (a clock, a pool size).
pub fn lines(title: &str, x_label: &str, series: &[Series], limit: Option<(f64, &str)>) -> String {
    let (w, h, left, right, top, bottom) = (700.0, 260.0, 60.0, 210.0, 28.0, 40.0);
    let pts = series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y1) = (f64::INFINITY, f64::NEG_INFINITY, 0.0f64);
    for &(x, y) in pts {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y1 = y1.max(y);
    }
    if let Some((l, _)) = limit {
        y1 = y1.max(l);
    }
    if !x0.is_finite() {
        (x0, x1) = (0.0, 1.0);
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    if y1 <= 0.0 {
        y1 = 1.0;
    }
    let ys = step(y1, 4.0);
    y1 = (y1 / ys).ceil() * ys;
    let pw = w - left - right;
    let ph = h - top - bottom;
    let sx = |x: f64| left + (x - x0) / (x1 - x0) * pw;
    let sy = |y: f64| top + ph - y / y1 * ph;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" height="{h}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(s, r#"<text x="{left}" y="16" font-size="13" font-weight="bold">{}</text>"#, esc(title));
    let mut y = 0.0;
    while y <= y1 + 1e-9 {
        let py = sy(y);
        let _ = writeln!(s, r##"<line x1="{left}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="#ddd"/>"##, left + pw);
        let _ = writeln!(s, r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#, left - 4.0, py + 4.0, label(y));
        y += ys;
    }
    // The x axes are turns: whole steps.
    let xs = step(x1 - x0, 8.0).max(1.0);
    let mut x = (x0 / xs).ceil() * xs;
    while x <= x1 + 1e-9 {
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            sx(x),
            top + ph + 14.0,
            label(x)
        );
        x += xs;
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        left + pw / 2.0,
        h - 6.0,
        esc(x_label)
    );
    let _ = writeln!(s, r##"<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>"##);
    if let Some((l, name)) = limit {
        // Labelled inside the plot, above the line's right end (the
        // legend holds the space beside it).
        let py = sy(l);
        let _ = writeln!(
            s,
            r##"<line x1="{left}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="#000" stroke-dasharray="5,4"/><text x="{:.1}" y="{:.1}" text-anchor="end" fill="#444">{}</text>"##,
            left + pw,
            left + pw - 4.0,
            (py - 4.0).max(top + 10.0),
            esc(name)
        );
    }
    for (i, se) in series.iter().enumerate() {
        let c = COLOURS[i % COLOURS.len()];
        let path: Vec<String> = se.points.iter().map(|&(x, y)| format!("{:.1},{:.1}", sx(x), sy(y))).collect();
        let _ = writeln!(s, r#"<polyline fill="none" stroke="{c}" stroke-width="2" points="{}"/>"#, path.join(" "));
        for &(x, y) in &se.points {
            let _ = writeln!(s, r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{c}"/>"#, sx(x), sy(y));
        }
        let ly = top + 14.0 + 16.0 * i as f64;
        let _ = writeln!(
            s,
            r#"<rect x="{:.1}" y="{:.1}" width="12" height="4" fill="{c}"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            left + pw + 8.0,
            ly - 4.0,
            left + pw + 24.0,
            ly,
            esc(&se.name)
        );
    }
    s.push_str("</svg>\n");
    s
}
