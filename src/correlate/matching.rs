//! One hop: the packets of two neighbouring points paired, the clocks' offset estimated, and
//! what the hop did to the packets counted.
//!
//! Clocks: the minimum delay of packets seen exactly once at both points is the hop's
//! propagation plus the clocks' offset one way, and propagation minus the offset the other way;
//! half their difference is the offset (NTP's estimate, exact when both directions take the
//! same minimum time). Queueing (delay beyond the minimum) needs no offset.

use std::collections::HashMap;

use rustc_hash::FxHashMap;

use super::{Flows, Point, Sighting};
use crate::model::{DelayStats, FlowHop, HopReport, QueueingStats};

/// Timestamps of two points may disagree by this much beyond the minimum delay (the capture
/// devices' timestamping jitter) and still explain each other.
const TIMESTAMP_SLACK_NS: i64 = 1_000;
/// Lost packets listed by frame number per hop.
const LOST_FRAMES_LISTED: usize = 1_000;

pub struct Hop {
    pub forward: HopReport,
    pub reverse: HopReport,
    /// Per flow (by `Flows` index): its forward packets on this hop, when it had any.
    pub flows: Vec<Option<FlowHop>>,
    /// The later point's clock minus the earlier's.
    pub offset_us: f64,
}

/// What one direction of a hop saw, accumulated.
#[derive(Default)]
struct Tally {
    matched: u64,
    lost: u64,
    appeared: u64,
    ce_marked: u64,
    dscp_changed: u64,
    pcp_changed: u64,
    /// Raw delays (the later timestamp minus the earlier, clocks as they are).
    raw_ns: Vec<i64>,
    lost_frames: Vec<u64>,
}

impl Tally {
    fn pair(&mut self, from: &Sighting, to: &Sighting) {
        self.matched += 1;
        self.ce_marked += u64::from(from.ecn != 3 && to.ecn == 3);
        self.dscp_changed += u64::from(from.dscp != to.dscp);
        self.pcp_changed += u64::from(from.pcp != 8 && to.pcp != 8 && from.pcp != to.pcp);
        self.raw_ns.push(to.ts as i64 - from.ts as i64);
    }

    fn lose(&mut self, from: &Sighting) {
        self.lost += 1;
        if self.lost_frames.len() < LOST_FRAMES_LISTED {
            self.lost_frames.push(from.frame);
        }
    }
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[i64], p: f64) -> Option<i64> {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted.get(rank.min(sorted.len()).checked_sub(1)?).copied()
}

fn us(ns: i64) -> f64 {
    ns as f64 / 1e3
}

/// Delay percentiles with the clock offset `offset_ns` taken out, and queueing.
fn delays(raw: &mut [i64], offset_ns: i64) -> (DelayStats, QueueingStats) {
    raw.sort_unstable();
    let Some(&min) = raw.first() else {
        return Default::default();
    };
    let at = |p| percentile(raw, p);
    let delay = |v: Option<i64>| v.map(|v| us(v - offset_ns));
    let queue = |v: Option<i64>| v.map(|v| us(v - min));
    (
        DelayStats {
            min: delay(Some(min)),
            p50: delay(at(50.0)),
            p99: delay(at(99.0)),
            max: delay(raw.last().copied()),
        },
        QueueingStats {
            p50: queue(at(50.0)),
            p99: queue(at(99.0)),
            max: queue(raw.last().copied()),
        },
    )
}

fn hop_report(
    from: &str,
    to: &str,
    mut t: Tally,
    offset_ns: i64,
    method: &'static str,
) -> HopReport {
    let (delay_us, queueing_us) = delays(&mut t.raw_ns, offset_ns);
    t.lost_frames.sort_unstable();
    HopReport {
        from: from.to_string(),
        to: to.to_string(),
        matched: t.matched,
        lost: t.lost,
        appeared: t.appeared,
        ce_marked: t.ce_marked,
        dscp_changed: t.dscp_changed,
        pcp_changed: t.pcp_changed,
        delay_us,
        queueing_us,
        lost_frames: t.lost_frames,
        clock_method: method,
    }
}

/// For each copy at the later point (times `to`), the copy at the earlier point (times
/// `from`) it is: the latest one not yet used that is early enough, by the hop's minimum
/// delay, to explain it. Without a known minimum, the k-th copy pairs with the k-th.
fn pair_copies(from: &[u64], to: &[u64], min_raw: Option<i64>) -> Vec<Option<usize>> {
    let mut next = 0;
    to.iter()
        .map(|&t| {
            let chosen = match min_raw {
                Some(m) => {
                    let limit = t as i64 - m + TIMESTAMP_SLACK_NS;
                    (next..from.len())
                        .take_while(|&j| from[j] as i64 <= limit)
                        .last()
                }
                None => (next < from.len()).then_some(next),
            };
            if let Some(c) = chosen {
                next = c + 1;
            }
            chosen
        })
        .collect()
}

/// Indices of each packet group's sightings at the two points, in time order.
type Groups = FxHashMap<u64, (Vec<u32>, Vec<u32>)>;

fn groups(a: &Point, b: &Point) -> Groups {
    let mut g: Groups = FxHashMap::default();
    for (i, s) in a.sightings.iter().enumerate() {
        g.entry(s.group).or_default().0.push(i as u32);
    }
    for (i, s) in b.sightings.iter().enumerate() {
        g.entry(s.group).or_default().1.push(i as u32);
    }
    g
}

