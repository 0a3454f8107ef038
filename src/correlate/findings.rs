//! Findings of a correlation: where packets were lost, where CE was set, where the marking
//! was rewritten.

use crate::common::words::plural;
use crate::model::{
    CorrelatedFlow, CorrelationReport, Finding, FindingCode, FindingGroup, FlowHop, FlowLabel,
    GroupMember, HopReport, Severity,
};

/// Frames listed with a finding.
const FRAMES_SHOWN: usize = 5;

fn finding(severity: Severity, code: FindingCode, message: String, cause: &str) -> Finding {
    Finding {
        severity,
        code,
        message,
        cause: cause.to_string(),
        flow: None,
        count: 0,
        frames: Vec::new(),
        frame_refs: Vec::new(),
        group: None,
        grouped_flows: Vec::new(),
    }
}

/// Every finding, most severe first.
pub fn find(r: &CorrelationReport) -> Vec<Finding> {
    let mut out = Vec::new();
    // Loss of the reverse flows is told per hop below (one finding for what travels back).
    for f in r.flows.iter().filter(|f| f.direction == "forward") {
        let label = flow_label(f);
        for h in f.hops.iter().filter(|h| h.lost > 0) {
            out.push(Finding {
                flow: Some(label.clone()),
                count: h.lost,
                frames: h.lost_frames.iter().take(FRAMES_SHOWN).copied().collect(),
                ..finding(
                    Severity::Critical,
                    FindingCode::LossLocated,
                    format!(
                        "{} of {label} lost between {} and {} ({} arrived)",
                        plural(h.lost, "packet"),
                        h.from,
                        h.to,
                        h.matched
                    ),
                    "this hop dropped them: a full buffer or a link with errors between the two capture points (or the capture at the later point missed them: check its drops); frames are those of the earlier point",
                )
            });
        }
    }
    // What a later point's capture missed: the receiver acknowledged it.
    for f in r.flows.iter().filter(|f| f.direction == "forward") {
        let label = flow_label(f);
        for h in f.hops.iter().filter(|h| h.missed > 0) {
            out.push(Finding {
                flow: Some(label.clone()),
                count: h.missed,
                ..finding(
                    Severity::Warning,
                    FindingCode::CaptureMissed,
                    format!(
                        "{} of {label} seen at {} and never at {}, though the receiver acknowledged them: the capture at {} missed them (not lost on the hop)",
                        plural(h.missed, "packet"),
                        h.from,
                        h.to,
                        h.to
                    ),
                    "the capture point did not see every packet the network delivered: its kernel buffer (-B, --capture-thread), an oversubscribed mirror session, or packets sprayed around it; the hop's figures are lower bounds",
                )
            });
        }
    }
    for h in &r.reverse_hops {
        if h.lost > 0 {
            out.push(Finding {
                count: h.lost,
                frames: h.lost_frames.iter().take(FRAMES_SHOWN).copied().collect(),
                ..finding(
                    Severity::Warning,
                    FindingCode::LossLocated,
                    format!(
                        "{} travelling back (ACKs, NAKs, CNPs, READ responses) lost between {} and {}",
                        plural(h.lost, "packet"),
                        h.from,
                        h.to
                    ),
                    "the hop dropped packets of the reverse direction: lost ACKs cost timeouts, lost CNPs leave senders at full rate",
                )
            });
        }
    }
    for (h, direction) in r
        .hops
        .iter()
        .map(|h| (h, "forward"))
        .chain(r.reverse_hops.iter().map(|h| (h, "reverse")))
    {
        let flows: Vec<(&CorrelatedFlow, &FlowHop)> = r
            .flows
            .iter()
            .filter(|f| f.direction == direction)
            .filter_map(|f| {
                f.hops
                    .iter()
                    .find(|fh| fh.from == h.from && fh.to == h.to)
                    .map(|fh| (f, fh))
            })
            .collect();
        hop_marking(h, &flows, &mut out);
    }
    for h in &r.hops {
        out_of_order(h, &mut out);
    }
    out.sort_by(|a, b| a.severity.cmp(&b.severity).then(b.count.cmp(&a.count)));
    out
}

/// A hop whose minimum delay comes out below zero once the clocks are lined up: packets
/// reached the later point before the earlier one, so the points are not in path order.
const NEGATIVE_DELAY_US: f64 = -1.0;

