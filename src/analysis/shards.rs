//! The analysis in shards (`--shards N`), keyed by the unordered pair of IP addresses after
//! decapsulation: a QP's two directions, its ACKs, NAKs, CNPs, READ responses and its RDMA-CM
//! exchange all meet in the shard of their pair, so a shard needs nothing of another on the
//! per-frame path, and the shards run side by side on the cores.
//!
//! What crosses pairs, and how (docs/design.md, "Shards"):
//! - frames without an IP pair (PFC, 802.3x, LLDP) go to shard 0, the port shard, which owns
//!   the priority tables; every other shard follows the PFC pause state from the same frames
//!   (PFC frames are few), so that each can tell a RoCE frame sent into a pause;
//! - UD senders' PSN sequences span destinations: they are judged before the shards (`ud`);
//! - every shard sees every frame's time: segments, idle flows and the timelines' origin follow
//!   the capture's clock, not a shard's;
//! - `--max-flows` counts the open flows of every shard;
//! - the merge renumbers flows by first frame, as one analysis numbers them, and every
//!   capture-wide figure merges by a rule that does not depend on the order: sums, the earliest
//!   frames, samples kept by the hash of their flow's first frame. A report is then built from
//!   the merged state as from one analysis's, so it is the same for any number of shards.

use std::net::IpAddr;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use rayon::prelude::*;

use super::latency::mix64;
use super::psn::Arrival;
use super::report_build::{AnalysisEnd, CaptureMeta};
use super::{flow::ip_bits, AnalysisConfig, Analyzer, Segments, NO_RATE};
use crate::decode::summary::{PacketSummary, Payload};

/// What a shard does with a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// Its own frame: analysed.
    Own,
    /// A PFC frame of the port shard: its pause state is followed.
    PauseState,
    /// Another shard's frame: only its time.
    Clock,
}

/// The shard among `n` of a frame between `a` and `b`, either way round: a multiplicative mix
/// of each address, XORed (the addresses XORed unmixed cancel on rail-optimised fabrics,
/// where 10.0.1.x talks to 10.0.2.x). Live capture workers place frames by the same function.
pub fn shard_of_pair(a: IpAddr, b: IpAddr, n: usize) -> usize {
    let h = |ip: IpAddr| {
        let bits = ip_bits(ip);
        mix64(bits as u64 ^ (bits >> 64) as u64 ^ 0x5bd1_e995)
    };
    ((h(a) ^ h(b)) % n.max(1) as u64) as usize
}

/// Where a frame goes: the shard of its pair, or, without one, the port shard (a PFC frame's
/// pause state to every shard).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Pair(u32),
    Port,
    Pfc,
}

impl Route {
    fn of(p: &PacketSummary, n: usize) -> Route {
        match (p.addrs, &p.payload) {
            (Some((a, b)), _) => Route::Pair(shard_of_pair(a, b, n) as u32),
            (None, Payload::Pfc { .. }) => Route::Pfc,
            (None, _) => Route::Port,
        }
    }

    /// What shard `shard` does with the frame.
    #[inline]
    fn part(self, shard: usize) -> Part {
        match self {
            Route::Pair(s) if s as usize == shard => Part::Own,
            Route::Port | Route::Pfc if shard == 0 => Part::Own,
            Route::Pfc => Part::PauseState,
            _ => Part::Clock,
        }
    }
}

/// What is judged before the shards, in capture order.
#[derive(Default)]
struct Front {
    ud: super::ud::UdSenders,
    segments: Segments,
    last_ts: u64,
}

impl Front {
    fn judge(&mut self, p: &PacketSummary) -> Option<Arrival> {
        if self.segments.begins_at(p, self.last_ts) {
            self.ud.clear();
        }
        self.last_ts = self.last_ts.max(p.ts_ns);
        self.ud.judge(p)
    }
}

/// The analysis of a capture read from files, in `n` shards.
pub struct Shards {
    front: Front,
    shards: Vec<Analyzer>,
    /// The open flows of every shard, against `--max-flows`.
    open_flows: Arc<AtomicUsize>,
    max_flows: usize,
    /// Each frame of the chunk being fed: where it goes, its UD verdict.
    routes: Vec<(Route, Option<Arrival>)>,
}

impl Shards {
    /// `n` shards (at least one) of an analysis that keeps every flow for the report.
    pub fn new(cfg: AnalysisConfig, n: usize) -> Self {
        assert!(
            cfg.keep_ended && !cfg.notes,
            "shards keep every flow and take no notes"
        );
        let open_flows = Arc::new(AtomicUsize::new(0));
        let shards = (0..n.max(1))
            .map(|_| {
                let mut an = Analyzer::new(cfg);
                an.open_flows = Some(Arc::clone(&open_flows));
                an
            })
            .collect();
        Shards {
            front: Front::default(),
            shards,
            open_flows,
            max_flows: cfg.max_flows,
            routes: Vec::new(),
        }
    }

    pub fn count(&self) -> usize {
        self.shards.len()
    }

