//! The plots of a report directory, drawn with plotters to PNG and SVG from `PlotData`:
//! throughput per flow, PSN progress, CE marks and CNPs, PFC pauses (Gantt), ACK RTT.
//! Time runs from the capture's start; every flow keeps its color in every plot.

use std::ops::Range;
use std::sync::Once;

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

use crate::common::units::{bit_rate_unit, duration_ns, duration_us};
use crate::model::{Bin, FlowSeries, PlotData, PlotKind};

pub const WIDTH: u32 = 1200;
pub const HEIGHT: u32 = 480;
/// Fonts sized for the page: shown at 800 px wide (a 900-pixel window) a label still reads
/// at 11 px.
pub(crate) const CAPTION_FONT: u32 = 26;
pub(crate) const LABEL_FONT: u32 = 20;
/// Room right of the x axis: its last tick's label, centred on the axis's end, stays on the
/// drawing.
const RIGHT_MARGIN: u32 = 40;
/// Flows drawn on their own; the rest are summed as "other flows".
const TOP_FLOWS: usize = 8;

/// A categorical palette (Tableau 10): flow color = palette[(id - 1) % 10].
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];
const OTHER: RGBColor = RGBColor(170, 170, 170);

pub fn flow_color(id: usize) -> RGBColor {
    PALETTE[(id.max(1) - 1) % PALETTE.len()]
}

pub fn css_color(c: RGBColor) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

static FONT: Once = Once::new();

/// The bitmap backend draws text with a font shipped in the binary (no system fonts needed).
pub fn register_fonts() {
    FONT.call_once(|| {
        let bytes: &'static [u8] = include_bytes!("fonts/DejaVuSans.ttf");
        for style in [FontStyle::Normal, FontStyle::Bold] {
            let _ = register_font("sans-serif", style, bytes);
        }
    });
}

/// The time axis: seconds, milliseconds or microseconds, whichever reads best for the span
/// shown; positions count from the capture's first frame, so a window zoomed to where the
/// traffic is still reads as "N ms into the capture".
#[derive(Debug, Clone, Copy)]
pub struct TimeAxis {
    pub origin_ns: u64,
    pub per_unit_ns: f64,
    pub unit: &'static str,
    /// The window shown, in units from the origin.
    pub lo: f64,
    pub span: f64,
    /// Whether the window starts or ends away from the capture's ends (idle time left out).
    zoomed: bool,
}

impl TimeAxis {
    pub fn new(origin_ns: u64, start_ns: u64, end_ns: u64) -> Self {
        let dur = end_ns.saturating_sub(start_ns).max(1);
        let (per_unit_ns, unit) = if dur >= 2_000_000_000 {
            (1e9, "s")
        } else if dur >= 2_000_000 {
            (1e6, "ms")
        } else {
            (1e3, "us")
        };
        TimeAxis {
            origin_ns,
            per_unit_ns,
            unit,
            lo: start_ns.saturating_sub(origin_ns) as f64 / per_unit_ns,
            span: dur as f64 / per_unit_ns,
            zoomed: start_ns > origin_ns,
        }
    }

    /// The axis of the plots over time: the bins' window.
    pub fn of(d: &PlotData) -> Self {
        TimeAxis::new(d.origin_ns, d.start_ns, d.end_ns + d.bin_ns)
    }

    pub fn at(&self, ts_ns: u64) -> f64 {
        ts_ns.saturating_sub(self.origin_ns) as f64 / self.per_unit_ns
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.lo + self.span * 1.02 + f64::EPSILON
    }

    fn label(&self) -> String {
        if self.zoomed {
            format!(
                "time since capture start ({}), shown where the traffic is",
                self.unit
            )
        } else {
            format!("time since capture start ({})", self.unit)
        }
    }

    /// A tick with the decimals the window needs (10002.5 ms, not 10002.499999).
    fn tick(&self, v: f64) -> String {
        tick_label(v, self.span)
    }
}

pub type DrawResult = Result<(), String>;

pub fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("{e:?}")
}

pub(crate) type Chart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// The band behind a PFC storm: amber, apart from the red of paused RoCE priorities.
const STORM: RGBColor = RGBColor(255, 214, 110);

/// One entry of a plot's key: a line in the series' color.
pub(crate) struct Key {
    pub name: String,
    pub color: RGBColor,
}

