//! The end points: one entry per IP address that sends or receives RoCE, with the MACs seen
//! for it and how its NIC reacts to loss and congestion, as the receiver of data (it NAKs,
//! sends CNPs, ACKs) and as its sender (it resends, slows down after CNPs). A data flow's
//! receiver is its destination and its sender its source: the requester for WRITE and SEND, the
//! responder on a flow of READ responses. Flows fold in as they end (a live capture frees
//! them); a report adds the flows still open.

use std::net::IpAddr;

use roce_parsers::MacAddr;
use rustc_hash::FxHashMap;

use super::cm::CmSetup;
use super::flow::Flow;
use super::latency::PooledSamples;
use super::nic::{resend_policy, RATIO_UNIT};
use crate::common::rare::Rare;
use crate::model::{
    CmReport, HostReport, RateCutUnmeasured, ReceiverReport, ResendPolicyCounts, SenderReport,
};

/// Samples kept per host and figure for percentiles: a host table of a thousand hosts stays
/// within megabytes. Pooled (`PooledSamples`): the same ones are kept whatever the order the
/// flows fold in, so that the figures do not depend on the number of shards.
const HOST_RESERVOIR: usize = 256;
/// MACs listed per host (a host behind routers shows theirs): the first seen, by frame.
const MACS_KEPT: usize = 8;
/// NAK frames kept per host as a finding's evidence: the earliest.
const NAK_FRAMES_KEPT: usize = 5;

#[derive(Debug, Clone)]
pub struct HostTable {
    hosts: FxHashMap<HostAddr, Host>,
    /// (address, MAC) pairs recorded lately, by a hash of the pair: a churn of QPs between
    /// a few dozen hosts records each pair once, not every flow's.
    macs_recorded: Box<[Option<(IpAddr, MacAddr)>; MAC_SLOTS]>,
}

const MAC_SLOTS: usize = 256;

/// An address hashed as one number: `IpAddr`'s own hash (a tag, a length, the bytes) costs a
/// churn's flows more than the rest of what they fold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct HostAddr(IpAddr);

impl std::hash::Hash for HostAddr {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        h.write_u128(super::flow::ip_bits(self.0));
    }
}

#[derive(Debug, Clone, Default)]
struct Host {
    /// (first frame, MAC), in frame order.
    macs: Vec<(u64, MacAddr)>,
    receiver: Rare<Receiver>,
    sender: Rare<Sender>,
}

#[derive(Debug, Clone)]
struct Receiver {
    nak_generation: PooledSamples,
    nak_generation_untimed: u64,
    cnp_generation: PooledSamples,
    cnp_generation_untimed: u64,
    cnp_interval: PooledSamples,
    ack_rtt: PooledSamples,
    nak_frames: Vec<u64>,
}

impl Default for Receiver {
    fn default() -> Self {
        Receiver {
            nak_generation: PooledSamples::with_reservoir(HOST_RESERVOIR),
            nak_generation_untimed: 0,
            cnp_generation: PooledSamples::with_reservoir(HOST_RESERVOIR),
            cnp_generation_untimed: 0,
            cnp_interval: PooledSamples::with_reservoir(HOST_RESERVOIR),
            ack_rtt: PooledSamples::with_reservoir(HOST_RESERVOIR),
            nak_frames: Vec::new(),
        }
    }
}

crate::empty!(Receiver);

#[derive(Debug, Clone)]
struct Sender {
    nak_to_retransmit: PooledSamples,
    rnr_wait: PooledSamples,
    timeout_resend: PooledSamples,
    rate_cut: PooledSamples,
    rate_cut_unmeasured: RateCutUnmeasured,
    go_back_n: u64,
    selective: u64,
    nak_episodes: u64,
    resent_psns: u64,
    /// The CM setup of the latest connection set up (by its flow's first frame).
    cm: Option<(u64, CmSetup)>,
}

impl Default for Sender {
    fn default() -> Self {
        Sender {
            nak_to_retransmit: PooledSamples::with_reservoir(HOST_RESERVOIR),
            rnr_wait: PooledSamples::with_reservoir(HOST_RESERVOIR),
            timeout_resend: PooledSamples::with_reservoir(HOST_RESERVOIR),
            rate_cut: PooledSamples::with_reservoir(HOST_RESERVOIR),
            rate_cut_unmeasured: RateCutUnmeasured::default(),
            go_back_n: 0,
            selective: 0,
            nak_episodes: 0,
            resent_psns: 0,
            cm: None,
        }
    }
}

crate::empty!(Sender);

