//! Findings: what looks wrong, ranked, each with its evidence and likely cause. They are
//! computed from the report model and each flow's evidence frames, after the analysis ended.

use std::collections::BTreeMap;
use std::net::IpAddr;

use rustc_hash::FxHashMap as HashMap;

use roce_parsers::link::LINKTYPE_ETHERNET;

mod capacity;
mod capture;
mod connections;
mod nics;
mod paths;
mod pfc_ecn;
mod qos;

use roce_parsers::MacAddr;

use super::flow::{Evidence, FlowEvidence};
use super::pfc::MutualPause;
use super::INCAST_MIN_SENDERS;
use crate::common::units::{duration_ns, duration_us};
use crate::common::words::plural;
use crate::model::{
    CaptureReport, Finding, FindingCode, FindingGroup, FlowReport, FlowRole, GroupMember,
    PauseReport, PfcReport, PriorityReport, Severity,
};

/// What findings need of the capture beyond its report.
pub struct CaptureFacts<'a> {
    /// Link types by number, with frame counts.
    pub link_types: &'a BTreeMap<u32, u64>,
    pub first_ts_ns: u64,
    /// Frames that are not RoCE, by PCP and by DSCP.
    pub other_by_pcp: &'a [Evidence; 8],
    pub other_by_dscp: &'a BTreeMap<u8, Evidence>,
    /// RoCE frames sent into a pause, per (paused MAC, priority).
    pub pfc_not_honoured: &'a BTreeMap<(MacAddr, u8), Evidence>,
    pub mutual_pauses: Vec<MutualPause>,
    pub cm_requests: &'a super::cm::CmRequests,
    pub icmp_errors: &'a BTreeMap<super::IcmpKey, Evidence>,
    /// The link speed in Gb/s when `--link-speed` gave it.
    pub link_gbps: Option<f64>,
    /// The capture's time now, and whether it runs on (CM requests are answered in time).
    pub now: u64,
    pub running: bool,
    /// The first malformed frames.
    pub malformed_frames: &'a [u64],
    /// RoCE frames whose ICRC went unchecked because they are malformed, not cut.
    pub icrc_unchecked_malformed: u64,
    /// The end points and how their NICs reacted.
    pub hosts: &'a [crate::model::HostReport],
}

fn finding(
    severity: Severity,
    code: FindingCode,
    message: String,
    cause: &str,
    flow: Option<String>,
    count: u64,
    frames: Vec<u64>,
) -> Finding {
    Finding {
        severity,
        code,
        message,
        cause: cause.to_string(),
        flow,
        count,
        frames,
        frame_refs: Vec::new(),
        group: None,
        grouped_flows: Vec::new(),
    }
}

/// More flows than this with one finding code are reported as one grouped finding.
const GROUP_ABOVE: usize = 5;
/// Flows listed in full in a grouped finding.
const GROUP_WORST: usize = 5;

/// Folds the per-flow findings of a code shown by many flows into one: a capture with 100,000
/// flows of bad ICRCs gives one finding, not 100,000, and the report stays readable.
fn group_by_code(findings: Vec<Finding>) -> Vec<Finding> {
    let mut per_code: BTreeMap<FindingCode, usize> = BTreeMap::new();
    for f in findings.iter().filter(|f| f.flow.is_some()) {
        *per_code.entry(f.code).or_default() += 1;
    }
    if per_code.values().all(|&n| n <= GROUP_ABOVE) {
        return findings;
    }
    let grouped = |f: &Finding| f.flow.is_some() && per_code[&f.code] > GROUP_ABOVE;
    let (members, mut out): (Vec<Finding>, Vec<Finding>) =
        findings.into_iter().partition(|f| grouped(f));
    let mut by_code: BTreeMap<FindingCode, Vec<Finding>> = BTreeMap::new();
    for f in members {
        by_code.entry(f.code).or_default().push(f);
    }
    out.extend(by_code.into_values().map(group));
    out
}

