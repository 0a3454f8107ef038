//! Marking and addressing mistakes: classes that disagree within a flow, between flows or
//! between the two directions of a connection; CNPs below their data; one host on two VLANs;
//! RoCEv1 and link-local GIDs; other traffic in RoCE's class.

use std::collections::BTreeMap;
use std::net::IpAddr;

use rustc_hash::FxHashMap as HashMap;

use super::{finding, CaptureFacts};
use crate::analysis::flow::FlowEvidence;
use crate::common::words::plural;
use crate::model::{
    CaptureReport, Finding, FindingCode, FlowLabel, FlowReport, FlowRole, Severity,
};

/// A flow's label as a map key of 8 bytes (checked on a hit).
fn label_hash(label: FlowLabel<&str>) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    BuildHasherDefault::<rustc_hash::FxHasher>::default().hash_one(label)
}

/// A class as people write it: `PCP 3, DSCP 26` (no PCP when untagged).
fn class_name((pcp, dscp): (Option<u8>, u8)) -> String {
    match pcp {
        Some(p) => format!("PCP {p}, DSCP {dscp}"),
        None => format!("untagged, DSCP {dscp}"),
    }
}

/// RoCE data worth comparing classes of: not connection management (QP 1), not RoCEv1 or
/// native InfiniBand (no IP header).
fn roce_data<'a>(
    flows: &'a [&'a FlowReport],
    evidence: &'a [&'a FlowEvidence],
) -> impl Iterator<Item = (usize, &'a FlowReport, &'a FlowEvidence, (Option<u8>, u8))> {
    flows
        .iter()
        .copied()
        .zip(evidence.iter().copied())
        .enumerate()
        .filter(|(_, (r, f))| r.role == FlowRole::Data && r.dqpn != 1 && !f.rocev1 && !f.native_ib)
        .filter_map(|(i, (r, f))| Some((i, r, f, f.class?)))
}

/// The value most packets of `items` carry.
fn majority<K: Ord + Copy>(items: impl Iterator<Item = (K, u64)>) -> Option<K> {
    let mut by: BTreeMap<K, u64> = BTreeMap::new();
    for (k, n) in items {
        *by.entry(k).or_default() += n;
    }
    by.into_iter().max_by_key(|&(_, n)| n).map(|(k, _)| k)
}

/// The DSCP most RoCE data carries.
pub(super) fn roce_dscp(flows: &[&FlowReport], evidence: &[&FlowEvidence]) -> Option<u8> {
    majority(roce_data(flows, evidence).map(|(_, r, _, c)| (c.1, r.packets)))
}

/// PCP 0 with DSCP set, and CNPs below their data, on one flow.
pub(super) fn flow_class(r: &FlowReport, f: &FlowEvidence, out: &mut Vec<Finding>) {
    if f.pcp0_with_dscp.count > 0 {
        let dscp = f.class.map_or(0, |c| c.1);
        out.push(finding(
            Severity::Warning,
            FindingCode::Pcp0WithDscp,
            format!(
                "{} RoCE packets tagged PCP 0 while DSCP {dscp} is set on {}",
                f.pcp0_with_dscp.count,
                r.label()
            ),
            "the RoCE priority is set for layer 3 only: a switch port that trusts PCP puts this traffic in priority 0, the default lossy queue",
            Some(r.label()),
            f.pcp0_with_dscp.count,
            f.pcp0_with_dscp.frames.clone(),
        ));
    }
    if f.troubles.cnp_lower_class.count > 0 {
        let data = f.class.map(class_name).unwrap_or_default();
        out.push(finding(
            Severity::Warning,
            FindingCode::CnpMarking,
            format!(
                "{} CNPs for {} travel on a lower class than its data ({data})",
                f.troubles.cnp_lower_class.count,
                r.label()
            ),
            "the receiver's CNP priority/DSCP (cnp_802p_prio, cnp_dscp) is below the data's: CNPs queue behind the congestion they report and come too late",
            Some(r.label()),
            f.troubles.cnp_lower_class.count,
            f.troubles.cnp_lower_class.frames.clone(),
        ));
    }
}

