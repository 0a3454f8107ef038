//! What the outputs of a running capture read of it, as values: a flow's counters (the one
//! projection of them, filled by the analysis in one place), PFC per source and priority,
//! running totals, what a source tells with each batch, and the findings that first hold.

use std::net::IpAddr;

use roce_parsers::MacAddr;

use super::{Finding, FlowLabel, FlowReport, LatencySummary, Outcome, Severity, SourcePause};

/// A flow's counters as they stand: what the metrics count per QP and the live view shows
/// per row. Counters never go down while the flow lives.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlowCounters {
    /// The flow's own number (the order flows appeared in over the run).
    pub id: u64,
    pub flow: FlowLabel<IpAddr>,
    pub packets: u64,
    pub bytes: u64,
    /// PSN gaps seen on arrival.
    pub gaps: u64,
    /// PSNs lost on the network, as judged so far (resent, or missing past their allowance).
    pub lost: u64,
    pub retransmitted: u64,
    pub ce: u64,
    /// CNPs that came back for the flow's data.
    pub cnps: u64,
    /// NAKs that came back, by code: PSN sequence error, RNR, remote access error, remote
    /// operational error, invalid request, other (invalid RD request and reserved codes).
    pub naks: [u64; 6],
    /// The latest packet of the flow.
    pub last_ts: u64,
}

impl FlowCounters {
    /// Every NAK, whatever its code.
    pub fn all_naks(&self) -> u64 {
        self.naks.iter().sum()
    }
}

/// PFC of one priority from one source MAC, as it stands.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PfcFigures {
    pub source: MacAddr,
    pub priority: u8,
    /// A priority RoCE uses.
    pub roce: bool,
    pub xoff: u64,
    /// Time paused so far (a pause in force counted up to now).
    pub paused_ns: u64,
    /// Storms so far, each counted from when it qualifies.
    pub storms: u64,
}

/// The running capture's figures at one moment: what the metrics and the live view read.
#[derive(Debug, Clone, Default)]
pub struct Figures {
    /// The capture's time.
    pub now: u64,
    /// The flows open now, in no particular order.
    pub flows: Vec<FlowCounters>,
    pub flows_seen: u64,
    pub flows_ended: u64,
    pub pfc: Vec<PfcFigures>,
    pub totals: Totals,
    /// PSNs the capture missed so far (the other end acknowledged them).
    pub capture_missed: u64,
}

/// Running totals for the live status view (cheap to read at any time).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    pub psn_gaps: u64,
    pub retransmitted: u64,
    pub ce: u64,
    pub cnps: u64,
    /// PFC XOFF frames per priority.
    pub pfc_xoff: [u64; 8],
    pub pause: u64,
    /// Every ACK round trip measured, for the metrics' histogram.
    pub ack_rtt: RttHistogram,
}

/// ACK round trips by bucket: how many took at most each bound (not cumulative here).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RttHistogram {
    pub buckets: [u64; RTT_BOUNDS_NS.len() + 1],
    pub sum_ns: u64,
    pub count: u64,
}

/// Upper bounds of the ACK RTT buckets, in ns: 1 us to 100 ms (the last bucket is the rest).
pub const RTT_BOUNDS_NS: [u64; 12] = [
    1_000,
    2_000,
    5_000,
    10_000,
    20_000,
    50_000,
    100_000,
    200_000,
    500_000,
    1_000_000,
    10_000_000,
    100_000_000,
];

impl Totals {
    /// Adds `o`'s counts (another shard's).
    pub fn absorb(&mut self, o: &Totals) {
        self.psn_gaps += o.psn_gaps;
        self.retransmitted += o.retransmitted;
        self.ce += o.ce;
        self.cnps += o.cnps;
        for (a, b) in self.pfc_xoff.iter_mut().zip(o.pfc_xoff) {
            *a += b;
        }
        self.pause += o.pause;
        self.ack_rtt.absorb(&o.ack_rtt);
    }
}

impl RttHistogram {
    /// Adds `o`'s round trips.
    pub fn absorb(&mut self, o: &RttHistogram) {
        for (a, b) in self.buckets.iter_mut().zip(o.buckets) {
            *a += b;
        }
        self.sum_ns += o.sum_ns;
        self.count += o.count;
    }

