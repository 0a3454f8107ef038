//! Findings of a correlation: where packets were lost, where CE was set, where the marking
//! was rewritten.

use crate::model::{CorrelationReport, Finding, FindingCode, FlowLabel, HopReport, Severity};
use crate::words::plural;

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
        group: None,
    }
}

/// Every finding, most severe first.
pub fn find(r: &CorrelationReport) -> Vec<Finding> {
    let mut out = Vec::new();
    for f in &r.flows {
        let label = FlowLabel {
            src: &f.src,
            dst: &f.dst,
            dqpn: f.dqpn,
            vlan: None,
        }
        .to_string();
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
    for h in r.hops.iter().chain(&r.reverse_hops) {
        hop_marking(h, &mut out);
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

/// CE marks and rewritten DSCP or PCP on one hop.
fn hop_marking(h: &HopReport, out: &mut Vec<Finding>) {
    if h.ce_marked > 0 {
        out.push(Finding {
            count: h.ce_marked,
            ..finding(
                Severity::Info,
                FindingCode::CeMarkedAt,
                format!(
                    "{} CE-marked between {} and {} (of {} that crossed it)",
                    plural(h.ce_marked, "packet"),
                    h.from,
                    h.to,
                    h.matched
                ),
                "a switch between these points is congested on this path and marks ECN: the queue to look at is there",
            )
        });
    }
    if h.dscp_changed + h.pcp_changed > 0 {
        out.push(Finding {
            count: h.dscp_changed.max(h.pcp_changed),
            ..finding(
                Severity::Warning,
                FindingCode::Remarked,
                format!(
                    "between {} and {}: {} with the DSCP rewritten, {} with the PCP rewritten",
                    h.from,
                    h.to,
                    plural(h.dscp_changed, "packet"),
                    plural(h.pcp_changed, "packet")
                ),
                "a device between these points re-marks RoCE (a trust or QoS policy that does not trust DSCP or PCP): the next hops classify it into another queue",
            )
        });
    }
}
