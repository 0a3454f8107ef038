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
use super::latency::Samples;
use super::nic::{resend_policy, RATIO_UNIT};
use crate::common::rare::Rare;
use crate::model::{
    CmReport, HostReport, RateCutUnmeasured, ReceiverReport, ResendPolicyCounts, SenderReport,
};

/// Samples kept per host and figure for percentiles: a host table of a thousand hosts stays
/// within megabytes, and a churn's flows fold their ACK round trips into a few cache lines.
const HOST_RESERVOIR: usize = 256;
/// MACs listed per host (a host behind routers shows theirs).
const MACS_KEPT: usize = 8;
/// NAK frames kept per host as a finding's evidence.
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
    macs: Vec<MacAddr>,
    receiver: Rare<Receiver>,
    sender: Rare<Sender>,
}

#[derive(Debug, Clone)]
struct Receiver {
    nak_generation: Samples,
    nak_generation_untimed: u64,
    cnp_generation: Samples,
    cnp_generation_untimed: u64,
    cnp_interval: Samples,
    ack_rtt: Samples,
    nak_frames: Vec<u64>,
}

impl Default for Receiver {
    fn default() -> Self {
        Receiver {
            nak_generation: Samples::with_reservoir(HOST_RESERVOIR),
            nak_generation_untimed: 0,
            cnp_generation: Samples::with_reservoir(HOST_RESERVOIR),
            cnp_generation_untimed: 0,
            cnp_interval: Samples::with_reservoir(HOST_RESERVOIR),
            ack_rtt: Samples::with_reservoir(HOST_RESERVOIR),
            nak_frames: Vec::new(),
        }
    }
}

crate::empty!(Receiver);

#[derive(Debug, Clone)]
struct Sender {
    nak_to_retransmit: Samples,
    rnr_wait: Samples,
    timeout_resend: Samples,
    rate_cut: Samples,
    rate_cut_unmeasured: RateCutUnmeasured,
    go_back_n: u64,
    selective: u64,
    nak_episodes: u64,
    resent_psns: u64,
    cm: Option<CmSetup>,
}

impl Default for Sender {
    fn default() -> Self {
        Sender {
            nak_to_retransmit: Samples::with_reservoir(HOST_RESERVOIR),
            rnr_wait: Samples::with_reservoir(HOST_RESERVOIR),
            timeout_resend: Samples::with_reservoir(HOST_RESERVOIR),
            rate_cut: Samples::with_reservoir(HOST_RESERVOIR),
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

impl Host {
    fn saw_mac(&mut self, mac: Option<MacAddr>) {
        if let Some(m) = mac {
            if !self.macs.contains(&m) && self.macs.len() < MACS_KEPT {
                self.macs.push(m);
            }
        }
    }
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

    /// A new flow's first frame: its source address and MAC, its destination's.
    pub fn saw_macs(&mut self, macs: [(IpAddr, Option<MacAddr>); 2]) {
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
                self.host(ip).saw_mac(Some(mac));
                self.macs_recorded[slot] = Some((ip, mac));
            }
        }
    }

    /// Folds what flow `f` showed by `now` into its two hosts.
    pub fn fold(&mut self, f: &Flow, now: u64) {
        if f.ack_rtt.count() > 0 {
            self.host(f.key.dst).receiver.ack_rtt.merge(&f.ack_rtt);
        }
        if let Some(events) = f.recovery.events() {
            let s = &mut *self.host(f.key.src).sender;
            s.nak_to_retransmit.merge(events.nak_to_resend());
            s.rnr_wait.merge(events.rnr_wait());
            s.timeout_resend.merge(events.timeout_interval());
        }
        if let Some(cm) = f.cm.as_deref().filter(|_| f.requests > 0) {
            self.host(f.key.src).sender.cm = Some(*cm);
        }
        if f.nic.is_set() {
            self.fold_nic(f, now);
        }
    }

    #[cold]
    fn fold_nic(&mut self, f: &Flow, now: u64) {
        let n = &*f.nic;
        let r = &mut *self.host(f.key.dst).receiver;
        r.nak_generation.merge(&n.nak_generation);
        r.nak_generation_untimed += n.nak_generation_untimed;
        r.cnp_generation.merge(&n.cnp_generation);
        r.cnp_generation_untimed += n.cnp_generation_untimed;
        r.cnp_interval.merge(&n.cnp_interval);
        let room = NAK_FRAMES_KEPT.saturating_sub(r.nak_frames.len());
        r.nak_frames.extend(n.nak_frames.iter().take(room));
        let s = &mut *self.host(f.key.src).sender;
        s.go_back_n += n.go_back_n;
        s.selective += n.selective;
        s.nak_episodes += n.nak_episodes;
        s.resent_psns += n.resent_psns;
        let (cuts, unmeasured) = n.rate_cuts(now);
        s.rate_cut.merge(&cuts);
        s.rate_cut_unmeasured.add(&unmeasured);
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
                macs: h.macs.iter().map(ToString::to_string).collect(),
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
        cm: s.cm.map(|c| CmReport {
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