/// One finding for all the flows of `list` (one code), the worst first.
fn group(mut list: Vec<Finding>) -> Finding {
    list.sort_by(|a, b| a.severity.cmp(&b.severity).then(b.count.cmp(&a.count)));
    let flows = list.len() as u64;
    let total: u64 = list.iter().map(|f| f.count).sum();
    let worst = list
        .iter()
        .take(GROUP_WORST)
        .map(|f| GroupMember {
            flow: f.flow.clone().unwrap_or_default(),
            count: f.count,
            message: f.message.clone(),
            frames: f.frames.clone(),
            frame_refs: Vec::new(),
        })
        .collect();
    let first = &list[0];
    Finding {
        severity: first.severity,
        code: first.code,
        message: format!(
            "{flows} flows ({total} in all); the worst: {}",
            first.message
        ),
        cause: first.cause.clone(),
        flow: None,
        count: total,
        frames: first.frames.clone(),
        frame_refs: Vec::new(),
        group: Some(FindingGroup { flows, worst }),
        grouped_flows: list.iter().filter_map(|f| f.flow.clone()).collect(),
    }
}

/// The first missing PSN ranges, as `5, 7-9`.
fn ranges(r: &FlowReport) -> String {
    let shown: Vec<String> = r
        .psn
        .missing_ranges
        .iter()
        .map(|[a, b]| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect();
    shown.join(", ")
}

/// What the resends of a flow followed: its sequence and RNR NAKs, and its timeouts.
fn resend_causes(r: &FlowReport) -> String {
    let naks = &r.feedback.naks;
    let causes: Vec<String> = [
        (naks.psn_sequence_error, "PSN-sequence NAK"),
        (naks.rnr, "RNR NAK"),
        (r.recovery.timeout_resends, "timeout"),
    ]
    .into_iter()
    .filter(|&(n, _)| n > 0)
    .map(|(n, what)| plural(n, what))
    .collect();
    if causes.is_empty() {
        return "no NAK or timeout seen: after a NAK the capture missed".to_string();
    }
    causes.join(", ")
}

/// Every finding of a report, most severe first; a code shown by more than 5 flows is one
/// grouped finding.
pub fn find(
    flows: &[&FlowReport],
    evidence: &[&FlowEvidence],
    capture: &CaptureReport,
    pfc: &PfcReport,
    facts: &CaptureFacts,
) -> Vec<Finding> {
    grouped(find_each(flows, evidence, capture, pfc, facts))
}

/// `findings`, a code shown by more than 5 flows grouped into one finding, most severe first.
pub fn grouped(findings: Vec<Finding>) -> Vec<Finding> {
    let mut out = group_by_code(findings);
    out.sort_by(|a, b| a.severity.cmp(&b.severity).then(b.count.cmp(&a.count)));
    out
}

/// Every finding of a report, each flow's its own (none grouped), in no particular order:
/// what a watch running with the capture tells as it first holds, grouping what it tells.
pub fn find_each(
    flows: &[&FlowReport],
    evidence: &[&FlowEvidence],
    capture: &CaptureReport,
    pfc: &PfcReport,
    facts: &CaptureFacts,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let capture_lossy = capture::lossy(capture);
    let paused = pfc_ecn::paused_priorities(pfc);
    let roce_dscp = qos::roce_dscp(flows, evidence);
    let largest_payloads = capacity::largest_payloads(flows, evidence);
    for (i, (r, f)) in flows.iter().zip(evidence).enumerate() {
        let lossless = pfc_ecn::lossless(f, &paused, roce_dscp);
        loss_findings(r, f, capture_lossy, lossless, &mut out);
        pfc_ecn::ecn_heavy(r, f, &mut out);
        connections::unacknowledged_requests(r, f, &mut out);
        connections::nak_without_gap(r, f, &mut out);
        connections::read_range_violation(r, f, &mut out);
        capacity::small_path_mtu(r, f, &largest_payloads, flows, i, &mut out);
        if let Some(link) = facts.link_gbps {
            let paused_here = f
                .class
                .and_then(|c| c.0)
                .is_some_and(|p| paused.contains(&p));
            capacity::host_limited(r, f, link, paused_here, &mut out);
        }
        response_findings(r, f, &mut out);
        marking_findings(r, f, &mut out);
        qos::flow_class(r, f, &mut out);
        nics::cnp_without_slowdown(r, f, &mut out);
    }
    untagged_findings(flows, evidence, facts, &mut out);
    qos::dscp_mismatch(flows, evidence, &mut out);
    qos::vlan_mismatch(flows, evidence, &mut out);
    qos::gid_findings(flows, evidence, capture, &mut out);
    qos::lossless_class_polluted(flows, evidence, facts, &mut out);
    pfc_findings(&pfc.priorities, &pfc.pause_8023x, &mut out);
    pfc_ecn::loss_on_lossless_priority(flows, evidence, pfc, roce_dscp, &mut out);
    pfc_ecn::pfc_priority_mismatch(pfc, &mut out);
    connections::cm_findings(facts.cm_requests, facts.now, facts.running, &mut out);
    connections::icmp_unreachable(facts.icmp_errors, &mut out);
    pfc_ecn::pfc_misbehaviour(facts, &mut out);
    pfc_ecn::pfc_before_ecn(flows, evidence, pfc, &mut out);
    let roce_paused = paused.iter().any(|p| pfc.roce_priorities.contains(p));
    out.extend(incast(flows, evidence, facts.first_ts_ns, roce_paused));
    paths::low_path_entropy(flows, evidence, &mut out);
    nics::slow_nak(facts.hosts, &mut out);
    capture::capture_findings(capture, &pfc.roce_priorities, facts, &mut out);
    capture::capture_missed(flows, evidence, capture, &mut out);
    out
}

/// PSN loss, READ response loss, retransmissions, reordering and duplicates.
fn loss_findings(
    r: &FlowReport,
    f: &FlowEvidence,
    capture_lossy: bool,
    lossless: bool,
    out: &mut Vec<Finding>,
) {
    // Made only for a finding: most flows have none, and a label is a formatted string.
    let flow = || Some(r.label());
    let reliable = f.reliable;
    {
        let lost = r.psn.missing + r.psn.recovered;
        if lost > 0 {
            let mut msg = format!(
                "PSN loss on {} {}: {} lost ({} recovered by retransmission, {} never seen) in {}",
                r.transport.unwrap_or("?"),
                r.label(),
                plural(lost, "PSN"),
                r.psn.recovered,
                r.psn.missing,
                plural(r.psn.gaps, "gap")
            );
            if !r.psn.missing_ranges.is_empty() {
                msg.push_str(&format!("; first missing: {}", ranges(r)));
            }
            if reliable
                && r.acks == 0
                && r.feedback.naks.total() == 0
                && r.feedback.read_responses == 0
            {
                msg.push_str("; no ACKs were seen for this flow (its reverse direction is not in the capture), so the capture's own misses cannot be told from the network's loss");
            }
            let recovered = match f.resend_policy {
                Some("go_back_n") => "RC recovered by going back (go-back-N)",
                Some("selective") => {
                    "RC recovered by resending the lost PSNs alone (selective repeat)"
                }
                Some(_) => {
                    "RC recovered by going back and by resending lost PSNs alone (both seen)"
                }
                None => "RC recovered by resending",
            };
            let mut cause = if !reliable {
                "packets were dropped on the path and UC/UD never resend: the loss reached the application".to_string()
            } else if r.psn.missing > 0 {
                "packets were dropped on the path and not all were resent before the capture ended"
                    .to_string()
            } else if lossless {
                format!("packets were dropped on the path although PFC protects this priority (headroom too small, or a hop without PFC); {recovered}, at the cost of throughput")
            } else {
                format!("packets were dropped on the path (a full buffer on a lossy priority, or link errors); {recovered}, at the cost of throughput")
            };
            // A NAK or a resend proves its gap; only PSNs never seen again may be capture drops.
            if capture_lossy && r.psn.missing > 0 {
                cause.push_str(
                    "; the capture itself is incomplete, so some gaps may be capture drops",
                );
            }
            out.push(finding(
                Severity::Critical,
                FindingCode::PsnLoss,
                msg,
                &cause,
                flow(),
                lost,
                f.troubles.loss.frames.clone(),
            ));
        }
        if let Some(u) = f.troubles.unsettled {
            out.push(finding(
                Severity::Info,
                FindingCode::PsnUnsettled,
                format!(
                    "{} on {} unsettled: the capture ended {}, before its acknowledgement was due",
                    plural(u.psns, "skipped PSN"),
                    r.label(),
                    match u.after_ns {
                        0 => "with the frame that showed the gap".to_string(),
                        ns => format!("{} after the gap", duration_us(ns as f64 / 1e3)),
                    }
                ),
                "the capture ended too soon after the gap to tell whether the packets were lost (a NAK or a resend would follow) or only missed by the capture (an ACK would cover them); capture a little longer past the traffic",
                flow(),
                u.psns,
                u.frame.into_iter().collect(),
            ));
        }
        if r.read_response_gaps > 0 {
            out.push(finding(
                Severity::Critical,
                FindingCode::ReadResponseLoss,
                format!("{} gaps in READ responses on {}", r.read_response_gaps, r.label()),
                "READ response packets were dropped on the way back to the requester, which must re-read",
                flow(),
                r.read_response_gaps,
                vec![],
            ));
        }
        if r.psn.retransmitted > 0 {
            out.push(finding(
                Severity::Warning,
                FindingCode::Retransmissions,
                format!(
                    "{} on {} ({})",
                    plural(r.psn.retransmitted, "retransmitted packet"),
                    r.label(),
                    resend_causes(r)
                ),
                "after a NAK or a timeout the requester resent from the first unacknowledged PSN (go-back-N) or the lost PSNs alone (selective repeat; hosts[].as_sender.resend_policy says which)",
                flow(),
                r.psn.retransmitted,
                f.troubles.retrans.frames.clone(),
            ));
        }
        if r.psn.out_of_order > 0 {
            out.push(finding(
                Severity::Info,
                FindingCode::OutOfOrder,
                format!(
                    "{} came late without loss on {}: up to {} behind the highest seen, up to {} after their gap",
                    plural(r.psn.out_of_order, "PSN"),
                    r.label(),
                    plural(r.psn.out_of_order_depth_max, "PSN"),
                    duration_us(r.psn.out_of_order_delay_max_us)
                ),
                "the network reordered packets of one QP (adaptive routing, packet spraying, an ECMP path change, or a mirror merging two links): not loss, as none was resent or is missing; a receiver NIC without out-of-order placement answers each with a NAK and a go-back-N resend",
                flow(),
                r.psn.out_of_order,
                vec![],
            ));
        }
        if r.psn.duplicates > 0 {
            out.push(finding(
                Severity::Info,
                FindingCode::Duplicates,
                format!("{} duplicate PSNs on {}", r.psn.duplicates, r.label()),
                "the same packet was captured twice (mirror or TAP duplication) or resent without a NAK",
                flow(),
                r.psn.duplicates,
                f.troubles.dups.frames.clone(),
            ));
        }
    }
}

/// NAKs with an error code, RNR NAKs, and CE marks the receiver did not answer.
fn response_findings(r: &FlowReport, f: &FlowEvidence, out: &mut Vec<Finding>) {
    // Made only for a finding: most flows have none, and a label is a formatted string.
    let flow = || Some(r.label());
    {
        let n = &f.troubles.naks;
        let errors = [
            (&n.invalid_request, "invalid request", "the responder rejected the request as malformed or unsupported by the QP (wrong opcode for the QP's access flags)"),
            (&n.remote_access_error, "remote access error", "the request addressed memory the responder had not registered, or used a wrong R_Key or range"),
            (&n.remote_operational_error, "remote operational error", "the responder failed internally while executing the request (its QP went to the error state)"),
            (&n.invalid_rd_request, "invalid RD request", "the responder rejected an RD request"),
            (&n.other, "reserved NAK code", "the responder sent a NAK code the specification reserves"),
        ];
        for (ev, what, cause) in errors {
            if ev.count > 0 {
                out.push(finding(
                    Severity::Critical,
                    FindingCode::NakError,
                    format!("{} NAK ({what}) for {}", ev.count, r.label()),
                    cause,
                    flow(),
                    ev.count,
                    ev.frames.clone(),
                ));
            }
        }
        if n.rnr.count > 0 {
            out.push(finding(
                Severity::Warning,
                FindingCode::RnrNak,
                format!("{} RNR NAKs for {}", n.rnr.count, r.label()),
                "the responder had no receive buffer posted (receiver not ready): the application does not post receives fast enough",
                flow(),
                n.rnr.count,
                n.rnr.frames.clone(),
            ));
        }
        if r.feedback.ce > 0 && r.feedback.cnps == 0 && r.role == FlowRole::Data {
            out.push(finding(
                Severity::Warning,
                FindingCode::CeWithoutCnp,
                format!("{} CE-marked packets on {} and no CNP came back", r.feedback.ce, r.label()),
                "congestion control is off at the receiver (no DCQCN notification point), or its CNPs travel where this capture does not see them",
                flow(),
                r.feedback.ce,
                f.troubles.ce.frames.clone(),
            ));
        } else if r.feedback.ce_without_cnp > 0 && r.role == FlowRole::Data {
            out.push(finding(
                Severity::Info,
                FindingCode::CeUnanswered,
                format!(
                    "{} of {} CE marks on {} got no CNP within {}",
                    r.feedback.ce_without_cnp,
                    r.feedback.ce,
                    r.label(),
                    duration_ns(super::CNP_WINDOW_NS)
                ),
                "CNPs are rate-limited per QP, so not every mark gets one; many unanswered marks mean the receiver reacts slowly",
                flow(),
                r.feedback.ce_without_cnp,
                f.troubles.ce_unanswered.frames.clone(),
            ));
        }
    }
}

/// `data` or `response` (ACKs, READ responses): what a flow's packets are.
fn what_it_carries(r: &FlowReport) -> &'static str {
    if r.role == FlowRole::Data {
        "data"
    } else {
        "response"
    }
}