fn out_of_order(h: &HopReport, out: &mut Vec<Finding>) {
    let Some(min) = h.delay_us.min.filter(|&m| m < NEGATIVE_DELAY_US) else {
        return;
    };
    out.push(Finding {
        count: h.matched,
        ..finding(
            Severity::Warning,
            FindingCode::PointsOutOfOrder,
            format!(
                "requests reach {} before {} (minimum delay {min:.1} us): these points are not in path order",
                h.to, h.from
            ),
            "give the captures in path order, from the data sender towards the receiver (-r sender-side ... -r receiver-side); the delays, offsets and where loss happened are read the wrong way round until then",
        )
    });
}

fn flow_label(f: &CorrelatedFlow) -> String {
    FlowLabel {
        src: &f.src,
        dst: &f.dst,
        dqpn: f.dqpn,
        vlan: None,
    }
    .to_string()
}

/// Flows listed in full in a hop's finding, as grouped findings list them.
const WORST_FLOWS: usize = 5;

/// The flows of `flows` whose count on the hop (`count` of its `FlowHop`) is above zero, as
/// a group: how many, and the worst 5 with their count.
fn flows_group(
    flows: &[(&CorrelatedFlow, &FlowHop)],
    count: impl Fn(&FlowHop) -> u64,
    what: &str,
) -> FindingGroup {
    let mut hit: Vec<(u64, &CorrelatedFlow)> = flows
        .iter()
        .map(|&(f, h)| (count(h), f))
        .filter(|&(n, _)| n > 0)
        .collect();
    hit.sort_by_key(|&(n, _)| std::cmp::Reverse(n));
    FindingGroup {
        flows: hit.len() as u64,
        worst: hit
            .iter()
            .take(WORST_FLOWS)
            .map(|&(n, f)| {
                let flow = flow_label(f);
                GroupMember {
                    message: format!("{} {what} on {flow}", plural(n, "packet")),
                    flow,
                    count: n,
                    frames: Vec::new(),
                    frame_refs: Vec::new(),
                }
            })
            .collect(),
    }
}

/// `; flows: A (3), B (1) and 2 more`.
fn named_flows(group: &FindingGroup) -> String {
    if group.worst.is_empty() {
        return String::new();
    }
    let named: Vec<String> = group
        .worst
        .iter()
        .map(|m| format!("{} ({})", m.flow, m.count))
        .collect();
    let more = group.flows.saturating_sub(group.worst.len() as u64);
    let rest = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    format!(
        "; {}: {}{rest}",
        plural(group.flows, "flow"),
        named.join(", ")
    )
}

/// CE marks and rewritten DSCP or PCP on one hop, with the flows (of the hop's direction)
/// they hit.
fn hop_marking(h: &HopReport, flows: &[(&CorrelatedFlow, &FlowHop)], out: &mut Vec<Finding>) {
    if h.ce_marked > 0 {
        let group = flows_group(flows, |fh| fh.ce_marked, "CE-marked");
        let message = format!(
            "{} CE-marked between {} and {} (of {} that crossed it){}",
            plural(h.ce_marked, "packet"),
            h.from,
            h.to,
            h.matched,
            named_flows(&group)
        );
        out.push(with_flows(
            finding(
                Severity::Info,
                FindingCode::CeMarkedAt,
                message,
                "a switch between these points is congested on this path and marks ECN: the queue to look at is there",
            ),
            h.ce_marked,
            group,
        ));
    }
    if h.dscp_changed + h.pcp_changed > 0 {
        let group = flows_group(flows, |fh| fh.dscp_changed.max(fh.pcp_changed), "re-marked");
        let message = format!(
            "between {} and {}: {} with the DSCP rewritten, {} with the PCP rewritten{}",
            h.from,
            h.to,
            plural(h.dscp_changed, "packet"),
            plural(h.pcp_changed, "packet"),
            named_flows(&group)
        );
        out.push(with_flows(
            finding(
                Severity::Warning,
                FindingCode::Remarked,
                message,
                "a device between these points re-marks RoCE (a trust or QoS policy that does not trust DSCP or PCP): the next hops classify it into another queue",
            ),
            h.dscp_changed.max(h.pcp_changed),
            group,
        ));
    }
}

/// A hop finding with its count and the flows it concerns (the one flow named in `flow`
/// when there is only one).
fn with_flows(f: Finding, count: u64, group: FindingGroup) -> Finding {
    Finding {
        count,
        flow: (group.flows == 1).then(|| group.worst[0].flow.clone()),
        group: Some(group),
        ..f
    }
}