const KEY_ROW_PX: u32 = 28;
/// Key entries side by side, when their names fit.
const KEY_COLUMNS: usize = 2;
/// Where the key's entries start, and what each takes before its name (the line).
const KEY_LEFT_PX: i32 = 70;
const KEY_NAME_OFFSET_PX: i32 = 30;

/// The width of a key column: the drawing's, less the key's left and a right margin, halved.
fn key_column_px() -> i32 {
    (WIDTH as i32 - KEY_LEFT_PX - 10) / KEY_COLUMNS as i32
}

/// The width and height `text` takes written at the labels' size, in pixels.
fn label_size<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, text: &str) -> (i32, i32) {
    let font = TextStyle::from(("sans-serif", LABEL_FONT).into_font());
    root.estimate_text_size(text, &font)
        .map_or((0, 0), |(w, h)| (w as i32, h as i32))
}

/// How many key entries a row holds: two, unless a name would run into the next column or
/// off the drawing (IPv6 flows' names).
fn key_columns<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, keys: &[Key]) -> usize {
    let column_px = key_column_px();
    let fits = keys
        .iter()
        .all(|k| KEY_NAME_OFFSET_PX + label_size(root, &k.name).0 < column_px - 10);
    if fits {
        KEY_COLUMNS
    } else {
        1
    }
}

/// Splits `root` into the chart and, below it, the strip its key takes: the key never lies
/// over the data, whatever the data (it hid flows when it sat in a corner of the plot).
pub(crate) fn split_for_key<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    keys: &[Key],
) -> (DrawingArea<DB, Shift>, DrawingArea<DB, Shift>) {
    let rows = keys.len().div_ceil(key_columns(root, keys)) as u32;
    let strip = if keys.is_empty() {
        0
    } else {
        rows * KEY_ROW_PX + 8
    };
    root.split_vertically(root.dim_in_pixel().1 - strip)
}

/// Draws the key in rows (see `key_columns`).
pub(crate) fn draw_key<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    keys: &[Key],
) -> DrawResult {
    let columns = key_columns(area, keys);
    let column_px = key_column_px();
    for (n, k) in keys.iter().enumerate() {
        let x = KEY_LEFT_PX + (n % columns) as i32 * column_px;
        let y = (n / columns) as i32 * KEY_ROW_PX as i32 + 10;
        area.draw(&PathElement::new(
            vec![(x, y), (x + 22, y)],
            k.color.stroke_width(3),
        ))
        .map_err(err)?;
        area.draw(&Text::new(
            k.name.clone(),
            (x + KEY_NAME_OFFSET_PX, y - 7),
            ("sans-serif", LABEL_FONT).into_font().color(&BLACK),
        ))
        .map_err(err)?;
    }
    Ok(())
}

/// A white chart with a caption, both axes and their descriptions: the frame of the plots
/// over time.
fn time_chart<'a, DB: DrawingBackend + 'a>(
    root: &'a DrawingArea<DB, Shift>,
    caption: String,
    t: TimeAxis,
    y: Range<f64>,
    y_label_area: u32,
    y_desc: &str,
) -> Result<Chart<'a, DB>, String> {
    root.fill(&WHITE).map_err(err)?;
    let span = y.end - y.start;
    let mut chart = ChartBuilder::on(root)
        .caption(caption, ("sans-serif", CAPTION_FONT))
        .margin(12)
        .margin_right(RIGHT_MARGIN)
        .x_label_area_size(55)
        .y_label_area_size(y_label_area)
        .build_cartesian_2d(t.range(), y)
        .map_err(err)?;
    chart
        .configure_mesh()
        .label_style(("sans-serif", LABEL_FONT))
        .axis_desc_style(("sans-serif", LABEL_FONT))
        .x_desc(t.label())
        .x_label_formatter(&|v| t.tick(*v))
        .y_desc(y_desc)
        .y_label_formatter(&|v| tick_label(*v, span))
        .draw()
        .map_err(err)?;
    Ok(chart)
}

/// A y tick with as many decimals as the axis needs: small rates do not all read "0.0".
pub fn tick_label(v: f64, span: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let digits = if span >= 10.0 {
        0
    } else {
        // Enough decimals to tell ticks a tenth of the span apart.
        ((-(span / 10.0).log10()).ceil().max(0.0) as usize).min(9)
    };
    if digits > 6 {
        format!("{v:.1e}")
    } else {
        format!("{v:.digits$}")
    }
}

