//! `--correlate --report DIR`: the correlation as files: a plot of each hop's delay, a chart of
//! where packets were lost, `correlation.json`, and the page (correlation_html.rs).

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::correlation::short_names;
use super::dir::write;
use super::plots::{
    draw_key, err, register_fonts, split_for_key, Chart, DrawResult, Key, CAPTION_FONT, HEIGHT,
    LABEL_FONT, WIDTH,
};
use crate::common::error::Error;
use crate::model::{CorrelationDocument, HopReport};

/// The files the directory holds.
pub const FILES: [&str; 6] = [
    "index.html",
    "correlation.json",
    "hop_delay.png",
    "hop_delay.svg",
    "loss_location.png",
    "loss_location.svg",
];

const FORWARD: RGBColor = RGBColor(31, 119, 180);
const BACK: RGBColor = RGBColor(255, 127, 14);
const APPEARED: RGBColor = RGBColor(160, 160, 160);

/// Hop names for the x axis, by the points' shortest distinct names (as on the page).
fn hop_names(d: &CorrelationDocument) -> Vec<String> {
    let full: Vec<String> = d
        .correlation
        .points
        .iter()
        .map(|p| p.name.clone())
        .collect();
    let short = short_names(&full);
    let name = |p: &str| {
        full.iter()
            .position(|f| f == p)
            .map_or(p.to_string(), |i| short[i].clone())
    };
    d.correlation
        .hops
        .iter()
        .map(|h: &HopReport| format!("{} > {}", name(&h.from), name(&h.to)))
        .collect()
}

/// A chart with one slot per hop on the x axis (named by its two points) and `y` up.
fn hop_chart<'a, DB: DrawingBackend + 'a>(
    root: &'a DrawingArea<DB, Shift>,
    d: &CorrelationDocument,
    caption: &str,
    y: std::ops::Range<f64>,
    y_desc: &str,
    whole_y: bool,
) -> Result<Chart<'a, DB>, String> {
    let n = d.correlation.hops.len();
    let y_end = y.end;
    let mut chart = ChartBuilder::on(root)
        .caption(caption, ("sans-serif", CAPTION_FONT))
        .margin(15)
        .x_label_area_size(55)
        .y_label_area_size(80)
        .build_cartesian_2d(-0.5f64..n as f64 - 0.5, y)
        .map_err(err)?;
    let names = hop_names(d);
    let y_ticks = if whole_y {
        (y_end.floor() as usize + 1).min(11)
    } else {
        10
    };
    chart
        .configure_mesh()
        .label_style(("sans-serif", LABEL_FONT))
        .axis_desc_style(("sans-serif", LABEL_FONT))
        .x_labels(n.max(1))
        .y_labels(y_ticks)
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 0.01 && i >= 0.0 {
                names.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        // Packet counts have no fractions: 0.2 packets is no tick to read.
        .y_label_formatter(&|y| {
            if !whole_y {
                format!("{y:.1}")
            } else if y.fract().abs() < 1e-9 {
                format!("{y:.0}")
            } else {
                String::new()
            }
        })
        .y_desc(y_desc)
        .draw()
        .map_err(err)?;
    Ok(chart)
}

/// Per hop: the delay's range (min to max), its median and 99th percentile, both directions.
fn hop_delay<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    d: &CorrelationDocument,
) -> DrawResult {
    root.fill(&WHITE).map_err(err)?;
    let c = &d.correlation;
    let top = c
        .hops
        .iter()
        .chain(&c.reverse_hops)
        .filter_map(|h| h.delay_us.max)
        .fold(1.0f64, f64::max)
        * 1.1;
    let bottom = c
        .hops
        .iter()
        .chain(&c.reverse_hops)
        .filter_map(|h| h.delay_us.min)
        .fold(0.0f64, f64::min);
    let caption = "One-way delay per hop (us): min to max, p50 (dot), p99 (bar)";
    let keys = [
        Key {
            name: "requests".into(),
            color: FORWARD,
        },
        Key {
            name: "ACKs, NAKs, CNPs, responses".into(),
            color: BACK,
        },
    ];
    let (area, key_area) = split_for_key(root, &keys);
    let mut chart = hop_chart(&area, d, caption, bottom..top, "delay (us)", false)?;
    for (list, color, shift) in [(&c.hops, FORWARD, -0.12), (&c.reverse_hops, BACK, 0.12)] {
        let at = |i: usize| i as f64 + shift;
        let spans = list.iter().enumerate().filter_map(|(i, h)| {
            Some(PathElement::new(
                vec![(at(i), h.delay_us.min?), (at(i), h.delay_us.max?)],
                color.stroke_width(2),
            ))
        });
        chart.draw_series(spans).map_err(err)?;
        let p50 = list
            .iter()
            .enumerate()
            .filter_map(|(i, h)| Some(Circle::new((at(i), h.delay_us.p50?), 5, color.filled())));
        chart.draw_series(p50).map_err(err)?;
        let p99 = list.iter().enumerate().filter_map(|(i, h)| {
            let y = h.delay_us.p99?;
            Some(PathElement::new(
                vec![(at(i) - 0.06, y), (at(i) + 0.06, y)],
                color.stroke_width(3),
            ))
        });
        chart.draw_series(p99).map_err(err)?;
    }
    draw_key(&key_area, &keys)
}

