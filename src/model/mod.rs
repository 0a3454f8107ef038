//! The report model: every value roce-sniff reports, as plain serde types. Analysis and
//! verification produce it; the renderers (text, JSON, HTML, plots, report directory) only read
//! it. Its JSON form is a public interface, versioned by `SCHEMA` and described in docs/json.md.
//!
//! This module imports nothing else of the crate: data flows one way, into it and out of it.

use std::collections::BTreeMap;
use std::fmt::{self, Display};

use serde::Serialize;

mod dropped;
mod figures;
mod values;

#[cfg(test)]
pub mod testing;
pub use dropped::{DroppedByOutput, DroppedRecords, DROPPABLE};
pub use figures::{
    Escalation, Figures, FiguresNow, FlowCounters, FlowEnded, FrameDone, KernelCounters,
    NewFindings, PfcFigures, RttHistogram, SourceStatus, Told, Totals, RTT_BOUNDS_NS,
};
pub use values::{slot_overlaps, Outcome, PsnEvent, SourcePause};

use crate::common::rare::Rare;
use std::sync::Arc;

pub const SCHEMA: &str = "roce-sniff.report/4";
/// The schema of `--correlate --json`.
pub const CORRELATION_SCHEMA: &str = "roce-sniff.correlation/2";

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub schema: &'static str,
    pub capture: CaptureReport,
    pub flows: Vec<FlowReport>,
    pub pfc: PfcReport,
    /// One entry per IP address that sends or receives RoCE.
    pub hosts: Vec<HostReport>,
    pub findings: Vec<Finding>,
    /// Present when --expect-* options were given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify: Option<VerifyReport>,
}

impl Report {
    /// The flows still open at the end, as (`Flow::id`, entry) in the order they appeared:
    /// `order[i]` is the `Flow::id` of report flow `i`, `open` the ids still open.
    pub fn still_open(&self, order: &[usize], open: &[usize]) -> Vec<(usize, &FlowReport)> {
        let open: std::collections::HashSet<usize> = open.iter().copied().collect();
        let mut ending: Vec<(usize, &FlowReport)> = order
            .iter()
            .copied()
            .zip(&self.flows)
            .filter(|(id, _)| open.contains(id))
            .collect();
        ending.sort_by_key(|&(id, _)| id);
        ending
    }
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(Default))]
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
    /// Frames shorter than on the wire, by why.
    pub truncated_by: TruncatedBy,
    /// ERSPAN sessions seen (by session ID): frames, and frames the mirror dropped (holes in
    /// the GRE sequence numbers).
    pub mirror_sessions: BTreeMap<u16, MirrorReport>,
    pub icrc_ok: u64,
    pub icrc_bad: u64,
    pub icrc_unchecked: u64,
    pub first_ts: Option<f64>,
    pub last_ts: Option<f64>,
    /// `first_ts` in exact nanoseconds.
    pub first_ts_ns: Option<u64>,
    pub duration_s: f64,
    /// Flows seen over the run, open or ended.
    pub flows: usize,
    /// Flows that ended before the capture did (idle longer than `--flow-timeout`).
    pub flows_ended: u64,
    /// Packets of flows beyond --max-flows (counted, not analysed).
    pub flows_untracked_packets: u64,
    pub cnps_unattributed: u64,
    /// RoCE frames captured twice (a mirror copying both directions of a port): counted once,
    /// never as resends or duplicate PSNs.
    pub capture_duplicates: u64,
    /// PSNs the capture point missed: skipped PSNs the other end acknowledged.
    pub missed: CaptureMissed,
    /// Captures run together (`cat a.pcap a.pcap`): how many segments the capture's time
    /// showed (1 when it never went back), and the first jumps back.
    pub segments: u64,
    pub time_jumps: Vec<TimeJump>,
    /// Skipped PSNs whose fate the capture cannot tell (`flows[].psn.unsettled`, with the
    /// flows that ended).
    pub unsettled: u64,
    /// Problems with the file itself (cut short, corrupt), capture drops, and what else the
    /// capture point implies; in JSON, the messages.
    pub warnings: Vec<CaptureWarning>,
    /// Live capture only: the interface and the kernel's counters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live: Option<LiveStats>,
    /// A file read with a filter, `--qp`, `--finding` or `-c`: the frames read, of which
    /// `packets` were kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selection: Option<SelectionStats>,
    /// Parts of the input that could not be read as records (a corrupt header, a compressed
    /// stream cut short): present only when there are some.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub damaged: Option<CaptureDamage>,
}

/// The damaged parts of the input: each skipped to the next place records can be trusted
/// (`roce_parsers::capture::damage`), or where reading stopped.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct CaptureDamage {
    /// Bytes skipped, over every region and packet block skipped.
    pub bytes_skipped: u64,
    /// Regions, of which `regions` lists the first 100 of each file.
    pub region_count: u64,
    /// pcapng packet blocks skipped whole, in regions or not: the interface they name was
    /// never described (its description lost to damage).
    pub packets_skipped: u64,
    pub regions: Vec<DamagedRegion>,
}

impl CaptureDamage {
    pub fn is_empty(&self) -> bool {
        self.region_count == 0 && self.packets_skipped == 0
    }

    /// Another input's damage beside this one's (files read as one).
    pub fn add(&mut self, other: CaptureDamage) {
        self.bytes_skipped += other.bytes_skipped;
        self.region_count += other.region_count;
        self.packets_skipped += other.packets_skipped;
        self.regions.extend(other.regions);
    }
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct DamagedRegion {
    pub file: String,
    /// Byte offset where it starts (of the inflated stream, for a compressed file).
    pub offset: u64,
    pub bytes_skipped: u64,
    /// Where reading went on; None when nothing readable followed.
    pub resynced_at: Option<u64>,
    /// pcapng packet blocks skipped whole in it (their interface never described).
    pub packets_skipped: u64,
    /// What was wrong where it starts.
    pub why: String,
}

/// What a selection kept of a file.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct SelectionStats {
    /// The BPF filter, when one was given.
    pub filter: Option<String>,
    /// Frames read (kept or not).
    pub frames_read: u64,
    /// Of those, VLAN-tagged (802.1Q or 802.1ad) Ethernet frames: a filter sees inside the
    /// tag only after `vlan`.
    pub tagged_read: u64,
}

