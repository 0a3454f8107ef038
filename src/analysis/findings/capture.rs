//! What the capture point hides or missed: no RoCE, no VLAN tags, cooked headers, a snap
//! length, damage and drops, and the PSNs it missed that the other end acknowledged.

use roce_parsers::link::{is_cooked, LINKTYPE_ETHERNET};

use super::{finding, CaptureFacts};
use crate::analysis::flow::FlowEvidence;
use crate::common::words::plural;
use crate::model::{
    CaptureReport, Finding, FindingCode, FindingGroup, FlowReport, GroupMember, Severity,
    WarningKind,
};

/// Whether the capture itself says it is incomplete: damage, drops, a mirror's sequence
/// holes, PSNs it missed.
pub(super) fn lossy(capture: &CaptureReport) -> bool {
    capture.mirror_sessions.values().any(|m| m.mirror_drops > 0)
        || capture.warnings.iter().any(|w| w.kind.frames_missing())
        || capture.missed.psns > 0
}

/// Flows listed by name in `capture_missed`.
const MISSED_WORST: usize = 5;

/// The PSNs the capture point missed: skipped PSNs the other end acknowledged (the network
/// delivered them), on which flows, and the capture's own drop counters where it has them.
pub(super) fn capture_missed(
    flows: &[&FlowReport],
    evidence: &[&FlowEvidence],
    capture: &CaptureReport,
    out: &mut Vec<Finding>,
) {
    let m = capture.missed;
    if m.psns == 0 {
        return;
    }
    let mut hit: Vec<(&FlowReport, &FlowEvidence)> = flows
        .iter()
        .zip(evidence)
        .filter(|(r, _)| r.psn.capture_missed > 0)
        .map(|(r, e)| (*r, *e))
        .collect();
    hit.sort_by_key(|(r, _)| std::cmp::Reverse(r.psn.capture_missed));
    let worst: Vec<GroupMember> = hit
        .iter()
        .take(MISSED_WORST)
        .map(|(r, e)| GroupMember {
            flow: r.label(),
            count: r.psn.capture_missed,
            message: format!(
                "{} of {} missed by the capture",
                plural(r.psn.capture_missed, "PSN"),
                r.label()
            ),
            // The first frames after the gaps whose PSNs were acknowledged.
            frames: e.troubles.missed.frames.clone(),
            frame_refs: Vec::new(),
        })
        .collect();
    let frames = worst.first().map_or(Vec::new(), |w| w.frames.clone());
    let mut cause = "the capture point did not see every packet the network delivered: the kernel's capture buffer overflowed (raise tcpdump's -B, or use roce-sniff's --capture-thread), a mirror session is oversubscribed by its sources, or packets were sprayed around the capture point (ECMP, a LAG member not mirrored)".to_string();
    let counters = drop_counters(capture);
    if !counters.is_empty() {
        cause.push_str(&format!(
            "; the capture's own counters: {}",
            counters.join(", ")
        ));
    }
    out.push(Finding {
        group: Some(FindingGroup {
            flows: m.flows,
            worst,
        }),
        grouped_flows: hit.iter().map(|(r, _)| r.label()).collect(),
        ..finding(
            Severity::Warning,
            FindingCode::CaptureMissed,
            format!(
                "the capture missed {} of the {} data PSNs ({:.2}%) of {}: the other end acknowledged them, so the network delivered them; every figure of those flows is a lower bound",
                m.psns,
                m.data_psns,
                m.data_share() * 100.0,
                plural(m.flows, "flow")
            ),
            &cause,
            None,
            m.psns,
            frames,
        )
    });
}

/// What the capture says of its own drops: a live capture's kernel counters, pcapng
/// statistics, an ERSPAN session's sequence holes.
fn drop_counters(capture: &CaptureReport) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(live) = &capture.live {
        out.push(format!(
            "the kernel dropped {} and the interface {}",
            live.dropped, live.if_dropped
        ));
    }
    for w in capture
        .warnings
        .iter()
        .filter(|w| w.kind == WarningKind::CaptureDrops)
    {
        out.push(w.message.clone());
    }
    for (session, s) in capture
        .mirror_sessions
        .iter()
        .filter(|(_, s)| s.mirror_drops > 0)
    {
        out.push(format!(
            "ERSPAN session {session} lost {} frames",
            s.mirror_drops
        ));
    }
    out
}

