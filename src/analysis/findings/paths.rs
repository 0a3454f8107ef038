//! What the paths through the fabric show: QPs between two hosts that ECMP cannot spread,
//! because they carry one UDP source port (and, on IPv6, one flow label).

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::FxHashMap as HashMap;

use super::finding;
use crate::analysis::flow::{FlowEvidence, PathKey};
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
    let mut keys: BTreeMap<PathKey, usize> = BTreeMap::new();
    for &(_, path) in crowded {
        *keys.entry(path).or_default() += 1;
    }
    let ports: Vec<String> = keys.iter().map(|(k, n)| format!("{k} ({n} QPs)")).collect();
    let mut listed: Vec<(u32, PathKey, u64)> = crowded
        .iter()
        .map(|&(i, path)| (flows[i].dqpn, path, flows[i].first_frame))
        .collect();
    listed.sort();
    let qps: Vec<String> = listed
        .iter()
        .take(ENTROPY_LISTED)
        .map(|(qpn, path, _)| format!("qp 0x{qpn:06x} port {}", path.sport))
        .collect();
    let more = listed.len().saturating_sub(ENTROPY_LISTED);
    let more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    let word = if keys.len() == 1 { "port" } else { "ports" };
    finding(
        Severity::Warning,
        FindingCode::LowPathEntropy,
        format!(
            "low ECMP entropy: {} QPs from {src} to {dst} carried data at once on {} UDP source {word}: {}; {}{more}",
            crowded.len(),
            keys.len(),
            ports.join(", "),
            qps.join(", "),
        ),
        "ECMP picks a path by hashing the addresses, the UDP ports and, on IPv6, the flow label: QPs between two hosts that share a source port share a path, whatever the fabric's width, and congest one link while others idle; the NIC or its driver gives every QP the same source port (check its RoCE UDP source port or entropy setting)",
        None,
        crowded.len() as u64,
        first_frames(&listed),
    )
}

/// The first frames of the QPs named, in capture order.
fn first_frames(listed: &[(u32, PathKey, u64)]) -> Vec<u64> {
    let mut frames: Vec<u64> = listed.iter().take(ENTROPY_LISTED).map(|l| l.2).collect();
    frames.sort_unstable();
    frames
}
