//! The report: one serde model that every output renders from (text, JSON). Its JSON form is
//! a public interface, versioned by `schema` and described in docs/json.md.

pub mod dir;
pub mod html;
pub mod plots;
pub mod text;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::analysis::latency::LatencySummary;
use crate::analysis::pfc::Storm;
use crate::analysis::psn::PsnCounts;
use crate::decode::MalformedByLayer;

pub const SCHEMA: &str = "roce-sniff.report/1";

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub schema: &'static str,
    pub capture: CaptureReport,
    pub flows: Vec<FlowReport>,
    pub pfc: PfcReport,
    pub findings: Vec<Finding>,
    /// Present when --expect-* options were given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify: Option<crate::verify::VerifyReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CaptureReport {
    pub file: String,
    pub format: Option<&'static str>,
    /// Link types seen, by name, with frame counts.
    pub link_types: BTreeMap<String, u64>,
    pub snaplen: u32,
    pub packets: u64,
    pub bytes: u64,
    pub roce_packets: u64,
    pub rocev1_packets: u64,
    /// Native InfiniBand frames (ERF captures), counted within `roce_packets`.
    pub ib_packets: u64,
    pub pfc_frames: u64,
    pub pause_frames: u64,
    pub malformed: u64,
    pub malformed_by_layer: MalformedByLayer,
    pub unsupported_link_type: u64,
    /// Frames cut by the snap length.
    pub truncated: u64,
    pub icrc_ok: u64,
    pub icrc_bad: u64,
    pub icrc_unchecked: u64,
    pub first_ts: Option<f64>,
    pub last_ts: Option<f64>,
    /// `first_ts` in exact nanoseconds.
    pub first_ts_ns: Option<u64>,
    pub duration_s: f64,
    pub flows: usize,
    /// Packets of flows beyond --max-flows (counted, not analysed).
    pub flows_untracked_packets: u64,
    pub cnps_unattributed: u64,
    /// Problems with the file itself (cut short, corrupt), or capture drops.
    pub warnings: Vec<String>,
    /// Live capture only: the interface and the kernel's counters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live: Option<LiveStats>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct LiveStats {
    pub interface: String,
    pub filter: String,
    /// Frames the kernel handed to the capture, dropped for lack of buffer, dropped by the
    /// interface (pcap_stats).
    pub received: u64,
    pub dropped: u64,
    pub if_dropped: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct FlowReport {
    /// 1-based position in this report's flow list (troubled first).
    pub id: usize,
    pub src: String,
    pub dst: String,
    pub dqpn: u32,
    pub vlan: Option<u16>,
    pub transport: Option<&'static str>,
    /// "data" (carries requests), "responses" (ACKs, READ responses) or "cnp".
    pub role: &'static str,
    pub packets: u64,
    pub bytes: u64,
    pub payload_bytes: u64,
    pub requests: u64,
    pub messages: u64,
    pub first_frame: u64,
    pub first_ts: f64,
    pub last_ts: f64,
    pub duration_us: f64,
    /// Wire throughput over the flow's active time.
    pub gbps: f64,
    pub path_mtu: Option<u32>,
    pub pcp: BTreeMap<String, u64>,
    pub dscp: BTreeMap<String, u64>,
    pub ecn: BTreeMap<String, u64>,
    pub opcodes: BTreeMap<String, u64>,
    pub psn: PsnCounts,
    /// Frames where loss (a gap) and retransmissions were first seen.
    pub loss_frames: Vec<u64>,
    pub retransmit_frames: Vec<u64>,
    pub read_response_gaps: u64,
    pub acks: u64,
    pub naks: NakReport,
    pub read_responses: u64,
    /// CNPs that came back to this flow's sender.
    pub cnps: u64,
    /// CNP packets carried by this flow (it is the reverse of a congested flow).
    pub cnps_sent: u64,
    pub ce: u64,
    pub ce_without_cnp: u64,
    pub ce_to_cnp_us: Option<f64>,
    pub ack_rtt_us: LatencySummary,
    pub read_latency_us: LatencySummary,
    pub icrc_bad: u64,
    /// Packets with more payload than the path MTU.
    pub oversize: u64,
    /// The other direction of the same QP pair, and how it was found ("rdma_cm" or "psn").
    pub peer: Option<String>,
    pub paired_by: Option<&'static str>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct NakReport {
    pub psn_sequence_error: u64,
    pub invalid_request: u64,
    pub remote_access_error: u64,
    pub remote_operational_error: u64,
    pub invalid_rd_request: u64,
    pub other: u64,
    pub rnr: u64,
}

impl NakReport {
    pub fn total(&self) -> u64 {
        self.psn_sequence_error
            + self.invalid_request
            + self.remote_access_error
            + self.remote_operational_error
            + self.invalid_rd_request
            + self.other
            + self.rnr
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct PfcReport {
    pub link_gbps: f64,
    pub storm_ms: f64,
    pub storm_fps: f64,
    /// Priorities (PCP) that carry RoCE frames in this capture.
    pub roce_priorities: Vec<u8>,
    pub priorities: Vec<PriorityReport>,
    pub pause_8023x: Vec<PauseReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PriorityReport {
    pub priority: u8,
    /// Source MAC of the pause frames.
    pub source: String,
    /// Whether RoCE frames use this priority.
    pub roce: bool,
    pub xoff: u64,
    pub xon: u64,
    pub pause_quanta: u64,
    /// Time actually paused at --link-speed (overlapping pauses counted once, XON cuts short).
    pub pause_us: f64,
    pub longest_pause_us: f64,
    pub storms: Vec<Storm>,
    pub storms_total: u64,
    pub first_frame: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PauseReport {
    pub source: String,
    pub frames: u64,
    pub xon: u64,
    pub pause_quanta: u64,
    pub pause_us: f64,
    pub longest_pause_us: f64,
    pub storms: Vec<Storm>,
    pub first_frame: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Critical,
    Warning,
    Info,
}

impl Severity {
    pub fn name(self) -> &'static str {
        match self {
            Severity::Critical => "critical",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub severity: Severity,
    pub code: &'static str,
    pub message: String,
    /// The likely cause, in one sentence.
    pub cause: String,
    /// The flow concerned, as "src > dst qp 0x.. vlan N", when there is one.
    pub flow: Option<String>,
    pub count: u64,
    /// The first frame numbers that show it.
    pub frames: Vec<u64>,
}