impl SelectionStats {
    /// What to tell when the selection kept none of the frames read.
    pub fn nothing_kept(&self) -> String {
        let what = match &self.filter {
            Some(f) => format!("the filter `{f}`"),
            None => "the selection".to_string(),
        };
        let mut msg = format!(
            "{what} matched none of the {} frames read",
            self.frames_read
        );
        if let Some(f) = self
            .filter
            .as_ref()
            .filter(|f| !f.trim_start().starts_with("vlan"))
        {
            if self.tagged_read > 0 {
                msg.push_str(&format!(
                    "; {} of them are VLAN-tagged, and a filter sees inside the tag only after `vlan`: try `vlan and {f}`",
                    self.tagged_read
                ));
            }
        }
        msg
    }
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct MirrorReport {
    pub frames: u64,
    pub mirror_drops: u64,
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
    /// The first frame captured and decoded on a thread of its own (1 with --capture-thread;
    /// later when the thread that analyses fell behind; `None`: one thread did all).
    pub capture_thread_from_frame: Option<u64>,
    /// Records the outputs could not keep up with and did not write (the capture is whole).
    pub records_dropped: DroppedByOutput,
}

/// A flow's report entry: `flows[]` of the JSON report, and the `flow_end` events. Serialized
/// by hand (below), its rate and feedback parts inline as a plain struct's fields: serde's
/// `flatten` went through a map of unknown length, a third of the cost of a churn's report.
#[derive(Debug, Clone)]
pub struct FlowReport {
    /// 1-based position in this report's flow list (troubled first).
    pub id: usize,
    pub src: std::sync::Arc<str>,
    pub dst: std::sync::Arc<str>,
    pub dqpn: u32,
    pub vlan: Option<u16>,
    pub transport: Option<&'static str>,
    pub role: FlowRole,
    pub packets: u64,
    pub bytes: u64,
    pub payload_bytes: u64,
    pub requests: u64,
    pub messages: u64,
    pub first_frame: u64,
    pub first_ts: f64,
    pub last_ts: f64,
    pub duration_us: f64,
    /// `gbps`, `pps`, `messages_per_s`: null on most short flows, so kept apart.
    pub rate: Rare<Rates>,
    pub path_mtu: Option<u32>,
    /// When `path_mtu` cannot be told (every request fits one packet): the smallest MTU that
    /// carries the largest payload seen, a lower bound (4096, the largest, is then exact).
    /// Written only when set.
    pub path_mtu_at_least: Option<u32>,
    pub pcp: Tally<&'static str>,
    /// DSCP values in numeric order (JSON object keys are strings: "9" before "10").
    pub dscp: Tally<u8>,
    pub ecn: Tally<&'static str>,
    pub opcodes: Tally<roce_parsers::Opcode>,
    pub psn: Rare<PsnCounts>,
    /// Frames where loss (a gap) and retransmissions were first seen.
    pub loss_frames: Rare<Vec<u64>>,
    pub retransmit_frames: Rare<Vec<u64>>,
    pub read_response_gaps: u64,
    pub acks: u64,
    /// `naks` to `ce_to_cnp_us`: none on most flows, so kept apart (the keys are the entry's).
    pub feedback: Rare<Feedback>,
    pub ack_rtt_us: Rare<LatencySummary>,
    /// READ latency, recovery and NAK figures are zero on most flows: boxed only when not.
    pub read_latency_us: Rare<LatencySummary>,
    pub recovery: Rare<RecoveryReport>,
    pub icrc_bad: u64,
    /// Packets with more payload than the path MTU.
    pub oversize: u64,
    /// The other direction of the same QP pair, and how it was found ("rdma_cm" or "psn").
    pub peer: Option<FlowLabel<Arc<str>>>,
    pub paired_by: Option<PairingMethod>,
    /// A native InfiniBand flow (ERF link type 247, no Ethernet or IP): `pcp`, `dscp` and
    /// `ecn` are empty, since none of them is on its wire. Present only when true.
    pub native_ib: bool,
}

impl Serialize for FlowReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        // Every field named: one added to the struct does not compile until it is written.
        let FlowReport {
            id,
            src,
            dst,
            dqpn,
            vlan,
            transport,
            role,
            packets,
            bytes,
            payload_bytes,
            requests,
            messages,
            first_frame,
            first_ts,
            last_ts,
            duration_us,
            rate,
            path_mtu,
            path_mtu_at_least,
            pcp,
            dscp,
            ecn,
            opcodes,
            psn,
            loss_frames,
            retransmit_frames,
            read_response_gaps,
            acks,
            feedback,
            ack_rtt_us,
            read_latency_us,
            recovery,
            icrc_bad,
            oversize,
            peer,
            paired_by,
            native_ib,
        } = self;
        let (rate, fb) = (&**rate, &**feedback);
        let mut m = s.serialize_struct("FlowReport", 45)?;
        m.serialize_field("id", id)?;
        m.serialize_field("src", &**src)?;
        m.serialize_field("dst", &**dst)?;
        m.serialize_field("dqpn", dqpn)?;
        m.serialize_field("vlan", vlan)?;
        m.serialize_field("transport", transport)?;
        m.serialize_field("role", role)?;
        m.serialize_field("packets", packets)?;
        m.serialize_field("bytes", bytes)?;
        m.serialize_field("payload_bytes", payload_bytes)?;
        m.serialize_field("requests", requests)?;
        m.serialize_field("messages", messages)?;
        m.serialize_field("first_frame", first_frame)?;
        m.serialize_field("first_ts", first_ts)?;
        m.serialize_field("last_ts", last_ts)?;
        m.serialize_field("duration_us", duration_us)?;
        m.serialize_field("gbps", &rate.gbps)?;
        m.serialize_field("pps", &rate.pps)?;
        m.serialize_field("messages_per_s", &rate.messages_per_s)?;
        m.serialize_field("path_mtu", path_mtu)?;
        match path_mtu_at_least {
            Some(mtu) => m.serialize_field("path_mtu_at_least", mtu)?,
            None => m.skip_field("path_mtu_at_least")?,
        }
        m.serialize_field("pcp", pcp)?;
        m.serialize_field("dscp", dscp)?;
        m.serialize_field("ecn", ecn)?;
        m.serialize_field("opcodes", opcodes)?;
        m.serialize_field("psn", psn)?;
        m.serialize_field("loss_frames", loss_frames)?;
        m.serialize_field("retransmit_frames", retransmit_frames)?;
        m.serialize_field("read_response_gaps", read_response_gaps)?;
        m.serialize_field("acks", acks)?;
        m.serialize_field("naks", &fb.naks)?;
        m.serialize_field("read_responses", &fb.read_responses)?;
        m.serialize_field("cnps", &fb.cnps)?;
        m.serialize_field("cnps_sent", &fb.cnps_sent)?;
        m.serialize_field("ce", &fb.ce)?;
        m.serialize_field("ce_without_cnp", &fb.ce_without_cnp)?;
        m.serialize_field("ce_to_cnp_us", &fb.ce_to_cnp_us)?;
        m.serialize_field("ack_rtt_us", ack_rtt_us)?;
        m.serialize_field("read_latency_us", read_latency_us)?;
        m.serialize_field("recovery", recovery)?;
        m.serialize_field("icrc_bad", icrc_bad)?;
        m.serialize_field("oversize", oversize)?;
        m.serialize_field("peer", peer)?;
        m.serialize_field("paired_by", paired_by)?;
        if *native_ib {
            m.serialize_field("native_ib", &true)?;
        } else {
            m.skip_field("native_ib")?;
        }
        m.end()
    }
}

