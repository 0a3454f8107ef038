//! The analysis: fed `PacketSummary` values in capture order, it keeps per-flow and per-priority
//! state only (memory bounded by the number of flows, never by the capture size), and at the
//! end turns that state into the `Report`.

pub mod cm;
pub mod copies;
pub mod findings;
pub mod flow;
pub mod flow_table;
pub mod hosts;
pub mod latency;
pub mod lifetime;
pub mod nic;
pub mod notes;
pub mod pfc;
pub mod psn;
pub mod report_build;
pub mod shards;

#[cfg(test)]
pub mod testing;
pub mod timeline;
pub mod ud;
pub mod verify;
pub mod watch;

use std::collections::{BTreeMap, HashMap};

use rustc_hash::FxHashMap;
use std::net::IpAddr;

use roce_parsers::{Aeth, AethKind, Ecn, IcrcStatus, MacAddr, NakCode, Operation};
use roce_parsers::{Opcode, Position, Psn, Qpn, Transport};

use crate::decode::summary::{PacketSummary, Payload, RoceSummary};
use crate::model::{Outcome, PairingMethod, PsnEvent};
pub use crate::model::{RttHistogram, Totals, RTT_BOUNDS_NS};
use flow::{Flow, FlowKey, PathKey};
use pfc::{PauseTracker, PfcConfig};
use psn::Arrival;
use timeline::{Event, Timelines};

/// A CE mark counts as answered when a CNP for its flow arrives within this time.
pub const CNP_WINDOW_NS: u64 = 1_000_000;
/// Distinct senders to one receiver at once that make an incast.
pub const INCAST_MIN_SENDERS: usize = 4;

#[derive(Debug, Clone, Copy)]
pub struct AnalysisConfig {
    pub pfc: PfcConfig,
    pub max_flows: usize,
    /// Collect time-binned series for timelines and plots.
    pub timelines: bool,
    /// Fixed bin width for timelines (ns); chosen from the capture's duration when None.
    pub bin_ns: Option<u64>,
    /// Several files read as one, perhaps taken at several points: the same frame seen at
    /// two of them is looked for across clock offsets too.
    pub several_points: bool,
    /// `--link-speed` was given: the link's speed is known, not assumed.
    pub link_speed_given: bool,
    /// `--flow-timeout`: a connection idle this long (capture time) ends; None: flows last
    /// as long as the run.
    pub flow_timeout_ns: Option<u64>,
    /// Keep a record of every ended flow for the report at the end (reading files); a live
    /// capture reports the flows still open and frees the others.
    pub keep_ended: bool,
    /// Note what happens at single frames, for `--annotate`.
    pub notes: bool,
}

impl Default for AnalysisConfig {
    fn default() -> Self {
        AnalysisConfig {
            pfc: PfcConfig {
                link_gbps: 100.0,
                storm_ns: 100_000_000,
                storm_fps: 1000.0,
            },
            max_flows: 100_000,
            timelines: false,
            bin_ns: None,
            several_points: false,
            link_speed_given: false,
            flow_timeout_ns: None,
            keep_ended: true,
            notes: false,
        }
    }
}

/// The marking of a RoCEv2 frame that is not a CNP: DSCP and PCP that disagree, Not-ECT.
/// QP 1 carries connection management, not RoCE data: its marking does not matter.
fn check_marking(f: &mut Flow, p: &PacketSummary, r: &RoceSummary) {
    let Some(tc) = p.tclass.filter(|_| r.dqpn != Qpn::GSI && !r.ib && !r.v1) else {
        return;
    };
    let pcp = p.vlan.map(|(_, pcp)| pcp);
    if tc.dscp() == 0 && pcp.is_some_and(|pcp| pcp != 0) {
        f.dscp0_with_pcp.add(p.frame_no);
    }
    if tc.dscp() != 0 && pcp == Some(0) {
        f.pcp0_with_dscp.add(p.frame_no);
    }
    if !tc.ecn().is_capable() {
        f.not_ect.add(p.frame_no);
    }
}

/// The most payload a packet of `f` may carry: the path MTU RDMA-CM negotiated for the
/// connection first (a requester that sends 4096-byte segments on a 1024 path shows 4096 in
/// its own packets), else what the packets of either direction show (`mtu`).
fn oversize_limit(f: &Flow, mtu: Option<u32>) -> u32 {
    f.cm_mtu().or(f.path_mtu).or(mtu).unwrap_or(u32::MAX)
}

/// The PSNs a request consumes, and the DMA length of a READ whose responses' count is not
/// known (the path MTU `mtu` unknown): a READ asks for ceil(len/MTU) responses, one PSN each.
fn psns_consumed(r: &RoceSummary, mtu: Option<u32>) -> (u32, Option<u32>) {
    match (r.opcode.operation(), r.dma_len) {
        (Operation::ReadRequest, Some(len)) => match mtu {
            Some(m) if m > 0 => (len.div_ceil(m).max(1), None),
            _ => (1, Some(len)),
        },
        _ => (1, None),
    }
}

/// What a NAK says, for its note (`without_gap`: the analysis just counted this PSN
/// sequence error as one no gap explains).
fn nak_note(aeth: Aeth, without_gap: bool) -> notes::NakNote {
    if aeth.kind() == AethKind::RnrNak {
        return notes::NakNote::Rnr;
    }
    match NakCode::from_value(aeth.value()) {
        NakCode::PsnSequenceError if without_gap => notes::NakNote::SequenceWithoutGap,
        NakCode::PsnSequenceError => notes::NakNote::Sequence,
        code => notes::NakNote::Error(code.name()),
    }
}

/// A frame sent to a MAC on a priority that MAC has paused for a while.
fn check_pause_honoured(
    pfc: &BTreeMap<(MacAddr, u8), PauseTracker>,
    state: &mut CaptureState,
    p: &PacketSummary,
) {
    let (Some(dst), Some((_, pcp))) = (p.dst_mac, p.vlan) else {
        return;
    };
    let key = (dst, pcp & 7);
    if pfc
        .get(&key)
        .is_some_and(|t| t.pauses_at(p.ts_ns, PAUSE_GRACE_NS))
    {
        state
            .pfc_not_honoured
            .entry(key)
            .or_default()
            .add(p.frame_no);
    }
}

/// Whether a CNP of class (`pcp`, `dscp`) travels below data of class `data`: a lower PCP
/// (or none where the data is tagged), or a lower DSCP.
fn cnp_below(pcp: Option<u8>, dscp: Option<u8>, data: (Option<u8>, u8)) -> bool {
    let pcp_lower = match (pcp, data.0) {
        (Some(c), Some(d)) => c < d,
        (None, Some(d)) => d > 0,
        _ => false,
    };
    pcp_lower || dscp.is_some_and(|c| c < data.1)
}

/// Capture-wide state of the analysis (the frames themselves are counted once, by the
/// pipeline's `FrameCounts`).
/// A frame this far behind the latest time begins a new segment, wherever it lands.
const SEGMENT_JUMP_NS: u64 = 1_000_000_000;
/// Jumps back listed in the report.
const TIME_JUMPS_KEPT: usize = 5;