impl Receiver {
    fn absorb(&mut self, o: &Receiver) {
        self.nak_generation.merge(&o.nak_generation);
        self.nak_generation_untimed += o.nak_generation_untimed;
        self.cnp_generation.merge(&o.cnp_generation);
        self.cnp_generation_untimed += o.cnp_generation_untimed;
        self.cnp_interval.merge(&o.cnp_interval);
        self.ack_rtt.merge(&o.ack_rtt);
        merge_nak_frames(&mut self.nak_frames, &o.nak_frames);
    }
}

impl Sender {
    fn absorb(&mut self, o: &Sender) {
        self.nak_to_retransmit.merge(&o.nak_to_retransmit);
        self.rnr_wait.merge(&o.rnr_wait);
        self.timeout_resend.merge(&o.timeout_resend);
        self.rate_cut.merge(&o.rate_cut);
        self.rate_cut_unmeasured.add(&o.rate_cut_unmeasured);
        self.go_back_n += o.go_back_n;
        self.selective += o.selective;
        self.nak_episodes += o.nak_episodes;
        self.resent_psns += o.resent_psns;
        if let Some((first, cm)) = o.cm {
            if self.cm.is_none_or(|(set_up, _)| set_up <= first) {
                self.cm = Some((first, cm));
            }
        }
    }
}

impl Host {
    fn saw_mac(&mut self, frame: u64, mac: MacAddr) {
        merge_macs(&mut self.macs, &[(frame, mac)]);
    }
}

/// `more` into `macs`, each MAC once at its first frame: the `MACS_KEPT` seen first.
fn merge_macs(macs: &mut Vec<(u64, MacAddr)>, more: &[(u64, MacAddr)]) {
    for &(frame, mac) in more {
        match macs.iter_mut().find(|(_, m)| *m == mac) {
            Some(seen) => seen.0 = seen.0.min(frame),
            None => macs.push((frame, mac)),
        }
    }
    macs.sort_unstable();
    macs.truncate(MACS_KEPT);
}

/// `more` into `frames`, the `NAK_FRAMES_KEPT` earliest kept.
fn merge_nak_frames(frames: &mut Vec<u64>, more: &[u64]) {
    if more.is_empty() {
        return;
    }
    frames.extend_from_slice(more);
    frames.sort_unstable();
    frames.dedup();
    frames.truncate(NAK_FRAMES_KEPT);
}

impl Default for HostTable {
    fn default() -> Self {
        HostTable {
            hosts: FxHashMap::default(),
            macs_recorded: Box::new([None; MAC_SLOTS]),
        }
    }
}

impl HostTable {
    fn host(&mut self, ip: IpAddr) -> &mut Host {
        self.hosts.entry(HostAddr(ip)).or_default()
    }

    /// A new flow's first frame (`frame`): its source address and MAC, its destination's.
    pub fn saw_macs(&mut self, frame: u64, macs: [(IpAddr, Option<MacAddr>); 2]) {
        for (ip, mac) in macs {
            let Some(mac) = mac else { continue };
            let slot = {
                use std::hash::{BuildHasher, Hash, Hasher};
                let mut h = rustc_hash::FxBuildHasher.build_hasher();
                HostAddr(ip).hash(&mut h);
                mac.0.hash(&mut h);
                h.finish() as usize % MAC_SLOTS
            };
            if self.macs_recorded[slot] != Some((ip, mac)) {
                self.host(ip).saw_mac(frame, mac);
                self.macs_recorded[slot] = Some((ip, mac));
            }
        }
    }

    /// Folds what flow `f` showed by `now` into its two hosts.
    pub fn fold(&mut self, f: &Flow, now: u64) {
        let first = f.first_frame;
        if f.ack_rtt.count() > 0 {
            self.host(f.key.dst)
                .receiver
                .ack_rtt
                .pool(&f.ack_rtt, first);
        }
        if let Some(events) = f.recovery.events() {
            let s = &mut *self.host(f.key.src).sender;
            s.nak_to_retransmit.pool(events.nak_to_resend(), first);
            s.rnr_wait.pool(events.rnr_wait(), first);
            s.timeout_resend.pool(events.timeout_interval(), first);
        }
        if let Some(cm) = f.cm.as_deref().filter(|_| f.requests > 0) {
            let s = &mut *self.host(f.key.src).sender;
            if s.cm.is_none_or(|(set_up, _)| set_up <= first) {
                s.cm = Some((first, *cm));
            }
        }
        if f.nic.is_set() {
            self.fold_nic(f, now);
        }
    }

