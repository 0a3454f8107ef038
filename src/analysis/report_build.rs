//! Turning the analyzer's state into the report model. Findings are computed afterwards from
//! the model and the flows' evidence (frame numbers), never from the analyzer's internals.

use std::collections::BTreeMap;
use std::sync::Arc;

use roce_parsers::link::linktype_name;
use roce_parsers::{Ecn, MacAddr, Opcode, Transport};

use super::findings::{self, CaptureFacts};
use super::flow::{Flow, FlowEvidence};
use super::lifetime::KeptFlows;
use super::pfc::PauseTracker;
pub use super::psn::At;
use super::{Analyzer, MissedTally, CNP_WINDOW_NS};
use crate::common::rare::Rare;
use crate::decode::FrameCounts;
use crate::model::{
    Bin, CaptureMissed, CaptureReport, CaptureWarning, Feedback, Figures, Finding, FlowLabel,
    FlowReport, FlowRole, FlowSeries, LatencySummary, MirrorReport, NakReport, PauseReport,
    PfcFigures, PfcReport, PfcRow, PlotData, PriorityReport, Rates, Report, Tally, SCHEMA,
};

/// The end of an analysis: the report, the plots' data, and what an export needs.
pub struct AnalysisEnd {
    pub report: Report,
    pub plots: Option<PlotData>,
    /// The `Flow::id` of each report flow, in report order.
    pub order: Vec<usize>,
    /// The PFC pauses closed and not yet taken (with `keep_closed_pauses`), those the end
    /// closed included: (source MAC, priority), (start, end).
    pub pauses: Vec<crate::analysis::pfc::SourcePause>,
    /// The ids of the flows still open at the end (the others ended before).
    pub open_ids: Vec<usize>,
}

/// What the reader and decoder know about the file, beyond the packets.
#[derive(Debug, Clone, Default)]
pub struct CaptureMeta {
    pub file: String,
    pub format: Option<&'static str>,
    pub snaplen: u32,
    pub counts: FrameCounts,
    pub warnings: Vec<CaptureWarning>,
    /// A selection on a file: what it read.
    pub selection: Option<crate::model::SelectionStats>,
}

/// Bins the automatic choice aims below.
const AUTO_BINS: usize = 500;

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// Where a flow goes in the report: most trouble, then most bytes, first seen, own id.
/// (trouble and bytes, most first; first frame; id): 32 bytes with the entry's position, as
/// 600,000 of them are sorted at once.
type Rank = (std::cmp::Reverse<(u64, u64)>, u64, u32);

/// Reorders `v` in place so that `v[n]` is what was at `from[n]` (a permutation).
fn permute<T>(v: &mut [T], from: &[u32]) {
    let mut done = vec![false; v.len()];
    for start in 0..v.len() {
        let mut at = start;
        while !done[at] {
            done[at] = true;
            let next = from[at] as usize;
            if next == start {
                break;
            }
            v.swap(at, next);
            at = next;
        }
    }
}

/// A number to sort flows by: the more trouble, the higher.
fn trouble(f: &FlowReport) -> u64 {
    (f.psn.missing + f.psn.recovered) * 10_000
        + f.psn.gaps * 100
        + f.psn.retransmitted * 10
        + f.psn.duplicates
        + f.psn.out_of_order
        + f.feedback.naks.total() * 100
        + f.feedback.ce_without_cnp * 10
        + f.feedback.ce
        + f.icrc_bad * 100
        + f.oversize * 100
}

/// PCP names by index (8: untagged frames).
const PCP_NAMES: [&str; 9] = ["0", "1", "2", "3", "4", "5", "6", "7", "untagged"];

fn pcp_counts(f: &Flow) -> Tally<&'static str> {
    Tally::by_name(PCP_NAMES.iter().copied().zip(f.pcp))
}

fn ecn_counts(f: &Flow) -> Tally<&'static str> {
    Tally::by_name((0..4u8).map(|i| (Ecn::from_bits(i).name(), f.ecn[usize::from(i)])))
}

