//! What the paths through the fabric show: QPs between two hosts that ECMP cannot spread,
//! because they carry one UDP source port (and, on IPv6, one flow label).

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::FxHashMap as HashMap;

use super::finding;
use crate::analysis::flow::{FlowEvidence, PathKey};
use crate::common::words::plural;
use crate::model::{Finding, FindingCode, FlowReport, FlowRole, Severity};

/// QPs carrying data from one host to another at once from which their paths are judged.
const ENTROPY_MIN_QPS: usize = 4;
/// QPs named in full in the finding.
const ENTROPY_LISTED: usize = 8;

/// Per pair of hosts (one direction): the moment the most QPs carried data at once on too
/// few path keys (one, or fewer than half the QPs), with `ENTROPY_MIN_QPS` or more.
pub(super) fn low_path_entropy(
    flows: &[&FlowReport],
    evidence: &[&FlowEvidence],
    out: &mut Vec<Finding>,
) {
    let mut by_hosts: BTreeMap<(&str, &str), Vec<(usize, PathKey)>> = BTreeMap::new();
    for (i, (r, f)) in flows.iter().zip(evidence).enumerate() {
        if let (FlowRole::Data, Some(path)) = (r.role, f.path) {
            by_hosts
                .entry((&r.src, &r.dst))
                .or_default()
                .push((i, path));
        }
    }
    for ((src, dst), members) in by_hosts {
        if members.len() < ENTROPY_MIN_QPS {
            continue;
        }
        if let Some(crowded) = crowded_moment(&members, evidence) {
            out.push(entropy_finding(src, dst, &crowded, flows));
        }
    }
}

/// The QPs of the most crowded moment with too few path keys, each with its key.
fn crowded_moment(
    members: &[(usize, PathKey)],
    evidence: &[&FlowEvidence],
) -> Option<Vec<(usize, PathKey)>> {
    let mut events: Vec<(u64, bool, usize, PathKey)> = Vec::with_capacity(members.len() * 2);
    for &(i, path) in members {
        events.push((evidence[i].first_ts_ns, true, i, path));
        events.push((evidence[i].last_ts_ns, false, i, path));
    }
    // Starts before ends at the same instant: touching intervals overlap.
    events.sort_by_key(|&(ts, start, i, _)| (ts, !start, i));
    let mut active: BTreeSet<(usize, PathKey)> = BTreeSet::new();
    let mut per_key: HashMap<PathKey, usize> = HashMap::default();
    let mut worst: Option<Vec<(usize, PathKey)>> = None;
    for (_, start, i, path) in events {
        if !start {
            active.remove(&(i, path));
            let n = per_key.entry(path).or_default();
            *n -= 1;
            if *n == 0 {
                per_key.remove(&path);
            }
            continue;
        }
        active.insert((i, path));
        *per_key.entry(path).or_default() += 1;
        let (qps, keys) = (active.len(), per_key.len());
        let too_few = keys == 1 || 2 * keys < qps;
        if qps >= ENTROPY_MIN_QPS && too_few && worst.as_ref().is_none_or(|w| qps > w.len()) {
            worst = Some(active.iter().copied().collect());
        }
    }
    worst
}

