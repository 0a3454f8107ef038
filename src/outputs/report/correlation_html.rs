//! The correlation page (`--correlate --report DIR`, index.html): the main report's style, a
//! picture of the path (the points in order, each hop with what it lost, marked, re-marked and
//! delayed), the findings, the plots, and the points, hops and flows as tables.

use std::fmt::Write as _;

use super::correlation::short_names;
use super::html::{card_row, esc, findings, strip_xml_header, STYLE};
use crate::common::units::{duration_us, signed_duration_us};
use crate::model::{CorrelatedFlow, CorrelationDocument, FlowLabel, HopReport, Severity};

/// Flows listed in the flows table; correlation.json has them all.
const HTML_FLOWS: usize = 200;

/// The page, given the hop delay plot as SVG text.
pub fn render(d: &CorrelationDocument, delay_svg: &str) -> String {
    let names = Names::of(d);
    let mut o = String::new();
    let c = &d.correlation;
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>roce-sniff correlation</title>\n<style>{STYLE}</style></head><body>\n<h1>roce-sniff correlation</h1>\n<div class=\"sub\">{} capture points in path order: {}</div>\n",
        c.points.len(),
        esc(&names.short.join(" → "))
    );
    cards(&mut o, d);
    o.push_str("<h2>The path</h2>\n");
    let _ = writeln!(
        o,
        "<div class=\"plot\" id=\"path\">{}<p>{}</p></div>",
        path_svg(d, &names),
        esc(PATH_CAPTION)
    );
    findings(&mut o, &d.findings, "Nothing looks wrong along this path.");
    o.push_str("<h2>Over the hops</h2>\n");
    let _ = writeln!(
        o,
        "<div class=\"plot\" id=\"hop_delay\">{}<p>{} <a href=\"hop_delay.png\">PNG</a> &middot; <a href=\"hop_delay.svg\">SVG</a></p></div>",
        strip_xml_header(delay_svg),
        esc(DELAY_CAPTION)
    );
    loss_table(&mut o, d, &names);
    points_table(&mut o, d, &names);
    hops_table(&mut o, "Hops: requests (data direction)", &c.hops, &names);
    hops_table(
        &mut o,
        "Hops: what travels back (ACKs, NAKs, CNPs, READ responses)",
        &c.reverse_hops,
        &names,
    );
    flows_table(&mut o, &c.flows, &names);
    o.push_str("<h2>Files</h2>\n<p><a href=\"correlation.json\">correlation.json</a> (every flow and hop, with the lost packets' frame numbers; described in docs/json.md)</p>\n</body></html>\n");
    o
}

const PATH_CAPTION: &str = "The capture points in path order (as given with -r), left to right. Above each arrow: the requests that crossed the hop; below it: what travelled back. Red: packets lost on that hop; orange: packets CE-marked or re-marked there. Delays have the clock offset between the points taken out.";
const DELAY_CAPTION: &str = "One-way delay of the packets matched at both ends of each hop: the line spans min to max, the dot is the median, the bar the 99th percentile. A p99 far above the median is a queue building up on that hop.";
const LOSS_CAPTION: &str = "Packets each hop lost: seen at its earlier point and never at its later one, per direction; appeared: packets the earlier point never saw but the later did (that capture missed them).";

/// Where packets were lost, a row per hop: a table as tall as the hops, where a chart of a
/// few small bars took a screen (the chart is still written, as loss_location.png and .svg).
fn loss_table(o: &mut String, d: &CorrelationDocument, names: &Names) {
    let c = &d.correlation;
    let _ = writeln!(
        o,
        "<div class=\"plot\" id=\"loss_location\"><h3>Where packets were lost</h3>\n<table><tr><th class=\"l\">hop</th><th>lost: requests</th><th>lost: travelling back</th><th>appeared (missed upstream)</th></tr>"
    );
    for h in &c.hops {
        let back = c
            .reverse_hops
            .iter()
            .find(|r| r.from == h.to && r.to == h.from);
        let (back_lost, back_appeared) = back.map_or((0, 0), |r| (r.lost, r.appeared));
        let lost = h.lost + back_lost;
        let _ = writeln!(
            o,
            "<tr{}><td class=\"l\">{}</td><td>{}</td><td>{back_lost}</td><td>{}</td></tr>",
            if lost > 0 { " class=\"trouble\"" } else { "" },
            esc(&names.hop(&h.from, &h.to)),
            h.lost,
            h.appeared + back_appeared
        );
    }
    let _ = writeln!(
        o,
        "</table><p>{} <a href=\"loss_location.png\">PNG</a> &middot; <a href=\"loss_location.svg\">SVG</a></p></div>",
        esc(LOSS_CAPTION)
    );
}