/// A flow without a rate ring (`Analyzer::rate_slots`).
const NO_RATE: u32 = u32::MAX;

/// Captures run together (`cat a.pcap a.pcap`, a stream of several captures): a new segment
/// begins at the first frame after a second file header (or pcapng section) of an input, and
/// at a frame whose time goes back to the current segment's first time or before, or back by
/// more than a second. A mirror's reordering within microseconds does neither.
#[derive(Debug, Clone, Default)]
pub(crate) struct Segments {
    first_ts: Option<u64>,
    /// Segments after the first.
    count: u64,
    jumps: Vec<crate::model::TimeJump>,
    /// The latest file of each capture point's input (`PacketSummary::file`).
    files: Vec<u16>,
}

impl Segments {
    /// Whether `p` begins a new segment, the latest time so far being `latest`.
    #[inline]
    fn begins_at(&mut self, p: &PacketSummary, latest: u64) -> bool {
        let first = *self.first_ts.get_or_insert(p.ts_ns);
        let ts = p.ts_ns;
        let next_file = p.file > 0 && self.next_file(p.point, p.file);
        let back = ts < latest && (ts <= first || latest - ts > SEGMENT_JUMP_NS);
        if !next_file && !back {
            return false;
        }
        self.first_ts = Some(ts);
        self.count += 1;
        if back && self.jumps.len() < TIME_JUMPS_KEPT {
            self.jumps.push(crate::model::TimeJump {
                frame: p.frame_no,
                back_s: (latest - ts) as f64 / 1e9,
            });
        }
        true
    }

    /// Whether `file` is a later file of `point`'s input than its frames before were in.
    #[cold]
    fn next_file(&mut self, point: u16, file: u16) -> bool {
        let point = usize::from(point);
        if self.files.len() <= point {
            self.files.resize(point + 1, 0);
        }
        let later = file > self.files[point];
        self.files[point] = self.files[point].max(file);
        later
    }
}

/// PSNs the capture missed, on how many flows, and the data PSNs of those flows.
#[derive(Debug, Clone, Copy, Default)]
pub struct MissedTally {
    pub psns: u64,
    pub flows: u64,
    pub data_psns: u64,
}

#[derive(Debug, Clone, Default)]
pub struct CaptureState {
    /// Time of the latest frame: where CE windows and timelines end.
    pub last_ts: u64,
    /// RoCE frames by PCP of their innermost tag (index 8: untagged).
    pub roce_pcp: [u64; 9],
    pub cnps_unattributed: u64,
    pub flows_untracked_packets: u64,
    /// RoCE frames captured twice (the same identity close in time on one flow).
    pub capture_duplicates: u64,
    /// What the capture missed on the flows that ended.
    pub missed: MissedTally,
    /// PSNs of the flows that ended whose fate the capture could not tell.
    pub unsettled: u64,
    /// Frames that are not RoCE, by PCP (tagged) and by DSCP (IP): what shares RoCE's class.
    pub other_by_pcp: [flow::Evidence; 8],
    pub other_by_dscp: BTreeMap<u8, flow::Evidence>,
    /// RoCE frames sent to a MAC on a priority it had paused, per (MAC, priority).
    pub pfc_not_honoured: BTreeMap<(MacAddr, u8), flow::Evidence>,
    /// ICMP errors quoting RoCE packets, by what they say.
    pub icmp_errors: BTreeMap<IcmpKey, flow::Evidence>,
}

impl CaptureState {
    /// Adds what another shard's state holds (the same clock: the latest time is the same).
    fn absorb(&mut self, o: CaptureState) {
        self.last_ts = self.last_ts.max(o.last_ts);
        for (a, b) in self.roce_pcp.iter_mut().zip(o.roce_pcp) {
            *a += b;
        }
        self.cnps_unattributed += o.cnps_unattributed;
        self.flows_untracked_packets += o.flows_untracked_packets;
        self.capture_duplicates += o.capture_duplicates;
        self.missed.psns += o.missed.psns;
        self.missed.flows += o.missed.flows;
        self.missed.data_psns += o.missed.data_psns;
        self.unsettled += o.unsettled;
        for (a, b) in self.other_by_pcp.iter_mut().zip(&o.other_by_pcp) {
            a.absorb(b);
        }
        absorb_evidence(&mut self.other_by_dscp, o.other_by_dscp);
        absorb_evidence(&mut self.pfc_not_honoured, o.pfc_not_honoured);
        absorb_evidence(&mut self.icmp_errors, o.icmp_errors);
        if self.icmp_errors.len() > MAX_ICMP_KINDS {
            // The kinds seen first, as one analysis keeps them.
            let mut first: Vec<(u64, IcmpKey)> = (self.icmp_errors.iter())
                .map(|(k, e)| (e.frames.first().copied().unwrap_or(u64::MAX), *k))
                .collect();
            first.sort_unstable();
            for (_, k) in &first[MAX_ICMP_KINDS..] {
                self.icmp_errors.remove(k);
            }
        }
    }
}

/// `more` into `to`, key by key.
fn absorb_evidence<K: Ord>(
    to: &mut BTreeMap<K, flow::Evidence>,
    more: BTreeMap<K, flow::Evidence>,
) {
    for (k, e) in more {
        to.entry(k).or_default().absorb(&e);
    }
}

/// Distinct ICMP errors remembered (an ICMP flood about many QPs keeps the first).
const MAX_ICMP_KINDS: usize = 10_000;

/// What an ICMP error about RoCE says: who sent it, about which packets, which error, the MTU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct IcmpKey {
    pub reporter: IpAddr,
    pub src: IpAddr,
    pub dst: IpAddr,
    pub dqpn: Option<u32>,
    pub v6: bool,
    pub icmp_type: u8,
    pub code: u8,
    pub mtu: Option<u32>,
}

/// How long after the first XOFF of a pause a frame sent into it is not honouring it: the
/// sender's reaction time and the frames already on the wire (802.1Qbb allows less than a
/// microsecond at 100 Gb/s; a capture point's timestamps add some).
pub const PAUSE_GRACE_NS: u64 = 5_000;
/// The longest a request may wait for its ACK at the end of the capture (a flow with no ACK
/// RTT measured gets this much; see `flow::AckAllowance`).
pub const ACK_GRACE_NS: u64 = 1_000_000;
/// RDMA-CM requests sent in the capture's last this-long may still get their reply after it.
pub const CM_GRACE_NS: u64 = 50_000_000;