/// Marking (ECN, DSCP), corruption and MTU trouble of one flow.
fn marking_findings(r: &FlowReport, f: &FlowEvidence, out: &mut Vec<Finding>) {
    // Made only for a finding: most flows have none, and a label is a formatted string.
    let flow = || Some(r.label());
    {
        if f.not_ect.count > 0 {
            out.push(finding(
                Severity::Warning,
                FindingCode::NotEct,
                format!(
                    "{} sent Not-ECT on {}",
                    plural(f.not_ect.count, &format!("RoCE {} packet", what_it_carries(r))),
                    r.label()
                ),
                "ECN is not enabled on the sender, so switches cannot mark this traffic and drop or pause it instead",
                flow(),
                f.not_ect.count,
                f.not_ect.frames.clone(),
            ));
        }
        if f.dscp0_with_pcp.count > 0 {
            out.push(finding(
                Severity::Warning,
                FindingCode::Dscp0WithPcp,
                format!(
                    "{} with DSCP 0 but PCP set on {}",
                    plural(
                        f.dscp0_with_pcp.count,
                        &format!("RoCE {} packet", what_it_carries(r))
                    ),
                    r.label()
                ),
                "the RoCE traffic class is set for layer 2 only: switches that classify by DSCP put this traffic in the default, lossy queue",
                flow(),
                f.dscp0_with_pcp.count,
                f.dscp0_with_pcp.frames.clone(),
            ));
        }
        if r.icrc_bad > 0 {
            out.push(finding(
                Severity::Critical,
                FindingCode::IcrcBad,
                format!("{} with a bad ICRC on {}", plural(r.icrc_bad, "frame"), r.label()),
                "frames were corrupted in flight (cable, optic, or a device rewriting fields the ICRC covers)",
                flow(),
                r.icrc_bad,
                f.troubles.icrc_bad.frames.clone(),
            ));
        }
        if r.oversize > 0 {
            let limit = match (f.cm_mtu(), f.path_mtu_seen) {
                (Some(cm), Some(seen)) if seen != cm => {
                    format!("the path MTU RDMA-CM negotiated ({cm} bytes; the packets show {seen})")
                }
                (Some(cm), _) => format!("the path MTU RDMA-CM negotiated ({cm} bytes)"),
                (None, _) => format!("the path MTU ({} bytes)", r.path_mtu.unwrap_or(0)),
            };
            out.push(finding(
                Severity::Warning,
                FindingCode::ExceedsPathMtu,
                format!(
                    "{} packets carry more payload than {limit} on {}",
                    r.oversize,
                    r.label()
                ),
                "the sender uses a larger MTU than the QP's path MTU: an MTU mismatch that switches with a smaller MTU drop",
                flow(),
                r.oversize,
                f.troubles.oversize.frames.clone(),
            ));
        }
    }
}