/// Points' full names and the short ones shown.
struct Names {
    full: Vec<String>,
    short: Vec<String>,
}

impl Names {
    fn of(d: &CorrelationDocument) -> Self {
        let full: Vec<String> = d
            .correlation
            .points
            .iter()
            .map(|p| p.name.clone())
            .collect();
        let short = short_names(&full);
        Names { full, short }
    }

    fn short<'a>(&'a self, full: &'a str) -> &'a str {
        self.full
            .iter()
            .position(|f| f == full)
            .map_or(full, |i| self.short[i].as_str())
    }

    fn hop(&self, from: &str, to: &str) -> String {
        format!("{} → {}", self.short(from), self.short(to))
    }
}

/// The main report's rule: a card is red when its count tells of trouble and is not zero.
fn cards(o: &mut String, d: &CorrelationDocument) {
    let c = &d.correlation;
    let all = || c.hops.iter().chain(&c.reverse_hops);
    let lost: u64 = all().map(|h| h.lost).sum();
    let ce: u64 = all().map(|h| h.ce_marked).sum();
    let remarked: u64 = all().map(|h| h.dscp_changed + h.pcp_changed).sum();
    let count = |s: Severity| d.findings.iter().filter(|f| f.severity == s).count();
    let (crit, warn) = (count(Severity::Critical), count(Severity::Warning));
    card_row(
        o,
        &[
            ("capture points".into(), c.points.len().to_string(), false),
            (
                "packets lost on the path".into(),
                lost.to_string(),
                lost > 0,
            ),
            ("CE-marked on the path".into(), ce.to_string(), ce > 0),
            (
                "re-marked on the path".into(),
                remarked.to_string(),
                remarked > 0,
            ),
            ("critical findings".into(), crit.to_string(), crit > 0),
            ("warnings".into(), warn.to_string(), warn > 0),
        ],
    );
}

/// How a hop looks in the path picture.
#[derive(Clone, Copy)]
enum HopLook {
    Lossy,
    Marked,
    Clean,
}

impl HopLook {
    fn of(h: &HopReport) -> Self {
        if h.lost > 0 {
            HopLook::Lossy
        } else if h.ce_marked + h.dscp_changed + h.pcp_changed > 0 {
            HopLook::Marked
        } else {
            HopLook::Clean
        }
    }

    fn name(self) -> &'static str {
        match self {
            HopLook::Lossy => "lossy",
            HopLook::Marked => "marked",
            HopLook::Clean => "clean",
        }
    }

    fn color(self) -> &'static str {
        match self {
            HopLook::Lossy => "#c62828",
            HopLook::Marked => "#ef6c00",
            HopLook::Clean => "#607d8b",
        }
    }
}

const SPACING: usize = 330;
const BOX_W: usize = 190;
const MARGIN: usize = 120;

/// The path as inline SVG: a box per point, and per hop an arrow each way with its figures.
fn path_svg(d: &CorrelationDocument, names: &Names) -> String {
    let c = &d.correlation;
    let n = c.points.len().max(1);
    let width = 2 * MARGIN + (n - 1) * SPACING;
    let x = |i: usize| MARGIN + i * SPACING;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {width} 270\" width=\"{width}\" font-family=\"DejaVu Sans, Arial, sans-serif\" font-size=\"13\" style=\"display: block; margin: 0 auto; max-width: {width}px\">"
    );
    s.push_str("<defs>");
    for look in [HopLook::Lossy, HopLook::Marked, HopLook::Clean] {
        let _ = write!(
            s,
            "<marker id=\"head-{}\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerUnits=\"userSpaceOnUse\" markerWidth=\"14\" markerHeight=\"14\" orient=\"auto-start-reverse\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"{}\"/></marker>",
            look.name(),
            look.color()
        );
    }
    s.push_str("</defs>");
    for (i, p) in c.points.iter().enumerate() {
        let (cx, left) = (x(i), x(i) - BOX_W / 2);
        let _ = write!(
            s,
            "<g class=\"point\"><title>{}</title><rect x=\"{left}\" y=\"105\" width=\"{BOX_W}\" height=\"66\" rx=\"8\" fill=\"white\" stroke=\"#444\" stroke-width=\"1.5\"/><text x=\"{cx}\" y=\"128\" text-anchor=\"middle\" font-weight=\"bold\">{}</text><text x=\"{cx}\" y=\"146\" text-anchor=\"middle\">{} RoCE packets</text><text x=\"{cx}\" y=\"163\" text-anchor=\"middle\" fill=\"#666\">clock {}</text></g>",
            esc(&p.name),
            esc(&ellipsis(&names.short[i], 24)),
            p.roce_packets,
            signed_duration_us(p.clock_offset_us)
        );
    }
    for (i, h) in c.hops.iter().enumerate() {
        let (a, b) = (x(i) + BOX_W / 2 + 6, x(i + 1) - BOX_W / 2 - 6);
        arrow(&mut s, h, a, b, 124, "→ requests", &[40, 58, 76, 94]);
        let back = c
            .reverse_hops
            .iter()
            .find(|r| r.from == h.to && r.to == h.from);
        if let Some(r) = back {
            arrow(&mut s, r, b, a, 152, "← back", &[196, 214, 232, 250]);
        }
    }
    s.push_str("</svg>");
    s
}

