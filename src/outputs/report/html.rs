//! index.html: the summary, the findings, the plots (inline SVG) and the flows and PFC tables,
//! in one self-contained page that opens offline (no scripts, no external assets).

use std::fmt::Write as _;

use super::plots::{css_color, flow_color, Rendered};
use crate::common::units::{duration_ns, duration_us, gbit_rate};
use crate::model::{
    CaptureReport, Finding, FlowRole, PfcReport, PlotData, PlotKind, PriorityReport, Report,
    Severity,
};

/// Text made safe inside HTML elements and attributes.
pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// How to read each plot, in one or two sentences.
fn caption(kind: PlotKind) -> &'static str {
    match kind {
        PlotKind::Throughput => "Wire throughput of the busiest data flows (the rest summed in grey). A flow that drops to zero while others go on was stalled: look for its gaps, retransmissions or pauses at the same time below.",
        PlotKind::Psn => "A panel per QP (the busiest), its request sequence advancing on a scale of its own, so that QPs progressing alike do not hide each other. A red x under the line marks a PSN gap (packets lost before the capture point, or that the capture missed: the findings say which), an orange triangle over it a retransmission; a dip in the line is the requester going back (go-back-N).",
        PlotKind::EcnCnp => "A lane per flow, in its color: circles (upper half) are bins where a switch marked its packets CE (congestion experienced), triangles (lower half) bins where its receiver sent CNPs back so that the sender slows down. Circles without triangles under them mean congestion control is not reacting for that flow.",
        PlotKind::Pfc => "One row per priority and sender of pause frames; bars are the time that priority was paused on this link, as dark as the share of the time paused (pauses taking turns with others show pale), red on priorities that carry RoCE. An amber band is a storm: the priority paused for a long stretch or flooded with pause frames.",
        PlotKind::AckRtt => "Distribution of the time from a request asking for an ACK to the ACK that covers it, over all QPs. A long tail means queues built up or retransmissions.",
    }
}

pub(crate) fn severity_class(s: Severity) -> &'static str {
    match s {
        Severity::Critical => "crit",
        Severity::Warning => "warn",
        Severity::Info => "info",
    }
}