    /// Feeds `frames`, in capture order: each shard takes its own in order, the shards side by
    /// side. A chunk that could fill the flow table (`--max-flows`) goes frame by frame through
    /// every shard instead, so that the flows refused are the ones one analysis refuses.
    pub fn feed(&mut self, frames: &[PacketSummary]) {
        let n = self.shards.len();
        self.routes.clear();
        for p in frames {
            let ud = self.front.judge(p);
            self.routes.push((Route::of(p, n), ud));
        }
        let routes = &self.routes;
        let feed = |(i, an): (usize, &mut Analyzer)| {
            for (p, &(route, ud)) in frames.iter().zip(routes) {
                an.feed_shard(p, ud, route.part(i));
            }
        };
        let open = self.open_flows.load(std::sync::atomic::Ordering::Relaxed);
        if open + frames.len() >= self.max_flows {
            for (p, &(route, ud)) in frames.iter().zip(routes) {
                for (i, an) in self.shards.iter_mut().enumerate() {
                    an.feed_shard(p, ud, route.part(i));
                }
            }
        } else if n == 1 {
            self.shards.iter_mut().enumerate().for_each(feed);
        } else {
            self.shards.par_iter_mut().enumerate().for_each(feed);
        }
    }

    /// The shards merged into one analysis, as one analysis of every frame would have it.
    pub fn merged(self) -> Analyzer {
        let mut shards = self.shards;
        let ids = capture_ids(&shards);
        for (an, ids) in shards.iter_mut().zip(&ids) {
            an.renumber(ids);
        }
        let mut merged = shards.remove(0);
        for an in shards {
            merged.absorb(an);
        }
        merged
    }

    /// Ends the analysis: the shards merged, the report built.
    pub fn finish_all(self, meta: CaptureMeta) -> AnalysisEnd {
        self.merged().finish_all(meta)
    }
}

/// For each shard, the capture-wide id of each of its flows (by the shard's own id): flows
/// numbered by first frame across the shards, as one analysis numbers them.
fn capture_ids(shards: &[Analyzer]) -> Vec<Vec<u64>> {
    let mut firsts: Vec<(u64, u32, u32)> = Vec::new();
    for (s, an) in shards.iter().enumerate() {
        let kept = an.kept.reports.iter().map(|r| (r.first_frame, r.id - 1));
        let open = an.flows.iter().map(|f| (f.first_frame, f.id as usize));
        for (first, id) in kept.chain(open) {
            firsts.push((first, s as u32, id as u32));
        }
    }
    firsts.sort_unstable();
    let mut ids: Vec<Vec<u64>> = shards
        .iter()
        .map(|an| vec![u64::MAX; an.next_flow_id as usize])
        .collect();
    for (n, &(_, s, id)) in firsts.iter().enumerate() {
        ids[s as usize][id as usize] = n as u64;
    }
    ids
}

impl Analyzer {
    /// Numbers this shard's flows by `ids` (its own id to the capture's).
    fn renumber(&mut self, ids: &[u64]) {
        for i in 0..self.flows.len() {
            let f = &mut self.flows[i];
            f.id = ids[f.id as usize];
        }
        for i in 0..self.kept.reports.len() {
            let r = &mut self.kept.reports[i];
            r.id = ids[r.id - 1] as usize + 1;
        }
        if let Some(t) = self.timelines.as_mut() {
            t.renumber(ids);
        }
        self.index.clear();
        self.data_by_hosts.clear();
        self.last_flow_index = usize::MAX;
    }

    /// Takes in another shard's state, numbered as this one is. The port shard's priority
    /// tables stay: the other shards' are copies of the same frames.
    fn absorb(&mut self, o: Analyzer) {
        self.totals.absorb(&o.totals);
        let offset = self.flows.len();
        for mut f in o.flows {
            f.peer = f.peer.map(|j| j + offset);
            self.flows.push(f);
            self.rate_slots.push(NO_RATE);
        }
        for r in o.kept.reports {
            self.kept.reports.push(r);
        }
        for e in o.kept.evidence {
            self.kept.evidence.push(e);
        }
        self.next_flow_id += o.next_flow_id;
        self.flows_ended += o.flows_ended;
        self.ended_rtt.extend(o.ended_rtt);
        self.hosts.absorb(o.hosts);
        self.cm_requests.extend(o.cm_requests);
        self.state.absorb(o.state);
        match (self.timelines.as_mut(), o.timelines) {
            (Some(t), Some(other)) => t.absorb(other),
            (None, other) => self.timelines = other,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_has_one_shard_either_way_round() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        for n in [1, 2, 3, 8, 16] {
            for (a, b) in [("10.0.0.1", "10.0.0.2"), ("fe80::1", "10.1.2.3")] {
                let s = shard_of_pair(ip(a), ip(b), n);
                assert_eq!(s, shard_of_pair(ip(b), ip(a), n));
                assert!(s < n);
            }
        }
    }

    #[test]
    fn rail_pairs_spread_over_the_shards() {
        // 10.0.1.x to 10.0.2.x: the addresses XORed unmixed give every pair one value.
        let mut per_shard = [0usize; 8];
        for x in 1..=64u8 {
            let a = IpAddr::from([10, 0, 1, x]);
            let b = IpAddr::from([10, 0, 2, x]);
            per_shard[shard_of_pair(a, b, 8)] += 1;
        }
        assert!(
            per_shard.iter().all(|&c| (3..=14).contains(&c)),
            "{per_shard:?}"
        );
    }
}