/// A line in a flow's color; a series of one or two points (a flow that fits in a bin or
/// two) shows its points too, which a line alone would not.
fn line<'a, DB: DrawingBackend + 'a>(
    chart: &mut Chart<'a, DB>,
    points: Vec<(f64, f64)>,
    color: RGBColor,
) -> DrawResult {
    if points.len() <= 2 {
        chart
            .draw_series(points.iter().map(|&p| Circle::new(p, 4, color.filled())))
            .map_err(err)?;
    }
    chart
        .draw_series(LineSeries::new(points, color.stroke_width(2)))
        .map_err(err)?;
    Ok(())
}

fn note<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, title: &str, text: &str) -> DrawResult {
    root.fill(&WHITE).map_err(err)?;
    root.draw(&Text::new(
        title.to_string(),
        (20, 20),
        ("sans-serif", 24).into_font().color(&BLACK),
    ))
    .map_err(err)?;
    root.draw(&Text::new(
        text.to_string(),
        (20, (HEIGHT / 2) as i32),
        ("sans-serif", 20).into_font().color(&RGBColor(90, 90, 90)),
    ))
    .map_err(err)?;
    Ok(())
}

/// Flows to draw on their own (the data flows with the most bytes), in id order.
pub fn top_flows(d: &PlotData) -> Vec<&FlowSeries> {
    let mut v: Vec<&FlowSeries> = d.flows.iter().filter(|f| f.data).collect();
    v.sort_by_key(|f| std::cmp::Reverse(f.bins.iter().map(|b| b.bytes).sum::<u64>()));
    v.truncate(TOP_FLOWS);
    v.sort_by_key(|f| f.id);
    v
}

fn bin_x(d: &PlotData, t: &TimeAxis, i: usize) -> f64 {
    t.at(d.start_ns + i as u64 * d.bin_ns)
}

fn gbps(b: &Bin, bin_ns: u64) -> f64 {
    b.bytes as f64 * 8.0 / bin_ns as f64
}

/// (a) Throughput per flow, the top flows on their own, the rest summed.
pub fn throughput<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, d: &PlotData) -> DrawResult {
    let title = PlotKind::Throughput.title();
    if let Some(text) = empty(PlotKind::Throughput, d) {
        return note(root, title, text);
    }
    let top = top_flows(d);
    let t = TimeAxis::of(d);
    let mut rest = vec![0f64; d.bins];
    let top_ids: Vec<usize> = top.iter().map(|f| f.id).collect();
    for f in d.flows.iter().filter(|f| !top_ids.contains(&f.id)) {
        for (i, b) in f.bins.iter().enumerate() {
            rest[i] += gbps(b, d.bin_ns);
        }
    }
    if let Some(o) = &d.other {
        for (i, b) in o.iter().enumerate() {
            rest[i] += gbps(b, d.bin_ns);
        }
    }
    let max = top
        .iter()
        .flat_map(|f| f.bins.iter().map(|b| gbps(b, d.bin_ns)))
        .chain(rest.iter().copied())
        .fold(0.0, f64::max)
        .max(1e-9);
    // The axis reads in the unit the text gives rates in (a trickle read "0.00090" Gb/s,
    // labels too wide for the axis).
    let (unit, bps_per_unit) = bit_rate_unit(max * 1e9);
    let per_gbps = 1e9 / bps_per_unit;
    let rate = |b: &Bin| gbps(b, d.bin_ns) * per_gbps;
    let mut keys: Vec<Key> = top
        .iter()
        .map(|f| Key {
            name: f.name.clone(),
            color: flow_color(f.id),
        })
        .collect();
    let has_rest = rest.iter().any(|&v| v > 0.0);
    if has_rest {
        keys.push(Key {
            name: "other flows".into(),
            color: OTHER,
        });
    }
    root.fill(&WHITE).map_err(err)?;
    let (area, key_area) = split_for_key(root, &keys);
    let mut chart = time_chart(
        &area,
        format!("{title} (bins of {})", duration_ns(d.bin_ns)),
        t,
        0.0..max * per_gbps * 1.1,
        70,
        unit,
    )?;
    for f in &top {
        let points: Vec<(f64, f64)> = f
            .bins
            .iter()
            .enumerate()
            .map(|(i, b)| (bin_x(d, &t, i), rate(b)))
            .collect();
        line(&mut chart, points, flow_color(f.id))?;
    }
    if has_rest {
        let points: Vec<(f64, f64)> = rest
            .iter()
            .enumerate()
            .map(|(i, &v)| (bin_x(d, &t, i), v * per_gbps))
            .collect();
        line(&mut chart, points, OTHER)?;
    }
    draw_key(&key_area, &keys)?;
    root.present().map_err(err)
}

