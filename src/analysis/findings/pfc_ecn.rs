//! PFC and ECN set up wrong, seen on the wire: loss on a priority PFC protects, pauses on the
//! wrong priority, links pausing each other, pauses not obeyed, PFC acting before ECN, and ECN
//! marking most of a flow.

use std::collections::BTreeSet;

use super::{finding, CaptureFacts};
use crate::analysis::flow::FlowEvidence;
use crate::common::words::plural;
use crate::model::{Finding, FindingCode, FlowReport, FlowRole, PfcReport, Severity};

/// A flow is CE-marked heavily when at least this share of its packets is.
const ECN_HEAVY_SHARE: f64 = 0.5;
/// ... and it has at least this many packets.
const ECN_HEAVY_MIN_PACKETS: u64 = 20;

/// Priorities PFC paused (an XOFF) in the capture.
pub(super) fn paused_priorities(pfc: &PfcReport) -> BTreeSet<u8> {
    pfc.priorities
        .iter()
        .filter(|p| p.xoff > 0)
        .map(|p| p.priority)
        .collect()
}

/// The PCP of a flow's own packets, when tagged.
fn priority_of(f: &FlowEvidence) -> Option<u8> {
    f.class.and_then(|c| c.0)
}

/// Whether a flow travels in the lossless class: on a priority PFC paused in this capture,
/// with the DSCP of the rest of the RoCE data (`roce_dscp`). A flow with another DSCP is
/// classified elsewhere by switches that trust DSCP: its loss is its marking's.
pub(super) fn lossless(f: &FlowEvidence, paused: &BTreeSet<u8>, roce_dscp: Option<u8>) -> bool {
    let dscp_agrees = roce_dscp.is_none_or(|d| f.class.is_some_and(|c| c.1 == d));
    dscp_agrees && priority_of(f).is_some_and(|p| paused.contains(&p))
}

/// PSN loss on a priority PFC paused: the priority is lossless, and still lost packets.
pub(super) fn loss_on_lossless_priority(
    flows: &[&FlowReport],
    evidence: &[&FlowEvidence],
    pfc: &PfcReport,
    roce_dscp: Option<u8>,
    out: &mut Vec<Finding>,
) {
    let paused = paused_priorities(pfc);
    for (r, f) in flows.iter().zip(evidence) {
        let lost = r.psn.missing + r.psn.recovered;
        if lost == 0 || !lossless(f, &paused, roce_dscp) {
            continue;
        }
        let prio = priority_of(f).unwrap_or(0);
        let xoff: u64 = pfc
            .priorities
            .iter()
            .filter(|p| p.priority == prio)
            .map(|p| p.xoff)
            .sum();
        out.push(finding(
            Severity::Critical,
            FindingCode::LossOnLosslessPriority,
            format!(
                "{} lost on {} on priority {prio}, which PFC paused in this capture ({} XOFF): a lossless priority dropped packets",
                plural(lost, "PSN"),
                r.label(),
                xoff
            ),
            "the priority is lossless but still drops: the PFC headroom of a buffer is too small for the cable length and MTU, or a hop on the path does not run PFC on this priority",
            Some(r.label()),
            lost,
            f.troubles.loss.frames.clone(),
        ));
    }
}

/// PFC paused only priorities that carry no RoCE while RoCE is tagged with another.
pub(super) fn pfc_priority_mismatch(pfc: &PfcReport, out: &mut Vec<Finding>) {
    let paused = paused_priorities(pfc);
    if paused.is_empty() || pfc.roce_priorities.is_empty() {
        return;
    }
    if paused.iter().any(|p| pfc.roce_priorities.contains(p)) {
        return;
    }
    let list =
        |v: &mut dyn Iterator<Item = &u8>| v.map(|p| p.to_string()).collect::<Vec<_>>().join(", ");
    let xoff: u64 = pfc.priorities.iter().map(|p| p.xoff).sum();
    out.push(finding(
        Severity::Warning,
        FindingCode::PfcPriorityMismatch,
        format!(
            "PFC paused only priority {} while RoCE uses priority {}",
            list(&mut paused.iter()),
            list(&mut pfc.roce_priorities.iter())
        ),
        "PFC is enabled on another priority than the one RoCE is tagged with (the switch's or the NIC's PFC setting does not match the RoCE PCP): RoCE runs lossy",
        None,
        xoff,
        pfc.priorities
            .iter()
            .filter_map(|p| p.first_frame)
            .take(1)
            .collect(),
    ));
}