/// DSCPs that differ between RoCE data flows, or between a connection's two directions.
pub(super) fn dscp_mismatch(
    flows: &[&FlowReport],
    evidence: &[&FlowEvidence],
    out: &mut Vec<Finding>,
) {
    let data: Vec<_> = roce_data(flows, evidence).collect();
    let most = majority(data.iter().map(|(_, r, _, c)| (c.1, r.packets)));
    if let Some(most) = most.filter(|_| data.len() > 1) {
        let agreeing: u64 = data
            .iter()
            .filter(|(_, _, _, c)| c.1 == most)
            .map(|(_, r, _, _)| r.packets)
            .sum();
        for (_, r, _, c) in data.iter().filter(|(_, _, _, c)| c.1 != most) {
            out.push(finding(
                Severity::Warning,
                FindingCode::DscpMismatch,
                format!(
                    "{} carries DSCP {} while the other RoCE data ({}) carries DSCP {most}",
                    r.label(),
                    c.1,
                    plural(agreeing, "packet")
                ),
                "one host or QP is set up differently (its traffic class, or the ToS of its rdma_cm connection), so its traffic lands in another queue than the rest",
                Some(r.label()),
                r.packets,
                vec![r.first_frame],
            ));
        }
    }
    // The data flows (the requests responses are measured against), by a hash of the label,
    // not the label: 600,000 flows' labels as keys took 90 MB.
    let index: HashMap<u64, usize> = flows
        .iter()
        .enumerate()
        .filter(|(_, r)| r.role == FlowRole::Data)
        .map(|(i, r)| (label_hash(r.label_parts()), i))
        .collect();
    for (i, (r, f)) in flows.iter().zip(evidence).enumerate() {
        let peer = r.peer.as_ref().and_then(|p| {
            let j = *index.get(&label_hash(p.as_parts()))?;
            (flows[j].label_parts() == p.as_parts()).then_some(j)
        });
        let Some(j) = peer else {
            continue;
        };
        // Once per connection: on the responses, measured against the requests.
        if r.role != FlowRole::Responses || flows[j].role != FlowRole::Data || i == j {
            continue;
        }
        let (Some(mine), Some(theirs)) = (f.class, evidence[j].class) else {
            continue;
        };
        if mine.1 != theirs.1 && r.dqpn != 1 {
            out.push(finding(
                Severity::Warning,
                FindingCode::DscpMismatch,
                format!(
                    "{} answers with DSCP {} while its requests ({}) carry DSCP {}",
                    r.label(),
                    mine.1,
                    flows[j].label(),
                    theirs.1
                ),
                "the responder marks its responses and ACKs with another traffic class than the requester uses (a mis-set responder, or a switch rewriting one direction): ACKs and READ data queue elsewhere",
                Some(r.label()),
                r.packets,
                vec![r.first_frame],
            ));
        }
    }
}

/// A host whose RoCE data flows (sent or received) use several VLANs on one link: some of its
/// QPs, or its peers' QPs towards it, use the GID of another VLAN's interface. Judged per
/// (link, host) as sender and as receiver: traffic of different links or mirror sessions has
/// VLANs of its own and is never compared. One finding per set of minority flows (a QP on the
/// wrong VLAN shows at both its ends), named from the first host that shows it.
pub(super) fn vlan_mismatch(
    flows: &[&FlowReport],
    evidence: &[&FlowEvidence],
    out: &mut Vec<Finding>,
) {
    // (link, host) -> VLAN -> the data flows of that host on it, with the host's role.
    type ByVlan<'a> = BTreeMap<u16, Vec<&'a FlowReport>>;
    let mut by_host: BTreeMap<(u64, &str, bool), ByVlan> = BTreeMap::new();
    for (r, f) in flows.iter().zip(evidence) {
        let Some(v) = r.vlan.filter(|_| r.dqpn != 1 && r.role == FlowRole::Data) else {
            continue;
        };
        for (host, sends) in [(&*r.src, true), (&*r.dst, false)] {
            let e = by_host.entry((f.link, host, sends)).or_default();
            e.entry(v).or_default().push(r);
        }
    }
    let mut reported: Vec<Vec<u64>> = Vec::new();
    for ((_, host, sends), vlans) in by_host.into_iter().filter(|(_, v)| v.len() > 1) {
        let mut sizes: Vec<(usize, u16)> = vlans.iter().map(|(&v, f)| (f.len(), v)).collect();
        sizes.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let main = sizes[0].1;
        let others: Vec<&FlowReport> = vlans
            .iter()
            .filter(|(&v, _)| v != main)
            .flat_map(|(_, f)| f.iter().copied())
            .collect();
        let mut frames: Vec<u64> = others.iter().map(|r| r.first_frame).collect();
        frames.sort_unstable();
        if reported.contains(&frames) {
            continue;
        }
        reported.push(frames.clone());
        let mut peers: Vec<&str> = others
            .iter()
            .map(|r| if sends { &*r.dst } else { &*r.src })
            .collect();
        peers.sort_unstable();
        peers.dedup();
        let listed: Vec<String> = sizes
            .iter()
            .map(|(n, v)| format!("VLAN {v} ({})", plural(*n as u64, "flow")))
            .collect();
        let (verb, peer_role) = if sends {
            ("sends RoCE", "to")
        } else {
            ("is reached by RoCE", "from")
        };
        out.push(finding(
            Severity::Warning,
            FindingCode::VlanMismatch,
            format!(
                "{host} {verb} on several VLANs of one link: {}; off VLAN {main}: {peer_role} {}",
                listed.join(", "),
                peers.join(", ")
            ),
            "some QPs use a GID of another VLAN's interface (a wrong GID index, at this host or at its peers): their traffic gets that VLAN's priority and path",
            None,
            others.len() as u64,
            frames,
        ));
    }
}

fn is_link_local(ip: &IpAddr) -> bool {
    matches!(ip, IpAddr::V6(v6) if v6.segments()[0] & 0xffc0 == 0xfe80)
}