/// The flows the PSN plot draws: the top flows with requests.
fn psn_flows(d: &PlotData) -> Vec<&FlowSeries> {
    top_flows(d)
        .into_iter()
        .filter(|f| f.bins.iter().any(|b| b.psn_progress.is_some()))
        .collect()
}

/// The height of one flow's panel in the PSN plot, and what its title and time axis take.
const PSN_PANEL_PX: u32 = 110;
const PSN_FRAME_PX: u32 = 110;

/// The PSN plot's height: a panel per flow, so that flows progressing alike never hide
/// each other.
fn psn_height(d: &PlotData) -> u32 {
    let flows = psn_flows(d).len() as u32;
    if flows == 0 {
        HEIGHT
    } else {
        PSN_FRAME_PX + PSN_PANEL_PX * flows
    }
}

/// (b) PSN progress per QP, a panel each, in its flow's color: a red x under the line where
/// PSNs went missing (a gap), an orange triangle over it where some were resent, so that a
/// loss and its recovery in one bin both show.
pub fn psn<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, d: &PlotData) -> DrawResult {
    let title = PlotKind::Psn.title();
    if let Some(text) = empty(PlotKind::Psn, d) {
        return note(root, title, text);
    }
    let top = psn_flows(d);
    let t = TimeAxis::of(d);
    root.fill(&WHITE).map_err(err)?;
    let body = root
        .titled(
            &format!("{title}: x under the line = PSN gap, triangle over it = resend"),
            ("sans-serif", CAPTION_FONT),
        )
        .map_err(err)?;
    // Equal panels, the last taller by the time axis under it.
    let axis = PSN_FRAME_PX as i32 - 50;
    let each = (body.dim_in_pixel().1 as i32 - axis) / top.len() as i32;
    let breaks: Vec<i32> = (1..top.len() as i32).map(|k| k * each).collect();
    let panels = body.split_by_breakpoints(Vec::<i32>::new(), breaks);
    for (n, (f, panel)) in top.iter().zip(&panels).enumerate() {
        let last = n + 1 == top.len();
        psn_panel(panel, d, &t, f, last)?;
    }
    root.present().map_err(err)
}

/// One flow's panel: its name over it, its own PSN scale, the time axis under the last.
fn psn_panel<DB: DrawingBackend>(
    panel: &DrawingArea<DB, Shift>,
    d: &PlotData,
    t: &TimeAxis,
    f: &FlowSeries,
    last: bool,
) -> DrawResult {
    let color = flow_color(f.id);
    let points: Vec<(f64, f64)> = f
        .bins
        .iter()
        .enumerate()
        .filter_map(|(i, b)| b.psn_progress.map(|p| (bin_x(d, t, i), p as f64)))
        .collect();
    let hi = points.iter().map(|p| p.1).fold(1.0, f64::max);
    let x_axis = if last { 55 } else { 8 };
    let mut chart = ChartBuilder::on(panel)
        .margin_left(12)
        .margin_right(RIGHT_MARGIN)
        .margin_top(24)
        .x_label_area_size(x_axis)
        .y_label_area_size(80)
        .build_cartesian_2d(t.range(), 0.0..hi * 1.15 + 1.0)
        .map_err(err)?;
    let y_tick = |v: &f64| tick_label(*v, hi);
    let x_tick = |v: &f64| if last { t.tick(*v) } else { String::new() };
    chart
        .configure_mesh()
        .label_style(("sans-serif", LABEL_FONT))
        .axis_desc_style(("sans-serif", LABEL_FONT))
        .y_labels(3)
        .y_label_formatter(&y_tick)
        .x_desc(if last { t.label() } else { String::new() })
        .x_label_formatter(&x_tick)
        .draw()
        .map_err(err)?;
    panel
        .draw(&Text::new(
            format!("{} (PSNs since its first request)", f.name),
            (92, 4),
            ("sans-serif", LABEL_FONT).into_font().color(&color),
        ))
        .map_err(err)?;
    line(&mut chart, points, color)?;
    let mut last_psn = 0.0;
    let mut gaps = Vec::new();
    let mut resends = Vec::new();
    for (i, b) in f.bins.iter().enumerate() {
        if let Some(p) = b.psn_progress {
            last_psn = p as f64;
        }
        let x = bin_x(d, t, i);
        if b.psn_gaps > 0 {
            gaps.push((x, last_psn));
        }
        if b.retransmissions > 0 {
            resends.push((x, last_psn));
        }
    }
    // Offsets in pixels: below the line for a gap, above it for a resend.
    chart
        .draw_series(
            gaps.into_iter()
                .map(|p| EmptyElement::at(p) + Cross::new((0, 12), 7, RED.stroke_width(3))),
        )
        .map_err(err)?;
    chart
        .draw_series(resends.into_iter().map(|p| {
            EmptyElement::at(p) + TriangleMarker::new((0, -13), 8, RGBColor(255, 140, 0).filled())
        }))
        .map_err(err)?;
    Ok(())
}

