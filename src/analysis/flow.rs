//! One flow: the RoCE packets of (source, destination, destination QP, VLAN), with what was
//! learned about the requests it carries (PSN, QoS) and what came back for them from the other
//! direction (ACKs, NAKs, READ responses, CNPs).

use std::collections::VecDeque;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::net::IpAddr;

use roce_parsers::{Psn, Qpn, Transport};

use crate::model::{FlowCounters, FlowLabel, PairingMethod, PsnCounts, RecoveryReport};

use super::latency::Samples;
use super::notes::{NoteKind, Notes};
use super::psn::{At, PsnTracker, ResponseTracker};
use super::ACK_GRACE_NS;

/// Most frame numbers kept as evidence per kind of event.
pub const EVIDENCE_FRAMES: usize = 5;
/// Outstanding requests remembered for ACK and READ latency.
const MAX_OUTSTANDING: usize = 65_536;

/// What ECMP hashes, beside the addresses and the ports RoCEv2 fixes, to pick a flow's path:
/// its UDP source port and, on IPv6, its flow label (0 on IPv4).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PathKey {
    pub sport: u16,
    pub flow_label: u32,
}

impl std::fmt::Display for PathKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.sport)?;
        if self.flow_label != 0 {
            write!(f, " (flow label 0x{:05x})", self.flow_label)?;
        }
        Ok(())
    }
}

/// The path key most of a flow's packets carry: a majority vote, 8 bytes a flow (a QP keeps
/// one source port; one that sprays over many shows one of them, which its others outvote).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PathVote {
    flow_label: u32,
    sport: u16,
    votes: u16,
}

impl PathVote {
    pub fn add(&mut self, key: PathKey) {
        let same = self.sport == key.sport && self.flow_label == key.flow_label;
        if self.votes == 0 {
            (self.sport, self.flow_label, self.votes) = (key.sport, key.flow_label, 1);
        } else if same {
            self.votes = self.votes.saturating_add(1);
        } else {
            self.votes -= 1;
        }
    }

    /// The key most packets carried, once any did.
    pub fn winner(&self) -> Option<PathKey> {
        (self.votes > 0).then_some(PathKey {
            sport: self.sport,
            flow_label: self.flow_label,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct FlowKey {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub dqpn: Qpn,
    pub vlan: Option<u16>,
}

impl FlowKey {
    /// Whether `other` runs between the same two hosts in the opposite direction.
    pub fn is_reverse_hosts(&self, other: &FlowKey) -> bool {
        self.src == other.dst && self.dst == other.src
    }
}

/// Hashed as two or three words, not field by field: every RoCE packet looks its flow up, and
/// `IpAddr`'s own hash (a tag, a length and the bytes) showed in profiles.
impl Hash for FlowKey {
    fn hash<H: Hasher>(&self, h: &mut H) {
        match (self.src, self.dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                h.write_u64(u64::from(s.to_bits()) << 32 | u64::from(d.to_bits()))
            }
            (s, d) => {
                h.write_u128(ip_bits(s));
                h.write_u128(ip_bits(d));
            }
        }
        h.write_u64(u64::from(self.dqpn.0) << 17 | self.vlan.map_or(0, |v| u64::from(v) << 1 | 1));
    }
}

/// An address as one number (an IPv4 address and the IPv6 address it maps to share one: the
/// hash may collide, equality does not).
pub(super) fn ip_bits(a: IpAddr) -> u128 {
    match a {
        IpAddr::V4(v) => u128::from(v.to_bits()),
        IpAddr::V6(v) => v.to_bits(),
    }
}

impl fmt::Display for FlowKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        FlowLabel {
            src: self.src,
            dst: self.dst,
            dqpn: self.dqpn.0,
            vlan: self.vlan,
        }
        .fmt(f)
    }
}

/// Counts by a small key (a DSCP, an opcode) of which a flow uses few: one key in place (the
/// common case: a churn's flows each allocated two one-entry lists), a short list beyond, never
/// a 64-entry array (512 bytes a flow) or a map node per flow.
#[derive(Debug, Clone, Default)]
pub enum SmallTally {
    #[default]
    Empty,
    One((u8, u64)),
    Many(Vec<(u8, u64)>),
}

impl SmallTally {
    /// Inlined to its common case, the key the flow's packets all carry.
    #[inline]
    pub fn add(&mut self, key: u8) {
        match self {
            SmallTally::One((k, n)) if *k == key => *n += 1,
            _ => self.add_other(key),
        }
    }

    fn add_other(&mut self, key: u8) {
        match self {
            SmallTally::Empty => *self = SmallTally::One((key, 1)),
            SmallTally::One((k, n)) if *k == key => *n += 1,
            SmallTally::One(first) => *self = SmallTally::Many(vec![*first, (key, 1)]),
            SmallTally::Many(list) => match list.iter_mut().find(|e| e.0 == key) {
                Some(e) => e.1 += 1,
                None => list.push((key, 1)),
            },
        }
    }

    fn entries(&self) -> &[(u8, u64)] {
        match self {
            SmallTally::Empty => &[],
            SmallTally::One(first) => std::slice::from_ref(first),
            SmallTally::Many(list) => list,
        }
    }

    pub fn get(&self, key: u8) -> u64 {
        self.entries()
            .iter()
            .find(|e| e.0 == key)
            .map_or(0, |e| e.1)
    }

    /// (key, count) of every key counted, in the order first counted.
    pub fn iter(&self) -> impl Iterator<Item = (u8, u64)> + '_ {
        self.entries().iter().copied()
    }
}

pub use crate::common::rare::{Empty, Rare};

crate::empty!(Evidence);
crate::empty!(NakCounts);
crate::empty!(Unacknowledged);
crate::empty!(VecDeque<(u64, u64)>);
crate::empty!(VecDeque<(Psn, u64)>);

