//! The text report: summary, findings, flows (troubled first), NICs, PFC.

use std::fmt::Write as _;

use crate::common::error::shown;
use crate::common::paint::{AnsiColor, Paint, Style};
use crate::common::units::{duration_us, gbit_rate};
use crate::common::words::plural;
use crate::model::{CaptureReport, Finding, FlowReport, HostReport, Report, Severity};

fn human_bytes(b: u64) -> String {
    let b = b as f64;
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.2} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.1} kB", b / 1e3)
    } else {
        format!("{b} B")
    }
}

/// A count map in a table cell: the key alone when there is one, else `key:count,...`.
pub fn counts(map: &impl crate::model::Counts) -> String {
    let entries = map.entries();
    if entries.is_empty() {
        return "-".into();
    }
    if entries.len() == 1 {
        return entries[0].0.clone();
    }
    entries
        .iter()
        .map(|(k, v)| format!("{k}:{v}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn opt_us(v: Option<f64>) -> String {
    v.map_or("-".into(), duration_us)
}

/// Renders the report as text, within 80 columns wherever words allow; `paint` colours the
/// severities for a terminal (report.txt is plain).
pub fn render(r: &Report, paint: Paint) -> String {
    let mut o = String::new();
    capture_summary(&mut o, &r.capture);
    findings_text(&mut o, &r.findings, paint);
    flows(&mut o, &r.flows);
    nics(&mut o, &r.hosts);
    pfc(&mut o, r);
    o
}

/// How each host's NIC reacted, when one did: a line for it as the receiver of data and one
/// as its sender, each figure named as the HTML table's column.
fn nics(o: &mut String, hosts: &[HostReport]) {
    use super::nics::{cells, ordered, reacted, COLUMNS, ROWS};
    if !hosts.iter().any(reacted) {
        return;
    }
    let _ = writeln!(
        o,
        "\nNICs: how each host reacted (medians; in brackets, how many)"
    );
    let hosts = ordered(hosts);
    for h in hosts.iter().take(ROWS) {
        let c = cells(h);
        let _ = write!(o, "  {}  MAC {}", c[0], c[1]);
        if c[2..].iter().all(|c| c == "-") {
            let _ = writeln!(o, "  (no NAK, CNP or resend to time)");
            continue;
        }
        let _ = writeln!(o);
        for (role, columns) in [("as receiver:", 2..6), ("as sender:  ", 6..13)] {
            if columns.clone().all(|i| c[i] == "-") {
                continue;
            }
            let items = columns.map(|i| format!("{} {}", COLUMNS[i].0, c[i]));
            wrap_items(o, &format!("       {role} "), &" ".repeat(20), items);
        }
    }
    if hosts.len() > ROWS {
        let _ = writeln!(
            o,
            "  ... and {} (the JSON report, --json, lists every host)",
            plural((hosts.len() - ROWS) as u64, "more host")
        );
    }
}

fn capture_summary(o: &mut String, c: &CaptureReport) {
    let _ = writeln!(o, "roce-sniff report: {}", shown(&c.file));
    if let Some(d) = &c.damaged {
        // Before any figure: they leave out what the damage held.
        let line = format!("DAMAGED: {}", super::damage_summary(d));
        wrap_into(o, "  ", "    ", &line);
    }
    let lts: Vec<String> = c.link_types.keys().cloned().collect();
    // A selection says what it kept of what it read.
    let of_read = c.selection.as_ref().map_or(String::new(), |s| {
        format!(" kept of {} read", s.frames_read)
    });
    let read = format!(
        "{} {}, {}{of_read} ({}) over {:.6} s",
        c.format.unwrap_or("?"),
        if lts.is_empty() {
            "-".into()
        } else {
            lts.join(", ")
        },
        plural(c.packets, "frame"),
        human_bytes(c.bytes),
        c.duration_s
    );
    wrap_into(o, "  ", "    ", &read);
    let _ = writeln!(
        o,
        "  {} in {}; PFC {}, PAUSE {}",
        transport_counts(c),
        plural(c.flows as u64, "flow"),
        c.pfc_frames,
        c.pause_frames,
    );
    let integrity = format!(
        "ICRC {} ok, {} bad, {} unchecked; {} malformed, {}",
        c.icrc_ok,
        c.icrc_bad,
        c.icrc_unchecked,
        c.malformed,
        cut_split(c)
    );
    wrap_into(o, "  ", "    ", &integrity);
    if c.missed.psns > 0 {
        // Before any loss figure: what the capture point itself did not see.
        let missed = format!(
            "the capture missed {} of the {} data PSNs of {}: figures are lower bounds (capture_missed)",
            c.missed.psns,
            c.missed.data_psns,
            plural(c.missed.flows, "flow")
        );
        wrap_into(o, "  ", "    ", &missed);
    }
    if c.segments > 1 {
        let segments = format!(
            "{} segments: the capture's time went back, each segment's flows are its own (time_backwards)",
            c.segments
        );
        wrap_into(o, "  ", "    ", &segments);
    }
    if c.unsettled > 0 {
        let unsettled = format!(
            "the capture ended before {} could be judged lost or missed (psn_unsettled)",
            plural(c.unsettled, "skipped PSN")
        );
        wrap_into(o, "  ", "    ", &unsettled);
    }
    if c.live.is_some() && c.flows_ended > 0 {
        // A live capture frees ended flows: say where they went, or the flows listed below
        // (those still open) look like all there were.
        let open = (c.flows as u64).saturating_sub(c.flows_ended);
        wrap_into(
            o,
            "  ",
            "  ",
            &format!(
                "{} ended (idle past --flow-timeout) and {} listed here: --events and the \
                 dataset (--parquet) tell each one as it ends; {} still open at the end",
                plural(c.flows_ended, "flow"),
                if c.flows_ended == 1 {
                    "is not"
                } else {
                    "are not"
                },
                open
            ),
        );
    }
    if let Some(l) = &c.live {
        // The proof that the capture itself lost nothing, shown whatever it says.
        let _ = writeln!(
            o,
            "  kernel: {} received, {} dropped, {} dropped by the interface",
            l.received, l.dropped, l.if_dropped
        );
    }
    for w in &c.warnings {
        wrap_into(o, "  warning: ", "    ", &w.message);
    }
}

/// `0 cut`, or `466 cut: 0 by snap length, 466 by the mirror` (and those whose IP/UDP lengths
/// claim more than a complete record, when there are any).
fn cut_split(c: &CaptureReport) -> String {
    let t = &c.truncated_by;
    if c.truncated == 0 {
        return "0 cut".into();
    }
    let mut s = format!(
        "{} cut: {} by snap length, {} by the mirror",
        c.truncated, t.snaplen, t.mirror
    );
    if t.length_mismatch > 0 {
        s.push_str(&format!(
            ", {} with IP/UDP lengths beyond the frame",
            t.length_mismatch
        ));
    }
    s
}

/// The findings section, as the report and the correlation show it.
pub fn findings_text(o: &mut String, findings: &[Finding], paint: Paint) {
    let crit = findings
        .iter()
        .filter(|f| f.severity == Severity::Critical)
        .count();
    let warn = findings
        .iter()
        .filter(|f| f.severity == Severity::Warning)
        .count();
    let info = findings.len() - crit - warn;
    let _ = writeln!(
        o,
        "\nFindings: {crit} critical, {warn} warning, {info} info"
    );
    if findings.is_empty() {
        let _ = writeln!(o, "  nothing looks wrong");
    }
    // A cause told once: the same code on a flow and on its responses had its paragraph twice.
    let mut told: Vec<(crate::model::FindingCode, &str)> = Vec::new();
    // The severity, then the code and its message; the rest indented under the code.
    const INDENT: &str = "           ";
    for f in findings {
        let severity = f.severity.name().to_uppercase();
        let start = o.len() + 2;
        wrap_into(
            o,
            &format!("  {severity:<8} {}  ", f.code),
            INDENT,
            &f.message,
        );
        paint.at(o, start..start + severity.len(), severity_style(f.severity));
        let cause = if told.contains(&(f.code, f.cause.as_str())) {
            format!("cause: as for the {} above", f.code)
        } else {
            told.push((f.code, f.cause.as_str()));
            format!("cause: {}", f.cause)
        };
        wrap_into(o, INDENT, INDENT, &cause);
        if let Some(g) = &f.group {
            for m in &g.worst {
                wrap_into(o, INDENT, INDENT, &format!("{}: {}", m.flow, m.count));
            }
            if g.flows > g.worst.len() as u64 {
                let more = plural(g.flows - g.worst.len() as u64, "flow");
                let _ = writeln!(o, "{INDENT}and {more} more");
            }
        }
        if !f.frames.is_empty() {
            let frames = super::finding_frames(f);
            wrap_into(o, INDENT, INDENT, &format!("frames: {frames}"));
        }
    }
}

/// Critical in bold red, warning in yellow, info in cyan, as on a terminal.
fn severity_style(s: Severity) -> Style {
    let colour = match s {
        Severity::Critical => AnsiColor::Red,
        Severity::Warning => AnsiColor::Yellow,
        Severity::Info => AnsiColor::Cyan,
    };
    let style = Style::new().fg_color(Some(colour.into()));
    if s == Severity::Critical {
        style.bold()
    } else {
        style
    }
}

/// The RoCE packets, RoCEv1 among them, and native InfiniBand apart: `capture.roce_packets`
/// counts all three, but a native InfiniBand capture holds no RoCE.
fn transport_counts(c: &CaptureReport) -> String {
    let roce = c.roce_packets - c.ib_packets;
    match (roce, c.ib_packets) {
        (0, ib) if ib > 0 => format!("native InfiniBand {ib} (no RoCE)"),
        (roce, 0) => format!("RoCE {roce} ({} RoCEv1)", c.rocev1_packets),
        (roce, ib) => format!(
            "RoCE {roce} ({} RoCEv1), native InfiniBand {ib}",
            c.rocev1_packets
        ),
    }
}

/// Flows listed in the text report; the JSON report has them all.
const TEXT_FLOWS: usize = 50;

/// Three lines per flow, to fit an 80-column terminal: who, how much and its QoS, trouble.
fn flows(o: &mut String, flows: &[FlowReport]) {
    if flows.is_empty() {
        return;
    }
    let _ = writeln!(o, "\nFlows (troubled first)");
    const INDENT: &str = "       ";
    for f in flows.iter().take(TEXT_FLOWS) {
        let who = [
            f.label().to_string(),
            format!("{} {}", f.transport.unwrap_or("-"), f.role),
            format!("MTU {}", mtu_text(f)),
        ];
        wrap_items(o, &format!("  #{:<4}", f.id), INDENT, who.into_iter());
        let mut amount = vec![
            plural(f.packets, "packet"),
            f.rate.gbps.map_or("-".into(), gbit_rate),
        ];
        if f.ack_rtt_us.count > 0 {
            amount.push(format!(
                "RTT p50 {} p99 {}",
                opt_us(f.ack_rtt_us.p50),
                opt_us(f.ack_rtt_us.p99)
            ));
        }
        if f.native_ib {
            amount.push("native InfiniBand (no PCP/DSCP/ECN)".into());
        } else {
            amount.push(format!("PCP {}", counts(&f.pcp)));
            amount.push(format!("DSCP {}", counts(&f.dscp)));
            amount.push(format!("ECN {}", counts(&f.ecn)));
        }
        wrap_items(o, INDENT, INDENT, amount.into_iter());
        let trouble = [
            format!("gaps {}", f.psn.gaps),
            format!("missing {}", f.psn.missing),
            format!("missed {}", f.psn.capture_missed),
        ]
        .into_iter()
        .chain((f.psn.unsettled > 0).then(|| format!("unsettled {}", f.psn.unsettled)))
        .chain([
            format!("retx {}", f.psn.retransmitted),
            format!("dup {}", f.psn.duplicates),
            format!("ooo {}", f.psn.out_of_order),
            format!("NAK {}", f.feedback.naks.total()),
            format!("CE {}", f.feedback.ce),
            format!("CNP {}", f.feedback.cnps),
        ]);
        wrap_items(o, INDENT, INDENT, trouble);
    }
    if flows.len() > TEXT_FLOWS {
        let _ = writeln!(
            o,
            "  ... and {} (the JSON report, --json, lists every flow)",
            plural((flows.len() - TEXT_FLOWS) as u64, "more flow")
        );
    }
}

/// Lines of the text report stay within this width where words allow: an 80-column terminal.
pub const WIDTH: usize = 80;

/// Writes `items` after `head`, two spaces apart, wrapped between items to `WIDTH`,
/// continuation lines starting with `indent`.
pub fn wrap_items(o: &mut String, head: &str, indent: &str, items: impl Iterator<Item = String>) {
    wrap(o, head, indent, items, "  ");
}

/// Writes `text` after `head`, wrapped at word boundaries to `WIDTH`, continuation lines
/// starting with `indent`.
pub fn wrap_into(o: &mut String, head: &str, indent: &str, text: &str) {
    wrap(o, head, indent, text.split(' '), " ");
}

/// Writes `pieces` after `head`, `gap` apart, a new line (starting with `indent`) before a
/// piece that would pass `WIDTH`; a line holds at least one piece.
fn wrap<S: AsRef<str>>(
    o: &mut String,
    head: &str,
    indent: &str,
    pieces: impl Iterator<Item = S>,
    gap: &str,
) {
    let mut line = head.to_string();
    let mut empty = true;
    for piece in pieces {
        let piece = piece.as_ref();
        if !empty && line.chars().count() + gap.len() + piece.chars().count() > WIDTH {
            let _ = writeln!(o, "{line}");
            line = indent.to_string();
            empty = true;
        }
        if !empty {
            line.push_str(gap);
        }
        line.push_str(piece);
        empty = false;
    }
    let _ = writeln!(o, "{line}");
}

/// The path MTU, or what the payloads tell of it: 4096 (the largest) when a 4096-byte payload
/// went by in one packet, else a lower bound.
pub fn mtu_text(f: &FlowReport) -> String {
    match (f.path_mtu, f.path_mtu_at_least) {
        (Some(m), _) => m.to_string(),
        (None, Some(4096)) => "4096".into(),
        (None, Some(m)) => format!("≥{m}"),
        (None, None) => "-".into(),
    }
}

fn pfc(o: &mut String, r: &Report) {
    let p = &r.pfc;
    if !p.priorities.is_empty() || !p.pause_8023x.is_empty() {
        let prios: Vec<String> = p.roce_priorities.iter().map(u8::to_string).collect();
        let _ = writeln!(
            o,
            "\nPFC at {} Gb/s{} (RoCE on priorit{} {})",
            p.link_gbps,
            if p.link_speed_assumed {
                ", assumed: set --link-speed"
            } else {
                ""
            },
            if prios.len() == 1 { "y" } else { "ies" },
            if prios.is_empty() {
                "-".into()
            } else {
                prios.join(", ")
            }
        );
        let _ = writeln!(
            o,
            "  {:>4} {:<17} {:<4} {:>6} {:>5} {:>9} {:>8} {:>8} {:>6}",
            "prio", "source", "RoCE", "XOFF", "XON", "quanta", "paused", "longest", "storms"
        );
        for q in &p.priorities {
            let _ = writeln!(
                o,
                "  {:>4} {:<17} {:<4} {:>6} {:>5} {:>9} {:>8} {:>8} {:>6}",
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
            let t0 = r.capture.first_ts_ns.unwrap_or(0);
            for s in &q.storms {
                let storm = format!(
                    "at +{:.6} s for {}: {} at {:.0}/s ({})",
                    s.start_ns.saturating_sub(t0) as f64 / 1e9,
                    duration_us(s.duration_ms * 1e3),
                    plural(s.frames, "frame"),
                    s.rate_fps,
                    s.kind,
                );
                let from = format!("from frame {}", s.first_frame);
                wrap_items(
                    o,
                    "       storm ",
                    "             ",
                    [storm, from].into_iter(),
                );
            }
        }
        for q in &p.pause_8023x {
            let _ = writeln!(
                o,
                "  {:>4} {:<17} {:<4} {:>6} {:>5} {:>9} {:>8} {:>8} {:>6}",
                "all",
                q.source,
                "802.3x",
                q.frames - q.xon,
                q.xon,
                q.pause_quanta,
                duration_us(q.pause_us),
                duration_us(q.longest_pause_us),
                q.storms.len()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_wraps_under_the_width() {
        let mut o = String::new();
        wrap_into(&mut o, "  head ", "       ", &"word ".repeat(60));
        assert!(o.lines().count() > 2);
        assert!(o.lines().all(|l| l.chars().count() <= WIDTH));
        assert!(o.lines().skip(1).all(|l| l.starts_with("       word")));
    }
}