/// The flows with the most CE marks and CNPs, in id order: each gets its own lane.
fn ecn_flows(d: &PlotData) -> Vec<&FlowSeries> {
    let marks = |f: &FlowSeries| f.bins.iter().map(|b| b.ce + b.cnps).sum::<u64>();
    let mut v: Vec<&FlowSeries> = d.flows.iter().filter(|f| marks(f) > 0).collect();
    v.sort_by_key(|f| std::cmp::Reverse(marks(f)));
    v.truncate(TOP_FLOWS);
    v.sort_by_key(|f| f.id);
    v
}

/// Where the marks of a lane sit: CE in its upper half, CNPs in its lower half, so that
/// neither hides the other (on one count axis, answered marks drew triangles over circles).
const CE_LANE_OFFSET: f64 = 0.12;
/// A lane's height: its flow's name over it at the labels' size, the marks below.
const ECN_LANE_PX: u32 = 80;
/// The caption, the time axis and the margins around the lanes.
const ECN_FRAME_PX: u32 = 130;

fn ecn_height(d: &PlotData) -> u32 {
    match ecn_flows(d).len() as u32 {
        0 => HEIGHT,
        lanes => ECN_FRAME_PX + ECN_LANE_PX * lanes,
    }
}

/// (c) CE marks (circles) and the CNPs that answered them (triangles) per flow over time, a
/// lane per flow: a flow whose marks get no CNP shows circles with no triangles below them.
pub fn ecn<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, d: &PlotData) -> DrawResult {
    let title = PlotKind::EcnCnp.title();
    if let Some(text) = empty(PlotKind::EcnCnp, d) {
        return note(root, title, text);
    }
    let flows = ecn_flows(d);
    let t = TimeAxis::of(d);
    let rows = flows.len();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(root)
        .caption(
            format!(
                "{title} per bin of {}: circle = CE, triangle = CNP",
                duration_ns(d.bin_ns)
            ),
            ("sans-serif", CAPTION_FONT),
        )
        .margin(12)
        .margin_right(RIGHT_MARGIN)
        .x_label_area_size(55)
        .y_label_area_size(12)
        .build_cartesian_2d(t.range(), -0.5..rows as f64 - 0.5)
        .map_err(err)?;
    chart
        .configure_mesh()
        .label_style(("sans-serif", LABEL_FONT))
        .axis_desc_style(("sans-serif", LABEL_FONT))
        .x_desc(t.label())
        .x_label_formatter(&|v| t.tick(*v))
        .y_labels(0)
        .disable_y_mesh()
        .draw()
        .map_err(err)?;
    let start = t.range().start;
    for (n, f) in flows.iter().enumerate() {
        // The first flow on top, its name over its marks in its color (as the PSN panels).
        let lane = (rows - 1 - n) as f64;
        let color = flow_color(f.id);
        let ce: u64 = f.bins.iter().map(|b| b.ce).sum();
        let cnps: u64 = f.bins.iter().map(|b| b.cnps).sum();
        let name = format!("{}: CE {ce}, CNP {cnps}", f.name);
        let font = ("sans-serif", LABEL_FONT).into_font().color(&color);
        // On white, so that the grid does not run through the name.
        let (w, h) = label_size(root, &name);
        chart
            .draw_series(std::iter::once(
                EmptyElement::at((start, lane + 0.5))
                    + Rectangle::new([(3, 3), (w + 9, h + 5)], WHITE.filled())
                    + Text::new(name, (6, 4), font),
            ))
            .map_err(err)?;
        if n > 0 {
            chart
                .draw_series(LineSeries::new(
                    [(start, lane + 0.5), (t.range().end, lane + 0.5)],
                    RGBColor(220, 220, 220),
                ))
                .map_err(err)?;
        }
        let at = |pick: fn(&Bin) -> u64| -> Vec<f64> {
            f.bins
                .iter()
                .enumerate()
                .filter(|(_, b)| pick(b) > 0)
                .map(|(i, _)| bin_x(d, &t, i))
                .collect()
        };
        chart
            .draw_series(
                at(|b| b.ce)
                    .into_iter()
                    .map(|x| Circle::new((x, lane + CE_LANE_OFFSET), 5, color.filled())),
            )
            .map_err(err)?;
        chart
            .draw_series(
                at(|b| b.cnps).into_iter().map(|x| {
                    TriangleMarker::new((x, lane - CE_LANE_OFFSET), 6, color.stroke_width(2))
                }),
            )
            .map_err(err)?;
    }
    root.present().map_err(err)
}