/// First frame numbers of some kind of event, and how many there were.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Evidence {
    pub count: u64,
    pub frames: Vec<u64>,
    /// The frame added last (`add_once`).
    latest: u64,
}

impl Evidence {
    pub fn add(&mut self, frame_no: u64) {
        self.count += 1;
        if self.frames.len() < EVIDENCE_FRAMES {
            self.frames.push(frame_no);
        }
    }

    /// Adds what `other` holds (another shard's count of the same kind): the earliest frames
    /// of both are kept, whichever absorbs which.
    pub fn absorb(&mut self, other: &Evidence) {
        self.count += other.count;
        self.frames.extend_from_slice(&other.frames);
        self.frames.sort_unstable();
        self.frames.dedup();
        self.frames.truncate(EVIDENCE_FRAMES);
        self.latest = self.latest.max(other.latest);
    }

    /// Adds `frame_no` unless it is the latest added (one gap's PSNs judged one by one).
    pub fn add_once(&mut self, frame_no: u64) {
        if self.count == 0 || self.latest != frame_no {
            self.add(frame_no);
            self.latest = frame_no;
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct NakCounts {
    pub psn_sequence_error: Evidence,
    pub invalid_request: Evidence,
    pub remote_access_error: Evidence,
    pub remote_operational_error: Evidence,
    pub invalid_rd_request: Evidence,
    pub other: Evidence,
    pub rnr: Evidence,
}

impl NakCounts {
    /// Every NAK, RNR included.
    pub fn all(&self) -> u64 {
        self.psn_sequence_error.count
            + self.invalid_request.count
            + self.remote_access_error.count
            + self.remote_operational_error.count
            + self.invalid_rd_request.count
            + self.other.count
            + self.rnr.count
    }
}

/// Go-back replays of one QP: where each started, and the PSN that started most of them.
#[derive(Debug, Clone, Copy, Default)]
pub struct Retries {
    /// The PSN of the latest request, to see where a replay starts.
    last_psn: Option<Psn>,
    current: Option<(Psn, u32)>,
    /// (PSN, replays that started at it).
    pub most: Option<(Psn, u32)>,
}

impl Retries {
    /// A request went by; `resent` when it was a retransmission. Whether it starts a replay.
    pub fn request(&mut self, psn: Psn, resent: bool) -> bool {
        let starts_replay = resent && self.last_psn.is_none_or(|last| psn != last + 1);
        self.last_psn = Some(psn);
        if starts_replay {
            self.replay_from(psn);
        }
        starts_replay
    }

    /// A replay started at `psn` (one found late too: its NAK was not captured).
    pub fn replay_from(&mut self, psn: Psn) {
        let n = match self.current {
            Some((p, n)) if p == psn => n + 1,
            _ => 1,
        };
        self.current = Some((psn, n));
        if self.most.is_none_or(|(_, m)| n > m) {
            self.most = Some((psn, n));
        }
    }
}

/// How the requester recovered: NAK to resend, and resends no NAK asked for (timeouts).
/// Every request updates only the time of the latest; the rest is written on NAKs and
/// replays, which most flows never see.
#[derive(Debug, Clone, Default)]
pub struct Recovery {
    last_request_ts: Option<u64>,
    events: Rare<RecoveryEvents>,
}

#[derive(Debug, Clone, Default)]
pub struct RecoveryEvents {
    /// The NAK waiting for its resend, and whether it was an RNR NAK.
    nak_at: Option<(u64, bool)>,
    nak_to_resend: Samples,
    rnr_wait: Samples,
    timeout_resends: u64,
    timeout_interval: Samples,
}

crate::empty!(RecoveryEvents);

impl RecoveryEvents {
    /// From each sequence-error NAK to the resend it caused.
    pub fn nak_to_resend(&self) -> &Samples {
        &self.nak_to_resend
    }

    /// From each RNR NAK to the resend after it.
    pub fn rnr_wait(&self) -> &Samples {
        &self.rnr_wait
    }

    /// The silence before each resend no NAK asked for.
    pub fn timeout_interval(&self) -> &Samples {
        &self.timeout_interval
    }
}

impl Recovery {
    /// A sequence-error NAK (`rnr` false) or an RNR NAK at `ts`.
    pub fn nak(&mut self, ts: u64, rnr: bool) {
        self.events.nak_at.get_or_insert((ts, rnr));
    }

    /// A request at `ts`; `replay` when it starts a go-back replay.
    pub fn request(&mut self, ts: u64, replay: bool) {
        if replay {
            let e = &mut *self.events;
            match e.nak_at.take() {
                Some((nak, false)) => e.nak_to_resend.add(ts.saturating_sub(nak)),
                Some((nak, true)) => e.rnr_wait.add(ts.saturating_sub(nak)),
                None => {
                    e.timeout_resends += 1;
                    if let Some(last) = self.last_request_ts {
                        e.timeout_interval.add(ts.saturating_sub(last));
                    }
                }
            }
        }
        self.last_request_ts = Some(ts);
    }

    /// What it saw of NAKs and resends, if anything.
    pub fn events(&self) -> Option<&RecoveryEvents> {
        self.events.is_set().then(|| &*self.events)
    }

    pub fn report(&self) -> RecoveryReport {
        RecoveryReport {
            nak_to_retransmit_us: self.events.nak_to_resend.summary(),
            rnr_wait_us: self.events.rnr_wait.summary(),
            timeout_resends: self.events.timeout_resends,
            timeout_interval_us: self.events.timeout_interval.summary(),
        }
    }
}

/// The class of the CNPs a flow carries: by PCP (index 8: untagged) and by DSCP.
#[derive(Debug, Clone, Default)]
pub struct CnpClass {
    pcp: [u32; 9],
    dscp: Vec<(u8, u32)>,
}

crate::empty!(CnpClass);

/// Requests that asked for an ACK and got none.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Unacknowledged {
    pub requests: Evidence,
    /// The smallest payload among them, and the largest an ACK covered.
    pub min_len: Option<u32>,
    pub acked_max_len: Option<u32>,
    /// The PSN resent most often and how often.
    pub retry: Option<(Psn, u32)>,
    /// How long before the capture's end a request may still be waiting for its ACK.
    pub allowance: AckAllowance,
}

/// How long a request may wait for its ACK at the end of the capture: ten times the flow's
/// own p99 ACK RTT (at least 20 us), or 1 ms when the flow has no RTT measured; never more
/// than 1 ms, unless the flow's ACKs have taken longer than that: then twice the longest ACK
/// RTT it showed (a congested or paused path, or a live capture evaluated mid-run, must not
/// call a request unanswered before its flow ever answers that late).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct AckAllowance {
    pub ns: u64,
    /// The flow's p99 ACK RTT it was derived from, in microseconds.
    pub from_p99_rtt_us: Option<f64>,
    /// The flow's longest ACK RTT, in microseconds, when that decided the allowance.
    pub from_max_rtt_us: Option<f64>,
}

/// The allowance is this many times the flow's p99 ACK RTT...
const ALLOWANCE_RTTS: f64 = 10.0;
/// ...and at least this long (a responder's ACK coalescing)...
const ALLOWANCE_MIN_NS: u64 = 20_000;
/// ...and at least this many times the flow's longest ACK RTT.
const ALLOWANCE_MAX_RTTS: u64 = 2;

impl AckAllowance {
    pub(crate) fn of(rtt: &Samples) -> Self {
        let summary = (rtt.count() > 0).then(|| rtt.summary());
        let Some((p99, max)) = summary.and_then(|s| Some((s.p99?, s.max?))) else {
            return AckAllowance {
                ns: ACK_GRACE_NS,
                ..AckAllowance::default()
            };
        };
        let by_p99 = ((p99 * 1e3 * ALLOWANCE_RTTS) as u64).clamp(ALLOWANCE_MIN_NS, ACK_GRACE_NS);
        let by_max = (max * 1e3) as u64 * ALLOWANCE_MAX_RTTS;
        AckAllowance {
            ns: by_p99.max(by_max),
            from_p99_rtt_us: Some(p99),
            from_max_rtt_us: (by_max > by_p99).then_some(max),
        }
    }