fn nak_report(f: &Flow) -> NakReport {
    let n = &f.naks;
    NakReport {
        psn_sequence_error: n.psn_sequence_error.count,
        invalid_request: n.invalid_request.count,
        remote_access_error: n.remote_access_error.count,
        remote_operational_error: n.remote_operational_error.count,
        invalid_rd_request: n.invalid_rd_request.count,
        other: n.other.count,
        rnr: n.rnr.count,
    }
}

fn role(f: &Flow) -> FlowRole {
    if f.is_data() {
        FlowRole::Data
    } else if f.cnps_sent > 0 && f.cnps_sent == f.packets {
        FlowRole::Cnp
    } else {
        FlowRole::Responses
    }
}

/// A flow needs this many packets, over at least `RATE_MIN_NS`, to have a rate.
const RATE_MIN_PACKETS: u64 = 10;
const RATE_MIN_NS: u64 = 100_000;

/// `count` per second over the flow's active time; None for a flow too short to have a rate.
fn rate(f: &Flow, count: f64) -> Option<f64> {
    let duration_ns = f.last_ts - f.first_ts;
    (f.packets >= RATE_MIN_PACKETS && duration_ns >= RATE_MIN_NS)
        .then(|| count * 1e9 / duration_ns as f64)
}

/// Wire throughput over the flow's active time; None for a flow too short to have one.
fn gbps(f: &Flow) -> Option<f64> {
    let duration_ns = f.last_ts - f.first_ts;
    rate(f, 0.0).map(|_| f.bytes as f64 * 8.0 / duration_ns as f64)
}

/// The smallest InfiniBand MTU that carries `f`'s largest payload, when its MTU is not known.
fn mtu_at_least(f: &Flow, known: bool) -> Option<u32> {
    const MTUS: [u32; 5] = [256, 512, 1024, 2048, 4096];
    if known || f.max_payload == 0 {
        return None;
    }
    MTUS.into_iter().find(|&m| m >= f.max_payload)
}

/// What a flow's entry takes from its peer (the other direction of the QP pair): its key and
/// the path MTU its packets show.
type PeerFacts = Option<(super::flow::FlowKey, Option<u32>)>;

/// The report entry of `f` made `at` (numbered 0).
fn flow_entry(f: &Flow, at: At, peer: PeerFacts, hosts: &HostNames) -> FlowReport {
    let last_ts = at.time();
    // CE marks still waiting for a CNP when the capture ended count only if their window
    // ended inside the capture.
    let late_unanswered = f
        .ce_pending
        .iter()
        .filter(|&&(ts, _)| ts + CNP_WINDOW_NS <= last_ts)
        .count() as u64;
    let peer_mtu = peer.and_then(|(_, mtu)| mtu);
    let mtu_known = f.path_mtu.is_some() || peer_mtu.is_some() || f.cm_mtu().is_some();
    FlowReport {
        id: 0,
        src: hosts.name(f.key.src),
        dst: hosts.name(f.key.dst),
        dqpn: f.key.dqpn.0,
        vlan: f.key.vlan,
        transport: f.transport.map(|t| t.name()),
        role: role(f),
        packets: f.packets,
        bytes: f.bytes,
        payload_bytes: f.payload_bytes,
        requests: f.requests,
        messages: f.messages,
        first_frame: f.first_frame,
        first_ts: secs(f.first_ts),
        last_ts: secs(f.last_ts),
        duration_us: (f.last_ts - f.first_ts) as f64 / 1e3,
        rate: Rare::of(Rates {
            gbps: gbps(f),
            pps: rate(f, f.packets as f64),
            messages_per_s: rate(f, f.messages as f64),
        }),
        path_mtu: f.path_mtu.or(peer_mtu).or(f.cm_mtu()),
        path_mtu_at_least: mtu_at_least(f, mtu_known),
        // A native InfiniBand frame has no VLAN tag or IP header to count.
        pcp: if f.native_ib {
            Tally::default()
        } else {
            pcp_counts(f)
        },
        dscp: if f.native_ib {
            Tally::default()
        } else {
            Tally::by_key(f.dscp.iter())
        },
        ecn: if f.native_ib {
            Tally::default()
        } else {
            ecn_counts(f)
        },
        opcodes: Tally::by_name(f.opcodes.iter().map(|(op, n)| (Opcode(op), n))),
        psn: Rare::of(psn_counts(f, at)),
        loss_frames: Rare::of(f.loss.frames.clone()),
        retransmit_frames: Rare::of(f.retrans.frames.clone()),
        read_response_gaps: f.read_resp.judged(at).gaps,
        acks: f.acks,
        feedback: Rare::of(Feedback {
            naks: Rare::of(nak_report(f)),
            read_responses: f.read_responses,
            cnps: f.cnps.count,
            cnps_sent: f.cnps_sent,
            ce: f.ce.count,
            ce_without_cnp: f.ce_unanswered.count + late_unanswered,
            ce_to_cnp_us: match (f.first_ce_ts(), f.first_cnp_ts()) {
                (Some(ce), Some(cnp)) => Some((cnp - ce) as f64 / 1e3),
                _ => None,
            },
        }),
        ack_rtt_us: Rare::of(f.ack_rtt.summary()),
        read_latency_us: Rare::of(f.read_latency.summary()),
        recovery: Rare::of(f.recovery.report()),
        icrc_bad: f.icrc_bad.count,
        oversize: f.oversize.count,
        peer: peer.map(|(key, _)| hosts.label(&key)),
        paired_by: f.paired_by,
        native_ib: f.native_ib,
    }
}