/// Counts by key of one flow, which has few keys (its PCPs, DSCPs, ECN codepoints, opcodes),
/// in the order the JSON object lists them. A map per count took ~370 bytes per flow each,
/// and a vector a heap block per count: one key, the common case, is held inline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tally<K>(TallyItems<K>);

#[derive(Debug, Clone, PartialEq, Eq)]
enum TallyItems<K> {
    One([(K, u64); 1]),
    Many(Box<[(K, u64)]>),
}

impl<K> Default for Tally<K> {
    fn default() -> Self {
        Tally(TallyItems::Many(Box::default()))
    }
}

impl<K> Tally<K> {
    fn of(mut v: Vec<(K, u64)>) -> Self {
        Tally(match v.len() {
            1 => TallyItems::One([v.pop().expect("one")]),
            _ => TallyItems::Many(v.into_boxed_slice()),
        })
    }

    fn items(&self) -> &[(K, u64)] {
        match &self.0 {
            TallyItems::One(one) => one,
            TallyItems::Many(many) => many,
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (&K, u64)> {
        self.items().iter().map(|(k, n)| (k, *n))
    }

    pub fn len(&self) -> usize {
        self.items().len()
    }

    pub fn is_empty(&self) -> bool {
        self.items().is_empty()
    }
}

impl<K: Display> Tally<K> {
    /// The non-zero counts, listed in the order of the keys' spelling (as a JSON object's
    /// keys sort).
    pub fn by_name(counts: impl IntoIterator<Item = (K, u64)>) -> Self {
        let mut v: Vec<(K, u64)> = counts.into_iter().filter(|&(_, n)| n > 0).collect();
        // Most flows have one PCP, one ECN value, an opcode or two: no name to make then.
        if v.len() > 1 {
            v.sort_by_cached_key(|(k, _)| k.to_string());
        }
        Tally::of(v)
    }
}

impl<K: Ord + Copy> Tally<K> {
    /// The non-zero counts, in key order.
    pub fn by_key(counts: impl IntoIterator<Item = (K, u64)>) -> Self {
        let mut v: Vec<(K, u64)> = counts.into_iter().filter(|&(_, n)| n > 0).collect();
        v.sort_by_key(|&(k, _)| k);
        Tally::of(v)
    }

    pub fn get(&self, key: K) -> Option<u64> {
        self.items()
            .iter()
            .find(|(k, _)| *k == key)
            .map(|&(_, n)| n)
    }
}

/// Counts by key as the reports print them: `Tally` and the verification's maps.
pub trait Counts {
    /// (key as written, count), in order.
    fn entries(&self) -> Vec<(String, u64)>;
}

impl<K: Display> Counts for Tally<K> {
    fn entries(&self) -> Vec<(String, u64)> {
        self.iter().map(|(k, n)| (k.to_string(), n)).collect()
    }
}

impl<K: Display> Counts for BTreeMap<K, u64> {
    fn entries(&self) -> Vec<(String, u64)> {
        self.iter().map(|(k, &n)| (k.to_string(), n)).collect()
    }
}

impl<K: Display> Serialize for Tally<K> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.len()))?;
        for (k, n) in self.items() {
            m.serialize_entry(&DisplayKey(k), n)?;
        }
        m.end()
    }
}

/// A map key written as its `Display` form, with no string made of it.
struct DisplayKey<'a, K>(&'a K);

impl<K: Display> Serialize for DisplayKey<'_, K> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self.0)
    }
}

/// What came back for a flow's requests (NAKs, READ responses, CNPs), the CNPs it carries
/// and the CE marks it got.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Feedback {
    pub naks: Rare<NakReport>,
    pub read_responses: u64,
    /// CNPs that came back to this flow's sender.
    pub cnps: u64,
    /// CNP packets carried by this flow (it is the reverse of a congested flow).
    pub cnps_sent: u64,
    pub ce: u64,
    pub ce_without_cnp: u64,
    pub ce_to_cnp_us: Option<f64>,
}

crate::empty!(Feedback);

/// A flow's rates over its active time.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Rates {
    /// Wire throughput; null when the flow is too short to have a rate (fewer than 10
    /// packets, or under 100 us): two packets are not a line rate.
    pub gbps: Option<f64>,
    /// Packets, and messages completed, per second over the same time; null like `gbps`.
    pub pps: Option<f64>,
    pub messages_per_s: Option<f64>,
}

crate::empty!(Rates);

/// The one spelling of a flow everywhere roce-sniff names one:
/// `10.0.0.1 > 10.0.0.2 qp 0x000045 vlan 100` (no `vlan` part when untagged).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FlowLabel<S: Display> {
    pub src: S,
    pub dst: S,
    pub dqpn: u32,
    pub vlan: Option<u16>,
}

impl<S: Display> Display for FlowLabel<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} > {} qp {:#08x}", self.src, self.dst, self.dqpn)?;
        if let Some(v) = self.vlan {
            write!(f, " vlan {v}")?;
        }
        Ok(())
    }
}

impl<S: Display + std::ops::Deref<Target = str>> FlowLabel<S> {
    /// Appends the label as `Display` spells it, without the formatting machinery: every
    /// flow that ends writes its peer's (`fmt` took 2,300 instructions a label).
    pub fn write_plain(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.src.as_bytes());
        out.extend_from_slice(b" > ");
        out.extend_from_slice(self.dst.as_bytes());
        out.extend_from_slice(b" qp 0x");
        // `{:#08x}`: lower-case, at least 6 digits.
        let digits = (8 - self.dqpn.leading_zeros() as usize / 4).max(6);
        for i in (0..digits).rev() {
            out.push(b"0123456789abcdef"[(self.dqpn >> (i * 4) & 0xf) as usize]);
        }
        if let Some(v) = self.vlan {
            out.extend_from_slice(b" vlan ");
            out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
        }
    }

    /// The same label, borrowing its addresses (to compare with `FlowReport::label_parts`).
    pub fn as_parts(&self) -> FlowLabel<&str> {
        FlowLabel {
            src: &self.src,
            dst: &self.dst,
            dqpn: self.dqpn,
            vlan: self.vlan,
        }
    }
}

/// Written as the label string.
impl<S: Display> Serialize for FlowLabel<S> {
    fn serialize<Z: serde::Serializer>(&self, s: Z) -> Result<Z::Ok, Z::Error> {
        s.collect_str(self)
    }
}

impl FlowReport {
    pub fn label(&self) -> String {
        self.label_parts().to_string()
    }