/// Two MACs pausing one priority at the same time, and frames sent into a pause.
pub(super) fn pfc_misbehaviour(facts: &CaptureFacts, out: &mut Vec<Finding>) {
    for m in &facts.mutual_pauses {
        out.push(finding(
            Severity::Warning,
            FindingCode::PfcMutual,
            format!(
                "{} and {} paused priority {} at the same time ({}, the first {:.6} s into the capture)",
                m.a,
                m.b,
                m.priority,
                plural(m.overlaps, "overlap"),
                m.first_ns.saturating_sub(facts.first_ts_ns) as f64 / 1e9
            ),
            "both ends of a link pause each other: their buffers fill at once, the circular buffer dependency that becomes a PFC deadlock (check routing loops and the PFC watchdog)",
            None,
            m.overlaps,
            vec![],
        ));
    }
    for (&(mac, prio), ev) in facts.pfc_not_honoured {
        out.push(finding(
            Severity::Warning,
            FindingCode::PfcNotHonoured,
            format!(
                "{} RoCE frames were sent to {mac} on priority {prio} while it had paused that priority",
                ev.count
            ),
            "the sender ignores PFC on this priority (PFC not enabled for it on the sender's port), so the paused buffer overflows and drops",
            None,
            ev.count,
            ev.frames.clone(),
        ));
    }
}

/// A RoCE priority paused while none of its packets was CE-marked.
pub(super) fn pfc_before_ecn(
    flows: &[&FlowReport],
    evidence: &[&FlowEvidence],
    pfc: &PfcReport,
    out: &mut Vec<Finding>,
) {
    for prio in paused_priorities(pfc) {
        let on_it = || {
            flows
                .iter()
                .zip(evidence)
                .filter(move |(_, f)| priority_of(f) == Some(prio))
        };
        if on_it().next().is_none() || on_it().any(|(r, _)| r.feedback.ce > 0) {
            continue;
        }
        let paused: Vec<_> = pfc
            .priorities
            .iter()
            .filter(|p| p.priority == prio && p.xoff > 0)
            .collect();
        let xoff: u64 = paused.iter().map(|p| p.xoff).sum();
        out.push(finding(
            Severity::Warning,
            FindingCode::PfcBeforeEcn,
            format!(
                "PFC paused RoCE priority {prio} ({} XOFF) while none of its packets was CE-marked",
                xoff
            ),
            "the switch's ECN marking threshold is above its PFC XOFF threshold (or ECN is off on this queue): PFC stops the link before DCQCN can slow the senders",
            None,
            xoff,
            paused.iter().filter_map(|p| p.first_frame).take(1).collect(),
        ));
    }
}

/// Flows most of whose packets are CE-marked.
pub(super) fn ecn_heavy(r: &FlowReport, f: &FlowEvidence, out: &mut Vec<Finding>) {
    if r.role != FlowRole::Data || r.packets < ECN_HEAVY_MIN_PACKETS {
        return;
    }
    let share = r.feedback.ce as f64 / r.packets as f64;
    if share >= ECN_HEAVY_SHARE {
        out.push(finding(
            Severity::Warning,
            FindingCode::EcnHeavy,
            format!(
                "{} of {} packets ({:.0}%) of {} are CE-marked",
                r.feedback.ce,
                r.packets,
                share * 100.0,
                r.label()
            ),
            "the switch marks most packets: its ECN thresholds (Kmin/Kmax) are set too low for the buffer and the traffic, and DCQCN holds the senders far below the link",
            Some(r.label()),
            r.feedback.ce,
            f.troubles.ce.frames.clone(),
        ));
    }
}