/// The PSN counts of `f`'s requests made `at`, with the READ responses it carries that the
/// capture missed.
fn psn_counts(f: &Flow, at: At) -> crate::model::PsnCounts {
    let mut c = if f.transport == Some(Transport::Ud) {
        (*f.ud_psn).clone()
    } else {
        f.req.finish(f.verdicts_at(at))
    };
    let responses = f.read_resp.judged(at);
    c.capture_missed += responses.missed;
    c.unsettled += responses.unsettled;
    c
}

/// What findings need of `f` made `at`.
fn flow_evidence(f: &Flow, at: At, peer: PeerFacts) -> FlowEvidence {
    let mut e = match at {
        At::End(end) => f.evidence(end),
        At::Running(now) => f.evidence_while_open(now),
    };
    e.path_mtu_seen = e.path_mtu_seen.or(peer.and_then(|(_, mtu)| mtu));
    e
}

/// Hosts' addresses as report entries spell them, one string per host shared by all its
/// entries: two strings per entry were 128 bytes of 600,000 ended flows' records each.
/// Hosts are few against flows; the names stay for the run.
#[derive(Debug, Default)]
pub struct HostNames(std::cell::RefCell<rustc_hash::FxHashMap<std::net::IpAddr, Arc<str>>>);

impl HostNames {
    fn name(&self, ip: std::net::IpAddr) -> Arc<str> {
        self.0
            .borrow_mut()
            .entry(ip)
            .or_insert_with(|| ip.to_string().into())
            .clone()
    }

    fn label(&self, key: &super::flow::FlowKey) -> FlowLabel<Arc<str>> {
        FlowLabel {
            src: self.name(key.src),
            dst: self.name(key.dst),
            dqpn: key.dqpn.0,
            vlan: key.vlan,
        }
    }
}

/// Flows whose freed state is given back to the system at once while the entries are made.
const RELEASE_EVERY: usize = 2_048;

/// Report entries in report order, their evidence, and the `Flow::id` of each.
type Entries = (Vec<FlowReport>, Vec<FlowEvidence>, Vec<usize>);

/// Where entry `r`, at `at`, goes in the report.
fn rank_of((r, at): (&FlowReport, u32)) -> (Rank, u32) {
    let rank = (
        std::cmp::Reverse((trouble(r), r.bytes)),
        r.first_frame,
        r.id as u32,
    );
    (rank, at)
}

