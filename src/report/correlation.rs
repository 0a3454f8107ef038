//! The text view of `--correlate`: the points and their clocks, a table per direction of what
//! each hop did, the flows that lost packets, and the findings.

use std::fmt::Write as _;

use crate::model::{CorrelationDocument, DelayStats, FlowLabel, HopReport};

/// Flows listed in the text; the JSON has them all.
const TEXT_FLOWS: usize = 20;

fn opt(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.1}"))
}

fn delays(d: &DelayStats) -> String {
    format!(
        "{}/{}/{}/{}",
        opt(d.min),
        opt(d.p50),
        opt(d.p99),
        opt(d.max)
    )
}

fn hop_table(o: &mut String, title: &str, hops: &[HopReport]) {
    let _ = writeln!(o, "\n{title}");
    let _ = writeln!(
        o,
        "  {:<32} {:>8} {:>6} {:>8} {:>6} {:>6} {:>5}  {:<28} {:>10}  clocks",
        "hop",
        "matched",
        "lost",
        "appeared",
        "CE",
        "DSCP",
        "PCP",
        "delay us min/p50/p99/max",
        "queue p99"
    );
    for h in hops {
        let _ = writeln!(
            o,
            "  {:<32} {:>8} {:>6} {:>8} {:>6} {:>6} {:>5}  {:<28} {:>10}  {}",
            format!("{} > {}", h.from, h.to),
            h.matched,
            h.lost,
            h.appeared,
            h.ce_marked,
            h.dscp_changed,
            h.pcp_changed,
            delays(&h.delay_us),
            opt(h.queueing_us.p99),
            h.clock_method
        );
    }
}

pub fn render(doc: &CorrelationDocument) -> String {
    let c = &doc.correlation;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "roce-sniff correlation: {} capture points",
        c.points.len()
    );
    let _ = writeln!(
        o,
        "  {:<40} {:>12} {:>16}",
        "point", "RoCE packets", "clock offset us"
    );
    for p in &c.points {
        let _ = writeln!(
            o,
            "  {:<40} {:>12} {:>16.1}",
            p.name, p.roce_packets, p.clock_offset_us
        );
    }
    hop_table(&mut o, "Hops, data direction (requests)", &c.hops);
    hop_table(
        &mut o,
        "Hops, back (ACKs, NAKs, CNPs, READ responses)",
        &c.reverse_hops,
    );
    let troubled: Vec<_> = c
        .flows
        .iter()
        .filter(|f| {
            f.hops
                .iter()
                .any(|h| h.lost + h.ce_marked + h.dscp_changed > 0)
        })
        .collect();
    if !troubled.is_empty() {
        let _ = writeln!(o, "\nFlows with loss, CE or re-marking");
        for f in troubled.iter().take(TEXT_FLOWS) {
            let label = FlowLabel {
                src: &f.src,
                dst: &f.dst,
                dqpn: f.dqpn,
                vlan: None,
            };
            let _ = writeln!(o, "  {label}");
            for h in &f.hops {
                let _ = writeln!(
                    o,
                    "    {} > {}: matched {} lost {} CE {} DSCP changed {} delay p50 {} us",
                    h.from,
                    h.to,
                    h.matched,
                    h.lost,
                    h.ce_marked,
                    h.dscp_changed,
                    opt(h.delay_p50_us)
                );
            }
        }
        if troubled.len() > TEXT_FLOWS {
            let _ = writeln!(
                o,
                "  and {} more (--json lists them all)",
                troubled.len() - TEXT_FLOWS
            );
        }
    }
    super::text::findings_text(&mut o, &doc.findings);
    o
}