pub struct Analyzer {
    cfg: AnalysisConfig,
    pub totals: Totals,
    /// The open flows (see `lifetime` for how they leave).
    pub(crate) flows: flow_table::FlowTable,
    /// Each open flow's slot in `rate_pool`, by the flow's index (`NO_RATE` before its 10th
    /// packet): beside the flows, so that a flow's own state stays under a kilobyte.
    pub(crate) rate_slots: flow_table::Chunked<u32>,
    rate_pool: nic::RatePool,
    /// The id the next new flow gets: flows seen so far.
    next_flow_id: u64,
    /// Records of the flows that ended (with `keep_ended`).
    pub(crate) kept: lifetime::KeptFlows,
    /// How many of `kept` the findings were last evaluated with: only those kept since are
    /// evaluated again (every kept flow, every second, made `-r --events` quadratic).
    pub(crate) kept_evaluated: usize,
    /// A live capture whose findings are watched: the noteworthy flows that ended since the
    /// findings were last evaluated, so that a flow ending between two evaluations (a flow
    /// timeout under a second) still has its findings told.
    pub(crate) recent_ended: Option<lifetime::KeptFlows>,
    /// Flows ended since the outputs last took them (when they asked: `tell_ended`).
    ended: Vec<crate::model::FlowEnded>,
    /// What the outputs take of them, when they take any.
    tell_ended: Option<lifetime::EndedParts>,
    flows_ended: u64,
    /// When idle flows are looked for next.
    next_sweep_ns: u64,
    /// ACK RTT samples of ended flows, for the plots.
    ended_rtt: Vec<u64>,
    /// The end points, with what the flows that ended showed of them.
    hosts: hosts::HostTable,
    /// Flow lookup on every packet: FxHash, as SipHash showed in profiles (a capture is not an
    /// adversary that can pick keys to collide: flows are bounded by --max-flows anyway).
    pub(crate) index: FxHashMap<FlowKey, usize>,
    /// The open flow the latest RoCE packet went to: a QP's packets come in runs (3 on
    /// average on a busy link), and an open flow's key is its own, so a flow at this index
    /// with the packet's key is the one `index` holds, found without hashing.
    last_flow_index: usize,
    /// Hosts' names shared by report entries.
    host_names: report_build::HostNames,
    /// CM requests and what came of them.
    pub(crate) cm_requests: cm::CmRequests,
    /// Pairs learned from RDMA-CM, by flow key, both ways: the other direction, the path MTU
    /// from the request, when learned.
    cm_pairs: HashMap<FlowKey, (FlowKey, cm::CmSetup, u64)>,
    /// PFC per (source MAC, priority); 802.3x PAUSE per source MAC.
    pub(crate) pfc: BTreeMap<(MacAddr, u8), PauseTracker>,
    /// Which sources' PFC pauses overlapped, counted as pauses close.
    pub(crate) mutual: pfc::MutualTally,
    /// PFC pauses closed and not yet taken (`take_closed_pauses`), when an output takes them.
    closed_pauses: Option<Vec<pfc::SourcePause>>,
    /// No PFC pause lasts past this (the latest end any pause had): a frame after it needs no
    /// look at the pauses to know none holds it back.
    pfc_pauses_until: u64,
    pub(crate) pause: BTreeMap<MacAddr, PauseTracker>,
    pub(crate) state: CaptureState,
    pub(crate) timelines: Option<Timelines>,
    /// Data flows by (source, destination) host, in flow order: where a response or a CNP
    /// without a known peer looks for its request flow, so that per-packet work does not grow
    /// with the number of flows.
    data_by_hosts: FxHashMap<(IpAddr, IpAddr), flow_table::FlowsInOrder>,
    /// UD senders' PSN sequences, per (source address, source QP): judged here when the
    /// analysis is one, before the shards when it is split (`shards`).
    ud_senders: ud::UdSenders,
    /// Where the capture's time went back: captures run together.
    segments: Segments,
    /// Frames seen at several capture points (with `several_points`).
    point_copies: Option<copies::PointCopies>,
    /// What the latest frame fed did: its flow and its PSN event.
    last: Outcome,
    /// Frame notes, when asked for (`AnalysisConfig::notes`).
    pub(crate) notes: Option<notes::Notes>,
    /// The open flows of every shard, when this analysis is one of several (`shards`):
    /// `--max-flows` holds for the whole capture.
    open_flows: Option<std::sync::Arc<std::sync::atomic::AtomicUsize>>,
}

impl Analyzer {
    pub fn new(cfg: AnalysisConfig) -> Self {
        Analyzer {
            cfg,
            totals: Totals::default(),
            flows: flow_table::FlowTable::default(),
            rate_slots: flow_table::Chunked::default(),
            rate_pool: nic::RatePool::default(),
            next_flow_id: 0,
            kept: lifetime::KeptFlows::default(),
            kept_evaluated: 0,
            recent_ended: None,
            ended: Vec::new(),
            tell_ended: None,
            flows_ended: 0,
            next_sweep_ns: 0,
            ended_rtt: Vec::new(),
            hosts: hosts::HostTable::default(),
            index: FxHashMap::default(),
            last_flow_index: usize::MAX,
            host_names: Default::default(),
            cm_requests: HashMap::new(),
            cm_pairs: HashMap::new(),
            pfc: BTreeMap::new(),
            mutual: Default::default(),
            closed_pauses: None,
            pfc_pauses_until: 0,
            pause: BTreeMap::new(),
            state: CaptureState::default(),
            ud_senders: ud::UdSenders::default(),
            segments: Segments::default(),
            data_by_hosts: FxHashMap::default(),
            point_copies: cfg.several_points.then(Default::default),
            last: Outcome::default(),
            notes: cfg.notes.then(notes::Notes::default),
            open_flows: None,
            timelines: cfg.timelines.then(|| {
                let mut t = Timelines::default();
                if let Some(w) = cfg.bin_ns {
                    t.fixed_width(w);
                }
                t
            }),
        }
    }

    pub fn config(&self) -> &AnalysisConfig {
        &self.cfg
    }

    /// Flows open now.
    pub fn flow_count(&self) -> usize {
        self.flows.len()
    }

    /// The flows open now (the live view reads them); their order changes as flows end.
    pub fn flows(&self) -> &flow_table::FlowTable {
        &self.flows
    }

    /// The latest packet time fed.
    pub fn last_ts(&self) -> u64 {
        self.state.last_ts
    }

    /// The priorities (PCP) RoCE frames carried so far.
    pub fn roce_priorities(&self) -> Vec<u8> {
        (0..8u8)
            .filter(|&p| self.state.roce_pcp[usize::from(p)] > 0)
            .collect()
    }

    /// PFC state per (source MAC, priority).
    pub fn pfc_trackers(&self) -> impl Iterator<Item = ((MacAddr, u8), &PauseTracker)> {
        self.pfc.iter().map(|(&k, t)| (k, t))
    }

    /// Records an event of flow `fi` for the timelines, when they are collected.
    fn timeline(&mut self, fi: usize, ts: u64, e: Event) {
        if let Some(t) = self.timelines.as_mut() {
            t.add(self.flows[fi].id as usize, ts, e);
        }
    }

    /// Pause frames are traffic the plots show: the span binned includes them.
    fn timeline_touch(&mut self, ts: u64) {
        if let Some(t) = self.timelines.as_mut() {
            t.touch(ts);
        }
    }