    /// `50 us: 10 x its p99 ACK RTT of 5 us`, or `1 ms: no ACK RTT measured on it`.
    pub fn describe(&self) -> String {
        use crate::common::units::{duration_ns, duration_us};
        let len = duration_ns(self.ns);
        match (self.from_p99_rtt_us, self.from_max_rtt_us) {
            (_, Some(max)) => format!(
                "{len}: {ALLOWANCE_MAX_RTTS} x its longest ACK RTT of {}",
                duration_us(max)
            ),
            (Some(us), None) if self.ns == ACK_GRACE_NS => {
                format!("{len}: the cap, its p99 ACK RTT being {}", duration_us(us))
            }
            (Some(us), None) if self.ns == ALLOWANCE_MIN_NS => {
                format!(
                    "{len}: the floor, its p99 ACK RTT being {}",
                    duration_us(us)
                )
            }
            (Some(us), None) => format!(
                "{len}: {ALLOWANCE_RTTS} x its p99 ACK RTT of {}",
                duration_us(us)
            ),
            (None, None) => format!("{len}: no ACK RTT measured on it"),
        }
    }
}

/// What findings need of a flow beyond its report: the first frames of each kind of event.
#[derive(Debug, Clone)]
pub struct FlowEvidence {
    /// The link the flow was seen on: VLANs are compared only within one.
    pub link: u64,
    /// VLAN tags would show on its frames (`Flow::tags_visible`).
    pub tags_visible: bool,
    /// RC, XRC or RD: lost packets are resent.
    pub reliable: bool,
    pub first_ts_ns: u64,
    pub last_ts_ns: u64,
    /// What went wrong on it, if anything: 8 bytes on the many flows where nothing did.
    pub troubles: Rare<FlowTroubles>,
    pub not_ect: Rare<Evidence>,
    pub dscp0_with_pcp: Rare<Evidence>,
    pub pcp0_with_dscp: Rare<Evidence>,
    /// The class most of the flow's own packets (not CNPs) carry: (PCP when tagged, DSCP).
    pub class: Option<(Option<u8>, u8)>,
    pub rocev1: bool,
    pub native_ib: bool,
    pub longest_gap_ns: u64,
    /// What the connection's RDMA-CM request set up, when the capture holds it: boxed, as
    /// most flows of a churn have none and every ended flow's evidence may be kept.
    pub cm: Option<Box<super::cm::CmSetup>>,
    /// The path MTU the packets of either direction show (set with the report).
    pub path_mtu_seen: Option<u32>,
    /// The largest payload of a packet.
    pub max_payload: u32,
    /// The UDP source port (and IPv6 flow label) most of its packets carried: none for
    /// RoCEv1 and native InfiniBand.
    pub path: Option<PathKey>,
    /// How its sender's rate went after CNPs, once 10 came (`cnp_without_slowdown`).
    pub cnp_response: Option<Box<super::nic::CnpResponse>>,
    /// How its sender resent after sequence NAKs (`hosts[].as_sender.resend_policy`'s names).
    pub resend_policy: Option<&'static str>,
}

impl FlowEvidence {
    /// The path MTU the connection's RDMA-CM request offered.
    pub fn cm_mtu(&self) -> Option<u32> {
        self.cm.as_ref().and_then(|c| c.path_mtu)
    }
}

/// A flow's troubles as findings see them (`FlowEvidence::troubles`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlowTroubles {
    /// Frames of the gaps whose PSNs were lost or are missing (not those the capture missed).
    pub loss: Rare<Evidence>,
    /// Frames of the gaps whose PSNs the other end acknowledged: missed by the capture.
    pub missed: Rare<Evidence>,
    pub retrans: Rare<Evidence>,
    pub dups: Rare<Evidence>,
    pub naks: Rare<NakCounts>,
    pub ce: Rare<Evidence>,
    pub ce_unanswered: Rare<Evidence>,
    pub cnp_lower_class: Rare<Evidence>,
    pub unacknowledged: Rare<Unacknowledged>,
    pub nak_without_gap: Rare<Evidence>,
    pub read_range_violation: Rare<Evidence>,
    pub icrc_bad: Rare<Evidence>,
    pub oversize: Rare<Evidence>,
    pub unsettled: Option<Unsettled>,
}