/// Why a capture holds no RoCE: a hardware RNIC's traffic bypasses the kernel, Soft-RoCE's does
/// not, and the traffic may not have run at all.
const NO_ROCE_SEEN: &str = "the RDMA traffic may not have run while the capture did; a hardware RDMA NIC (ConnectX, BlueField, Broadcom, Intel) bypasses the kernel, so tcpdump on its netdev sees no RoCE: capture on a switch mirror port, with ibdump, or with a libpcap that can open the RDMA device (e.g. mlx5_0); Soft-RoCE (rxe) goes through the kernel, so its traffic does show on the netdev it is bound to";

/// What the capture point hides: no RoCE, no VLAN tags, cooked headers, a snap length.
pub(super) fn capture_findings(
    capture: &CaptureReport,
    roce_priorities: &[u8],
    facts: &CaptureFacts,
    out: &mut Vec<Finding>,
) {
    let c = capture;
    if let Some(s) = c
        .selection
        .as_ref()
        .filter(|s| c.packets == 0 && s.frames_read > 0)
    {
        out.push(finding(
            Severity::Warning,
            FindingCode::NoRoce,
            format!("{}: nothing was analysed", s.nothing_kept()),
            "the selection (filter, --qp, --finding) keeps no frame of this capture",
            None,
            0,
            vec![],
        ));
    } else if c.packets == 0 {
        out.push(finding(
            Severity::Warning,
            FindingCode::NoRoce,
            "no frames at all in this capture: nothing was analysed".into(),
            &format!(
                "the capture filter matched nothing or the capture stopped at once; {NO_ROCE_SEEN}"
            ),
            None,
            0,
            vec![],
        ));
    } else if c.roce_packets == 0 {
        out.push(finding(
            Severity::Info,
            FindingCode::NoRoce,
            "no RoCE frames in this capture".into(),
            NO_ROCE_SEEN,
            None,
            0,
            vec![],
        ));
    }
    let eth_roce = facts.link_types.contains_key(&LINKTYPE_ETHERNET) && c.roce_packets > 0;
    if eth_roce && roce_priorities.is_empty() {
        out.push(finding(
            Severity::Info,
            FindingCode::NoVlanTags,
            "no RoCE frame carries a VLAN tag: PCP cannot be seen in this capture".into(),
            "the traffic is untagged, or the capture was taken on a VLAN sub-interface whose tags the kernel strips; capture on the parent interface or a mirror port",
            None,
            c.roce_packets,
            vec![],
        ));
    }
    let cooked = facts
        .link_types
        .iter()
        .filter(|(&lt, _)| is_cooked(lt))
        .map(|(_, n)| n)
        .sum::<u64>();
    if cooked > 0 {
        out.push(finding(
            Severity::Info,
            FindingCode::CookedCapture,
            format!("{cooked} frames are Linux cooked (tcpdump -i any): no Ethernet header, no PCP"),
            "`tcpdump -i any` replaces the Ethernet header; capture on the interface itself to see VLAN tags and PCP",
            None,
            cooked,
            vec![],
        ));
    }
    // Malformed frames have no ICRC to check either, but nothing cut them.
    let cut = c
        .icrc_unchecked
        .saturating_sub(facts.icrc_unchecked_malformed);
    if cut > 0 {
        let t = &c.truncated_by;
        let (message, cause) = if t.mirror + t.length_mismatch == 0 {
            (
                format!("{} RoCE frames were cut by the snap length: their ICRC could not be checked", cut),
                "the capture was taken with a snap length (-s); capture whole frames (-s 0) to check ICRCs",
            )
        } else {
            (
                format!(
                    "{} RoCE frames were cut ({} by the snap length, {} by a mirror that says so, {} with IP/UDP lengths longer than the frame): their ICRC could not be checked; their headers count",
                    cut, t.snaplen, t.mirror, t.length_mismatch
                ),
                "the mirror session (or the capture) keeps only the first bytes of each frame; the headers are genuine, the ICRC cannot be checked",
            )
        };
        out.push(finding(
            Severity::Info,
            FindingCode::SnaplenHidesIcrc,
            message,
            cause,
            None,
            cut,
            vec![],
        ));
    }
    if let Some(first) = c.time_jumps.first() {
        out.push(finding(
            Severity::Warning,
            FindingCode::TimeBackwards,
            format!(
                "the capture's time went back {} at frame {}: read as {} captures run together, every flow ended at each jump and began anew after it",
                crate::common::units::duration_ns((first.back_s * 1e9) as u64),
                first.frame,
                c.segments
            ),
            "captures joined end to end (`cat a.pcap a.pcap`, a stream of several captures), or a capture host's clock stepped back; the PSNs after a jump are not resends of those before it",
            None,
            c.segments - 1,
            c.time_jumps.iter().map(|j| j.frame).collect(),
        ));
    }
    if c.capture_duplicates > 0 {
        out.push(finding(
            Severity::Info,
            FindingCode::CaptureDuplicates,
            format!(
                "{} RoCE frames were captured twice (the same frame within {} at one point, or seen at two points of the files read together): counted once",
                c.capture_duplicates,
                crate::common::units::duration_ns(crate::analysis::flow::COPY_WINDOW_NS)
            ),
            "a mirror session copies both directions of a port (or a TAP duplicates), or the files were captured at several points of the path; the copies are not resends and not duplicate PSNs",
            None,
            c.capture_duplicates,
            vec![],
        ));
    }
    for (session, m) in c.mirror_sessions.iter().filter(|(_, m)| m.mirror_drops > 0) {
        out.push(finding(
            Severity::Warning,
            FindingCode::MirrorDrops,
            format!(
                "ERSPAN session {session} lost {} of {} frames (holes in its GRE sequence numbers)",
                m.mirror_drops,
                m.frames + m.mirror_drops
            ),
            "the mirror session dropped frames (an oversubscribed mirror port or a busy collector): PSN gaps at the same time may be the mirror's, not the network's",
            None,
            m.mirror_drops,
            vec![],
        ));
    }
    damage_findings(capture, facts.malformed_frames, out);
}