fn counts(map: &impl crate::model::Counts) -> String {
    map.entries()
        .iter()
        .map(|(k, v)| format!("{k}:{v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The same, one count a line: the flows table fits the page instead of scrolling sideways.
fn counts_lines(map: &impl crate::model::Counts) -> String {
    map.entries()
        .iter()
        .map(|(k, v)| format!("{k}:{v}"))
        .collect::<Vec<_>>()
        .join("<br>")
}

/// The self-contained page: summary cards, findings, the plots inline, flows and PFC tables.
pub fn render(r: &Report, d: &PlotData, plots: &[Rendered]) -> String {
    let mut o = String::new();
    head(&mut o, &r.capture, d);
    cards(&mut o, r);
    findings(&mut o, &r.findings, "Nothing looks wrong in this capture.");
    o.push_str("<h2>Over time</h2>\n");
    for p in plots {
        if let Some(text) = super::plots::empty(p.kind, d) {
            // A sentence, not a 480-pixel plot that says the same.
            let _ = writeln!(
                o,
                "<div class=\"plot empty\" id=\"{}\"><b>{}</b>: {}</div>",
                p.kind.name(),
                esc(p.kind.title()),
                esc(text)
            );
            continue;
        }
        let _ = writeln!(
            o,
            "<div class=\"plot\" id=\"{name}\">{svg}<p>{caption} <a href=\"{name}.png\">PNG</a> &middot; <a href=\"{name}.svg\">SVG</a></p></div>",
            name = p.kind.name(),
            svg = strip_xml_header(&p.svg),
            caption = esc(caption(p.kind)),
        );
    }
    verification(&mut o, r);
    flows(&mut o, r);
    nics(&mut o, r);
    pfc(&mut o, r);
    o.push_str("<h2>Files</h2>\n<p><a href=\"report.json\">report.json</a> (the full report, described in docs/json.md) &middot; <a href=\"report.txt\">report.txt</a> &middot; <a href=\"timeline.csv\">timeline.csv</a> and <a href=\"timeline.json\">timeline.json</a> (per flow and bin) &middot; <a href=\"pfc_timeline.csv\">pfc_timeline.csv</a> (pause time per priority and bin)</p>\n</body></html>\n");
    o
}

/// The document head, the style sheet and the title lines.
fn head(o: &mut String, c: &CaptureReport, d: &PlotData) {
    let _ = write!(
        o,
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>roce-sniff report: {file}</title>
<style>{STYLE}</style></head><body>
<h1>roce-sniff report</h1>
<div class="sub">{file} &middot; {format} &middot; {packets} frames over {dur:.6} s &middot; bins of {bin}</div>
"#,
        file = esc(&c.file),
        format = c.format.unwrap_or("?"),
        packets = c.packets,
        dur = c.duration_s,
        bin = duration_ns(d.bin_ns),
    );
    if let Some(d) = &c.damaged {
        let _ = writeln!(
            o,
            "<div class=\"finding crit\"><span class=\"sev\">damaged</span>{}</div>",
            esc(&super::damage_summary(d))
        );
    }
}

/// The style sheet of every page roce-sniff writes (the report and the correlation page).
pub(crate) const STYLE: &str = r#"
body { font-family: "DejaVu Sans", Arial, sans-serif; margin: 24px; color: #222; background: #fafafa; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 2px solid #ddd; padding-bottom: 4px; }
.sub { color: #666; margin-bottom: 16px; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; }
.card { background: white; border: 1px solid #ddd; border-radius: 6px; padding: 10px 16px; min-width: 120px; }
.card b { display: block; font-size: 22px; }
.card.bad b { color: #c62828; }
.finding { background: white; border-left: 6px solid #999; padding: 8px 12px; margin: 8px 0; border-radius: 4px; }
.finding.crit { border-color: #c62828; } .finding.warn { border-color: #ef6c00; } .finding.info { border-color: #1565c0; }
.sev { font-weight: bold; text-transform: uppercase; font-size: 12px; margin-right: 8px; }
.crit .sev { color: #c62828; } .warn .sev { color: #ef6c00; } .info .sev { color: #1565c0; }
.cause { color: #555; font-size: 14px; margin-top: 4px; }
.frames { color: #777; font-size: 13px; }
.plot { background: white; border: 1px solid #ddd; border-radius: 6px; padding: 8px; margin: 12px 0; overflow-x: auto; }
.plot svg { width: 100%; min-width: 800px; height: auto; }
.plot p { margin: 4px 8px; color: #444; font-size: 14px; }
.plot.empty { padding: 10px 16px; color: #555; }
table { border-collapse: collapse; background: white; font-size: 13px; }
.wide { overflow-x: auto; max-width: 100%; }
th, td { border: 1px solid #ddd; padding: 4px 6px; text-align: right; white-space: nowrap; }
th { white-space: normal; }
td.l { white-space: normal; min-width: 12em; max-width: 22em; }
th { background: #f0f0f0; } td.l { text-align: left; }
tr.trouble td { background: #fff3f3; }
tr.marked td { background: #fff8e1; }
th.l { text-align: left; }
td.na { text-align: center; color: #777; white-space: normal; }
.sw { display: inline-block; width: 12px; height: 12px; border-radius: 2px; margin-right: 6px; vertical-align: middle; }
"#;

/// The numbers a reader looks at first, red when something is wrong; then the capture's
/// warnings.
fn cards(o: &mut String, r: &Report) {
    let c = &r.capture;
    let crit = r
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Critical)
        .count();
    let warn = r
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Warning)
        .count();
    let lost: u64 = r
        .flows
        .iter()
        .map(|f| f.psn.missing + f.psn.recovered)
        .sum();
    let ce: u64 = r.flows.iter().map(|f| f.feedback.ce).sum();
    let mut cards: Vec<(String, String, bool)> = vec![
        // Native InfiniBand frames are counted with RoCE's in the JSON; a card of their own.
        (
            "RoCE frames".into(),
            (c.roce_packets - c.ib_packets).to_string(),
            false,
        ),
        ("flows".into(), c.flows.to_string(), false),
        ("critical findings".into(), crit.to_string(), crit > 0),
        ("warnings".into(), warn.to_string(), warn > 0),
        ("PSNs lost".into(), lost.to_string(), lost > 0),
        ("CE marks".into(), ce.to_string(), ce > 0),
    ];
    if c.missed.psns > 0 {
        // Beside the loss: what the capture point itself did not see.
        cards.push((
            "PSNs the capture missed".into(),
            c.missed.psns.to_string(),
            true,
        ));
    }
    if c.ib_packets > 0 {
        cards.insert(
            1,
            (
                "native InfiniBand frames".into(),
                c.ib_packets.to_string(),
                false,
            ),
        );
        if c.roce_packets == c.ib_packets {
            cards.remove(0);
        }
    }
    cards.extend(pause_cards(&r.pfc));
    cards.push(("bad ICRC".into(), c.icrc_bad.to_string(), c.icrc_bad > 0));
    card_row(o, &cards);
    for w in &c.warnings {
        let _ = writeln!(
            o,
            "<div class=\"finding warn\"><span class=\"sev\">capture</span>{}</div>",
            esc(&w.message)
        );
    }
}

/// A row of cards: (label, value, red).
pub(crate) fn card_row(o: &mut String, cards: &[(String, String, bool)]) {
    o.push_str("<div class=\"cards\">");
    for (label, value, bad) in cards {
        let _ = write!(
            o,
            "<div class=\"card{}\"><b>{value}</b>{label}</div>",
            if *bad { " bad" } else { "" }
        );
    }
    o.push_str("</div>\n");
}

/// The time RoCE was paused (its priorities' PFC pauses, and 802.3x PAUSE, which stops every
/// priority), red when any; the other priorities' pauses apart, when there are any: a
/// storm on a priority without RoCE is no pause of RoCE.
fn pause_cards(p: &PfcReport) -> Vec<(String, String, bool)> {
    let priorities = |roce: bool| -> Vec<&PriorityReport> {
        p.priorities.iter().filter(|q| q.roce == roce).collect()
    };
    // Folds from +0.0: an empty f64 sum is -0.0, which printed as "-0.0".
    let us = |qs: &[&PriorityReport]| qs.iter().fold(0.0, |a, q| a + q.pause_us);
    let names = |qs: &[&PriorityReport]| {
        let mut v: Vec<u8> = qs.iter().map(|q| q.priority).collect();
        v.dedup();
        v.iter()
            .map(|n| format!("p{n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (roce, other) = (priorities(true), priorities(false));
    let pause_8023x_us = p.pause_8023x.iter().fold(0.0, |a, q| a + q.pause_us);
    let roce_us = us(&roce) + pause_8023x_us;
    let mut on = names(&roce);
    if pause_8023x_us > 0.0 {
        on = if on.is_empty() {
            "802.3x".into()
        } else {
            format!("{on}, 802.3x")
        };
    }
    let label = if on.is_empty() {
        "RoCE paused".to_string()
    } else {
        format!("RoCE paused ({on})")
    };
    let mut cards = vec![(label, duration_us(roce_us), roce_us > 0.0)];
    if !other.is_empty() {
        cards.push((
            format!("other priorities paused ({})", names(&other)),
            duration_us(us(&other)),
            false,
        ));
    }
    cards
}

/// The findings as blocks, worst first as given; `nothing` when there are none.
pub(crate) fn findings(o: &mut String, list: &[Finding], nothing: &str) {
    o.push_str("<h2>What looks wrong</h2>\n");
    if list.is_empty() {
        let _ = writeln!(o, "<p>{}</p>", esc(nothing));
    }
    for f in list {
        let frames = if f.frames.is_empty() && f.frame_refs.is_empty() {
            String::new()
        } else {
            format!(
                "<div class=\"frames\">first frames: {}</div>",
                esc(&super::finding_frames(f))
            )
        };
        let _ = writeln!(
            o,
            "<div class=\"finding {}\"><span class=\"sev\">{}</span><code>{}</code> {}<div class=\"cause\">Likely cause: {}</div>{frames}</div>",
            severity_class(f.severity),
            f.severity.name(),
            f.code,
            esc(&f.message),
            esc(&f.cause)
        );
    }
}

/// With --expect-*: the verdict and the flows that do not match.
fn verification(o: &mut String, r: &Report) {
    let Some(v) = &r.verify else { return };
    let class = if v.passed { "info" } else { "crit" };
    let _ = writeln!(
        o,
        "<h2>Verification</h2>\n<div class=\"finding {class}\"><span class=\"sev\">verification</span>{}<div class=\"cause\">Expected on every RoCE frame: {}</div></div>",
        esc(&super::verify::verdict_line(v)),
        esc(&super::verify::expectations(&v.expectations))
    );
    for u in &v.unverifiable {
        let _ = writeln!(
            o,
            "<p>Cannot verify {}: {}</p>",
            u.field.name().to_uppercase(),
            esc(&u.reason)
        );
    }
    if let Some(d) = v
        .damaged
        .as_ref()
        .filter(|_| !super::verify::verdict_names_damage(v))
    {
        let _ = writeln!(o, "<p>Cannot verify every frame: {}</p>", esc(d));
    }
    o.push_str("<table><tr><th>flow</th><th>kind</th><th>checked</th><th>violating</th><th>DSCP</th><th>PCP</th><th>VLAN</th><th>ECN</th><th>first violating frames</th></tr>\n");
    for f in &v.flows {
        let frames = super::frame_list(&f.first_violating_frames);
        let _ = writeln!(
            o,
            "<tr{}><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            if f.violating > 0 { " class=\"trouble\"" } else { "" },
            esc(&f.flow),
            f.kind,
            f.checked,
            f.violating,
            counts(&f.seen["dscp"]),
            counts(&f.seen["pcp"]),
            counts(&f.seen["vlan"]),
            counts(&f.seen["ecn"]),
            frames
        );
    }
    o.push_str("</table>\n");
}

fn flows(o: &mut String, r: &Report) {
    o.push_str("<h2>Flows (troubled first)</h2>\n<div class=\"wide\"><table><tr><th>#</th><th>flow</th><th>transport</th><th>role</th><th>packets</th><th>rate</th><th>MTU</th><th>PCP</th><th>DSCP</th><th>ECN</th><th>gaps</th><th>missing</th><th>retx</th><th>dup</th><th>ooo</th><th>NAKs</th><th>CE</th><th>CNPs</th><th>ACK RTT p50 / p99 us</th></tr>\n");
    for f in r.flows.iter().take(HTML_FLOWS) {
        let trouble = f.psn.gaps + f.psn.retransmitted + f.feedback.naks.total() + f.icrc_bad > 0
            || (f.feedback.ce > 0 && f.feedback.cnps == 0 && f.role == FlowRole::Data);
        let name = esc(&f.label());
        let rtt = match (f.ack_rtt_us.p50, f.ack_rtt_us.p99) {
            (Some(a), Some(b)) => format!("{a:.1} / {b:.1}"),
            _ => "-".into(),
        };
        // No VLAN tag or IP header on a native InfiniBand frame: one cell says so.
        let qos = if f.native_ib {
            "<td colspan=\"3\" class=\"na\">native InfiniBand: no PCP, DSCP or ECN</td>".to_string()
        } else {
            format!(
                "<td>{}</td><td>{}</td><td>{}</td>",
                counts_lines(&f.pcp),
                counts_lines(&f.dscp),
                counts_lines(&f.ecn)
            )
        };
        let _ = writeln!(
            o,
            "<tr{}><td>{}</td><td class=\"l\"><span class=\"sw\" style=\"background:{}\"></span>{name}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>{qos}<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{rtt}</td></tr>",
            if trouble { " class=\"trouble\"" } else { "" },
            f.id,
            css_color(flow_color(f.id)),
            f.transport.unwrap_or("-"),
            f.role,
            f.packets,
            f.rate.gbps.map_or("-".into(), gbit_rate),
            super::text::mtu_text(f),
            f.psn.gaps,
            f.psn.missing,
            f.psn.retransmitted,
            f.psn.duplicates,
            f.psn.out_of_order,
            f.feedback.naks.total(),
            f.feedback.ce,
            f.feedback.cnps,
        );
    }
    o.push_str("</table></div>\n");
    if r.flows.len() > HTML_FLOWS {
        let _ = writeln!(
            o,
            "<p>... and {} more flows: report.json lists every flow.</p>",
            r.flows.len() - HTML_FLOWS
        );
    }
}

/// How each host's NIC reacted, when one did: the text report's figures, one column each.
fn nics(o: &mut String, r: &Report) {
    use super::nics::{cells, ordered, reacted, COLUMNS, ROWS};
    if !r.hosts.iter().any(reacted) {
        return;
    }
    o.push_str("<h2>NICs</h2>\n<p>How each host reacted to loss and congestion: the median of each timing; in brackets, how many.</p>\n<div class=\"wide\"><table><tr>");
    for (i, (name, what)) in COLUMNS.iter().enumerate() {
        let class = if i < 2 { " class=\"l\"" } else { "" };
        let _ = write!(o, "<th{class} title=\"{}\">{}</th>", esc(what), esc(name));
    }
    o.push_str("</tr>\n");
    let hosts = ordered(&r.hosts);
    for h in hosts.iter().take(ROWS) {
        o.push_str(if reacted(h) {
            "<tr class=\"trouble\">"
        } else {
            "<tr>"
        });
        for (i, cell) in cells(h).iter().enumerate() {
            let class = if i < 2 { " class=\"l\"" } else { "" };
            let _ = write!(o, "<td{class}>{}</td>", esc(cell));
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</table></div>\n");
    if hosts.len() > ROWS {
        let _ = writeln!(
            o,
            "<p>... and {} more hosts: report.json lists every host.</p>",
            hosts.len() - ROWS
        );
    }
}

/// Flows listed on the page; report.json has them all.
const HTML_FLOWS: usize = 200;

fn pfc(o: &mut String, r: &Report) {
    let p = &r.pfc;
    if !p.priorities.is_empty() || !p.pause_8023x.is_empty() {
        let _ = writeln!(
            o,
            "<h2>PFC at {} Gb/s{}</h2>\n<table><tr><th>priority</th><th>source</th><th>RoCE</th><th>XOFF</th><th>XON</th><th>quanta</th><th>paused</th><th>longest</th><th>storms</th></tr>",
            p.link_gbps,
            if p.link_speed_assumed {
                " (assumed: set --link-speed)"
            } else {
                ""
            }
        );
        for q in &p.priorities {
            let _ = writeln!(
                o,
                "<tr{}><td>{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                if q.storms_total > 0 || (q.roce && q.xoff > 0) { " class=\"trouble\"" } else { "" },
                q.priority,
                q.source,
                if q.roce { "yes" } else { "no" },
                q.xoff,
                q.xon,
                q.pause_quanta,
                duration_us(q.pause_us),
                duration_us(q.longest_pause_us),
                q.storms_total
            );
        }
        for q in &p.pause_8023x {
            let _ = writeln!(
                o,
                "<tr class=\"trouble\"><td>802.3x (all)</td><td class=\"l\">{}</td><td>-</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                q.source,
                q.frames - q.xon,
                q.xon,
                q.pause_quanta,
                duration_us(q.pause_us),
                duration_us(q.longest_pause_us),
                q.storms.len()
            );
        }
        o.push_str("</table>\n");
    }
}

/// Inline SVG must not carry an XML declaration.
pub(crate) fn strip_xml_header(svg: &str) -> &str {
    match svg.find("<svg") {
        Some(i) => &svg[i..],
        None => svg,
    }
}