/// Borrowed entries in report order (as `ranked` puts owned ones), for findings evaluated
/// while the capture runs.
fn ranked_refs<'a>(
    reports: Vec<&'a FlowReport>,
    evidence: Vec<&'a FlowEvidence>,
) -> (Vec<&'a FlowReport>, Vec<&'a FlowEvidence>) {
    let mut rank: Vec<(Rank, u32)> = reports.iter().copied().zip(0u32..).map(rank_of).collect();
    rank.sort_unstable();
    rank.iter()
        .map(|&(_, at)| (reports[at as usize], evidence[at as usize]))
        .unzip()
}

/// Entries numbered by their flows' ids, put in report order (most troubled first) and
/// numbered from 1.
fn ranked(mut reports: Vec<FlowReport>, mut evidence: Vec<FlowEvidence>) -> Entries {
    // Sorted by small keys, the entries then put in place where they are: moving
    // kilobyte-sized entries n log n times, or into new vectors, was most of the time
    // and memory of a report with many flows.
    let mut rank: Vec<(Rank, u32)> = reports.iter().zip(0u32..).map(rank_of).collect();
    rank.sort_unstable();
    let from: Vec<u32> = rank.iter().map(|&(_, at)| at).collect();
    drop(rank);
    permute(&mut reports, &from);
    permute(&mut evidence, &from);
    let mut order = Vec::with_capacity(reports.len());
    for (n, r) in reports.iter_mut().enumerate() {
        order.push(r.id - 1);
        r.id = n + 1;
    }
    (reports, evidence, order)
}

impl Analyzer {
    fn peer_facts(&self, f: &Flow) -> PeerFacts {
        f.peer.map(|j| (self.flows[j].key, self.flows[j].path_mtu))
    }

    /// The report entry of open flow `f` made `at`, numbered by its own id.
    pub(super) fn flow_report(&self, f: &Flow, at: At) -> FlowReport {
        let mut r = flow_entry(f, at, self.peer_facts(f), &self.host_names);
        r.id = f.id as usize + 1;
        r
    }

    /// What findings need of open flow `i` made `at`.
    pub(super) fn flow_evidence(&self, i: usize, at: At) -> FlowEvidence {
        let f = &self.flows[i];
        flow_evidence(f, at, self.peer_facts(f))
    }

    /// Every flow of the run at the end, the open flows' state freed as their entries are
    /// made: peak memory is the larger of the two, not their sum (100,000 short flows: 98 MB
    /// of state, 77 MB of entries and evidence).
    fn final_flow_reports(&mut self, kept: KeptFlows) -> Entries {
        let last_ts = self.state.last_ts;
        let open = self.flows.len();
        let mut reports = kept.reports.into_vec(open);
        let mut evidence = kept.evidence.into_vec(open);
        let peers: Vec<PeerFacts> = self.flows.iter().map(|f| self.peer_facts(f)).collect();
        let flows = std::mem::take(&mut self.flows);
        self.rate_slots = Default::default();
        self.rate_pool = Default::default();
        self.index.clear();
        for (n, (f, peer)) in flows.into_iter().zip(peers).enumerate() {
            let mut r = flow_entry(&f, At::End(last_ts), peer, &self.host_names);
            r.id = f.id as usize + 1;
            reports.push(r);
            evidence.push(flow_evidence(&f, At::End(last_ts), peer));
            self.fold_ended_samples(&f, last_ts);
            if n % RELEASE_EVERY == RELEASE_EVERY - 1 {
                crate::common::memory::release_free_memory();
            }
        }
        ranked(reports, evidence)
    }

