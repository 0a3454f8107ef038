//! The text report: summary, findings, flows (troubled first), PFC.

use std::fmt::Write as _;

use crate::error::shown;
use crate::model::{CaptureReport, FlowReport, Report, Severity};

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
pub fn counts<K: std::fmt::Display>(map: &std::collections::BTreeMap<K, u64>) -> String {
    if map.is_empty() {
        return "-".into();
    }
    if map.len() == 1 {
        return map.keys().next().map(K::to_string).unwrap_or_default();
    }
    map.iter()
        .map(|(k, v)| format!("{k}:{v}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn opt_us(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{x:.1}"))
}

/// Renders the report as text for a terminal.
pub fn render(r: &Report) -> String {
    let mut o = String::new();
    capture_summary(&mut o, &r.capture);
    findings(&mut o, r);
    flows(&mut o, &r.flows);
    pfc(&mut o, r);
    o
}

fn capture_summary(o: &mut String, c: &CaptureReport) {
    let _ = writeln!(o, "roce-sniff report: {}", shown(&c.file));
    let lts: Vec<String> = c.link_types.keys().cloned().collect();
    let _ = writeln!(
        o,
        "  {} {}, {} frames ({}) over {:.6} s",
        c.format.unwrap_or("?"),
        if lts.is_empty() {
            "-".into()
        } else {
            lts.join(", ")
        },
        c.packets,
        human_bytes(c.bytes),
        c.duration_s
    );
    let _ = writeln!(
        o,
        "  RoCE {} ({} RoCEv1{}) in {} flows; PFC {}, PAUSE {}; ICRC {} ok, {} bad, {} unchecked; {} malformed, {} cut by snap length",
        c.roce_packets,
        c.rocev1_packets,
        if c.ib_packets > 0 {
            format!(", {} native InfiniBand", c.ib_packets)
        } else {
            String::new()
        },
        c.flows,
        c.pfc_frames,
        c.pause_frames,
        c.icrc_ok,
        c.icrc_bad,
        c.icrc_unchecked,
        c.malformed,
        c.truncated
    );
    for w in &c.warnings {
        let _ = writeln!(o, "  warning: {}", w.message);
    }
}

fn findings(o: &mut String, r: &Report) {
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
    let info = r.findings.len() - crit - warn;
    let _ = writeln!(
        o,
        "\nFindings: {crit} critical, {warn} warning, {info} info"
    );
    if r.findings.is_empty() {
        let _ = writeln!(o, "  nothing looks wrong");
    }
    for f in &r.findings {
        let _ = writeln!(
            o,
            "  {:<8} {:<24} {}",
            f.severity.name().to_uppercase(),
            f.code,
            f.message
        );
        let _ = writeln!(o, "  {:<8} {:<24} cause: {}", "", "", f.cause);
        if !f.frames.is_empty() {
            let frames: Vec<String> = f.frames.iter().map(u64::to_string).collect();
            let _ = writeln!(o, "  {:<8} {:<24} frames: {}", "", "", frames.join(", "));
        }
    }
}

fn flows(o: &mut String, flows: &[FlowReport]) {
    if !flows.is_empty() {
        let _ = writeln!(o, "\nFlows (troubled first)");
        let width = flows
            .iter()
            .map(|f| f.label().len())
            .max()
            .unwrap_or(4)
            .max(4);
        // The QoS columns are as wide as their widest cell, so that mixed values do not shift
        // the columns after them.
        let col = |cell: fn(&FlowReport) -> String, min: usize| {
            flows
                .iter()
                .map(|f| cell(f).len())
                .max()
                .unwrap_or(min)
                .max(min)
        };
        let pw = col(|f| counts(&f.pcp), 8);
        let dw = col(|f| counts(&f.dscp), 4);
        let ew = col(|f| counts(&f.ecn), 7);
        let _ = writeln!(
            o,
            "  {:>3} {:<width$} {:<4} {:<9} {:>8} {:>8} {:>5} {:<pw$} {:<dw$} {:<ew$} {:>5} {:>7} {:>5} {:>4} {:>4} {:>4} {:>6} {:>5} {:>17}",
            "#", "flow", "tr", "role", "packets", "Gb/s", "MTU", "PCP", "DSCP", "ECN", "gaps", "missing", "retx", "dup", "ooo", "NAK", "CE", "CNP", "ACK RTT p50/p99 us"
        );
        for f in flows {
            let rtt = if f.ack_rtt_us.count > 0 {
                format!("{}/{}", opt_us(f.ack_rtt_us.p50), opt_us(f.ack_rtt_us.p99))
            } else {
                "-".into()
            };
            let _ = writeln!(
                o,
                "  {:>3} {:<width$} {:<4} {:<9} {:>8} {:>8.3} {:>5} {:<pw$} {:<dw$} {:<ew$} {:>5} {:>7} {:>5} {:>4} {:>4} {:>4} {:>6} {:>5} {:>17}",
                f.id,
                f.label(),
                f.transport.unwrap_or("-"),
                f.role,
                f.packets,
                f.gbps,
                f.path_mtu.map_or("-".into(), |m| m.to_string()),
                counts(&f.pcp),
                counts(&f.dscp),
                counts(&f.ecn),
                f.psn.gaps,
                f.psn.missing,
                f.psn.retransmitted,
                f.psn.duplicates,
                f.psn.out_of_order,
                f.naks.total(),
                f.ce,
                f.cnps,
                rtt
            );
        }
    }
}

fn pfc(o: &mut String, r: &Report) {
    let p = &r.pfc;
    if !p.priorities.is_empty() || !p.pause_8023x.is_empty() {
        let prios: Vec<String> = p.roce_priorities.iter().map(u8::to_string).collect();
        let _ = writeln!(
            o,
            "\nPFC at {} Gb/s (RoCE on priorit{} {})",
            p.link_gbps,
            if prios.len() == 1 { "y" } else { "ies" },
            if prios.is_empty() {
                "-".into()
            } else {
                prios.join(", ")
            }
        );
        let _ = writeln!(
            o,
            "  {:>4} {:<17} {:<4} {:>7} {:>6} {:>10} {:>12} {:>12} {:>6}",
            "prio", "source", "RoCE", "XOFF", "XON", "quanta", "paused us", "longest us", "storms"
        );
        for q in &p.priorities {
            let _ = writeln!(
                o,
                "  {:>4} {:<17} {:<4} {:>7} {:>6} {:>10} {:>12.1} {:>12.1} {:>6}",
                q.priority,
                q.source,
                if q.roce { "yes" } else { "no" },
                q.xoff,
                q.xon,
                q.pause_quanta,
                q.pause_us,
                q.longest_pause_us,
                q.storms_total
            );
            let t0 = r.capture.first_ts_ns.unwrap_or(0);
            for s in &q.storms {
                let _ = writeln!(
                    o,
                    "       storm at +{:.6} s: {:.1} ms, {} frames, {:.0} frames/s ({}), from frame {}",
                    s.start_ns.saturating_sub(t0) as f64 / 1e9,
                    s.duration_ms,
                    s.frames,
                    s.rate_fps,
                    s.kind,
                    s.first_frame
                );
            }
        }
        for q in &p.pause_8023x {
            let _ = writeln!(
                o,
                "  {:>4} {:<17} {:<4} {:>7} {:>6} {:>10} {:>12.1} {:>12.1} {:>6}",
                "all",
                q.source,
                "802.3x",
                q.frames - q.xon,
                q.xon,
                q.pause_quanta,
                q.pause_us,
                q.longest_pause_us,
                q.storms.len()
            );
        }
    }
}