crate::empty!(FlowTroubles);

/// Skipped PSNs whose fate the capture cannot tell: it ended `after_ns` after the latest gap
/// (`frame`: the request frame that opened it), before their acknowledgement was due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unsettled {
    pub psns: u64,
    pub after_ns: u64,
    pub frame: Option<u64>,
}

#[derive(Debug, Clone)]
pub struct Flow {
    /// The flow's own number: the order flows appeared in over the whole run, never reused.
    pub id: u64,
    pub key: FlowKey,
    /// The link the flow was first seen on (`PacketSummary::link`).
    pub link: u64,
    /// Its first frame had an Ethernet header: VLAN tags would show (not on raw IP or a
    /// cooked capture, whose tags the capture cannot see).
    pub tags_visible: bool,
    pub transport: Option<Transport>,
    pub first_frame: u64,
    pub first_ts: u64,
    pub last_ts: u64,
    /// The latest ACK, NAK, READ response or CNP for this flow's requests, which arrive on
    /// other flows: a connection is alive while either direction is.
    pub feedback_ts: u64,
    pub packets: u64,
    pub bytes: u64,
    pub payload_bytes: u64,
    /// Request packets (the data this flow carries).
    pub requests: u64,
    pub messages: u64,
    pub opcodes: SmallTally,
    /// Index 8 counts untagged frames.
    pub pcp: [u64; 9],
    pub dscp: SmallTally,
    pub ecn: [u64; 4],
    /// DSCP-0 frames (requests, responses, ACKs; not CNPs) that carry a non-zero PCP.
    pub dscp0_with_pcp: Rare<Evidence>,
    /// Frames (not CNPs) sent Not-ECT.
    pub not_ect: Rare<Evidence>,
    /// Tagged frames (not CNPs) with PCP 0 while their DSCP is set.
    pub pcp0_with_dscp: Rare<Evidence>,
    /// CNPs of this data flow's receiver sent on a lower class than this flow's data.
    pub cnp_lower_class: Rare<Evidence>,
    /// CNPs this flow carries, by class: left out of the class of the flow's own traffic.
    pub cnp_class: Rare<CnpClass>,
    /// RoCEv1 frames (no IP header: link-local GIDs are normal there).
    pub rocev1: bool,
    /// Native InfiniBand frames (ERF captures, link type 247): no IP, no DSCP, no PCP.
    pub native_ib: bool,
    /// Requests that asked for an ACK none has covered yet: (PSN, time, frame, payload).
    pub unacked: VecDeque<(Psn, u64, u64, u32)>,
    /// The largest payload of a request an ACK covered.
    pub acked_max_len: Option<u32>,
    /// The PSN go-back replays started from most often, and how often (a QP retrying).
    pub retry: Retries,
    /// PSN-sequence NAKs for a PSN the capture saw go by.
    pub nak_without_gap: Rare<Evidence>,
    pub recovery: Recovery,
    /// The latest READ request of known size: its PSN and the PSNs its responses use.
    pub last_read: Option<(Psn, u32)>,
    /// Requests other than READs sent with a PSN inside a READ's response range.
    pub read_range_violation: Rare<Evidence>,
    /// The longest silence between two packets of the flow.
    pub longest_gap_ns: u64,
    /// The path MTU the packets show (First/Middle payloads, READ responses).
    pub path_mtu: Option<u32>,
    /// What the connection's RDMA-CM request set up (path MTU, retry counts, ACK timeout).
    pub cm: Option<Box<super::cm::CmSetup>>,
    /// The largest payload of a packet (what the path evidently carries).
    pub max_payload: u32,
    pub oversize: Rare<Evidence>,
    pub icrc_bad: Rare<Evidence>,
    pub req: PsnTracker,
    /// UD flows: what the sender's shared PSN tracker saw on this flow.
    pub ud_psn: Rare<PsnCounts>,
    pub loss: Rare<Evidence>,
    pub retrans: Rare<Evidence>,
    pub dups: Rare<Evidence>,
    pub read_resp: ResponseTracker,
    /// The flow of the other direction of the same QP pair.
    pub peer: Option<usize>,
    pub paired_by: Option<PairingMethod>,
    /// The pairing is certain (RDMA-CM, or a PSN match with one candidate): only then do the
    /// peer's ACKs show what the capture missed.
    pub pair_certain: bool,
    // What came back for this flow's requests.
    pub acks: u64,
    pub naks: Rare<NakCounts>,
    pub read_responses: u64,
    pub cnps: Rare<Evidence>,
    pub ce: Rare<Evidence>,
    /// CE marks waiting for a CNP, oldest first.
    pub ce_pending: Rare<VecDeque<(u64, u64)>>,
    pub ce_unanswered: Rare<Evidence>,
    /// CNP packets this flow carries (it is the reverse of a congested data flow).
    pub cnps_sent: u64,
    pub ack_rtt: Rare<Samples>,
    pub read_latency: Rare<Samples>,
    /// (PSN, ts, retransmitted) of requests with AckReq, awaiting an ACK.
    pub awaiting_ack: VecDeque<(Psn, u64)>,
    /// (first response PSN, ts) of READ requests awaiting their first response.
    pub awaiting_read: Rare<VecDeque<(Psn, u64)>>,
    /// Last request PSN and its wrap-free position since the first request (timelines).
    pub psn_position: Option<(Psn, i64)>,
    /// The path key most of its packets carried (ECMP entropy).
    pub path: PathVote,
    /// How its NICs reacted to loss and congestion, from its first sign of either.
    pub nic: Rare<super::nic::NicSigns>,
    /// The latest frames (PSN, identity folded to 32 bits, time): a frame seen again among
    /// them is a copy made by the capture, not a resend.
    recent: [(Psn, u32, u64); RECENT_COPIES],
    recent_at: u8,
}