    fn pfc_report(
        &self,
        pfc: &BTreeMap<(MacAddr, u8), PauseTracker>,
        pause: &BTreeMap<MacAddr, PauseTracker>,
    ) -> PfcReport {
        let cfg = &self.cfg.pfc;
        let roce_priorities: Vec<u8> = (0..8u8)
            .filter(|&p| self.state.roce_pcp[usize::from(p)] > 0)
            .collect();
        let priorities = pfc
            .iter()
            .map(|(&(mac, prio), t)| PriorityReport {
                priority: prio,
                source: mac.to_string(),
                roce: roce_priorities.contains(&prio),
                xoff: t.xoff,
                xon: t.xon,
                pause_quanta: t.quanta,
                pause_us: t.paused_ns as f64 / 1e3,
                longest_pause_us: t.longest_ns as f64 / 1e3,
                storms: t.storms(),
                storms_total: t.storms_total(),
                first_frame: t.first_frame,
            })
            .collect();
        let pause_8023x = pause
            .iter()
            .map(|(&mac, t)| PauseReport {
                source: mac.to_string(),
                frames: t.xoff + t.xon,
                xon: t.xon,
                pause_quanta: t.quanta,
                pause_us: t.paused_ns as f64 / 1e3,
                longest_pause_us: t.longest_ns as f64 / 1e3,
                storms: t.storms(),
                first_frame: t.first_frame,
            })
            .collect();
        PfcReport {
            link_gbps: cfg.link_gbps,
            link_speed_assumed: !self.cfg.link_speed_given,
            storm_ms: cfg.storm_ns as f64 / 1e6,
            storm_fps: cfg.storm_fps,
            roce_priorities,
            priorities,
            pause_8023x,
        }
    }

    /// The capture's entry made `at`: at the end, the open flows' unsettled PSNs count.
    fn capture_report(&self, meta: &CaptureMeta, at: At) -> CaptureReport {
        let c = &meta.counts;
        let duration_ns = c.first_ts.map_or(0, |f| c.last_ts - f);
        CaptureReport {
            file: meta.file.clone(),
            format: meta.format,
            link_types: c
                .linktypes
                .iter()
                .map(|(&lt, &n)| (format!("{} ({lt})", linktype_name(lt)), n))
                .collect(),
            snaplen: meta.snaplen,
            packets: c.frames,
            bytes: c.bytes,
            roce_packets: c.roce,
            rocev1_packets: c.rocev1,
            ib_packets: c.ib,
            pfc_frames: c.pfc,
            pause_frames: c.pause,
            malformed: c.malformed,
            malformed_by_layer: c.malformed_by_layer.clone(),
            unsupported_link_type: c.unsupported_linktype,
            // Every cut, whatever made it (`truncated_by` has the split).
            truncated: c.truncated_by.snaplen
                + c.truncated_by.mirror
                + c.truncated_by.length_mismatch,
            truncated_by: c.truncated_by.clone(),
            mirror_sessions: c
                .mirror_sessions
                .iter()
                .map(|(&s, m)| {
                    let report = MirrorReport {
                        frames: m.frames,
                        mirror_drops: m.dropped,
                    };
                    (s, report)
                })
                .collect(),
            icrc_ok: c.icrc_ok,
            icrc_bad: c.icrc_bad,
            icrc_unchecked: c.icrc_unchecked,
            first_ts: c.first_ts.map(secs),
            last_ts: c.first_ts.map(|_| secs(c.last_ts)),
            first_ts_ns: c.first_ts,
            duration_s: secs(duration_ns),
            flows: self.next_flow_id as usize,
            flows_ended: self.flows_ended,
            flows_untracked_packets: self.state.flows_untracked_packets,
            cnps_unattributed: self.state.cnps_unattributed,
            capture_duplicates: self.state.capture_duplicates,
            segments: self.segments().0,
            time_jumps: self.segments().1.to_vec(),
            missed: {
                let m = self.missed_so_far();
                CaptureMissed::of(m.psns, m.flows, m.data_psns, c.roce)
            },
            unsettled: self.state.unsettled
                + match at {
                    At::End(end) => self
                        .flows
                        .iter()
                        .filter_map(|f| f.unsettled(end))
                        .map(|u| u.psns)
                        .sum(),
                    At::Running(_) => 0,
                },
            warnings: meta.warnings.clone(),
            live: None,
            selection: meta.selection.clone(),
            damaged: None,
        }
    }