/// The y tick of a plot with one lane per row (lane n at y = n): its label at the lane's
/// centre, nothing between lanes.
fn lane_label(labels: &[String], y: f64) -> String {
    let i = y.round();
    if (y - i).abs() < 0.01 && i >= 0.0 {
        labels.get(i as usize).cloned().unwrap_or_default()
    } else {
        String::new()
    }
}

/// What a plot would say when `d` holds nothing for it: the page then shows the sentence, not
/// an empty 480-pixel plot.
pub fn empty(kind: PlotKind, d: &PlotData) -> Option<&'static str> {
    match kind {
        PlotKind::Throughput => top_flows(d)
            .is_empty()
            .then_some("No RoCE data flows in this capture."),
        PlotKind::Psn => psn_flows(d)
            .is_empty()
            .then_some("No request PSNs in this capture."),
        PlotKind::EcnCnp => ecn_flows(d)
            .is_empty()
            .then_some("No CE marks and no CNPs in this capture."),
        PlotKind::Pfc => d
            .pfc
            .is_empty()
            .then_some("No PFC or PAUSE frames in this capture."),
        PlotKind::AckRtt => d
            .rtt_us
            .is_empty()
            .then_some("No ACKed requests in this capture (no round-trip samples)."),
    }
}

/// Nanoseconds paused in each of `slots` slots of `slot_ns` from `start_ns`: `spans` are
/// pauses or spans of them, (start, end, time paused in it), a span's paused time spread
/// evenly over it.
pub(super) fn paused_per_slot(
    spans: &[(u64, u64, u64)],
    start_ns: u64,
    slot_ns: u64,
    slots: usize,
) -> Vec<f64> {
    let mut out = vec![0.0; slots];
    for &(a, b, paused) in spans.iter().filter(|s| s.1 > s.0) {
        let density = paused as f64 / (b - a) as f64;
        let overlaps = crate::model::slot_overlaps(a, b, start_ns, slot_ns);
        for (k, ns) in overlaps.take_while(|&(k, _)| k < slots as u64) {
            out[k as usize] += ns as f64 * density;
        }
    }
    out
}

/// Columns of the PFC plot: the time paused in each is drawn as its bar's strength.
const PFC_COLUMNS: usize = 1_200;