/// One direction of a hop: an arrow from `x0` to `x1` at height `y`, and its figures on the
/// lines `rows` (a title and three lines), centered on the hop.
fn arrow(
    s: &mut String,
    h: &HopReport,
    x0: usize,
    x1: usize,
    y: usize,
    title: &str,
    rows: &[usize; 4],
) {
    let look = HopLook::of(h);
    let mid = (x0 + x1) / 2;
    let _ = write!(
        s,
        "<g class=\"hop {}\"><line x1=\"{x0}\" y1=\"{y}\" x2=\"{x1}\" y2=\"{y}\" stroke=\"{}\" stroke-width=\"{}\" marker-end=\"url(#head-{})\"/>",
        look.name(),
        look.color(),
        if matches!(look, HopLook::Clean) { 2 } else { 4 },
        look.name()
    );
    let mut matched = format!("{title}: {} matched", h.matched);
    if h.appeared > 0 {
        let _ = write!(matched, ", {} appeared", h.appeared);
    }
    let lost_fill = if h.lost > 0 {
        "#c62828\" font-weight=\"bold"
    } else {
        "#222"
    };
    let marked_fill = if h.ce_marked + h.dscp_changed + h.pcp_changed > 0 {
        "#ef6c00\" font-weight=\"bold"
    } else {
        "#222"
    };
    let delay = h
        .delay_us
        .p50
        .map_or("delay: nothing matched".into(), |p50| {
            format!(
                "delay p50 {}, p99 {}",
                duration_us(p50),
                duration_us(h.delay_us.p99.unwrap_or(p50))
            )
        });
    for (row, fill, text) in [
        (rows[0], "#444", matched),
        (rows[1], lost_fill, format!("lost {}", h.lost)),
        (rows[2], marked_fill, marks(h)),
        (rows[3], "#222", delay),
    ] {
        let _ = write!(
            s,
            "<text x=\"{mid}\" y=\"{row}\" text-anchor=\"middle\" fill=\"{fill}\">{}</text>",
            esc(&text)
        );
    }
    s.push_str("</g>");
}

/// CE marks and re-marking on a hop, in words.
fn marks(h: &HopReport) -> String {
    let mut m = format!("CE {}", h.ce_marked);
    match (h.dscp_changed, h.pcp_changed) {
        (0, 0) => m.push_str(" · not re-marked"),
        (dscp, 0) => {
            let _ = write!(m, " · DSCP re-marked {dscp}");
        }
        (0, pcp) => {
            let _ = write!(m, " · PCP re-marked {pcp}");
        }
        (dscp, pcp) => {
            let _ = write!(m, " · re-marked DSCP {dscp}, PCP {pcp}");
        }
    }
    m
}

/// `text` cut to `max` characters, with an ellipsis when cut.
fn ellipsis(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let kept: String = text.chars().take(max - 1).collect();
    format!("{kept}…")
}

fn opt(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.1}"))
}

