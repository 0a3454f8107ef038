//! The text view of `--correlate`: the points and their clocks, a table per direction of what
//! each hop did, the flows that lost packets, and the findings.

use std::fmt::Write as _;

use super::text::wrap_items;
use crate::common::paint::Paint;
use crate::common::units::{duration_us, signed_duration_us};
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

/// Each point's shortest path suffix that tells the points apart: the file name where that
/// is unique, else as many trailing directories as it takes (the whole name at most).
pub fn short_names(names: &[String]) -> Vec<String> {
    let parts: Vec<Vec<&str>> = names
        .iter()
        .map(|n| n.trim_end_matches('/').split('/').collect())
        .collect();
    let longest = parts.iter().map(Vec::len).max().unwrap_or(0);
    for k in 1..=longest {
        let short: Vec<String> = parts
            .iter()
            .map(|p| p[p.len().saturating_sub(k)..].join("/"))
            .collect();
        let distinct: std::collections::HashSet<&String> = short.iter().collect();
        if distinct.len() == names.len() {
            return short;
        }
    }
    names.to_vec()
}

/// The short name of point `full`.
fn short<'a>(names: &'a [(String, String)], full: &'a str) -> &'a str {
    names
        .iter()
        .find(|(f, _)| f == full)
        .map_or(full, |(_, s)| s.as_str())
}

/// What each hop did, then its delays: two tables, so that both fit 80 columns.
fn hop_table(o: &mut String, title: &str, hops: &[HopReport], names: &[(String, String)]) {
    let _ = writeln!(o, "\n{title}");
    let labels: Vec<String> = hops
        .iter()
        .map(|h| format!("{} > {}", short(names, &h.from), short(names, &h.to)))
        .collect();
    let w = labels
        .iter()
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0)
        .max(3);
    let _ = writeln!(
        o,
        "  {:<w$} {:>7} {:>5} {:>6} {:>8} {:>5} {:>5} {:>4}",
        "hop", "matched", "lost", "missed", "appeared", "CE", "DSCP", "PCP"
    );
    for (h, label) in hops.iter().zip(&labels) {
        let _ = writeln!(
            o,
            "  {:<w$} {:>7} {:>5} {:>6} {:>8} {:>5} {:>5} {:>4}",
            label,
            h.matched,
            h.lost,
            h.missed,
            h.appeared,
            h.ce_marked,
            h.dscp_changed,
            h.pcp_changed,
        );
    }
    let _ = writeln!(
        o,
        "  {:<w$} {:<24} {:>9}  clocks",
        "", "delay us min/p50/p99/max", "queue p99"
    );
    for (h, label) in hops.iter().zip(&labels) {
        let _ = writeln!(
            o,
            "  {:<w$} {:<24} {:>9}  {}",
            label,
            delays(&h.delay_us),
            opt(h.queueing_us.p99),
            h.clock_method
        );
    }
}

pub fn render(doc: &CorrelationDocument, paint: Paint) -> String {
    let c = &doc.correlation;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "roce-sniff correlation: {} capture points",
        c.points.len()
    );
    let full: Vec<String> = c.points.iter().map(|p| p.name.clone()).collect();
    let names: Vec<(String, String)> = full.iter().cloned().zip(short_names(&full)).collect();
    let w = names
        .iter()
        .map(|(_, s)| s.chars().count())
        .max()
        .unwrap_or(0)
        .max(5);
    // The file read for each point, where its short name is not all of it.
    let _ = writeln!(
        o,
        "  {:<w$} {:>12} {:>13}  file",
        "point", "RoCE packets", "clock offset"
    );
    for (p, (full, short)) in c.points.iter().zip(&names) {
        let head = format!(
            "  {:<w$} {:>12} {:>13}  ",
            short,
            p.roce_packets,
            signed_duration_us(p.clock_offset_us)
        );
        if full == short {
            let _ = writeln!(o, "{}", head.trim_end());
        } else if head.chars().count() + full.chars().count() <= super::text::WIDTH {
            let _ = writeln!(o, "{head}{full}");
        } else {
            let _ = writeln!(o, "{}\n    {full}", head.trim_end());
        }
    }
    hop_table(&mut o, "Hops, data direction (requests)", &c.hops, &names);
    hop_table(
        &mut o,
        "Hops, back (ACKs, NAKs, CNPs, READ responses)",
        &c.reverse_hops,
        &names,
    );
    let troubled: Vec<_> = c
        .flows
        .iter()
        .filter(|f| {
            f.hops
                .iter()
                .any(|h| h.lost + h.missed + h.ce_marked + h.dscp_changed > 0)
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
            let back = if f.direction == "reverse" {
                " (back)"
            } else {
                ""
            };
            let _ = writeln!(o, "  {label}{back}");
            for h in &f.hops {
                let items = [
                    format!("{} > {}:", short(&names, &h.from), short(&names, &h.to)),
                    format!("matched {}", h.matched),
                    format!("lost {}", h.lost),
                    format!("missed {}", h.missed),
                    format!("CE {}", h.ce_marked),
                    format!("DSCP changed {}", h.dscp_changed),
                    format!(
                        "delay p50 {}",
                        h.delay_p50_us.map_or("-".into(), duration_us)
                    ),
                ];
                wrap_items(&mut o, "    ", "      ", items.into_iter());
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
    super::text::findings_text(&mut o, &doc.findings, paint);
    o
}

#[cfg(test)]
mod tests {
    use super::short_names;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn points_are_named_by_the_shortest_suffix_that_tells_them_apart() {
        assert_eq!(
            short_names(&names(&["/data/a/leaf.pcap", "/data/b/spine.pcap"])),
            names(&["leaf.pcap", "spine.pcap"])
        );
        assert_eq!(
            short_names(&names(&["/x/leaf/cap.pcap", "/x/spine/cap.pcap"])),
            names(&["leaf/cap.pcap", "spine/cap.pcap"])
        );
        // A rotated set's directory (trailing slash), and the same name twice stays whole.
        assert_eq!(
            short_names(&names(&["/c/leaf/", "/c/spine/"])),
            names(&["leaf", "spine"])
        );
        assert_eq!(
            short_names(&names(&["cap.pcap", "cap.pcap"])),
            names(&["cap.pcap", "cap.pcap"])
        );
    }
}