/// The minimum raw delay of each direction, from packets seen exactly once at both points.
fn minimum_delays(a: &Point, b: &Point, groups: &Groups) -> (Option<i64>, Option<i64>) {
    let (mut fwd, mut rev): (Option<i64>, Option<i64>) = (None, None);
    for (xa, xb) in groups.values() {
        if let ([i], [j]) = (xa.as_slice(), xb.as_slice()) {
            let (sa, sb) = (&a.sightings[*i as usize], &b.sightings[*j as usize]);
            if sa.forward {
                let raw = sb.ts as i64 - sa.ts as i64;
                fwd = Some(fwd.map_or(raw, |m| m.min(raw)));
            } else {
                let raw = sa.ts as i64 - sb.ts as i64;
                rev = Some(rev.map_or(raw, |m| m.min(raw)));
            }
        }
    }
    (fwd, rev)
}

/// Pairs the packets of points `a` and `b` (a before b on the path).
pub fn match_hop(a: &Point, b: &Point, flows: &Flows) -> Hop {
    let groups = groups(a, b);
    let (min_fwd, min_rev) = minimum_delays(a, b, &groups);
    let (offset_ns, method) = match (min_fwd, min_rev) {
        (Some(f), Some(r)) => ((f - r) / 2, "two_way"),
        (Some(f), None) => (f, "forward_only"),
        (None, Some(r)) => (-r, "reverse_only"),
        (None, None) => (0, "none"),
    };
    let (mut fwd, mut rev) = (Tally::default(), Tally::default());
    let mut per_flow: HashMap<u32, Tally> = HashMap::new();
    // Groups in the order of their first sighting, so that every list comes out the same on
    // every run.
    let mut order: Vec<(u64, u64)> = groups
        .iter()
        .map(|(&g, (xa, xb))| {
            let first = xa
                .first()
                .map(|&i| a.sightings[i as usize].ts)
                .into_iter()
                .chain(xb.first().map(|&j| b.sightings[j as usize].ts))
                .min()
                .unwrap_or(0);
            (first, g)
        })
        .collect();
    order.sort_unstable();
    for (_, g) in order {
        let (xa, xb) = &groups[&g];
        let first = xa
            .first()
            .map(|&i| &a.sightings[i as usize])
            .or_else(|| xb.first().map(|&j| &b.sightings[j as usize]));
        let Some(forward) = first.map(|s| s.forward) else {
            continue;
        };
        let (from_pt, from_ix, to_pt, to_ix, min_raw, tally) = if forward {
            (a, xa, b, xb, min_fwd, &mut fwd)
        } else {
            (b, xb, a, xa, min_rev, &mut rev)
        };
        let from: Vec<&Sighting> = from_ix
            .iter()
            .map(|&i| &from_pt.sightings[i as usize])
            .collect();
        let to: Vec<&Sighting> = to_ix
            .iter()
            .map(|&i| &to_pt.sightings[i as usize])
            .collect();
        let from_ts: Vec<u64> = from.iter().map(|s| s.ts).collect();
        let to_ts: Vec<u64> = to.iter().map(|s| s.ts).collect();
        let mut used = vec![false; from.len()];
        let flow = forward.then(|| per_flow.entry(first.map_or(0, |s| s.flow)).or_default());
        let mut flow = flow;
        for (k, m) in pair_copies(&from_ts, &to_ts, min_raw)
            .into_iter()
            .enumerate()
        {
            match m {
                Some(j) => {
                    used[j] = true;
                    tally.pair(from[j], to[k]);
                    if let Some(f) = flow.as_deref_mut() {
                        f.pair(from[j], to[k]);
                    }
                }
                None => tally.appeared += 1,
            }
        }
        for (j, _) in used.iter().enumerate().filter(|(_, u)| !**u) {
            tally.lose(from[j]);
            if let Some(f) = flow.as_deref_mut() {
                f.lose(from[j]);
            }
        }
    }
    let mut flow_hops = vec![None; flows.keys.len()];
    for (id, mut t) in per_flow {
        let (delay, _) = delays(&mut t.raw_ns, offset_ns);
        flow_hops[id as usize] = Some(FlowHop {
            from: a.name.clone(),
            to: b.name.clone(),
            matched: t.matched,
            lost: t.lost,
            ce_marked: t.ce_marked,
            dscp_changed: t.dscp_changed,
            delay_p50_us: delay.p50,
            lost_frames: {
                t.lost_frames.sort_unstable();
                t.lost_frames
            },
        });
    }
    Hop {
        forward: hop_report(&a.name, &b.name, fwd, offset_ns, method),
        reverse: hop_report(&b.name, &a.name, rev, -offset_ns, method),
        flows: flow_hops,
        offset_us: us(offset_ns),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_original_is_not_paired_with_its_resend() {
        // Upstream: the original at 0 and its resend at 500 us; downstream only the resend,
        // 2 us later. The hop's minimum delay is 2 us.
        assert_eq!(
            pair_copies(&[0, 500_000], &[502_000], Some(2_000)),
            vec![Some(1)]
        );
        // Both arrived: each pairs with its own.
        assert_eq!(
            pair_copies(&[0, 500_000], &[2_000, 502_000], Some(2_000)),
            vec![Some(0), Some(1)]
        );
        // A copy downstream that nothing upstream explains appeared.
        assert_eq!(pair_copies(&[10_000], &[5_000], Some(2_000)), vec![None]);
        // Without a minimum: in order.
        assert_eq!(pair_copies(&[1, 2], &[5], None), vec![Some(0)]);
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<i64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), Some(50));
        assert_eq!(percentile(&v, 99.0), Some(99));
        assert_eq!(percentile(&[], 50.0), None);
    }
}