    /// The label, to write without making a string of it.
    pub fn label_parts(&self) -> FlowLabel<&str> {
        FlowLabel {
            src: &self.src,
            dst: &self.dst,
            dqpn: self.dqpn,
            vlan: self.vlan,
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
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
#[cfg_attr(test, derive(Default))]
pub struct PfcReport {
    pub link_gbps: f64,
    /// `link_gbps` is the default, not given with --link-speed: pause times assume it.
    pub link_speed_assumed: bool,
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
    pub const ALL: [Severity; 3] = [Severity::Critical, Severity::Warning, Severity::Info];

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
    pub code: FindingCode,
    pub message: String,
    /// The likely cause, in one sentence.
    pub cause: String,
    /// The flow concerned, as "src > dst qp 0x.. vlan N", when there is one.
    pub flow: Option<String>,
    pub count: u64,
    /// The first frame numbers that show it.
    pub frames: Vec<u64>,
    /// Several files read as one: each of `frames` as its file and its number there.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub frame_refs: Vec<FrameRef>,
    /// When many flows show the same finding, it is reported once for all of them: how many
    /// flows, and the worst few (by count) in full.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<FindingGroup>,
    /// A group: the label of every flow it stands for (`group.worst` shows 5), for
    /// `--finding`.
    #[serde(skip)]
    pub grouped_flows: Vec<String>,
}

impl Finding {
    /// The labels of the flows this finding concerns: its flow, or every flow of its group.
    pub fn flow_labels(&self) -> impl Iterator<Item = &str> {
        self.flow
            .iter()
            .chain(&self.grouped_flows)
            .map(String::as_str)
    }
}

/// A frame of a set of files read as one, named in its own file (as Wireshark numbers it
/// when the file is opened alone).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FrameRef {
    pub file: String,
    pub frame: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct FindingGroup {
    pub flows: u64,
    pub worst: Vec<GroupMember>,
}

#[derive(Debug, Clone, Serialize)]
pub struct GroupMember {
    pub flow: String,
    pub count: u64,
    pub message: String,
    pub frames: Vec<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub frame_refs: Vec<FrameRef>,
}

/// Count and percentiles, in microseconds.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct LatencySummary {
    pub count: u64,
    pub p50: Option<f64>,
    pub p99: Option<f64>,
    pub p999: Option<f64>,
    pub max: Option<f64>,
}

/// An end point: an IP address that sends or receives RoCE, and how its NIC reacts to loss and
/// congestion (`hosts[]`; docs/json.md says what each figure includes).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct HostReport {
    pub ip: String,
    /// Source MACs of its frames and destination MACs of frames to it: its own, or a
    /// router's where one is between.
    pub macs: Vec<String>,
    pub as_receiver: ReceiverReport,
    pub as_sender: SenderReport,
}

/// A host as the receiver of data: how fast it NAKs and sends CNPs.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct ReceiverReport {
    /// Sequence-error NAKs: from the first request past the NAKed PSN since its last send.
    pub nak_generation_us: LatencySummary,
    /// Sequence NAKs not timed: the capture saw no request past the NAKed PSN before them
    /// (the loss was after the capture point, `nak_without_gap`).
    pub nak_generation_untimed: u64,
    /// From the first CE mark since a QP's previous CNP to the next CNP.
    pub cnp_generation_us: LatencySummary,
    /// CNPs not timed: no CE mark seen since the QP's CNP before (marked after the capture
    /// point).
    pub cnp_generation_untimed: u64,
    /// Between successive CNPs to one QP with a CE mark between: the NIC's CNP pacing.
    pub cnp_interval_us: LatencySummary,
    pub ack_rtt_us: LatencySummary,
    /// The first NAKs measured (a finding's evidence).
    #[serde(skip)]
    pub nak_frames: Vec<u64>,
}

/// A host as the sender of data (DCQCN's reaction point): how it resends and slows down.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct SenderReport {
    pub nak_to_retransmit_us: LatencySummary,
    pub rnr_wait_us: LatencySummary,
    pub timeout_resend_us: LatencySummary,
    /// `go_back_n`, `selective` or `mixed`; none when no NAK episode could tell.
    pub resend_policy: Option<&'static str>,
    pub resend_policy_counts: ResendPolicyCounts,
    /// PSNs resent per sequence-NAK episode.
    pub resend_amplification: Option<f64>,
    /// Rate over the 100 us after an episode's first CNP over the 100 us before (ratios,
    /// not microseconds).
    pub rate_cut_after_cnp: LatencySummary,
    /// The CNPs whose rate cut is not among `rate_cut_after_cnp`, by why.
    pub rate_cut_after_cnp_unmeasured: RateCutUnmeasured,
    /// What RDMA-CM set up for the connections it sends on (the last one seen).
    pub cm: Option<CmReport>,
}

/// CNPs whose rate cut could not be measured, by why. An episode (a CNP 100 us or more after
/// the one before) is measured from the rate in the 100 us before it to the rate in the 100
/// us after.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct RateCutUnmeasured {
    /// Episodes whose window before began before the capture (or its segment).
    pub capture_start: u64,
    /// Episodes with fewer than 10 of the sender's packets in the longest window before.
    pub few_packets_before: u64,
    /// Episodes whose window before began before the QP's 10th packet: it had just started.
    pub flow_start: u64,
    /// CNPs within 100 us of the one before: the episode's first CNP measures them all.
    pub within_window: u64,
    /// Episodes whose 100 us after the capture did not reach.
    pub capture_end: u64,
    /// CNPs captured more than 50 us after the sender's later packets.
    pub out_of_order: u64,
}

impl RateCutUnmeasured {
    pub fn add(&mut self, o: &RateCutUnmeasured) {
        self.capture_start += o.capture_start;
        self.few_packets_before += o.few_packets_before;
        self.flow_start += o.flow_start;
        self.within_window += o.within_window;
        self.capture_end += o.capture_end;
        self.out_of_order += o.out_of_order;
    }

    /// Why, in a few words each (for a table's cell), the most CNPs first; empty when every
    /// CNP was measured.
    pub fn reasons(&self) -> Vec<String> {
        let mut v = [
            (self.capture_start, "at start"),
            (self.few_packets_before, "<10 pkts before"),
            (self.flow_start, "as the QP began"),
            (self.within_window, "<100us apart"),
            (self.capture_end, "at end"),
            (self.out_of_order, "late"),
        ];
        v.sort_by_key(|&(n, _)| std::cmp::Reverse(n));
        v.iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, why)| format!("{n} {why}"))
            .collect()
    }

    pub fn total(&self) -> u64 {
        self.capture_start
            + self.few_packets_before
            + self.flow_start
            + self.within_window
            + self.capture_end
            + self.out_of_order
    }
}

#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct ResendPolicyCounts {
    pub go_back_n: u64,
    pub selective: u64,
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct CmReport {
    pub retry_count: u8,
    /// 7 retries for ever.
    pub rnr_retry_count: u8,
    /// 4.096 us x 2^(Local ACK Timeout); none when it is 0 (no timeout).
    pub local_ack_timeout_us: Option<f64>,
}

