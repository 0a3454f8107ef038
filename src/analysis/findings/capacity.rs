//! What limits throughput when the network does not: hosts that cannot keep up, and a path
//! MTU that spends the link on headers.

use super::finding;
use crate::analysis::flow::FlowEvidence;
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

/// A path MTU of 256 to 1024 where 4096 would carry the same data in fewer packets.
pub(super) fn small_path_mtu(r: &FlowReport, out: &mut Vec<Finding>) {
    let Some(mtu) = r.path_mtu.filter(|m| (256..=1024).contains(m)) else {
        return;
    };
    if r.role != FlowRole::Data || !matches!(r.transport, Some("RC" | "UC" | "XRC")) {
        return;
    }
    out.push(finding(
        Severity::Info,
        FindingCode::SmallPathMtu,
        format!(
            "path MTU {mtu} on {}: headers and framing take {:.1}% of the wire per full packet ({:.1}% at 4096)",
            r.label(),
            overhead_share(mtu),
            overhead_share(4096)
        ),
        "the QP's path MTU (from the port's active MTU or rdma_cm) is small: every message is cut into more packets, each paying the headers and the NIC's per-packet cost; raise the interface MTU so that RoCE uses 4096",
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
    let Some(gbps) = r.gbps else { return };
    let duration_ns = f.last_ts_ns.saturating_sub(f.first_ts_ns) as f64;
    let network_quiet = r.ce == 0
        && r.cnps == 0
        && r.naks.total() == 0
        && r.psn.gaps == 0
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
            "{} ran steadily at {gbps:.2} Gb/s for {:.1} ms, under half the {link_gbps} Gb/s link, with no CE, pause, NAK or loss",
            r.label(),
            duration_ns / 1e6
        ),
        "the network is not what holds this flow back: the limit is in the hosts (the application posting too little, PCIe, NUMA placement of memory or NIC, interrupt or CPU load)",
        Some(r.label()),
        r.packets,
        vec![r.first_frame],
    ));
}