/// Adds an outstanding request, forgetting the oldest beyond `MAX_OUTSTANDING`. Room for one
/// at first (most short flows wait for one answer at a time, where a first push reserves
/// four), doubling after.
fn push_outstanding<T>(queue: &mut VecDeque<T>, request: T) {
    if queue.len() == MAX_OUTSTANDING {
        queue.pop_front();
    }
    if queue.capacity() == 0 {
        queue.reserve_exact(1);
    }
    queue.push_back(request);
}

/// Frames of a flow remembered to recognise the same frame captured twice.
const RECENT_COPIES: usize = 8;
/// A copy of the capture comes this close to the original (a mirror copying both directions
/// of a port: a switch's latency); a resend needs a NAK or a timeout first, far longer.
pub const COPY_WINDOW_NS: u64 = 5_000;

impl Flow {
    pub fn new(id: u64, key: FlowKey, frame_no: u64, ts: u64) -> Self {
        Flow {
            id,
            key,
            link: 0,
            tags_visible: true,
            transport: None,
            first_frame: frame_no,
            first_ts: ts,
            last_ts: ts,
            feedback_ts: ts,
            packets: 0,
            bytes: 0,
            payload_bytes: 0,
            requests: 0,
            messages: 0,
            opcodes: SmallTally::default(),
            pcp: [0; 9],
            dscp: SmallTally::default(),
            ecn: [0; 4],
            dscp0_with_pcp: Default::default(),
            not_ect: Default::default(),
            pcp0_with_dscp: Default::default(),
            cnp_lower_class: Default::default(),
            cnp_class: Default::default(),
            rocev1: false,
            native_ib: false,
            unacked: VecDeque::new(),
            acked_max_len: None,
            retry: Retries::default(),
            nak_without_gap: Default::default(),
            recovery: Recovery::default(),
            last_read: None,
            read_range_violation: Default::default(),
            longest_gap_ns: 0,
            path_mtu: None,
            cm: None,
            nic: Rare::default(),
            max_payload: 0,
            oversize: Default::default(),
            icrc_bad: Default::default(),
            req: PsnTracker::default(),
            ud_psn: Default::default(),
            loss: Default::default(),
            retrans: Default::default(),
            dups: Default::default(),
            read_resp: ResponseTracker::default(),
            peer: None,
            paired_by: None,
            pair_certain: false,
            acks: 0,
            naks: Default::default(),
            read_responses: 0,
            cnps: Default::default(),
            ce: Default::default(),
            ce_pending: Default::default(),
            ce_unanswered: Default::default(),
            cnps_sent: 0,
            ack_rtt: Default::default(),
            read_latency: Default::default(),
            awaiting_ack: VecDeque::new(),
            awaiting_read: Default::default(),
            psn_position: None,
            recent: [(Psn::default(), 0, 0); RECENT_COPIES],
            path: PathVote::default(),
            recent_at: 0,
        }
    }

    /// Whether this frame (`psn`, `identity`) was just seen on this flow: the same frame
    /// captured twice. Otherwise it is remembered. A NAK between the two makes it a resend,
    /// however fast (a NIC that NAKs and resends within microseconds).
    pub fn is_capture_copy(&mut self, psn: Psn, identity: u64, ts: u64) -> bool {
        let identity = (identity ^ identity >> 32) as u32;
        let nak = self.nic.get().and_then(|n| n.last_nak());
        let copy = self.recent.iter().any(|&(p, id, t)| {
            p == psn
                && id == identity
                && t != 0
                && ts.abs_diff(t) <= COPY_WINDOW_NS
                && nak.is_none_or(|nak| nak < t)
        });
        if !copy {
            self.recent[usize::from(self.recent_at)] = (psn, identity, ts);
            self.recent_at = (self.recent_at + 1) % RECENT_COPIES as u8;
        }
        copy
    }

    /// RDMA-CM set up a new connection on this flow's QP: what the old one left pending is
    /// forgotten and PSNs are judged afresh (counts so far stay).
    /// What the connection's RDMA-CM request set up.
    pub fn cm_setup(&mut self, setup: super::cm::CmSetup) {
        self.cm = Some(Box::new(setup));
    }

    /// Its first CE-marked packet.
    pub fn first_ce_ts(&self) -> Option<u64> {
        self.nic.get().and_then(|n| n.first_ce)
    }

    /// Its first CNP at or after its first CE mark.
    pub fn first_cnp_ts(&self) -> Option<u64> {
        self.nic.get().and_then(|n| n.first_cnp)
    }

    /// The path MTU the connection's RDMA-CM request offered.
    pub fn cm_mtu(&self) -> Option<u32> {
        self.cm.as_ref().and_then(|c| c.path_mtu)
    }

    pub fn new_connection(&mut self) {
        self.req.restart();
        self.read_resp.restart();
        self.awaiting_ack.clear();
        self.awaiting_read.reset();
        self.unacked.clear();
        self.retry = Retries::default();
        self.last_read = None;
        self.recent = [(Psn::default(), 0, 0); RECENT_COPIES];
    }