    /// The running capture's figures now: what the metrics and the live view read.
    pub fn figures(&self) -> Figures {
        let now = self.state.last_ts;
        let roce = self.roce_priorities();
        let pfc = self
            .pfc
            .iter()
            .map(|(&(source, priority), t)| PfcFigures {
                source,
                priority,
                roce: roce.contains(&priority),
                xoff: t.xoff,
                paused_ns: t.paused_until(now),
                storms: t.storms_until(&self.cfg.pfc, now),
            })
            .collect();
        Figures {
            now,
            flows: self
                .flows
                .iter()
                .map(|f| f.counters(At::Running(now)))
                .collect(),
            flows_seen: self.next_flow_id,
            flows_ended: self.flows_ended,
            pfc,
            totals: self.totals,
            capture_missed: self.missed_so_far().psns,
        }
    }

    /// The ACK round trips of the open flows `ids` (a view's rows: percentiles are computed
    /// for those only), in the order asked; flows no longer open get none.
    pub fn ack_rtt_of(&self, ids: &[u64]) -> Vec<LatencySummary> {
        let at: rustc_hash::FxHashMap<u64, usize> =
            ids.iter().enumerate().map(|(k, &id)| (id, k)).collect();
        let mut out = vec![LatencySummary::default(); ids.len()];
        for f in self.flows.iter() {
            if let Some(&k) = at.get(&f.id) {
                out[k] = f.ack_rtt.summary();
            }
        }
        out
    }

    /// PSNs the capture point missed so far, and on how many flows: of the flows that ended,
    /// and of those still open as judged now (PSNs within their ACK allowance pending).
    pub fn missed_so_far(&self) -> MissedTally {
        let now = self.state.last_ts;
        let mut tally = self.state.missed;
        for f in &self.flows {
            let missed = f.capture_missed(At::Running(now));
            if missed > 0 {
                tally.psns += missed;
                tally.flows += 1;
                tally.data_psns += f.data_psns(missed);
            }
        }
        tally
    }

    /// Ends the analysis and builds the report.
    pub fn finish(self, meta: CaptureMeta) -> Report {
        self.finish_with_plots(meta).0
    }

    /// Ends the analysis; with timelines enabled, also returns what the plots need.
    pub fn finish_with_plots(self, meta: CaptureMeta) -> (Report, Option<PlotData>) {
        let all = self.finish_all(meta);
        (all.report, all.plots)
    }

    /// Ends the analysis, with what an export needs beyond the report: the analyzer's flow
    /// index of each report flow, and the pause intervals.
    pub fn finish_all(mut self, meta: CaptureMeta) -> AnalysisEnd {
        let cfg = self.cfg;
        let closed = self.mutual.finish(&mut self.pfc, &cfg.pfc);
        if let Some(v) = self.closed_pauses.as_mut() {
            v.extend(closed);
        }
        for t in self.pause.values_mut() {
            t.finish(&cfg.pfc);
        }
        let kept = std::mem::take(&mut self.kept);
        let open_ids = self.open_ids();
        let entries = self.final_flow_reports(kept);
        let (report, order) = self.report_with(&self.pfc, &self.pause, &meta, entries);
        let plots = self.plot_data(&order, &report);
        let pauses = self.take_closed_pauses();
        AnalysisEnd {
            report,
            plots,
            order,
            pauses,
            open_ids,
        }
    }

    /// The labels of the open flows, as findings name them.
    pub fn open_flow_labels(&self) -> rustc_hash::FxHashSet<String> {
        self.flows
            .iter()
            .map(|f| self.host_names.label(&f.key).to_string())
            .collect()
    }

