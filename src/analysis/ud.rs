//! UD senders' PSN sequences. A UD QP has one PSN sequence for every destination it sends to
//! (QP 1, RDMA-CM's, talks to every peer), so one sender's frames span IP pairs, and shards.
//! They are judged here, before the frames reach their shards, in capture order: the shard of
//! the frame takes the verdict with it. Tracking them per flow would show each destination the
//! others' PSNs as gaps; sharding UD by source would part a UD flow from its CNPs and RDMA-CM
//! from its replies. UD is RDMA-CM and datagram traffic, a small share of a capture: one
//! thread judges it at little cost.

use std::net::IpAddr;

use rustc_hash::FxHashMap;

use roce_parsers::{IcrcStatus, Psn, Qpn, Transport};

use super::flow::COPY_WINDOW_NS;
use super::psn::{Arrival, PsnTracker};
use crate::decode::summary::{PacketSummary, Payload};

/// Frames a sender remembers to tell a capture's copy of a frame from a new one.
const RECENT_FRAMES: usize = 8;

#[derive(Debug, Clone, Default)]
pub struct UdSenders {
    senders: FxHashMap<(IpAddr, Qpn), Sender>,
}

#[derive(Debug, Clone, Default)]
struct Sender {
    psns: PsnTracker,
    /// When it last sent.
    last_ts: u64,
    /// Its latest frames (PSN, identity, time): a capture's copy of one is not judged again.
    recent: [(Psn, u64, u64); RECENT_FRAMES],
    recent_at: usize,
}

impl Sender {
    fn is_copy(&mut self, psn: Psn, identity: u64, ts: u64) -> bool {
        let copy = self.recent.iter().any(|&(p, id, t)| {
            p == psn && id == identity && t != 0 && ts.abs_diff(t) <= COPY_WINDOW_NS
        });
        if !copy {
            self.recent[self.recent_at] = (psn, identity, ts);
            self.recent_at = (self.recent_at + 1) % RECENT_FRAMES;
        }
        copy
    }
}

impl UdSenders {
    /// The verdict on `p` when it is a UD request that moves its sender's sequence: sent
    /// unicast, well formed, with a good ICRC (a NIC drops a bad one) and not a copy of a frame
    /// just judged.
    #[inline]
    pub fn judge(&mut self, p: &PacketSummary) -> Option<Arrival> {
        let Payload::Roce(r) = &p.payload else {
            return None;
        };
        let op = r.opcode;
        if !op.is_known() || op.transport() != Transport::Ud || !op.is_request() {
            return None;
        }
        let ((src, dst), sqpn) = (p.addrs?, r.sqpn?);
        if dst.is_multicast() || p.malformed || r.icrc == IcrcStatus::Bad {
            return None;
        }
        self.judge_request(src, sqpn, p, r.psn, r.identity)
    }

    #[cold]
    fn judge_request(
        &mut self,
        src: IpAddr,
        sqpn: Qpn,
        p: &PacketSummary,
        psn: Psn,
        identity: u64,
    ) -> Option<Arrival> {
        let sender = self.senders.entry((src, sqpn)).or_default();
        if sender.is_copy(psn, identity, p.ts_ns) {
            return None;
        }
        sender.last_ts = p.ts_ns;
        let a = (sender.psns).request(psn, p.ts_ns, 1, None, false, false, p.frame_no, || 0);
        Some(a)
    }

    /// Captures run together: the next one's senders start afresh.
    pub fn clear(&mut self) {
        self.senders.clear();
    }

    /// Forgets the senders idle for `timeout` at `now` (a live monitor).
    pub fn forget_idle(&mut self, now: u64, timeout: u64) {
        self.senders
            .retain(|_, s| s.last_ts.saturating_add(timeout) > now);
    }

    pub fn len(&self) -> usize {
        self.senders.len()
    }

    pub fn is_empty(&self) -> bool {
        self.senders.is_empty()
    }
}
