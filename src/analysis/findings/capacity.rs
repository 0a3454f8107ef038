//! What limits throughput when the network does not: hosts that cannot keep up, and a path
//! MTU that spends the link on headers.

use rustc_hash::FxHashMap as HashMap;

use super::finding;
use crate::analysis::flow::FlowEvidence;
use crate::common::units::{self, gbit_rate};
use crate::model::{Finding, FindingCode, FlowReport, FlowRole, Severity};

/// A flow steady for this long, below half the link, with no sign of the network, is
/// limited by its hosts.
const HOST_LIMITED_MIN_NS: f64 = 10e6;
/// Steady: never silent longer than this.
const HOST_LIMITED_MAX_GAP_NS: u64 = 1_000_000;
/// Bytes a RoCEv2 packet spends beyond its payload on a tagged IPv4 link: preamble and gap
/// 20, Ethernet 14, VLAN 4, IPv4 20, UDP 8, BTH 12, ICRC 4, FCS 4.
const PACKET_OVERHEAD: f64 = 86.0;

fn overhead_share(mtu: u32) -> f64 {
    PACKET_OVERHEAD / (f64::from(mtu) + PACKET_OVERHEAD) * 100.0
}

/// The largest RoCE MTU a standard 1500-byte Ethernet allows, and the most common setting:
/// no finding by itself.
const STANDARD_ETHERNET_MTU: u32 = 1024;

/// The two largest payloads (flow index, bytes) of the RoCE flows between each pair of hosts,
/// either way: what the path evidently carries. Only RoCE packets count (a tunnel's or
/// mirror's outer frames say nothing about the RoCE path).
pub(super) type LargestPayloads<'a> = HashMap<(&'a str, &'a str), [(usize, u32); 2]>;

pub(super) fn largest_payloads<'a>(
    flows: &[&'a FlowReport],
    evidence: &[&FlowEvidence],
) -> LargestPayloads<'a> {
    let mut by_hosts: LargestPayloads = HashMap::default();
    for (i, (r, f)) in flows.iter().zip(evidence).enumerate() {
        if f.max_payload == 0 {
            continue;
        }
        let top = by_hosts.entry(host_pair(r)).or_default();
        if f.max_payload > top[0].1 {
            top[1] = top[0];
            top[0] = (i, f.max_payload);
        } else if f.max_payload > top[1].1 {
            top[1] = (i, f.max_payload);
        }
    }
    by_hosts
}

fn host_pair(r: &FlowReport) -> (&str, &str) {
    if r.src <= r.dst {
        (&r.src, &r.dst)
    } else {
        (&r.dst, &r.src)
    }
}

/// A path MTU below 1024, or one below what the same path evidently allows (another QP
/// between the same hosts with a larger one, or an RDMA-CM request that offered more): 4096
/// would carry the same data in fewer packets.
pub(super) fn small_path_mtu(
    r: &FlowReport,
    f: &FlowEvidence,
    largest: &LargestPayloads,
    flows: &[&FlowReport],
    index: usize,
    out: &mut Vec<Finding>,
) {
    let Some(mtu) = f.path_mtu_seen.filter(|&m| m >= 256) else {
        return;
    };
    if r.role != FlowRole::Data || !matches!(r.transport, Some("RC" | "UC" | "XRC")) {
        return;
    }
    // Another QP's packets between the same hosts larger than this QP's MTU.
    let other = largest
        .get(&host_pair(r))
        .and_then(|top| top.iter().find(|&&(i, _)| i != index))
        .filter(|&&(_, bytes)| bytes > mtu);
    let evidence = if let Some(&(i, bytes)) = other {
        format!(
            "{} carries {bytes}-byte payloads between the same hosts",
            flows[i].label()
        )
    } else if let Some(offered) = f.cm_mtu().filter(|&m| m > mtu) {
        format!("its RDMA-CM request offered {offered}")
    } else if mtu < STANDARD_ETHERNET_MTU {
        format!("below {STANDARD_ETHERNET_MTU}, which even a 1500-byte Ethernet MTU allows")
    } else {
        return;
    };
    out.push(finding(
        Severity::Info,
        FindingCode::SmallPathMtu,
        format!(
            "path MTU {mtu} on {}: headers and framing take {:.1}% of the wire per full packet ({:.1}% at 4096); the path allows more: {evidence}",
            r.label(),
            overhead_share(mtu),
            overhead_share(4096)
        ),
        "the QP's path MTU (from the port's active MTU or rdma_cm) is smaller than the path carries: every message is cut into more packets, each paying the headers and the NIC's per-packet cost; raise the interface MTU (or the port's) so that RoCE uses 4096",
        Some(r.label()),
        r.packets,
        vec![r.first_frame],
    ));
}

/// A flow steady for 10 ms below half the link with no CE, pause, NAK or loss.
pub(super) fn host_limited(
    r: &FlowReport,
    f: &FlowEvidence,
    link_gbps: f64,
    paused: bool,
    out: &mut Vec<Finding>,
) {
    let Some(gbps) = r.rate.gbps else { return };
    let duration_ns = f.last_ts_ns.saturating_sub(f.first_ts_ns) as f64;
    let network_quiet = r.feedback.ce == 0
        && r.feedback.cnps == 0
        && r.feedback.naks.total() == 0
        && r.psn.missing + r.psn.recovered == 0
        && r.psn.retransmitted == 0
        && !paused;
    let steady = duration_ns >= HOST_LIMITED_MIN_NS && f.longest_gap_ns <= HOST_LIMITED_MAX_GAP_NS;
    if r.role != FlowRole::Data || !network_quiet || !steady || gbps >= link_gbps / 2.0 {
        return;
    }
    out.push(finding(
        Severity::Info,
        FindingCode::HostLimited,
        format!(
            "{} ran steadily at {} for {}, under half the {link_gbps} Gb/s link, with no CE, pause, NAK or loss",
            r.label(),
            gbit_rate(gbps),
            units::duration_ns(duration_ns as u64)
        ),
        "the network is not what holds this flow back: the limit is in the hosts (the application posting too little, PCIe, NUMA placement of memory or NIC, interrupt or CPU load)",
        Some(r.label()),
        r.packets,
        vec![r.first_frame],
    ));
}