    pub fn add(&mut self, ns: u64) {
        let i = RTT_BOUNDS_NS.partition_point(|&b| b < ns);
        self.buckets[i] += 1;
        self.sum_ns += ns;
        self.count += 1;
    }
}

/// What a source tells with each batch: its time resolution, and counters while it runs (the
/// live status view).
#[derive(Debug, Clone, Copy, Default)]
pub struct SourceStatus {
    /// Timestamps finer than microseconds: times are shown to the nanosecond.
    pub nanosecond_times: bool,
    /// Frames the kernel or the interface dropped so far, when known.
    pub capture_drops: Option<u64>,
    /// A live capture's kernel counters so far (pcap_stats).
    pub kernel: Option<KernelCounters>,
    /// A live capture: the wall clock (ns since the epoch) when the capture handed the batch
    /// over, which may be well before the analysis takes it (chunks queue while it is busy).
    pub handed_ns: Option<u64>,
}

/// pcap_stats of a live capture: frames the kernel handed over, dropped for lack of buffer,
/// dropped by the interface.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelCounters {
    pub received: u64,
    pub dropped: u64,
    pub if_dropped: u64,
}
/// Findings that first hold at `ts_ns`, and those told before whose severity rose.
pub struct NewFindings {
    pub ts_ns: u64,
    pub findings: Vec<Finding>,
    /// Per finding, the flows it tells of for the first time: 1 for a finding of one flow
    /// or none; for a group, its flows (a group made before: those of them not told yet; the
    /// metrics count these).
    pub first_told: Vec<u64>,
    /// Findings told before at a lesser severity, as they stand now.
    pub escalated: Vec<Escalation>,
}

/// A finding told before whose severity rose as evidence grew: it as it stands now (its
/// severity the new one), and the severity it was last told with.
#[derive(Debug, Clone)]
pub struct Escalation {
    pub finding: Finding,
    pub from: Severity,
    /// The flows whose finding rose: 1 for a finding of one flow or none, a group's flows.
    pub flows: u64,
}

impl NewFindings {
    /// Each finding with the flows it told of first.
    pub fn told(&self) -> impl Iterator<Item = Told> + '_ {
        self.findings
            .iter()
            .zip(&self.first_told)
            .map(|(f, &first_told)| Told {
                finding: f.clone(),
                first_told,
            })
    }
}

/// A finding as told, and the flows it told of first: what the metrics count, so that a
/// group's flows told before on their own are not counted twice.
#[derive(Debug, Clone)]
pub struct Told {
    pub finding: Finding,
    pub first_told: u64,
}

/// What the analysis tells on demand while a capture runs: an output asks when it needs it
/// (the metrics once a second, a rolling dataset at each rotation), as building it for every
/// frame would cost.
pub trait FiguresNow {
    /// The figures at the capture's time now.
    fn figures(&self) -> Figures;
    /// The ACK round trips of the open flows `ids`, in the order asked; flows no longer open
    /// get none.
    fn ack_rtt_of(&self, ids: &[u64]) -> Vec<LatencySummary>;
    /// Per PFC (source, priority) with a pause in force: (start, end as asked for so far).
    fn pauses_in_force(&self) -> Vec<SourcePause>;
    /// Flows seen over the run so far, open or ended.
    fn flows_seen(&self) -> u64;
}

/// What the analysis made of one frame: its outcome, and the PFC pauses it ended (when an
/// output takes them).
#[derive(Debug, Clone, Copy)]
pub struct FrameDone<'a> {
    pub outcome: Outcome,
    pub pauses_ended: &'a [SourcePause],
}

/// A flow that ended before the capture did, with what the outputs asked for.
#[derive(Debug, Clone)]
pub struct FlowEnded {
    /// The flow's own id (`FlowCounters::id`; a report entry numbers it `id + 1`).
    pub id: u64,
    /// The capture's time when it ended.
    pub ended_ns: u64,
    /// Its report entry, when an output takes one (shared: an output may keep it).
    pub report: Option<std::sync::Arc<FlowReport>>,
    /// Its final counters, when an output takes them.
    pub counters: Option<FlowCounters>,
}