    /// The labels of the flows that ended since the findings were last evaluated.
    pub fn recent_ended_labels(&self) -> rustc_hash::FxHashSet<String> {
        let recent = self.recent_ended.iter().flat_map(|r| r.reports.iter());
        recent.map(FlowReport::label).collect()
    }

    /// The findings of the traffic so far, the analysis going on (pauses in force end now), on
    /// the open flows and those that ended since the last evaluation (`findings_evaluated`),
    /// as a live capture sees them: a flow that ended was evaluated once after its last frame,
    /// and evaluating every flow so far each second made `-r --events` quadratic (a 27-minute
    /// capture of 40,000 flows took 75 s instead of 0.7 s). The report at the end evaluates
    /// every flow. Ended flows' entries are borrowed where they are kept. Each flow's findings
    /// are its own, none grouped: the watch groups those it tells at once. While the capture
    /// runs (`at_end` false), an open flow's requests waiting for an ACK are pending, not
    /// unanswered: a flow whose ACKs take long had them told every second, and never in the
    /// report.
    pub fn findings_now(&self, meta: &CaptureMeta, at_end: bool) -> Vec<Finding> {
        let (mut pfc, mut pause, mut mutual) =
            (self.pfc.clone(), self.pause.clone(), self.mutual.clone());
        mutual.finish(&mut pfc, &self.cfg.pfc);
        for t in pause.values_mut() {
            t.finish(&self.cfg.pfc);
        }
        let last_ts = self.state.last_ts;
        let at = if at_end {
            At::End(last_ts)
        } else {
            At::Running(last_ts)
        };
        let open_reports: Vec<FlowReport> =
            self.flows.iter().map(|f| self.flow_report(f, at)).collect();
        let open_evidence: Vec<FlowEvidence> = (0..self.flows.len())
            .map(|i| self.flow_evidence(i, at))
            .collect();
        let recent = self.recent_ended.as_ref();
        let (reports, evidence) = ranked_refs(
            self.kept
                .reports
                .iter_from(self.kept_evaluated)
                .chain(recent.into_iter().flat_map(|r| r.reports.iter()))
                .chain(&open_reports)
                .collect(),
            self.kept
                .evidence
                .iter_from(self.kept_evaluated)
                .chain(recent.into_iter().flat_map(|r| r.evidence.iter()))
                .chain(&open_evidence)
                .collect(),
        );
        let hosts = self.hosts_now();
        findings::find_each(
            &reports,
            &evidence,
            &self.capture_report(meta, at),
            &self.pfc_report(&pfc, &pause),
            &self.facts(&mutual, meta, !at_end, &hosts),
        )
    }

    /// The end points now, the open flows folded in.
    pub fn hosts_now(&self) -> Vec<crate::model::HostReport> {
        let open = self.flows.iter().map(|f| &**f);
        self.hosts.report(open, self.state.last_ts)
    }

    /// The report, with `pfc` and `pause` as the pause state.
    fn report_with(
        &self,
        pfc: &BTreeMap<(MacAddr, u8), PauseTracker>,
        pause: &BTreeMap<MacAddr, PauseTracker>,
        meta: &CaptureMeta,
        (flows, evidence, order): Entries,
    ) -> (Report, Vec<usize>) {
        let mut report = Report {
            schema: SCHEMA,
            capture: self.capture_report(meta, At::End(self.state.last_ts)),
            flows,
            pfc: self.pfc_report(pfc, pause),
            hosts: self.hosts_now(),
            findings: Vec::new(),
            verify: None,
        };
        let flows: Vec<&FlowReport> = report.flows.iter().collect();
        let evidence: Vec<&FlowEvidence> = evidence.iter().collect();
        let found = findings::find(
            &flows,
            &evidence,
            &report.capture,
            &report.pfc,
            &self.facts(&self.mutual, meta, false, &report.hosts),
        );
        report.findings = found;
        (report, order)
    }