    /// A request that asked for an ACK, sent for the first time.
    pub fn await_coverage(&mut self, psn: Psn, ts: u64, frame_no: u64, len: u32) {
        push_outstanding(&mut self.unacked, (psn, ts, frame_no, len));
    }

    /// An ACK (or a response) covered every request up to `psn`; `inclusive` false for a NAK,
    /// which covers those before it.
    pub fn covered(&mut self, psn: Psn, inclusive: bool) {
        while let Some(&(p, _, _, len)) = self.unacked.front() {
            if p > psn || (p == psn && !inclusive) {
                break;
            }
            self.acked_max_len = Some(self.acked_max_len.map_or(len, |m| m.max(len)));
            self.unacked.pop_front();
        }
    }

    /// Requests no ACK covered by `capture_end`, those of the flow's allowance before it left
    /// out (their ACK may still have been on the way).
    pub fn unacknowledged(&self, capture_end: u64) -> Unacknowledged {
        let mut u = Unacknowledged::default();
        if self.unacked.is_empty() {
            return u;
        }
        u.allowance = AckAllowance::of(&self.ack_rtt);
        let until = capture_end.saturating_sub(u.allowance.ns);
        for &(_, _, frame, len) in self.unacked.iter().filter(|e| e.1 < until) {
            u.requests.add(frame);
            u.min_len = Some(u.min_len.map_or(len, |m: u32| m.min(len)));
        }
        u.acked_max_len = self.acked_max_len;
        u.retry = self.retry.most;
        u
    }

    pub fn await_ack(&mut self, psn: Psn, ts: u64) {
        push_outstanding(&mut self.awaiting_ack, (psn, ts));
    }

    pub fn await_read(&mut self, psn: Psn, ts: u64) {
        push_outstanding(&mut self.awaiting_read, (psn, ts));
    }

    /// CE marks older than `window_ns` before `now` will get no CNP any more.
    pub fn expire_ce(&mut self, now: u64, window_ns: u64, mut notes: Option<&mut Notes>) {
        while let Some(&(ts, frame)) = self.ce_pending.front() {
            if now.saturating_sub(ts) <= window_ns {
                break;
            }
            self.ce_pending.get_mut().map(VecDeque::pop_front);
            self.ce_unanswered.add(frame);
            if let Some(n) = notes.as_deref_mut() {
                n.flow(self.id, &self.key);
                n.add(frame, NoteKind::CeUnanswered { flow: self.id });
            }
        }
    }

    /// Notes the CE marks still waiting for a CNP whose window ended by `now` (the end of the
    /// capture, or of the flow): the report counts them unanswered too.
    pub fn note_pending_ce(&self, now: u64, window_ns: u64, notes: &mut Notes) {
        for &(ts, frame) in self.ce_pending.iter() {
            if ts + window_ns <= now {
                notes.flow(self.id, &self.key);
                notes.add(frame, NoteKind::CeUnanswered { flow: self.id });
            }
        }
    }

    /// Moves the wrap-free PSN position to `psn` and returns it.
    pub fn advance_position(&mut self, psn: Psn) -> i64 {
        let pos = match self.psn_position {
            None => 0,
            Some((last, pos)) => pos + i64::from(psn - last),
        };
        self.psn_position = Some((psn, pos));
        pos
    }

    /// The latest time anything of this flow or for its requests went by.
    pub fn active_ts(&self) -> u64 {
        self.last_ts.max(self.feedback_ts)
    }

    /// Whether this flow carried requests (data), as opposed to only responses or CNPs.
    pub fn is_data(&self) -> bool {
        self.requests > 0
    }

    /// The (PCP when tagged, DSCP) most of the flow's packets other than CNPs carry.
    pub fn class(&self) -> Option<(Option<u8>, u8)> {
        let cnps = &*self.cnp_class;
        let pcp = (0..9)
            .map(|i| (self.pcp[i].saturating_sub(u64::from(cnps.pcp[i])), i))
            .filter(|&(n, _)| n > 0)
            .max()?
            .1;
        let cnps_at = |d: usize| {
            cnps.dscp
                .iter()
                .find(|&&(v, _)| usize::from(v) == d)
                .map_or(0, |&(_, n)| u64::from(n))
        };
        // The DSCPs the flow counted, not all 64 (every open flow's class is made at each
        // evaluation of the findings: scanning 64 values was a tenth of `-r --events`).
        let dscp = self
            .dscp
            .iter()
            .map(|(d, n)| {
                let data = n.saturating_sub(cnps_at(usize::from(d)));
                (data, std::cmp::Reverse(d))
            })
            .filter(|&(n, _)| n > 0)
            .max()
            .map_or(0, |(_, d)| d.0);
        Some(((pcp < 8).then_some(pcp as u8), dscp))
    }

    /// Counts a CNP this flow carries in its class of CNPs.
    pub fn count_cnp_class(&mut self, pcp: Option<u8>, dscp: Option<u8>) {
        let cnps = &mut *self.cnp_class;
        cnps.pcp[pcp.map_or(8, |p| usize::from(p & 7))] += 1;
        if let Some(d) = dscp {
            match cnps.dscp.iter_mut().find(|(v, _)| *v == d) {
                Some((_, n)) => *n += 1,
                None => cnps.dscp.push((d, 1)),
            }
        }
    }