/// How a flow's requester recovered from loss, where the capture shows it.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct RecoveryReport {
    /// From a sequence-error NAK to the first resend it caused, in us.
    pub nak_to_retransmit_us: LatencySummary,
    /// From an RNR NAK to the resend after it: the requester's RNR wait (milliseconds, where
    /// a sequence NAK's resend takes microseconds).
    pub rnr_wait_us: LatencySummary,
    /// Go-back replays no NAK asked for (the requester's timeout), and the silence before each.
    pub timeout_resends: u64,
    pub timeout_interval_us: LatencySummary,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Storm {
    /// Start in nanoseconds since the epoch (exact; `start_ts` is the same in seconds).
    pub start_ns: u64,
    pub start_ts: f64,
    pub end_ts: f64,
    pub duration_ms: f64,
    pub frames: u64,
    /// Pause frames per second over the storm.
    pub rate_fps: f64,
    pub kind: StormKind,
    pub first_frame: u64,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct PsnCounts {
    /// Arrivals ahead of the expected PSN, counted as they happen.
    pub gaps: u64,
    /// PSNs skipped by gaps, never seen later, and not shown delivered (missed by the capture)
    /// or damaged.
    pub missing: u64,
    /// The first missing ranges, inclusive.
    pub missing_ranges: Vec<[u32; 2]>,
    pub duplicates: u64,
    /// PSNs that came late without loss (filled a gap with no NAK, resend or timeout).
    pub out_of_order: u64,
    /// The deepest of them: PSNs behind the highest seen when it came.
    pub out_of_order_depth_max: u64,
    /// The latest of them, from the gap that skipped it to its arrival.
    pub out_of_order_delay_max_us: f64,
    pub retransmitted: u64,
    /// Skipped PSNs that a resend filled, or that a NAK named before an ACK covered them:
    /// lost, then repaired.
    pub recovered: u64,
    /// Skipped PSNs the other end acknowledged before any captured resend: the network
    /// delivered them, the capture point did not see them.
    pub capture_missed: u64,
    /// PSNs carried by frames with a bad ICRC (taken in the sequence, or skipped by a gap).
    pub damaged: u64,
    /// Skipped PSNs whose fate the capture cannot tell: it ended before their
    /// acknowledgement (or a READ re-issue) was due. Neither lost nor missed.
    pub unsettled: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Bin {
    pub packets: u64,
    pub bytes: u64,
    pub psn_gaps: u64,
    pub retransmissions: u64,
    pub ce: u64,
    pub cnps: u64,
    pub naks: u64,
    /// Requests' PSN progress at the end of the bin (PSNs since the flow's first request,
    /// wrap-free); None when the flow sent no request in the bin.
    pub psn_progress: Option<i64>,
}

/// Where the capture's time went back and a new segment began: the frame, and how far back.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct TimeJump {
    pub frame: u64,
    pub back_s: f64,
}

/// What the capture point missed over the capture: skipped PSNs the other end acknowledged
/// (request PSNs and READ responses), on how many flows, their share of what the capture
/// should have held (psns / (RoCE packets + psns)), and the data PSNs of those flows (their
/// requests and READ responses, with those missed).
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct CaptureMissed {
    pub psns: u64,
    pub flows: u64,
    pub share: f64,
    pub data_psns: u64,
}

impl CaptureMissed {
    /// `psns` missed on `flows` flows holding `data_psns` data PSNs, of a capture that holds
    /// `roce_packets` RoCE frames.
    pub fn of(psns: u64, flows: u64, data_psns: u64, roce_packets: u64) -> Self {
        let share = if psns == 0 {
            0.0
        } else {
            psns as f64 / (roce_packets + psns) as f64
        };
        CaptureMissed {
            psns,
            flows,
            share,
            data_psns,
        }
    }

    /// The share of the data PSNs of the flows concerned that the capture missed.
    pub fn data_share(&self) -> f64 {
        if self.data_psns == 0 {
            0.0
        } else {
            self.psns as f64 / self.data_psns as f64
        }
    }
}

/// Frames shorter than on the wire, by why: the capture's snap length, a mirror that says so
/// (ERSPAN T bit), or IP/UDP lengths longer than the frame while the record is complete.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct TruncatedBy {
    pub snaplen: u64,
    pub mirror: u64,
    pub length_mismatch: u64,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct MalformedByLayer {
    pub link: u64,
    pub vlan: u64,
    pub ip: u64,
    pub udp: u64,
    pub grh: u64,
    pub bth: u64,
    pub ext_header: u64,
    pub mac_control: u64,
    /// Mirror and tunnel headers (GRE, ERSPAN, VXLAN, Geneve, MPLS).
    pub encap: u64,
}

/// What the plots and timelines of a report directory are drawn from.
#[derive(Debug, Clone)]
pub struct PlotData {
    /// The capture's first frame: plots count time from it.
    pub origin_ns: u64,
    /// The span binned: where the traffic is (the first bin's start, the last traffic).
    pub start_ns: u64,
    pub end_ns: u64,
    pub bin_ns: u64,
    pub bins: usize,
    /// Flows in report order (by `id`), each padded to `bins`.
    pub flows: Vec<FlowSeries>,
    /// Flows beyond the timeline cap, summed.
    pub other: Option<Vec<Bin>>,
    pub pfc: Vec<PfcRow>,
    /// ACK round-trip samples of all flows, sorted, in microseconds.
    pub rtt_us: Vec<f64>,
}

#[derive(Debug, Clone)]
pub struct FlowSeries {
    pub id: usize,
    pub name: String,
    /// Whether the flow carries requests (data).
    pub data: bool,
    pub bins: Vec<Bin>,
}

#[derive(Debug, Clone)]
pub struct PfcRow {
    pub label: String,
    /// None for 802.3x PAUSE (all priorities).
    pub priority: Option<u8>,
    pub source: String,
    pub roce: bool,
    /// The pauses, (start, end, time paused in it): past 10,000, spans of neighbouring ones.
    pub intervals: Vec<(u64, u64, u64)>,
    pub storms: Vec<(u64, u64)>,
}

/// ECN expectation: ECN-capable (ECT(0), ECT(1) or CE) or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EcnExpect {
    Ect,
    NotEct,
}

impl EcnExpect {
    pub fn parse(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "ect" => Ok(EcnExpect::Ect),
            "not-ect" | "not_ect" | "notect" => Ok(EcnExpect::NotEct),
            _ => Err(format!("`{s}`: --expect-ecn takes `ect` or `not-ect`")),
        }
    }

    pub fn matches(self, ecn: u8) -> bool {
        match self {
            EcnExpect::Ect => ecn != 0,
            EcnExpect::NotEct => ecn == 0,
        }
    }
}

/// What the frames must carry. `None` means not checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Expectations {
    pub dscp: Option<u8>,
    pub pcp: Option<u8>,
    pub vlan: Option<u16>,
    pub ecn: Option<EcnExpect>,
    pub cnp_dscp: Option<u8>,
    pub cnp_pcp: Option<u8>,
}

impl Expectations {
    pub fn any(&self) -> bool {
        self.data_any() || self.cnp_any()
    }

    fn data_any(&self) -> bool {
        self.dscp.is_some() || self.pcp.is_some() || self.vlan.is_some() || self.ecn.is_some()
    }