    /// The id of open flow `fi`, as outputs name it.
    fn id_of(&self, fi: usize) -> usize {
        self.flows[fi].id as usize
    }

    /// Notes `kind` at `frame` about open flow `fi`, when notes are collected.
    fn note(&mut self, fi: usize, frame: u64, kind: impl FnOnce(u64) -> notes::NoteKind) {
        if let Some(n) = self.notes.as_mut() {
            let f = &self.flows[fi];
            n.flow(f.id, &f.key);
            n.add(frame, kind(f.id));
        }
    }

    /// What the latest frame fed did.
    pub fn last_outcome(&self) -> Outcome {
        self.last
    }

    /// Per PFC (source, priority) with a pause in force: (start, end as asked for so far).
    pub fn pauses_in_force(&self) -> impl Iterator<Item = pfc::SourcePause> + '_ {
        self.pfc
            .iter()
            .filter_map(|(&key, t)| t.in_force().map(|iv| (key, iv)))
    }

    /// Keeps every PFC pause as it closes for `take_closed_pauses` (the dataset's paused time).
    pub fn keep_closed_pauses(&mut self) {
        self.closed_pauses.get_or_insert_with(Vec::new);
    }

    /// The PFC pauses closed since the last call, per (source, priority): (start, end).
    pub fn take_closed_pauses(&mut self) -> Vec<pfc::SourcePause> {
        match self.closed_pauses.as_mut() {
            Some(v) if !v.is_empty() => std::mem::take(v),
            _ => Vec::new(),
        }
    }

    /// A PFC pause of `key` closed at `now`.
    fn pause_closed(&mut self, key: (MacAddr, u8), iv: (u64, u64), now: u64) {
        self.mutual.closed(&mut self.pfc, key, iv, now);
        if let Some(v) = self.closed_pauses.as_mut() {
            v.push((key, iv));
        }
    }

    /// The capture's time went back to `ts`: captures run together. Every flow ends, as a
    /// timeout would end it, so that the next segment's PSNs start flows of their own and are
    /// never taken for resends; its clock starts again.
    #[cold]
    fn new_segment(&mut self, ts: u64) {
        let end = self.state.last_ts;
        while !self.flows.is_empty() {
            self.end_connection(0, end);
        }
        self.ud_senders.clear();
        self.state.last_ts = ts;
    }

    /// How many segments the capture's time showed, and the first jumps back.
    pub fn segments(&self) -> (u64, &[crate::model::TimeJump]) {
        (self.segments.count + 1, &self.segments.jumps)
    }

    /// Feeds one packet. Packets must come in capture order.
    pub fn feed(&mut self, p: &PacketSummary) {
        self.clock(p);
        let ud = self.ud_senders.judge(p);
        self.analyse(p, ud);
    }

    /// Feeds one packet to this analysis as a shard of several (`shards`): what `part` says
    /// of it, its UD verdict `ud` judged before the shards. Every shard sees every frame's
    /// time, so that each follows the capture's clock.
    pub(super) fn feed_shard(
        &mut self,
        p: &PacketSummary,
        ud: Option<Arrival>,
        part: shards::Part,
    ) {
        self.clock(p);
        match part {
            shards::Part::Own => self.analyse(p, ud),
            shards::Part::PauseState => {
                if let Payload::Pfc { cev, quanta } = p.payload {
                    self.pfc_frame(p, cev, &quanta, false);
                }
            }
            shards::Part::Clock => {}
        }
    }

    /// The capture's clock at `p`: the timelines' origin, segments, idle flows.
    #[inline]
    fn clock(&mut self, p: &PacketSummary) {
        self.last = Outcome::default();
        if let Some(t) = self.timelines.as_mut() {
            t.start(p.ts_ns);
        }
        if self.segments.begins_at(p, self.state.last_ts) {
            self.new_segment(p.ts_ns);
        }
        self.state.last_ts = self.state.last_ts.max(p.ts_ns);
        self.sweep(p.ts_ns);
    }

    /// A PFC frame: the pause state per (source, priority); `counted`: its counts, closed
    /// pauses and timelines too (a shard that only follows the pause state keeps none).
    fn pfc_frame(&mut self, p: &PacketSummary, cev: u16, quanta: &[u16; 8], counted: bool) {
        if counted {
            self.timeline_touch(p.ts_ns);
        }
        let mac = p.src_mac.unwrap_or_default();
        for (prio, &q) in quanta.iter().enumerate() {
            if cev & (1 << prio) != 0 {
                if q > 0 && counted {
                    self.totals.pfc_xoff[prio] += 1;
                }
                let key = (mac, prio as u8);
                let tracker = self.pfc.entry(key).or_default();
                let closed = tracker.frame(&self.cfg.pfc, p.frame_no, p.ts_ns, q);
                if let Some(end) = tracker.pause_end() {
                    self.pfc_pauses_until = self.pfc_pauses_until.max(end);
                }
                if let (Some(iv), true) = (closed, counted) {
                    self.pause_closed(key, iv, p.ts_ns);
                }
            }
        }
    }

    /// What packet `p` says, `ud` its UD verdict.
    fn analyse(&mut self, p: &PacketSummary, ud: Option<Arrival>) {
        match p.payload {
            Payload::Roce(r) => self.roce(p, &r, ud),
            Payload::Pfc { cev, quanta } => self.pfc_frame(p, cev, &quanta, true),
            Payload::Pause { quanta } => {
                self.timeline_touch(p.ts_ns);
                self.totals.pause += 1;
                let mac = p.src_mac.unwrap_or_default();
                self.pause.entry(mac).or_default().frame(
                    &self.cfg.pfc,
                    p.frame_no,
                    p.ts_ns,
                    quanta,
                );
            }
            Payload::IcmpError(e) => {
                self.other_traffic(p);
                self.icmp_error(p, e);
            }
            Payload::Other => self.other_traffic(p),
        }
    }

    fn flow_index(&mut self, key: FlowKey, p: &PacketSummary) -> Option<usize> {
        let last = self.last_flow_index;
        let open = if self.flows.get(last).is_some_and(|f| f.key == key) {
            Some(last)
        } else {
            self.index.get(&key).copied()
        };
        if let Some(i) = open {
            // A QP used again after its connection timed out starts a new flow.
            if !self.end_if_idle(i, p.ts_ns) {
                self.last_flow_index = i;
                return Some(i);
            }
        }
        if self.flows.len() >= self.cfg.max_flows || !self.room_for_a_flow() {
            return None;
        }
        let i = self.flows.len();
        let mut flow = Flow::new(self.next_flow_id, key, p.frame_no, p.ts_ns);
        self.next_flow_id += 1;
        flow.link = p.link;
        flow.tags_visible = p.dst_mac.is_some();
        self.hosts
            .saw_macs(p.frame_no, [(key.src, p.src_mac), (key.dst, p.dst_mac)]);
        // A pair learned from RDMA-CM before the flow's first packet.
        let cm_pair = self.cm_pairs.get(&key).copied();
        if let Some((_, setup, _)) = cm_pair {
            flow.cm_setup(setup);
        }
        self.flows.push(Box::new(flow));
        self.rate_slots.push(NO_RATE);
        self.index.insert(key, i);
        self.last_flow_index = i;
        if let Some(&j) = cm_pair.and_then(|(peer_key, ..)| self.index.get(&peer_key)) {
            self.pair(i, j, PairingMethod::RdmaCm);
        }
        Some(i)
    }

    /// Whether the shards together have room for another open flow (taking it if so).
    fn room_for_a_flow(&self) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        let Some(open) = &self.open_flows else {
            return true;
        };
        let max = self.cfg.max_flows;
        open.fetch_update(Relaxed, Relaxed, |n| (n < max).then_some(n + 1))
            .is_ok()
    }

    /// An ICMP error about a RoCE packet.
    fn icmp_error(&mut self, p: &PacketSummary, e: roce_parsers::IcmpError) {
        let Some((reporter, _)) = p.addrs else { return };
        let key = IcmpKey {
            reporter,
            src: e.src,
            dst: e.dst,
            dqpn: e.dqpn,
            v6: e.v6,
            icmp_type: e.icmp_type,
            code: e.code,
            mtu: e.mtu,
        };
        let errors = &mut self.state.icmp_errors;
        if errors.len() < MAX_ICMP_KINDS || errors.contains_key(&key) {
            errors.entry(key).or_default().add(p.frame_no);
        }
    }

    /// A frame that is not RoCE: its class, to see whether it shares RoCE's.
    fn other_traffic(&mut self, p: &PacketSummary) {
        if p.malformed {
            return;
        }
        if let Some((_, pcp)) = p.vlan {
            self.state.other_by_pcp[usize::from(pcp & 7)].add(p.frame_no);
        }
        if let Some(tc) = p.tclass {
            self.state
                .other_by_dscp
                .entry(tc.dscp())
                .or_default()
                .add(p.frame_no);
        }
    }

    /// Whether the frame is one already seen, copied by the capture: twice at one point (a
    /// mirror of both directions), or at another point of a set of captures.
    fn is_capture_copy(&mut self, fi: usize, p: &PacketSummary, r: &RoceSummary) -> bool {
        // CNPs carry no PSN and repeat byte for byte by design: they are never copies.
        if r.opcode == Opcode::CNP {
            return false;
        }
        if self.flows[fi].is_capture_copy(r.psn, r.identity, p.ts_ns) {
            return true;
        }
        let id = self.id_of(fi);
        self.point_copies
            .as_mut()
            .is_some_and(|c| c.is_copy(id, r.psn, r.identity, p.point, p.ts_ns))
    }

    fn roce(&mut self, p: &PacketSummary, r: &RoceSummary, ud: Option<Arrival>) {
        self.state.roce_pcp[p.vlan.map_or(8, |(_, pcp)| usize::from(pcp & 7))] += 1;
        let Some((src, dst)) = p.addrs else { return };
        if let Some(msg) = r.cm {
            let at = cm::CmContext {
                src,
                dst,
                vlan: p.vlan.map(|v| v.0),
                frame_no: p.frame_no,
                ts: p.ts_ns,
            };
            self.cm_message(msg, at);
        }
        let key = FlowKey {
            src,
            dst,
            dqpn: r.dqpn,
            vlan: p.vlan.map(|v| v.0),
        };
        let Some(fi) = self.flow_index(key, p) else {
            self.state.flows_untracked_packets += 1;
            return;
        };
        if self.is_capture_copy(fi, p, r) {
            self.state.capture_duplicates += 1;
            self.note(fi, p.frame_no, |flow| notes::NoteKind::CaptureCopy { flow });
            return;
        }
        self.last.flow = Some(self.id_of(fi));
        let op = r.opcode;
        let ce = p.tclass.is_some_and(|t| t.ecn() == Ecn::Ce);
        {
            let f = &mut self.flows[fi];
            f.packets += 1;
            f.bytes += u64::from(p.len);
            f.payload_bytes += u64::from(r.payload_len);
            if f.packets > 1 {
                f.longest_gap_ns = f.longest_gap_ns.max(p.ts_ns.saturating_sub(f.last_ts));
            }
            f.last_ts = f.last_ts.max(p.ts_ns);
            f.opcodes.add(op.0);
            f.path.add(PathKey {
                sport: r.sport,
                flow_label: r.flow_label,
            });
            f.pcp[p.vlan.map_or(8, |(_, pcp)| usize::from(pcp & 7))] += 1;
            if let Some(tc) = p.tclass {
                f.dscp.add(tc.dscp());
                f.ecn[usize::from(tc.ecn().bits())] += 1;
            }
            if r.icrc == IcrcStatus::Bad {
                f.icrc_bad.add(p.frame_no);
            }
            if f.transport.is_none() && op.is_known() && op != Opcode::CNP {
                f.transport = Some(op.transport());
            }
            if ce {
                self.totals.ce += 1;
                f.ce.add(p.frame_no);
                f.nic.ce(p.ts_ns);
            }
            if let Some(nic) = f.nic.get_mut() {
                nic.sent(p.ts_ns, p.len);
            }
            let slot = &mut self.rate_slots[fi];
            if *slot == NO_RATE && f.packets >= nic::RATE_KEPT_FROM_PACKET {
                *slot = self.rate_pool.take(p.ts_ns);
            }
            if *slot != NO_RATE {
                self.rate_pool.ring(*slot).add(p.ts_ns, p.len);
            }
            f.rocev1 |= r.v1;
            f.native_ib |= r.ib;
            if p.ts_ns < self.pfc_pauses_until {
                check_pause_honoured(&self.pfc, &mut self.state, p);
            }
            if op == Opcode::CNP {
                f.count_cnp_class(p.vlan.map(|v| v.1), p.tclass.map(|t| t.dscp()));
            } else {
                check_marking(f, p, r);
            }
        }
        self.timeline(
            fi,
            p.ts_ns,
            Event {
                packets: 1,
                bytes: u64::from(p.len),
                ce: u64::from(ce),
                ..Event::default()
            },
        );
        // A frame whose own lengths contradict each other says nothing reliable about PSNs,
        // and a NIC drops a frame with a bad ICRC, so it never moved the receiver either: both
        // are counted, and change no sequence state.
        if p.malformed || r.icrc == IcrcStatus::Bad {
            if !p.malformed && op.is_request() {
                self.damaged_request(fi, r);
            }
            return;
        }
        let f = &mut self.flows[fi];
        f.max_payload = f.max_payload.max(r.payload_len);
        if op.operation() == Operation::Cnp {
            self.cnp(fi, p);
        } else if op.is_request() {
            self.request(fi, p, r, ud);
        } else if op.is_response() {
            self.response(fi, p, r);
        }
    }

    /// Makes flows `a` and `b` each other's peer. A flow paired before with another (a QP
    /// that RDMA-CM connects anew, to another QP) leaves that one without a peer: pairs stay
    /// mutual, which ending a connection and renumbering flows rely on.
    fn pair(&mut self, a: usize, b: usize, how: PairingMethod) {
        for (x, y) in [(a, b), (b, a)] {
            if let Some(old) = self.flows[x].peer.filter(|&old| old != y) {
                self.flows[old].peer = None;
                self.flows[old].paired_by = None;
                self.flows[old].pair_certain = false;
            }
        }
        self.flows[a].peer = Some(b);
        self.flows[b].peer = Some(a);
        self.flows[a].paired_by = Some(how);
        self.flows[b].paired_by = Some(how);
        self.flows[a].pair_certain = how == PairingMethod::RdmaCm;
        self.flows[b].pair_certain = how == PairingMethod::RdmaCm;
    }

    /// The path MTU of a QP pair: what either direction's packets show, else what RDMA-CM
    /// offered.
    fn mtu_of(&self, fi: usize) -> Option<u32> {
        let f = &self.flows[fi];
        f.path_mtu
            .or_else(|| f.peer.and_then(|j| self.flows[j].path_mtu))
            .or(f.cm_mtu())
    }

    fn request(&mut self, fi: usize, p: &PacketSummary, r: &RoceSummary, ud: Option<Arrival>) {
        let op = r.opcode;
        let mtu = self.mtu_of(fi);
        if self.flows[fi].requests == 0 {
            // In the order flows appeared (ties in the choices below go to the older flow).
            let (k, id) = (self.flows[fi].key, self.flows[fi].id);
            let list = self.data_by_hosts.entry((k.src, k.dst)).or_default();
            list.insert(id, fi);
        }
        let f = &mut self.flows[fi];
        f.requests += 1;
        if matches!(op.position(), Position::Last | Position::Only) {
            f.messages += 1;
        }
        if matches!(op.operation(), Operation::Atomic | Operation::ReadRequest) {
            f.messages += 1;
        }
        // First/Middle packets carry exactly one path MTU of payload.
        if matches!(op.position(), Position::First | Position::Middle) && f.path_mtu.is_none() {
            f.path_mtu = Some(r.payload_len);
        }
        if r.payload_len > oversize_limit(f, mtu) {
            f.oversize.add(p.frame_no);
        }
        if p.tclass.is_some_and(|t| t.ecn() == Ecn::Ce) {
            f.expire_ce(p.ts_ns, CNP_WINDOW_NS, self.notes.as_mut());
            f.ce_pending.push_back((p.ts_ns, p.frame_no));
        }
        let (consumes, read_len) = psns_consumed(r, mtu.or(f.path_mtu));
        // The PSNs of a READ's responses are the READ's own: another request there is the
        // requester's protocol error, not a resend (a READ may be reissued from within).
        if let Some((read_psn, n)) = f.last_read {
            let into = r.psn - read_psn;
            if op.operation() != Operation::ReadRequest && into > 0 && (into as u32) < n {
                f.read_range_violation.add(p.frame_no);
                return;
            }
        }
        if op.operation() == Operation::ReadRequest && consumes > 1 {
            f.last_read = Some((r.psn, consumes));
        }
        // A UD QP has one PSN sequence for every destination it sends to, judged per sending
        // QP (DETH source QP) before this flow saw the frame (`ud`). Multicast is left out:
        // one port sees only some of a sender's groups.
        let arrival = match (f.transport, r.sqpn) {
            (Some(Transport::Ud), Some(_)) => match ud {
                Some(a) => {
                    f.ud_psn.record(a);
                    a
                }
                None => Arrival::InOrder,
            },
            _ => {
                let rtt = &f.ack_rtt;
                f.req.request(
                    r.psn,
                    p.ts_ns,
                    consumes,
                    read_len,
                    f.transport.is_some_and(Transport::is_reliable),
                    r.ackreq,
                    p.frame_no,
                    || flow::AckAllowance::of(rtt).ns,
                )
            }
        };
        self.late_resends(fi);
        let unseen_gap = self.unseen_loss(fi);
        // A READ sent again: the responses the capture saw a gap in were lost, not missed.
        if op.operation() == Operation::ReadRequest
            && matches!(
                arrival,
                Arrival::Retransmitted | Arrival::Duplicate | Arrival::OutOfOrder
            )
        {
            if let Some(j) = self.flows[fi].peer {
                self.flows[j].read_resp.reissued(p.ts_ns);
            }
        }
        let f = &mut self.flows[fi];
        let reliable = f.transport.is_some_and(Transport::is_reliable);
        if reliable && (f.nic.is_set() || matches!(arrival, Arrival::Gap(_))) {
            let gap_from = match arrival {
                Arrival::Gap(missing) => Some(r.psn + (Psn::MODULUS - missing % Psn::MODULUS)),
                _ => None,
            };
            let resent = arrival == Arrival::Retransmitted;
            f.nic.request(r.psn, p.ts_ns, gap_from, resent);
        }
        match arrival {
            Arrival::Gap(_) => {
                self.totals.psn_gaps += 1;
                f.loss.add(p.frame_no)
            }
            Arrival::Retransmitted => {
                self.totals.retransmitted += 1;
                f.retrans.add(p.frame_no);
                // Karn: no RTT samples from requests that were sent more than once.
                f.awaiting_ack.retain(|&(psn, _)| psn < r.psn);
            }
            Arrival::Duplicate => f.dups.add(p.frame_no),
            _ => {}
        }
        if self.notes.is_some() {
            self.note_arrival(fi, p.frame_no, r.psn, arrival);
        }
        let f = &mut self.flows[fi];
        self.last.psn = match arrival {
            Arrival::Gap(_) => Some(PsnEvent::Gap),
            Arrival::Retransmitted => Some(PsnEvent::Retransmitted),
            Arrival::Duplicate => Some(PsnEvent::Duplicate),
            Arrival::OutOfOrder => Some(PsnEvent::OutOfOrder),
            Arrival::InOrder => None,
        };
        if f.transport.is_some_and(Transport::is_reliable) {
            let replay = f.retry.request(r.psn, arrival == Arrival::Retransmitted);
            f.recovery.request(p.ts_ns, replay);
        }
        if arrival == Arrival::InOrder || matches!(arrival, Arrival::Gap(_)) {
            if r.ackreq {
                f.await_ack(r.psn, p.ts_ns);
                if f.transport.is_some_and(Transport::is_reliable) {
                    f.await_coverage(r.psn, p.ts_ns, p.frame_no, r.payload_len);
                }
            }
            if op.operation() == Operation::ReadRequest {
                f.await_read(r.psn, p.ts_ns);
            }
        }
        if self.timelines.is_some() {
            let position = f.advance_position(r.psn);
            self.timeline(
                fi,
                p.ts_ns,
                Event {
                    psn_gaps: u64::from(matches!(arrival, Arrival::Gap(_)) || unseen_gap),
                    retransmissions: u64::from(arrival == Arrival::Retransmitted),
                    psn_progress: Some(position),
                    ..Event::default()
                },
            );
        }
    }

    /// Hole fillers the latest request showed to be resends (a go-back whose NAK the capture
    /// missed): counted, kept as evidence and noted as the resends they were.
    #[inline]
    fn late_resends(&mut self, fi: usize) {
        if let Some(late) = self.flows[fi].req.take_late_resends() {
            self.count_late_resends(fi, late);
        }
    }

    /// A resend of a PSN that a NAK named before the capture saw it: a gap the capture could
    /// not see open, with the NAK as its evidence. Whether the latest request was one.
    #[inline]
    fn unseen_loss(&mut self, fi: usize) -> bool {
        let Some(nak_frame) = self.flows[fi].req.take_unseen_loss() else {
            return false;
        };
        self.totals.psn_gaps += 1;
        self.flows[fi].loss.add(nak_frame);
        true
    }

    #[cold]
    fn count_late_resends(&mut self, fi: usize, late: psn::Fillers) {
        self.totals.retransmitted += late.count;
        let f = &mut self.flows[fi];
        f.retry.replay_from(late.first);
        for &frame in &late.frames {
            f.retrans.add(frame);
        }
        let cause = f.req.resend_cause();
        for (i, &frame) in late.frames.iter().enumerate() {
            let psn = (late.first + i as u32).value();
            self.note(fi, frame, |flow| notes::NoteKind::Resend {
                flow,
                psn,
                cause,
            });
        }
    }

    /// The gaps of flow `fi` just judged missed by the capture: their notes say so.
    #[inline]
    fn note_missed_gaps(&mut self, fi: usize) {
        if self.notes.is_none() {
            self.flows[fi].req.take_newly_missed();
            return;
        }
        let frames = self.flows[fi].req.take_newly_missed();
        if let (Some(n), false) = (self.notes.as_mut(), frames.is_empty()) {
            let flow = self.flows[fi].id;
            for frame in frames {
                n.gap_missed(frame, flow);
            }
        }
    }

    /// A request with a bad ICRC: its receiver dropped it, so it moves no PSN state, except
    /// that it takes its place in the sequence when its PSN is the next expected (damaged:
    /// no gap, nothing missing).
    fn damaged_request(&mut self, fi: usize, r: &RoceSummary) {
        let mtu = self.mtu_of(fi);
        let f = &mut self.flows[fi];
        if f.transport == Some(Transport::Ud) {
            return;
        }
        let (consumes, _) = psns_consumed(r, mtu.or(f.path_mtu));
        f.req.damaged(r.psn, consumes);
    }

    /// Notes a request's PSN event: a gap (what was expected, what came) or a resend (and
    /// what started the go-back).
    fn note_arrival(&mut self, fi: usize, frame: u64, psn: Psn, arrival: Arrival) {
        let flow = self.flows[fi].id;
        let kind = match arrival {
            Arrival::Gap(missing) => notes::NoteKind::PsnGap {
                flow,
                expected: (psn + (Psn::MODULUS - missing % Psn::MODULUS)).value(),
                seen: psn.value(),
                missing,
                missed: false,
            },
            Arrival::Retransmitted => notes::NoteKind::Resend {
                flow,
                psn: psn.value(),
                cause: self.flows[fi].req.resend_cause(),
            },
            _ => return,
        };
        self.note(fi, frame, |_| kind);
    }

    /// The data flows from `src` to `dst`, in flow order.
    fn data_from_to(&self, src: IpAddr, dst: IpAddr) -> impl Iterator<Item = usize> + '_ {
        self.data_by_hosts
            .get(&(src, dst))
            .into_iter()
            .flat_map(flow_table::FlowsInOrder::indices)
    }

    /// The request flow a response flow answers: its CM or PSN-matched peer.
    fn request_flow_for(&mut self, fi: usize, psn: Psn) -> Option<usize> {
        if let Some(j) = self.flows[fi].peer {
            return Some(j);
        }
        let key = self.flows[fi].key;
        let mut best: Option<(usize, i32)> = None;
        // Flows the PSN fits, the one taken among them; a flow paired by a guess before
        // counts too (the pairing then is a guess as well).
        let mut candidates = 0;
        for j in self.data_from_to(key.dst, key.src) {
            let d = &self.flows[j];
            if j == fi || d.pair_certain || key.vlan != d.key.vlan {
                continue;
            }
            let Some(expected) = d.req.expected() else {
                continue;
            };
            // A response carries the PSN of a request already sent: at or behind the last one,
            // or within the responses of a READ whose size is unknown.
            let dist = psn - expected;
            if !(-65_536..4_096).contains(&dist) {
                continue;
            }
            candidates += 1;
            if d.peer.is_none() {
                let closeness = (dist + 1).abs();
                if best.is_none_or(|(_, c)| closeness < c) {
                    best = Some((j, closeness));
                }
            }
        }
        let (j, _) = best?;
        self.pair(fi, j, PairingMethod::Psn);
        // Matched among several flows, the pairing is a guess: its ACKs prove nothing.
        for k in [fi, j] {
            self.flows[k].pair_certain = candidates == 1;
        }
        Some(j)
    }

    fn response(&mut self, fi: usize, p: &PacketSummary, r: &RoceSummary) {
        let op = r.opcode;
        let request_flow = self.request_flow_for(fi, r.psn);
        // What the responder acknowledges shows what the capture missed only where the two
        // directions are paired for certain.
        let certain = request_flow.filter(|_| self.flows[fi].pair_certain);
        if op.operation() == Operation::ReadResponse {
            self.read_response(fi, certain, p, r);
        }
        let Some(di) = request_flow else {
            return;
        };
        if self.flows[di].path_mtu.is_none() {
            self.flows[di].path_mtu = self.flows[fi].path_mtu;
        }
        let d = &mut self.flows[di];
        d.feedback_ts = d.feedback_ts.max(p.ts_ns);
        if op.operation() == Operation::ReadResponse {
            d.read_responses += 1;
            if matches!(op.position(), Position::First | Position::Only) {
                while let Some(&(psn, ts)) = d.awaiting_read.front() {
                    let dist = psn - r.psn;
                    if dist > 0 {
                        break;
                    }
                    d.awaiting_read.pop_front();
                    if dist == 0 {
                        d.read_latency.add(p.ts_ns.saturating_sub(ts));
                        break;
                    }
                }
            }
        }
        let Some((syndrome, msn)) = r.aeth else {
            return;
        };
        let aeth = Aeth { syndrome, msn };
        let without_gap_before = d.nak_without_gap.count;
        if certain.is_some() {
            match aeth.kind() {
                AethKind::Ack => d.req.acknowledged(r.psn, p.ts_ns),
                AethKind::Nak => {
                    let sequence = NakCode::from_value(aeth.value()) == NakCode::PsnSequenceError;
                    d.req.nak_evidence(r.psn, p.ts_ns, sequence, p.frame_no)
                }
                AethKind::RnrNak => d.req.nak_evidence(r.psn, p.ts_ns, false, p.frame_no),
                AethKind::Reserved => 0,
            };
            self.note_missed_gaps(di);
        }
        let d = &mut self.flows[di];
        match aeth.kind() {
            AethKind::Ack => {
                if op.operation() == Operation::Ack {
                    d.acks += 1;
                }
                d.covered(r.psn, true);
                while let Some(&(psn, ts)) = d.awaiting_ack.front() {
                    if psn > r.psn {
                        break;
                    }
                    d.awaiting_ack.pop_front();
                    d.ack_rtt.add(p.ts_ns.saturating_sub(ts));
                    self.totals.ack_rtt.add(p.ts_ns.saturating_sub(ts));
                }
            }
            AethKind::RnrNak => {
                d.recovery.nak(p.ts_ns, true);
                d.nic.rnr_nak(p.ts_ns);
                d.naks.rnr.add(p.frame_no);
                d.req.nak(r.psn);
                d.covered(r.psn, false);
            }
            AethKind::Nak => {
                let slot = match NakCode::from_value(aeth.value()) {
                    NakCode::PsnSequenceError => {
                        if d.req.saw(r.psn) {
                            d.nak_without_gap.add(p.frame_no);
                        }
                        let highest = d.req.highest_sent_before_nak(r.psn);
                        d.nic.sequence_nak(r.psn, p.ts_ns, p.frame_no, highest);
                        d.req.nak(r.psn);
                        d.recovery.nak(p.ts_ns, false);
                        &mut d.naks.psn_sequence_error
                    }
                    NakCode::InvalidRequest => &mut d.naks.invalid_request,
                    NakCode::RemoteAccessError => &mut d.naks.remote_access_error,
                    NakCode::RemoteOperationalError => &mut d.naks.remote_operational_error,
                    NakCode::InvalidRdRequest => &mut d.naks.invalid_rd_request,
                    NakCode::Reserved(_) => &mut d.naks.other,
                };
                slot.add(p.frame_no);
                d.covered(r.psn, false);
                // Everything before the NAK's PSN was received.
                d.awaiting_ack.retain(|&(psn, _)| psn >= r.psn);
            }
            AethKind::Reserved => {}
        }
        if matches!(aeth.kind(), AethKind::Nak | AethKind::RnrNak) {
            if self.notes.is_some() {
                let without_gap = self.flows[di].nak_without_gap.count > without_gap_before;
                let what = nak_note(aeth, without_gap);
                let psn = r.psn.value();
                self.note(di, p.frame_no, |flow| notes::NoteKind::Nak {
                    flow,
                    what,
                    psn,
                });
            }
            self.last.nak_for = Some(self.id_of(di));
            self.timeline(
                di,
                p.ts_ns,
                Event {
                    naks: 1,
                    ..Event::default()
                },
            );
        }
    }

    /// A READ response on flow `fi`: the response sequence (gaps wait for their verdict only
    /// where the pairing with `certain`, the request flow, is certain), the path MTU, and, as an
    /// acknowledgement, what it shows the capture missed of the requests.
    fn read_response(
        &mut self,
        fi: usize,
        certain: Option<usize>,
        p: &PacketSummary,
        r: &RoceSummary,
    ) {
        let op = r.opcode;
        let first = matches!(op.position(), Position::First | Position::Only);
        let last = matches!(op.position(), Position::Last | Position::Only);
        // Asked for only on a gap: the allowance is a percentile of the RTT samples.
        let allowance = certain
            .filter(|_| self.flows[fi].read_resp.gap_at(r.psn, first))
            .map(|di| flow::AckAllowance::of(&self.flows[di].ack_rtt).ns);
        if let Some(di) = certain {
            self.flows[di].req.acknowledged(r.psn, p.ts_ns);
            self.note_missed_gaps(di);
        }
        let mtu = self.mtu_of(fi);
        let f = &mut self.flows[fi];
        f.read_resp.response(r.psn, first, last, p.ts_ns, allowance);
        if matches!(op.position(), Position::First | Position::Middle) && f.path_mtu.is_none() {
            f.path_mtu = Some(r.payload_len);
        }
        if r.payload_len > oversize_limit(f, mtu) {
            f.oversize.add(p.frame_no);
        }
    }

    /// A CNP on flow `fi` (receiver -> sender) concerns the data the sender sends on the peer
    /// flow; without a known peer, the data flow between the same hosts that was CE-marked last.
    fn cnp(&mut self, fi: usize, p: &PacketSummary) {
        self.totals.cnps += 1;
        self.flows[fi].cnps_sent += 1;
        let target = self.flows[fi].peer.or_else(|| {
            let key = self.flows[fi].key;
            let candidates: Vec<usize> = self
                .data_from_to(key.dst, key.src)
                .filter(|&j| j != fi)
                .collect();
            candidates
                .iter()
                .copied()
                .filter(|&j| self.flows[j].first_ce_ts().is_some())
                .max_by_key(|&j| self.flows[j].ce_pending.back().map_or(0, |&(ts, _)| ts))
                .or(if candidates.len() == 1 {
                    Some(candidates[0])
                } else {
                    None
                })
        });
        let Some(di) = target else {
            self.state.cnps_unattributed += 1;
            if let Some(n) = self.notes.as_mut() {
                n.add(p.frame_no, notes::NoteKind::Cnp { slows: None });
            }
            return;
        };
        self.last.cnp_for = Some(self.id_of(di));
        let capture_start = self.segments.first_ts.unwrap_or(0);
        let before = match self.rate_slots[di] {
            NO_RATE => Err(nic::before_without_ring(p.ts_ns, capture_start)),
            slot => self.rate_pool.ring(slot).before(p.ts_ns, capture_start),
        };
        let d = &mut self.flows[di];
        d.feedback_ts = d.feedback_ts.max(p.ts_ns);
        d.cnps.add(p.frame_no);
        let (pcp, dscp) = (p.vlan.map(|v| v.1), p.tclass.map(|t| t.dscp()));
        if d.class().is_some_and(|data| cnp_below(pcp, dscp, data)) {
            d.cnp_lower_class.add(p.frame_no);
        }
        d.nic.cnp(p.ts_ns, p.frame_no, before);
        d.expire_ce(p.ts_ns, CNP_WINDOW_NS, self.notes.as_mut());
        d.ce_pending.reset();
        self.note(di, p.frame_no, |flow| notes::NoteKind::Cnp {
            slows: Some(flow),
        });
        self.timeline(
            di,
            p.ts_ns,
            Event {
                cnps: 1,
                ..Event::default()
            },
        );
    }
}

/// The outputs ask the analysis through this, never through `Analyzer` itself.
impl crate::model::FiguresNow for Analyzer {
    fn figures(&self) -> crate::model::Figures {
        Analyzer::figures(self)
    }

    fn ack_rtt_of(&self, ids: &[u64]) -> Vec<crate::model::LatencySummary> {
        Analyzer::ack_rtt_of(self, ids)
    }

    fn pauses_in_force(&self) -> Vec<pfc::SourcePause> {
        Analyzer::pauses_in_force(self).collect()
    }

    fn flows_seen(&self) -> u64 {
        Analyzer::flows_seen(self)
    }
}