    /// What findings need of this flow beyond its report: addresses, timing and evidence frames.
    /// `capture_end`: the time of the capture's last frame.
    /// Whether the flow holds anything a finding of its own reports (loss, resends, NAKs,
    /// CE marks, marking anomalies, unanswered requests): most flows hold none.
    pub fn noteworthy(&self) -> bool {
        let evidence = [
            &self.dscp0_with_pcp,
            &self.not_ect,
            &self.pcp0_with_dscp,
            &self.cnp_lower_class,
            &self.nak_without_gap,
            &self.read_range_violation,
            &self.oversize,
            &self.icrc_bad,
            &self.loss,
            &self.retrans,
            &self.dups,
            &self.ce,
            &self.ce_unanswered,
        ];
        evidence.iter().any(|e| e.is_set())
            || self.naks.is_set()
            || self.ud_psn.is_set()
            || self.cnp_class.is_set()
            || self.read_resp.gaps > 0
            || self.read_resp.pending()
            || self.req.capture_missed() > 0
            || !self.unacked.is_empty()
    }

    /// The flow's counters: the one projection of them the metrics and the live view read,
    /// PSNs judged lost `at` (running: those past their allowance; at its end, every skipped
    /// PSN but the unsettled).
    pub fn counters(&self, at: At) -> FlowCounters {
        let n = &self.naks;
        let lost = match at {
            At::Running(t) => self.req.lost_by(t),
            At::End(_) => {
                let c = self.req.finish(self.verdicts_at(at));
                c.recovered + c.missing
            }
        };
        FlowCounters {
            id: self.id,
            flow: FlowLabel {
                src: self.key.src,
                dst: self.key.dst,
                dqpn: self.key.dqpn.0,
                vlan: self.key.vlan,
            },
            packets: self.packets,
            bytes: self.bytes,
            gaps: self.loss.count,
            lost,
            retransmitted: self.retrans.count,
            ce: self.ce.count,
            cnps: self.cnps.count,
            naks: [
                n.psn_sequence_error.count,
                n.rnr.count,
                n.remote_access_error.count,
                n.remote_operational_error.count,
                n.invalid_request.count,
                n.invalid_rd_request.count + n.other.count,
            ],
            last_ts: self.last_ts,
        }
    }

    /// When the flow's request gaps are judged for a report made `at`: at the end, a flow
    /// whose other direction the capture never showed (a one-way mirror) has every gap
    /// judged, as at an end long after them: no acknowledgement could have settled one.
    pub fn verdicts_at(&self, at: At) -> At {
        let feedback =
            self.peer.is_some() || self.acks > 0 || self.naks.is_set() || self.read_responses > 0;
        match at {
            At::End(_) if !feedback => At::End(u64::MAX),
            _ => at,
        }
    }

    /// PSNs (requests and READ responses) the capture missed on this flow, as judged `at`.
    pub fn capture_missed(&self, at: At) -> u64 {
        self.req.capture_missed() + self.read_resp.judged(at).missed
    }

    /// What a report at its end, or the capture's, cannot judge: skipped PSNs (requests and
    /// READ responses) whose acknowledgement was not due yet.
    pub fn unsettled(&self, end: u64) -> Option<Unsettled> {
        let requests = self.req.unsettled(self.verdicts_at(At::End(end)).time());
        let responses = self.read_resp.judged(At::End(end));
        let psns = requests.map_or(0, |r| r.0) + responses.unsettled;
        (psns > 0).then(|| Unsettled {
            psns,
            after_ns: [requests.map(|r| r.1), responses.unsettled_after_ns]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(0),
            frame: requests.map(|r| r.2),
        })
    }

    /// The data PSNs of the flow a capture that missed `missed` of them should have held: the
    /// requests and READ responses it carried, and those missed.
    pub fn data_psns(&self, missed: u64) -> u64 {
        self.requests + self.read_resp.carried + missed
    }

    /// What findings need of the flow at the capture's end, or once it ended.
    pub fn evidence(&self, capture_end: u64) -> FlowEvidence {
        self.evidence_with(self.unacknowledged(capture_end), At::End(capture_end))
    }

    /// What findings need of the flow while it and the capture run (at `now`): its requests
    /// waiting for an ACK are pending, not unanswered (the ACK may be next, and a finding once
    /// told is not taken back), and so are PSNs skipped within the flow's ACK allowance;
    /// they count when the flow ends or the capture does.
    pub fn evidence_while_open(&self, now: u64) -> FlowEvidence {
        self.evidence_with(Unacknowledged::default(), At::Running(now))
    }