    fn cnp_any(&self) -> bool {
        self.cnp_dscp.is_some() || self.cnp_pcp.is_some()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Field {
    Dscp,
    Pcp,
    Vlan,
    Ecn,
}

impl Field {
    pub fn name(self) -> &'static str {
        match self {
            Field::Dscp => "dscp",
            Field::Pcp => "pcp",
            Field::Vlan => "vlan",
            Field::Ecn => "ecn",
        }
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FieldViolation {
    pub field: Field,
    pub expected: String,
    pub count: u64,
    pub first_frames: Vec<u64>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FlowVerify {
    pub flow: String,
    pub src: String,
    pub dst: String,
    pub dqpn: u32,
    pub vlan: Option<u16>,
    pub kind: VerifyKind,
    /// Whether this flow's frames were checked (CNPs are not without CNP expectations).
    pub checked_against: bool,
    pub checked: u64,
    pub violating: u64,
    pub seen: BTreeMap<&'static str, BTreeMap<Seen, u64>>,
    pub violations: Vec<FieldViolation>,
    pub first_violating_frames: Vec<u64>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Unverifiable {
    pub field: Field,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct VerifyReport {
    /// True only when every checked frame matched and every check could be made.
    pub passed: bool,
    pub verdict: Verdict,
    pub expectations: Expectations,
    /// Frames checked, and frames that violate at least one expectation.
    pub checked: u64,
    pub violating: u64,
    pub unverifiable: Vec<Unverifiable>,
    pub flows: Vec<FlowVerify>,
    /// The capture is damaged: the regions whose frames could not be checked, in words
    /// (`capture.damaged` has them one by one). Never a PASS then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub damaged: Option<String>,
}

/// A warning about a capture, with what kind of trouble it is (which decides the finding).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureWarning {
    pub kind: WarningKind,
    pub message: String,
}

impl Serialize for CaptureWarning {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.message)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarningKind {
    /// The file is cut short or corrupt: every record before the damage was read, and after
    /// it where reading resynchronised.
    FileDamaged,
    /// A live capture stopped on an error.
    CaptureStopped,
    /// The kernel or the interface dropped frames before they reached the capture.
    CaptureDrops,
    /// Something about the capture point worth knowing (a VLAN sub-interface).
    Notice,
    /// The read was stopped (Ctrl-C): the report covers what was read.
    Interrupted,
    /// An output (`--events`, `--parquet`) could not be written: the capture stopped there,
    /// and the report covers what came before (the run fails, naming the output).
    OutputFailed,
    /// Outputs could not keep up with a live capture and dropped records (the capture and the
    /// report are whole).
    RecordsDropped,
}

impl WarningKind {
    /// Whether frames are missing from the capture, so PSN gaps may be the capture's.
    pub fn frames_missing(self) -> bool {
        !matches!(
            self,
            WarningKind::Notice
                | WarningKind::Interrupted
                | WarningKind::OutputFailed
                | WarningKind::RecordsDropped
        )
    }
}

/// A value seen in frames (DSCP, PCP, VLAN ID) or a name (an ECN codepoint, "untagged"):
/// numbers sort numerically and come first; in JSON both are object keys (strings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Seen {
    Value(u16),
    Name(&'static str),
}

impl Display for Seen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Seen::Value(v) => v.fmt(f),
            Seen::Name(n) => f.write_str(n),
        }
    }
}

impl Serialize for Seen {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// What a flow carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FlowRole {
    /// Requests: SEND, WRITE, READ requests, atomics.
    Data,
    /// Only what answers requests: ACKs, NAKs, READ responses.
    Responses,
    /// Only CNPs.
    Cnp,
}

impl FlowRole {
    pub fn name(self) -> &'static str {
        match self {
            FlowRole::Data => "data",
            FlowRole::Responses => "responses",
            FlowRole::Cnp => "cnp",
        }
    }
}

/// How the two directions of a QP pair were matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PairingMethod {
    /// The RDMA-CM ConnectRequest / ConnectReply exchange named both QPs.
    RdmaCm,
    /// Responses carried the PSNs of the other direction's requests.
    Psn,
}

/// How a PFC storm showed: continuous pause, pause frames faster than --storm-fps, or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum StormKind {
    #[serde(rename = "paused")]
    Paused,
    #[serde(rename = "rate")]
    Rate,
    #[serde(rename = "paused+rate")]
    PausedAndRate,
}

/// The outcome of `--expect-*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Verdict {
    /// Every checked frame matched, and every check could be made.
    Pass,
    Fail,
    /// A check the capture cannot support (PCP without VLAN tags, a cooked capture).
    Unverifiable,
    /// No RoCE frame: nothing was verified.
    NoRoce,
}

/// Which expectations a verified flow's frames were checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum VerifyKind {
    /// Requests: SEND, WRITE, READ requests, atomics (the data expectations).
    Data,
    /// ACKs, NAKs and READ responses (the data expectations too).
    Responses,
    /// CNPs (the CNP expectations).
    Cnp,
}

impl VerifyKind {
    pub fn name(self) -> &'static str {
        match self {
            VerifyKind::Data => "data",
            VerifyKind::Responses => "responses",
            VerifyKind::Cnp => "cnp",
        }
    }
}