    #[cold]
    fn fold_nic(&mut self, f: &Flow, now: u64) {
        let n = &*f.nic;
        let first = f.first_frame;
        let r = &mut *self.host(f.key.dst).receiver;
        r.nak_generation.pool(&n.nak_generation, first);
        r.nak_generation_untimed += n.nak_generation_untimed;
        r.cnp_generation.pool(&n.cnp_generation, first);
        r.cnp_generation_untimed += n.cnp_generation_untimed;
        r.cnp_interval.pool(&n.cnp_interval, first);
        merge_nak_frames(&mut r.nak_frames, &n.nak_frames);
        let s = &mut *self.host(f.key.src).sender;
        s.go_back_n += n.go_back_n;
        s.selective += n.selective;
        s.nak_episodes += n.nak_episodes;
        s.resent_psns += n.resent_psns;
        let (cuts, unmeasured) = n.rate_cuts(now);
        s.rate_cut.pool(&cuts, first);
        s.rate_cut_unmeasured.add(&unmeasured);
    }

    /// Adds what `other` (another shard's table) holds: the result does not depend on which
    /// table absorbs which, nor in which order.
    pub fn absorb(&mut self, other: HostTable) {
        for (ip, h) in other.hosts {
            let mine = self.hosts.entry(ip).or_default();
            merge_macs(&mut mine.macs, &h.macs);
            if let Some(r) = h.receiver.get() {
                mine.receiver.absorb(r);
            }
            if let Some(s) = h.sender.get() {
                mine.sender.absorb(s);
            }
        }
    }

    /// The table at `now`, with the flows still `open` folded in, by address.
    pub fn report<'a>(&self, open: impl Iterator<Item = &'a Flow>, now: u64) -> Vec<HostReport> {
        let mut table = self.clone();
        for f in open {
            table.fold(f, now);
        }
        let mut hosts: Vec<(HostAddr, Host)> = table.hosts.into_iter().collect();
        hosts.sort_by_key(|(ip, _)| *ip);
        hosts
            .into_iter()
            .map(|(ip, h)| HostReport {
                ip: ip.0.to_string(),
                macs: h.macs.iter().map(|(_, m)| m.to_string()).collect(),
                as_receiver: receiver_report(&h.receiver),
                as_sender: sender_report(&h.sender),
            })
            .collect()
    }
}

fn receiver_report(r: &Receiver) -> ReceiverReport {
    ReceiverReport {
        nak_generation_us: r.nak_generation.summary(),
        nak_generation_untimed: r.nak_generation_untimed,
        cnp_generation_us: r.cnp_generation.summary(),
        cnp_generation_untimed: r.cnp_generation_untimed,
        cnp_interval_us: r.cnp_interval.summary(),
        ack_rtt_us: r.ack_rtt.summary(),
        nak_frames: r.nak_frames.clone(),
    }
}

fn sender_report(s: &Sender) -> SenderReport {
    SenderReport {
        nak_to_retransmit_us: s.nak_to_retransmit.summary(),
        rnr_wait_us: s.rnr_wait.summary(),
        timeout_resend_us: s.timeout_resend.summary(),
        resend_policy: resend_policy(s.go_back_n, s.selective),
        resend_policy_counts: ResendPolicyCounts {
            go_back_n: s.go_back_n,
            selective: s.selective,
        },
        resend_amplification: (s.nak_episodes > 0)
            .then(|| s.resent_psns as f64 / s.nak_episodes as f64),
        rate_cut_after_cnp: s.rate_cut.summary_in(RATIO_UNIT),
        rate_cut_after_cnp_unmeasured: s.rate_cut_unmeasured,
        cm: s.cm.map(|(_, c)| CmReport {
            retry_count: c.retry_count,
            rnr_retry_count: c.rnr_retry_count,
            local_ack_timeout_us: c.ack_timeout_ns().map(|ns| ns as f64 / 1e3),
        }),
    }
}

#[cfg(test)]
mod tests {
    use crate::analysis::testing::{feed, scenario};
    use crate::analysis::{AnalysisConfig, Analyzer};

    #[test]
    fn a_live_monitor_keeps_what_ended_flows_showed_of_their_hosts() {
        for name in ["slow_nak", "sender_halves_rate", "retries_exhausted_cm"] {
            let cfg = AnalysisConfig {
                flow_timeout_ns: Some(1_000_000_000),
                keep_ended: false,
                ..AnalysisConfig::default()
            };
            let (mut an, _) = feed(&scenario(name), Analyzer::new(cfg), |_, _| {});
            let open = an.hosts_now();
            assert!(an.flow_count() > 0);
            // Every flow ends and its state is freed: the table keeps what it showed.
            an.sweep(an.last_ts() + 10_000_000_000);
            assert_eq!(an.flow_count(), 0, "{name}");
            assert_eq!(an.hosts_now(), open, "{name}");
            assert!(open
                .iter()
                .any(|h| h.as_sender.nak_to_retransmit_us.count > 0
                    || h.as_sender.rate_cut_after_cnp.count > 0
                    || h.as_sender.timeout_resend_us.count > 0));
        }
    }
}