/// RoCEv1 frames, and RoCEv2 between link-local addresses: GID indexes that point at the
/// wrong table entry.
pub(super) fn gid_findings(
    flows: &[&FlowReport],
    evidence: &[&FlowEvidence],
    capture: &CaptureReport,
    out: &mut Vec<Finding>,
) {
    let v1 = capture.rocev1_packets;
    if v1 > 0 {
        let v2 = capture
            .roce_packets
            .saturating_sub(v1)
            .saturating_sub(capture.ib_packets);
        let first: Vec<u64> = flows
            .iter()
            .zip(evidence)
            .filter(|(_, f)| f.rocev1)
            .map(|(r, _)| r.first_frame)
            .take(1)
            .collect();
        let (severity, message) = if v2 > 0 {
            (
                Severity::Warning,
                format!(
                    "{} among {}",
                    plural(v1, "RoCEv1 frame"),
                    plural(v2, "RoCEv2 frame")
                ),
            )
        } else {
            (
                Severity::Info,
                format!(
                    "all {v1} RoCE frames are RoCEv1 (no IP header: not routable, no DSCP, no ECN)"
                ),
            )
        };
        out.push(finding(
            severity,
            FindingCode::Rocev1Frames,
            message,
            "a QP uses a GID index whose entry is RoCEv1 (each address has a v1 and a v2 entry): its traffic is not routed and gets no DSCP or ECN; pick the RoCEv2 GID (show_gids)",
            None,
            v1,
            first,
        ));
    }
    for (r, f) in flows.iter().zip(evidence) {
        // fe80::/10 is written "fe80:..." to "febf:...": no other address need be parsed.
        let link_local = [&r.src, &r.dst]
            .iter()
            .any(|h| h.starts_with("fe") && h.parse().is_ok_and(|ip| is_link_local(&ip)));
        if link_local && !f.rocev1 && !f.native_ib && r.role == FlowRole::Data {
            out.push(finding(
                Severity::Warning,
                FindingCode::LinkLocalGid,
                format!("RoCEv2 between link-local addresses on {}", r.label()),
                "the QP uses the GID of the interface's fe80:: address (usually GID index 0 or 1): it cannot be routed, and it is not the VLAN interface's GID, so the traffic gets no VLAN priority",
                Some(r.label()),
                r.packets,
                vec![r.first_frame],
            ));
        }
    }
}

/// UC/UD RoCE and non-RoCE traffic in the class of RC RoCE.
pub(super) fn lossless_class_polluted(
    flows: &[&FlowReport],
    evidence: &[&FlowEvidence],
    facts: &CaptureFacts,
    out: &mut Vec<Finding>,
) {
    let rc = || roce_data(flows, evidence).filter(|(_, r, _, _)| r.transport == Some("RC"));
    let pcp = majority(rc().filter_map(|(_, r, _, c)| Some((c.0?, r.packets)))).filter(|&p| p > 0);
    let dscp = majority(rc().map(|(_, r, _, c)| (c.1, r.packets))).filter(|&d| d > 0);
    if pcp.is_none() && dscp.is_none() {
        return;
    }
    let shown = match (pcp, dscp) {
        (Some(p), Some(d)) => format!("PCP {p} / DSCP {d}"),
        (Some(p), None) => format!("PCP {p}"),
        (None, Some(d)) => format!("DSCP {d}"),
        (None, None) => unreachable!("returned above"),
    };
    for (_, r, _, c) in roce_data(flows, evidence) {
        let unreliable = matches!(r.transport, Some("UC" | "UD"));
        if unreliable && ((c.0.is_some() && c.0 == pcp) || Some(c.1) == dscp) {
            out.push(finding(
                Severity::Warning,
                FindingCode::LosslessClassPolluted,
                format!(
                    "{} flow {} carries the RC RoCE class ({shown})",
                    r.transport.unwrap_or("?"),
                    r.label()
                ),
                "traffic that does not use RC's congestion handling shares the lossless queue: it fills its buffer and triggers pauses that stop RoCE too",
                Some(r.label()),
                r.packets,
                vec![r.first_frame],
            ));
        }
    }
    let by_pcp = pcp.map(|p| &facts.other_by_pcp[usize::from(p)]);
    let by_dscp = dscp.and_then(|d| facts.other_by_dscp.get(&d));
    let tagged = by_pcp.map_or(0, |e| e.count);
    let marked = by_dscp.map_or(0, |e| e.count);
    if tagged + marked > 0 {
        let mut frames: Vec<u64> = by_pcp
            .into_iter()
            .chain(by_dscp)
            .flat_map(|e| e.frames.iter().copied())
            .collect();
        frames.sort_unstable();
        frames.dedup();
        frames.truncate(crate::analysis::flow::EVIDENCE_FRAMES);
        out.push(finding(
            Severity::Warning,
            FindingCode::LosslessClassPolluted,
            format!(
                "non-RoCE frames carry the RoCE class ({shown}): {tagged} with its PCP, {marked} with its DSCP"
            ),
            "other traffic (TCP, storage, management) is classified into RoCE's lossless queue: it competes for its buffer and can trigger pauses that stop RoCE",
            None,
            tagged.max(marked),
            frames,
        ));
    }
}