/// Tagged and untagged RoCE data at once: some flows use the wrong GID index.
fn untagged_findings(
    flows: &[&FlowReport],
    evidence: &[&FlowEvidence],
    facts: &CaptureFacts,
    out: &mut Vec<Finding>,
) {
    if facts.link_types.contains_key(&LINKTYPE_ETHERNET) {
        // Only flows whose tags would show: a raw-IP or cooked interface's never do.
        let data: Vec<&FlowReport> = flows
            .iter()
            .zip(evidence)
            .filter(|(r, e)| r.role == FlowRole::Data && e.tags_visible)
            .map(|(r, _)| *r)
            .collect();
        let untagged: Vec<&&FlowReport> = data.iter().filter(|r| r.vlan.is_none()).collect();
        if !untagged.is_empty() && untagged.len() < data.len() {
            for r in untagged {
                out.push(finding(
                    Severity::Warning,
                    FindingCode::UntaggedRoce,
                    format!("RoCE flow {} is untagged while other RoCE flows are tagged", r.label()),
                    "the QP uses a GID of the untagged interface instead of the VLAN interface (wrong GID index), so it gets no PCP and no lossless priority",
                    Some(r.label()),
                    r.packets,
                    vec![r.first_frame],
                ));
            }
        }
    }
}

/// Pauses of RoCE priorities, storms, and 802.3x PAUSE.
fn pfc_findings(priorities: &[PriorityReport], pause: &[PauseReport], out: &mut Vec<Finding>) {
    for p in priorities {
        if p.roce && p.xoff > 0 {
            out.push(finding(
                Severity::Warning,
                FindingCode::PfcPauseRocePriority,
                format!(
                    "PFC paused RoCE priority {} from {}: {} XOFF, {} paused, longest {}",
                    p.priority,
                    p.source,
                    p.xoff,
                    duration_us(p.pause_us),
                    duration_us(p.longest_pause_us)
                ),
                "a buffer on the lossless priority filled up (congestion such as incast, or a slow receiver) and the link was stopped",
                None,
                p.xoff,
                p.first_frame.into_iter().collect(),
            ));
        }
        if p.storms_total > 0 {
            let s = &p.storms[0];
            out.push(finding(
                Severity::Critical,
                FindingCode::PfcStorm,
                format!(
                    "PFC storm on priority {} from {}: {}, the first {} long at {:.0} frames/s",
                    p.priority,
                    p.source,
                    plural(p.storms_total, "storm"),
                    duration_us(s.duration_ms * 1e3),
                    s.rate_fps
                ),
                "a stuck receiver or a pause loop keeps the priority paused (a PFC watchdog should break it)",
                None,
                p.storms_total,
                vec![s.first_frame],
            ));
        }
    }
    for p in pause {
        out.push(finding(
            Severity::Warning,
            FindingCode::Pause8023x,
            format!(
                "{} 802.3x PAUSE frames from {}: {} paused",
                p.frames,
                p.source,
                duration_us(p.pause_us)
            ),
            "link-level flow control stops every priority at once, RoCE and everything else; PFC is what RoCE expects",
            None,
            p.frames,
            p.first_frame.into_iter().collect(),
        ));
    }
}