fn points_table(o: &mut String, d: &CorrelationDocument, names: &Names) {
    o.push_str("<h2>Capture points</h2>\n<table><tr><th>#</th><th class=\"l\">point</th><th class=\"l\">file</th><th>RoCE packets</th><th>clock offset (to the first point)</th></tr>\n");
    for (i, p) in d.correlation.points.iter().enumerate() {
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td></tr>",
            i + 1,
            esc(&names.short[i]),
            esc(&p.name),
            p.roce_packets,
            signed_duration_us(p.clock_offset_us)
        );
    }
    o.push_str("</table>\n");
}

fn hops_table(o: &mut String, title: &str, hops: &[HopReport], names: &Names) {
    let _ = writeln!(
        o,
        "<h2>{}</h2>\n<table><tr><th class=\"l\">hop</th><th>matched</th><th>lost</th><th>missed</th><th>appeared</th><th>CE marked</th><th>DSCP re-marked</th><th>PCP re-marked</th><th>delay us min</th><th>p50</th><th>p99</th><th>max</th><th>queueing us p99</th><th>clocks</th></tr>",
        esc(title)
    );
    for h in hops {
        let _ = writeln!(
            o,
            "<tr{}><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            row_class(h.lost, h.ce_marked + h.dscp_changed + h.pcp_changed),
            esc(&names.hop(&h.from, &h.to)),
            h.matched,
            h.lost,
            h.missed,
            h.appeared,
            h.ce_marked,
            h.dscp_changed,
            h.pcp_changed,
            opt(h.delay_us.min),
            opt(h.delay_us.p50),
            opt(h.delay_us.p99),
            opt(h.delay_us.max),
            opt(h.queueing_us.p99),
            h.clock_method
        );
    }
    o.push_str("</table>\n");
}

/// Red rows for loss, amber for CE marks or re-marking.
fn row_class(lost: u64, marked: u64) -> &'static str {
    if lost > 0 {
        " class=\"trouble\""
    } else if marked > 0 {
        " class=\"marked\""
    } else {
        ""
    }
}

fn troubled(f: &CorrelatedFlow) -> bool {
    f.hops
        .iter()
        .any(|h| h.lost + h.ce_marked + h.dscp_changed + h.pcp_changed > 0)
}

/// A row per flow and hop, the flows with loss, CE or re-marking first.
fn flows_table(o: &mut String, flows: &[CorrelatedFlow], names: &Names) {
    let mut order: Vec<&CorrelatedFlow> = flows.iter().collect();
    order.sort_by_key(|f| !troubled(f));
    let _ = writeln!(
        o,
        "<h2>Flows, hop by hop (with loss, CE or re-marking first)</h2>\n<table><tr><th class=\"l\">flow</th><th class=\"l\">hop</th><th>matched</th><th>lost</th><th>CE marked</th><th>DSCP re-marked</th><th>PCP re-marked</th><th>delay p50</th><th class=\"l\">lost frames (at the earlier point)</th></tr>"
    );
    for f in order.iter().take(HTML_FLOWS) {
        let label = FlowLabel {
            src: &f.src,
            dst: &f.dst,
            dqpn: f.dqpn,
            vlan: None,
        };
        let direction = if f.direction == "reverse" {
            " (back)"
        } else {
            ""
        };
        let rows = f.hops.len().max(1);
        for (k, h) in f.hops.iter().enumerate() {
            let first = if k == 0 {
                format!(
                    "<td class=\"l\" rowspan=\"{rows}\">{}{direction}</td>",
                    esc(&label.to_string())
                )
            } else {
                String::new()
            };
            let _ = writeln!(
                o,
                "<tr{}>{first}<td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td></tr>",
                row_class(h.lost, h.ce_marked + h.dscp_changed + h.pcp_changed),
                esc(&names.hop(&h.from, &h.to)),
                h.matched,
                h.lost,
                h.ce_marked,
                h.dscp_changed,
                h.pcp_changed,
                h.delay_p50_us.map_or("-".into(), duration_us),
                esc(&frames_shown(&h.lost_frames))
            );
        }
    }
    o.push_str("</table>\n");
    if flows.len() > HTML_FLOWS {
        let _ = writeln!(
            o,
            "<p>... and {} more flows: correlation.json lists every flow.</p>",
            flows.len() - HTML_FLOWS
        );
    }
}

/// The first ten frame numbers, and how many more.
fn frames_shown(frames: &[u64]) -> String {
    let shown = super::frame_list(&frames[..frames.len().min(10)]);
    if frames.len() > 10 {
        format!("{shown} and {} more", frames.len() - 10)
    } else {
        shown
    }
}