    /// What findings need of the capture beyond its report.
    fn facts<'a>(
        &'a self,
        mutual: &super::pfc::MutualTally,
        meta: &'a CaptureMeta,
        running: bool,
        hosts: &'a [crate::model::HostReport],
    ) -> CaptureFacts<'a> {
        let cfg = self.cfg;
        CaptureFacts {
            link_types: &meta.counts.linktypes,
            first_ts_ns: meta.counts.first_ts.unwrap_or(0),
            other_by_pcp: &self.state.other_by_pcp,
            other_by_dscp: &self.state.other_by_dscp,
            pfc_not_honoured: &self.state.pfc_not_honoured,
            mutual_pauses: mutual.pairs(),
            cm_requests: &self.cm_requests,
            icmp_errors: &self.state.icmp_errors,
            link_gbps: cfg.link_speed_given.then_some(cfg.pfc.link_gbps),
            now: self.state.last_ts,
            running,
            malformed_frames: &meta.counts.malformed_frames,
            icrc_unchecked_malformed: meta.counts.icrc_unchecked_malformed,
            hosts,
        }
    }

    fn pfc_rows(&self, roce_priorities: &[u8]) -> Vec<PfcRow> {
        let row =
            |label: String, priority: Option<u8>, mac: MacAddr, roce, t: &PauseTracker| PfcRow {
                label,
                priority,
                source: mac.to_string(),
                roce,
                intervals: t.intervals().to_vec(),
                storms: t.storm_spans(),
            };
        let pfc = self.pfc.iter().map(|(&(mac, prio), t)| {
            let roce = roce_priorities.contains(&prio);
            row(format!("p{prio} from {mac}"), Some(prio), mac, roce, t)
        });
        let pause = self
            .pause
            .iter()
            .map(|(&mac, t)| row(format!("802.3x from {mac}"), None, mac, true, t));
        pfc.chain(pause).collect()
    }

    fn plot_data(&mut self, order: &[usize], report: &Report) -> Option<PlotData> {
        let mut t = self.timelines.take()?;
        if self.cfg.bin_ns.is_none() {
            t.coarsen_to(AUTO_BINS);
        }
        // The plots show where the traffic is, on the capture's clock.
        let (origin_ns, start_ns, end_ns) = (t.origin_ns()?, t.start_ns()?, t.end_ns());
        let bins = (end_ns.saturating_sub(start_ns) / t.width_ns()) as usize + 1;
        let pad = |s: &[Bin]| {
            let mut v = s.to_vec();
            v.resize(bins, Bin::default());
            v
        };
        let series = order
            .iter()
            .zip(&report.flows)
            .filter(|(&fi, _)| !t.flow(fi).is_empty())
            .map(|(&fi, r)| FlowSeries {
                id: r.id,
                name: format!("#{} {}", r.id, r.label()),
                data: r.role == FlowRole::Data,
                bins: pad(t.flow(fi)),
            })
            .collect();
        let mut rtt_us: Vec<f64> = self
            .flows
            .iter()
            .flat_map(|f| f.ack_rtt.kept().iter())
            .chain(&self.ended_rtt)
            .map(|&ns| ns as f64 / 1e3)
            .collect();
        rtt_us.sort_by(f64::total_cmp);
        Some(PlotData {
            origin_ns,
            start_ns,
            end_ns,
            bin_ns: t.width_ns(),
            bins,
            flows: series,
            other: t.has_other().then(|| pad(t.other())),
            pfc: self.pfc_rows(&report.pfc.roce_priorities),
            rtt_us,
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn permute_puts_each_entry_where_it_is_asked() {
        let mut v = vec!['a', 'b', 'c', 'd', 'e'];
        super::permute(&mut v, &[3, 0, 4, 1, 2]);
        assert_eq!(v, ['d', 'a', 'e', 'b', 'c']);
        let mut w: Vec<u32> = (0..100).collect();
        let from: Vec<u32> = (0..100).map(|i| (i * 37) % 100).collect();
        super::permute(&mut w, &from);
        assert!(w.iter().zip(&from).all(|(&x, &f)| x == f));
    }
}