/// Concurrent senders, fewer than `INCAST_MIN_SENDERS`, that make an incast when the
/// receiver shows congestion.
const INCAST_TROUBLED_MIN_SENDERS: usize = 2;

/// Flows' hosts, from their entries' addresses (evidence does not repeat them: 34 bytes of
/// each of 600,000 kept flows), each spelling parsed once: entries share their hosts' names,
/// and parsing two addresses a flow at every evaluation was a tenth of a churn's events.
#[derive(Default)]
struct HostAddrs(HashMap<*const u8, Option<IpAddr>>);

impl HostAddrs {
    fn of(&mut self, r: &FlowReport) -> Option<(IpAddr, IpAddr)> {
        Some((self.addr(&r.src)?, self.addr(&r.dst)?))
    }

    fn addr(&mut self, name: &std::sync::Arc<str>) -> Option<IpAddr> {
        // Keyed by where the shared name lies: the entries are borrowed for the evaluation.
        *self
            .0
            .entry(std::sync::Arc::as_ptr(name).cast::<u8>())
            .or_insert_with(|| name.parse().ok())
    }
}

/// The most senders sending RoCE data to one receiver at the same time: an incast from
/// `INCAST_MIN_SENDERS`, or from two when the receiver's flows show CE, loss or resends, or
/// the RoCE priority was paused.
fn incast(
    flows: &[&FlowReport],
    evidence: &[&FlowEvidence],
    capture_start: u64,
    roce_paused: bool,
) -> Option<Finding> {
    let data = || {
        flows
            .iter()
            .zip(evidence)
            .filter(|(r, _)| r.role == FlowRole::Data)
    };
    let mut hosts = HostAddrs::default();
    let mut by_dst: BTreeMap<IpAddr, Vec<(u64, bool, IpAddr)>> = BTreeMap::new();
    for (r, f) in data() {
        let Some((src, dst)) = hosts.of(r) else {
            continue;
        };
        let e = by_dst.entry(dst).or_default();
        e.push((f.first_ts_ns, true, src));
        e.push((f.last_ts_ns, false, src));
    }
    let mut worst: Option<(IpAddr, usize, u64)> = None;
    for (dst, mut events) in by_dst {
        // Starts before ends at the same instant: touching intervals overlap.
        events.sort_by_key(|&(ts, start, _)| (ts, !start));
        // Active flows per sender, and the senders with at least one: kept as a running
        // count (counting the map at every event made 100,000 flows take 20 s).
        let mut active: HashMap<IpAddr, u32> = HashMap::default();
        let mut senders = 0usize;
        for (ts, start, src) in events {
            let n = active.entry(src).or_default();
            if start {
                *n += 1;
                senders += usize::from(*n == 1);
            } else {
                *n -= 1;
                senders -= usize::from(*n == 0);
            }
            if worst.is_none_or(|(_, w, _)| senders > w) {
                worst = Some((dst, senders, ts));
            }
        }
    }
    let (dst, senders, ts) = worst?;
    let troubled = roce_paused
        || data().any(|(r, _)| {
            (r.feedback.ce > 0 || r.psn.missing + r.psn.recovered > 0 || r.psn.retransmitted > 0)
                && hosts.of(r).is_some_and(|(_, d)| d == dst)
        });
    let enough = if troubled {
        INCAST_TROUBLED_MIN_SENDERS
    } else {
        INCAST_MIN_SENDERS
    };
    if senders < enough {
        return None;
    }
    Some(finding(
        if troubled { Severity::Warning } else { Severity::Info },
        FindingCode::Incast,
        format!(
            "{senders} senders sent RoCE data to {dst} at once ({:.6} s into the capture)",
            ts.saturating_sub(capture_start) as f64 / 1e9
        ),
        "many-to-one traffic converges on one switch port; its buffer fills and the port marks CE, pauses or drops",
        None,
        senders as u64,
        vec![],
    ))
}