/// What is missing from the capture or could not be analysed: damage, drops, malformed
/// frames, unsupported link types, flows beyond --max-flows.
fn damage_findings(capture: &CaptureReport, malformed_frames: &[u64], out: &mut Vec<Finding>) {
    for w in &capture.warnings {
        let cause = match w.kind {
            WarningKind::FileDamaged => "the capture file is incomplete (a tcpdump that was killed, a full disk, or a damaged copy); every record that could be read was analysed: before the damage, and after it where reading found its way back to whole records (capture.damaged)",
            WarningKind::CaptureDrops => "the capture did not keep up: the kernel or the interface dropped frames before they were captured (a small capture buffer, or a busy CPU); PSN gaps at the same time may be these drops",
            WarningKind::CaptureStopped => "the live capture ended on an error of the capture device; everything captured before it was analysed",
            // Not the capture's: the run fails naming the output, or the outputs lack records
            // (the capture and the report are whole).
            WarningKind::Notice
            | WarningKind::Interrupted
            | WarningKind::OutputFailed
            | WarningKind::RecordsDropped => continue,
        };
        out.push(finding(
            Severity::Warning,
            FindingCode::CaptureDamaged,
            w.message.clone(),
            cause,
            None,
            1,
            vec![],
        ));
    }
    if capture.malformed > 0 {
        out.push(finding(
            Severity::Warning,
            FindingCode::MalformedFrames,
            format!("{} malformed frames", capture.malformed),
            "frames whose headers contradict their lengths: corruption, a capture device that mangles frames, or traffic that is not RoCE on UDP port 4791",
            None,
            capture.malformed,
            malformed_frames.to_vec(),
        ));
    }
    if capture.unsupported_link_type > 0 {
        out.push(finding(
            Severity::Warning,
            FindingCode::UnsupportedLinkType,
            format!(
                "{} frames have a link type roce-sniff does not decode",
                capture.unsupported_link_type
            ),
            &format!(
                "the capture uses a link type other than the supported ones ({})",
                roce_parsers::link::SUPPORTED_SUMMARY
            ),
            None,
            capture.unsupported_link_type,
            vec![],
        ));
    }
    if capture.flows_untracked_packets > 0 {
        out.push(finding(
            Severity::Warning,
            FindingCode::FlowsUntracked,
            format!(
                "{} packets belong to flows beyond --max-flows and were not analysed",
                capture.flows_untracked_packets
            ),
            "the capture has more flows than --max-flows allows; raise it to analyse them all",
            None,
            capture.flows_untracked_packets,
            vec![],
        ));
    }
}