/// `--correlate`: the same packets followed across capture points.
#[derive(Debug, Clone, Serialize)]
pub struct CorrelationDocument {
    pub schema: &'static str,
    pub correlation: CorrelationReport,
    pub findings: Vec<Finding>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CorrelationReport {
    pub points: Vec<PointReport>,
    /// Between neighbouring points, in path order: the data direction (requests).
    pub hops: Vec<HopReport>,
    /// The same hops for what travels back (ACKs, NAKs, CNPs, READ responses): `from` is the
    /// later point.
    pub reverse_hops: Vec<HopReport>,
    /// Per data flow (requests), hop by hop.
    pub flows: Vec<CorrelatedFlow>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PointReport {
    pub name: String,
    pub roce_packets: u64,
    /// This point's clock minus the first point's.
    pub clock_offset_us: f64,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct DelayStats {
    pub min: Option<f64>,
    pub p50: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct QueueingStats {
    pub p50: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct HopReport {
    pub from: String,
    pub to: String,
    pub matched: u64,
    /// Seen at `from`, never at `to`.
    pub lost: u64,
    /// Seen at `from`, never at `to`, though the receiver acknowledged it before any resend:
    /// the capture at `to` missed it (not counted in `lost`).
    pub missed: u64,
    /// Seen at `to` only: `from` missed it.
    pub appeared: u64,
    pub ce_marked: u64,
    pub dscp_changed: u64,
    pub pcp_changed: u64,
    /// One-way delay with the clock offset taken out.
    pub delay_us: DelayStats,
    /// Delay beyond the hop's minimum: needs no clock offset.
    pub queueing_us: QueueingStats,
    /// Frame numbers at `from` of the packets lost (the first 1,000).
    pub lost_frames: Vec<u64>,
    /// How the offset between the two clocks was estimated: `two_way` (minimum delays of both
    /// directions, NTP-style), `forward_only` or `reverse_only` (one direction: the offset then
    /// includes that direction's minimum delay), `none` (nothing matched).
    pub clock_method: &'static str,
}

#[derive(Debug, Clone, Serialize)]
pub struct CorrelatedFlow {
    pub src: String,
    pub dst: String,
    pub dqpn: u32,
    /// `forward` (requests, in path order) or `reverse` (what comes back: ACKs, NAKs, CNPs,
    /// READ responses; hops in the order its packets travel).
    pub direction: &'static str,
    pub hops: Vec<FlowHop>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FlowHop {
    pub from: String,
    pub to: String,
    pub matched: u64,
    pub lost: u64,
    /// Never seen at `to` though the receiver acknowledged it: missed by `to`'s capture.
    pub missed: u64,
    pub ce_marked: u64,
    pub dscp_changed: u64,
    pub pcp_changed: u64,
    pub delay_p50_us: Option<f64>,
    /// Frame numbers at `from` of this flow's packets lost on the hop (the first 1,000).
    pub lost_frames: Vec<u64>,
}

/// Every finding code: part of the JSON contract (docs/json.md lists their meanings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingCode {
    PsnLoss,
    ReadResponseLoss,
    Retransmissions,
    OutOfOrder,
    PsnUnsettled,
    Duplicates,
    NakError,
    RnrNak,
    CeWithoutCnp,
    CeUnanswered,
    NotEct,
    Dscp0WithPcp,
    IcrcBad,
    ExceedsPathMtu,
    UntaggedRoce,
    PfcPauseRocePriority,
    PfcStorm,
    #[serde(rename = "pause_8023x")]
    Pause8023x,
    Incast,
    NoRoce,
    NoVlanTags,
    CookedCapture,
    SnaplenHidesIcrc,
    CaptureDamaged,
    MalformedFrames,
    UnsupportedLinkType,
    FlowsUntracked,
    MirrorDrops,
    CaptureDuplicates,
    CaptureMissed,
    TimeBackwards,
    Pcp0WithDscp,
    DscpMismatch,
    CnpMarking,
    VlanMismatch,
    Rocev1Frames,
    LinkLocalGid,
    LosslessClassPolluted,
    UnacknowledgedRequests,
    CmUnanswered,
    CmRejected,
    IcmpUnreachable,
    NakWithoutGap,
    LossOnLosslessPriority,
    PfcPriorityMismatch,
    PfcMutual,
    PfcNotHonoured,
    PfcBeforeEcn,
    EcnHeavy,
    HostLimited,
    LowPathEntropy,
    SlowNak,
    CnpWithoutSlowdown,
    SmallPathMtu,
    ReadRangeViolation,
    LossLocated,
    CeMarkedAt,
    Remarked,
    PointsOutOfOrder,
}

impl FindingCode {
    /// Every code, for documentation checks.
    pub const ALL: [FindingCode; 59] = [
        FindingCode::PsnLoss,
        FindingCode::ReadResponseLoss,
        FindingCode::Retransmissions,
        FindingCode::OutOfOrder,
        FindingCode::PsnUnsettled,
        FindingCode::Duplicates,
        FindingCode::NakError,
        FindingCode::RnrNak,
        FindingCode::CeWithoutCnp,
        FindingCode::CeUnanswered,
        FindingCode::NotEct,
        FindingCode::Dscp0WithPcp,
        FindingCode::IcrcBad,
        FindingCode::ExceedsPathMtu,
        FindingCode::UntaggedRoce,
        FindingCode::PfcPauseRocePriority,
        FindingCode::PfcStorm,
        FindingCode::Pause8023x,
        FindingCode::Incast,
        FindingCode::NoRoce,
        FindingCode::NoVlanTags,
        FindingCode::CookedCapture,
        FindingCode::SnaplenHidesIcrc,
        FindingCode::CaptureDamaged,
        FindingCode::MalformedFrames,
        FindingCode::UnsupportedLinkType,
        FindingCode::FlowsUntracked,
        FindingCode::MirrorDrops,
        FindingCode::CaptureDuplicates,
        FindingCode::CaptureMissed,
        FindingCode::TimeBackwards,
        FindingCode::Pcp0WithDscp,
        FindingCode::DscpMismatch,
        FindingCode::CnpMarking,
        FindingCode::VlanMismatch,
        FindingCode::Rocev1Frames,
        FindingCode::LinkLocalGid,
        FindingCode::LosslessClassPolluted,
        FindingCode::UnacknowledgedRequests,
        FindingCode::CmUnanswered,
        FindingCode::CmRejected,
        FindingCode::IcmpUnreachable,
        FindingCode::NakWithoutGap,
        FindingCode::LossOnLosslessPriority,
        FindingCode::PfcPriorityMismatch,
        FindingCode::PfcMutual,
        FindingCode::PfcNotHonoured,
        FindingCode::PfcBeforeEcn,
        FindingCode::EcnHeavy,
        FindingCode::HostLimited,
        FindingCode::LowPathEntropy,
        FindingCode::SlowNak,
        FindingCode::CnpWithoutSlowdown,
        FindingCode::SmallPathMtu,
        FindingCode::ReadRangeViolation,
        FindingCode::LossLocated,
        FindingCode::CeMarkedAt,
        FindingCode::Remarked,
        FindingCode::PointsOutOfOrder,
    ];

    /// The code as it appears in JSON and in the text report.
    pub fn name(self) -> &'static str {
        match self {
            FindingCode::PsnLoss => "psn_loss",
            FindingCode::ReadResponseLoss => "read_response_loss",
            FindingCode::Retransmissions => "retransmissions",
            FindingCode::OutOfOrder => "out_of_order",
            FindingCode::PsnUnsettled => "psn_unsettled",
            FindingCode::Duplicates => "duplicates",
            FindingCode::NakError => "nak_error",
            FindingCode::RnrNak => "rnr_nak",
            FindingCode::CeWithoutCnp => "ce_without_cnp",
            FindingCode::CeUnanswered => "ce_unanswered",
            FindingCode::NotEct => "not_ect",
            FindingCode::Dscp0WithPcp => "dscp0_with_pcp",
            FindingCode::IcrcBad => "icrc_bad",
            FindingCode::ExceedsPathMtu => "exceeds_path_mtu",
            FindingCode::UntaggedRoce => "untagged_roce",
            FindingCode::PfcPauseRocePriority => "pfc_pause_roce_priority",
            FindingCode::PfcStorm => "pfc_storm",
            FindingCode::Pause8023x => "pause_8023x",
            FindingCode::Incast => "incast",
            FindingCode::NoRoce => "no_roce",
            FindingCode::NoVlanTags => "no_vlan_tags",
            FindingCode::CookedCapture => "cooked_capture",
            FindingCode::SnaplenHidesIcrc => "snaplen_hides_icrc",
            FindingCode::CaptureDamaged => "capture_damaged",
            FindingCode::MalformedFrames => "malformed_frames",
            FindingCode::UnsupportedLinkType => "unsupported_link_type",
            FindingCode::FlowsUntracked => "flows_untracked",
            FindingCode::MirrorDrops => "mirror_drops",
            FindingCode::CaptureDuplicates => "capture_duplicates",
            FindingCode::CaptureMissed => "capture_missed",
            FindingCode::TimeBackwards => "time_backwards",
            FindingCode::Pcp0WithDscp => "pcp0_with_dscp",
            FindingCode::DscpMismatch => "dscp_mismatch",
            FindingCode::CnpMarking => "cnp_marking",
            FindingCode::VlanMismatch => "vlan_mismatch",
            FindingCode::Rocev1Frames => "rocev1_frames",
            FindingCode::LinkLocalGid => "link_local_gid",
            FindingCode::LosslessClassPolluted => "lossless_class_polluted",
            FindingCode::UnacknowledgedRequests => "unacknowledged_requests",
            FindingCode::CmUnanswered => "cm_unanswered",
            FindingCode::CmRejected => "cm_rejected",
            FindingCode::IcmpUnreachable => "icmp_unreachable",
            FindingCode::NakWithoutGap => "nak_without_gap",
            FindingCode::LossOnLosslessPriority => "loss_on_lossless_priority",
            FindingCode::PfcPriorityMismatch => "pfc_priority_mismatch",
            FindingCode::PfcMutual => "pfc_mutual",
            FindingCode::PfcNotHonoured => "pfc_not_honoured",
            FindingCode::PfcBeforeEcn => "pfc_before_ecn",
            FindingCode::EcnHeavy => "ecn_heavy",
            FindingCode::HostLimited => "host_limited",
            FindingCode::LowPathEntropy => "low_path_entropy",
            FindingCode::SlowNak => "slow_nak",
            FindingCode::CnpWithoutSlowdown => "cnp_without_slowdown",
            FindingCode::SmallPathMtu => "small_path_mtu",
            FindingCode::ReadRangeViolation => "read_range_violation",
            FindingCode::LossLocated => "loss_located",
            FindingCode::CeMarkedAt => "ce_marked_at",
            FindingCode::Remarked => "remarked",
            FindingCode::PointsOutOfOrder => "points_out_of_order",
        }
    }
}

/// The plots of a report directory, in the order the HTML page shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlotKind {
    Throughput,
    Psn,
    EcnCnp,
    Pfc,
    AckRtt,
}

impl PlotKind {
    pub const ALL: [PlotKind; 5] = [
        PlotKind::Throughput,
        PlotKind::Psn,
        PlotKind::EcnCnp,
        PlotKind::Pfc,
        PlotKind::AckRtt,
    ];

    /// The file stem (`throughput.png`) and HTML anchor.
    pub fn name(self) -> &'static str {
        match self {
            PlotKind::Throughput => "throughput",
            PlotKind::Psn => "psn",
            PlotKind::EcnCnp => "ecn_cnp",
            PlotKind::Pfc => "pfc",
            PlotKind::AckRtt => "ack_rtt",
        }
    }

    /// The plot's title (the page shows it for a plot with nothing to draw too).
    pub fn title(self) -> &'static str {
        match self {
            PlotKind::Throughput => "Throughput per flow",
            PlotKind::Psn => "PSN progress per QP",
            PlotKind::EcnCnp => "ECN: CE-marked packets and CNPs per flow",
            PlotKind::Pfc => "PFC pauses per priority",
            PlotKind::AckRtt => "ACK round-trip time",
        }
    }
}

impl StormKind {
    pub fn name(self) -> &'static str {
        match self {
            StormKind::Paused => "paused",
            StormKind::Rate => "rate",
            StormKind::PausedAndRate => "paused+rate",
        }
    }
}