#[cfg(test)]
mod tests {
    use crate::analysis::report_build::CaptureMeta;
    use crate::analysis::{AnalysisConfig, Analyzer};
    use crate::model::{CaptureWarning, FindingCode, WarningKind};

    fn findings_with(kind: WarningKind) -> Vec<crate::model::Finding> {
        let meta = CaptureMeta {
            warnings: vec![CaptureWarning {
                kind,
                message: "something".into(),
            }],
            ..CaptureMeta::default()
        };
        Analyzer::new(AnalysisConfig::default())
            .finish(meta)
            .findings
    }

    #[test]
    fn capture_drops_are_not_blamed_on_a_killed_tcpdump() {
        let f = findings_with(WarningKind::CaptureDrops);
        let damaged: Vec<_> = f
            .iter()
            .filter(|f| f.code == FindingCode::CaptureDamaged)
            .collect();
        assert_eq!(damaged.len(), 1);
        assert!(damaged[0]
            .cause
            .contains("dropped frames before they were captured"));
        assert!(!damaged[0].cause.contains("killed"));
        // A note about the capture point or Ctrl-C is no damage at all.
        for kind in [WarningKind::Notice, WarningKind::Interrupted] {
            assert!(findings_with(kind)
                .iter()
                .all(|f| f.code != FindingCode::CaptureDamaged));
        }
    }
}