    fn evidence_with(&self, unacknowledged: Unacknowledged, at: At) -> FlowEvidence {
        let (lost, missed) = self.req.verdict_frames(self.verdicts_at(at));
        FlowEvidence {
            link: self.link,
            tags_visible: self.tags_visible,
            reliable: self.transport.is_some_and(Transport::is_reliable),
            first_ts_ns: self.first_ts,
            last_ts_ns: self.last_ts,
            troubles: Rare::of(FlowTroubles {
                loss: Rare::of(lost),
                missed: Rare::of(missed),
                retrans: self.retrans.clone(),
                dups: self.dups.clone(),
                naks: self.naks.clone(),
                ce: self.ce.clone(),
                ce_unanswered: self.ce_unanswered.clone(),
                cnp_lower_class: self.cnp_lower_class.clone(),
                unacknowledged: Rare::of(unacknowledged),
                nak_without_gap: self.nak_without_gap.clone(),
                read_range_violation: self.read_range_violation.clone(),
                icrc_bad: self.icrc_bad.clone(),
                oversize: self.oversize.clone(),
                unsettled: match at {
                    At::End(end) => self.unsettled(end),
                    At::Running(_) => None,
                },
            }),
            not_ect: self.not_ect.clone(),
            dscp0_with_pcp: self.dscp0_with_pcp.clone(),
            pcp0_with_dscp: self.pcp0_with_dscp.clone(),
            class: self.class(),
            rocev1: self.rocev1,
            native_ib: self.native_ib,
            longest_gap_ns: self.longest_gap_ns,
            cm: self.cm.clone(),
            cnp_response: self.nic.get().and_then(|n| n.cnp_response()).map(Box::new),
            resend_policy: self
                .nic
                .get()
                .and_then(|n| super::nic::resend_policy(n.go_back_n, n.selective)),
            path_mtu_seen: self.path_mtu,
            max_payload: self.max_payload,
            path: (!self.rocev1 && !self.native_ib)
                .then(|| self.path.winner())
                .flatten(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flows_class_is_its_most_used_pcp_and_dscp_less_its_cnps_the_lower_on_a_tie() {
        let key = FlowKey {
            src: "10.0.0.1".parse().unwrap(),
            dst: "10.0.0.2".parse().unwrap(),
            dqpn: roce_parsers::Qpn(7),
            vlan: Some(100),
        };
        let mut f = Flow::new(0, key, 0, 0);
        assert_eq!(f.class(), None, "no packet yet");
        for (pcp, dscp, n) in [(3, 26, 4), (3, 24, 3), (6, 48, 3)] {
            for _ in 0..n {
                f.pcp[pcp] += 1;
                f.dscp.add(dscp);
            }
        }
        assert_eq!(f.class(), Some((Some(3), 26)));
        // Two of the DSCP 26 packets were CNPs (the reverse of a congested flow): 2 against
        // 3, 3 of 24 and 48: a tie, the lower DSCP.
        f.count_cnp_class(Some(3), Some(26));
        f.count_cnp_class(Some(3), Some(26));
        assert_eq!(f.class(), Some((Some(3), 24)));
    }

    #[test]
    fn a_small_tally_counts_each_key_as_it_grows_past_one() {
        let mut t = SmallTally::default();
        assert_eq!(t.iter().count(), 0);
        for key in [26, 26, 0, 26, 46, 0] {
            t.add(key);
        }
        assert_eq!((t.get(26), t.get(0), t.get(46), t.get(1)), (3, 2, 1, 0));
        let entries: Vec<(u8, u64)> = t.iter().collect();
        assert_eq!(entries, [(26, 3), (0, 2), (46, 1)]);
        // One key stays in place: no list to allocate.
        let mut one = SmallTally::default();
        one.add(3);
        one.add(3);
        assert!(matches!(one, SmallTally::One((3, 2))));
    }

    fn allowance_for(rtts_us: &[u64]) -> AckAllowance {
        let mut s = Samples::default();
        for &us in rtts_us {
            s.add(us * 1000);
        }
        AckAllowance::of(&s)
    }

    #[test]
    fn the_ack_allowance_follows_the_flows_own_rtt_within_its_bounds() {
        let a = allowance_for(&[5; 10]);
        assert_eq!(a.ns, 50_000);
        assert_eq!(a.describe(), "50 us: 10 x its p99 ACK RTT of 5 us");
        assert_eq!(allowance_for(&[1; 10]).ns, ALLOWANCE_MIN_NS);
        assert_eq!(allowance_for(&[100; 10]).ns, ACK_GRACE_NS);
        let none = allowance_for(&[]);
        assert_eq!((none.ns, none.from_p99_rtt_us), (ACK_GRACE_NS, None));
        assert_eq!(none.describe(), "1 ms: no ACK RTT measured on it");
    }

    /// A flow whose ACKs take longer than the cap (a paused path, or a replay that stretched
    /// time) had its requests of the last millisecond-and-more called unanswered while their
    /// ACKs were on the way: a live capture told it every second, its final report did not.
    #[test]
    fn a_flow_that_answers_late_gets_at_least_twice_its_longest_ack_rtt() {
        let slow = allowance_for(&[30_000, 31_000, 45_000]);
        assert_eq!(slow.ns, 90_000_000);
        assert_eq!(slow.describe(), "90 ms: 2 x its longest ACK RTT of 45 ms");
        // One late ACK among fast ones widens the allowance past 10 x p99 too.
        let outlier = allowance_for(&[&[5u64; 200][..], &[400]].concat());
        assert_eq!(outlier.ns, 800_000);
        assert_eq!(
            outlier.describe(),
            "800 us: 2 x its longest ACK RTT of 400 us"
        );
        // Where the longest stays within the p99 rule, that rule speaks.
        assert_eq!(allowance_for(&[5; 10]).from_max_rtt_us, None);
    }
}

#[cfg(test)]
mod size {
    use super::*;

    /// 100,000 open flows fit in 150 MB all told only while a flow's state stays under a
    /// kilobyte and a report entry with its evidence under 800 bytes (#24): what most flows
    /// never use (NAK recovery, READ latency, CE bookkeeping, anomaly counts) is boxed.
    #[test]
    fn flow_state_and_entries_stay_small() {
        use std::mem::size_of;
        assert!(
            size_of::<Flow>() <= 1000,
            "Flow: {} bytes",
            size_of::<Flow>()
        );
        // 504 bytes today: the churn's 600,000 kept flows are within 400 MB by little (a
        // `cnp_response` and CM setup kept inline took it to 442 MB).
        let entry = size_of::<crate::model::FlowReport>() + size_of::<FlowEvidence>();
        assert!(entry <= 520, "FlowReport + FlowEvidence: {entry} bytes");
    }
}

#[cfg(test)]
mod path_vote {
    use super::*;

    fn port(sport: u16) -> PathKey {
        PathKey {
            sport,
            flow_label: 0,
        }
    }

    #[test]
    fn the_port_most_packets_carry_wins_and_a_flow_label_tells_paths_apart() {
        let mut v = PathVote::default();
        assert_eq!(v.winner(), None);
        for p in [7, 7, 9, 7, 9, 7] {
            v.add(port(p));
        }
        assert_eq!(v.winner(), Some(port(7)));
        let labelled = PathKey {
            sport: 7,
            flow_label: 0x12345,
        };
        assert_ne!(labelled, port(7));
        assert_eq!(labelled.to_string(), "7 (flow label 0x12345)");
        assert_eq!(port(49152).to_string(), "49152");
    }
}