/// (d) PFC pause intervals per priority and source as bars, storms highlighted.
pub fn pfc<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, d: &PlotData) -> DrawResult {
    let title = PlotKind::Pfc.title();
    if let Some(text) = empty(PlotKind::Pfc, d) {
        return note(root, title, text);
    }
    let end = d
        .pfc
        .iter()
        .flat_map(|r| r.intervals.iter().map(|iv| iv.1))
        .fold(d.end_ns + d.bin_ns, u64::max);
    let start = d
        .pfc
        .iter()
        .flat_map(|r| r.intervals.iter().map(|iv| iv.0))
        .fold(d.start_ns, u64::min);
    let t = TimeAxis::new(d.origin_ns, start, end);
    let rows = d.pfc.len();
    let labels: Vec<String> = d
        .pfc
        .iter()
        .map(|r| {
            if r.roce && r.priority.is_some() {
                format!("{} (RoCE)", r.label)
            } else {
                r.label.clone()
            }
        })
        .collect();
    root.fill(&WHITE).map_err(err)?;
    // The lanes' names in a gutter as wide as the longest (at 250 px, a RoCE priority's name
    // ran off the drawing's left edge).
    let longest = labels.iter().map(|l| label_size(root, l).0).max();
    let gutter = (longest.unwrap_or(0) as u32 + 20).max(80);
    let mut chart = ChartBuilder::on(root)
        .caption(
            format!(
                "{title}: bars = paused, darker the longer (red on RoCE priorities), amber band = storm"
            ),
            ("sans-serif", CAPTION_FONT),
        )
        .margin(12)
        .margin_right(RIGHT_MARGIN)
        .x_label_area_size(55)
        .y_label_area_size(gutter.min(WIDTH / 2))
        .build_cartesian_2d(t.range(), -0.5..rows as f64 - 0.5)
        .map_err(err)?;
    let label_of = |y: &f64| lane_label(&labels, *y);
    chart
        .configure_mesh()
        .label_style(("sans-serif", LABEL_FONT))
        .axis_desc_style(("sans-serif", LABEL_FONT))
        .x_desc(t.label())
        .x_label_formatter(&|v| t.tick(*v))
        .y_labels(rows.max(2) * 2 + 1)
        .y_label_formatter(&label_of)
        .disable_y_mesh()
        .draw()
        .map_err(err)?;
    for (row, r) in d.pfc.iter().enumerate() {
        let y = row as f64;
        chart
            .draw_series(r.storms.iter().map(|&(a, b)| {
                Rectangle::new([(t.at(a), y - 0.48), (t.at(b), y + 0.48)], STORM.filled())
            }))
            .map_err(err)?;
        let color = if r.roce {
            RGBColor(214, 39, 40)
        } else {
            RGBColor(90, 90, 90)
        };
        // A column's colour is as strong as the share of it paused: pauses taking turns
        // with others are no solid bar. A pause shorter than a column still shows, faintly.
        let column_ns = (end - start).div_ceil(PFC_COLUMNS as u64).max(1);
        let paused = paused_per_slot(&r.intervals, start, column_ns, PFC_COLUMNS);
        let bars = pause_bars(&paused, column_ns)
            .into_iter()
            .map(|(a, b, share)| {
                let (lo, hi) = (start + a as u64 * column_ns, start + b as u64 * column_ns);
                Rectangle::new(
                    [(t.at(lo), y - 0.3), (t.at(hi), y + 0.3)],
                    opaque(color, share).filled(),
                )
            });
        chart.draw_series(bars).map_err(err)?;
    }
    root.present().map_err(err)
}

/// The bars of one row: runs of neighbouring columns paused for the same share, as
/// (first column, column past the last, share). One rectangle per run: columns drawn one by
/// one showed the grid between them as stripes in the SVG.
fn pause_bars(paused_ns: &[f64], column_ns: u64) -> Vec<(usize, usize, f64)> {
    let mut bars: Vec<(usize, usize, f64)> = Vec::new();
    for (i, &ns) in paused_ns.iter().enumerate().filter(|(_, &ns)| ns > 0.0) {
        // In steps of 5%, so that a steady pause is one run.
        let share = ((ns / column_ns as f64).clamp(0.25, 1.0) * 20.0).round() / 20.0;
        match bars.last_mut() {
            Some(last) if last.1 == i && last.2 == share => last.1 = i + 1,
            _ => bars.push((i, i + 1, share)),
        }
    }
    bars
}

/// `color` at `share` of its strength over white, opaque: the grid does not show through.
fn opaque(color: RGBColor, share: f64) -> RGBColor {
    let over_white = |c: u8| (255.0 - (255.0 - c as f64) * share).round() as u8;
    RGBColor(
        over_white(color.0),
        over_white(color.1),
        over_white(color.2),
    )
}