/// Per hop: packets lost (requests, and what travels back) and packets the earlier point
/// missed.
fn loss_location<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    d: &CorrelationDocument,
) -> DrawResult {
    root.fill(&WHITE).map_err(err)?;
    let c = &d.correlation;
    let n = c.hops.len();
    let top = c
        .hops
        .iter()
        .chain(&c.reverse_hops)
        .map(|h| h.lost.max(h.appeared))
        .max()
        .unwrap_or(0)
        .max(1) as f64
        * 1.15;
    let caption = "Where packets were lost (per hop)";
    let bars = [
        ("lost: requests", FORWARD, -0.25),
        ("lost: travelling back", BACK, 0.0),
        ("appeared (missed upstream)", APPEARED, 0.25),
    ];
    let keys = bars.map(|(name, color, _)| Key {
        name: name.into(),
        color,
    });
    let (area, key_area) = split_for_key(root, &keys);
    let mut chart = hop_chart(&area, d, caption, 0.0..top, "packets", true)?;
    let back = |i: usize| c.reverse_hops.get(i);
    let values: Vec<[u64; 3]> = (0..n)
        .map(|i| {
            let h = &c.hops[i];
            let appeared = h.appeared + back(i).map_or(0, |r| r.appeared);
            [h.lost, back(i).map_or(0, |r| r.lost), appeared]
        })
        .collect();
    for (k, (_, color, shift)) in bars.into_iter().enumerate() {
        let rects = values.iter().enumerate().map(|(i, v)| {
            let x = i as f64 + shift;
            Rectangle::new([(x - 0.11, 0.0), (x + 0.11, v[k] as f64)], color.filled())
        });
        chart.draw_series(rects).map_err(err)?;
    }
    draw_key(&key_area, &keys)
}

#[derive(Clone, Copy)]
enum Plot {
    HopDelay,
    LossLocation,
}

impl Plot {
    fn name(self) -> &'static str {
        match self {
            Plot::HopDelay => "hop_delay",
            Plot::LossLocation => "loss_location",
        }
    }

    fn draw<DB: DrawingBackend>(
        self,
        root: &DrawingArea<DB, Shift>,
        d: &CorrelationDocument,
    ) -> DrawResult {
        match self {
            Plot::HopDelay => hop_delay(root, d),
            Plot::LossLocation => loss_location(root, d),
        }
    }
}

/// Draws `plot` to its PNG and SVG files; returns the SVG text.
fn draw_both(dir: &Path, plot: Plot, d: &CorrelationDocument) -> Result<String, String> {
    let name = plot.name();
    let png = dir.join(format!("{name}.png"));
    {
        let root = BitMapBackend::new(&png, (WIDTH, HEIGHT)).into_drawing_area();
        plot.draw(&root, d)
            .map_err(|e| format!("{}: {e}", png.display()))?;
    }
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        plot.draw(&root, d)
            .map_err(|e| format!("{name}.svg: {e}"))?;
    }
    std::fs::write(dir.join(format!("{name}.svg")), &svg)
        .map_err(|e| format!("{name}.svg: {e}"))?;
    Ok(svg)
}

/// Writes the directory: plots, `correlation.json`, and `index.html`.
pub fn write_dir(dir: &Path, d: &CorrelationDocument) -> Result<(), Error> {
    let out_err = |e: String| Error::Output {
        path: dir.to_path_buf(),
        source: std::io::Error::other(e),
    };
    crate::common::destination::make_report_dir(dir)?;
    register_fonts();
    let delay = draw_both(dir, Plot::HopDelay, d).map_err(out_err)?;
    // The page shows the losses as a table; the chart is for those who want a picture.
    draw_both(dir, Plot::LossLocation, d).map_err(out_err)?;
    let json = serde_json::to_string_pretty(d).map_err(|e| out_err(e.to_string()))?;
    write(dir, "correlation.json", format!("{json}\n").as_bytes())?;
    let html = super::correlation_html::render(d, &delay);
    write(dir, "index.html", html.as_bytes())?;
    Ok(())
}