/// Text renderers print these enums by their JSON names (padding honoured, for tables).
macro_rules! display_by_name {
    ($($t:ty),*) => {$(
        impl Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.pad(self.name())
            }
        }
    )*};
}

display_by_name!(FindingCode, FlowRole, StormKind, VerifyKind, Severity);

#[cfg(test)]
mod tests {
    use super::*;

    fn json<T: Serialize>(v: &T) -> String {
        serde_json::to_string(v).unwrap()
    }

    #[test]
    fn a_label_written_plain_reads_as_displayed() {
        for (dqpn, vlan) in [
            (0, None),
            (0x213, Some(100)),
            (0xff_ffff, Some(4095)),
            (7, Some(0)),
        ] {
            for (src, dst) in [("10.3.0.1", "10.3.0.2"), ("fe80::1", "fe80::2")] {
                let label = FlowLabel {
                    src: Arc::<str>::from(src),
                    dst: Arc::<str>::from(dst),
                    dqpn,
                    vlan,
                };
                let mut plain = b"x".to_vec();
                label.write_plain(&mut plain);
                assert_eq!(plain, format!("x{label}").into_bytes());
            }
        }
    }

    #[test]
    fn every_finding_code_is_documented() {
        let docs = include_str!("../../docs/json.md");
        for code in FindingCode::ALL {
            assert_eq!(json(&code), format!("\"{}\"", code.name()));
            assert!(
                docs.contains(&format!("| `{}` |", code.name())),
                "docs/json.md does not list {}",
                code.name()
            );
        }
    }

    /// A flow entry with its optional keys set: every key it writes is documented, each once.
    #[test]
    fn every_key_of_a_flow_entry_is_documented() {
        let mut flow = crate::analysis::testing::report_of("sample.pcap")
            .flows
            .swap_remove(0);
        flow.path_mtu_at_least = Some(1024);
        flow.native_ib = true;
        let value = serde_json::to_value(&flow).unwrap();
        let keys: Vec<&String> = value.as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), 45, "{keys:?}");
        let docs = include_str!("../../docs/json.md");
        for k in keys {
            assert!(
                docs.contains(&format!("`{k}`")),
                "docs/json.md does not name {k}"
            );
        }
    }

    #[test]
    fn enums_serialize_to_the_documented_strings() {
        assert_eq!(json(&FindingCode::Pause8023x), "\"pause_8023x\"");
        assert_eq!(json(&FindingCode::Dscp0WithPcp), "\"dscp0_with_pcp\"");
        assert_eq!(json(&Verdict::NoRoce), "\"NO_ROCE\"");
        assert_eq!(json(&StormKind::PausedAndRate), "\"paused+rate\"");
        assert_eq!(json(&PairingMethod::RdmaCm), "\"rdma_cm\"");
        assert_eq!(json(&FlowRole::Responses), "\"responses\"");
        assert_eq!(json(&VerifyKind::Cnp), "\"cnp\"");
    }

    #[test]
    fn finding_code_names_match_their_json() {
        for code in [
            FindingCode::PsnLoss,
            FindingCode::Pause8023x,
            FindingCode::FlowsUntracked,
        ] {
            assert_eq!(json(&code), format!("\"{}\"", code.name()));
        }
    }
}

crate::empty!(NakReport);
crate::empty!(LatencySummary);
crate::empty!(RecoveryReport);
crate::empty!(PsnCounts);
crate::empty!(Vec<u64>);