fn entropy_finding(
    src: &str,
    dst: &str,
    crowded: &[(usize, PathKey)],
    flows: &[&FlowReport],
) -> Finding {
    // Each port with its QPs (by QP number), at most `ENTROPY_LISTED` QPs named in all.
    let mut by_key: BTreeMap<PathKey, Vec<(u32, u64)>> = BTreeMap::new();
    for &(i, path) in crowded {
        by_key
            .entry(path)
            .or_default()
            .push((flows[i].dqpn, flows[i].first_frame));
    }
    let mut budget = ENTROPY_LISTED;
    let mut named_frames = Vec::new();
    let mut ports = Vec::new();
    for (key, qps) in &mut by_key {
        qps.sort_unstable();
        let shown = qps.len().min(budget);
        budget -= shown;
        named_frames.extend(qps[..shown].iter().map(|q| q.1));
        let mut names: Vec<String> = qps[..shown]
            .iter()
            .map(|(qpn, _)| format!("0x{qpn:06x}"))
            .collect();
        if shown < qps.len() {
            names.push(format!("{} more", qps.len() - shown));
        }
        ports.push(format!(
            "port {key} carries {} (qp {})",
            plural(qps.len() as u64, "QP"),
            names.join(", ")
        ));
    }
    named_frames.sort_unstable();
    finding(
        Severity::Warning,
        FindingCode::LowPathEntropy,
        format!(
            "low ECMP entropy: {} from {src} to {dst} carried data at once on {}: {}",
            plural(crowded.len() as u64, "QP"),
            plural(by_key.len() as u64, "UDP source port"),
            ports.join("; "),
        ),
        "ECMP picks a path by hashing the addresses, the UDP ports and, on IPv6, the flow label: QPs between two hosts that share a source port share a path, whatever the fabric's width, and congest one link while others idle; the NIC or its driver gives every QP the same source port (check its RoCE UDP source port or entropy setting)",
        None,
        crowded.len() as u64,
        named_frames,
    )
}

#[cfg(test)]
mod tests {
    use roce_testgen::scenario::{host, Conn, Timeline};
    use roce_testgen::writer::{pcap_bytes, PcapFlavor, T0_NS};

    use crate::analysis::report_build::CaptureMeta;
    use crate::analysis::{testing, Analyzer};

    /// QPs from .1 to .2, QP `k` on source port `ports[k]`, writing 10 messages 1 us apart
    /// from `starts_us[k]`: the findings' messages of code low_path_entropy.
    fn entropy_findings(ports: &[u16], starts_us: &[u64]) -> Vec<String> {
        let mut tl = Timeline::default();
        for (k, (&port, &start)) in ports.iter().zip(starts_us).enumerate() {
            let k = k as u32;
            let mut c = Conn::rc(host(1), host(2), None, 0x6a, 0x400 + k, 0x100 + k, 1000);
            c.sport = port;
            for m in 0..10 {
                let p = c.write(256).remove(0);
                let t = T0_NS + (start + m) * 1_000;
                tl.push(t, c.request_frame(&p));
                tl.push(t + 500, c.response_frame(&c.ack(p.bth.psn)));
            }
        }
        let data = pcap_bytes(&tl.into_frames(), PcapFlavor::NANO_LE, 1, 65535);
        let (an, counts) = testing::feed(&data, Analyzer::new(Default::default()), |_, _| {});
        an.finish(CaptureMeta {
            counts,
            ..Default::default()
        })
        .findings
        .into_iter()
        .filter(|f| f.code.name() == "low_path_entropy")
        .map(|f| f.message)
        .collect()
    }

    #[test]
    fn too_few_ports_for_the_qps_at_once_is_low_entropy() {
        let at_once = [0; 6];
        // 6 QPs on 2 ports: fewer than half as many ports as QPs.
        let two = entropy_findings(&[1, 1, 1, 2, 2, 2], &at_once);
        assert_eq!(two.len(), 1, "{two:?}");
        assert!(
            two[0].contains("6 QPs from 10.0.0.1 to 10.0.0.2 carried data at once on 2 UDP source ports: port 1 carries 3 QPs"),
            "{two:?}"
        );
        // On 3 ports, half of 6: enough.
        assert!(entropy_findings(&[1, 1, 2, 2, 3, 3], &at_once).is_empty());
        // 3 QPs on one port: too few to judge.
        assert!(entropy_findings(&[1, 1, 1], &[0; 3]).is_empty());
        // 6 QPs on one port, one after the other (never 4 at once): no finding.
        assert!(entropy_findings(&[7; 6], &[0, 20, 40, 60, 80, 100]).is_empty());
    }
}