/// (e) ACK round-trip time distribution, all flows.
pub fn rtt<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, d: &PlotData) -> DrawResult {
    let title = PlotKind::AckRtt.title();
    if let Some(text) = empty(PlotKind::AckRtt, d) {
        return note(root, title, text);
    }
    let v = &d.rtt_us;
    let p = |q: f64| v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
    let hi = (p(0.99) * 1.25)
        .max(v[v.len() - 1].min(p(0.99) * 3.0))
        .max(1e-3);
    const BARS: usize = 40;
    let width = hi / BARS as f64;
    let mut counts = [0u64; BARS + 1];
    for &x in v {
        let i = ((x / width) as usize).min(BARS);
        counts[i] += 1;
    }
    let max = *counts.iter().max().unwrap_or(&1) as f64;
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(root)
        .caption(
            format!(
                "{title}: {} samples, p50 {}, p99 {}, max {}",
                v.len(),
                duration_us(p(0.5)),
                duration_us(p(0.99)),
                duration_us(v[v.len() - 1])
            ),
            ("sans-serif", CAPTION_FONT),
        )
        .margin(12)
        .margin_right(RIGHT_MARGIN)
        .x_label_area_size(55)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..hi + width, 0.0..max * 1.15)
        .map_err(err)?;
    chart
        .configure_mesh()
        .label_style(("sans-serif", LABEL_FONT))
        .axis_desc_style(("sans-serif", LABEL_FONT))
        .x_desc("round-trip time (us); the last bar holds everything beyond")
        .y_desc("samples")
        // Samples are counted: whole numbers only ("300", not "300.0").
        .y_label_formatter(&|v| {
            if (v - v.round()).abs() < 1e-9 {
                format!("{}", v.round() as u64)
            } else {
                String::new()
            }
        })
        .draw()
        .map_err(err)?;
    let color = RGBColor(44, 160, 44);
    chart
        .draw_series(
            counts
                .iter()
                .enumerate()
                .filter(|(_, &c)| c > 0)
                .map(|(i, &c)| {
                    let x = i as f64 * width;
                    Rectangle::new([(x, 0.0), (x + width * 0.9, c as f64)], color.filled())
                }),
        )
        .map_err(err)?;
    root.present().map_err(err)
}

/// One plot, drawn to a PNG file and to SVG text.
pub struct Rendered {
    pub kind: PlotKind,
    pub svg: String,
}

fn draw<DB: DrawingBackend>(
    kind: PlotKind,
    root: &DrawingArea<DB, Shift>,
    d: &PlotData,
) -> DrawResult {
    match kind {
        PlotKind::Throughput => throughput(root, d),
        PlotKind::Psn => psn(root, d),
        PlotKind::EcnCnp => ecn(root, d),
        PlotKind::Pfc => pfc(root, d),
        PlotKind::AckRtt => rtt(root, d),
    }
}

/// A plot's height in pixels: HEIGHT, but for the PSN plot's panel per flow.
pub fn height(kind: PlotKind, d: &PlotData) -> u32 {
    match kind {
        PlotKind::Psn => psn_height(d),
        PlotKind::EcnCnp => ecn_height(d),
        _ => HEIGHT,
    }
}

/// Draws every plot into `dir` as PNG and returns the SVG texts for the HTML page.
pub fn render_all(dir: &std::path::Path, d: &PlotData) -> Result<Vec<Rendered>, String> {
    register_fonts();
    let mut out = Vec::new();
    for kind in PlotKind::ALL {
        let name = kind.name();
        let png_path = dir.join(format!("{name}.png"));
        let size = (WIDTH, height(kind, d));
        {
            let root = BitMapBackend::new(&png_path, size).into_drawing_area();
            draw(kind, &root, d).map_err(|e| format!("{}: {e}", png_path.display()))?;
        }
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
            draw(kind, &root, d).map_err(|e| format!("{name}.svg: {e}"))?;
        }
        std::fs::write(dir.join(format!("{name}.svg")), &svg)
            .map_err(|e| format!("{name}.svg: {e}"))?;
        out.push(Rendered { kind, svg });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::tick_label;

    #[test]
    fn a_steady_pause_is_one_bar_and_a_gap_splits_it() {
        let paused = [0.0, 100.0, 100.0, 99.0, 0.0, 50.0, 100.0];
        assert_eq!(
            super::pause_bars(&paused, 100),
            [(1, 4, 1.0), (5, 6, 0.5), (6, 7, 1.0)]
        );
        let red = plotters::style::RGBColor(214, 39, 40);
        assert_eq!(super::opaque(red, 1.0), red);
        assert_eq!(
            super::opaque(red, 0.0),
            plotters::style::RGBColor(255, 255, 255)
        );
    }

    #[test]
    fn small_ticks_are_not_all_zero() {
        // 0 to 0.004 Gb/s: every tick used to read "0.0".
        let ticks: Vec<String> = (0..5)
            .map(|i| tick_label(i as f64 * 0.001, 0.004))
            .collect();
        assert_eq!(ticks, ["0", "0.0010", "0.0020", "0.0030", "0.0040"]);
        assert_eq!(tick_label(50.0, 120.0), "50");
        assert_eq!(tick_label(2.5, 6.0), "2.5");
    }
}
